"""A job's weather (METHODS.md section 7): the joins of a job's window with our telemetry, `lfs df`
fullness, probes and the scheduler's other jobs, stored per job and recomputed when its window's
telemetry changes.

Window: the job's start to its end plus a 5 s tail (stats.coverage.TAIL_S), from its Darshan log.
Only that window's telemetry is read (store/job_telemetry.py says how), a UTC day of jobs at a time
(`compute_many`); `refresh_all` is the incremental step that `jobs ingest`, scheduler imports and
every answer run, and `update_climates` keeps each job's verdict (docs/umami.md). Motif: executable name +
node count + dominant direction + file system. The file system of a Darshan job is --fs, else the
dataset its files' mount points map to (config.dataset_for_mounts: the fs-map setting, else a shared
mount whose last component names a dataset), never "the only dataset with telemetry": a job on /home
is not a job on /scratch. Node counts come from the log's host names (or the scheduler), never from
its process count.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ioweather.errors import UserError
from ioweather.stats import coverage as cov

if TYPE_CHECKING:
    import pandas as pd

MIB = 1024 * 1024
WINDOW_METRICS = ["read_bytes", "write_bytes", "read_ops", "write_ops", "cpu_pct"]
_OST = re.compile(r"OST([0-9a-fA-F]{4})$")
#: Weather metrics shown in a job's UMAMI, performance first.
UMAMI_ROWS = ["fraction_of_peak", "coverage_factor_bw", "coverage_factor_read_bw", "coverage_factor_write_bw",
              "coverage_factor_ops", "coverage_factor_opens", "md_ops_per_s", "server_cpu_pct", "fullest_ost_pct",
              "probe_slowdown", "concurrent_jobs", "concurrent_node_hours", "missing_fraction"]


# ----------------------------------------------------------------------------- jobs

def _scheduler():
    """The scheduler store component (another part of ioweather; absent in older trees)."""
    try:
        from ioweather.store import scheduler
    except ModuleNotFoundError:
        return None
    return scheduler


def _ost_ids(values) -> set[int]:
    """The OST ids of per-file records: the per-file table stores "0,3,7" (stats/job.py); a string is
    iterable, so it is split, never iterated."""
    ids: set[int] = set()
    for v in values:
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            continue
        parts = str(v).split(",") if isinstance(v, str | int | np.integer) else v
        ids.update(int(x) for x in parts if str(x).strip())
    return ids


def _job_dict(row: dict, posix: dict | None, mounts: list[str], osts: list[int] | None,
              mount_bytes: list[dict] | None = None) -> dict:
    """A Darshan job for the weather from its stored row and the sums of its POSIX records."""
    br = row.get("posix_bytes_read") if row.get("posix_bytes_read") is not None else row.get("bytes_read")
    bw = row.get("posix_bytes_written") if row.get("posix_bytes_written") is not None else row.get("bytes_written")
    return {"key": f"darshan:{row['log_hash']}", "id": row["log_hash"][:12], "jobid": row.get("jobid"),
            "exe": os.path.basename(str(row.get("exe") or "?").split()[0]), "nnodes": row.get("nnodes"),
            "start_ns": int(row["start_ns"]), "end_ns": int(row["end_ns"]),
            "bytes_read": br, "bytes_written": bw,
            "read_ops": None if posix is None else posix["reads"],
            "write_ops": None if posix is None else posix["writes"],
            "opens": None if posix is None else posix["opens"],
            "osts": osts, "perf_bps": (row.get("agg_perf_by_slowest_mibps") or np.nan) * MIB, "mounts": mounts,
            "mount_bytes": mount_bytes if mount_bytes is not None else [{"mount": m} for m in mounts]}


def find_job(store, job_id: str) -> dict | None:
    """A Darshan job by job id or log-hash prefix, else a scheduler job by id; None when neither knows it.

    A Darshan job comes from its row alone: the sums of its per-file records (Parquet) are read only
    when its weather has to be computed (`_with_files`), not to answer from a stored one."""
    from ioweather.store import job_telemetry as jt

    row = None
    if job_id.isdigit():
        row = jt.darshan_job_by_jobid(store, int(job_id), _JOB_COLUMNS)
    if row is None and re.fullmatch(r"[0-9a-f]{6,64}", job_id):
        row = jt.darshan_job_by_hash(store, job_id, _JOB_COLUMNS)
    if row is not None:
        if row.get("start_ns") is None or row.get("end_ns") is None:
            raise UserError(f"job {job_id}: its Darshan log has no start or end time")
        return {**_job_dict(row, None, [], None), "row": row, "files": False}
    sched = _scheduler()
    if sched is not None:
        s = sched.get_job(store, job_id)
        if s is not None:
            if s.get("start_ns") is None:
                raise UserError(f"job {job_id} has not started")
            end = s.get("end_ns")
            return {"key": f"sched:{s['cluster']}:{s['jobid']}", "id": str(s["jobid"]), "jobid": s["jobid"],
                    "exe": s.get("name") or "?", "nnodes": s.get("nnodes"), "start_ns": int(s["start_ns"]),
                    "end_ns": int(end) if end is not None else None, "running": end is None,
                    "bytes_read": None, "bytes_written": None, "read_ops": None, "write_ops": None, "opens": None,
                    "osts": None, "perf_bps": np.nan, "mounts": []}
    return None


def fs_of(store, job: dict) -> dict:
    """config.dataset_for_mounts of `job` (a Darshan job: its per-file facts are read when missing)."""
    from ioweather.config import dataset_for_mounts, load_fs_map
    from ioweather.store.job_telemetry import known_fs

    if job.get("files") is False:
        job.update(_with_files(store, [job])[0], files=True)
    # the store knows its Parquet directory, <home>/parquet; the fs-map file lives in <home>
    return dataset_for_mounts(job.get("mount_bytes") or [], known_fs(store.parquet_dir),
                              load_fs_map(Path(store.parquet_dir).parent))


def choose_fs(store, job: dict, fs: str | None) -> str:
    from ioweather.store.job_telemetry import known_fs

    if fs:
        return fs
    names = known_fs(store.parquet_dir)
    if job.get("files") is False:
        from ioweather.store import job_weather as wstore

        # decided by this rule when it was first computed: answering from it reads no per-file table
        stored = {r["fs"] for r in wstore.of_jobs(store, [job["key"]])}
        if len(stored) == 1:
            return stored.pop()
    found = fs_of(store, job)
    if found["dataset"] in names:
        return found["dataset"]
    mounts = ", ".join(m["mount"] for m in found["unmapped"]) or "none named in its log"
    raise UserError(f"which file system did job {job['id']} use? its mounts ({mounts}) map to no dataset with "
                    f"telemetry ({', '.join(names) or 'none'}): give --fs or an fs-map entry (docs/why.md)")


def direction(job: dict) -> str:
    r, w = job.get("bytes_read") or 0, job.get("bytes_written") or 0
    return "write" if w > r else "read"


def motif(job: dict, fs: str) -> str:
    return f"{job['exe']} / {job.get('nnodes') or '?'} nodes / {direction(job)} / {fs}"


# ----------------------------------------------------------------------------- weather

def compute(store, job: dict, fs: str, con=None, probes: ProbeBaselines | None = None) -> dict:
    """The weather document of `job` on `fs` (metrics, with None for what is unknown, and notes);
    `probes` shares the probe baselines between the jobs of one call."""
    return compute_many(store, [job], fs, con, probes)[0]


def compute_many(store, jobs: list[dict], fs: str, con=None, probes: ProbeBaselines | None = None,
                 client=None) -> list[dict]:
    """The weather documents of `jobs` on `fs`, in order. Jobs are taken a UTC day of starts at a time:
    one telemetry query per day (summed over targets per metric and interval in DuckDB, so a day of
    100 targets at 5 s comes back as ~17,000 rows per metric), one read of the day's fullness gauges,
    scheduler jobs and probe samples; each job's window is then a slice of those sorted arrays.

    With `client` (a Dask client, services/distributed.py) each day's telemetry is read on the cluster
    (`read_day`: Parquet only, so the workers need the telemetry directory, never the database);
    scheduler jobs and probes are read here, and the documents are the same."""
    probes = probes or ProbeBaselines(store)
    by_day: dict[int, list[int]] = {}
    for i, j in enumerate(jobs):
        by_day.setdefault(j["start_ns"] // _DAY_NS, []).append(i)
    groups = [idx for _day, idx in sorted(by_day.items())]
    items = [_day_item(k, store.parquet_dir, fs, [jobs[i] for i in idx]) for k, idx in enumerate(groups)]
    out: list = [None] * len(jobs)

    def on_result(item, data):
        idx = groups[item[0]]
        for i, doc in zip(idx, _docs_of_day(store, [jobs[i] for i in idx], fs, data, probes)):
            out[i] = doc

    if client is None:
        from ioweather.store.telemetry_layout import connect_duckdb

        own = con is None
        con = con or connect_duckdb(threads=1)
        try:
            for item in items:
                on_result(item, read_day(item, con=con))
        finally:
            if own:
                con.close()
    else:
        from ioweather.services.distributed import map_unordered

        def on_crash(item, reason):
            raise UserError(f"the weather of {len(groups[item[0]])} jobs of one day: {reason}")

        map_unordered(client, read_day, items, on_result, on_crash)
    return out


def _day_item(k: int, parquet_dir, fs: str, jobs: list[dict]) -> tuple:
    """What a worker needs to read one day's telemetry for `jobs`: plain values, no store."""
    with_osts = [j for j in jobs if j.get("osts")]
    return (k, str(parquet_dir), fs, [_window(j) for j in jobs], sorted(_ost_names(with_osts)) if with_osts else None)


