"""`ioweather job diff BEFORE AFTER`: what changed between two runs of a job, costed (docs/darshan.md, "Two runs").

Each side is read as `ioweather job` reads it (in a child process, `jobs.darshan_child.job_outputs`). The change of
I/O time (after − before) is set against the findings' costs: a finding's `combined_s` (its saving once the
findings before it are taken, never counting one second twice) that appeared, vanished or changed is a
cause, with `change_s` = after − before. `explained_s` is the part of the I/O-time change those causes
account for (the ones pointing the same way, at most the change itself); `claimed_s` is their sum before that cap
(more than the change: an over-claim the capped share cannot show). Counters that moved by more than
`MOVED` are listed too (they show what the code did differently; their seconds are the findings').
When both jobs are in the store, `why`'s budget of each gives the system's share of the change; and where one
run's rank 0 did all the I/O on one device (R01's one-device bound) and the counters of that one device
(`fs_names.disk_target` of the mount `why` finds for it) are stored, the crowd on it over rank 0's I/O span is
priced (`crowd_cause`: per-stream fair sharing, docs/validation.md "one-rank-io on a crowded disk, measured").
The system's pace (`pace_causes`) is the change of the seconds a byte of the large POSIX requests both runs make:
the bytes they have in common at the other run's rate (docs/validation.md, "The pace of the node").
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
#: Requests of at least this mean size move their bytes at a rate that does not hang on their size (the
#: advisor's small-request bar, `Thresholds.small_bytes`): between two runs of one job, such requests' change
#: of seconds a byte is the pace of the node or the device, not of the code.
PACE_MIN_REQUEST = 1024 * 1024
#: A direction's seconds a byte moved when the runs' rates differ by more than this share (run-to-run jitter
#: of one minute's pairs on this machine: docs/validation.md).
PACE_MOVED = 0.10


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
class CrowdCause(DiffCause):
    """The crowd on one device (`kind` crowd): the run whose rank 0 did all the I/O (R01 with its one-device
    bound) shared the device with other writers, and its `streams` ranks spread would have taken a larger share
    of it. `fs`: the telemetry dataset, whose one target (device) the mount is on (`fs_names.disk_target`, named in
    the message). `before`/`after`: the device's rate (bytes/s, reads and writes) over each run's rank-0 I/O span;
    `device_bps`, `rank0_bps`: the device's and rank 0's rates in that run's; `others`: m, the other writers' load in
    streams; `crowd_s`: the model's saving, of which `change_s` is the part beyond R01's bound (`one_device_s`)."""

    fs: str
    run: str
    device_bps: float
    rank0_bps: float
    streams: int
    others: float
    crowd_s: float
    one_device_s: float


@dataclass
class PaceCause(DiffCause):
    """The system's pace (`kind` pace) in one direction of the POSIX requests (`direction` read or write): both
    runs made them large (`PACE_MIN_REQUEST`), in order, with no sync among the writes and the same ranks moving
    the bytes, at another rate. `before`/`after`: each run's bytes a second (a rank's, summed over ranks);
    `common_bytes`: the bytes both runs moved; `change_s` (after − before): those bytes at the after run's rate
    against the before run's, in seconds of I/O time. The findings price what the fix removed at the before run's rate (the
    bytes again, the holes); this is the rest of the direction's change."""

    direction: str
    common_bytes: float


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
    #: the findings', the crowd's (`CrowdCause`), the pace's (`PaceCause`) and the counters' causes
    causes: list[DiffCause | CrowdCause | PaceCause]
    explained_s: float
    explained_share: float | None
    #: the finding, crowd and pace causes pointing the change's way, summed before `explained_s`'s cap at the change
    claimed_s: float
    same_code: bool
    system: SystemShare | None
    verdict: str
    notes: list[str] = field(default_factory=list)
    #: the part of `explained_s` the system's pace accounts for (`PaceCause`), not the code's findings
    pace_s: float = 0.0

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


def _resolve(settings, ident: str) -> tuple[str, str | None]:
    """(the log's path, its stored log hash: None for a log path) for a log path or a stored job's id or hash
    prefix."""
    if os.path.isfile(ident):
        return ident, None
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
    return path, found[0]["log_hash"]


