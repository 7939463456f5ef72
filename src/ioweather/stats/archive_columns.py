"""The cross-job views of a center's Darshan archive (Carns et al. 2011, sections III and V), on the stored
columns with numpy: the body of `jobs summary --json` and of the Jobs page's summary, one implementation.

Every caller goes through services/jobs/archive_light.py `summary_of_columns`: the command on the embedded
SQLite store (read with `sqlite3`, no pandas: its import was 0.8 s of the command's ~1.0 s, issue 40), and
the store's door (a server database, the Jobs page, `?fs=`), whose `store.jobs.load_jobs` DataFrame hands
its columns over as typed. The numbers are pandas' numbers, as the DataFrame computation this replaced gave
them: the columns typed as `pandas.DataFrame.from_records` types the store's rows (`column`: int64 when
every value is an int, else float64 with NaN for NULL), stable descending sorts (ties in the order of their first row by log_hash),
and grouped sums and means Kahan-compensated as pandas' Cython does (`kahan_sums`, skipping NaN, with its
reset of a NaN compensation so that an infinite value stays infinite). tests/test_archive_columns.py checks
the answer against a recomputation of its own (SQL and pandas) on stores of the public logs and on planted
NULLs, infinities, ties and rows whose compensated sums differ from naive ones.

Input: `cols`, {column of store.jobs.SUMMARY_COLUMNS: the stored values in log_hash order} (`column` types
the numeric ones; text columns as lists, None for NULL). Output: plain dicts and lists for JSON, tables, plots.
"""

from __future__ import annotations

import numpy as np

from ioweather.stats.grouped import quantile_sorted, sort_groups

MiB = 1024 * 1024

#: Job-size classes by process count (lower bounds); the paper's partitions start at 1024 processes.
SIZE_EDGES = (1, 2, 64, 1024, 4096, 16384, 65536)
SIZE_LABELS = ("1", "2-63", "64-1023", "1024-4095", "4096-16383", "16384-65535", "65536+")
#: Interfaces shown by job size, with the letters of the paper's Table II.
INTERFACES = {"POSIX": ("posix", "P"), "STDIO": ("stdio", "S"), "MPI-IO": ("mpiio", "M"), "HDF5": ("h5d", "H"),
              "PnetCDF": ("pnetcdf", "N"), "DFS": ("dfs", "D"), "DAOS": ("daos", "O")}


def column(values) -> np.ndarray:
    """A stored numeric column as `DataFrame.from_records` types it: int64 when every value is an int, else
    float64 with NaN for NULL (a column of NULLs only is object there; every use here coerces it to NaN or 0).
    An int64 or float64 array is that typing already (a DataFrame's column, kept as the frame typed it)."""
    if isinstance(values, np.ndarray) and values.dtype in (np.int64, np.float64):
        return values
    values = list(values)
    if values and None not in values:
        a = np.array(values)
        if a.dtype == np.int64 or a.dtype == np.float64:
            return a
    return np.array(values, dtype=np.float64)  # None -> NaN


def _filled(a: np.ndarray) -> np.ndarray:
    """`fillna(0)` as float64."""
    a = a.astype(np.float64)
    return np.where(np.isnan(a), 0.0, a)


def _text(values) -> list[str]:
    """`fillna("")` of a text column."""
    return ["" if v is None or (isinstance(v, float) and v != v) else v for v in values]


def size_class(nprocs: np.ndarray) -> np.ndarray:
    idx = np.searchsorted(np.array(SIZE_EDGES), np.asarray(nprocs, dtype=np.int64), side="right") - 1
    return np.array(SIZE_LABELS, dtype=object)[np.clip(idx, 0, len(SIZE_LABELS) - 1)]


def _bytes(c: dict, prefix: str) -> np.ndarray:
    return _filled(c[f"{prefix}_bytes_read"]) + _filled(c[f"{prefix}_bytes_written"])