def read_day(item: tuple, con=None) -> dict:
    """The telemetry a day of jobs needs (`_day_item`), read from the Parquet files alone: the window
    series summed over targets, the targets of each day, the rows of the jobs' own OSTs and each
    job's fullest OST. Module level: Dask workers run it."""
    from ioweather.store import job_telemetry as jt
    from ioweather.store.telemetry_layout import connect_duckdb

    _k, parquet_dir, fs, wins, ost_names = item
    parquet_dir = Path(parquet_dir)
    lo = min(w[0] for w in wins)
    hi = max(w[1] for w in wins)
    own = con is None
    con = con or connect_duckdb(threads=1)
    try:
        return {"series": jt.window_series(parquet_dir, fs, lo, hi, WINDOW_METRICS, ("md_",), con=con),
                "present": jt.day_targets(parquet_dir, fs, lo, hi, list(_BYTES), con=con),
                "ost_rows": (jt.window_rows(parquet_dir, fs, lo, hi, WINDOW_METRICS[:4], targets=set(ost_names), con=con)
                             if ost_names else None),
                "fullest": _fullest_many(parquet_dir, fs, [w[0] for w in wins], con)}
    finally:
        if own:
            con.close()


def _window(job: dict) -> tuple[int, int]:
    since = job["start_ns"]
    return since, (job["end_ns"] if job.get("end_ns") is not None else since) + int(cov.TAIL_S * 1e9)


