"""job diff's crowd on one device (docs/validation.md, "one-rank-io on a crowded disk, measured"), on real runs:
the lab's one-rank-io and fixed-one-rank-io (4 ranks, 3 GiB in 4 MiB O_DIRECT writes; rank 0 alone, then every
rank its quarter) run back to back during a fio crowd of 4 writer streams on the same disk, and again with no
crowd (the control), while `collect --sources diskstats` recorded the disk (tests/data/lab/crowd: round 1 of
`benchmarks/study_lab_crowd.py`, 2026-11-29 08:41-08:42 UTC: the logs, collect's 1 s readings of the disk as
stored (`diskstats.csv`, the disk `vm:vda`), and the study's own 50 ms reads of /proc/diskstats
(`diskstats-50ms.csv`), the independent reference of the device's rate). The device's rate is that of the job's one
device (its mount's, `fs_names.disk_target`: here vda, as the README says) over rank 0's I/O span."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import socket
from pathlib import Path
from types import SimpleNamespace


import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.config import short_host
from ioweather.services.answers.job_diff import (CrowdCause, DiffSide, crowd_cause, device_rate, diff_reports,
                                                 store_crowd)
from ioweather.services.runtime.fs_names import disk_target
from ioweather.services.jobs.darshan import job_answer
from ioweather.sources.darshan_log import read_log
from ioweather.store.telemetry_layout import write_rows

CROWD = Path(__file__).parent / "data" / "lab" / "crowd"
BAD, FIXED = CROWD / "one-rank-io-crowd.darshan", CROWD / "fixed-one-rank-io-crowd.darshan"
QUIET_BAD, QUIET_FIXED = CROWD / "one-rank-io-quiet.darshan", CROWD / "fixed-one-rank-io-quiet.darshan"
MiB = 1 << 20
#: the disk the logs were written on (README): collect's target of it
TARGET = "vm:vda"


def _vda(dataset: str, mount: str | None) -> tuple[str, str]:
    """The resolver as it answered on the machine that ran the lab (this test may run on another)."""
    assert (dataset, mount) == ("vm", "/")
    return TARGET, ""


def _budget(fs: str | None = "vm", mount: str | None = "/"):
    """What store_crowd reads of why's budget of a run: its file system and mount."""
    return SimpleNamespace(fs=fs, mount=mount)


def _rows() -> pd.DataFrame:
    return pd.read_csv(CROWD / "diskstats.csv")


@pytest.fixture(scope="module")
def disk(tmp_path_factory) -> Settings:
    """A store holding collect's readings of the disk (dataset `vm`, as collect named this host's), and of two
    devices more, as `collect --sources diskstats` keeps every disk: a second disk `vdb` and an LVM volume
    `dm-0` on vda (their rows the disk's own, duplicated: the job's device must be told from them)."""
    settings = Settings.resolve(tmp_path_factory.mktemp("crowd") / "home")
    rows = _rows()
    write_rows(settings, "vm", pd.concat([rows, rows.assign(target="vm:vdb"), rows.assign(target="vm:dm-0")]))
    return settings


def _window(path: Path) -> tuple[float, float]:
    log = read_log(str(path))
    return log.start_time_s, log.end_time_s


def _raw_span(path: Path) -> tuple[float, float]:
    """Rank 0's writes from the first one's start to the last one's end, in Unix seconds, from the log's POSIX
    counters as read (not through stats.job): the reference of the report's open-to-last-end span
    (perf.rank0_io_span)."""
    log = read_log(str(path))
    po = log.records["POSIX"]
    c, f = dict(zip(po.counter_names, po.counter_values.T)), dict(zip(po.fcounter_names, po.fcounter_values.T))
    mine = (c["POSIX_BYTES_WRITTEN"] > 0) & (po.ranks <= 0)
    return (log.start_time_s + float(f["POSIX_F_WRITE_START_TIMESTAMP"][mine].min()),
            log.start_time_s + float(f["POSIX_F_WRITE_END_TIMESTAMP"][mine].max()))


def _span(path: str) -> list[float] | None:
    """Rank 0's I/O span in Unix seconds as `job` reports it (perf.rank0_io_span), which job diff prices over."""
    return job_answer(path)[0].perf.rank0_io_span


def _ns(span) -> tuple[int, int]:
    return int(span[0] * 1e9), int(span[1] * 1e9)


