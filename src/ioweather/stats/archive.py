"""Cross-job views of a center's Darshan archive (Carns et al. 2011, sections III and V).

Input: the jobs table as a DataFrame (one row per job, columns of
`store.jobs.darshan_jobs`). Output: plain dicts/lists for JSON, tables and plots.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ioweather.stats.archive_columns import parse_project_map  # noqa: F401 (re-exported)
from ioweather.stats.grouped import quantile_sorted, sort_groups

MiB = 1024 * 1024

#: Job-size classes by process count (lower bounds); the paper's partitions start at 1024 processes.
SIZE_EDGES = (1, 2, 64, 1024, 4096, 16384, 65536)
SIZE_LABELS = ("1", "2-63", "64-1023", "1024-4095", "4096-16383", "16384-65535", "65536+")
#: Interfaces shown by job size, with the letters of the paper's Table II.
INTERFACES = {"POSIX": ("posix", "P"), "STDIO": ("stdio", "S"), "MPI-IO": ("mpiio", "M"), "HDF5": ("h5d", "H"),
              "PnetCDF": ("pnetcdf", "N"), "DFS": ("dfs", "D"), "DAOS": ("daos", "O")}


def size_class(nprocs: pd.Series | np.ndarray) -> np.ndarray:
    idx = np.searchsorted(np.array(SIZE_EDGES), np.asarray(nprocs, dtype=np.int64), side="right") - 1
    return np.array(SIZE_LABELS, dtype=object)[np.clip(idx, 0, len(SIZE_LABELS) - 1)]


def _bytes(df: pd.DataFrame, prefix: str) -> np.ndarray:
    r = pd.to_numeric(df[f"{prefix}_bytes_read"], errors="coerce").fillna(0).to_numpy(np.float64)
    w = pd.to_numeric(df[f"{prefix}_bytes_written"], errors="coerce").fillna(0).to_numpy(np.float64)
    return r + w


def _used(df: pd.DataFrame, module_names: str) -> np.ndarray:
    mods = ("," + df["modules"].fillna("").astype(str) + ",")
    return mods.str.contains("," + module_names + ",", regex=False).to_numpy(dtype=bool)


def interfaces_by_size(df: pd.DataFrame) -> list[dict]:
    """Per job-size class: number of jobs, jobs using each interface, and bytes moved through it."""
    cls = size_class(df["nprocs"])
    used = {"POSIX": _used(df, "POSIX"), "STDIO": _used(df, "STDIO"), "MPI-IO": _used(df, "MPI-IO"),
            "HDF5": _used(df, "H5F") | _used(df, "H5D"),
            "PnetCDF": _used(df, "PNETCDF_FILE") | _used(df, "PNETCDF_VAR"),
            "DFS": _used(df, "DFS"), "DAOS": _used(df, "DAOS")}
    byts = {name: _bytes(df, prefix) for name, (prefix, _) in INTERFACES.items()}
    out = []
    for label in SIZE_LABELS:
        sel = cls == label
        if not sel.any():
            continue
        row = {"size_class": label, "jobs": int(sel.sum()), "jobs_using": {}, "bytes": {}}
        for name in INTERFACES:
            row["jobs_using"][name] = int((used[name] & sel).sum())
            row["bytes"][name] = int(byts[name][sel].sum())
        out.append(row)
    return out


def strategy_by_size(df: pd.DataFrame) -> list[dict]:
    """Per job-size class: I/O strategy (unique / shared / partially shared) by jobs and by bytes.

    A job counts once per strategy it uses; `dominant` counts each job once, under
    the strategy that moved most of its bytes.
    """
    cls = size_class(df["nprocs"])
    kinds = ("unique", "shared", "partially_shared")
    files = np.column_stack([df[f"{k}_files"].fillna(0).to_numpy(np.int64) for k in kinds]) if len(df) \
        else np.zeros((0, 3), np.int64)
    byts = np.column_stack([df[f"{k}_bytes"].fillna(0).to_numpy(np.float64) for k in kinds]) if len(df) \
        else np.zeros((0, 3))
    moved = byts.sum(axis=1) > 0
    dominant = np.where(moved, np.argmax(byts, axis=1), -1)
    out = []
    for label in SIZE_LABELS:
        sel = cls == label
        if not sel.any():
            continue
        out.append({"size_class": label, "jobs": int(sel.sum()),
                    "jobs_using": {k: int(((files[:, i] > 0) & sel).sum()) for i, k in enumerate(kinds)},
                    "dominant": {k: int(((dominant == i) & sel).sum()) for i, k in enumerate(kinds)},
                    "bytes": {k: int(byts[sel, i].sum()) for i, k in enumerate(kinds)}})
    return out


def top_n(df: pd.DataFrame, key: str, n: int = 10) -> dict:
    """Top `n` values of column `key` by bytes read and by bytes written."""
    if not len(df):
        return {"by_bytes_read": [], "by_bytes_written": []}
    g = df.groupby(key, sort=False).agg(jobs=("log_hash", "size"), bytes_read=("bytes_read", "sum"),
                                          bytes_written=("bytes_written", "sum"))
    out = {}
    for col in ("bytes_read", "bytes_written"):
        top = g.sort_values(col, ascending=False, kind="stable").head(n)
        out[f"by_{col}"] = [{key: (str(k) if not isinstance(k, (int, np.integer)) else int(k)), "jobs": int(r.jobs),
                             "bytes_read": int(r.bytes_read), "bytes_written": int(r.bytes_written)}
                            for k, r in top.iterrows()]
    return out


def files_vs_procs(df: pd.DataFrame) -> list[dict]:
    """Files per job against processes, per size class: quantiles of files and files per process."""
    cls = size_class(df["nprocs"])
    out = []
    for label in SIZE_LABELS:
        sel = cls == label
        if not sel.any():
            continue
        f = df.loc[sel, "files"].fillna(0).to_numpy(np.float64)
        per = f / np.maximum(df.loc[sel, "nprocs"].to_numpy(np.float64), 1)
        out.append({"size_class": label, "jobs": int(sel.sum()), "jobs_without_files": int((f == 0).sum()),
                    "files_median": float(np.median(f)), "files_p90": float(np.quantile(f, 0.9)),
                    "files_max": int(f.max()), "files_per_process_median": float(np.median(per)),
                    "files_per_process_max": float(per.max())})
    return out


def node_counts(df: pd.DataFrame, cores_per_node: int | None) -> np.ndarray:
    """Compute-node count per job: from the log when known, else ceil(nprocs / cores_per_node), else NaN."""
    n = pd.to_numeric(df["nnodes"], errors="coerce").to_numpy(np.float64)
    if cores_per_node:
        est = np.ceil(np.maximum(df["nprocs"].to_numpy(np.float64), 1) / cores_per_node)
        n = np.where(np.isfinite(n) & (n > 0), n, est)
    return n


def mibps_per_node_by_project(df: pd.DataFrame, projects: np.ndarray, cores_per_node: int | None,
                              min_procs: int, min_bytes: int) -> dict:
    """Box-plot statistics (min, Q1, median, Q3, max) of MiB/s/CN per project.

    Only jobs with at least `min_procs` processes that moved at least `min_bytes`
    (Carns et al.: 1024 processes, 500 MiB). Quantiles are numpy's linear (R type 7).
    """
    nodes = node_counts(df, cores_per_node)
    moved = df["bytes_read"].fillna(0).to_numpy(np.float64) + df["bytes_written"].fillna(0).to_numpy(np.float64)
    mibps = pd.to_numeric(df["mibps"], errors="coerce").to_numpy(np.float64)
    per_node = mibps / nodes
    keep = (df["nprocs"].to_numpy(np.int64) >= min_procs) & (moved >= min_bytes)
    no_nodes = keep & ~np.isfinite(nodes)
    keep &= np.isfinite(per_node)
    result = {"jobs_in_filter": int(((df["nprocs"].to_numpy(np.int64) >= min_procs) & (moved >= min_bytes)).sum()),
              "jobs_without_node_count": int(no_nodes.sum()), "projects": []}
    if not keep.any():
        return result
    keys, starts, counts, v = sort_groups(np.asarray(projects, dtype=object)[keep].astype(str), per_node[keep])
    q = {name: quantile_sorted(v, starts, counts, p, min_count=1)
         for name, p in (("min", 0.0), ("q1", 0.25), ("median", 0.5), ("q3", 0.75), ("max", 1.0))}
    rows = [{"project": str(k), "jobs": int(c), **{name: float(q[name][i]) for name in q}}
            for i, (k, c) in enumerate(zip(keys, counts))]
    rows.sort(key=lambda r: -r["median"])
    result["projects"] = rows
    return result


def project_table(df: pd.DataFrame, projects: np.ndarray, cores_per_node: int | None) -> list[dict]:
    """Key characteristics per project (the paper's Table V): averages across the project's jobs."""
    if not len(df):
        return []
    num = lambda c: pd.to_numeric(df[c], errors="coerce").to_numpy(np.float64)  # noqa: E731
    moved = np.nan_to_num(num("bytes_read")) + np.nan_to_num(num("bytes_written"))
    io_t = np.nan_to_num(num("read_time_s")) + np.nan_to_num(num("write_time_s")) + np.nan_to_num(num("meta_time_s"))
    d = pd.DataFrame({
        "project": projects, "uid": df["uid"].to_numpy(), "nprocs": num("nprocs"),
        "bytes_read": np.nan_to_num(num("bytes_read")), "bytes_written": np.nan_to_num(num("bytes_written")),
        "mibps_per_node": num("mibps") / node_counts(df, cores_per_node),
        "meta_share": np.where(io_t > 0, np.nan_to_num(num("meta_time_s")) / np.where(io_t > 0, io_t, 1), np.nan),
        "io_fraction": num("io_fraction"), "files": np.nan_to_num(num("files")),
        "key": num("common_access_bytes"),
        **{f"{k}_share": np.where(moved > 0, np.nan_to_num(num(f"{k}_bytes")) / np.where(moved > 0, moved, 1), np.nan)
           for k in ("unique", "shared", "partially_shared")},
        **{f"api_{letter}": _bytes(df, prefix) > 0 for _, (prefix, letter) in INTERFACES.items()},
    })
    g = d.groupby("project", sort=False)
    agg = g.agg(jobs=("uid", "size"), users=("uid", "nunique"), nprocs_mean=("nprocs", "mean"),
                bytes_read=("bytes_read", "sum"), bytes_written=("bytes_written", "sum"),
                mibps_per_node_mean=("mibps_per_node", "mean"), meta_time_share_mean=("meta_share", "mean"),
                io_fraction_mean=("io_fraction", "mean"), files_per_job_mean=("files", "mean"),
                unique_bytes_share_mean=("unique_share", "mean"), shared_bytes_share_mean=("shared_share", "mean"),
                partially_shared_bytes_share_mean=("partially_shared_share", "mean"),
                **{f"api_{letter}": (f"api_{letter}", "any") for _, (_, letter) in INTERFACES.items()})
    # most common key access size per project
    kk = d.dropna(subset=["key"]).groupby(["project", "key"], sort=False).size().reset_index(name="n")
    kk = kk.sort_values(["project", "n", "key"], ascending=[True, False, True]).drop_duplicates("project")
    key_of = dict(zip(kk["project"], kk["key"]))
    rows = []
    for proj, r in agg.iterrows():
        rows.append({
            "project": str(proj), "jobs": int(r["jobs"]), "users": int(r["users"]), "nprocs_mean": float(r["nprocs_mean"]),
            "bytes_read": int(r["bytes_read"]), "bytes_written": int(r["bytes_written"]),
            **{k: _finite(r[k]) for k in ("mibps_per_node_mean", "meta_time_share_mean", "io_fraction_mean",
                                          "unique_bytes_share_mean", "shared_bytes_share_mean",
                                          "partially_shared_bytes_share_mean")},
            "files_per_job_mean": float(r["files_per_job_mean"]),
            "key_access_bytes": int(key_of[proj]) if proj in key_of else None,
            "interfaces": "".join(letter for _, (_, letter) in INTERFACES.items() if r[f"api_{letter}"]),
        })
    # columns in the order of the original table
    order = ["project", "jobs", "users", "nprocs_mean", "bytes_read", "bytes_written", "mibps_per_node_mean",
             "meta_time_share_mean", "io_fraction_mean", "files_per_job_mean", "unique_bytes_share_mean",
             "shared_bytes_share_mean", "partially_shared_bytes_share_mean", "key_access_bytes", "interfaces"]
    rows = [{k: r[k] for k in order} for r in rows]
    rows.sort(key=lambda r: -(r["bytes_read"] + r["bytes_written"]))
    return rows


def _finite(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def summary(df: pd.DataFrame, projects: np.ndarray, *, cores_per_node: int | None = None,
            min_procs: int = 1024, min_bytes: int = 500 * MiB, top: int = 10, users=None) -> dict:
    """Every cross-job view at once (the body of `ioweather jobs summary --json`). `users`: each row's user
    as every surface names it (the service's resolver); the uid as text without it."""
    d = df.copy()
    d["project"] = projects
    d["user"] = list(users) if users is not None else d["uid"].astype("Int64").astype(str)
    d["exe_name"] = d["exe"].fillna("").map(lambda e: e.split()[0].rsplit("/", 1)[-1] if e.strip() else "")
    return {
        "jobs": int(len(d)),
        "bytes_read": int(d["bytes_read"].fillna(0).sum()) if len(d) else 0,
        "bytes_written": int(d["bytes_written"].fillna(0).sum()) if len(d) else 0,
        "filters": {"min_procs": min_procs, "min_bytes": min_bytes, "cores_per_node": cores_per_node},
        "interfaces_by_size": interfaces_by_size(d),
        "strategy_by_size": strategy_by_size(d),
        "top_projects": top_n(d, "project", top),
        "top_users": top_n(d, "user", top),
        "top_executables": top_n(d, "exe_name", top),
        "files_vs_procs": files_vs_procs(d),
        "mibps_per_node_by_project": mibps_per_node_by_project(d, projects, cores_per_node, min_procs, min_bytes),
        "projects": project_table(d, projects, cores_per_node),
    }


# ---------------------------------------------------------------------------
# projects

def assign_projects(df: pd.DataFrame, rules: list[tuple[str, str, str]], users: list[str]) -> np.ndarray:
    """Project of each job: the longest matching path prefix (of its top file, then its exe), then its uid
    rule, else `user:<name>`, `users[i]` the name of job i's user as the caller names users on every other
    surface (a default project of 'user:0' beside the user 'root' was one user under two names)."""
    uid_map = {k: p for kind, k, p in rules if kind == "uid"}
    prefixes = sorted(((k, p) for kind, k, p in rules if kind == "path"), key=lambda kp: -len(kp[0]))
    out = np.empty(len(df), dtype=object)
    tops = df["top_file"].fillna("").to_numpy() if "top_file" in df else np.full(len(df), "")
    exes = df["exe"].fillna("").to_numpy()
    uids = df["uid"].to_numpy()
    cache: dict = {}
    for i in range(len(df)):
        key = (tops[i], exes[i], uids[i])
        if key in cache:
            out[i] = cache[key]
            continue
        proj = None
        for text in (tops[i], exes[i].split(" ")[0] if exes[i] else ""):
            for pre, p in prefixes:
                if text == pre or text.startswith(pre.rstrip("/") + "/"):
                    proj = p
                    break
            if proj:
                break
        if proj is None:
            proj = uid_map.get(str(int(uids[i]))) if pd.notna(uids[i]) else None
        out[i] = cache[key] = proj or f"user:{users[i]}"
    return out
