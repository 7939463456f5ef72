"""I/O events attributed to jobs, and what contention cost (issue 15 items 1 and 2; docs/events.md).

The events are the workload document's (services.telemetry.workload.events: `compute`'s series and detector,
without the rest of a workload's statistics). The
candidates are the scheduler's jobs running during them, plus Darshan logs that link to no scheduler
job. Per event, the method is the best the store allows: Lustre job_stats (exact), else Darshan's
per-job bytes for the jobs with a log and time overlap for the rest (stats.attribution).

Cost: per event, the core-hours of the jobs exposed to it (running during it, not its culprits) while
it was contended: the probes' slowdown over the event at or above a threshold, or, without probes,
the coverage-factor criterion (the job's own share of the bytes below `culprit_share`). An upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ioweather.encoding import Answer, answer_dict

from ioweather.services.telemetry import workload
from ioweather.services.telemetry.fsfacts import user_of
from ioweather.services.telemetry.workload import check_options  # noqa: F401  the command checks its options first
from ioweather.services.answers.event_probes import PiecesBaselines, kept_window_slowdowns, window_slowdowns
from ioweather.stats import attribution as A
from ioweather.stats.workload import total_of
from ioweather.store.sqlite_reads import door
from ioweather.store.telemetry_targets import job_totals

GIB = 1 << 30
_DAY_NS = 86_400 * 10**9


@dataclass(frozen=True)
class Params:
    resample_s: float = 60.0
    smooth_s: float = 600.0
    min_amplitude: float = float(GIB)
    cluster: str | None = None
    top: int = 10
    cores_per_node: int | None = None
    slowdown_threshold: float = 1.5
    culprit_share: float = 0.5


@dataclass(frozen=True)
class EventJob:
    """A job behind an event: its share of the event's bytes, how that was known (`method`: job_stats,
    darshan, overlap) and how sure (`confidence`), its nodes and its page (None without a Darshan log)."""

    job: str
    cluster: str | None
    user: str | None
    share: float
    bytes: float
    method: str
    confidence: str
    nnodes: int | None
    job_url: str | None


@dataclass(frozen=True)
class IoEvent:
    """One I/O event (times ISO 8601 UTC, bytes, bytes/s): the jobs best first (`jobs`, at most `top`;
    `more_jobs` the others), then its cost: the probes' `slowdown` over it, whether it was `contended`
    (by the probes, or the coverage-factor criterion without them), and the core-hours of the jobs
    exposed to it (an upper bound)."""

    start: str
    end: str
    peak_time: str
    peak_bps: float
    bytes: float
    duration_s: float
    running_jobs: int
    attributed_share: float
    method: str | None
    jobs: list[EventJob]
    more_jobs: int
    slowdown: float | None
    contended: bool
    contention: str
    exposed_jobs: int
    jobs_without_cores: int
    core_hours_exposed: float

    def to_json(self) -> dict:
        return {**answer_dict(self), "jobs": [answer_dict(j) for j in self.jobs]}


@dataclass(frozen=True)
class EventList(Answer):
    """`events --json`: the events, a list as it always printed."""

    rows: list[IoEvent]

    def to_json(self) -> list:
        return [e.to_json() for e in self.rows]


@dataclass(frozen=True)
class DayCost:
    day: str
    core_hours_exposed: float
    events: int


@dataclass(frozen=True)
class MonthCost:
    month: str
    core_hours_exposed: float
    events: int


@dataclass(frozen=True)
class CostlyEvent:
    """One of the costliest events, with its first culprit (None when no job is attributed)."""

    start: str
    end: str
    core_hours_exposed: float
    culprit: str | None


@dataclass(frozen=True)
class CulpritCost:
    """A job that caused events: the core-hours its share of their bytes cost the others, events, bytes."""

    job: str
    cluster: str | None
    user: str | None
    job_url: str | None
    core_hours_caused: float
    events: int
    bytes: float


@dataclass(frozen=True)
class CostSummary(Answer):
    """`events --cost --json`: core-hours exposed in all, per UTC day and month (by event start), the
    costliest events and the jobs that caused them, with the thresholds used."""

    core_hours_exposed: float
    daily: list[DayCost]
    monthly: list[MonthCost]
    top_events: list[CostlyEvent]
    top_culprits: list[CulpritCost]
    slowdown_threshold: float
    culprit_share: float

    def to_json(self) -> dict:
        return {**answer_dict(self), **{k: [answer_dict(x) for x in getattr(self, k)]
                                        for k in ("daily", "monthly", "top_events", "top_culprits")}}


@dataclass(frozen=True)
class Events(Answer):
    """The events of a file system over a window and what contention cost (`events`' answer; its
    `--json` prints `events`, or `cost` with --cost; the HTML page and `report` render `to_json()`).
    `candidates` the jobs considered, `notes` what limited the attribution."""

    fs: str
    start: str
    end: str
    interval_s: float
    min_amplitude_bps: float
    candidates: int
    notes: list[str]
    events: EventList
    #: None when computed `with_cost=False`
    cost: CostSummary | None


def compute(settings, fs: str, since=None, until=None, params: Params = Params(), warn=lambda m: None,
            reference: tuple[int, int] | None = None, with_cost: bool = True, store=None,
            keep: bool = False) -> Events:
    """The events over [since, until) with their jobs and cost; `reference`: the probes' baseline period
    in ns (None: the rolling baseline); `with_cost` False: no cost summary (`why` reads the events alone,
    and the summary's pandas groupby was 6-10 ms of its answer); `store`: the caller's open store (`why`'s,
    perhaps read through sqlite3 alone), else the settings' is opened if it exists; `keep`: the probes' slowdowns
    of events in closed days kept across calls (event_probes.kept_window_slowdowns: the Report's)."""
    found = workload.events(settings, fs, since, until, params.resample_s, params.smooth_s, params.min_amplitude,
                            warn=warn)
    data = found.data
    notes: list[str] = []
    events = _windows(found.events)
    start_ns, end_ns = pd.Timestamp(found.start).value, pd.Timestamp(found.end).value
    moved = _moved(data)
    own = store is None
    store = open_if_exists(settings) if own else store
    try:
        jobs = _candidates(store, start_ns, end_ns, params, notes)
        slowdowns = _slowdowns(store, events, notes, reference, settings if keep else None)
    finally:
        if own and store is not None:
            store.dispose()
    stats = _job_stats(settings, fs, events, start_ns, end_ns)
    if stats is None and not jobs.empty:
        notes.append("no Lustre job_stats for these events: shares from Darshan logs and time overlap")
    ev_idx, job_idx = A.sweep_join([e["start_ns"] for e in events], [e["end_ns"] for e in events],
                                   jobs["start_ns"].to_numpy(np.int64), jobs["end_ns"].to_numpy(np.int64))
    bounds = np.searchsorted(ev_idx, np.arange(len(events) + 1))  # pairs come grouped by event in start order
    step_ns = int(round(data.interval_s * 1e9))
    out = []
    for i, ev in enumerate(events):
        running = jobs.iloc[job_idx[bounds[i]:bounds[i + 1]]]
        lo, hi = (ev["start_ns"] - data.t0_ns) // step_ns, (ev["end_ns"] - data.t0_ns) // step_ns
        edges = data.t0_ns + np.arange(lo, hi + 1, dtype=np.int64) * step_ns
        per_job = _attribute(ev, running, edges, moved[lo:hi], stats.get(i) if stats else None, params, notes)
        out.append(_event_doc(ev, running, per_job, slowdowns[i], params))
    return Events(fs=fs, start=found.start, end=found.end, interval_s=data.interval_s,
                  min_amplitude_bps=params.min_amplitude, candidates=int(len(jobs)), notes=_unique(notes),
                  events=EventList(out), cost=cost_summary(out, params) if with_cost else None)


def _windows(events: list[dict]) -> list[dict]:
    return [{**e, "start_ns": pd.Timestamp(e["start"]).value, "end_ns": pd.Timestamp(e["end"]).value}
            for e in events]


def _moved(data) -> np.ndarray:
    return np.asarray(total_of(data.read_bytes, data.write_bytes), np.float64)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def open_if_exists(settings):
    if not settings.store_exists():  # a report reads: it never creates a store
        return None
    # lazy: sqlalchemy via store.db: `why` hands its own store (perhaps read through sqlite3 alone)
    from ioweather.store import open_store

    return open_store(settings)


# ----------------------------------------------------------------------------- candidates

_JOB_COLUMNS = ["job", "jobid", "cluster", "user", "nnodes", "cores", "start_ns", "end_ns", "darshan_bps",
                "io_time_s", "run_s", "job_url"]


def _candidates(store, since_ns: int, until_ns: int, params: Params, notes: list) -> pd.DataFrame:
    """Scheduler jobs of the window (running ones until its end), then Darshan logs linked to none."""
    versions = store.versions() if store is not None else {}
    sched = _scheduler_jobs(store, since_ns, until_ns, params) if "scheduler" in versions else pd.DataFrame()
    logs = _darshan_logs(store) if "darshan" in versions else pd.DataFrame()
    if sched.empty:
        notes.append("no scheduler data: candidates are the Darshan logs' jobs only" if not logs.empty else
                     "no scheduler data and no Darshan logs: events are not attributed to jobs")
    rows = []
    linked = {}
    if not logs.empty and not sched.empty:
        linked = {(ln["cluster"], ln["jobid"]): ln["log_hash"] for ln in door(store, "scheduler").link_darshan(store)
                  if ln["how"]}
    by_hash = logs.set_index("log_hash") if not logs.empty else None
    used = set()
    for j in sched.to_dict("records"):
        h = linked.get((j["cluster"], j["jobid"]))
        log = by_hash.loc[h] if h is not None else None
        used.add(h)
        rows.append({**j, **_log_fields(log), "job_url": f"/job?id={h[:16]}" if h else None})
    if by_hash is not None:
        # the window's logs chosen at once: a row of iterrows costs ~0.15 ms, the store's 10,000 logs 1.5 s a report
        by_hash = by_hash[(by_hash["start_ns"] < until_ns) & (by_hash["end_ns"] > since_ns) & ~by_hash.index.isin(used)]
    for h, log in (by_hash.iterrows() if by_hash is not None else ()):
        rows.append({"job": str(int(log["jobid"])) if pd.notna(log["jobid"]) and log["jobid"] else f"darshan:{h[:12]}",
                     "jobid": None if pd.isna(log["jobid"]) else str(int(log["jobid"])), "cluster": None, "user": None,
                     "nnodes": log["nnodes"], "cores": log["nprocs"], "start_ns": int(log["start_ns"]),
                     "end_ns": int(log["end_ns"]), **_log_fields(log), "job_url": f"/job?id={h[:16]}"})
    df = pd.DataFrame(rows, columns=_JOB_COLUMNS)
    df["end_ns"] = df["end_ns"].fillna(until_ns)
    return df.astype({"start_ns": np.int64, "end_ns": np.int64})


def _scheduler_jobs(store, since_ns: int, until_ns: int, params: Params) -> pd.DataFrame:
    rows = door(store, "scheduler").jobs_overlapping(store, since_ns, until_ns, params.cluster)
    out = []
    for r in rows:
        cores = r["ncpus"] or ((r["nnodes"] or 0) * params.cores_per_node if params.cores_per_node else None)
        out.append({"job": r["jobid"], "jobid": r["jobid"], "cluster": r["cluster"] or None, "user": r["user"],
                    "nnodes": r["nnodes"], "cores": cores or None, "start_ns": r["start_ns"],
                    "end_ns": r["end_ns"] if r["end_ns"] is not None else until_ns})
    return pd.DataFrame(out)


def _darshan_logs(store) -> pd.DataFrame:
    df = door(store, "jobs").load_jobs(store, ["log_hash", "jobid", "nprocs", "nnodes", "start_ns", "end_ns", "bytes_read",
                           "bytes_written", "io_time_s"])
    return df[df["start_ns"].notna() & df["end_ns"].notna() & (df["end_ns"] > df["start_ns"])]


def _log_fields(log) -> dict:
    if log is None:
        return {"darshan_bps": np.nan, "io_time_s": np.nan, "run_s": np.nan}
    run_s = (log["end_ns"] - log["start_ns"]) / 1e9
    moved = float(np.nansum([log["bytes_read"], log["bytes_written"]]))
    io = log["io_time_s"]
    return {"darshan_bps": moved / run_s, "io_time_s": np.nan if io is None else float(io), "run_s": run_s}


# ----------------------------------------------------------------------------- attribution

def _job_stats(settings, fs: str, events: list[dict], since_ns: int, until_ns: int) -> dict | None:
    """{event index: {job id: bytes}} from Lustre job_stats, None when the window has none at all."""
    if not events or job_totals(settings, fs, since_ns, until_ns).empty:
        return None
    out = {}
    for i, e in enumerate(events):
        t = job_totals(settings, fs, e["start_ns"], e["end_ns"])
        t = t[t["metric"].isin(["job_read_bytes", "job_write_bytes"])]
        out[i] = t.groupby("job")["amount"].sum().to_dict()
    return out


def _attribute(ev: dict, running: pd.DataFrame, edges, moved, stats: dict | None, params: Params,
               notes: list) -> pd.DataFrame:
    """One row per attributed job: the running frame's columns plus bytes, method, alone_fraction."""
    if stats is not None:
        return _exact(ev, running, stats, params, notes)
    if running.empty:
        return running.assign(bytes=[], method=[], alone_fraction=[])
    r = A.event_shares(edges, moved, running["start_ns"], running["end_ns"], running["darshan_bps"])
    return running.assign(bytes=r["bytes"], method=np.where(r["darshan"], "darshan", "overlap"),
                          alone_fraction=r["alone_fraction"])


def _exact(ev: dict, running: pd.DataFrame, stats: dict, params: Params, notes: list) -> pd.DataFrame:
    rows = []
    for job, moved in stats.items():
        same = running[running["jobid"] == job]
        if len(same) > 1 and params.cluster is None:
            notes.append(f"job id {job} ran on several clusters ({', '.join(sorted(map(str, same['cluster'])))}) "
                         "during an event: its job_stats bytes are shown once, without a cluster")
            same = same.iloc[:0]
        base = same.iloc[0].to_dict() if len(same) else {**{c: None for c in _JOB_COLUMNS}, "job": job,
                                                         "user": user_of(job, None)}
        rows.append({**base, "bytes": float(moved), "method": "job_stats", "alone_fraction": np.nan})
    return pd.DataFrame(rows, columns=[*_JOB_COLUMNS, "bytes", "method", "alone_fraction"])


def _event_doc(ev: dict, running: pd.DataFrame, per_job: pd.DataFrame, slowdown, params: Params) -> IoEvent:
    total = float(ev["bytes"])
    share = per_job["bytes"].to_numpy(float) / total if total > 0 else np.zeros(len(per_job))
    order = A.rank(share, per_job["nnodes"].to_numpy(float) if len(per_job) else [])
    jobs = []
    for k in order:
        if share[k] <= 0:
            continue
        j = per_job.iloc[k]
        af = j["alone_fraction"]
        jobs.append(EventJob(job=str(j["job"]), cluster=j["cluster"], user=j["user"], share=float(share[k]),
                             bytes=float(j["bytes"]), method=j["method"],
                             confidence=A.confidence(j["method"], None if pd.isna(af) else float(af)),
                             nnodes=None if pd.isna(j["nnodes"]) else int(j["nnodes"]), job_url=j["job_url"]))
    cost = _event_cost(ev, running, per_job, share, slowdown, params)
    return IoEvent(start=ev["start"], end=ev["end"], peak_time=ev["peak_time"], peak_bps=ev["peak_bps"],
                   bytes=total, duration_s=(ev["end_ns"] - ev["start_ns"]) / 1e9, running_jobs=int(len(running)),
                   attributed_share=float(min(1.0, share[share > 0].sum())) if len(share) else 0.0,
                   method=_method(jobs), jobs=jobs[:params.top], more_jobs=max(0, len(jobs) - params.top), **cost)


def _method(jobs: list[EventJob]) -> str | None:
    methods = {j.method for j in jobs}
    return "job_stats" if "job_stats" in methods else "+".join(m for m in ("darshan", "overlap") if m in methods) or None


# ----------------------------------------------------------------------------- cost

def _slowdowns(store, events: list[dict], notes: list, reference=None, keep_in=None) -> list[float | None]:
    """The probes' worst-op slowdown over each event (services.jobs.weather's), None without probes; `keep_in`:
    the settings whose home keeps those of closed days (`kept_window_slowdowns`)."""
    if store is None or "probe" not in store.versions() or not events:
        notes.append("no probe data: contention by the coverage-factor criterion only")
        return [None] * len(events)
    windows = [(e["start_ns"], e["end_ns"]) for e in events]
    probes = PiecesBaselines(store, reference)
    out = window_slowdowns(probes, windows) if keep_in is None else kept_window_slowdowns(keep_in, probes, windows)
    if all(s is None for s in out):
        notes.append("no probe samples during the events: contention by the coverage-factor criterion only")
    return out


def _event_cost(ev: dict, running: pd.DataFrame, per_job: pd.DataFrame, share, slowdown, params: Params) -> dict:
    culprits = set()
    for k in range(len(per_job)):
        if share[k] >= params.culprit_share:
            culprits.add((per_job.iloc[k]["cluster"], str(per_job.iloc[k]["job"])))
    if slowdown is not None and slowdown < params.slowdown_threshold:
        return {"slowdown": slowdown, "contended": False, "contention": "probe", "exposed_jobs": 0,
                "jobs_without_cores": 0, "core_hours_exposed": 0.0}
    keep = np.array([(c, str(j)) not in culprits for c, j in zip(running["cluster"], running["job"])], bool)
    exposed = running.loc[keep]
    overlap_s = (np.minimum(exposed["end_ns"], ev["end_ns"]) - np.maximum(exposed["start_ns"], ev["start_ns"])) / 1e9
    cores = pd.to_numeric(exposed["cores"], errors="coerce").to_numpy(float)
    ch = A.exposed_core_hours(overlap_s.to_numpy(float), cores, exposed["io_time_s"].to_numpy(float),
                              exposed["run_s"].to_numpy(float))
    return {"slowdown": slowdown, "contended": True, "contention": "probe" if slowdown is not None else "coverage",
            "exposed_jobs": int(len(exposed)), "jobs_without_cores": int((~np.isfinite(cores)).sum()),
            "core_hours_exposed": float(np.nansum(ch))}


def cost_summary(events: list[IoEvent], params: Params, top: int = 10) -> CostSummary:
    """Core-hours exposed per UTC day and month (by event start), the costliest events, and the jobs
    that caused them (each event's cost shared among its culprits by their share of its bytes)."""
    if not events:
        return CostSummary(core_hours_exposed=0.0, daily=[], monthly=[], top_events=[], top_culprits=[],
                           slowdown_threshold=params.slowdown_threshold, culprit_share=params.culprit_share)
    df = pd.DataFrame({"start": [e.start for e in events], "ch": [e.core_hours_exposed for e in events]})
    t = pd.to_datetime(df["start"])
    df["day"], df["month"] = t.dt.strftime("%Y-%m-%d"), t.dt.strftime("%Y-%m")

    def per(col, cls):
        g = df.groupby(col)["ch"].agg(["sum", "count"]).reset_index()
        return [cls(r[col], float(r["sum"]), int(r["count"])) for r in g.to_dict("records")]

    caused: dict[tuple, dict] = {}
    for e in events:
        for j in e.jobs:
            d = caused.setdefault((j.cluster, j.job), {"job": j.job, "cluster": j.cluster, "user": j.user,
                                                       "job_url": j.job_url, "core_hours_caused": 0.0,
                                                       "events": 0, "bytes": 0.0})
            d["core_hours_caused"] += e.core_hours_exposed * j.share
            d["events"] += 1
            d["bytes"] += j.bytes
    costly = sorted(range(len(events)), key=lambda i: (-events[i].core_hours_exposed, events[i].start))[:top]
    culprits = sorted(caused.values(), key=lambda d: (-d["core_hours_caused"], -d["bytes"], d["job"]))[:top]
    return CostSummary(core_hours_exposed=float(df["ch"].sum()), daily=per("day", DayCost),
                       monthly=per("month", MonthCost),
                       top_events=[CostlyEvent(events[i].start, events[i].end, events[i].core_hours_exposed,
                                               events[i].jobs[0].job if events[i].jobs else None) for i in costly],
                       top_culprits=[CulpritCost(**d) for d in culprits],
                       slowdown_threshold=params.slowdown_threshold, culprit_share=params.culprit_share)
