"""`ioweather why JOB` and the top of the job page: one job's I/O time split into what its code costs,
what the file system's state cost it, and the rest (issue 29; docs/why.md has the models).

The parts are read, never recomputed: the I/O time and the code's saving are the Darshan advisor's
(`perf.io_time_s`, the top layer's slowest-rank time, and `verdict_saving_s`, the combined saving of
its findings), from `services.jobs.report.job_answer` of each log; the system's share comes from the best
evidence the store holds for the job's own file system and window:

1. `probe_slowdown`: the probes that ran on the job's file system (a probe directory under the job's
   mount, or a probe target named like its dataset): each probed op's slowdown over the window
   (services.jobs.weather's, the `slowdown` command's baseline), applied to the time the job spent in
   that kind of op: t_op × (1 − 1/slowdown_op);
2. `coverage_factor`: the job's bytes ÷ the servers' bytes in its direction over its window (seed 003,
   METHODS.md section 7): io_time × (1 − CF);
3. `unknown`: neither.

Both system models are upper bounds (as the cost of events is): they assume every second of the job's
I/O met the state measured over its window. The code's saving is taken first; the system's share is
capped at what is left, the rest is unexplained, so code + system + unexplained == io_time, each ≥ 0.

A job of several logs (a scheduler job's steps, one log per worker process) is one job: each log gets
its budget over its own window and file system, the job's budget is their sum (the I/O time its
processes spent; concurrent logs overlap in wall time).

Read top-down: `why()` and its three steps (`_resolve` JOB, `_log_budget` of each log, `_merge`) come
first, then the answer's types, then the parts the steps use.
"""

from __future__ import annotations

from datetime import datetime, timezone
import json
import os
import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING

from ioweather.config import check_dataset_name, dataset_for_mounts, load_fs_map
from ioweather.errors import from_os_error, UserError
from ioweather.services.jobs.facts import LogFacts, OpTimes
from ioweather.services.runtime.fs_names import JobFs, check_fs, job_fs, probes_on
from ioweather.sources.darshan_header import content_hash
from ioweather.store.parquet_scan import one_database
from ioweather.store.probe_light import OPS as PROBE_OPS
from ioweather.store.sqlite_reads import door, Fallback, open_light
from ioweather.store.telemetry_names import known_fs
from ioweather.units import format_seconds, ns_to_iso

if TYPE_CHECKING:
    from ioweather.services.jobs.answer import JobReport
    from ioweather.services.jobs.weather import RunReadings, Weather
    from ioweather.services.answers.umami import Umami

#: Probe ops standing for the job's time in each kind of operation (store.probe.OPS).
OP_KINDS = {"read": ("data_read",), "write": ("data_write",),
            "meta": ("md_create", "md_stat", "md_read", "md_delete")}
#: Telemetry read around a job's window, so that the event detector's smoothing (600 s) sees the
#: storm's rise and fall even when the job was shorter than the storm.
EVENT_MARGIN_NS = 3600 * 10**9
#: Probe samples (data_write, per target) a job's window needs before its probe slowdown stands beside
#: telemetry: a median of a few samples is no bound. On the lab's disk (docs/lab.md, the storm pair) the
#: medians of 1 s windows of a quiet period went from 0.1× to 4× the baseline; a storm's 4 s window of
#: 8 samples said ×1.00 while the disk's bytes said the job had 19 % of them.
MIN_PROBE_SAMPLES = 30
#: Below this share of the I/O time a part is "~0" in the verdict.
NEGLIGIBLE = 0.005
#: The models that give no system seconds: no evidence, or readings too coarse to tell the share from 0.
NO_SHARE = ("unknown", "below_resolution")
class ClimateNote(str):
    """A note about the climate alone, a string in the answer as any note: `job diff`, which shows no climate,
    leaves out the notes of this kind, however a rewording reads (no text compared)."""


NO_CLIMATE = ClimateNote("no climate: the job's log is not in the store, or its file system has no telemetry")


# ------------------------------------------------------ the answer: resolve JOB, each log's budget, the merge

def why(settings, ident: str, fs: str | None = None, store=None, reference: tuple[int, int] | None = None) -> Why:
    """The costed answer for JOB: a Darshan log path, a log hash prefix, a Darshan job id or a scheduler job id.
    `reference`: [since, until) in ns of a quiet period whose probe samples are the baseline
    (commands.common.reference_period), instead of the rolling one that learns for 24 h.

    Three steps: resolve JOB (its logs and scheduler row, the file systems the store knows), then each
    log's budget over its own window and file system, then the merge (the sums, the events of the
    windows, the climate of the longest log, the verdict)."""
    if fs is not None:
        check_dataset_name(fs)
    ident = str(ident).strip()
    if not ident:
        raise UserError("give a job: a Darshan log, a log hash prefix, or a job id")
    if store is None and settings.store_exists():
        # the embedded SQLite store through sqlite3 first: no SQLAlchemy (~0.2 s) where nothing is written
        try:
            light = open_light(settings)
        except Fallback:
            light = None
        if light is not None:
            try:
                with one_database():
                    return _on_store(settings, light, ident, fs, reference)
            except Fallback:  # a write (the store's first `why`), a probe's samples, another schema: the usual door
                pass
            finally:
                light.dispose()
    own_store = store is None
    if store is None and settings.store_exists():
        # lazy: sqlalchemy via store: only where the store must be written or is a server's
        from ioweather.store import open_store

        store = open_store(settings)
    try:
        with one_database():  # its telemetry reads share a DuckDB database (per setting), not one each
            return _on_store(settings, store, ident, fs, reference)
    finally:
        if own_store and store is not None:
            store.dispose()


