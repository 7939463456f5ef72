"""Run lab cases on a directory under Darshan, and keep their logs with an INDEX.json (docs/lab.md).

Each case runs in its own working directory on the file system under test (removed afterwards: only
the logs stay), under LD_PRELOAD=libdarshan.so with DARSHAN_LOGFILE naming its log, so a site's Darshan
configured with any log path writes where the lab looks. INDEX.json is rewritten after every case, so a
reader (the advisor's tests, `lab score`) can start on the first logs while the others run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from ioweather import signals
from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.files import write_atomic
from ioweather.services.lab.catalogue import PAIRS, Case
from ioweather.services.lab.toolchain import Toolchain

CASE_TIMEOUT_S = 120
INDEX = "INDEX.json"

#: The scheduling priority of a case's processes: the nice value of each one's autogroup. Linux's autogroup
#: scheduler (kernel.sched_autogroup_enabled, on by default) shares the cores equally between sessions, and
#: MPICH's launcher starts each rank in a session of its own, so `nice` reaches no further than the rank itself:
#: on a node shared with other sessions, every one of them takes as much of the cores as each busy-polling rank,
#: and a collective call waits for the scheduler (docs/validation.md, "collective-rmw against CPU contention").
#: Set where the kernel allows it (root, or CAP_SYS_NICE); elsewhere the case runs as it is.
#: $IOWEATHER_LAB_AUTOGROUP_NICE sets another value, "off" none (the rounds measured without it).
AUTOGROUP_NICE = -10


#: Seconds of pause before each case, so that a bad case and its twin start from the same memory: on a virtual
#: machine that returns free memory to its host (Linux's free page reporting, 2 s after pages are freed), the
#: first touch of a page costs several µs, and a twin run at once reused the pages its bad case's files had just
#: freed: collective-rmw's 1 GiB of holes and data ran 1-8x slower a byte than its twin's 512 MiB (docs/validation.md).
#: $IOWEATHER_LAB_SETTLE_S sets another value (0: none).
SETTLE_S = 5.0


def _settle_s() -> float:
    raw = os.environ.get("IOWEATHER_LAB_SETTLE_S", str(SETTLE_S)).strip()
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 600:
        raise UserError(f"IOWEATHER_LAB_SETTLE_S={raw!r}: not a number of seconds (0-600)")
    return value


#: The wrapper's script ($1: the file each process appends its line to, then the command). It writes the autogroup's
#: nice only when its process leads its own session (its pid is its session id, field 6 of /proc/$$/stat): an
#: autogroup is its session's and outlives the process, so under a launcher that keeps the ranks in the caller's
#: session (Open MPI's mpirun, srun) the write would raise the priority of the user's whole login until logout.
#: Then it appends "PID LEADS NICE" (LEADS 1 or 0; NICE read back from /proc/self/autogroup: a refused write, not
#: root nor CAP_SYS_NICE, leaves the old one), and execs.
_WRAPPER = (
    'r=$1; shift; l=0; s=; read -r s < /proc/$$/stat; s=${s##*) }; '
    'lead() { [ "$4" = "$$" ]; }; lead $s && l=1; '   # field 6 is the 4th after the command's name
    '[ $l = 1 ] && { echo NICE > /proc/self/autogroup; } 2>/dev/null; '
    '{ read -r g < /proc/self/autogroup && echo "$$ $l ${g##* }" >> "$r"; } 2>/dev/null; '
    'exec "$@"')


def _nice() -> int | None:
    """The autogroup nice asked for ($IOWEATHER_LAB_AUTOGROUP_NICE, AUTOGROUP_NICE), None when turned off."""
    nice = os.environ.get("IOWEATHER_LAB_AUTOGROUP_NICE", str(AUTOGROUP_NICE)).strip()
    if nice == "off":
        return None
    try:
        value = int(nice)
    except ValueError:
        value = 99
    if not -20 <= value <= 19:
        raise UserError(f"IOWEATHER_LAB_AUTOGROUP_NICE={nice!r}: not a nice value (-20..19) or 'off'")
    return value


def _priority(report: Path | str) -> list[str]:
    """The wrapper each process of a case runs through, its command after it: its autogroup's nice set where its
    process leads its own session, the nice in effect appended to `report`, then exec (the shell is not
    instrumented: LD_PRELOAD is set by the `env` after it). Empty when turned off."""
    value = _nice()
    if value is None:
        return []
    return ["/bin/sh", "-c", _WRAPPER.replace("NICE", str(value)), "lab", str(report)]


@dataclass
class Autogroup:
    """What the wrapper found in a case's processes (`_priority`'s report)."""
    #: the autogroup nice in effect in each process that reported, in the order they started
    nice: list[int]
    #: each process led its own session and runs at the nice asked for
    applied: bool
    #: why not, None when applied
    note: str | None


def read_autogroup(report: Path, asked: int, procs: int) -> Autogroup:
    """The wrapper's report of a case of `procs` processes that asked for nice `asked`."""
    try:
        rows = [line.split() for line in report.read_text().splitlines()]
    except OSError:
        rows = []
    rows = [r for r in rows if len(r) == 3 and r[1] in ("0", "1") and r[2].lstrip("-").isdigit()]
    nice = [int(r[2]) for r in rows]
    outside = sum(r[1] == "0" for r in rows)
    refused = sum(r[1] == "1" and int(r[2]) != asked for r in rows)
    if len(rows) < procs:
        note = (f"{procs - len(rows)} of {procs} processes reported no autogroup (no autogroup scheduler, "
                "or the process did not start)")
    elif outside:
        note = (f"{outside} of {procs} processes in a session they do not lead (the launcher's or the caller's): "
                "its autogroup left as it was")
    elif refused:
        note = f"the write was refused in {refused} of {procs} processes (not root nor CAP_SYS_NICE)"
    else:
        note = None
    return Autogroup(nice, note is None, note)