_BYTES = ("read_bytes", "write_bytes")


def _docs_of_day(store, jobs: list[dict], fs: str, data: dict, probes: ProbeBaselines) -> list[dict]:
    from ioweather.store import job_telemetry as jt

    wins = [_window(j) for j in jobs]
    lo = min(w[0] for w in wins)
    hi = max(w[1] for w in wins)
    series, present, ost_rows, fullest = data["series"], data["present"], data["ost_rows"], data["fullest"]
    sched = _Concurrency(store, lo, hi)
    probe_win = _ProbeWindows(probes, lo, hi)
    out = []
    for job, (since, until), full in zip(jobs, wins, fullest):
        notes: list[str] = []
        doc: dict = {m: None for m in UMAMI_ROWS if m != "fraction_of_peak"}
        doc["window_start_ns"], doc["window_end_ns"] = since, until
        doc["performance_bps"] = None if not np.isfinite(job.get("perf_bps", np.nan)) else float(job["perf_bps"])
        cut = {m: sr.cut(since - jt.MAX_INTERVAL_NS, until) for m, sr in series.items()}
        if not any(cut[m][1] > cut[m][0] for m in _BYTES if m in cut):
            doc["no_data"] = True
            notes.append(f"no telemetry for {fs} in the job's window")
        else:
            doc["no_data"] = False
            amount = {m: series[m].amount(cut[m], since, until) for m in series}
            md = [a for m, a in amount.items() if m.startswith("md_") and a is not None]
            fs_all = {"bytes_read": amount.get("read_bytes"), "bytes_written": amount.get("write_bytes"),
                      "read_ops": amount.get("read_ops"), "write_ops": amount.get("write_ops"),
                      "opens": amount.get("md_open"), "stats": amount.get("md_getattr"),
                      "md_ops": sum(md) if md else None}
            job_amounts = {k: job.get(k) for k in ("bytes_read", "bytes_written", "read_ops", "write_ops", "opens")}
            job_amounts = {k: v for k, v in job_amounts.items() if v is not None}
            every = cov.coverage_factors(job_amounts, fs_all)
            chosen, doc["cf_variant"] = every, "all targets"
            if job.get("osts") and ost_rows is not None:
                sel = _on_targets(ost_rows, job["osts"])
                if not sel.empty:
                    # the paper's variant: only the servers the job used (MDS ops stay file-system wide)
                    mine = {**fs_all, **{k: v for k, v in _amounts(sel, since, until).items()
                                         if k in ("bytes_read", "bytes_written", "read_ops", "write_ops")}}
                    chosen, doc["cf_variant"] = cov.coverage_factors(job_amounts, mine), "job's targets"
            doc.update(chosen)
            doc.update({f"{k}_all_targets": v for k, v in every.items() if k.startswith("coverage_factor_")
                        and not k.endswith("_flagged")})
            span_s = (until - since) / 1e9
            doc["md_ops_per_s"] = None if fs_all["md_ops"] is None else fs_all["md_ops"] / span_s
            doc["fs_bytes"] = None if fs_all["bytes_read"] is None else fs_all["bytes_read"] + (fs_all["bytes_written"] or 0)
            doc["server_cpu_pct"] = series["cpu_pct"].mean(cut["cpu_pct"]) if "cpu_pct" in series else None
            covered = sum(series[m].covered(cut[m], since, until) for m in _BYTES if m in series)
            # the byte series that should cover the window: of every target that reported on its days
            n_targets = present.count(since, until)
            span = (until - since) / 1e9
            doc["missing_fraction"] = (None if n_targets <= 0 or span <= 0 else
                                       float(min(1.0, max(0.0, 1.0 - covered / (span * 2 * n_targets)))))
        doc["fullest_ost_pct"], doc["fullest_ost"] = full
        doc.update(sched.of(job, since, until, notes))
        doc["probe_slowdown"], doc["probe_slowdown_by_op"] = probe_win.slowdown(since, until)
        doc["notes"] = notes
        out.append(doc)
    return out


def _ost_names(jobs: list[dict]) -> set[str]:
    return {f"{i:04x}" for j in jobs for i in j["osts"]}


def _amounts(rows: pd.DataFrame, since: int, until: int) -> dict:
    def amount(metric):
        sel = rows[rows["metric"] == metric]
        return cov.window_amount(sel["time_ns"], sel["interval_s"], sel["value"], since, until)

    return {"bytes_read": amount("read_bytes"), "bytes_written": amount("write_bytes"),
            "read_ops": amount("read_ops"), "write_ops": amount("write_ops")}


def _on_targets(rows: pd.DataFrame, osts: list[int]) -> pd.DataFrame:
    want = {f"{i:04x}" for i in osts}
    ids = rows["target"].astype(str).str.extract(_OST, expand=False).str.lower()
    return rows[ids.isin(want)]