def _on_store(settings, store, ident: str, fs: str | None, reference) -> Why:
    """The three steps on one store."""
    job = _resolve(settings, store, ident, fs, reference)
    notes: list[str] = []
    logs = [_log_budget(job, ref, notes) for ref in job.logs]
    out = _merge(job, logs, notes)
    if reference is not None:
        out.baseline = Baseline(ns_to_iso(reference[0]), ns_to_iso(reference[1]))
    return out


def _resolve(settings, store, ident: str, fs: str | None, reference) -> _Job:
    """JOB's logs (a log path; else a job id's every log, a log hash prefix's one, a scheduler job's
    linked ones) and the file systems a --fs may name."""
    jobs_store = door(store, "jobs") if store is not None else None
    logs: list[_LogRef] = []
    sched_row = None
    if os.path.isfile(ident):
        h = _sha256(ident)
        row = jobs_store.job_row(store, h) if store is not None and "darshan" in store.versions() else None
        logs.append(_LogRef(ident, row, h))
        if row is not None and "scheduler" in store.versions() and row.get("jobid"):
            sched_row = door(store, "scheduler").scheduler_job_for_darshan(store, h)
    else:
        if store is None:
            raise UserError(f"no log at {ident!r} and no store at {settings.home}: give a Darshan log")
        if os.sep in ident:
            raise UserError(f"no Darshan log at {ident}")
        cands, sched_row = _stored_logs(store, ident)
        if not cands:
            raise UserError(f"no job {ident!r}: not a Darshan log, a stored log's hash or job id, or a scheduler "
                            "job ('ioweather jobs list' shows the stored ones)")
        logs = [_LogRef(c["path"], jobs_store.job_row(store, c["log_hash"]), c["log_hash"]) for c in cands]
    names: list[str] = []
    if store is not None:
        names = known_fs(settings.parquet_dir)
    probes = _Probes(store, reference)
    # a file system named by telemetry or by a probe's runs; any other --fs is a typo, said at once
    check_fs(fs, sorted(set(names) | {f for f in probes.fs.values() if f}))
    return _Job(settings, store, ident, fs, reference, logs, sched_row, names, probes)


def _log_budget(job: _Job, ref: _LogRef, notes: list[str]) -> _LogAnswer:
    """One log's budget over its own window and file system: its facts, its file system, the system's
    share by the best evidence there (probes, the coverage factor), the split."""
    settings, store, fs = job.settings, job.store, job.fs
    facts = _read_log(ref, notes)
    if ref.row is not None and facts.mounts is None:
        # lazy: numpy via services.jobs.weather: commands.why imports this at its top: kept off `ioweather why --help` and its usage errors
        from ioweather.services.jobs import weather as job_weather

        j = job_weather.find_job(store, ref.hash)
        job_weather.fs_of(store, j)
        facts.mounts = j.mount_bytes
    found = job_fs(settings.parquet_dir, facts.mounts or [], hosts=facts.hosts or None) if store is not None else \
        JobFs.of(dataset_for_mounts(facts.mounts or [], [], load_fs_map(settings.home)))
    dataset = fs or found.dataset
    # probes match the job's mount even when no telemetry dataset does
    mount = (found.mount or found.shared_mount) if not fs or fs == found.dataset else None
    mounts = [f"{m.mount} ({m.fs_type or '?'})" for m in sorted(
        facts.mounts or [], key=lambda m: -(m.bytes or 0)) if m.mount]
    where = ", ".join(mounts) or "no mount in its log"
    has_tel = dataset in job.names
    weather, umami_doc = None, None
    if has_tel:
        weather, umami_doc = _weather(store, ref.hash if ref.row is not None else None, facts, dataset,
                                      f"darshan:{ref.hash}")
    probes = job.probes
    targets = probes.on(mount, dataset)
    probe = probes.slowdown(targets, facts.start_ns, facts.end_ns) if targets else (None, None)
    resolution = None
    if weather is not None and not weather.no_data and weather.cf_variant in ("all targets", "job's targets"):
        # lazy: pyarrow via services.jobs.weather's reader, loaded only when there is telemetry
        from ioweather.services.jobs.weather import run_readings, stored_osts

        # the readings of the servers the coverage factor was taken over: the job's own OSTs when its log names them
        osts = stored_osts(store, ref.hash) if weather.cf_variant == "job's targets" else None
        resolution = cf_range(facts, weather, run_readings(settings.parquet_dir, dataset, facts.start_ns,
                                                           facts.end_ns, osts))
    system, model, sys_ev = _system(facts, weather, probe, targets, dataset, has_tel, where,
                                    probes.fewest if targets else None, resolution)
    code, system_s, rest = split(facts.io_time_s, facts.saving_s, system)
    if resolution is not None:  # capped as the share is: the code's saving is taken first
        left = facts.io_time_s - code
        resolution = replace(resolution, low_s=min(resolution.low_s, left), high_s=min(resolution.high_s, left))
    budget = LogBudget(
        id=ref.hash[:16], path=ref.path, jobid=facts.jobid, start=ns_to_iso(facts.start_ns),
        end=ns_to_iso(facts.end_ns), io_time_s=float(facts.io_time_s), code_s=code,
        system_s=None if model in NO_SHARE else system_s,
        unexplained_s=rest, system_model=model, fs=dataset, mount=mount, system_range=resolution,
        evidence=LogEvidence(code=facts.code_from, system=sys_ev,
                             file_system=(f"--fs {fs}" if fs else found.how) or f"no dataset for {where}",
                             mounts=mounts, probe_targets=targets))
    return _LogAnswer(budget, facts, weather, umami_doc, dataset if has_tel else None)


