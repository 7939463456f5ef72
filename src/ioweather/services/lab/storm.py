"""`ioweather lab storm`: `why` scored on planted truth (issue 39 item 5; docs/lab.md "The storm pair").

One clean job (IOR, 2 ranks, 4 MiB O_DIRECT writes, file per process) runs alone, then again during a
`fio` storm on the same directory, while `probe run` (O_DIRECT) and `collect --sources diskstats` record
into one store. The storm is itself a job Darshan sees (fio under LD_PRELOAD, non-MPI), so `why` can
name it. All three logs are ingested, and `why` answers for each twin with the quiet period recorded
before them as its baseline (`--baseline-from/--baseline-until`). The truth is planted: the storm twin's
extra I/O time over the quiet twin's is the system's doing, the quiet twin's system share is ~0, and
`job diff QUIET STORM` must say "same code; the system".
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ioweather.config import Settings
from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.lab.record import ahead as _ahead, device_written as _device_written, ingest as _ingest, \
    iso_utc as _iso, start_recording as _start_recording, stop as _stop, stop_all as _stop_all
from ioweather.services.lab.run import _env
from ioweather.services.lab.toolchain import Toolchain
from ioweather.signals import die_with_parent
from ioweather.stats.coverage import TAIL_S
from ioweather.units import parse_size

#: The issue's "Done when": the storm twin's extra I/O time on the system at least this share ...
MIN_SYSTEM_SHARE_OF_EXTRA = 0.5
#: ... and the quiet twin's system share of its own I/O time at most this.
MAX_QUIET_SYSTEM_SHARE = 0.10
#: Job ids the twins' and the storm's logs carry (Darshan reads the id from the variable DARSHAN_JOBID names).
QUIET_JOB, STORM_RUN_JOB, STORM_JOB = 71001, 71002, 71003


@dataclass
class Twin:
    """One twin's `why` answer, the parts the score needs."""

    role: str
    jobid: int
    log: str
    io_time_s: float
    system_s: float | None
    system_model: str
    culprits: list[str]
    verdict: str
    #: bytes the directory's block device wrote while the twin ran, read from /proc/diskstats just before and
    #: after it (not through ioweather): None where the directory has no block device of its own (overlay, NFS)
    device_bytes_written: int | None = None


@dataclass
class StormPair(Answer):
    """The pair's measured numbers and whether they meet the issue's targets."""

    dir: str
    home: str
    baseline_from: str
    baseline_until: str
    storm_job: int
    quiet: Twin
    storm: Twin
    #: the storm twin's I/O time minus the quiet twin's, seconds
    extra_io_s: float
    #: storm.system_s ÷ extra_io_s (None when the storm cost nothing measurable)
    system_share_of_extra: float | None
    #: quiet.system_s ÷ quiet.io_time_s
    quiet_system_share: float | None
    culprit_named: bool
    targets_met: bool
    notes: list[str] = field(default_factory=list)
    #: `job diff QUIET STORM`'s verdict: the same code, slower, must be "same code; the system" (issue 39)
    diff_verdict: str | None = None
    diff_says_system: bool = False
    #: the share of the device's writes during the quiet twin that were not the twin's own (1 − its bytes ÷
    #: device_bytes_written): ~0 on an idle machine; other processes on a shared one (a test suite's other
    #: worker) make the "quiet" twin less quiet, and its true system share is then up to this
    quiet_others_share: float | None = None
    #: IOR's bytes a rank each twin wrote (`--block`; "auto" sizes them to the disk: `sized_block`)
    block: str | None = None


def _ior(tools: Toolchain, workdir: Path, log: Path, jobid: int, block: str) -> list[str]:
    env = {**_env(tools, log, mpi=True), "DARSHAN_JOBID": "IOWEATHER_LAB_JOBID", "IOWEATHER_LAB_JOBID": str(jobid)}
    return [tools.mpiexec, "-n", "2", "env", *(f"{k}={v}" for k, v in env.items()), tools.ior,
            "-a", "POSIX", "--posix.odirect", "-F", "-w", "-t", "4m", "-b", block, "-e",
            "-o", str(workdir / "ior.dat")]


def _run(cmd: list[str], what: str, cwd: Path) -> None:
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300,
                       preexec_fn=partial(die_with_parent, os.getpid()))
    if p.returncode:
        raise UserError(f"{what} failed (exit {p.returncode}): {(p.stderr.strip().splitlines() or ['no message'])[0]}")


