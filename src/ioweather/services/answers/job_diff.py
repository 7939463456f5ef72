"""`ioweather job diff BEFORE AFTER`: what changed between two runs of a job, costed (docs/darshan.md, "Two runs").

Each side is read as `ioweather job` reads it (in a child process, `jobs.darshan_child.job_outputs`). The change of
I/O time (after − before) is set against the findings' costs: a finding's `combined_s` (its saving once the
findings before it are taken, never counting one second twice) that appeared, vanished or changed is a
cause, with `change_s` = after − before. `explained_s` is the part of the I/O-time change those causes
account for (the ones pointing the same way, at most the change itself). Counters that moved by more than
`MOVED` are listed too (they show what the code did differently; their seconds are the findings').
When both jobs are in the store, `why`'s budget of each gives the system's share of the change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError
from ioweather.services.jobs.answer import Finding, JobReport
from ioweather.units import format_bytes, format_seconds

#: A counter moved when it changed by more than this share of the larger of its two values.
MOVED = 0.02
#: Below this share of the before run's I/O time (and below a second) the I/O time did not change.
STILL = 0.05
#: The counters compared (path in the `job` report, what they are, how to show them).
COUNTERS = (("totals.bytes_read", "bytes read", "bytes"), ("totals.bytes_written", "bytes written", "bytes"),
            ("totals.files", "files", "count"), ("job.nprocs", "processes", "count"))
#: Per interface (POSIX, STDIO, MPI-IO, ...): its requests and opens.
INTERFACE_COUNTERS = (("reads", "reads"), ("writes", "writes"), ("opens", "opens"))
#: The shared files' split of bytes over the ranks moved when its spread (standard deviation over the mean
#: rank's bytes, from Darshan's variance) changed by more than this. Absolute: a spread of 0 stays 0 for the
#: same code, and Darshan's floating-point reduction leaves ~1e-8 on an even split, which a share would count.
SPLIT_MOVED = 0.02


@dataclass
class DiffSide:
    """One run: what it is and what `ioweather job` said of it."""

    ident: str
    path: str
    io_time_s: float
    runtime_s: float
    nprocs: int
    exe: str | None
    verdict: str
    system_s: float | None = None
    system_model: str | None = None


@dataclass
class DiffCause:
    """A finding whose cost appeared, vanished or changed (`kind` finding, `change_s` after − before
    in seconds of I/O time), or a counter that moved (`kind` counter, `change_s` None: its seconds are
    the findings')."""

    kind: str
    code: str
    message: str
    change_s: float | None
    before: float | None
    after: float | None


@dataclass
class SystemShare:
    """`why`'s system seconds of each run and their change."""

    before_s: float
    after_s: float
    change_s: float
    model: str


@dataclass
class JobDiff(Answer):
    """The answer of `ioweather job diff` (`to_json()` is its --json)."""

    before: DiffSide
    after: DiffSide
    io_time_change_s: float
    causes: list[DiffCause]
    explained_s: float
    explained_share: float | None
    same_code: bool
    system: SystemShare | None
    verdict: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        # answer_dict leaves list items as they are: the causes are dataclasses too
        return {**answer_dict(self), "causes": [answer_dict(c) for c in self.causes]}


def _get(rep: JobReport, path: str):
    """The counter at `path` (a name of COUNTERS, or interfaces.MODULE.counter) of a report; None without it."""
    head, _, rest = path.partition(".")
    if head == "interfaces":
        mod, _, counter = rest.rpartition(".")
        it = rep.interfaces.get(mod)
        return None if it is None else getattr(it, counter)
    return getattr(getattr(rep, head), rest)


def _resolve(settings, ident: str) -> tuple[str, bool]:
    """(the log's path, is it in the store) for a log path or a stored job's id or hash prefix."""
    if os.path.isfile(ident):
        return ident, False
    if os.sep in ident or settings is None or not settings.store_exists():
        raise UserError(f"no Darshan log at {ident!r}" + ("" if os.sep in ident else
                                                          " and no store to look the job up in"))
    # lazy: sqlalchemy via store: kept off `ioweather job diff --help` and its usage errors
    from ioweather.store import jobs as jobs_store, open_store

    store = open_store(settings)
    try:
        found = jobs_store.find_jobs(store, ident) if "darshan" in store.versions() else []
    finally:
        store.dispose()
    if not found:
        raise UserError(f"no job {ident!r}: not a Darshan log, nor a stored job's id or log hash")
    if len(found) > 1:
        raise UserError(f"{ident} names {len(found)} stored logs ({', '.join(f['log_hash'][:12] for f in found[:4])}"
                        "...): give a log hash prefix")
    path = found[0]["path"]
    if not path or not os.path.isfile(path):
        raise UserError(f"job {ident}: its log {path} is no longer there to read")
    return path, True


def _side(ident: str, path: str, rep: JobReport) -> DiffSide:
    return DiffSide(ident=ident, path=path, io_time_s=float(rep.perf.io_time_s or 0.0),
                    runtime_s=float(rep.job.runtime_s or 0.0), nprocs=int(rep.job.nprocs or 1),
                    exe=rep.job.exe, verdict=rep.verdict)


def finding_causes(before: list[Finding], after: list[Finding]) -> list[DiffCause]:
    """The findings whose saving (`combined_s`) differs between the runs, largest change first."""
    def costs(fs):
        return {f.code: f for f in fs if (f.combined_s or 0) > 0}

    b, a = costs(before), costs(after)
    out = []
    for code in sorted(set(b) | set(a)):
        cb, ca = (b[code].combined_s if code in b else 0.0), (a[code].combined_s if code in a else 0.0)
        if abs(ca - cb) <= 0:
            continue
        f = a.get(code) or b[code]
        what = ("appeared" if code not in b else "vanished" if code not in a else "changed")
        out.append(DiffCause(kind="finding", code=code, change_s=ca - cb, before=cb, after=ca,
                             message=f"{code} {what} ({format_seconds(cb)} → {format_seconds(ca)}): "
                                     f"{f.action or f.message}"))
    out.sort(key=lambda c: -abs(c.change_s))
    return out


def _split(rep: JobReport, module: str):
    """(the module's shared-file split of the report or None, its bytes spread: 0 without shared files of the
    module, None when Darshan recorded no variance)."""
    sp = next((x for x in rep.perf.imbalance.shared if x.module == module), None)
    return sp, (0.0 if sp is None else sp.bytes_cv)


def split_causes(before: JobReport, after: JobReport) -> list[DiffCause]:
    """The shared files whose split of bytes over the ranks changed (`SPLIT_MOVED`): the fix that rebalanced a
    shared file keeps the job's totals (bytes, requests, opens), so only the split tells that the code changed.
    Bytes, not time: the system moves no byte from one rank to another."""
    out = []
    mods = list(dict.fromkeys(x.module for r in (before, after) for x in r.perf.imbalance.shared))
    for mod in mods:
        (sb, vb), (sa, va) = _split(before, mod), _split(after, mod)
        if vb is None or va is None or abs(va - vb) <= SPLIT_MOVED:
            continue

        def show(sp, v):
            return ("no shared file" if sp is None else
                    f"slowest rank {format_bytes(sp.slowest_bytes)}, fastest {format_bytes(sp.fastest_bytes)}, "
                    f"standard deviation {v:.2f}× the mean")
        out.append(DiffCause(kind="counter", code=f"perf.imbalance.shared.{mod}.bytes_cv", change_s=None,
                             before=float(vb), after=float(va),
                             message=f"{mod} shared files' bytes over the ranks: {show(sb, vb)} → {show(sa, va)}"))
    return out


def counter_causes(before: JobReport, after: JobReport) -> list[DiffCause]:
    """The counters of `COUNTERS` that moved by more than `MOVED`, and the shared files' split (`split_causes`)."""
    out = []
    mods = sorted(set(before.interfaces) | set(after.interfaces))
    rows = list(COUNTERS) + [(f"interfaces.{m}.{k}", f"{m} {what}", "count") for m in mods
                             for k, what in INTERFACE_COUNTERS]
    for path, what, unit in rows:
        vb, va = _get(before, path) or 0, _get(after, path) or 0
        top = max(abs(vb), abs(va))
        if top and abs(va - vb) / top > MOVED:
            show = format_bytes if unit == "bytes" else (lambda v: f"{v:,.0f}")
            out.append(DiffCause(kind="counter", code=path, change_s=None, before=float(vb), after=float(va),
                                 message=f"{what}: {show(vb)} → {show(va)}"))
    return out + split_causes(before, after)


def material_s(before_io_time_s: float) -> float:
    """The smallest change of I/O time that is material: a second, and `STILL` of the before run's I/O time."""
    return max(1.0, STILL * before_io_time_s)


def explained(change_s: float, causes: list[DiffCause]) -> float:
    """The part of `change_s` the finding causes account for: those pointing its way, at most all of it."""
    same = sum(c.change_s for c in causes if c.kind == "finding" and c.change_s * change_s > 0)
    return max(-abs(change_s), min(abs(change_s), same)) if change_s < 0 else min(change_s, same)


def diff_reports(before: DiffSide, rep_b: JobReport, after: DiffSide, rep_a: JobReport,
                 system: SystemShare | None = None, notes: list[str] | None = None) -> JobDiff:
    """The diff of two `job` reports (pure: the tests give it reports of real logs)."""
    change = after.io_time_s - before.io_time_s
    causes = finding_causes(rep_b.findings, rep_a.findings)
    moved = counter_causes(rep_b, rep_a)
    # the same program, processes and requests: what changed is not the code
    same = not moved and (before.exe or "").split(" ")[0] == (after.exe or "").split(" ")[0]
    exp = explained(change, causes)
    share = exp / change + 0.0 if change else None  # + 0.0: no "-0 %" when nothing is explained
    still = abs(change) < material_s(before.io_time_s)
    named = "; ".join(f"{c.code} {'+' if c.change_s > 0 else '−'}{format_seconds(abs(c.change_s))}"
                      for c in causes[:3])
    if still:
        verdict = f"no material change in I/O time ({'+' if change >= 0 else '−'}{format_seconds(abs(change))})"
    elif same and (share or 0) < 0.5:
        verdict = (f"same code; the system: {'+' if change > 0 else '−'}{format_seconds(abs(change))} of I/O time "
                   f"({before.io_time_s and 100 * change / before.io_time_s:+.0f} %) with the same requests and no "
                   "finding that accounts for it")
        if system is not None:
            verdict += f"; why puts {format_seconds(system.change_s)} of the change on the system ({system.model})"
    else:
        verdict = (f"the code changed: {'+' if change > 0 else '−'}{format_seconds(abs(change))} of I/O time, "
                   f"{100 * (share or 0):.0f} % explained by the findings" + (f" ({named})" if named else ""))
        if system is not None and abs(system.change_s) >= 0.1 * abs(change):
            verdict += f"; why puts {format_seconds(system.change_s)} of it on the system"
    return JobDiff(before=before, after=after, io_time_change_s=change, causes=causes + moved, explained_s=exp,
                   explained_share=share, same_code=same, system=system, verdict=verdict, notes=notes or [])


def _system(settings, paths: tuple[str, str], fs: str | None) -> tuple[SystemShare | None, list[str]]:
    """Each run's system seconds from `why` (both jobs stored, with telemetry or probes), else None."""
    # lazy: numpy, sqlalchemy via services.answers.why: kept off `ioweather job diff --help` and its usage errors
    from ioweather.services.answers.why import why

    got = []
    for p in paths:
        w = why(settings, p, fs=fs)
        if w.system_model in ("unknown", "") or w.system_model is None:
            why_not = w.logs[0].evidence.system if w.logs else w.system_model
            return None, [f"no system share: {p}: {why_not}"]
        got.append(w)
    return SystemShare(before_s=got[0].system_s, after_s=got[1].system_s, change_s=got[1].system_s - got[0].system_s,
                       model=got[1].system_model), []


def job_diff(settings, before: str, after: str, *, cores_per_node: int | None = None,
             thresholds_file: str | None = None, fs: str | None = None) -> JobDiff:
    """The costed difference between the runs BEFORE and AFTER (log paths or stored job ids); `fs`: the
    telemetry dataset of their file system, as `why --fs` takes it (else `why` finds it)."""
    # lazy: the reader forks before numpy (services/jobs/darshan_child.py)
    from ioweather.services.jobs.darshan_child import job_outputs

    (pb, stored_b), (pa, stored_a) = _resolve(settings, before), _resolve(settings, after)
    rb, _ = job_outputs(pb, cores_per_node=cores_per_node, thresholds_file=thresholds_file)
    ra, _ = job_outputs(pa, cores_per_node=cores_per_node, thresholds_file=thresholds_file)
    sb, sa = _side(before, pb, rb), _side(after, pa, ra)
    system, notes = None, []
    if stored_b and stored_a:
        try:
            system, notes = _system(settings, (pb, pa), fs)
        except UserError as e:
            notes = [f"no system share: {e}"]
        if system is not None:
            sb.system_s, sa.system_s = system.before_s, system.after_s
            sb.system_model = sa.system_model = system.model
    else:
        notes.append("no system share: both runs must be stored jobs ('ioweather jobs ingest') with telemetry "
                     "or probes for their file system")
    return diff_reports(sb, rb, sa, ra, system, notes)
