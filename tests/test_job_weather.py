"""A job's weather end to end: Darshan job rows + telemetry Parquet + scheduler rows -> `umami` (service and CLI).

Jobs and telemetry are planted through the store's own writers; the expected numbers are computed
here from the planted amounts, not read back from ioweather."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from umami_planted import MIB, T0, S
from umami_planted import job_row as _job
from umami_planted import telemetry as _telemetry

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.jobs import weather as job_weather
from ioweather.services.answers import umami
from ioweather.stats import job_weather as jws
from ioweather.store import jobs as jstore
from ioweather.store import open_store, scheduler
from ioweather.store import telemetry_layout as layout


@pytest.fixture
def planted(home):
    """12 earlier jobs of one motif (60 s each, a day apart) and a last slow one with a competitor
    taking 1/4 of the bandwidth; telemetry for all of them."""
    settings = Settings.resolve(home, None)
    store = open_store(settings)
    rows, tables, frames = [], [], []
    per_interval = 4 * MIB  # per target and 5 s sample
    for i in range(13):
        start = T0 + i * 86_400 * S
        last = i == 12
        n_samples = 12  # 60 s / 5 s
        written = 4 * per_interval * n_samples
        r, f = _job(i + 1, start, 55, written, 100.0 if last else 400.0 + i, 1000 + i)  # window 55 s + 5 s tail
        rows.append(r)
        tables.append(f)
        frames.append(_telemetry(start, start + 60 * S, per_interval, (per_interval // 3) if last else 0))
    jstore.write_batch(store, settings.parquet_dir, rows, tables, [])
    layout.write_rows(settings, "scratch", pd.concat(frames, ignore_index=True))
    return settings, store


def test_planted_competitor_share_and_verdict(planted):
    settings, store = planted
    doc = umami.umami(store, "1012").to_json()
    w = doc["weather"]
    # the job moved 4 MiB per target per sample, the competitor a third of that on every target
    share = 4 * MIB / (4 * MIB + 4 * MIB // 3)
    assert w["coverage_factor_bw"] == pytest.approx(share, rel=1e-12)
    assert w["contention_bw"] == pytest.approx(1 - share, rel=1e-12)
    assert w["missing_fraction"] == 0.0
    assert doc["history_jobs"] == 12
    cf = next(m for m in doc["metrics"] if m["metric"] == "coverage_factor_bw")
    assert cf["quartile"] == 1 and cf["colour"] == "red"
    perf = next(m for m in doc["metrics"] if m["metric"] == "fraction_of_peak")
    assert perf["value"] == pytest.approx(100.0 / 411.0)
    assert perf["box"]["n"] == 12
    # the history's CFs are all 1.0: no r, so no culprit; the verdict names performance and its numbers
    assert doc["verdict"].startswith("your code (or an unmeasured cause): performance is in the bottom quartile")
    assert "fraction of peak 0.24" in doc["verdict"]


def test_weather_is_stored_and_recomputed_when_telemetry_arrives(planted):
    from ioweather.store import job_weather as wstore

    settings, store = planted
    job_weather.refresh_all(store)
    key = f"darshan:{12 + 1:064x}"
    before = wstore.get(store, key, "scratch")
    assert job_weather.refresh_all(store).computed == 0  # nothing new: nothing recomputed
    # a second competitor's telemetry arrives for the last job's window
    start = T0 + 12 * 86_400 * S
    extra = _telemetry(start, start + 60 * S, 0, 4 * MIB, targets=1)
    extra["target"] = "fs-OST0009"
    layout.write_rows(settings, "scratch", extra)
    res = job_weather.refresh_all(store)
    assert res.computed == 1
    after = wstore.get(store, key, "scratch")
    assert after["telemetry_sig"] != before["telemetry_sig"]
    fs_bytes = 4 * (4 * MIB * 12 + 4 * MIB // 3 * 12) + 4 * MIB * 12
    assert after["doc"]["coverage_factor_bw"] == pytest.approx(4 * 4 * MIB * 12 / fs_bytes, rel=1e-12)


def test_job_without_telemetry_is_no_data_not_zero(planted):
    settings, store = planted
    r, f = _job(99, T0 - 30 * 86_400 * S, 60, 10 * MIB, 300.0, 4242)
    jstore.write_batch(store, settings.parquet_dir, [r], [f], [])
    doc = umami.umami(store, "4242").to_json()
    assert doc["weather"]["no_data"] is True
    assert doc["weather"]["coverage_factor_bw"] is None and doc["weather"]["missing_fraction"] is None
    assert doc["verdict"].startswith("not enough history") or doc["verdict"].startswith("no data")
    cf = next(m for m in doc["metrics"] if m["metric"] == "coverage_factor_bw")
    assert cf["value"] is None and cf["quartile"] is None


def test_concurrent_jobs_from_the_scheduler(planted):
    settings, store = planted
    start = T0 + 12 * 86_400 * S
    scheduler.replace_jobs(store, [
        {"cluster": "c", "jobid": "1012", "start_ns": start - 10 * S, "end_ns": start + 70 * S, "nnodes": 2},
        {"cluster": "c", "jobid": "7", "start_ns": start - 3600 * S, "end_ns": start + 30 * S, "nnodes": 10},
        {"cluster": "c", "jobid": "8", "start_ns": start + 20 * S, "end_ns": None, "nnodes": 4},
        {"cluster": "c", "jobid": "9", "start_ns": start + 3600 * S, "end_ns": start + 7200 * S, "nnodes": 4},
    ], "test")
    w = umami.umami(store, "1012").to_json()["weather"]
    assert w["concurrent_jobs"] == 2
    # window = 60 s (55 s + 5 s tail): job 7 overlaps 30 s x 10 nodes, job 8 40 s x 4 nodes
    assert w["concurrent_node_hours"] == pytest.approx((30 * 10 + 40 * 4) / 3600)
    assert w["coverage_factor_nodehrs"] == pytest.approx(120 / (120 + 300 + 160))
    # a Darshan job whose id the scheduler does not know: weather without that, and a note
    w0 = umami.umami(store, "1000").to_json()["weather"]
    assert any("not in the scheduler data" in n for n in w0["notes"]) or w0["concurrent_jobs"] is None


def test_bad_input(planted, home):
    settings, store = planted
    with pytest.raises(UserError, match="no job '777777'"):
        umami.umami(store, "777777")
    r = run_cli("umami", "777777", home=home)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    r = run_cli("umami", "1012", "--json", home=home)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert set(doc) >= {"job", "motif", "verdict", "metrics"}
    assert {"metric", "value", "quartile", "r", "p"} <= set(doc["metrics"][0])


def test_motif_with_one_job(home):
    settings = Settings.resolve(home, None)
    store = open_store(settings)
    r, f = _job(1, T0, 55, 48 * MIB, 100.0, 5)
    jstore.write_batch(store, settings.parquet_dir, [r], [f], [])
    layout.write_rows(settings, "scratch", _telemetry(T0, T0 + 60 * S, MIB, 0))
    doc = umami.umami(store, "5").to_json()
    assert doc["verdict"] == "not enough history (0 similar jobs; need 10)"
    assert doc["weather"]["coverage_factor_bw"] == pytest.approx(48 * MIB / (4 * MIB * 12))


def test_job_osts_from_the_stored_lustre_layout():
    """The per-file table stores each file's OSTs as "0,3,7" (stats/job.py): a job page crashed on
    int(',') before the string was split."""
    files = pd.DataFrame({"log_hash": ["a", "a", "a", "b"], "module": ["POSIX", "POSIX", "STDIO", "POSIX"],
                          "ost_ids": ["0,3,7", "12", "99", None]})
    posix = files[files["module"] == "POSIX"]
    assert sorted(jws.ost_ids(posix.loc[posix["log_hash"] == "a", "ost_ids"])) == [0, 3, 7, 12]
    assert jws.ost_ids([None, float("nan"), 5, "1,2,"]) == {5, 1, 2}


def test_probe_slowdown_during_the_window(planted):
    """A probe target 8x slower during the last job's minute: the weather's probe slowdown per op is the
    window's median duration / the median of the 30 whole days before the job's day, computed here
    from the samples themselves; one baseline read serves every job of a day."""
    from web_synthetic import Episode, add_target

    from ioweather.store import probe as probe_store

    _settings, store = planted
    start = T0 + 12 * 86_400 * S
    day0 = start // (86_400 * S) * 86_400 * S
    # no probe yet: unknown, not 1.0
    assert job_weather.compute(store, job_weather.find_job(store, "1012"), "scratch").probe_slowdown is None
    add_target(store, "scratch-probe", day0 - 31 * 86_400 * S, day0, period_s=60, seed=1, error_rate=0, timeout_rate=0)
    add_target(store, "scratch-probe", day0, day0 + 86_400 * S, period_s=5, seed=2, error_rate=0, timeout_rate=0,
               episodes=[Episode(start, start + 60 * S, 8.0)])
    w = umami.umami(store, "1012").to_json()["weather"]

    def medians(since, until):
        s = probe_store.read_samples(store, "scratch-probe", since_ns=since, until_ns=until)
        return {op: np.median(s["duration_ns"][s["op"] == k] / 1e9) for k, op in enumerate(probe_store.OPS)}

    win, base = medians(start, start + 60 * S), medians(day0 - 30 * 86_400 * S, day0)
    want = {op: win[op] / base[op] for op in probe_store.OPS}
    assert w["probe_slowdown_by_op"] == pytest.approx(want, rel=1e-12)
    assert w["probe_slowdown"] == pytest.approx(max(want.values()), rel=1e-12)
    assert min(want.values()) > 4  # the planted 8x shows through the noise
    probes = job_weather.ProbeBaselines(store)
    jobs = [job_weather.find_job(store, "1012")] * 3
    for j in jobs:
        job_weather.compute(store, j, "scratch", probes=probes)
    assert list(probes._expected) == [("scratch-probe", day0 // (86_400 * S))]