def _merge(job: _Job, logs: list[_LogAnswer], notes: list[str]) -> Why:
    """The job's answer from its logs' budgets: the events of each file system over its logs' windows
    (the job's own logs and scheduler job left out of the culprits), the failover state of the longest
    log's file system at its end, the sums and the verdict."""
    windows: dict[str, tuple[int, int]] = {}
    moved: dict[str, float] = {}
    for x in logs:
        f, name = x.facts, x.telemetry
        if name is None:
            continue
        lo, hi = windows.get(name, (f.start_ns, f.end_ns))
        windows[name] = (min(lo, f.start_ns), max(hi, f.end_ns))
        moved[name] = moved.get(name, 0.0) + (f.bytes_read or 0) + (f.bytes_written or 0)
    bs = [x.budget for x in logs]
    own = {b.id[:12] for b in bs} | {f"darshan:{b.id[:12]}" for b in bs}
    own |= {str(b.jobid) for b in bs if b.jobid}
    if job.sched_row is not None:
        own.add(str(job.sched_row["jobid"]))
    events = [e for name, (lo, hi) in sorted(windows.items())
              for e in _events(job.settings, name, lo, hi, own, notes, job.reference,
                               moved[name] / max(1e-9, (hi - lo) / 1e9), job.store)]
    main = max(bs, key=lambda b: b.io_time_s)
    failover = _failover(job.settings, main.fs, windows[main.fs][1]) if main.fs in windows else None
    return _answer(job.ident, logs, events, job.sched_row, notes, failover)


# ----------------------------------------------------------------------------- the steps' own types

@dataclass
class _LogRef:
    """One log of JOB: where it is, its stored row (None when not ingested) and its content hash."""

    path: str
    row: dict | None
    hash: str


@dataclass
class _Job:
    """JOB resolved: its logs, its scheduler row, and what the store knows of file systems and probes."""

    settings: object
    store: object
    ident: str
    fs: str | None
    reference: tuple[int, int] | None
    logs: list[_LogRef]
    sched_row: dict | None
    names: list[str]
    probes: _Probes


@dataclass
class _LogAnswer:
    """One log's budget and what the merge needs beside it."""

    budget: LogBudget
    facts: LogFacts
    weather: Weather | None
    umami: Umami | None
    #: the telemetry dataset the log's window is read from for events (None: no telemetry for it)
    telemetry: str | None


# ----------------------------------------------------------------------------- the answer's types

@dataclass
class LogEvidence:
    """What one log's parts rest on, in words."""

    code: str
    system: str
    file_system: str
    mounts: list[str]
    probe_targets: list[str]


@dataclass
class SystemRange:
    """What the coverage factor can say at the resolution of the file system's readings: the system's share
    lies between `low_s` (only the others' bytes in readings wholly inside the run) and `high_s` (every other
    byte of the job's window, the start's whole reading and the tail included). `resolved` is False when the
    low end is ~0 and the high end is not: a share the readings cannot tell from 0 (a run shorter than their
    period holds no whole reading), reported as such and not as seconds."""

    low_s: float
    high_s: float
    #: the readings' period over the run (s); None when no reading overlapped it
    reading_s: float | None
    run_s: float
    resolved: bool


@dataclass
class LogBudget:
    """One Darshan log's budget over its own window and file system."""

    id: str
    path: str
    jobid: int | None
    start: str | None
    end: str | None
    io_time_s: float
    code_s: float
    #: None when the system's share is unknown (no telemetry or probe): not 0 s, which is a finding
    system_s: float | None
    unexplained_s: float
    system_model: str
    fs: str | None
    mount: str | None
    evidence: LogEvidence
    #: the coverage factor's share at the readings' resolution (None: no disk readings counted)
    system_range: SystemRange | None = None


@dataclass
class Culprit:
    """A job an event's bytes came from (the job asked about left out), its share of them and how known."""

    job: str
    share: float
    method: str
    user: str | None
    bytes: float


@dataclass
class Event:
    """An I/O event of the job's file system that overlapped its window (services.answers.events)."""

    fs: str
    start: str
    end: str
    peak_bps: float
    bytes: float
    slowdown: float | None
    #: the share of its bytes the job's own logs (or scheduler job) moved
    own_share: float
    culprits: list[Culprit]


@dataclass
class ClimateMetric:
    """One row of the job's UMAMI: its value against its motif's box."""

    metric: str
    label: str | None
    value: float | None
    quartile: int | None
    colour: str | None
    median: float | None
    q1: float | None
    q3: float | None
    n: int | None


@dataclass
class Climate:
    """The job's UMAMI against its motif's history (services.jobs.weather.umami_for_job)."""

    motif: str | None
    history_jobs: int | None
    verdict: str | None
    metrics: list[ClimateMetric]


@dataclass
class Targets:
    """The target state at the job: the fullest OST at its start (`lfs df` imported) and the targets its
    file system's failover partners served at its end (`lctl dl -t` imported). Every field is always
    there, None where its import is missing: a store with fullness and no listing is common."""

    fullest_ost: str | None = None
    fullest_ost_pct: float | None = None
    failed_over: list[str] | None = None
    lctl_at: str | None = None


@dataclass
class Evidence:
    """What the job's parts rest on: its logs' evidence joined."""

    code: str
    system: str
    unexplained: str


@dataclass
class Baseline:
    """The probes' reference period (ISO 8601 UTC), named with --baseline-from/--baseline-until."""

    since: str
    until: str

    def to_json(self) -> dict:
        return {"from": self.since, "until": self.until}


@dataclass
class Why:
    """The answer: `to_json()` is the `why --json` document and the job page's `why`."""

    job: str
    io_time_s: float
    code_s: float
    #: None when no log's system share is known; else the sum over the logs whose share is known
    system_s: float | None
    unexplained_s: float
    system_model: str
    evidence: Evidence
    verdict: str
    events: list[Event]
    climate: Climate | None
    logs: list[LogBudget]
    fs: str | None
    nnodes: int | None
    nnodes_source: str | None
    start: str | None
    end: str | None
    targets: Targets | None
    notes: list[str]
    #: the probes' reference period when one was named (`--baseline-from/--baseline-until`), None for
    #: the rolling baseline of the job's day
    baseline: Baseline | None = None
    #: the logs' SystemRange summed (None when no log has one)
    system_range: SystemRange | None = None

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["baseline"] = None if self.baseline is None else self.baseline.to_json()
        return doc