def _side(ident: str, path: str, rep: JobReport) -> DiffSide:
    return DiffSide(ident=ident, path=path, io_time_s=float(rep.perf.io_time_s or 0.0),
                    runtime_s=float(rep.job.runtime_s or 0.0), nprocs=int(rep.job.nprocs or 1),
                    exe=rep.job.exe, verdict=rep.verdict)


def _gone_first(fs: list[Finding], other: list[Finding], io_time_s: float) -> dict[str, float]:
    """Each costed finding's `combined_s` in one run, with the findings the other run does not have (no cost
    there) taken first (`stats.costs.combine`, the advisor's order kept within each group). Savings compound, so what a finding
    saves depends on which is taken first; between two runs of a job the fix is the order: the causes it
    removed went first, and those both runs share compound on what is left, as they do in the other run.
    (By cost, a cause the fix kept could take the removed one's seconds: 64 KiB writes of rank 0 alone, P06
    ahead of R01, and the fix that spread them credited to P06's saving shrinking with the I/O time.)"""
    # kept: costed in the other run too, whether or not a finding above it took its seconds there (P16 under P06)
    keep = {f.code for f in other if f.combined_s is not None and f.cost_s > 0}
    costed = [f for f in fs if f.combined_s is not None]
    ordered = [f for f in costed if f.code not in keep] + [f for f in costed if f.code in keep]
    gone = {f.code for f in costed if f.cost_s > 0} - keep
    # a removed and a kept finding that count the same seconds (`overlaps`: random order and small requests
    # of the same reads) are one cost seen twice, not two causes in sequence: the advisor's order stays
    shared = any(set(f.overlaps) & (keep if f.code in gone else gone) for f in costed)
    if shared or [f.code for f in ordered] == [f.code for f in costed]:
        return {f.code: float(f.combined_s) for f in costed}
    # lazy: numpy via stats.costs: kept off `ioweather job --help` and the parent of `job LOG --html`
    from ioweather.stats.costs import combine

    rows = [{"code": f.code, "cost_s": f.cost_s, "cost_share": f.cost_share, "cost_model": f.cost_model,
             "overlaps": list(f.overlaps)} for f in ordered]
    combine(rows, io_time_s)
    return {r["code"]: float(r["combined_s"]) for r in rows}


def finding_causes(before: list[Finding], after: list[Finding], before_io_s: float,
                   after_io_s: float) -> list[DiffCause]:
    """The findings whose saving (`combined_s`, each run's with the findings the other run lacks first:
    `_gone_first`) differs between the runs, largest change first."""
    def costs_of(fs, other, io_s):
        saved = _gone_first(fs, other, io_s) if io_s > 0 else {f.code: f.combined_s or 0.0 for f in fs}
        return {f.code: (f, saved.get(f.code, 0.0)) for f in fs if saved.get(f.code, 0.0) > 0}

    b, a = costs_of(before, after, before_io_s), costs_of(after, before, after_io_s)
    out = []
    for code in sorted(set(b) | set(a)):
        cb, ca = (b[code][1] if code in b else 0.0), (a[code][1] if code in a else 0.0)
        if abs(ca - cb) <= 0:
            continue
        f = (a.get(code) or b[code])[0]
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


def claimed(change_s: float, causes: list[DiffCause]) -> float:
    """The seconds the finding causes (and the crowd, and the pace) pointing `change_s`'s way claim, summed
    (signed)."""
    return sum(c.change_s for c in causes if c.kind in ("finding", "crowd", "pace") and c.change_s * change_s > 0)


def explained(change_s: float, causes: list[DiffCause]) -> float:
    """The part of `change_s` the finding causes (and the crowd, and the pace) account for: their `claimed`
    seconds, at most all of it."""
    same = claimed(change_s, causes)
    return max(-abs(change_s), min(abs(change_s), same)) if change_s < 0 else min(change_s, same)