def _used(modules: tuple[list[str], np.ndarray], name: str) -> np.ndarray:
    """Whether each row's module list names `name`; `modules` (the distinct lists, each row's): an archive
    holds a few distinct lists, so each is read once (nine scans of every row were ~0.1 s at 100,000 jobs)."""
    distinct, rows = modules
    key = "," + name + ","
    return np.array([key in "," + m + "," for m in distinct], dtype=bool)[rows]


def kahan_sums(values: np.ndarray, groups, n_groups: int) -> tuple[list[float], list[int]]:
    """(sum, count of non-NaN values) of each group, in pandas' Cython order: row by row, Kahan-compensated,
    NaN skipped, a NaN compensation (an infinite value) reset to 0.

    A group of whole numbers whose magnitudes add up to less than 2**53 (bytes, counts) is summed by
    `np.bincount`: every partial sum is then exact in float64, so the compensation stays 0 and any order
    gives the same, exact sum; row by row in Python is for the other groups (a 100,000-job archive has
    many such columns). The magnitudes' own sum is a float sum too, but of non-negative terms: once a
    partial sum reaches 2**53 it never rounds back below, so a total under 2**53 was exact all along."""
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups, dtype=np.int64)
    ok = ~np.isnan(values)
    g_ok, v_ok = groups[ok], values[ok]
    whole = np.isfinite(v_ok) & (v_ok == np.floor(np.where(np.isfinite(v_ok), v_ok, 0.0)))
    exact = (np.bincount(g_ok, weights=np.where(whole, np.abs(v_ok), 0.0), minlength=n_groups) < 2.0 ** 53) \
        & (np.bincount(g_ok[~whole], minlength=n_groups) == 0)
    s = np.bincount(g_ok, weights=np.where(exact[g_ok], v_ok, 0.0), minlength=n_groups).tolist()
    nobs = np.bincount(g_ok, minlength=n_groups).tolist()
    slow = ~exact[g_ok]
    if not slow.any():
        return s, nobs
    comp = [0.0] * n_groups
    for g in np.flatnonzero(~exact).tolist():
        s[g] = 0.0
    for g, v in zip(g_ok[slow].tolist(), v_ok[slow].tolist()):
        y = v - comp[g]
        t = s[g] + y
        cc = t - s[g] - y
        comp[g] = 0.0 if cc != cc else cc
        s[g] = t
    return s, nobs


def _group_sums(a: np.ndarray, groups, n_groups: int) -> list:
    """groupby(...).sum() of one column: int64 sums for an int64 column (wrapping as pandas' do), else Kahan floats."""
    if a.dtype == np.int64:
        out = np.zeros(n_groups, np.int64)
        np.add.at(out, np.asarray(groups, dtype=np.int64), a)
        return out.tolist()
    return kahan_sums(a, groups, n_groups)[0]


def _group_means(a: np.ndarray, groups: list[int], n_groups: int) -> list[float]:
    s, n = kahan_sums(a.astype(np.float64), groups, n_groups)
    return [s[i] / n[i] if n[i] else float("nan") for i in range(n_groups)]


def _groups(keys: list) -> tuple[list, list[int]]:
    """(the distinct keys in order of first appearance, each row's group number): groupby(sort=False)."""
    index: dict = {}
    rows = [index.setdefault(k, len(index)) for k in keys]
    return list(index), rows


def _desc(values: list) -> list[int]:
    """Positions by value, largest first, ties in order (pandas' stable descending sort)."""
    return sorted(range(len(values)), key=lambda i: -values[i])


def interfaces_by_size(c: dict, cls: np.ndarray) -> list[dict]:
    """Per job-size class: number of jobs, jobs using each interface, and bytes moved through it."""
    distinct, rows = _groups(_text(c["modules"]))
    mods = (distinct, np.asarray(rows, dtype=np.int64))
    used = {"POSIX": _used(mods, "POSIX"), "STDIO": _used(mods, "STDIO"), "MPI-IO": _used(mods, "MPI-IO"),
            "HDF5": _used(mods, "H5F") | _used(mods, "H5D"),
            "PnetCDF": _used(mods, "PNETCDF_FILE") | _used(mods, "PNETCDF_VAR"),
            "DFS": _used(mods, "DFS"), "DAOS": _used(mods, "DAOS")}
    byts = {name: _bytes(c, prefix) for name, (prefix, _) in INTERFACES.items()}
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