def comparable_system_s(w: Why) -> float | None:
    """The system seconds a comparison of two runs uses (`job diff`): the share; 0 where the readings cannot
    tell it from 0 (`below_resolution`: at their resolution the share is 0, its upper end no measure of the
    system); None when it is unknown."""
    if w.system_s is not None:
        return w.system_s
    return 0.0 if w.system_model == "below_resolution" else None


# ----------------------------------------------------------------------------- the budget (pure)

def split(io_time_s: float, saving_s: float | None, system_s: float | None) -> tuple[float, float, float]:
    """(code, system, unexplained), each ≥ 0, summing to the I/O time: the code's saving first (it is
    the job's own counters), the system's share capped at what is left."""
    io = max(0.0, float(io_time_s or 0.0))
    code = min(io, max(0.0, float(saving_s or 0.0)))
    system = min(io - code, max(0.0, float(system_s or 0.0)))
    return code, system, max(0.0, io - code - system)


@dataclass
class KindCost:
    """One kind of op's part of the probes' cost: its slowdown (≥ 1), its share of the job's op time, its seconds."""

    slowdown: float
    time_share: float
    cost_s: float


@dataclass
class ProbeCost:
    """The system's share by the probes: `cost_s` None when no kind of op the job spent time in was probed."""

    cost_s: float | None
    kinds: dict[str, KindCost]


def probe_cost(io_time_s: float, times: dict[str, float | None], slowdown_by_op: dict[str, float | None]) -> ProbeCost:
    """io_time × Σ_kind share_kind × (1 − 1/slowdown_kind): the job's read, write and metadata time
    (`times`, any layer: only their shares are used) scaled to its I/O time, each kind slowed by
    the median of its probed ops' slowdowns. A slowdown below 1 is no credit."""
    total = sum(max(0.0, t or 0.0) for t in times.values())
    kinds: dict[str, KindCost] = {}
    if total <= 0:
        return ProbeCost(None, kinds)
    for kind, t in times.items():
        ops = [slowdown_by_op[o] for o in OP_KINDS[kind] if slowdown_by_op.get(o) is not None]
        if not t or t <= 0 or not ops:
            continue
        s = max(1.0, statistics.median(ops))
        kinds[kind] = KindCost(slowdown=s, time_share=t / total, cost_s=io_time_s * (t / total) * (1.0 - 1.0 / s))
    return ProbeCost(sum(k.cost_s for k in kinds.values()) if kinds else None, kinds)


# ----------------------------------------------------------------------------- resolving JOB

def _sha256(path: str) -> str:
    """The log's identity in the store (what `jobs ingest` hashes)."""
    return content_hash(path)


def _stored_logs(store, ident: str) -> tuple[list[dict], dict | None]:
    """(the stored logs of JOB, its scheduler row): a job id's every log (several logs are one job),
    a log hash prefix's one log, a scheduler job's linked logs."""
    jobs_store = door(store, "jobs")
    sched = door(store, "scheduler") if "scheduler" in store.versions() else None
    cands = jobs_store.find_jobs(store, ident) if "darshan" in store.versions() else []
    by_id = [c for c in cands if ident.isdigit() and c["jobid"] is not None and str(c["jobid"]) == ident]
    if by_id:
        cands = by_id
    elif len(cands) > 1:
        shown = ", ".join(c["log_hash"][:16] for c in cands[:5])
        raise UserError(f"{ident} matches {len(cands)} logs ({shown}...): give more of a log hash")
    row = None
    if sched is not None:
        if cands and cands[0]["jobid"] is not None:
            row = sched.scheduler_job_for_darshan(store, cands[0]["log_hash"])
        elif not cands:
            row = sched.get_job(store, ident)
            if row is not None and "darshan" in store.versions():
                linked = [ln["log_hash"] for ln in sched.link_darshan(store)
                          if ln["jobid"] == row["jobid"] and ln["cluster"] == row["cluster"]]
                cands = [c for h in linked for c in jobs_store.find_jobs(store, h)]
                if not cands:
                    raise UserError(f"scheduler job {ident} has no Darshan log in the store: its I/O time comes "
                                    "from one ('ioweather jobs ingest LOG')")
    return cands, row


# ----------------------------------------------------------------------------- one log's facts

def _read_log(ref: _LogRef, notes: list[str]) -> LogFacts:
    """The log's facts from the log itself when it is still the one ingested (its content hash): those
    `jobs ingest` stored of its report when they are usable, else its report again; else from its stored
    row; a damaged log of a stored job is said in `notes` and its row stands in."""
    path, row = ref.path, ref.row
    stored = None
    try:
        on_disk = row is not None and os.path.isfile(path)
        same = on_disk and _sha256(path) == ref.hash
        # the ingest's report of these very bytes: PyDarshan and the findings pass (~0.1 s) not run again
        stored = LogFacts.usable(row.get("why_facts")) if same else None
        read = None if (on_disk and not same) or stored is not None else _read(path)
        if on_disk and not same:
            notes.append(f"{path} changed since it was ingested: its stored row is used")
    except (UserError, OSError) as e:
        if row is None:
            if isinstance(e, OSError):
                raise from_os_error(path, e, "read Darshan log") from None
            raise
        # one damaged log of a job is said, and its stored row stands in: the others still count
        notes.append(f"{path}: {e}; its stored row is used")
        read = None
    if read is None and row is None:
        raise UserError(f"cannot read the Darshan log {path}")
    rep, log = read if read is not None else (None, None)
    facts = stored if stored is not None else _log_facts(row, path, rep, log)
    if facts.start_ns is None or facts.end_ns is None:
        raise UserError(f"{path}: the log has no start or end time, so no window to look at")
    return facts