#: `block="auto"`: the quiet twin is sized to take about this long on the disk under test. A storm that halves
#: the disk's rate must cost the storm twin more than job diff's material second (`job_diff.material_s`): a fixed
#: 1 GiB a rank took 0.59 s here at 3.6 GB/s, and its storm twin's +0.70 s read "no material change".
AUTO_QUIET_TWIN_S = 2.5
AUTO_STEP = 256 << 20


def sized_block(fio: str, directory: Path, target_s: float = AUTO_QUIET_TWIN_S) -> str:
    """IOR's bytes a rank for a quiet twin of about `target_s` on `directory`'s disk: fio writes 2 × 256 MiB in 4 MiB
    O_DIRECT requests there (the twins' pattern) and its rate scales them; at least 1 GiB a rank, at most 8 GiB and a
    sixth of the free space (the twins' files and the storm's)."""
    probe = directory / "size"
    probe.mkdir(exist_ok=True)
    p = subprocess.run([fio, "--name=size", f"--directory={probe}", "--rw=write", "--bs=4m", "--direct=1",
                        "--ioengine=psync", "--numjobs=2", "--size=256m", "--group_reporting",
                        "--output-format=json"], capture_output=True, text=True, timeout=300,
                       preexec_fn=partial(die_with_parent, os.getpid()))
    shutil.rmtree(probe, ignore_errors=True)
    try:
        rate = float(json.loads(p.stdout)["jobs"][0]["write"]["bw_bytes"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise UserError(f"fio could not time a write on {directory}: {(p.stderr or p.stdout).strip()[-300:]}") from None
    free = shutil.disk_usage(directory).free
    steps = math.ceil(rate * target_s / 2 / AUTO_STEP)
    steps = max(4, min(steps, 32, free // 6 // AUTO_STEP))
    return f"{steps * (AUTO_STEP >> 20)}m"


def run_pair(tools: Toolchain, directory: Path, home: Path, *, quiet_s: float = 12.0, block: str = "auto",
             storm_lead_s: float = 2.0, probe_interval: str = "0.5s") -> StormPair:
    """Record, run the twins and the storm, ingest, and score `why` (module docstring)."""
    fio = shutil.which("fio")
    if fio is None:
        raise UserError("the storm pair needs fio (Debian: apt-get install fio)")
    work = directory / f"ioweather-storm-{os.getpid()}"
    logs = home / "storm-logs"
    shutil.rmtree(work, ignore_errors=True)
    (work / "probe").mkdir(parents=True)
    (work / "quiet").mkdir()
    (work / "storm").mkdir()
    (work / "fio").mkdir()
    if block == "auto":
        block = sized_block(fio, work)
    logs.mkdir(parents=True, exist_ok=True)
    quiet_log, storm_log, fio_log = logs / "quiet.darshan", logs / "storm-run.darshan", logs / "fio-storm.darshan"
    for p in (quiet_log, storm_log, fio_log):
        p.unlink(missing_ok=True)
    recorders = []  # every process started here, each stopped whatever fails
    try:
        base_from, base_until = _start_recording(home, recorders, work / "probe", quiet_s,
                                                 init=("--file-size", "64MiB", "--pool", "20"),
                                                 probe=("--interval", probe_interval, "--direct", "--seed", "39", "-q"))
        before = _device_written(work / "quiet")
        _run(_ior(tools, work / "quiet", quiet_log, QUIET_JOB, block), "the quiet IOR run", work / "quiet")
        # a job's window reads telemetry until 5 s after its end (stats.coverage.TAIL_S): the disk's own count
        # over that same window, and the storm starts later
        time.sleep(TAIL_S)
        after = _device_written(work / "quiet")
        device = {"quiet": after - before if before is not None and after is not None else None}
        time.sleep(1.0)
        # fio in one process (--thread), so Darshan writes one log at its exit; SIGINT ends it cleanly
        fenv = {**os.environ, **_env(tools, fio_log, mpi=False), "DARSHAN_JOBID": "IOWEATHER_LAB_JOBID",
                "IOWEATHER_LAB_JOBID": str(STORM_JOB)}
        storm = subprocess.Popen([fio, "--name=storm", f"--directory={work / 'fio'}", "--rw=write", "--bs=4m",
                                  "--direct=1", "--ioengine=psync", "--numjobs=4", "--thread", "--size=1g",
                                  "--time_based", "--runtime=600", "--group_reporting"],
                                 env=fenv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=partial(die_with_parent, os.getpid()))  # a killed storm stops fio
        recorders.append((storm, "the fio storm"))
        # the planted storm must storm: at the twins' priority, two CPU-bound processes beside it left the storm
        # twin 1 s or less of extra I/O time in 7 of 12 pairs (job diff: "no material change")
        _ahead(storm)
        time.sleep(storm_lead_s)  # the storm is at full rate before the twin starts
        if storm.poll() is not None:
            raise UserError(f"the fio storm stopped at once: {(storm.communicate()[1] or '').strip()[-300:]}")
        before = _device_written(work / "storm")
        _run(_ior(tools, work / "storm", storm_log, STORM_RUN_JOB, block), "the storm twin's IOR run", work / "storm")
        after = _device_written(work / "storm")
        device["storm"] = after - before if before is not None and after is not None else None
        time.sleep(1.0)
        recorders.pop()
        _stop(storm, "the fio storm", ok=(0, 128, 130, -signal.SIGINT))  # fio exits 128 when interrupted
        time.sleep(1.5)  # the recorders see the storm's end
    finally:
        try:
            _stop_all(recorders)  # each one stopped even when another failed; the first failure is the one said
        finally:
            shutil.rmtree(work, ignore_errors=True)
    missing = [p.name for p in (quiet_log, storm_log, fio_log) if not p.is_file()]
    if missing:
        raise UserError(f"Darshan wrote no log {missing[0]} (is libdarshan.so working?)")
    _ingest(home, [str(quiet_log), str(storm_log), str(fio_log)])
    pair = score(Settings.resolve(home), directory, base_from, base_until)
    pair.quiet.device_bytes_written, pair.storm.device_bytes_written = device["quiet"], device["storm"]
    pair.block = block
    if device["quiet"]:
        pair.quiet_others_share = max(0.0, 1.0 - 2 * parse_size(block) / device["quiet"])  # 2 ranks of -b each
    return pair


def diff_twins(settings: Settings | None, quiet: str, storm: str) -> tuple[str | None, bool, list[str]]:
    """`job diff` of the twins (stored job ids or log paths): its verdict, whether it says "same code; the
    system", and its notes (why it gave no system share, or why it could not answer)."""
    # lazy: the reader forks before numpy (services/jobs/darshan_child.py)
    from ioweather.services.answers.job_diff import job_diff

    try:
        d = job_diff(settings, quiet, storm)
    except UserError as e:
        return None, False, [f"job diff: {e}"]
    return d.verdict, d.same_code and d.verdict.startswith("same code; the system"), [f"job diff: {n}" for n in d.notes]


def score(settings: Settings, directory: Path, base_from: float, base_until: float) -> StormPair:
    """`why` on each twin with the quiet period as its baseline, against the planted truth."""
    # lazy: numpy, pandas, sqlalchemy via services.answers.why, loaded only when this runs
    from ioweather.services.answers.why import why

    reference = (int(base_from * 1e9), int(base_until * 1e9))
    twins = {}
    for role, jobid in (("quiet", QUIET_JOB), ("storm", STORM_RUN_JOB)):
        w = why(settings, str(jobid), reference=reference)
        twins[role] = Twin(role, jobid, w.logs[0].path, w.io_time_s, w.system_s, w.system_model,
                           sorted({str(c.job) for e in w.events for c in e.culprits}), w.verdict)
    quiet, storm = twins["quiet"], twins["storm"]
    extra = storm.io_time_s - quiet.io_time_s
    share = (storm.system_s or 0.0) / extra if extra > 0 else None
    qshare = (quiet.system_s or 0.0) / quiet.io_time_s if quiet.io_time_s > 0 else None
    named = str(STORM_JOB) in storm.culprits
    notes = [] if extra > 0 else ["the storm twin was not slower than the quiet one: no extra time to place"]
    # by job id: both twins are stored, so job diff adds why's system share of the change when it has one
    diff_verdict, diff_system, diff_notes = diff_twins(settings, str(QUIET_JOB), str(STORM_RUN_JOB))
    met = (share is not None and share >= MIN_SYSTEM_SHARE_OF_EXTRA and qshare is not None
           and qshare <= MAX_QUIET_SYSTEM_SHARE and named and diff_system)
    return StormPair(str(directory), str(settings.home), _iso(base_from), _iso(base_until), STORM_JOB, quiet, storm,
                     extra, share, qshare, named, met, notes + diff_notes, diff_verdict, diff_system)