def strategy_by_size(c: dict, cls: np.ndarray, n: int) -> list[dict]:
    """Per job-size class: I/O strategy (unique / shared / partially shared) by jobs and by bytes (a job
    counts once per strategy it uses; `dominant` once, under the strategy that moved most of its bytes)."""
    kinds = ("unique", "shared", "partially_shared")
    files = np.column_stack([_filled(c[f"{k}_files"]).astype(np.int64) if c[f"{k}_files"].dtype != np.int64
                             else c[f"{k}_files"] for k in kinds]) if n else np.zeros((0, 3), np.int64)
    byts = np.column_stack([_filled(c[f"{k}_bytes"]) for k in kinds]) if n else np.zeros((0, 3))
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


def top_n(c: dict, keys: list[str], key: str, n: int = 10) -> dict:
    """Top `n` values of `keys` (one per job) by bytes read and by bytes written."""
    if not len(keys):
        return {"by_bytes_read": [], "by_bytes_written": []}
    names, rows = _groups(keys)
    jobs = [0] * len(names)
    for g in rows:
        jobs[g] += 1
    sums = {col: _group_sums(c[col], rows, len(names)) for col in ("bytes_read", "bytes_written")}
    out = {}
    for col in ("bytes_read", "bytes_written"):
        out[f"by_{col}"] = [{key: str(names[i]), "jobs": jobs[i], "bytes_read": int(sums["bytes_read"][i]),
                             "bytes_written": int(sums["bytes_written"][i])} for i in _desc(sums[col])[:n]]
    return out


def files_vs_procs(c: dict, cls: np.ndarray) -> list[dict]:
    """Files per job against processes, per size class: quantiles of files and files per process."""
    files = _filled(c["files"])
    nprocs = c["nprocs"].astype(np.float64)
    out = []
    for label in SIZE_LABELS:
        sel = cls == label
        if not sel.any():
            continue
        f = files[sel]
        per = f / np.maximum(nprocs[sel], 1)
        out.append({"size_class": label, "jobs": int(sel.sum()), "jobs_without_files": int((f == 0).sum()),
                    "files_median": float(np.median(f)), "files_p90": float(np.quantile(f, 0.9)),
                    "files_max": int(f.max()), "files_per_process_median": float(np.median(per)),
                    "files_per_process_max": float(per.max())})
    return out


def node_counts(c: dict, cores_per_node: int | None) -> np.ndarray:
    """Compute-node count per job: from the log when known, else ceil(nprocs / cores_per_node), else NaN."""
    n = c["nnodes"].astype(np.float64)
    if cores_per_node:
        est = np.ceil(np.maximum(c["nprocs"].astype(np.float64), 1) / cores_per_node)
        n = np.where(np.isfinite(n) & (n > 0), n, est)
    return n


def mibps_per_node_by_project(c: dict, projects: np.ndarray, cores_per_node: int | None, min_procs: int,
                              min_bytes: int) -> dict:
    """Box-plot statistics (min, Q1, median, Q3, max) of MiB/s/CN per project, of the jobs with at least
    `min_procs` processes that moved at least `min_bytes`; numpy's linear quantiles (R type 7)."""
    nodes = node_counts(c, cores_per_node)
    moved = _filled(c["bytes_read"]) + _filled(c["bytes_written"])
    per_node = c["mibps"].astype(np.float64) / nodes
    nprocs = c["nprocs"].astype(np.int64)
    keep = (nprocs >= min_procs) & (moved >= min_bytes)
    no_nodes = keep & ~np.isfinite(nodes)
    result = {"jobs_in_filter": int(keep.sum()), "jobs_without_node_count": int(no_nodes.sum()), "projects": []}
    keep &= np.isfinite(per_node)
    if not keep.any():
        return result
    keys, starts, counts, v = sort_groups(np.asarray(projects, dtype=object)[keep].astype(str), per_node[keep])
    q = {name: quantile_sorted(v, starts, counts, p, min_count=1)
         for name, p in (("min", 0.0), ("q1", 0.25), ("median", 0.5), ("q3", 0.75), ("max", 1.0))}
    rows = [{"project": str(k), "jobs": int(n), **{name: float(q[name][i]) for name in q}}
            for i, (k, n) in enumerate(zip(keys, counts))]
    rows.sort(key=lambda r: -r["median"])
    result["projects"] = rows
    return result