def _one_device(rep: JobReport) -> Finding | None:
    """R01 with its one-device bound (rank 0 alone on one node's local disk), when the report has it."""
    return next((f for f in rep.findings if f.code == "R01" and f.evidence.get("one_device")), None)


def crowd_cause(rep_b: JobReport, rep_a: JobReport, rates: tuple[float | None, float | None],
                fs: str, target: str | None = None) -> CrowdCause | None:
    """The crowd on the device of the run whose rank 0 did all the I/O (R01's one-device bound) when the other
    run spread it (no R01), priced by per-stream fair sharing (`stats.costs.crowded_device_saving`) from the
    device's rate over that run's rank-0 I/O span (`rates`: bytes/s of each run's, from the device's counters).
    `target`: the device's telemetry target, named in the message (else `fs`).
    The part beyond R01's own claim: on a device nobody else wrote to (m = 0) that is ~0. None when neither
    run is such a pair's, or the device's rate over the one-rank run's span is unknown."""
    # lazy: numpy via stats.costs: kept off `ioweather job --help` and the parent of `job LOG --html`
    from ioweather.stats.costs import crowded_device_saving

    for run, rep, other, device, sign in (("before", rep_b, rep_a, rates[0], -1.0),
                                          ("after", rep_a, rep_b, rates[1], 1.0)):
        r01 = _one_device(rep)
        if r01 is None or any(f.code == "R01" for f in other.findings) or not device:
            continue
        # k: the job's processes, each its own stream once the bytes are spread (on one node: not R01's nodes)
        moved, t0, k = (float(r01.evidence.get(x) or 0) for x in ("rank0_bytes", "rank0_time_s", "nprocs"))
        if moved <= 0 or t0 <= 0 or k < 2:
            return None
        r = moved / t0
        m, saving = crowded_device_saving(float(rep.perf.io_time_s or 0.0), moved, r, device, int(k))
        bound = float(r01.combined_s or 0.0)
        extra = max(0.0, saving - bound)
        where = target or fs
        seen = (f"its one stream had {format_bytes(r)}/s and the device moved {format_bytes(device)}/s over rank "
                "0's I/O span")
        if m > 0:
            what = (f"the {run} run's rank 0 wrote on a crowded device ({where}): {seen}, {1 / (1 + m):.0%} of it "
                    f"(m = {m:.2f} other streams' worth); {int(k)} streams would take {k / (k + m):.0%}: "
                    f"{format_seconds(saving)} saved, {format_seconds(extra)} beyond R01's one-device bound "
                    "(per-stream fair sharing)")
        else:
            what = (f"the {run} run's rank 0 had its device ({where}) to itself: {seen} (m = 0: no other writer to "
                    "take a share from); nothing beyond R01's one-device bound")
        return CrowdCause(
            kind="crowd", code="crowd", change_s=sign * extra if extra > 0 else 0.0, before=rates[0],
            after=rates[1], message=what,
            fs=fs, run=run, device_bps=float(device), rank0_bps=r, streams=int(k), others=m, crowd_s=saving,
            one_device_s=bound)
    return None


def _wall(rep: JobReport, cumulative_s: float) -> float:
    """Rank-summed storage-layer seconds of `rep` as seconds of its I/O time (`costs.Clock.wall`: scaled by the
    storage layer's slowest path)."""
    t = rep.totals
    total = t.read_time_s + t.write_time_s + t.meta_time_s
    base = rep.perf.fs_io_time_s if rep.perf.fs_io_time_s is not None else rep.perf.io_time_s
    return cumulative_s * float(base or 0.0) / total if total > 0 else 0.0


