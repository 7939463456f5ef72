"""A job's weather (METHODS.md section 7): the joins of a job's window with our telemetry, `lfs df`
fullness, probes and the scheduler's other jobs, stored per job and recomputed when its window's
telemetry changes.

Window: the job's start to its end plus a 5 s tail (stats.coverage.TAIL_S), from its Darshan log.
Only that window's telemetry is read (store/job_telemetry.py says how). Motif: executable name +
node count + dominant direction + file system. The file system of a Darshan job is --fs, else the
only file system with telemetry, else the one whose name is the last component of a mount point the
job wrote to.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

from ioweather.errors import UserError
from ioweather.stats import coverage as cov

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


def _job_from_darshan(row: dict, files: pd.DataFrame | None) -> dict:
    posix = files[files["module"] == "POSIX"] if files is not None and len(files) else None
    osts = None
    if posix is not None and "ost_ids" in posix.columns:
        ids = set()
        for v in posix["ost_ids"].dropna():
            # the per-file table stores "0,3,7" (stats/job.py); a string is iterable, so never iterate it
            parts = str(v).split(",") if isinstance(v, str | int | np.integer) else v
            ids.update(int(x) for x in parts if str(x).strip())
        osts = sorted(ids) or None
    sums = None if posix is None else {k: int(posix[k].sum()) for k in ("reads", "writes", "opens")}
    mounts = sorted({str(m) for m in files["mount"].dropna()}) if files is not None and "mount" in files else []
    return _job_dict(row, sums, mounts, osts)


def _job_dict(row: dict, posix: dict | None, mounts: list[str], osts: list[int] | None) -> dict:
    """A Darshan job for the weather from its stored row and the sums of its POSIX records."""
    br = row.get("posix_bytes_read") if row.get("posix_bytes_read") is not None else row.get("bytes_read")
    bw = row.get("posix_bytes_written") if row.get("posix_bytes_written") is not None else row.get("bytes_written")
    return {"key": f"darshan:{row['log_hash']}", "id": row["log_hash"][:12], "jobid": row.get("jobid"),
            "exe": os.path.basename(str(row.get("exe") or "?").split()[0]), "nnodes": row.get("nnodes") or row.get("nprocs"),
            "start_ns": int(row["start_ns"]), "end_ns": int(row["end_ns"]),
            "bytes_read": br, "bytes_written": bw,
            "read_ops": None if posix is None else posix["reads"],
            "write_ops": None if posix is None else posix["writes"],
            "opens": None if posix is None else posix["opens"],
            "osts": osts, "perf_bps": (row.get("agg_perf_by_slowest_mibps") or np.nan) * MIB, "mounts": mounts}


def find_job(store, job_id: str) -> dict | None:
    """A Darshan job by job id or log-hash prefix, else a scheduler job by id; None when neither knows it."""
    from ioweather.store import jobs as jstore

    hit = None
    if job_id.isdigit():
        rows = jstore.load_jobs(store, ["log_hash", "jobid", "ingested_ns"])
        rows = rows[rows["jobid"].astype("Int64") == int(job_id)] if len(rows) else rows
        if len(rows):
            hit = jstore.job(store, store.parquet_dir, rows.sort_values("ingested_ns").iloc[-1]["log_hash"])
    if hit is None and re.fullmatch(r"[0-9a-f]{6,64}", job_id):
        hit = jstore.job(store, store.parquet_dir, job_id)
    if hit is not None:
        row, files = hit
        if row.get("start_ns") is None or row.get("end_ns") is None:
            raise UserError(f"job {job_id}: its Darshan log has no start or end time")
        return _job_from_darshan(row, files)
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


def choose_fs(store, job: dict, fs: str | None) -> str:
    from ioweather.store.job_telemetry import known_fs

    names = known_fs(store.parquet_dir)
    if fs:
        return fs
    if len(names) == 1:
        return names[0]
    by_mount = [n for n in names if any(os.path.basename(m.rstrip("/")) == n for m in job.get("mounts", []))]
    if len(by_mount) == 1:
        return by_mount[0]
    raise UserError(f"which file system did job {job['id']} use? give --fs (with telemetry: {', '.join(names) or 'none'})")


def direction(job: dict) -> str:
    r, w = job.get("bytes_read") or 0, job.get("bytes_written") or 0
    return "write" if w > r else "read"


def motif(job: dict, fs: str) -> str:
    return f"{job['exe']} / {job.get('nnodes') or '?'} nodes / {direction(job)} / {fs}"


# ----------------------------------------------------------------------------- weather

def _amounts(rows: pd.DataFrame, since: int, until: int) -> dict:
    def amount(metric=None, prefix=None):
        sel = rows[rows["metric"] == metric] if metric else rows[rows["metric"].str.startswith(prefix)]
        return cov.window_amount(sel["time_ns"], sel["interval_s"], sel["value"], since, until)

    return {"bytes_read": amount("read_bytes"), "bytes_written": amount("write_bytes"),
            "read_ops": amount("read_ops"), "write_ops": amount("write_ops"),
            "opens": amount("md_open"), "stats": amount("md_getattr"), "md_ops": amount(prefix="md_")}


def _on_targets(rows: pd.DataFrame, osts: list[int]) -> pd.DataFrame:
    want = {f"{i:04x}" for i in osts}
    ids = rows["target"].astype(str).str.extract(_OST, expand=False).str.lower()
    return rows[ids.isin(want)]


def compute(store, job: dict, fs: str, con=None, probes: ProbeBaselines | None = None) -> dict:
    """The weather document of `job` on `fs` (metrics, with None for what is unknown, and notes);
    `probes` shares the probe baselines between the jobs of one call."""
    from ioweather.store import job_telemetry as jt

    since = job["start_ns"]
    until = (job["end_ns"] if job.get("end_ns") is not None else since) + int(cov.TAIL_S * 1e9)
    notes = []
    rows = jt.window_rows(store.parquet_dir, fs, since, until, WINDOW_METRICS, ("md_",), con=con)
    doc: dict = {m: None for m in UMAMI_ROWS if m != "fraction_of_peak"}
    doc["window_start_ns"], doc["window_end_ns"] = since, until
    doc["performance_bps"] = None if not np.isfinite(job.get("perf_bps", np.nan)) else float(job["perf_bps"])
    byte_rows = rows[rows["metric"].isin(["read_bytes", "write_bytes"])]
    if byte_rows.empty:
        doc["no_data"] = True
        notes.append(f"no telemetry for {fs} in the job's window")
    else:
        doc["no_data"] = False
        fs_all = _amounts(rows, since, until)
        job_amounts = {k: job.get(k) for k in ("bytes_read", "bytes_written", "read_ops", "write_ops", "opens")}
        job_amounts = {k: v for k, v in job_amounts.items() if v is not None}
        every = cov.coverage_factors(job_amounts, fs_all)
        own = rows
        doc["cf_variant"] = "all targets"
        if job.get("osts"):
            sel = _on_targets(rows, job["osts"])
            if not sel.empty:
                # the paper's variant: only the servers the job used (MDS ops stay file-system wide)
                own = pd.concat([sel, rows[rows["metric"].str.startswith("md_")]])
                doc["cf_variant"] = "job's targets"
        chosen = cov.coverage_factors(job_amounts, _amounts(own, since, until)) if own is not rows else every
        doc.update(chosen)
        doc.update({f"{k}_all_targets": v for k, v in every.items() if k.startswith("coverage_factor_")
                    and not k.endswith("_flagged")})
        span_s = (until - since) / 1e9
        doc["md_ops_per_s"] = None if fs_all["md_ops"] is None else fs_all["md_ops"] / span_s
        doc["fs_bytes"] = None if fs_all["bytes_read"] is None else fs_all["bytes_read"] + (fs_all["bytes_written"] or 0)
        cpu = rows[rows["metric"] == "cpu_pct"]["value"].to_numpy(float)
        doc["server_cpu_pct"] = float(np.nanmean(cpu)) if np.isfinite(cpu).any() else None
        n_targets = byte_rows["target"].nunique()
        doc["missing_fraction"] = cov.missing_fraction(byte_rows["time_ns"], byte_rows["interval_s"], byte_rows["value"],
                                                       since, until, 2 * n_targets)
    doc["fullest_ost_pct"], doc["fullest_ost"] = _fullest(store, fs, since, con)
    doc.update(_concurrency(store, job, since, until, notes))
    doc["probe_slowdown"], doc["probe_slowdown_by_op"] = _probe_slowdown(probes or ProbeBaselines(store), since, until)
    doc["notes"] = notes
    return doc


def _fullest(store, fs: str, at_ns: int, con) -> tuple[float | None, str | None]:
    from ioweather.store import job_telemetry as jt

    g = jt.gauges_before(store.parquet_dir, fs, at_ns, ["capacity_bytes", "free_bytes"], con=con)
    if g.empty:
        return None, None
    w = g.pivot_table(index="target", columns="metric", values="value", aggfunc="last")
    if "capacity_bytes" not in w or "free_bytes" not in w:
        return None, None
    osts = [t for t in w.index if "OST" in str(t)] or list(w.index)
    w = w.loc[osts]
    used = (1 - w["free_bytes"] / w["capacity_bytes"]) * 100
    used = used[np.isfinite(used)]
    if used.empty:
        return None, None
    return float(used.max()), str(used.idxmax())


def _concurrency(store, job: dict, since: int, until: int, notes: list) -> dict:
    out = {"concurrent_jobs": None, "concurrent_node_hours": None, "coverage_factor_nodehrs": None}
    sched = _scheduler()
    if sched is None:
        notes.append("no scheduler data in this ioweather (concurrent jobs unknown)")
        return out
    others = sched.jobs_overlapping(store, since, until)
    if not others:
        notes.append("no scheduler jobs in the window")
        return out
    me = str(job.get("jobid")) if job.get("jobid") is not None else None
    if me is not None and not any(str(o["jobid"]) == me for o in others):
        notes.append(f"job id {me} is not in the scheduler data")
    total_nh, mine_nh, n = 0.0, None, 0
    for o in others:
        lo = max(since, int(o["start_ns"]))
        hi = min(until, int(o["end_ns"]) if o.get("end_ns") is not None else until)
        nh = max(0, hi - lo) / 3.6e12 * (o.get("nnodes") or 0)
        total_nh += nh
        if me is not None and str(o["jobid"]) == me:
            mine_nh = nh
        else:
            n += 1
    out["concurrent_jobs"] = n
    out["concurrent_node_hours"] = total_nh - (mine_nh or 0.0)
    out["coverage_factor_nodehrs"] = cov.coverage_factor(mine_nh, total_nh) if mine_nh is not None else None
    return out


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


def _probe_slowdown(probes: ProbeBaselines, since: int, until: int) -> tuple[float | None, dict | None]:
    """Each probed op's median duration over the window ÷ its baseline median (every target's median
    slowdown per op, then the median over targets); the worst op and all ops; None without probes."""
    from ioweather.stats.probe import baseline_medians
    from ioweather.store import probe as probe_store

    by_op: dict = {}
    for t in probes.targets:
        win = probe_store.read_samples(probes.store, t, since_ns=since, until_ns=until)
        if not len(win["op"]):
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

def ensure(store, jobs: list[dict], fs: str, sigs=None, con=None) -> dict[str, dict]:
    """{job key: weather row} for `jobs` on `fs`, computing those missing or stale (their window's
    telemetry signature changed) and storing them in one transaction."""
    from ioweather.store import job_telemetry as jt
    from ioweather.store import job_weather as wstore
    from ioweather.store.telemetry_layout import connect_duckdb

    sigs = sigs or jt.WindowSignatures(store.parquet_dir)
    stored = {r["job_key"]: r for r in wstore.all_rows(store, fs)}
    out, fresh = {}, []
    probes = None  # read only when some weather is computed
    own = con is None
    con = con or connect_duckdb(threads=1)
    try:
        for job in jobs:
            end = job["end_ns"] if job.get("end_ns") is not None else job["start_ns"]
            sig = sigs.window(fs, job["start_ns"], end + int(cov.TAIL_S * 1e9))
            have = stored.get(job["key"])
            if have is not None and have["telemetry_sig"] == sig and not job.get("running"):
                out[job["key"]] = have
                continue
            row = {"job_key": job["key"], "fs": fs, "motif": motif(job, fs), "start_ns": job["start_ns"],
                   "end_ns": end, "telemetry_sig": sig, "doc": None}
            probes = probes or ProbeBaselines(store)
            row["doc"] = compute(store, job, fs, con, probes)
            fresh.append(row)
            out[job["key"]] = row
    finally:
        if own:
            con.close()
    running = {j["key"] for j in jobs if j.get("running")}  # a running job's window still grows: not stored
    wstore.put_many(store, [r for r in fresh if r["job_key"] not in running])
    return out


def darshan_jobs(store) -> list[dict]:
    """Every Darshan job with a window, with the per-file sums of its POSIX records."""
    from ioweather.store import jobs as jstore

    rows = jstore.load_jobs(store, ["log_hash", "jobid", "exe", "nnodes", "nprocs", "start_ns", "end_ns", "bytes_read",
                                    "bytes_written", "posix_bytes_read", "posix_bytes_written",
                                    "agg_perf_by_slowest_mibps"])
    rows = rows[rows["start_ns"].notna() & rows["end_ns"].notna()]
    if rows.empty:
        return []
    files = jstore.file_rows(store, store.parquet_dir)
    sums, mounts = {}, {}
    if files is not None:
        # one group-by for every job: filtering the table per job cost 5 ms a job (50 s for 10,000)
        f = files.select([c for c in ("log_hash", "module", "reads", "writes", "opens", "mount")
                          if c in files.column_names]).to_pandas()
        posix = f[f["module"] == "POSIX"].groupby("log_hash")[["reads", "writes", "opens"]].sum()
        # a job with records but none of POSIX did no POSIX operation (0), one without records is unknown
        sums = {h: {"reads": 0, "writes": 0, "opens": 0} for h in f["log_hash"].unique()}
        sums.update({h: {k: int(v) for k, v in r.items()} for h, r in posix.to_dict("index").items()})
        if "mount" in f.columns:
            mounts = {h: sorted({str(x) for x in m}) for h, m in f.dropna(subset=["mount"]).groupby("log_hash")["mount"]}
    out = []
    for r in rows.to_dict("records"):
        r = {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()}
        out.append(_job_dict(r, sums.get(r["log_hash"]), mounts.get(r["log_hash"], []), None))
    return out


def refresh_all(store, fs: str | None = None) -> dict:
    """Compute the weather of every Darshan job whose window's telemetry changed; {computed, kept, skipped}."""
    from ioweather.store import job_telemetry as jt
    from ioweather.store import job_weather as wstore

    jobs = darshan_jobs(store)
    before = {(r["job_key"], r["fs"]): r["computed_ns"] for r in wstore.all_rows(store)}
    groups: dict[str, list] = {}
    skipped = 0
    for j in jobs:
        try:
            groups.setdefault(choose_fs(store, j, fs), []).append(j)
        except UserError:
            skipped += 1
    sigs = jt.WindowSignatures(store.parquet_dir)
    computed = 0
    for name, js in groups.items():
        res = ensure(store, js, name, sigs)
        computed += sum(1 for k, r in res.items() if r.get("computed_ns") is None or before.get((k, name)) != r.get("computed_ns"))
    return {"jobs": len(jobs), "computed": computed, "kept": len(jobs) - computed - skipped, "skipped": skipped}