def _read(path: str) -> tuple[JobReport, object] | None:
    """(`ioweather job LOG`'s answer, the log: its host names), None when there is no file at `path`."""
    # lazy: pandas, PyDarshan via services.jobs.report, loaded only when this runs
    from ioweather.services.jobs.report import job_answer

    if not os.path.isfile(path):
        return None
    return job_answer(path)


def _log_facts(stored: dict | None, path: str, rep: JobReport | None, log) -> LogFacts:
    """What the budget needs from one log, from its report when the log can be read, else its row."""
    if rep is not None:
        return LogFacts.of_report(rep, log)
    # the log moved, changed or was deleted since it was ingested: its row is all there is
    findings = json.loads(stored["findings_json"]) if stored.get("findings_json") else []
    costs = [f.get("cost_s") or 0.0 for f in findings]
    top = max(findings, key=lambda f: f.get("cost_s") or 0.0) if findings else None
    return LogFacts(io_time_s=stored.get("io_time_s") or 0.0, saving_s=max(costs) if costs else 0.0,
                  code_from=(f"the largest stored finding's cost (the log is no longer at {path}: the combined "
                             "saving needs it; a lower bound)"),
                  advice=(top.get("fix") or top.get("message")) if top and (top.get("cost_s") or 0) > 0 else None,
                  times=OpTimes(read=stored.get("read_time_s"), write=stored.get("write_time_s"),
                                meta=stored.get("meta_time_s")),
                  jobid=stored.get("jobid"), exe=stored.get("exe"), nnodes=stored.get("nnodes"),
                  nnodes_source="log" if stored.get("nnodes") else None,
                  start_ns=stored.get("start_ns"), end_ns=stored.get("end_ns"), mounts=None,
                  bytes_read=stored.get("posix_bytes_read"), bytes_written=stored.get("posix_bytes_written"),
                  perf_bps=(stored.get("agg_perf_by_slowest_mibps") or float("nan")) * (1 << 20))


# ----------------------------------------------------------------------------- the system's evidence

class _Probes:
    """The probe targets of the store by the directories they probe and their file system's name, and their
    baselines (read once)."""

    def __init__(self, store, reference: tuple[int, int] | None = None):
        self.baselines = None
        if store is not None and "probe" in store.versions():
            # lazy: numpy via services.jobs.weather: only a store's probes need it (`why LOG` without a store reads
            # the log alone)
            from ioweather.services.jobs.weather import ProbeBaselines

            self.baselines = ProbeBaselines(store, reference)
        self.dirs: dict[str, set[str]] = {}
        self.fs: dict[str, str | None] = {}
        if self.baselines is not None:
            for r in door(store, "probe").runs(store):  # oldest first: a target's file system is its newest run's
                self.dirs.setdefault(r["target"], set()).add(r["directory"])
                self.fs[r["target"]] = r["fs"]
        self.all_targets = list(self.baselines.targets) if self.baselines is not None else []
        self.fewest = 0  # data_write samples of the last slowdown's fewest-sampled target

    def on(self, mount: str | None, dataset: str | None) -> list[str]:
        """The targets that probe the job's file system: a directory under its mount, or the file system's
        name its runs recorded (config.fs_name) is the dataset. Never every probe there is."""
        return probes_on(self.all_targets, self.dirs, self.fs, [mount] if mount else [], dataset)

    def slowdown(self, targets: list[str], since: int, until: int) -> tuple[float | None, dict | None]:
        # lazy: numpy via services.jobs.weather: commands.why imports this at its top: kept off `ioweather why --help` and its usage errors
        from ioweather.services.jobs.weather import _probe_slowdown

        if not targets:
            return None, None
        store = self.baselines.store
        windows = {t: door(store, "probe").read_samples(store, t, since_ns=since, until_ns=until) for t in targets}
        self.fewest = min((sum(1 for o in w["op"] if PROBE_OPS[o] == "data_write") for w in windows.values()),
                          default=0)
        self.baselines.targets = targets
        try:
            return _probe_slowdown(self.baselines, since, until, windows.get)
        finally:
            self.baselines.targets = self.all_targets


def _weather(store, stored_hash: str | None, facts: LogFacts, fs: str, key: str) -> tuple[Weather | None, Umami | None]:
    """(the job's weather on `fs`, its UMAMI answer when the log is in the store)."""
    # lazy: numpy via services.jobs.weather: commands.why imports this at its top: kept off `ioweather why --help` and its usage errors
    from ioweather.services.jobs import weather as job_weather

    if stored_hash is not None:
        doc = job_weather.umami_for_job(store, stored_hash, fs=fs)
        return doc.weather, doc
    job = job_weather.Job(key=key, id=key[len("darshan:"):][:12], jobid=facts.jobid,
                          exe=os.path.basename(str(facts.exe or "?").split()[0]), nnodes=facts.nnodes,
                          start_ns=facts.start_ns, end_ns=facts.end_ns, bytes_read=facts.bytes_read,
                          bytes_written=facts.bytes_written, read_ops=facts.read_ops,
                          write_ops=facts.write_ops, opens=facts.opens, perf_bps=facts.perf_bps,
                          mount_bytes=facts.mounts or [])
    return job_weather.compute(store, job, fs), None


def _window_cf(facts: LogFacts, weather: Weather) -> tuple[str, float | None, bool]:
    """(the job's main direction, the window's coverage factor in it, whether that factor is of both
    directions: the direction's own is missing)."""
    direction = "write" if (facts.bytes_written or 0) > (facts.bytes_read or 0) else "read"
    cf = weather.coverage_factor_write_bw if direction == "write" else weather.coverage_factor_read_bw
    if cf is None:
        return direction, weather.coverage_factor_bw, True
    return direction, cf, False


