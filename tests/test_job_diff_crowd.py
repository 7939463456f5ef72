"""job diff's crowd on one device (docs/validation.md, "one-rank-io on a crowded disk, measured"), on real runs:
the lab's one-rank-io and fixed-one-rank-io (4 ranks, 3 GiB in 4 MiB O_DIRECT writes; rank 0 alone, then every
rank its quarter) run back to back during a fio crowd of 4 writer streams on the same disk, and again with no
crowd (the control), while `collect --sources diskstats` recorded the disk (tests/data/lab/crowd: round 1 of
`benchmarks/study_lab_crowd.py`, 2026-11-29 08:41-08:42 UTC: the logs, collect's 1 s readings of the disk as
stored (`diskstats.csv`), and the study's own 50 ms reads of /proc/diskstats (`diskstats-50ms.csv`), the
independent reference of the device's rate)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.services.answers.job_diff import CrowdCause, DiffSide, crowd_cause, device_rate, diff_reports
from ioweather.services.jobs.darshan import job_answer
from ioweather.sources.darshan_log import read_log
from ioweather.store.telemetry_layout import write_rows

CROWD = Path(__file__).parent / "data" / "lab" / "crowd"
BAD, FIXED = CROWD / "one-rank-io-crowd.darshan", CROWD / "fixed-one-rank-io-crowd.darshan"
QUIET_BAD, QUIET_FIXED = CROWD / "one-rank-io-quiet.darshan", CROWD / "fixed-one-rank-io-quiet.darshan"
MiB = 1 << 20


@pytest.fixture(scope="module")
def disk(tmp_path_factory) -> Settings:
    """A store holding collect's readings of the disk (dataset `vm`, as collect named this host's)."""
    settings = Settings.resolve(tmp_path_factory.mktemp("crowd") / "home")
    write_rows(settings, "vm", pd.read_csv(CROWD / "diskstats.csv"))
    return settings


def _window(path: Path) -> tuple[float, float]:
    log = read_log(str(path))
    return log.start_time_s, log.end_time_s


def _sampled_rate(path: Path) -> float:
    """The device's write rate over the log's window from the 50 ms reads (linear between reads): not
    through ioweather's telemetry store."""
    t0, t1 = _window(path)
    with open(CROWD / "diskstats-50ms.csv") as f:
        rows = [(float(r["time_s"]), float(r["write_bytes"])) for r in csv.DictReader(f)]

    def at(t):
        (ta, ba), (tb, bb) = next((a, b) for a, b in zip(rows, rows[1:]) if a[0] <= t <= b[0])
        return ba + (bb - ba) * (t - ta) / (tb - ta)
    return (at(t1) - at(t0)) / (t1 - t0)


def _diff(settings: Settings, bad: Path, fixed: Path):
    rb, ra = job_answer(str(bad))[0], job_answer(str(fixed))[0]
    rates = tuple(device_rate(settings.parquet_dir, "vm", *(int(t * 1e9) for t in _window(p))) for p in (bad, fixed))
    sides = [DiffSide(ident=p.name, path=str(p), io_time_s=r.perf.io_time_s, runtime_s=r.job.runtime_s,
                      nprocs=r.job.nprocs, exe=r.job.exe, verdict=r.verdict) for p, r in ((bad, rb), (fixed, ra))]
    crowd = crowd_cause(rb, ra, rates, "vm")
    return diff_reports(sides[0], rb, sides[1], ra, crowd=crowd), diff_reports(sides[0], rb, sides[1], ra), rates


def test_the_crowded_pair_is_explained_by_the_crowd(disk):
    d, without, rates = _diff(disk, BAD, FIXED)
    # the fix saved seconds on the crowded disk (2.84 s measured), and R01's one-device bound claims none of it
    assert d.io_time_change_s < -2.0
    assert without.explained_share < 0.05 and not any(c.kind == "crowd" for c in without.causes)
    crowd = next(c for c in d.causes if c.kind == "crowd")
    assert isinstance(crowd, CrowdCause) and crowd.run == "before" and crowd.streams == 4
    # the device's rate from collect's 1 s readings agrees with the 50 ms reads of /proc/diskstats (writes only:
    # the disk read < 1 % of that in the window)
    assert rates[0] == pytest.approx(_sampled_rate(BAD), rel=0.05)
    assert rates[1] == pytest.approx(_sampled_rate(FIXED), rel=0.05)
    # rank 0's one stream had a fifth of the device or less: 4 fio streams planted, m measured near 4
    assert crowd.rank0_bps < 0.25 * crowd.device_bps and 3.0 < crowd.others < 4.5
    # all of rank 0's bytes: 768 planted writes of 4 MiB, over R01's rank-0 time
    r01 = next(f for f in job_answer(str(BAD))[0].findings if f.code == "R01")
    assert r01.evidence["rank0_bytes"] == 768 * 4 * MiB
    assert crowd.rank0_bps == pytest.approx(768 * 4 * MiB / r01.evidence["rank0_time_s"])
    assert d.explained_share >= 0.9 and crowd.change_s < 0
    assert "and the crowd on vm" in d.verdict and "crowd −" in d.verdict
    # the model claims no more than the fix saved here by more than the run-to-run spread of the quiet rounds
    assert -crowd.change_s < -d.io_time_change_s + 0.2
    # the other causes are the diff without telemetry's, unchanged
    assert [c for c in d.causes if c.kind != "crowd"] == without.causes
    assert json.dumps(d.to_json())  # typed to the leaves: the cause's numbers are plain JSON


def test_a_quiet_disk_claims_nothing_beyond_the_one_device_bound(disk):
    d, without, rates = _diff(disk, QUIET_BAD, QUIET_FIXED)
    crowd = next(c for c in d.causes if c.kind == "crowd")
    # nobody else wrote: the device moved no more than rank 0's own stream over the job's window
    assert crowd.others == 0 and crowd.change_s == 0 and "to itself" in crowd.message
    assert abs(d.explained_s - without.explained_s) < 1e-9
    assert d.verdict == without.verdict and d.verdict.startswith("no material change")


def test_without_the_device_rate_nothing_is_priced():
    rb, ra = job_answer(str(BAD))[0], job_answer(str(FIXED))[0]
    assert crowd_cause(rb, ra, (None, None), "vm") is None
    # the pair the other way round: the crowd is in the after run, and the change is an increase
    flipped = crowd_cause(ra, rb, (None, 3000 * MiB), "vm")
    assert flipped is not None and flipped.run == "after" and flipped.change_s > 0
    # two runs of the same code (R01 in both): not the fix, no crowd to price
    assert crowd_cause(rb, rb, (3000 * MiB, 3000 * MiB), "vm") is None


@pytest.mark.slow
def test_job_diff_of_stored_jobs_prices_the_crowd(cli, home):
    """End to end: both runs ingested, the disk's readings in the store, job diff by log hash."""
    cli("jobs", "ingest", str(BAD), str(FIXED), "--workers", "1", home=home, check=True)
    write_rows(Settings.resolve(home), "vm", pd.read_csv(CROWD / "diskstats.csv"))
    ids = [hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in (BAD, FIXED)]
    doc = json.loads(cli("job", "diff", *ids, "--json", "--fs", "vm", home=home, check=True).stdout)
    crowd = next(c for c in doc["causes"] if c["kind"] == "crowd")
    assert doc["explained_share"] >= 0.9 and crowd["change_s"] < -2.0 and crowd["fs"] == "vm"
    assert doc["system"] is not None and doc["verdict"].startswith("the code changed")