def _with_fraction_of_peak(rows: list[dict]) -> pd.DataFrame:
    from ioweather.stats.umami import fraction_of_peak

    recs = [{"job_key": r["job_key"], "fs": r["fs"], "motif": r["motif"], "start_ns": r["start_ns"], **r["doc"]} for r in rows]
    df = pd.DataFrame.from_records(recs)
    if df.empty:
        return df
    df["performance_bps"] = pd.to_numeric(df.get("performance_bps"), errors="coerce")
    df["fraction_of_peak"] = fraction_of_peak(df["performance_bps"].to_numpy(float), df["motif"].tolist())
    for c in [c for c in df.columns if c.startswith("coverage_factor_") and not c.endswith("_flagged")]:
        df.loc[df[c] > cov.CF_MAX_PLAUSIBLE, c] = np.nan  # clock skew or missing samples: out of the statistics
    return df


def weather_frame(store, fs: str | None = None, motif: str | None = None) -> pd.DataFrame:
    """Every stored job weather (refreshed first) as a table with fraction of peak per motif."""
    from ioweather.store import job_weather as wstore

    refresh_all(store, fs)
    df = _with_fraction_of_peak(wstore.all_rows(store, fs))
    if not df.empty and motif:
        df = df[df["motif"] == motif]
    return df.drop(columns=[c for c in ("notes", "probe_slowdown_by_op", "fullest_ost", "cf_variant", "no_data",
                                        "verdict")
                            if c in df.columns]) if not df.empty else df


