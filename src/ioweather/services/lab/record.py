"""The lab's telemetry: `collect --sources diskstats` beside the cases, and their logs ingested (docs/lab.md,
"Telemetry").

`job diff` prices a crowd on one device (its `crowd` cause: one-rank-io's fix on a disk other jobs write to)
only when both runs are stored jobs and the store holds the device's counters for their windows. `lab run`
records both: `collect --sources diskstats --interval 1s` into a lab store (`LOGS/store`, or `--home`) from
before the first case to after the last, then `jobs ingest` of the logs that ran. `lab score` diffs a pair by
its stored jobs when both are there (services/lab/score.py). Where the directory under test has no block
device of its own (Lustre, GPFS, NFS, tmpfs, an overlay) there is nothing local to record: the run says so in
one line and the pairs are scored from their logs, as without telemetry.

`why`'s system share (job diff's, and `lab score`'s per run) needs a slowdown reference besides the disk's
counters: a device that runs slow for every writer (a VM host's contention) moves only the job's own bytes, and
the coverage factor says ~0. So `lab run` also runs `probe run` (O_DIRECT, small blocks: `PROBE_ARGS`) on a
directory under `--dir`, recording from before the first case, with a quiet window of `QUIET_S` before it whose
samples are the probes' baseline (INDEX.json's `baseline_from`/`baseline_until`, `why --baseline-from/-until`).

The recorder processes here (started, raised ahead of the jobs, waited for, stopped) are also `lab storm`'s.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.lab.run import LabRun, fs_type, read_index, run_cases, write_index
from ioweather.services.runtime.fs_names import block_device
from ioweather.signals import die_with_parent

#: the lab store's directory under the logs directory (lab run's default --home)
STORE = "store"
#: collect's tick: a twin of 1-10 s spans a few readings of the device
INTERVAL = "1s"
INGEST_TIMEOUT_S = 600
#: seconds of probes with no case running, before the first: the probes' baseline for `why` (each case's window
#: is judged against it). 20 s at 0.2 s is ~100 samples of each op, where the storm pair's 12 s at 0.5 s were 24
QUIET_S = 20.0
#: the probe's directory under --dir (removed after the run), its data file and pool, and `probe run`'s options:
#: 64 KiB O_DIRECT ops every 0.2 s, so that a case of 6 s holds the 30 data_write samples `why` needs beside the
#: disk's counters (why.MIN_PROBE_SAMPLES), at ~0.3 MiB/s of the probe's own writes
PROBE_DIR = ".ioweather-lab-probe"
PROBE_INIT = ("--file-size", "64MiB", "--pool", "20", "--block", "64KiB")
PROBE_ARGS = ("--interval", "0.2s", "--block", "64KiB", "--direct", "--seed", "39", "-q")


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


def probe_samples(path: Path) -> bool:
    """Whether the probe's SQLite store holds a sample yet (the store's read-only door: the probe is writing)."""
    # lazy: sqlalchemy-free SQLite door, loaded only when a probe runs
    from ioweather.store import probe_light

    try:
        con = probe_light.connect(path)
        try:
            return con.execute("SELECT 1 FROM probe_samples LIMIT 1").fetchone() is not None
        finally:
            con.close()
    except (probe_light.Unsupported, sqlite3.Error):  # not created yet, or locked by the writer for a moment
        return False


def wait_recording(home: Path, recorders: list, timeout_s: float = 180.0) -> None:
    """Until `collect` has stored its first readings and the probe (when one of `recorders`, (process, name)
    pairs) its first samples. A fixed wait is not enough: on a loaded machine their imports took longer than
    it, and the first job ran before collect's first tick, with no telemetry in its window."""
    settings = Settings.resolve(home)
    probing = any(what == "probe run" for _, what in recorders)
    deadline = time.monotonic() + timeout_s
    while True:
        for p, what in recorders:
            if p.poll() is not None:
                raise UserError(f"{what} stopped at once: {(p.communicate()[1] or '').strip()[-300:]}")
        if collecting(home) and (not probing or settings.db_url is not None or probe_samples(settings.sqlite_path)):
            return
        if time.monotonic() > deadline:
            raise UserError(f"{' and '.join(w for _, w in recorders)} stored nothing within {timeout_s:g} s of "
                            "their start")
        time.sleep(0.2)