def _sampled_rate(path: Path) -> float:
    """The device's write rate over rank 0's I/O span from the 50 ms reads (linear between reads): not
    through ioweather's telemetry store."""
    t0, t1 = _span(str(path))
    with open(CROWD / "diskstats-50ms.csv") as f:
        rows = [(float(r["time_s"]), float(r["write_bytes"])) for r in csv.DictReader(f)]

    def at(t):
        (ta, ba), (tb, bb) = next((a, b) for a, b in zip(rows, rows[1:]) if a[0] <= t <= b[0])
        return ba + (bb - ba) * (t - ta) / (tb - ta)
    return (at(t1) - at(t0)) / (t1 - t0)


def _diff(settings: Settings, bad: Path, fixed: Path, spans=None):
    """(the diff with the crowd as job diff prices it from the store, the diff without it, the device's rates)."""
    rb, ra = job_answer(str(bad))[0], job_answer(str(fixed))[0]
    spans = spans or [_span(str(p)) for p in (bad, fixed)]
    rates = tuple(device_rate(settings.parquet_dir, "vm", TARGET, *_ns(sp)) for sp in spans)
    sides = [DiffSide(ident=p.name, path=str(p), io_time_s=r.perf.io_time_s, runtime_s=r.job.runtime_s,
                      nprocs=r.job.nprocs, exe=r.job.exe, verdict=r.verdict) for p, r in ((bad, rb), (fixed, ra))]
    crowd, notes = store_crowd(settings.parquet_dir, [_budget(), _budget()], spans, rb, ra, target_of=_vda)
    assert notes == [] and crowd == crowd_cause(rb, ra, rates, "vm", TARGET)
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
    assert "and the crowd on vm" in d.verdict and "crowd −" in d.verdict and "(vm:vda)" in crowd.message
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
    """End to end: both runs ingested, the disk's readings in the store, job diff by log hash. The logs' files
    were on `/`: the readings are stored as collect would name this node's disk under `/` (its dataset and
    device, `disk_target`), beside another disk's, so that the real resolver picks them here."""
    host = short_host(socket.gethostname())
    target, why_not = disk_target(host, "/")
    if target is None:
        pytest.skip(f"/ has no disk collect keeps here: {why_not}")
    cli("jobs", "ingest", str(BAD), str(FIXED), "--workers", "1", home=home, check=True)
    rows = _rows()
    write_rows(Settings.resolve(home), host, pd.concat([rows.assign(target=target),
                                                        rows.assign(target=f"{host}:not-{target.split(':')[1]}")]))
    ids = [hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in (BAD, FIXED)]
    doc = json.loads(cli("job", "diff", *ids, "--json", "--fs", host, home=home, check=True).stdout)
    crowd = next(c for c in doc["causes"] if c["kind"] == "crowd")
    assert doc["explained_share"] >= 0.9 and crowd["change_s"] < -2.0 and crowd["fs"] == host
    assert f"({target})" in crowd["message"] and 3.0 < crowd["others"] < 4.5
    assert doc["system"] is not None and doc["verdict"].startswith("the code changed")
    assert -doc["claimed_s"] == pytest.approx(-crowd["change_s"])


def test_the_jobs_device_is_told_from_the_other_disks_and_the_volumes_on_it(disk, tmp_path):
    """collect keeps every disk (vdb) and device-mapper volume (dm-0, whose bytes are vda's again): the rate is of
    the job's one device, the same as from a store holding vda alone, never their sum."""
    alone = Settings.resolve(tmp_path / "home")
    write_rows(alone, "vm", _rows())
    for p in (BAD, QUIET_BAD):
        window = _ns(_span(str(p)))
        got = device_rate(disk.parquet_dir, "vm", TARGET, *window)
        assert got == pytest.approx(device_rate(alone.parquet_dir, "vm", TARGET, *window), rel=1e-12)
        # the other two targets are there, with the same bytes: summing the dataset would count them three times
        for other in ("vm:vdb", "vm:dm-0"):
            assert device_rate(disk.parquet_dir, "vm", other, *window) == pytest.approx(got, rel=1e-12)
        assert device_rate(disk.parquet_dir, "vm", "vm:sdz", *window) is None


def test_rank0s_io_span_is_read_from_the_log():
    for p in (BAD, FIXED, QUIET_BAD, QUIET_FIXED):
        (a, b), (ra, rb), (t0, t1) = _span(str(p)), _raw_span(p), _window(p)
        # from the first open (just before the first write) to the last write's end, inside the job's run
        assert ra - 0.05 < a <= ra and b == pytest.approx(rb, abs=1e-6)
        assert t0 <= a < b and b - t1 < 0.05     # (the header's end is rounded: up to 11 ms before the last end)