def cf_range(facts: LogFacts, weather: Weather, readings: RunReadings | None) -> SystemRange | None:
    """The coverage factor's share at the resolution of the readings inside the run (stats.coverage.resolved_cost),
    None when the window has no plausible coverage factor."""
    direction, cf, both = _window_cf(facts, weather)
    if cf is None:
        return None
    io = float(facts.io_time_s)
    run_s = max(0.0, (facts.end_ns - facts.start_ns) / 1e9)
    if readings is None:
        inside, period = 0.0, None
    elif both:
        inside, period = readings.read_bytes + readings.write_bytes, readings.period_s
    else:
        inside, period = (readings.write_bytes if direction == "write" else readings.read_bytes), readings.period_s
    mine = ((facts.bytes_read or 0) + (facts.bytes_written or 0) if both
            else (facts.bytes_written if direction == "write" else facts.bytes_read) or 0)
    # lazy: numpy via stats.coverage: commands.why imports this at its top: kept off `ioweather why --help`
    from ioweather.stats.coverage import resolved_cost

    low, high = resolved_cost(io, mine, inside, cf)
    small = NEGLIGIBLE * io
    return SystemRange(low_s=low, high_s=high, reading_s=period, run_s=run_s, resolved=low > small or high <= small)


def _below_resolution(r: SystemRange, fs: str | None) -> str:
    """Why a coverage factor's share is not told from 0, in words."""
    period = "its" if r.reading_s is None else format_seconds(r.reading_s)
    if r.reading_s is None or r.run_s < 2 * r.reading_s:
        head = f"too short for {period} readings: the job ran {format_seconds(r.run_s)}"
    else:
        head = (f"the readings wholly inside the job's {format_seconds(r.run_s)} run hold no other bytes than "
                f"its own")
    return (f"{head}, and the other bytes {fs or 'the disk'} moved in its window may all lie outside it (in the "
            f"reading it started in, or the tail): the system's share is between 0 and {format_seconds(r.high_s)}, "
            "not told from 0 at this resolution")


def _system(facts: LogFacts, weather: Weather | None, probe: tuple, probe_targets: list[str], fs: str | None,
            has_telemetry: bool, where: str, probe_samples: int | None = None,
            resolution: SystemRange | None = None) -> tuple[float | None, str, str]:
    """(system seconds or None, model, what evidence) for one log, best evidence first. `probe_samples`:
    the fewest data_write samples a probe target took in the job's window; `resolution`: the coverage factor's
    share at the readings' resolution: when it is the smaller bound and cannot be told from 0, the answer is
    `below_resolution` (no seconds), not its upper end."""
    io = facts.io_time_s
    worst, by_op = probe
    bounds = []  # (seconds, model, evidence): each an upper bound of the same share
    thin = (probe_samples is not None and probe_samples < MIN_PROBE_SAMPLES and weather is not None
            and not weather.no_data)
    if by_op and not thin:
        pc = probe_cost(io, facts.times.by_kind(), by_op)
        if pc.cost_s is not None:
            detail = ", ".join(f"{k} ×{v.slowdown:.2f} on {100 * v.time_share:.0f} % of the I/O time"
                               for k, v in pc.kinds.items())
            bounds.append((pc.cost_s, "probe_slowdown", (f"probes {', '.join(probe_targets)} during the job's window: "
                                                    f"{detail}; io_time × (1 − 1/slowdown) per kind of op, an upper bound")))
    if weather is not None and not weather.no_data:
        direction, cf, _both = _window_cf(facts, weather)
        if cf is not None:
            cf = min(1.0, float(cf))
            bounds.append((io * (1.0 - cf), "coverage_factor", (
                f"coverage factor on {fs} ({direction}s, {weather.cf_variant or 'all targets'}): the job moved "
                f"{100 * cf:.1f} % of the servers' {direction} bytes in its window; io_time × (1 − CF), an upper bound "
                "(as if the servers had been saturated throughout)")))
        elif not bounds and (weather.coverage_factors.flagged(f"{direction}_bw") or weather.coverage_factors.flagged("bw")):
            return None, "unknown", (f"telemetry for {fs} in the job's window holds fewer {direction} bytes than the "
                                     "job moved itself (coverage factor over 1.2: samples missing from the window, "
                                     "or their clock apart from the job's)")
        elif not bounds:
            return None, "unknown", f"telemetry for {fs} in the job's window, but no byte counts to compare with its own"
    if bounds:
        # Two upper bounds of one share: the smaller holds. The probes also feel the job's own load (a job
        # alone on a disk slows the probes beside it: the lab's quiet twin got 38 % of its I/O time from
        # them), which the coverage factor, the job's own share of the bytes, takes out.
        cost, model, evidence = min(bounds, key=lambda b: b[0])
        if model == "coverage_factor" and resolution is not None and not resolution.resolved:
            return None, "below_resolution", _below_resolution(resolution, fs)
        if len(bounds) > 1:
            other = max(bounds, key=lambda b: b[0])
            evidence += f"; the smaller of two upper bounds ({other[1].replace('_', ' ')}: {format_seconds(other[0])})"
        if thin and by_op:
            evidence += (f"; the probes took {probe_samples} data_write samples in the job's window (fewer than "
                         f"{MIN_PROBE_SAMPLES}): no bound beside the telemetry")
        return cost, model, evidence
    if fs and has_telemetry:
        return None, "unknown", f"no telemetry for {fs} in the job's window and no probe on it"
    if fs:
        return None, "unknown", f"no telemetry for {fs} and no probe on it"
    return None, "unknown", f"no telemetry or probe for the job's file system ({where}): give --fs or an fs-map entry"