def start_recording(home: Path, recorders: list, probe_dir: Path, quiet_s: float, init: tuple = PROBE_INIT,
                    probe: tuple = PROBE_ARGS) -> tuple[float, float]:
    """`probe init` of `probe_dir`, then collect and `probe run` into `home`, each appended to `recorders` as it
    starts (the caller stops them: `stop_all`), ahead of the jobs, waited for until both have stored their
    first readings, then `quiet_s` with nothing else started: its [since, until) in Unix seconds, the probes'
    baseline."""
    p = ioweather(home, "probe", "init", str(probe_dir), *init)
    err = finish(p, "probe init", INGEST_TIMEOUT_S)
    if p.returncode:
        raise UserError(f"probe init failed: {err.strip()[-300:]}")
    recorders.append((ioweather(home, "collect", "--sources", "diskstats", "--interval", INTERVAL, "--flush", "2s",
                                "-q"), "collect"))
    recorders.append((ioweather(home, "probe", "run", str(probe_dir), *probe), "probe run"))
    for p, _ in recorders:
        ahead(p)
    wait_recording(home, recorders)
    since = time.time()
    time.sleep(quiet_s)
    return since, time.time()


def written_by(p: subprocess.Popen) -> int | None:
    """Bytes process `p` has had written to storage so far (/proc/PID/io's write_bytes), None when unreadable."""
    try:
        for line in Path(f"/proc/{p.pid}/io").read_text().splitlines():
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def stop_all(recorders: list) -> None:
    """Stop each of `recorders` ((process, name), newest first), each even when another fails (a recorder left
    running fills its store for ever); the first failure is raised."""
    failures = []
    for p, what in reversed(recorders):
        try:
            stop(p, what, ok=(0, 128, 130, -signal.SIGINT))
        except UserError as e:
            failures.append(e)
    if failures:
        raise failures[0]


def iso_utc(t: float) -> str:
    """Unix seconds `t` as ISO 8601 UTC to the microsecond (INDEX.json's baseline, `why --baseline-from`)."""
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
                 progress_cb=lambda done, total, name: None, quiet_s: float = QUIET_S) -> LabRun:
    """`run_cases`, with collect recording the directory's disk into the lab store from before the first case
    to after the last, and the logs that ran ingested there; INDEX.json names the store (`store`) or says why
    there is none (`telemetry`). The probes run beside collect, alone for `quiet_s` before the first case (their
    baseline: INDEX.json's `baseline_from/until`)."""
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
    probe_dir = directory / PROBE_DIR
    shutil.rmtree(probe_dir, ignore_errors=True)
    probe_dir.mkdir()
    recorders = []
    try:
        base_from, base_until = start_recording(home, recorders, probe_dir, quiet_s)
        run = run_cases(cases, tools, directory, logs_dir, progress_cb)
        # a job's window reads the disk until TAIL_S after its end (`why`, which job diff's system share is): the
        # last case's tail is recorded, and one tick more
        time.sleep(TAIL_S + 1.5)
        probe_bytes = written_by(recorders[1][0])
    finally:
        try:
            stop_all(recorders)
        finally:
            shutil.rmtree(probe_dir, ignore_errors=True)
    ingest(home, [log for c in run.cases if c.status == "ok" for log in c.logs])
    return _noted(run, logs_dir, str(home), None, (iso_utc(base_from), iso_utc(base_until), probe_bytes))


def _noted(run: LabRun, logs_dir: Path, store: str | None, reason: str | None,
           probe: tuple[str, str, int | None] | None = None) -> LabRun:
    """`run` with its store, why it recorded no telemetry (None when it did), and the probes' quiet window and
    own bytes written (`probe`; kept from an earlier run when this one had none), and the index rewritten with
    them (its other cases kept)."""
    index = read_index(logs_dir)
    keep = (index.baseline_from, index.baseline_until, index.probe_bytes_written) if store else (None, None, None)
    base_from, base_until, written = probe or keep
    fields = dict(store=store, telemetry=reason, baseline_from=base_from, baseline_until=base_until,
                  probe_bytes_written=written)
    write_index(replace(index, **fields))
    return replace(run, **fields)