@dataclass
class CaseRun:
    name: str
    cause: str
    labels: list[str]
    tolerated: list[str]
    control: bool
    procs: int
    mpi: bool
    command: str
    logs: list[str]
    elapsed_s: float
    #: "ok", "failed" (with `reason`) or "skipped" (a tool the case needs is missing)
    status: str
    reason: str | None = None
    #: the case's `costless_local` labels (catalogue.Case)
    costless_local: list[str] = field(default_factory=list)
    #: the CPU seconds (user + system) of the case's processes, launcher included (getrusage of the waited-for
    #: children): MPICH's ranks busy-poll while they wait, so cpu_s / (procs x elapsed_s) well under 1 on an MPI
    #: case is time its ranks spent waiting for a core (or asleep in the kernel). None in older indexes
    cpu_s: float | None = None
    #: the autogroup nice in effect in each of the case's processes, read back by the priority's wrapper (`_priority`)
    #: after its write, whether each one led its own session and runs at the nice asked for, and why not.
    #: None: the priority off, the case skipped, or an older index
    autogroup_nice: list[int] | None = None
    autogroup_applied: bool | None = None
    autogroup_note: str | None = None


@dataclass
class LabRun(Answer):
    dir: str
    logs_dir: str
    toolchain: str
    started: str
    cases: list[CaseRun] = field(default_factory=list)
    #: the file system type of `dir` (/proc/mounts), None where unknown: on a node-local one the cases'
    #: `costless_local` labels are scored as patterns (services/lab/score.py)
    fs_type: str | None = None
    #: the lab store the run recorded the disk's counters and ingested its logs into (services/lab/record.py),
    #: and why this run recorded none (None when it did)
    store: str | None = None
    telemetry: str | None = None
    #: the quiet window (ISO 8601 UTC) the probe recorded before the first case, the probes' baseline for `why`
    #: (`--baseline-from/--baseline-until`), and the bytes the probe process wrote (/proc/PID/io) over the run
    baseline_from: str | None = None
    baseline_until: str | None = None
    probe_bytes_written: int | None = None

    def to_json(self) -> dict:
        return asdict(self)


def _command(case: Case, tools: Toolchain, workdir: Path) -> list[str]:
    head, *args = case.argv
    exe = {"ior": tools.ior, "mdtest": tools.mdtest}.get(head) or tools.programs[head]
    return [exe, *(a.replace("{dir}", str(workdir)) for a in args)]


def _env(tools: Toolchain, logfile: Path, *, mpi: bool) -> dict[str, str]:
    env = {"LD_PRELOAD": tools.darshan_lib, "DARSHAN_LOGFILE": str(logfile),
           # the lab's directories may be anywhere (a site's /var/scratch): nothing is excluded
           "DARSHAN_EXCLUDE_DIRS": "none",
           # mdtest's thousands of files need more than the default 2 MiB of record memory
           "DARSHAN_MODMEM": "32"}
    if not mpi:
        env["DARSHAN_ENABLE_NONMPI"] = "1"
    return env