# ----------------------------------------------------------------------------- events and climate

def event_params(duration_s: float, job_bps: float | None):
    """The event detector's scale for one job (services.answers.events.Params): a site's defaults (60 s intervals,
    600 s smoothing, 1 GiB/s) see hour-long storms on a shared file system and miss the seconds-long one
    that slowed a short job (the lab's storm pair: an 8 s fio storm during a 3 s job). So intervals of a
    fifth of the job (1 s to 60 s), smoothing over the job's length (up to 600 s), and a storm worth
    naming from half the job's own rate (at most 1 GiB/s): what a job could lose half its bandwidth to."""
    # lazy: pandas, pyarrow via services.answers.events, loaded only when this runs
    from ioweather.services.answers.events import Params

    resample = min(60.0, max(1.0, round(duration_s / 5.0)))
    amplitude = Params.min_amplitude if not job_bps or job_bps <= 0 else min(Params.min_amplitude, job_bps / 2.0)
    return Params(resample_s=resample, smooth_s=min(600.0, max(3 * resample, duration_s)), min_amplitude=amplitude)


def _events(settings, fs: str, since: int, until: int, own: set[str], notes: list,
            reference: tuple[int, int] | None = None, job_bps: float | None = None, store=None) -> list[Event]:
    """The I/O events of `fs` that overlap [since, until), each with its culprits (the job itself left out)."""
    # lazy: pandas, pyarrow via services.answers.events, loaded only when this runs
    from ioweather.services.answers import events as ev
    # lazy: pandas, pyarrow via services.answers.events, loaded only when this runs
    from ioweather.services.answers.events import Params

    lo, hi = _dt(since - EVENT_MARGIN_NS), _dt(until + EVENT_MARGIN_NS)
    try:
        try:
            doc = ev.compute(settings, fs, lo, hi, event_params((until - since) / 1e9, job_bps), reference=reference,
                             with_cost=False, store=store)
        except UserError:  # telemetry sampled more coarsely than the job's scale: the site's defaults
            doc = ev.compute(settings, fs, lo, hi, reference=reference, with_cost=False, store=store)
    except UserError as e:
        notes.append(f"events on {fs}: {e}")
        return []
    notes.extend(f"events on {fs}: {n}" for n in doc.notes if f"events on {fs}: {n}" not in notes)
    out = []
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    for e in doc.events.rows:
        lo, hi = pd.Timestamp(e.start).value, pd.Timestamp(e.end).value
        if hi <= since or lo >= until:
            continue
        culprits = [Culprit(job=j.job, share=j.share, method=j.method, user=j.user, bytes=j.bytes)
                    for j in e.jobs if str(j.job) not in own]
        # a storm the job made itself is its code's doing, not the system's
        own_share = sum(j.share for j in e.jobs if str(j.job) in own)
        if own_share >= 0.5 and (e.peak_bps or 0.0) < Params.min_amplitude:
            continue  # the job's own I/O, seen at its own scale: no storm a site's detector would call one
        out.append(Event(fs=fs, start=e.start, end=e.end, peak_bps=e.peak_bps, bytes=e.bytes,
                         slowdown=e.slowdown, own_share=own_share, culprits=culprits))
    return out


def _dt(ns: int):
    return datetime.fromtimestamp(ns / 1e9, tz=timezone.utc)


def _climate(answer: Umami | None) -> Climate | None:
    if answer is None:
        return None
    doc = answer.to_json()
    metrics = [ClimateMetric(metric=m["metric"], label=m.get("label"), value=m.get("value"), quartile=m.get("quartile"),
                             colour=m.get("colour"), median=(m.get("box") or {}).get("median"),
                             q1=(m.get("box") or {}).get("q1"), q3=(m.get("box") or {}).get("q3"),
                             n=(m.get("box") or {}).get("n")) for m in doc.get("metrics", [])]
    return Climate(motif=doc.get("motif"), history_jobs=doc.get("history_jobs"), verdict=doc.get("verdict"),
                   metrics=metrics)


# ----------------------------------------------------------------------------- the merge's parts

def _failover(settings, fs: str, until_ns: int) -> Targets | None:
    """The targets whose failover partner served them at the job's end (`lctl dl -t`, imported), None
    when no listing was imported for `fs`."""
    # lazy: pandas, pyarrow via services.telemetry.fsfacts, loaded only when this runs
    from ioweather.services.telemetry.fsfacts import lctl_state

    st = lctl_state(settings, fs, until_ns)
    if not st.imported:
        return None
    return Targets(failed_over=st.failover.overloaded, lctl_at=st.at)


