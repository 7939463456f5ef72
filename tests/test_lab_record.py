"""The lab's telemetry (services/lab/record.py, docs/lab.md "Telemetry"): `lab run` records the disk under test
with `collect --sources diskstats` into a lab store and ingests the logs; `lab score` diffs a pair by its stored
jobs when both are stored (the disk's counters can then count: job diff's crowd cause), else by the logs.

The fast tests read the scorer's choice on the stored logs of tests/data/lab/crowd; the slow one runs
one-rank-io and its spread twin as they were (4 MiB writes), reduced to 256 MiB (64 x 4 MiB for rank 0 alone,
16 a rank for the twin; the catalogue's names, so that `lab score` pairs them), under Darshan with the telemetry on, and checks the store against the disk's
own counters read around the run (/proc/diskstats, not through ioweather); and the probes `probe run` recorded
beside them: their samples cover each case's window, their quiet window comes first, `why` prices the system's
share of both runs, and the probe's own writes are small against the cases'.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.lab.record import device_written, no_telemetry_reason, run_recorded
from ioweather.services.lab.run import CaseRun, read_index
from ioweather.services.lab.score import pair_idents, reference_of, score_pairs, stored_logs
from ioweather.services.runtime.fs_names import block_device
from ioweather.services.lab.catalogue import Case, Pair

CROWD = Path(__file__).parent / "data" / "lab" / "crowd"
BAD, FIXED = CROWD / "one-rank-io-crowd.darshan", CROWD / "fixed-one-rank-io-crowd.darshan"
MiB = 1 << 20


def _case(name: str, log: Path) -> CaseRun:
    return CaseRun(name, "", [], [], False, 4, True, "", [str(log)], 1.0, "ok")


def test_a_pair_is_diffed_by_its_stored_jobs_only_when_both_are_stored():
    stored = {str(BAD): "a" * 64, str(FIXED): "b" * 64}
    assert pair_idents(str(BAD), str(FIXED), stored) == ("a" * 64, "b" * 64, True)
    # one of the two stored (a `--case` re-run without telemetry): the logs, both
    assert pair_idents(str(BAD), str(FIXED), {str(BAD): "a" * 64}) == (str(BAD), str(FIXED), False)
    assert pair_idents(str(BAD), str(FIXED), {}) == (str(BAD), str(FIXED), False)


def test_without_a_store_the_pairs_are_scored_from_the_logs():
    got = score_pairs([_case("b", BAD), _case("f", FIXED)], pairs=[Pair("b", "f", "same", "fix")])
    (p,) = got.pairs
    assert got.store is None and got.with_telemetry == 0
    assert p.error is None and not p.telemetry and p.telemetry_note is None
    # the crowded pair without the disk's counters: nothing explains the fix's saving (0 % before labcrowd)
    assert p.change_s < -2.0 and p.explained_share < 0.05
    assert not any(c.startswith("crowd") for c in p.causes)


def test_a_directory_without_a_block_device_records_nothing():
    # /proc is no block device: a site's Lustre or GPFS is scored as without telemetry, and says so
    assert block_device(Path("/proc")) is None and device_written(Path("/proc")) is None
    reason = no_telemetry_reason(Path("/proc"), "proc")
    assert reason.startswith("no telemetry: /proc (proc)") and "from the logs alone" in reason


def test_the_quiet_window_of_the_index_is_why_s_reference():
    seed = random.randrange(2**32)
    print(f"seed {seed}")
    rng = random.Random(seed)
    t0 = dt.datetime(2026, 11, 29, 9, 44, 45, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=rng.randrange(10**6))
    t1 = t0 + dt.timedelta(seconds=rng.uniform(1, 60))
    iso = [t.strftime("%Y-%m-%dT%H:%M:%S.%fZ") for t in (t0, t1)]  # as lab run writes INDEX.json's
    since, until = reference_of(*iso)
    # the reference: ns since the epoch from datetime's own integer arithmetic; units.to_ns goes through a float
    # timestamp (its 53 bits are 256 ns at 2026's 1.8e18 ns), within a microsecond
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    assert abs(since - (t0 - epoch) // dt.timedelta(microseconds=1) * 1000) < 1000
    assert abs(until - (t1 - epoch) // dt.timedelta(microseconds=1) * 1000) < 1000
    assert until - since > 10**9
    # an index without a window (a run before the probes, or --no-telemetry), or an empty one: the rolling baseline
    assert reference_of(None, None) is None and reference_of(iso[0], None) is None
    assert reference_of(iso[1], iso[0]) is None and reference_of(iso[0], iso[0]) is None


@pytest.mark.slow
def test_lab_run_records_the_disk_and_the_pair_is_scored_from_the_store(tmp_path):
    pytest.importorskip("darshan")
    # lazy: the toolchain lookup, skipped with its reason where the lab is not built
    from ioweather.services.lab.catalogue import _posix
    from ioweather.services.lab.toolchain import find
    from ioweather.services.lab.score import score_logs

    try:
        tools = find()
    except UserError as e:
        pytest.skip(f"no lab toolchain: {e}")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    if block_device(scratch) is None:
        pytest.skip(f"{scratch} has no block device of its own to record")
    M4 = str(4 * MiB)
    cases = [Case("one-rank-io", "", ("one-rank-io",), _posix("-O", "-w", "64", "-s", M4, "-d"), procs=4),
             Case("spread-one-rank-io", "", (), _posix("-w", "16", "-s", M4, "-d"), procs=4)]
    logs = tmp_path / "logs"
    before = device_written(scratch)
    run = run_recorded(cases, tools, scratch, logs, quiet_s=4.0)
    after = device_written(scratch)
    assert [c.status for c in run.cases] == ["ok", "ok"], [c.reason for c in run.cases]
    assert run.telemetry is None and run.store == str((logs / "store").resolve())
    index = read_index(logs)
    assert index.store == run.store and index.telemetry is None
    assert (index.baseline_from, index.baseline_until) == (run.baseline_from, run.baseline_until)
    assert not (scratch / ".ioweather-lab-probe").exists()  # the probe's files are removed with the run
    settings = Settings.resolve(run.store)

    # the job rows: both logs stored
    paths = [c.logs[0] for c in run.cases]
    assert sorted(stored_logs(settings, paths)) == sorted(paths)

    # the disk's readings for the run's window: the dataset collect named after this host holds the scratch
    # disk, covering each case's window (with the tail `why` reads); what it stored the disk wrote is no more than the disk's own counters
    # moved around the whole run, and no less than the 512 MiB of O_DIRECT writes the two cases made
    from ioweather.services.answers.job_diff import device_rate
    from ioweather.sources.darshan_log import read_log
    from ioweather.stats.coverage import TAIL_S
    from ioweather.store.telemetry_layout import list_fs, read_frame

    (fs,) = list_fs(settings)
    rows = read_frame(settings, fs, "metric = 'write_bytes'")
    disk = rows[rows["target"] == f"{fs}:{block_device(scratch)}"]
    assert len(disk) >= 2
    stored = float(disk["value"].sum())
    assert 2 * 64 * 4 * MiB <= stored <= after - before
    windows = []
    for log in paths:
        d = read_log(log)
        # the job's window as `why` reads the disk for it: its run and TAIL_S after
        t0, t1 = int(d.start_time_s * 1e9), int((d.end_time_s + TAIL_S) * 1e9)
        assert disk["time_ns"].min() <= t0 and disk["time_ns"].max() >= t1
        assert device_rate(settings.parquet_dir, fs, f"{fs}:{block_device(scratch)}", t0, t1) is not None
        windows.append((t0, t1))

    # the probes: one target on the scratch directory's disk, its quiet window before the first case, and samples
    # of each op through each case's window (at 0.2 s, one at least every second)
    from ioweather.store import open_store
    from ioweather.store import probe as probe_store

    since, until = reference_of(index.baseline_from, index.baseline_until)
    assert until - since >= 4e9 and until <= min(t0 for t0, _ in windows)
    store = open_store(settings)
    try:
        (target,) = probe_store.targets(store)
        s = probe_store.read_samples(store, target, since_ns=since, until_ns=max(t1 for _, t1 in windows))
    finally:
        store.dispose()
    starts = sorted(int(t) for t in s["start_ns"])
    assert sum(1 for t in starts if t < until) >= 10  # the baseline has samples
    for t0, t1 in windows:
        inside = [t for t in starts if t0 <= t < t1]
        gaps = [b - a for a, b in zip([t0, *inside], [*inside, t1])]
        assert inside and max(gaps) <= 1.5e9, (t0, t1, gaps)
    # the probe's own writes (its process's /proc/PID/io) are a small part of the cases' 512 MiB
    assert 0 < run.probe_bytes_written <= 0.1 * 2 * 64 * 4 * MiB

    # the pair's score came from the store, with the disk's counters; without the store, from the logs, and the
    # same runs are read either way
    scored = score_logs(logs, drishti=False).pairs
    (p,) = [p for p in scored.pairs if p.bad == "one-rank-io"]
    assert scored.store == run.store and scored.with_telemetry == 1
    assert p.error is None and p.telemetry, p.telemetry_note
    # why priced the system's share of both runs against the probes' quiet window
    assert (scored.baseline_from, scored.baseline_until) == (index.baseline_from, index.baseline_until)
    # (seconds, or a share the disk's 1 s readings cannot tell from 0: the table says so, no note)
    assert p.system_note is None and len(p.system_models) == 2 and "unknown" not in p.system_models
    for s, io, model in zip((p.before_system_s, p.after_system_s), (p.before_s, p.after_s), p.system_models):
        assert (s is None) == (model == "below_resolution") and (s is None or 0 <= s <= io)
    (q,) = score_pairs(run.cases, pairs=[Pair("one-rank-io", "spread-one-rank-io", "", "")]).pairs
    assert not q.telemetry and (q.before_s, q.after_s) == (p.before_s, p.after_s)