def _children_cpu() -> float:
    """User and system CPU seconds of this process's waited-for children and their descendants."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_case(case: Case, tools: Toolchain, base: Path, logs_dir: Path) -> CaseRun:
    """Run one case in base/<name>, its log(s) into logs_dir/<name>/; the working directory is removed."""
    def result(status, logs=(), elapsed=0.0, reason=None, command="", cpu=None, group=None):
        return CaseRun(case.name, case.cause, list(case.labels), list(case.tolerated), case.control, case.procs,
                       case.mpi, command,
                       [str(p) for p in logs], round(elapsed, 3), status, reason, list(case.costless_local),
                       round(cpu, 3) if cpu is not None else None,
                       *((group.nice, group.applied, group.note) if group else ()))

    if case.needs and case.needs not in tools.programs:
        return result("skipped", reason=tools.missing.get(case.needs, f"{case.needs} is not built"))
    workdir, out = base / case.name, logs_dir / case.name
    shutil.rmtree(workdir, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    workdir.mkdir(parents=True)
    out.mkdir(parents=True)
    cmd = _command(case, tools, workdir)
    # the wrapper's report: a line per process, beside the case's working directory (not among its files nor logs)
    report = base / f".{case.name}.autogroup"
    report.unlink(missing_ok=True)
    priority, asked = _priority(report), _nice()
    started, cpu0 = time.monotonic(), _children_cpu()
    # each process is killed when this one dies, however it dies (PR_SET_PDEATHSIG; for a non-MPI process set
    # after Popen's setsid): a SIGKILL, or a SIGTERM to this process's group, which the non-MPI processes are
    # outside of, stops no `finally`. (Hydra's mpiexec, killed, kills its ranks.)
    dies = partial(signals.die_with_parent, os.getpid())
    procs: list[subprocess.Popen] = []
    try:
        if case.mpi:
            logs = [out / f"{case.name}.darshan"]
            env = _env(tools, logs[0], mpi=True)
            # `env` after mpiexec: the launcher itself is not instrumented, the ranks are
            full = [tools.mpiexec, "-n", str(case.procs), *priority, "env", *(f"{k}={v}" for k, v in env.items()),
                    *cmd]
            procs.append(subprocess.Popen(full, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          text=True, preexec_fn=dies))
        else:
            logs = [out / f"{case.name}.{k}.darshan" for k in range(case.procs)]
            # each process in a session of its own, as MPICH starts its ranks, so that its priority is its own
            full = [*priority, *cmd]
            for k, log in enumerate(logs):   # one at a time: an interrupt between two leaves none unkilled
                procs.append(subprocess.Popen([*full, "-k", str(k)], cwd=workdir,
                                              env={**os.environ, **_env(tools, log, mpi=False)},
                                              start_new_session=True, preexec_fn=dies,
                                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        errors = []
        for p in procs:
            try:
                _, err = p.communicate(timeout=CASE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
                errors.append(f"timed out after {CASE_TIMEOUT_S} s")
                continue
            if p.returncode:
                # the first line: the program's own reason (MPI's abort notice follows it)
                errors.append(f"exit {p.returncode}: {(err.strip().splitlines() or ['no message'])[0]}")
        elapsed, cpu = time.monotonic() - started, _children_cpu() - cpu0
        command = shlex.join(full)
        group = read_autogroup(report, asked, case.procs) if asked is not None else None
        if errors:
            return result("failed", logs, elapsed, errors[0], command, cpu, group)
        missing = [p.name for p in logs if not p.is_file()]
        if missing:
            return result("failed", logs, elapsed, f"Darshan wrote no log {missing[0]} (is libdarshan.so working?)",
                          command, cpu, group)
        return result("ok", logs, elapsed, command=command, cpu=cpu, group=group)
    finally:
        # interrupted (Ctrl-C, or SIGTERM/SIGHUP: run_cases): the non-MPI processes, in sessions of their own, get
        # no signal from the terminal
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        report.unlink(missing_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)


def fs_type(path: Path, mounts: Path = Path("/proc/mounts")) -> str | None:
    """The type of the file system holding `path`: the longest mount point above it in `mounts`."""
    try:
        rows = [line.split() for line in mounts.read_text().splitlines()]
    except OSError:
        return None
    path = path.resolve()
    best = None
    for row in rows:
        if len(row) < 3:
            continue
        # /proc/mounts escapes a space in a mount point as \040
        point = Path(row[1].replace("\\040", " "))
        if (path == point or point in path.parents) and (best is None or len(point.parts) > len(best[0].parts)):
            best = (point, row[2])
    return best[1] if best else None


def write_index(run: LabRun) -> None:
    write_atomic(Path(run.logs_dir) / INDEX, json.dumps(run.to_json(), indent=1) + "\n")


def pair_order(cases: list[Case], pairs=PAIRS) -> list[Case]:
    """`cases` with each fixed twin (`pairs`) right after its bad case when both are to run, the rest in their
    order: on a shared machine the load drifts within minutes, and a twin run after the whole catalogue ran at
    another load than its bad case (the stored reread pair: the same writes took 1.95 s in the bad run and 0.27 s
    in its twin 85 minutes later, half of the change), which no finding of the code can explain."""
    names = {c.name for c in cases}
    twins: dict[str, list[str]] = {}
    for p in pairs:
        if p.bad in names and p.fixed in names:
            twins.setdefault(p.bad, []).append(p.fixed)
    later = {f for fs in twins.values() for f in fs}
    by_name = {c.name: c for c in cases}
    out: list[Case] = []
    seen: set[str] = set()

    def put(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        out.append(by_name[name])
        for f in twins.get(name, ()):
            put(f)

    for c in cases:
        if c.name not in later:
            put(c.name)
    for c in cases:  # a twin whose bad case is itself a twin placed nowhere (a cycle): in its order
        put(c.name)
    return out


def run_cases(cases: list[Case], tools: Toolchain, directory: Path, logs_dir: Path,
              progress_cb=lambda done, total, name: None) -> LabRun:
    """Run `cases` in a fresh directory under `directory`, each pair's twins right after it (`pair_order`);
    INDEX.json in `logs_dir` after each one."""
    cases, settle = pair_order(cases), _settle_s()
    _nice()  # a bad $IOWEATHER_LAB_AUTOGROUP_NICE is said before any case runs
    if not directory.is_dir():
        raise UserError(f"--dir {directory}: not a directory")
    # absolute: each case runs in its own directory, where a relative --dir or --logs would mean another place
    directory, logs_dir = directory.resolve(), logs_dir.resolve()
    logs_dir.mkdir(parents=True, exist_ok=True)
    base = directory / f"ioweather-lab-{os.getpid()}"
    base.mkdir()
    run = LabRun(str(directory), str(logs_dir), tools.origin,
                 dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
                 fs_type=fs_type(directory))
    # an earlier entry stays until its case is run again: `--case X` refreshes X without losing the others,
    # and a reader of the index during a full run keeps the previous logs of the cases not yet re-run
    previous = read_index(logs_dir, missing_ok=True)
    entries = {c.name: c for c in (previous.cases if previous else [])}
    # SIGTERM (a scheduler's cancel, `kill`) and SIGHUP (the terminal gone) unwind like Ctrl-C, so that each
    # case's processes are stopped and the run's directory removed (signals.interrupting)
    with signals.interrupting((signal.SIGTERM, signal.SIGHUP)):
        try:
            for i, case in enumerate(cases):
                progress_cb(i, len(cases), case.name)
                time.sleep(settle)
                run.cases.append(run_case(case, tools, base, logs_dir))
                entries[case.name] = run.cases[-1]
                write_index(LabRun(run.dir, run.logs_dir, run.toolchain, run.started, list(entries.values()), run.fs_type))
            progress_cb(len(cases), len(cases), "")
        finally:
            shutil.rmtree(base, ignore_errors=True)
    return run


def read_index(logs_dir: Path, *, missing_ok: bool = False) -> LabRun | None:
    """The INDEX.json of a lab's logs directory as a LabRun; UserError (or None, `missing_ok`) without one."""
    path = logs_dir / INDEX
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        if missing_ok:
            return None
        raise UserError(f"{path}: no such file (run `ioweather lab run --logs {logs_dir}` first)") from None
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot read the lab's index ({e})") from None
    cases = [CaseRun(**c) for c in doc.pop("cases", [])]
    return LabRun(**doc, cases=cases)
