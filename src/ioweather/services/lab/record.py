"""The lab's telemetry: `collect --sources diskstats` beside the cases, and their logs ingested (docs/lab.md,
"Telemetry").

`job diff` prices a crowd on one device (its `crowd` cause: one-rank-io's fix on a disk other jobs write to)
only when both runs are stored jobs and the store holds the device's counters for their windows. `lab run`
records both: `collect --sources diskstats --interval 1s` into a lab store (`LOGS/store`, or `--home`) from
before the first case to after the last, then `jobs ingest` of the logs that ran. `lab score` diffs a pair by
its stored jobs when both are there (services/lab/score.py). Where the directory under test has no block
device of its own (Lustre, GPFS, NFS, tmpfs, an overlay) there is nothing local to record: the run says so in
one line and the pairs are scored from their logs, as without telemetry.

The recorder processes here (started, raised ahead of the jobs, waited for, stopped) are also `lab storm`'s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from ioweather.errors import UserError
from ioweather.services.lab.run import LabRun, fs_type, read_index, run_cases, write_index
from ioweather.signals import die_with_parent

#: the lab store's directory under the logs directory (lab run's default --home)
STORE = "store"
#: collect's tick: a twin of 1-10 s spans a few readings of the device
INTERVAL = "1s"
INGEST_TIMEOUT_S = 600


def ioweather(home: Path, *args: str, **kw) -> subprocess.Popen:
    """`ioweather ARGS` with IOWEATHER_HOME=home, killed when this process dies however it dies
    (PR_SET_PDEATHSIG): a recorder left running would fill its store for ever."""
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "ioweather", *args], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=partial(die_with_parent, os.getpid()), **kw)


def finish(p: subprocess.Popen, what: str, timeout: float) -> str:
    """Wait for `p` (killed after `timeout`, a UserError naming `what`); its stderr."""
    try:
        return p.communicate(timeout=timeout)[1] or ""
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise UserError(f"{what} did not stop within {timeout:g} s") from None
    except ValueError:  # its output was read to the end already (it stopped at once, and said why)
        return ""


def stop(p: subprocess.Popen, what: str, timeout: float = 60.0, ok=(0, -signal.SIGINT, 130)) -> None:
    """SIGINT (a recorder's clean stop: its last rows are flushed), then wait; a failure names its reason."""
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    err = finish(p, what, timeout)
    if p.returncode not in ok:
        raise UserError(f"{what} failed (exit {p.returncode}): {err.strip().splitlines()[-1:] or ''}")


def ahead(p: subprocess.Popen) -> None:
    """The recorders, and the planted storm, ahead of the jobs, where the user may (root): on a loaded machine
    collect's 1 s tick was read late (a job's bytes in the second before), and the storm at the twins' priority
    did not slow its twin by the second `job diff` calls material. An unprivileged lab runs as it is."""
    try:
        os.setpriority(os.PRIO_PROCESS, p.pid, -10)
    except OSError:
        pass


def collecting(home: Path) -> bool:
    """Whether `collect` has stored its first readings in `home` (its state file is written with them)."""
    return any((home / "parquet" / "telemetry").glob(".collect-*.state.json"))


def wait_collecting(home: Path, p: subprocess.Popen, timeout_s: float = 180.0) -> None:
    """Until collect has stored its first readings: a fixed wait is not enough on a loaded machine (its imports
    took longer, and the first case ran before its first tick)."""
    deadline = time.monotonic() + timeout_s
    while not collecting(home):
        if p.poll() is not None:
            raise UserError(f"collect stopped at once: {(p.communicate()[1] or '').strip()[-300:]}")
        if time.monotonic() > deadline:
            raise UserError(f"collect stored nothing within {timeout_s:g} s of its start")
        time.sleep(0.2)


def block_device(path: Path) -> str | None:
    """The name of the block device holding `path` in /proc/diskstats (/sys/dev/block/MAJOR:MINOR names it);
    None where it has none of its own (Lustre, GPFS, NFS, tmpfs, overlay)."""
    dev = os.stat(path).st_dev
    try:
        return Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve(strict=True).name
    except OSError:
        return None


def device_written(path: Path) -> int | None:
    """Bytes written so far by the block device holding `path`: its line of /proc/diskstats, read by the
    diskstats source's parser; None where `path` has no block device of its own."""
    # lazy: pandas via sources.telemetry: kept off `lab`'s command module top
    from ioweather.sources.telemetry.diskstats import parse_diskstats

    name = block_device(path)
    if name is None:
        return None
    try:
        with open("/proc/diskstats") as f:
            counters = parse_diskstats(f.read(), ignore=None).get(name)
    except OSError:
        return None
    return None if counters is None else int(counters["write_bytes"])


def no_telemetry_reason(directory: Path, fs_type: str | None) -> str | None:
    """Why the disk under `directory` cannot be recorded here (None when it can)."""
    if block_device(directory) is None:
        return (f"no telemetry: {directory} ({fs_type or 'unknown file system'}) has no local block device for "
                "`collect --sources diskstats` to read: the pairs are scored from the logs alone")
    if not Path("/proc/diskstats").is_file():
        return "no telemetry: no /proc/diskstats here: the pairs are scored from the logs alone"
    return None


def ingest(home: Path, logs: list[str]) -> None:
    """`jobs ingest` of `logs` into `home` (idempotent: a log already stored is skipped)."""
    if not logs:
        return
    p = ioweather(home, "jobs", "ingest", *logs)
    err = finish(p, "jobs ingest", INGEST_TIMEOUT_S)
    if p.returncode:
        raise UserError(f"jobs ingest failed: {err.strip()[-300:]}")


def run_recorded(cases, tools, directory: Path, logs_dir: Path, *, home: Path | None = None, telemetry: bool = True,
                 progress_cb=lambda done, total, name: None) -> LabRun:
    """`run_cases`, with collect recording the directory's disk into the lab store from before the first case
    to after the last, and the logs that ran ingested there; INDEX.json names the store (`store`) or says why
    there is none (`telemetry`)."""
    if not directory.is_dir():
        raise UserError(f"--dir {directory}: not a directory")
    directory, logs_dir = directory.resolve(), logs_dir.resolve()
    home = (home or logs_dir / STORE).resolve()
    reason = ("no telemetry (--no-telemetry): the pairs are scored from the logs alone" if not telemetry else no_telemetry_reason(directory, fs_type(directory)))
    # a run of some cases without telemetry keeps the store an earlier run recorded the others' into
    previous = read_index(logs_dir, missing_ok=True)
    if reason is not None:
        run = run_cases(cases, tools, directory, logs_dir, progress_cb)
        return _noted(run, logs_dir, previous.store if previous else None, reason)
    # lazy: numpy via stats.coverage: kept off `lab`'s command module top
    from ioweather.stats.coverage import TAIL_S

    home.mkdir(parents=True, exist_ok=True)
    collect = ioweather(home, "collect", "--sources", "diskstats", "--interval", INTERVAL, "--flush", "2s", "-q")
    try:
        ahead(collect)
        wait_collecting(home, collect)
        run = run_cases(cases, tools, directory, logs_dir, progress_cb)
        # a job's window reads the disk until TAIL_S after its end (`why`, which job diff's system share is): the
        # last case's tail is recorded, and one tick more
        time.sleep(TAIL_S + 1.5)
    finally:
        stop(collect, "collect", ok=(0, 128, 130, -signal.SIGINT))
    ingest(home, [log for c in run.cases if c.status == "ok" for log in c.logs])
    return _noted(run, logs_dir, str(home), None)


def _noted(run: LabRun, logs_dir: Path, store: str | None, reason: str | None) -> LabRun:
    """`run` with its store and why it recorded no telemetry (None when it did), and the index rewritten with
    them (its other cases kept)."""
    run = replace(run, store=store, telemetry=reason)
    index = read_index(logs_dir)
    write_index(replace(index, store=store, telemetry=reason))
    return run