def _fullest_many(parquet_dir, fs: str, starts: list[int], con) -> list[tuple[float | None, str | None]]:
    """Each start's fullest OST: every target's latest capacity and free bytes at or before it (at
    most a day older), the OSTs among them (every target when none is named OST), the largest used %."""
    from ioweather.store import job_telemetry as jt

    at = np.asarray(starts, dtype=np.int64)
    g = jt.window_rows(parquet_dir, fs, int(at.min()) - jt.DAY_NS + jt.MAX_INTERVAL_NS, int(at.max()) + 1,
                       ["capacity_bytes", "free_bytes"], con=con)
    none = [(None, None)] * len(starts)
    g = g[np.isfinite(g["value"].to_numpy(float))] if len(g) else g
    if g.empty:
        return none
    targets = sorted(g["target"].astype(str).unique())
    latest = {}
    for m in ("capacity_bytes", "free_bytes"):
        mat = np.full((len(at), len(targets)), np.nan)
        for k, t in enumerate(targets):
            s = g[(g["metric"] == m) & (g["target"] == t)].sort_values("time_ns", kind="stable")
            if s.empty:
                continue
            times = s["time_ns"].to_numpy(np.int64)
            i = np.searchsorted(times, at, side="right") - 1
            ok = (i >= 0) & (times[np.maximum(i, 0)] >= at - jt.DAY_NS)
            mat[ok, k] = s["value"].to_numpy(float)[i[ok]]
        latest[m] = mat
    cap, free = latest["capacity_bytes"], latest["free_bytes"]
    if not (np.isfinite(cap).any() and np.isfinite(free).any()):
        return none
    seen = np.isfinite(cap) | np.isfinite(free)
    is_ost = np.array(["OST" in t for t in targets])
    use = np.where((seen & is_ost).any(axis=1)[:, None], seen & is_ost, seen)
    with np.errstate(invalid="ignore", divide="ignore"):
        used = (1 - free / cap) * 100
    used = np.where(use & np.isfinite(used), used, np.nan)
    out = []
    for row in used:
        if not np.isfinite(row).any():
            out.append((None, None))
        else:
            k = int(np.nanargmax(row))
            out.append((float(row[k]), targets[k]))
    return out


class _Concurrency:
    """The scheduler's jobs of [lo, hi), read once; each job's concurrent jobs and node-hours from them."""

    def __init__(self, store, lo: int, hi: int):
        sched = _scheduler()
        self.available = sched is not None
        self.rows = sched.jobs_overlapping(store, lo, hi) if sched is not None else []
        self.start = np.array([int(o["start_ns"]) for o in self.rows], dtype=np.int64)
        self.end = np.array([np.nan if o.get("end_ns") is None else float(o["end_ns"]) for o in self.rows])
        self.nodes = np.array([float(o.get("nnodes") or 0) for o in self.rows])
        self.ids = np.array([str(o["jobid"]) for o in self.rows], dtype=object)
        self.now = time.time_ns()

    def of(self, job: dict, since: int, until: int, notes: list) -> dict:
        out = {"concurrent_jobs": None, "concurrent_node_hours": None, "coverage_factor_nodehrs": None}
        if not self.available:
            notes.append("no scheduler data in this ioweather (concurrent jobs unknown)")
            return out
        running = np.isnan(self.end)
        with np.errstate(invalid="ignore"):
            sel = (self.start < until) & ((self.end > since) | (running & (self.now > since)))
        if not sel.any():
            notes.append("no scheduler jobs in the window")
            return out
        lo = np.maximum(since, self.start[sel]).astype(float)
        hi = np.minimum(float(until), np.where(running[sel], float(until), self.end[sel]))
        nh = np.maximum(0.0, hi - lo) / 3.6e12 * self.nodes[sel]
        me = str(job.get("jobid")) if job.get("jobid") is not None else None
        mine = self.ids[sel] == me if me is not None else np.zeros(int(sel.sum()), bool)
        if me is not None and not mine.any():
            notes.append(f"job id {me} is not in the scheduler data")
        total = float(nh.sum())
        mine_nh = float(nh[mine].sum()) if mine.any() else None
        out["concurrent_jobs"] = int((~mine).sum())
        out["concurrent_node_hours"] = total - (mine_nh or 0.0)
        out["coverage_factor_nodehrs"] = cov.coverage_factor(mine_nh, total) if mine_nh is not None else None
        return out


class _ProbeWindows:
    """Every probe target's samples of [lo, hi), read once and sorted by time; a window is a slice."""

    def __init__(self, probes: ProbeBaselines, lo: int, hi: int):
        from ioweather.store import probe as probe_store

        self.probes = probes
        self.samples = {}
        for t in probes.targets:
            s = probe_store.read_samples(probes.store, t, since_ns=lo, until_ns=hi)
            if len(s["op"]):
                order = np.argsort(s["start_ns"], kind="stable")
                self.samples[t] = {k: np.asarray(v)[order] for k, v in s.items()}

    def slowdown(self, since: int, until: int) -> tuple[float | None, dict | None]:
        def window(t):
            s = self.samples.get(t)
            if s is None:
                return None
            a, b = np.searchsorted(s["start_ns"], [since, until], side="left")
            return {k: v[a:b] for k, v in s.items()}

        return _probe_slowdown(self.probes, since, until, window)


#: Probe baseline: the 30 whole UTC days before the day a job started (the `slowdown` command's default length).
PROBE_BASELINE_DAYS = 30
_DAY_NS = 86_400 * 10**9