def _answer(ident: str, logs: list[_LogAnswer], events: list[Event], sched_row: dict | None, notes: list[str],
            failover: Targets | None = None) -> Why:
    bs = [x.budget for x in logs]
    io = sum(b.io_time_s for b in bs)
    known = [b.system_s for b in bs if b.system_s is not None]
    code, system, rest = (sum(b.code_s for b in bs), sum(known) if known else None, sum(b.unexplained_s for b in bs))
    model = "+".join(dict.fromkeys(b.system_model for b in bs))
    facts = [x.facts for x in logs]
    # node counts: the scheduler's, else the logs' host names; a process count is not a node count
    if sched_row is not None and sched_row.get("nnodes"):
        nnodes, nsource = int(sched_row["nnodes"]), "scheduler"
    else:
        counted = [f.nnodes for f in facts if f.nnodes]
        nnodes, nsource = (max(counted), "log host names") if counted else (None, None)
    weather = max(logs, key=lambda x: x.budget.io_time_s).weather
    targets = None
    if weather is not None and weather.fullest_ost_pct is not None:
        targets = Targets(fullest_ost=weather.fullest_ost, fullest_ost_pct=weather.fullest_ost_pct)
    if failover is not None:
        targets = replace(targets or Targets(), failed_over=failover.failed_over, lctl_at=failover.lctl_at)
    climates = [(x.facts.io_time_s, x.umami) for x in logs if x.umami is not None]
    climate = _climate(max(climates, key=lambda c: c[0])[1]) if climates else None
    if not climates:
        notes.append(NO_CLIMATE)
    advice = next((f.advice for f in sorted(facts, key=lambda f: -(f.saving_s or 0)) if f.advice), None)
    jobname = str(sched_row["jobid"]) if sched_row is not None else (
        str(bs[0].jobid) if len(bs) > 1 and bs[0].jobid else (ident if len(bs) > 1 else (str(bs[0].jobid or bs[0].id))))
    evidence = Evidence(code="; ".join(dict.fromkeys(b.evidence.code for b in bs)),
                        system="; ".join(dict.fromkeys(b.evidence.system for b in bs)),
                        unexplained="the I/O time neither the code's findings nor the system's state account for")
    starts = [f.start_ns for f in facts]
    ends = [f.end_ns for f in facts]
    out = Why(job=jobname, io_time_s=io, code_s=code, system_s=system, unexplained_s=rest, system_model=model,
              evidence=evidence, verdict="", events=events, climate=climate, logs=bs,
              fs=bs[0].fs if len({b.fs for b in bs}) == 1 else None, nnodes=nnodes, nnodes_source=nsource,
              start=ns_to_iso(min(starts)), end=ns_to_iso(max(ends)), targets=targets, notes=notes,
              system_range=_ranges(bs))
    out.verdict = verdict_line(out, advice)
    return out


def _ranges(bs: list[LogBudget]) -> SystemRange | None:
    """The coverage factor's range of the logs whose share it priced (a log the probes priced keeps its range as
    evidence, but it is not of that log's share), summed: the coarsest readings, the longest run, and resolved
    as one log's is (`cf_range`): when the sum's low end is told from 0, or its high end is negligible, against
    those logs' I/O time. Not "every log's is": a log placing 10 s surely on the system is not undone by another
    whose share the readings cannot tell from 0."""
    priced = [b for b in bs if b.system_range is not None and b.system_model in ("coverage_factor", "below_resolution")]
    if not priced:
        return None
    rs = [b.system_range for b in priced]
    periods = [r.reading_s for r in rs if r.reading_s is not None]
    low, high = sum(r.low_s for r in rs), sum(r.high_s for r in rs)
    small = NEGLIGIBLE * sum(b.io_time_s for b in priced)
    return SystemRange(low_s=low, high_s=high, reading_s=max(periods) if periods else None,
                       run_s=max(r.run_s for r in rs), resolved=low > small or high <= small)


# ----------------------------------------------------------------------------- the verdict

def _clock(iso: str) -> str:
    return iso[11:16]


def verdict_line(w: Why, advice: str | None) -> str:
    """The one line a scientist acts on: the parts in seconds, what to change, who else was there."""
    io = w.io_time_s
    if io <= 0:
        return "The job spent no measurable time in I/O: nothing to split between your code and the system."
    small = NEGLIGIBLE * io
    lead = max((w.code_s, "Mostly your code"), (w.system_s or 0.0, "Mostly the system"),
               (w.unexplained_s, "Mostly unexplained"))[1]
    code = f"~{format_seconds(w.code_s)} is your code" + (f" ({advice})" if advice and w.code_s > small else "")
    if w.system_model == "unknown":
        reasons = list(dict.fromkeys(b.evidence.system for b in w.logs))
        mounts = list(dict.fromkeys(m for b in w.logs for m in b.evidence.mounts))
        why_not = reasons[0] if len(reasons) == 1 else (
            f"no telemetry or probe for the job's file systems ({', '.join(mounts)}) in its logs' windows: "
            "give --fs or an fs-map entry")
        return (f"Code half only: of {format_seconds(io)} of I/O, {code}; the system's share is unknown "
                f"({why_not}); ~{format_seconds(w.unexplained_s)} unexplained.")
    if w.system_model == "below_resolution":
        r = w.system_range
        period = "the disk's readings" if r is None or r.reading_s is None else f"{format_seconds(r.reading_s)} readings"
        upto = "" if r is None else f"; between 0 and {format_seconds(r.high_s)}"
        return (f"{lead}: of {format_seconds(io)} of I/O, {code}; the system's share is not told from 0 by "
                f"{period} (the job ran {format_seconds(r.run_s) if r else '?'}{upto}); "
                f"~{format_seconds(w.unexplained_s)} unexplained.")
    if (w.system_s or 0.0) <= small:
        system = f"the system cost ~0 ({w.system_model.replace('_', ' ')}: the file system was not in the way)"
    else:
        system = f"~{format_seconds(w.system_s)} is the system"
        storms = [e for e in w.events if e.culprits]
        if storms:
            e = max(storms, key=lambda e: e.bytes)
            c = e.culprits[0]
            system += (f" (an I/O storm {_clock(e.start)}–{_clock(e.end)}, {100 * c.share:.0f} % of its "
                       f"bytes from job {c.job})")
        elif w.events:
            e = w.events[0]
            whose = (f"{100 * e.own_share:.0f} % of its bytes the job's own" if e.own_share >= 0.5
                     else "no other job named")
            system += f" (an I/O storm {_clock(e.start)}–{_clock(e.end)}, {whose})"
        down = w.targets.failed_over if w.targets is not None else None
        if down:
            system += f"; {len(down)} target{'s' if len(down) > 1 else ''} served by a failover partner ({', '.join(down[:3])})"
    return f"{lead}: of {format_seconds(io)} of I/O, {code}, {system}, ~{format_seconds(w.unexplained_s)} unexplained."