def test_without_one_device_or_a_span_no_crowd_is_priced_and_the_note_says_why(disk):
    rb, ra = job_answer(str(BAD))[0], job_answer(str(FIXED))[0]
    spans = [_span(str(p)) for p in (BAD, FIXED)]
    pq = disk.parquet_dir

    def priced(budgets=None, sp=spans, target_of=_vda):
        return store_crowd(pq, budgets or [_budget(), _budget()], sp, rb, ra, target_of=target_of)

    assert priced()[0] is not None
    cases = {
        "no single device of vm for /: /dev/root is not a disk": priced(
            target_of=lambda fs, mount: (None, "/dev/root is not a disk")),
        "is not this node's": priced(  # the real resolver, asked of another node's dataset
            target_of=lambda fs, mount: disk_target("x" + short_host(socket.gethostname()), mount)),
        "not on one file system and mount": priced([_budget(), _budget(mount="/scratch")]),
        "the before run's log has no rank-0 I/O span": priced(sp=[None, spans[1]]),
        "or it is shorter than their interval": priced(sp=[(spans[0][0], spans[0][0] + 0.5), spans[1]]),
    }
    for said, (crowd, notes) in cases.items():
        assert crowd is None and len(notes) == 1 and notes[0].startswith("no crowd priced: "), said
        assert said in notes[0], (said, notes)
    # not a crowd case (the same code twice): nothing priced, nothing to say
    assert store_crowd(pq, [_budget(), _budget()], spans, rb, rb, target_of=_vda) == (None, [])


def test_a_crowd_while_the_job_computes_is_not_claimed(tmp_path):
    """Planted: the quiet one-rank run, as if its job had computed for 3.5 s before its I/O (the readings start
    3.8 s before it) while 4 other writers, each as fast as rank 0's own stream, used the disk, and stopped as
    rank 0 began (the crowd in the 3 whole seconds of readings before its I/O span). Over the job's window that is m > 1
    streams' worth; over rank 0's I/O span there is none to claim."""
    span = _span(str(QUIET_BAD))
    rb, ra = job_answer(str(QUIET_BAD))[0], job_answer(str(QUIET_FIXED))[0]
    r01 = next(f for f in rb.findings if f.code == "R01")
    rank0_bps = r01.evidence["rank0_bytes"] / r01.evidence["rank0_time_s"]
    rows = _rows()
    start_ns = int(span[0] * 1e9)
    crowded = (rows["time_ns"] + 1e9 <= start_ns) & (rows["metric"] == "write_bytes")
    assert crowded.sum() == 3
    rows.loc[crowded, "value"] += 4 * rank0_bps
    settings = Settings.resolve(tmp_path / "home")
    write_rows(settings, "vm", rows)
    d, without, rates = _diff(settings, QUIET_BAD, QUIET_FIXED)
    crowd = next(c for c in d.causes if c.kind == "crowd")
    assert crowd.others == 0 and crowd.change_s == 0 and d.claimed_s == without.claimed_s
    # the reference: the same rows over the job-like window (3.5 s before the span to its end) price a crowd
    job_like = device_rate(settings.parquet_dir, "vm", TARGET, start_ns - 35 * 10**8, int(span[1] * 1e9))
    assert job_like / rank0_bps - 1 > 1.0
    assert crowd_cause(rb, ra, (job_like, rates[1]), "vm").change_s < -0.3


def test_the_mounts_device_is_its_diskstats_name():
    """disk_target on this machine against /proc/self/mountinfo's MAJOR:MINOR of `/` and /proc/diskstats' name
    of it (a partition's disk, as collect keeps disks)."""
    host = short_host(socket.gethostname())
    with open("/proc/self/mountinfo") as f:
        root = [line.split() for line in f if line.split()[4] == "/"][-1]
    with open("/proc/diskstats") as f:
        names = {f"{x[0]}:{x[1]}": x[2] for x in (line.split() for line in f)}
    if root[2] not in names:
        pytest.skip(f"/ has no block device here ({root[2]})")
    name = names[root[2]]
    if os.path.exists(f"/sys/class/block/{name}/partition"):
        name = os.path.basename(os.path.dirname(os.path.realpath(f"/sys/class/block/{name}")))
    assert disk_target(host, "/") == (f"{host}:{name}", "")
    target, why_not = disk_target(host, "/proc")
    assert target is None and "no block device" in why_not
    assert disk_target("x" + host, "/")[0] is None