def umami_for_job(store, job_id: str, fs: str | None = None) -> dict | None:
    """The UMAMI document of a Darshan or scheduler job; None when neither knows `job_id`."""
    job = find_job(store, job_id)
    if job is None:
        return None
    name = choose_fs(store, job, fs)
    key = motif(job, name)
    peers = [j for j in darshan_jobs(store) if motif(j, name) == key]
    return umami_among(store, job, name, peers, "darshan" if job["key"].startswith("darshan:") else "scheduler")


def umami_among(store, job: dict, name: str, peers: list[dict], source: str) -> dict:
    """The UMAMI document of `job` on file system `name` against `peers` (jobs of its motif, any kind:
    Darshan, scheduler or benchmark runs), their weather computed or refreshed first."""
    from ioweather.services.umami import climate
    from ioweather.store import job_weather as wstore

    key = motif(job, name)
    peers = [j for j in peers if j["key"] != job["key"]] + [job]
    ensure(store, peers, name)
    df = _with_fraction_of_peak([r for r in wstore.all_rows(store, name) if r["motif"] == key])
    mine = df[df["job_key"] == job["key"]]
    if mine.empty:  # a running job is not stored: compute it for this answer only
        doc = ensure(store, [job], name)[job["key"]]["doc"]
        values = {**doc, "fraction_of_peak": None}
    else:
        # a table cell of a metric this job lacks is NaN: the job's own value is "unknown", None
        values = {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in mine.iloc[0].to_dict().items()}
    history = df[(df["job_key"] != job["key"]) & (df["start_ns"] < job["start_ns"])]
    metrics = list(UMAMI_ROWS)
    # the verdict kept for the Jobs list is an answer, not weather
    weather = {k: v for k, v in values.items() if k not in ("job_key", "fs", "motif", "verdict")}
    out = climate({"id": job["id"], "motif": key, "start_ns": job["start_ns"], "values": values}, history, metrics,
                  "fraction_of_peak")
    out["source"] = source
    out["fs"] = name
    if weather.get("no_data"):
        out["verdict"] = _no_data_verdict(name)
    out["weather"] = weather
    if not mine.empty:
        _keep_verdict(store, job["key"], name, out["verdict"])
    return out


def _no_data_verdict(fs: str) -> str:
    return f"no data: no telemetry for {fs} in the job's window"


def _keep_verdict(store, job_key: str, fs: str, verdict: str) -> None:
    """Store the verdict with the job's weather for the Jobs list (which must not compute it). A
    recomputed weather replaces the row and so drops a verdict its new telemetry may have changed."""
    from ioweather.store import job_weather as wstore

    row = wstore.get(store, job_key, fs)
    if row is not None and row["doc"].get("verdict") != verdict:
        wstore.put_many(store, [{**row, "doc": {**row["doc"], "verdict": verdict}}])


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