def pace_causes(before: JobReport, after: JobReport) -> list[PaceCause]:
    """The system's pace: per direction, the bytes both runs moved in large POSIX requests (`PACE_MIN_REQUEST`)
    at the after run's seconds a byte against the before run's, where their rates differ by more than
    `PACE_MOVED`. The findings of the fix (P09's bytes read again, M09's holes) are priced at the bad run's rate,
    so where the fixed run moved its bytes faster or slower a byte, that part of the change is this one. Not
    where the code set the rate: small requests (their calls' latency), syncs among the writes (Darshan adds them
    to the write time: Y01's), random order (P11, P13: seeks), or other ranks moving the bytes (processes, the
    ranks with I/O and their split of bytes, R01's one rank, the shared files' split)."""
    pb, pa = before.interfaces.get("POSIX"), after.interfaces.get("POSIX")
    ib, ia = before.perf.imbalance, after.perf.imbalance
    if (pb is None or pa is None or before.job.nprocs != after.job.nprocs or split_causes(before, after)
            or ib.ranks_with_io != ia.ranks_with_io or abs((ib.bytes or 0.0) - (ia.bytes or 0.0)) > SPLIT_MOVED
            or (_one_device(before) is None) != (_one_device(after) is None)):
        return []
    codes = {f.code for r in (before, after) for f in r.findings}
    out = []
    for direction, ops, moved, secs, own in (("read", "reads", "bytes_read", "read_time_s", {"P11"}),
                                             ("write", "writes", "bytes_written", "write_time_s", {"P13", "Y01"})):
        got = [(getattr(p, ops) or 0, float(getattr(p, moved) or 0), float(getattr(p, secs) or 0.0)) for p in (pb, pa)]
        if own & codes or any(n <= 0 or b < PACE_MIN_REQUEST * n or t <= 0 for n, b, t in got):
            continue
        (nb, bb, tb), (na, ba, ta) = got
        sb, sa = tb / bb, ta / ba
        if abs(sa / sb - 1) <= PACE_MOVED:
            continue
        # the bytes both moved are the smaller run's, on its clock
        common, rep = (ba, after) if ba <= bb else (bb, before)
        change = _wall(rep, common * (sa - sb))
        sizes = (f"{format_bytes(bb / nb)} → {format_bytes(ba / na)}" if abs(bb / nb - ba / na) > 0.01 * ba / na
                 else format_bytes(ba / na))
        out.append(PaceCause(
            kind="pace", code=f"pace.POSIX.{direction}", change_s=change, before=1 / sb, after=1 / sa,
            message=f"the same large POSIX {direction}s ({sizes} a request) ran {max(sa, sb) / min(sa, sb):.1f}× "
                    f"slower a byte in the {'after' if sa > sb else 'before'} run ({format_bytes(1 / sb)}/s → "
                    f"{format_bytes(1 / sa)}/s a rank): the {format_bytes(common)} both runs moved took "
                    f"{format_seconds(abs(change))} {'more' if change > 0 else 'less'} at the after run's pace; the "
                    "node's or the device's, not the code's",
            direction=direction, common_bytes=common))
    return out


