"""`why`'s coverage factor at the resolution of the disk's 1 s readings (issue 39 item 5; docs/why.md).

Three lab logs (tests/data/lab: a 0.1 s run, a 3.7 s quiet twin, a 5.6 s storm twin, real Darshan 3.5.0 logs of
lab runs) ingested by `jobs ingest` in a real process, and 1 s disk readings planted around each run as
`collect --sources diskstats` stores them: the job's own bytes where it ran, and another writer's bytes either
around the run only (in the reading the job started in, and the 5 s tail) or through it (a storm). Before the
rule, a run shorter than a reading got 10-100 % of its I/O time on the system from bytes that may all have
been moved outside it. The expected numbers are computed here from what was planted, never read back."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from inprocess import run_cli as in_process_cli

from ioweather.config import Settings
from ioweather.store import telemetry_layout as layout

LAB = Path(__file__).parent / "data" / "lab"
S = 10**9
MB = 10**6
SHORT, QUIET, STORM = "fixed-large.darshan", "clean-quiet.darshan", "clean-storm.darshan"


def _facts(name) -> dict:
    from ioweather.services.jobs.darshan import job_answer

    rep, log = job_answer(str(LAB / name))
    raw = rep.raw()
    return {"start": int(round(log.start_time_s * S)), "end": int(round(log.end_time_s * S)),
            "io": raw["perf"]["io_time_s"], "saving": raw["verdict_saving_s"], "jobid": str(raw["job"]["jobid"]),
            "written": float(raw["interfaces"]["POSIX"]["bytes_written"]), "path": str(LAB / name)}


def _readings(f: dict, others) -> tuple[pd.DataFrame, dict[int, float]]:
    """1 s write readings from 30 s before the run to 30 s after: the job's bytes spread over the readings
    wholly inside its run (the reading it is in, for a run inside one), plus `others(t) -> bytes` of each
    reading starting at t. Returns the rows and {reading start: others' bytes}."""
    t = np.arange((f["start"] // S - 30) * S, (f["end"] // S + 30) * S, S, dtype=np.int64)
    inside = (t >= f["start"]) & (t + S <= f["end"])
    if not inside.any():
        inside = (t <= f["start"]) & (t + S > f["start"])
    own = np.where(inside, f["written"] / inside.sum(), 0.0)
    other = np.array([float(others(int(x))) for x in t])
    rows = pd.DataFrame({"time_ns": np.concatenate([t, t]), "target": "vda",
                         "metric": ["write_bytes"] * len(t) + ["read_bytes"] * len(t),
                         "value": np.concatenate([own + other, np.zeros(len(t))]), "interval_s": 1.0})
    return rows, dict(zip(t.tolist(), other.tolist()))


def _reference(f: dict, other: dict[int, float]) -> tuple[float, float]:
    """(low, high) by hand: high from every other byte of the window [the start's reading, end + 5 s), the readings
    straddling its end pro rata; low from the others' bytes in the readings wholly inside the run."""
    lo, hi = f["start"] // S * S, f["end"] + 5 * S
    win = sum(v * max(0, min(t + S, hi) - max(t, lo)) / S for t, v in other.items())
    surely = sum(v for t, v in other.items() if t >= f["start"] and t + S <= f["end"])
    left = f["io"] - min(f["io"], f["saving"])
    j = f["written"]
    return min(left, f["io"] * surely / (j + surely)), min(left, f["io"] * win / (j + win))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A store of the three runs (a real `jobs ingest`) and each run's facts from its own report."""
    home = tmp_path_factory.mktemp("resolution") / "home"
    run_cli("jobs", "ingest", *(str(LAB / n) for n in (SHORT, QUIET, STORM)), "--workers", "1",
            home=home, timeout=300, check=True)
    return home, {n: _facts(n) for n in (SHORT, QUIET, STORM)}


def _why(home, f: dict) -> dict:
    p = in_process_cli("why", f["path"], "--fs", "vda", "--json", home=home, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _plant(lab_home, tmp_path, rows: pd.DataFrame):
    """A copy of the ingested store with `rows` as the disk's readings (the twins ran 8 s apart: one store each)."""
    home = tmp_path / "home"
    shutil.copytree(lab_home, home)
    layout.write_rows(Settings.resolve(home), "vda", rows)
    return home


def test_others_around_a_short_run_are_not_put_on_the_system(lab, tmp_path):
    """Another writer's 400 MB in the reading the 0.1 s run is in and 600 MB in its tail: the coverage factor said
    most of its I/O time was the system's. At 1 s readings nothing places those bytes inside the run."""
    home, facts = lab
    f = facts[SHORT]
    assert (f["end"] - f["start"]) / S < 0.5  # shorter than one reading
    start_reading = f["start"] // S * S
    rows, other = _readings(f, lambda t: 400 * MB if t == start_reading else (600 * MB if t == start_reading + 3 * S
                                                                              else 0.0))
    home = _plant(home, tmp_path, rows)
    w = _why(home, f)
    low, high = _reference(f, other)
    assert low == 0.0 and high > 0.5 * (f["io"] - min(f["io"], f["saving"]))  # what the old answer put on the system
    assert w["system_s"] is None and w["system_model"] == "below_resolution"
    r = w["system_range"]
    assert r["low_s"] == 0.0 and r["high_s"] == pytest.approx(high, rel=1e-6) and r["resolved"] is False
    assert r["reading_s"] == 1.0 and r["run_s"] == pytest.approx((f["end"] - f["start"]) / S, rel=1e-9)
    assert w["logs"][0]["system_range"] == r
    # the parts still sum to the I/O time: what is not told from 0 is not the system's
    assert w["code_s"] + w["unexplained_s"] == pytest.approx(w["io_time_s"], rel=1e-12)
    assert "too short for 1 s readings" in w["evidence"]["system"]
    assert "not told from 0 by 1 s readings" in w["verdict"]
    # the CLI's table says the range, not "unknown" and not seconds
    p = in_process_cli("why", f["path"], "--fs", "vda", home=home, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "not told from 0" in p.stdout


def test_a_storm_through_the_run_stays_on_the_system(lab, tmp_path):
    """1 GB in every reading from 2 s before the 5.6 s storm twin to 2 s after it: the readings wholly inside the
    run hold the storm's bytes, the share is resolved and priced as before: io × (1 − CF)."""
    home, facts = lab
    f = facts[STORM]
    rows, other = _readings(f, lambda t: 1000 * MB if f["start"] - 2 * S <= t < f["end"] + 2 * S else 0.0)
    home = _plant(home, tmp_path, rows)
    w = _why(home, f)
    low, high = _reference(f, other)
    assert low > 0.005 * f["io"]
    assert w["system_model"] == "coverage_factor" and w["system_range"]["resolved"] is True
    assert w["system_s"] == pytest.approx(high, rel=1e-6)
    assert w["system_range"]["low_s"] == pytest.approx(low, rel=1e-6)
    assert w["system_range"]["high_s"] == pytest.approx(high, rel=1e-6)
    assert "is the system" in w["verdict"]


def test_a_quiet_run_longer_than_its_readings_with_others_in_its_tail(lab, tmp_path):
    """The 3.7 s quiet twin: its readings wholly inside the run hold its own bytes only, the others' 300 MB lie in
    the tail. The share is not told from 0, and the evidence says why in those words (not "too short")."""
    home, facts = lab
    f = facts[QUIET]
    tail = (f["end"] // S + 2) * S
    rows, other = _readings(f, lambda t: 300 * MB if t == tail else 0.0)
    home = _plant(home, tmp_path, rows)
    w = _why(home, f)
    low, high = _reference(f, other)
    assert low == 0.0 and high > 0.005 * f["io"]
    assert w["system_model"] == "below_resolution" and w["system_s"] is None
    assert w["system_range"]["high_s"] == pytest.approx(high, rel=1e-6)
    assert "hold no other bytes than its own" in w["evidence"]["system"]


def test_inside_amount_against_a_loop(capsys):
    """stats.coverage.inside_amount against a loop over random readings of random lengths (seed printed)."""
    from ioweather.stats.coverage import inside_amount, resolved_cost

    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        start = np.sort(rng.integers(0, 60 * S, n))
        iv = rng.choice([0.5, 1.0, 5.0, 0.0], n)
        val = rng.choice([1.0, 7.5, -1.0, math.nan, 1e9], n)
        since = int(rng.integers(0, 60 * S))
        until = since + int(rng.integers(0, 20 * S))
        want = sum(v for s, i, v in zip(start, iv, val)
                   if i > 0 and math.isfinite(v) and v >= 0 and s >= since and s + round(i * 1e9) <= until)
        assert inside_amount(start, iv, val, since, until) == pytest.approx(want, rel=1e-12, abs=0)
    # the low end never exceeds the high end, and the job's own bytes are never the system's
    assert resolved_cost(2.0, 100.0, 100.0, 0.5) == (0.0, 1.0)
    assert resolved_cost(2.0, 100.0, 400.0, 0.2) == pytest.approx((1.5, 1.6))
    assert resolved_cost(2.0, 100.0, 400.0, 0.9) == pytest.approx((0.2, 0.2))


def test_a_run_on_its_own_osts_is_judged_at_their_resolution(lab, tmp_path, monkeypatch):
    """The coverage factor's "job's targets" variant (a Lustre log naming its OSTs; planted here: the 3.7 s quiet
    twin's log as if it named OST0000): another writer's 300 MB in the run's tail on OST0000, and a storm through
    the run on OST0001, a server the job did not use. The share is taken over OST0000 alone, whose readings wholly
    inside the run hold the job's own bytes only: not told from 0 (over every target the storm resolves it)."""
    from ioweather.services.jobs import weather as job_weather

    home, facts = lab
    f = facts[QUIET]
    tail = (f["end"] // S + 2) * S
    mine, other = _readings(f, lambda t: 300 * MB if t == tail else 0.0)
    storm, _ = _readings({**f, "written": 0.0}, lambda t: 1000 * MB if f["start"] - 2 * S <= t < f["end"] + 2 * S
                         else 0.0)
    rows = pd.concat([mine.assign(target="vda-OST0000"), storm.assign(target="vda-OST0001")])
    # the reference: over every target the storm is inside the run, and the share is resolved
    every = _why(_plant(home, tmp_path / "all", rows), f)
    assert every["system_model"] == "coverage_factor" and every["system_range"]["resolved"] is True
    home = _plant(home, tmp_path / "own", rows)
    real = job_weather._file_facts

    def named_ost0(store, rows):
        sums, mounts, osts, mbytes = real(store, rows)
        return sums, mounts, {h: [0] for h in rows["log_hash"]}, mbytes
    monkeypatch.setattr(job_weather, "_file_facts", named_ost0)
    w = _why(home, f)
    low, high = _reference(f, other)
    assert low == 0.0 and high > 0.005 * f["io"]
    assert w["system_s"] is None and w["system_model"] == "below_resolution", w["evidence"]["system"]
    r = w["system_range"]
    assert r["low_s"] == 0.0 and r["high_s"] == pytest.approx(high, rel=1e-6) and r["resolved"] is False
    assert "hold no other bytes than its own" in w["evidence"]["system"]


def test_the_jobs_range_sums_only_the_coverage_factors_logs_and_is_resolved_as_one_logs():
    """A job of three logs: one the coverage factor placed 10 s surely on the system (resolved), one whose share
    1 s readings cannot tell from 0, one the probes priced (its coverage-factor range kept as evidence). The job's
    range is of the first two: told from 0 by the first's low end, as one log of their sum would be (`cf_range`)."""
    from types import SimpleNamespace

    from ioweather.services.answers.why import NEGLIGIBLE, SystemRange, _ranges

    def log(io, model, low, high, reading, run):
        resolved = low > NEGLIGIBLE * io or high <= NEGLIGIBLE * io
        return SimpleNamespace(io_time_s=io, system_model=model, system_range=SystemRange(
            low_s=low, high_s=high, reading_s=reading, run_s=run, resolved=resolved))

    surely = log(40.0, "coverage_factor", 10.0, 12.0, 1.0, 60.0)
    unsure = log(2.0, "below_resolution", 0.0, 1.5, 10.0, 3.0)
    probed = log(30.0, "probe_slowdown", 25.0, 28.0, 1.0, 90.0)
    assert surely.system_range.resolved and not unsure.system_range.resolved
    r = _ranges([surely, unsure, probed])
    assert (r.low_s, r.high_s, r.reading_s, r.run_s) == (10.0, 13.5, 10.0, 60.0) and r.resolved is True
    # alone, the unsure log's range is not told from 0; without a coverage factor's log there is no range
    assert _ranges([unsure]).resolved is False and _ranges([probed]) is None
    # each log's share told (one's low end above its negligible share, the other's high end below it), their sum's
    # not: 0.6 s surely, up to 1.3 s, of 200 s of I/O
    told_high = log(100.0, "coverage_factor", 0.6, 0.9, 1.0, 60.0)
    told_low = log(100.0, "coverage_factor", 0.0, 0.4, 1.0, 60.0)
    assert told_high.system_range.resolved and told_low.system_range.resolved
    assert _ranges([told_high, told_low]).resolved is False