class ProbeBaselines:
    """Each probe target's expected duration per op (the median of its successful samples over the
    PROBE_BASELINE_DAYS before a UTC day), computed once per (target, day) however many jobs ask.

    Reading a month of samples per job cost ~1 s at 1 Hz (docs/benchmarks.md): the weather of 10,000
    jobs would read the same months thousands of times. Jobs of one day share a baseline; a job
    then reads only its window's samples."""

    def __init__(self, store):
        from ioweather.services.slowdown import known_targets

        self.store = store
        try:
            self.targets = known_targets(store, None)
        except UserError:  # no probe in this store
            self.targets = []
        self._expected: dict[tuple[str, int], np.ndarray] = {}

    def expected(self, target: str, day: int) -> np.ndarray:
        from ioweather.stats.probe import baseline_medians
        from ioweather.store import probe as probe_store

        key = (target, day)
        if key not in self._expected:
            s = probe_store.read_samples(self.store, target, since_ns=(day - PROBE_BASELINE_DAYS) * _DAY_NS,
                                         until_ns=day * _DAY_NS)
            self._expected[key] = baseline_medians(s["op"], s["duration_ns"], s["status"], len(probe_store.OPS))
        return self._expected[key]


def _probe_slowdown(probes: ProbeBaselines, since: int, until: int, window=None) -> tuple[float | None, dict | None]:
    """Each probed op's median duration over the window ÷ its baseline median (every target's median
    slowdown per op, then the median over targets); the worst op and all ops; None without probes.
    `window(target)`: the window's samples when already read (None: none), else they are read here."""
    from ioweather.stats.probe import baseline_medians
    from ioweather.store import probe as probe_store

    by_op: dict = {}
    for t in probes.targets:
        win = (window(t) if window is not None
               else probe_store.read_samples(probes.store, t, since_ns=since, until_ns=until))
        if win is None or not len(win["op"]):
            continue
        expected = probes.expected(t, since // _DAY_NS)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = baseline_medians(win["op"], win["duration_ns"], win["status"], len(expected)) / expected
        for code in np.flatnonzero(np.isfinite(ratio)):
            by_op.setdefault(probe_store.OPS[code], []).append(float(ratio[code]))
    if not by_op:
        return None, None
    med = {op: float(np.median(v)) for op, v in by_op.items()}
    return max(med.values()), med


# ----------------------------------------------------------------------------- stored weather

def ensure(store, jobs: list[dict], fs: str, sigs=None, con=None, climates: bool = True, client=None) -> dict[str, dict]:
    """{job key: weather row} of the jobs of `jobs` whose weather was computed now (missing or stale:
    their window's telemetry signature changed), stored in one transaction; then, with `climates`,
    the climates and verdicts of their motifs are brought up to date (`update_climates`)."""
    from ioweather.store import job_telemetry as jt
    from ioweather.store import job_weather as wstore

    sigs = sigs or jt.WindowSignatures(store.parquet_dir)
    stored = {r["job_key"]: r["telemetry_sig"] for r in wstore.of_keys(store, fs, [j["key"] for j in jobs])}
    todo, rows = [], []
    for job in jobs:
        since, until = _window(job)
        sig = sigs.window(fs, since, until)
        if stored.get(job["key"]) == sig and not job.get("running"):
            continue
        todo.append(job)
        rows.append({"job_key": job["key"], "fs": fs, "motif": motif(job, fs), "start_ns": job["start_ns"],
                     "end_ns": until - int(cov.TAIL_S * 1e9), "telemetry_sig": sig, "doc": None})
    if todo:
        for row, doc in zip(rows, compute_many(store, _with_files(store, todo), fs, con, client=client)):
            row["doc"] = doc
    running = {j["key"] for j in jobs if j.get("running")}  # a running job's window still grows: not stored
    wstore.put_many(store, [r for r in rows if r["job_key"] not in running])
    if climates:
        update_climates(store, fs, {r["motif"] for r in rows if r["job_key"] not in running})
    return {r["job_key"]: r for r in rows}


_JOB_COLUMNS = ["log_hash", "jobid", "exe", "nnodes", "nprocs", "start_ns", "end_ns", "bytes_read", "bytes_written",
                "posix_bytes_read", "posix_bytes_written", "agg_perf_by_slowest_mibps", "files_part"]


def darshan_jobs(store, log_hashes: set[str] | None = None) -> list[dict]:
    """The Darshan jobs with a window (every one, or those of `log_hashes`), with the sums of their
    POSIX records, their mount points and the OSTs their Lustre records name."""
    from ioweather.store import jobs as jstore

    rows = jstore.load_jobs(store, _JOB_COLUMNS)
    rows = rows[rows["start_ns"].notna() & rows["end_ns"].notna()]
    if log_hashes is not None:
        rows = rows[rows["log_hash"].isin(log_hashes)]
    if rows.empty:
        return []
    sums, mounts, osts, mbytes = _file_facts(store, rows)
    out = []
    for r in rows.to_dict("records"):
        r = {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()}
        h = r["log_hash"]
        out.append(_job_dict(r, sums.get(h), mounts.get(h, []), osts.get(h), mbytes.get(h)))
    return out


def _file_facts(store, rows: pd.DataFrame) -> tuple[dict, dict, dict, dict]:
    """{hash: POSIX sums}, {hash: mounts}, {hash: OST ids}, {hash: bytes per mount} of the jobs of `rows` (one read per files part)."""
    from ioweather.store import job_telemetry as jt

    parts: dict[str, list[str]] = {}
    for h, part in zip(rows["log_hash"], rows["files_part"]):
        if part:
            parts.setdefault(str(part), []).append(h)
    f = jt.darshan_file_rows(store.parquet_dir, parts, ["log_hash", "module", "reads", "writes", "opens", "mount",
                                                        "ost_ids", "fs_type", "bytes_read", "bytes_written"])
    if f.empty:
        return {}, {}, {}, {}
    # one group-by for every job: filtering the table per job cost 5 ms a job (50 s for 10,000)
    posix = f[f["module"] == "POSIX"]
    agg = posix.groupby("log_hash")[["reads", "writes", "opens"]].sum()
    # a job with records but none of POSIX did no POSIX operation (0), one without records is unknown
    sums = {h: {"reads": 0, "writes": 0, "opens": 0} for h in f["log_hash"].unique()}
    sums.update({h: {k: int(v) for k, v in r.items()} for h, r in agg.to_dict("index").items()})
    mounts = ({h: sorted({str(x) for x in m}) for h, m in f.dropna(subset=["mount"]).groupby("log_hash")["mount"]}
              if "mount" in f.columns else {})
    osts: dict = {}
    if "ost_ids" in posix.columns:
        for h, v in posix.dropna(subset=["ost_ids"]).groupby("log_hash")["ost_ids"]:
            osts[h] = _ost_ids(v)
    return sums, mounts, {h: sorted(v) for h, v in osts.items() if v}, _mount_bytes(f)


def _mount_bytes(f: pd.DataFrame) -> dict:
    """{hash: [{mount, fs_type, bytes}]}: where each job moved its bytes, for config.dataset_for_mounts.
    POSIX and STDIO only: MPI-IO and HDF5 bytes pass through POSIX and would count twice."""
    if "mount" not in f.columns:
        return {}
    g = f[f["module"].isin(["POSIX", "STDIO"])].dropna(subset=["mount"])
    if g.empty:
        return {}
    moved = (g["bytes_read"].fillna(0) if "bytes_read" in g else 0) + \
        (g["bytes_written"].fillna(0) if "bytes_written" in g else 0)
    g = g.assign(_moved=moved, fs_type=g["fs_type"] if "fs_type" in g else None)
    out: dict = {}
    for (h, mount), grp in g.groupby(["log_hash", "mount"]):
        types = grp["fs_type"].dropna()
        out.setdefault(h, []).append({"mount": str(mount), "fs_type": str(types.iloc[0]) if len(types) else None,
                                      "bytes": float(grp["_moved"].sum())})
    return out


def _with_files(store, jobs: list[dict]) -> list[dict]:
    """`jobs` with the per-file facts of the Darshan jobs found without them (find_job)."""
    import pandas as pd
    need = [j for j in jobs if j.get("files") is False]
    if not need:
        return jobs
    sums, mounts, osts, mbytes = _file_facts(store, pd.DataFrame({"log_hash": [j["row"]["log_hash"] for j in need],
                                                                  "files_part": [j["row"].get("files_part") for j in need]}))
    done = {}
    for j in need:
        h = j["row"]["log_hash"]
        done[j["key"]] = {**_job_dict(j["row"], sums.get(h), mounts.get(h, []), osts.get(h), mbytes.get(h)),
                          "row": j["row"]}
    return [done.get(j["key"], j) if j.get("files") is False else j for j in jobs]


def refresh_all(store, fs: str | None = None, only_motif: str | None = None, client=None,
                span: tuple[str, int, int] | None = None) -> dict:
    """The incremental step: compute the weather of every Darshan job that has none yet or whose
    window's telemetry changed, then the climates and verdicts of the motifs that changed.
    {jobs, computed, kept, skipped}. Reads the job table and the stored signatures; the per-file rows
    and the telemetry only of the jobs it computes, so it is cheap when little is new.

    With `only_motif` (one job's answer): the stored weather of that motif only is checked for new
    telemetry, and of the jobs without weather only those of that motif are computed. With `client`
    (Dask) the telemetry of each day is read on the cluster (`compute_many`). With `span` (fs, first
    and last ns of an import): `overlapped`, how many of the computed jobs ran on that fs in that span
    (jobs computed for the first time are counted in `computed` whether the import touched them or not)."""
    from ioweather.store import job_telemetry as jt
    from ioweather.store import job_weather as wstore

    names = jt.known_fs(store.parquet_dir)
    n, new = wstore.darshan_without_weather(store, fs)
    if not names or n == 0:
        return {"jobs": n, "computed": 0, "kept": 0, "skipped": n, "overlapped": 0}
    sigs = jt.WindowSignatures(store.parquet_dir)
    todo: set[str] = set(new)
    for r in wstore.signatures(store, fs, only_motif):
        if r["job_key"].startswith("darshan:") and \
                r["telemetry_sig"] != sigs.window(r["fs"], r["start_ns"], r["end_ns"] + int(cov.TAIL_S * 1e9)):
            todo.add(r["job_key"][len("darshan:"):])
    groups: dict[str, list] = {}
    skipped = 0
    for j in darshan_jobs(store, todo) if todo else []:
        try:
            name = choose_fs(store, j, fs)
        except UserError:
            skipped += 1
            continue
        if only_motif is None or motif(j, name) == only_motif:
            groups.setdefault(name, []).append(j)
    computed, overlapped = 0, 0
    for name, js in groups.items():
        rows = ensure(store, js, name, sigs, client=client)
        computed += len(rows)
        if span is not None and span[0] == name:
            overlapped += sum(1 for r in rows.values() if r["start_ns"] <= span[2] and r["end_ns"] >= span[1])
    return {"jobs": n, "computed": computed, "kept": n - computed - skipped, "skipped": skipped,
            "overlapped": overlapped}


def after_import(store, since_ns: int | None = None, until_ns: int | None = None, client=None,
                 span: tuple[str, int, int] | None = None) -> dict | None:
    """The step `jobs ingest` and scheduler imports run after storing: the weather and verdict of every
    new job (and of the jobs of [since, until), whose concurrency an import of scheduler jobs there
    changed), so that the Jobs list and the report show verdicts without opening each job. A store
    without telemetry costs one read of the job table. None when it could not run (said in one line
    by whatever opens the job later)."""
    from ioweather.store import job_weather as wstore

    try:
        if since_ns is not None and until_ns is not None:
            wstore.invalidate(store, since_ns, until_ns)
        return refresh_all(store, client=client, span=span)
    except UserError:
        return None


def _with_fraction_of_peak(rows: list[dict]) -> pd.DataFrame:
    import pandas as pd
    from ioweather.stats.umami import fraction_of_peak

    recs = [{"job_key": r["job_key"], "fs": r["fs"], "motif": r["motif"], "start_ns": r["start_ns"], **r["doc"]} for r in rows]
    df = pd.DataFrame.from_records(recs)
    if df.empty:
        return df
    df["performance_bps"] = pd.to_numeric(df.get("performance_bps"), errors="coerce")
    df["fraction_of_peak"] = fraction_of_peak(df["performance_bps"].to_numpy(float), df["motif"].tolist())
    cfs = [c for c in df.columns if c.startswith("coverage_factor_") and not c.endswith("_flagged")]
    if cfs:
        v = df[cfs].apply(pd.to_numeric, errors="coerce")
        df[cfs] = v.where(~(v > cov.CF_MAX_PLAUSIBLE))  # clock skew or missing samples: out of the statistics
    return df


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return np.nan
    return f


class MotifTable:
    """The stored weather of one motif, sorted by start, as arrays: x (jobs x UMAMI_ROWS, fraction of
    peak first, a CF > 1.2 as NaN: out of the statistics), keys, starts, computed_ns, the documents."""

    def __init__(self, rows: list[dict]):
        rows = sorted(rows, key=lambda r: (r["start_ns"], r["job_key"]))
        self.keys = [r["job_key"] for r in rows]
        self.starts = np.array([int(r["start_ns"]) for r in rows], dtype=np.int64)
        self.computed = [r["computed_ns"] for r in rows]
        self.docs = [r["doc"] for r in rows]
        self.perf = np.array([_num(d.get("performance_bps")) for d in self.docs])
        ok = np.isfinite(self.perf)
        self.peak = float(self.perf[ok].max()) if ok.any() else None
        self.x = np.full((len(rows), len(UMAMI_ROWS)), np.nan)
        for c, m in enumerate(UMAMI_ROWS[1:], start=1):
            col = np.array([_num(d.get(m)) for d in self.docs])
            if m.startswith("coverage_factor_"):
                col[col > cov.CF_MAX_PLAUSIBLE] = np.nan
            self.x[:, c] = col
        if self.peak is not None and self.peak > 0:
            self.x[:, 0] = self.perf / self.peak  # stats.umami.fraction_of_peak of one motif
        self.prefix = np.searchsorted(self.starts, self.starts, side="left")

    def __len__(self):
        return len(self.keys)

    def history_sigs(self) -> list[str]:
        """sig[p]: a digest of the first p jobs and of the motif's peak, i.e. of everything a climate over
        that history depends on (a new peak rescales fraction of peak; a recomputed weather has a new
        computed_ns)."""
        import hashlib

        h = hashlib.sha1(f"{self.peak!r}".encode())
        out = [h.hexdigest()[:16]]
        for k, c in zip(self.keys, self.computed):
            h.update(f"{k}:{c}\n".encode())
            out.append(h.hexdigest()[:16])
        return out

    def values(self, i: int) -> dict:
        """Job i's stored weather with the statistics' view of its UMAMI metrics (None for unknown)."""
        v = dict(self.docs[i])
        for c, m in enumerate(UMAMI_ROWS):
            v[m] = float(self.x[i, c]) if np.isfinite(self.x[i, c]) else None
        for k in [k for k in v if k.startswith("coverage_factor_") and not k.endswith("_flagged")]:
            if isinstance(v[k], int | float) and v[k] > cov.CF_MAX_PLAUSIBLE:
                v[k] = None
        return v

    def history_of(self, job: dict) -> np.ndarray:
        """The rows of `job`'s history: the motif's jobs that started before it, the job excluded."""
        return np.flatnonzero((self.starts < job["start_ns"]) & (np.array(self.keys, dtype=object) != job["key"]))


def update_climates(store, fs: str, motifs) -> dict[str, MotifTable]:
    """Bring the kept climates (correlations over each job's history) and verdicts of `motifs` up to
    date: only the jobs whose history or motif peak changed are computed, all at once
    (stats.climate.expanding). {motif: its MotifTable, with the documents as stored now}."""
    from ioweather.services.umami import metric_rows, verdict_of
    from ioweather.stats import climate as cstats
    from ioweather.stats import umami as um
    from ioweather.store import job_weather as wstore

    big = [um.direction(m) for m in UMAMI_ROWS]
    codes = np.array([-1 if b is None else int(b) for b in big])
    out = {}
    for key in sorted(motifs):
        t = MotifTable(wstore.of_motif(store, fs, key))
        out[key] = t
        if not len(t):
            continue
        hsig = t.history_sigs()
        todo = [i for i in range(len(t)) if _kept(t.docs[i].get("climate"), "sig") != hsig[t.prefix[i]]
                or not isinstance(t.docs[i].get("verdict"), str)]
        if not todo:
            continue
        res = cstats.expanding(t.x, 0, t.prefix, todo, codes)
        docs = []
        for k, i in enumerate(todo):
            rows = metric_rows(res, k, UMAMI_ROWS, t.x[i], big, "fraction_of_peak")
            n = int(res["history_n"][k])
            verdict = _no_data_verdict(fs) if t.docs[i].get("no_data") else verdict_of(rows, "fraction_of_peak", n)[0]
            climate = {"sig": hsig[t.prefix[i]], "history_n": n, "n": {r["metric"]: r["n"] for r in rows},
                       "r": {r["metric"]: r["r"] for r in rows}, "p": {r["metric"]: r["p"] for r in rows}}
            t.docs[i] = {**t.docs[i], "climate": climate, "verdict": verdict}
            docs.append({"job_key": t.keys[i], "fs": fs, "doc": t.docs[i]})
        wstore.set_docs(store, docs)
    return out


def _kept(climate, field):
    return climate.get(field) if isinstance(climate, dict) else None


def weather_frame(store, fs: str | None = None, motif: str | None = None) -> pd.DataFrame:
    """Every stored job weather (refreshed first) as a table with fraction of peak per motif."""
    from ioweather.store import job_weather as wstore

    refresh_all(store, fs)
    df = _with_fraction_of_peak(wstore.all_rows(store, fs))
    if not df.empty and motif:
        df = df[df["motif"] == motif]
    return df.drop(columns=[c for c in ("notes", "probe_slowdown_by_op", "fullest_ost", "cf_variant", "no_data",
                                        "verdict", "climate", "computed_ns")
                            if c in df.columns]) if not df.empty else df


def umami_for_job(store, job_id: str, fs: str | None = None) -> dict | None:
    """The UMAMI document of a Darshan or scheduler job; None when neither knows `job_id`. The
    incremental refresh runs first (usually nothing to do: `jobs ingest` ran it); the climate then
    reads only the job's motif, and the correlations kept for the job when they are current."""
    job = find_job(store, job_id)
    if job is None:
        return None
    name = choose_fs(store, job, fs)
    refresh_all(store, name, only_motif=motif(job, name))
    return umami_among(store, job, name, None, "darshan" if job["key"].startswith("darshan:") else "scheduler")


def umami_among(store, job: dict, name: str, peers: list[dict] | None, source: str) -> dict:
    """The UMAMI document of `job` on file system `name` against the stored jobs of its motif, after
    computing or refreshing the weather of `peers` (jobs of its motif, any kind: Darshan, scheduler or
    benchmark runs) and of the job itself."""
    from ioweather.services.umami import climate

    key = motif(job, name)
    fresh: dict = {}
    if peers is not None or not job["key"].startswith("darshan:"):
        # a Darshan job's motif was just refreshed by umami_for_job (refresh_all): nothing to check twice
        fresh = ensure(store, [j for j in (peers or []) if j["key"] != job["key"]] + [job], name, climates=False)
    t = update_climates(store, name, {key})[key]
    if job["key"] not in t.keys and job["key"] not in fresh:
        fresh = ensure(store, [job], name)
        t = update_climates(store, name, {key})[key]
    i = t.keys.index(job["key"]) if job["key"] in t.keys else None
    stored = None
    if i is None:  # a running job is not stored: compute it for this answer only
        values = {**fresh[job["key"]]["doc"], "fraction_of_peak": None}
    else:
        values = t.values(i)
        kept = values.get("climate")
        if isinstance(kept, dict) and kept.get("n") is not None:
            stored = kept  # update_climates just made it current
    rows = t.history_of(job)
    # the verdict and climate kept for the Jobs list are answers, not weather
    weather = {k: v for k, v in values.items() if k not in ("verdict", "climate")}
    out = climate({"id": job["id"], "motif": key, "start_ns": job["start_ns"], "values": values}, t.starts[rows],
                  t.x[rows], list(UMAMI_ROWS), "fraction_of_peak", stored=stored)
    out["source"] = source
    out["fs"] = name
    if weather.get("no_data"):
        out["verdict"] = _no_data_verdict(name)
    out["weather"] = weather
    return out


def _no_data_verdict(fs: str) -> str:
    return f"no data: no telemetry for {fs} in the job's window"


def stored_verdicts(store, log_hashes: list[str]) -> dict[str, str]:
    """{log hash: weather verdict} of the Darshan jobs among `log_hashes` with a stored one: the verdict
    kept when their UMAMI was last computed, or "no data" when their window had no telemetry. Reads
    the store only, by key: the Jobs list never computes a weather."""
    from ioweather.store import job_weather as wstore

    out: dict[str, str] = {}
    for r in wstore.of_jobs(store, [f"darshan:{h}" for h in log_hashes]):
        v = r["doc"].get("verdict") or (_no_data_verdict(r["fs"]) if r["doc"].get("no_data") else None)
        if v is not None:
            out.setdefault(r["job_key"][len("darshan:"):], v)
    return out