def diff_reports(before: DiffSide, rep_b: JobReport, after: DiffSide, rep_a: JobReport,
                 system: SystemShare | None = None, notes: list[str] | None = None,
                 crowd: CrowdCause | None = None) -> JobDiff:
    """The diff of two `job` reports (pure: the tests give it reports of real logs); `crowd`: the crowd on the
    one-rank run's device (`crowd_cause`), when the store had its counters."""
    change = after.io_time_s - before.io_time_s
    causes = finding_causes(rep_b.findings, rep_a.findings, before.io_time_s, after.io_time_s)
    if crowd is not None:
        causes = sorted(causes + [crowd], key=lambda c: -abs(c.change_s))
    pace = pace_causes(rep_b, rep_a)
    moved = counter_causes(rep_b, rep_a)
    # the same program, processes and requests: what changed is not the code
    same = not moved and (before.exe or "").split(" ")[0] == (after.exe or "").split(" ")[0]
    exp = explained(change, causes + pace)
    code_s = explained(change, causes)
    share = exp / change + 0.0 if change else None  # + 0.0: no "-0 %" when nothing is explained
    code_share = code_s / change + 0.0 if change else None
    still = abs(change) < material_s(before.io_time_s)
    named = "; ".join(f"{c.code} {'+' if c.change_s > 0 else '−'}{format_seconds(abs(c.change_s))}"
                      for c in causes[:3])
    paced = [c for c in pace if c.change_s * change > 0]
    pace_text = "" if not paced or not change else (
        f"; {100 * (exp - code_s) / change:.0f} % by the system's pace (" + "; ".join(
            f"{c.direction}s {'+' if c.change_s > 0 else '−'}{format_seconds(abs(c.change_s))}: "
            f"{max(c.before, c.after) / min(c.before, c.after):.1f}× slower a byte in the "
            f"{'after' if c.after < c.before else 'before'} run" for c in paced) + ")")
    if still:
        verdict = f"no material change in I/O time ({'+' if change >= 0 else '−'}{format_seconds(abs(change))})"
    elif same and (code_share or 0) < 0.5:
        verdict = (f"same code; the system: {'+' if change > 0 else '−'}{format_seconds(abs(change))} of I/O time "
                   f"({before.io_time_s and 100 * change / before.io_time_s:+.0f} %) with the same requests and no "
                   "finding that accounts for it" + pace_text)
        if system is not None:
            verdict += f"; why puts {format_seconds(system.change_s)} of the change on the system ({system.model})"
    else:
        verdict = (f"the code changed: {'+' if change > 0 else '−'}{format_seconds(abs(change))} of I/O time, "
                   f"{100 * (code_share or 0):.0f} % explained by the findings"
                   + (f" and the crowd on {crowd.fs}" if crowd is not None else "") + (f" ({named})" if named else "")
                   + pace_text)
        if system is not None and abs(system.change_s) >= 0.1 * abs(change):
            verdict += f"; why puts {format_seconds(system.change_s)} of it on the system"
    return JobDiff(before=before, after=after, io_time_change_s=change, causes=causes + pace + moved,
                   explained_s=exp, explained_share=share, claimed_s=claimed(change, causes + pace) + 0.0,
                   same_code=same, system=system, verdict=verdict, notes=notes or [], pace_s=exp - code_s + 0.0)


def _system(settings, paths: tuple[str, str], hashes: tuple[str, str],
            fs: str | None) -> tuple[SystemShare | None, list[str], list]:
    """Each run's system seconds from `why` (both jobs stored, with telemetry or probes), else None; the notes
    (`why`'s own among them, each named by its run, but its climate's: the diff shows none), and each run's log
    budget (`why`'s: its window and file system). `why` is asked for the stored log (its hash), as `why JOB`
    answers it: a log changed since it was ingested is read from its stored row there, and its note says so."""
    # lazy: numpy, sqlalchemy via services.answers.why: kept off `ioweather job diff --help` and its usage errors
    from ioweather.services.answers.why import ClimateNote, comparable_system_s, why

    got, notes = [], []
    for side, p, h in zip(("before", "after"), paths, hashes):
        try:
            w = why(settings, h, fs=fs)
        except UserError as e:  # the other run's notes stay
            return None, [f"no system share: {e}", *notes], []
        notes += [f"{side} run, why: {n}" for n in w.notes if not isinstance(n, ClimateNote)]
        if comparable_system_s(w) is None:
            why_not = w.logs[0].evidence.system if w.logs else w.system_model
            return None, [f"no system share: {p}: {why_not}", *notes], []
        got.append(w)
    sb, sa = (comparable_system_s(w) for w in got)
    return SystemShare(before_s=sb, after_s=sa, change_s=sa - sb,
                       model=got[1].system_model), notes, [w.logs[0] if len(w.logs) == 1 else None for w in got]