def _finite(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def project_table(c: dict, projects: np.ndarray, cores_per_node: int | None) -> list[dict]:
    """Key characteristics per project (the paper's Table V): averages across the project's jobs."""
    if not len(projects):
        return []
    names, rows = _groups(list(projects))
    g = len(names)
    num = {k: c[k].astype(np.float64) for k in ("nprocs", "bytes_read", "bytes_written", "read_time_s",
                                                 "write_time_s", "meta_time_s", "mibps", "io_fraction", "files",
                                                 "common_access_bytes", "unique_bytes", "shared_bytes",
                                                 "partially_shared_bytes")}
    z = {k: np.nan_to_num(v) for k, v in num.items()}
    moved = z["bytes_read"] + z["bytes_written"]
    io_t = z["read_time_s"] + z["write_time_s"] + z["meta_time_s"]
    share = lambda part, whole: np.where(whole > 0, part / np.where(whole > 0, whole, 1), np.nan)  # noqa: E731
    means = {"nprocs_mean": num["nprocs"], "mibps_per_node_mean": num["mibps"] / node_counts(c, cores_per_node),
             "meta_time_share_mean": share(z["meta_time_s"], io_t), "io_fraction_mean": num["io_fraction"],
             "files_per_job_mean": z["files"],
             **{f"{k}_bytes_share_mean": share(z[f"{k}_bytes"], moved) for k in ("unique", "shared", "partially_shared")}}
    mean_of = {k: _group_means(v, rows, g) for k, v in means.items()}
    sums = {k: kahan_sums(z[k], rows, g)[0] for k in ("bytes_read", "bytes_written")}
    jobs, uids = [0] * g, [set() for _ in range(g)]
    for i, (grp, uid) in enumerate(zip(rows, c["uid"].tolist())):
        jobs[grp] += 1
        if uid == uid:  # nunique leaves NaN out
            uids[grp].add(uid)
    api = {letter: _bytes(c, prefix) > 0 for _, (prefix, letter) in INTERFACES.items()}
    any_api = {letter: [False] * g for letter in api}
    for letter, used in api.items():
        for grp, u in zip(rows, used.tolist()):
            if u:
                any_api[letter][grp] = True
    # the most common key access size of each project (ties: the smallest)
    key_counts: list[dict] = [{} for _ in range(g)]
    for grp, k in zip(rows, num["common_access_bytes"].tolist()):
        if k == k:
            key_counts[grp][k] = key_counts[grp].get(k, 0) + 1
    out = []
    for i, proj in enumerate(names):
        kc = key_counts[i]
        key = min(kc, key=lambda k: (-kc[k], k)) if kc else None
        out.append({
            "project": str(proj), "jobs": jobs[i], "users": len(uids[i]), "nprocs_mean": float(mean_of["nprocs_mean"][i]),
            "bytes_read": int(sums["bytes_read"][i]), "bytes_written": int(sums["bytes_written"][i]),
            "mibps_per_node_mean": _finite(mean_of["mibps_per_node_mean"][i]),
            "meta_time_share_mean": _finite(mean_of["meta_time_share_mean"][i]),
            "io_fraction_mean": _finite(mean_of["io_fraction_mean"][i]),
            "files_per_job_mean": float(mean_of["files_per_job_mean"][i]),
            "unique_bytes_share_mean": _finite(mean_of["unique_bytes_share_mean"][i]),
            "shared_bytes_share_mean": _finite(mean_of["shared_bytes_share_mean"][i]),
            "partially_shared_bytes_share_mean": _finite(mean_of["partially_shared_bytes_share_mean"][i]),
            "key_access_bytes": int(key) if key is not None else None,
            "interfaces": "".join(letter for _, (_, letter) in INTERFACES.items() if any_api[letter][i]),
        })
    out.sort(key=lambda r: -(r["bytes_read"] + r["bytes_written"]))
    return out


def exe_name(exe: str) -> str:
    """The executable's file name, as the summary groups executables ("" without one)."""
    return exe.split()[0].rsplit("/", 1)[-1] if exe.strip() else ""


def _exe_names(exes: list[str]) -> list[str]:
    names: dict = {}
    return [names[e] if e in names else names.setdefault(e, exe_name(e)) for e in exes]


def summary(c: dict, projects: np.ndarray, users: list[str], *, cores_per_node: int | None = None,
            min_procs: int = 1024, min_bytes: int = 500 * MiB, top: int = 10) -> dict:
    """Every cross-job view at once (the body of `jobs summary --json`); `c` typed by `column`, text columns
    as lists; `users` each row's user as every surface names it."""
    n = len(projects)
    cls = size_class(c["nprocs"])
    return {
        "jobs": n,
        "bytes_read": int(_filled(c["bytes_read"]).sum() if c["bytes_read"].dtype != np.int64
                          else c["bytes_read"].sum()) if n else 0,
        "bytes_written": int(_filled(c["bytes_written"]).sum() if c["bytes_written"].dtype != np.int64
                             else c["bytes_written"].sum()) if n else 0,
        "filters": {"min_procs": min_procs, "min_bytes": min_bytes, "cores_per_node": cores_per_node},
        "interfaces_by_size": interfaces_by_size(c, cls),
        "strategy_by_size": strategy_by_size(c, cls, n),
        "top_projects": top_n(c, [str(p) for p in projects], "project", top),
        "top_users": top_n(c, users, "user", top),
        "top_executables": top_n(c, _exe_names(_text(c["exe"])), "exe_name", top),
        "files_vs_procs": files_vs_procs(c, cls),
        "mibps_per_node_by_project": mibps_per_node_by_project(c, projects, cores_per_node, min_procs, min_bytes),
        "projects": project_table(c, projects, cores_per_node),
    }


# ---------------------------------------------------------------------------
# projects

def parse_project_map(text: str) -> list[tuple[str, str, str]]:
    """Rules from a mapping file: one per line, `uid:NUMBER PROJECT` or `/path/prefix PROJECT`.

    Blank lines and lines starting with # are ignored. Raises ValueError with the
    line number on a malformed line.
    """
    rules = []
    for i, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) != 2:
            raise ValueError(f"line {i}: expected 'uid:NUMBER PROJECT' or '/path/prefix PROJECT'")
        key, proj = parts[0], parts[1].strip()
        if key.startswith("uid:"):
            if not key[4:].isdigit():
                raise ValueError(f"line {i}: uid must be a number, got {key[4:]!r}")
            rules.append(("uid", key[4:], proj))
        elif key.startswith("/"):
            rules.append(("path", key.rstrip("/") or "/", proj))
        else:
            raise ValueError(f"line {i}: key must be uid:NUMBER or an absolute path prefix, got {key!r}")
    return rules


def assign_projects(tops: list[str], exes: list[str], uids: list, rules: list[tuple[str, str, str]],
                    users: list[str]) -> np.ndarray:
    """Project of each job: the longest matching path prefix (of its top file, then its exe), then its uid
    rule, else `user:<name>`, `users[i]` the name of job i's user as the caller names users on every other
    surface (a default project of 'user:0' beside the user 'root' was one user under two names). `tops`,
    `exes` and `uids` as stored (None or NaN for none)."""
    tops, exes = _text(tops), _text(exes)
    uid_map = {k: p for kind, k, p in rules if kind == "uid"}
    prefixes = sorted(((k, p) for kind, k, p in rules if kind == "path"), key=lambda kp: -len(kp[0]))
    out = np.empty(len(tops), dtype=object)
    cache: dict = {}
    for i in range(len(tops)):
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
            u = uids[i]
            proj = uid_map.get(str(int(u))) if u is not None and u == u else None
        out[i] = cache[key] = proj or f"user:{users[i]}"
    return out