def device_rate(parquet_dir, fs: str, target: str, start_ns: int, end_ns: int) -> float | None:
    """The bytes/s (read and written) of the one device `target` (`fs_names.disk_target`) of `fs`'s telemetry over
    [start, end) (its intervals prorated by their overlap); None where a byte series does not cover the window or
    the window is shorter than the telemetry's interval (a rate of the intervals around it, not of the window)."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    if end_ns <= start_ns:
        return None
    series = jt.window_series(parquet_dir, fs, start_ns, end_ns, ["read_bytes", "write_bytes"], target=target)
    total = 0.0
    for metric in ("read_bytes", "write_bytes"):
        sr = series.get(metric)
        cut = None if sr is None else sr.cut(start_ns - jt.MAX_INTERVAL_NS, end_ns)
        got = None if sr is None else sr.amount(cut, start_ns, end_ns, job_window=False)
        if got is None or (end_ns - start_ns) / 1e9 < float(sr.iv[cut[0]:cut[1]].max()):
            return None
        total += got
    return total / ((end_ns - start_ns) / 1e9)


def store_crowd(parquet_dir, budgets: list, spans: list, rb: JobReport, ra: JobReport,
                target_of=None) -> tuple[CrowdCause | None, list[str]]:
    """The crowd cause when one run is R01's one-device case and the other is not (`crowd_cause`), from the
    counters of the one device (`target_of(dataset, mount)`: `fs_names.disk_target`) of the file system and
    mount `why` found for the runs (`budgets`), over each run's rank-0 I/O span (`spans`: Unix seconds, or
    None); and a note saying why no crowd was priced where one could have been."""
    if not (_one_device(rb) and not any(f.code == "R01" for f in ra.findings)
            or _one_device(ra) and not any(f.code == "R01" for f in rb.findings)):
        return None, []
    if len(budgets) != 2 or None in budgets:
        return None, ["no crowd priced: why has no budget of each run"]
    fs, mount = budgets[0].fs or budgets[1].fs, budgets[0].mount or budgets[1].mount
    if not fs or any(b.fs not in (None, fs) or b.mount not in (None, mount) for b in budgets):
        return None, ["no crowd priced: the runs are not on one file system and mount"]
    if target_of is None:
        # lazy: config's fs-map reader via services.runtime, only when a crowd is priced
        from ioweather.services.runtime.fs_names import disk_target as target_of
    target, why_not = target_of(fs, mount)
    if target is None:
        return None, [f"no crowd priced: no single device of {fs} for {mount}: {why_not}"]
    one = 0 if _one_device(rb) else 1
    if spans[one] is None:
        return None, [f"no crowd priced: the {('before', 'after')[one]} run's log has no rank-0 I/O span"]
    rates = tuple(None if sp is None else device_rate(parquet_dir, fs, target, int(sp[0] * 1e9), int(sp[1] * 1e9))
                  for sp in spans)
    if rates[one] is None:
        return None, [f"no crowd priced: {target}'s readings do not cover the {('before', 'after')[one]} run's rank-0 "
                      f"I/O span ({format_seconds(spans[one][1] - spans[one][0])}), or it is shorter than their "
                      "interval"]
    return crowd_cause(rb, ra, rates, fs, target), []


def job_diff(settings, before: str, after: str, *, cores_per_node: int | None = None,
             thresholds_file: str | None = None, fs: str | None = None) -> JobDiff:
    """The costed difference between the runs BEFORE and AFTER (log paths or stored job ids); `fs`: the
    telemetry dataset of their file system, as `why --fs` takes it (else `why` finds it)."""
    # lazy: the reader forks before numpy (services/jobs/darshan_child.py)
    from ioweather.services.jobs.darshan_child import job_outputs

    (pb, hb), (pa, ha) = _resolve(settings, before), _resolve(settings, after)
    rb, _ = job_outputs(pb, cores_per_node=cores_per_node, thresholds_file=thresholds_file)
    ra, _ = job_outputs(pa, cores_per_node=cores_per_node, thresholds_file=thresholds_file)
    sb, sa = _side(before, pb, rb), _side(after, pa, ra)
    system, notes, crowd = None, [], None
    if hb is not None and ha is not None:
        system, notes, budgets = _system(settings, (pb, pa), (hb, ha), fs)
        if system is not None:
            sb.system_s, sa.system_s = system.before_s, system.after_s
            sb.system_model = sa.system_model = system.model
            spans = [r.perf.rank0_io_span if _one_device(r) or _one_device(o) else None
                     for r, o in ((rb, ra), (ra, rb))]
            crowd, more = store_crowd(settings.parquet_dir, budgets, spans, rb, ra)
            notes += more
    else:
        notes.append("no system share: both runs must be stored jobs ('ioweather jobs ingest') with telemetry "
                     "or probes for their file system")
    return diff_reports(sb, rb, sa, ra, system, notes, crowd)
