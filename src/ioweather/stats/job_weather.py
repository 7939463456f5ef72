"""The array math of a job's weather (METHODS.md section 7, seed 003): what the job's window saw on the
servers, from arrays and tables already read. services/jobs/weather.py reads the store and calls these.

- missing fraction: 1 − (seconds of the window covered by valid byte samples, summed over series)
  / (window length × series expected);
- concurrency: the scheduler's other jobs overlapping the window and their node-hours; the job's own
  node-hours over everyone's is the node-hour coverage factor (stats.coverage);
- fullest OST: each target's latest capacity and free bytes at or before the job's start (at most
  a day older), the largest used % among the OSTs;
- probe slowdown: per probed op, the window's median duration ÷ the baseline median, the median
  over targets, the worst op (the `slowdown` command's definition, METHODS.md section 1);
- the motif matrix: the jobs of one motif × the UMAMI metrics, fraction of peak = performance ÷ the
  motif's best (METHODS.md section 6), a coverage factor above 1.2 out of the statistics (section 7).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ioweather.stats import coverage as cov
from ioweather.stats.probe import baseline_medians, STATUS_OK

if TYPE_CHECKING:  # pandas is not imported to answer from a stored weather (`umami JOB`)
    import pandas as pd

_OST = re.compile(r"OST([0-9a-fA-F]{4})$")
#: Nanoseconds in an hour: node-hours = node-nanoseconds / this.
_HOUR_NS = 3.6e12


def missing_fraction(covered_s: float, span_s: float, n_series: int) -> float | None:
    """1 − covered_s / (span_s × n_series), clipped to [0, 1]: the share of the window that the byte
    series which should cover it (`n_series`: read and write of every target that reported on the
    window's days) did not cover with valid samples. None when no series is expected or the window is
    empty (nothing was collected: unknown, not "all missing")."""
    if n_series <= 0 or span_s <= 0:
        return None
    return float(min(1.0, max(0.0, 1.0 - covered_s / (span_s * n_series))))


class Concurrency(NamedTuple):
    """The scheduler's view of a window: `jobs` other jobs overlapped it for `node_hours` node-hours
    (the job's own excluded); `coverage_factor_nodehrs` = the job's node-hours ÷ everyone's (None when
    the job is not among them); `found` says whether it was."""

    jobs: int
    node_hours: float
    coverage_factor_nodehrs: float | None
    found: bool


def concurrency(start_ns, end_ns, nnodes, is_mine, since_ns: int, until_ns: int, now_ns: int) -> Concurrency | None:
    """The jobs overlapping [since, until) and their node-hours: each job's overlap (a running job,
    `end_ns` NaN, runs to the window's end if it started before now) × its nodes. `is_mine` marks the
    job's own scheduler rows. None when no job overlaps the window."""
    start = np.asarray(start_ns, dtype=np.int64)
    end = np.asarray(end_ns, dtype=float)
    running = np.isnan(end)
    with np.errstate(invalid="ignore"):
        sel = (start < until_ns) & ((end > since_ns) | (running & (now_ns > since_ns)))
    if not sel.any():
        return None
    lo = np.maximum(since_ns, start[sel]).astype(float)
    hi = np.minimum(float(until_ns), np.where(running[sel], float(until_ns), end[sel]))
    nh = np.maximum(0.0, hi - lo) / _HOUR_NS * np.asarray(nnodes, dtype=float)[sel]
    mine = np.asarray(is_mine, dtype=bool)[sel]
    total = float(nh.sum())
    mine_nh = float(nh[mine].sum()) if mine.any() else None
    return Concurrency(int((~mine).sum()), total - (mine_nh or 0.0),
                       cov.coverage_factor(mine_nh, total) if mine_nh is not None else None, bool(mine.any()))


def fullest_ost(gauges: pd.DataFrame, at_ns, max_age_ns: int) -> list[tuple[float | None, str | None]]:
    """(used %, target) of the fullest OST at each time of `at_ns`: every target's latest
    capacity_bytes and free_bytes at or before it (at most `max_age_ns` older), used = (1 − free ÷
    capacity) × 100, the largest among the targets named OST (every target when none is); (None, None)
    when no target has both. `gauges`: rows time_ns, target, metric, value."""
    at = np.asarray(at_ns, dtype=np.int64)
    none = [(None, None)] * len(at)
    g = gauges[np.isfinite(gauges["value"].to_numpy(float))] if len(gauges) else gauges
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
            ok = (i >= 0) & (times[np.maximum(i, 0)] >= at - max_age_ns)
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
    out: list[tuple[float | None, str | None]] = []
    for row in used:
        if not np.isfinite(row).any():
            out.append((None, None))
        else:
            k = int(np.nanargmax(row))
            out.append((float(row[k]), targets[k]))
    return out


def probe_slowdown(windows, ops) -> tuple[float | None, dict | None]:
    """(worst op's slowdown, {op: slowdown}) over the probe targets: for each (samples of the window,
    baseline medians per op code) of `windows`, each op's median successful duration in the window ÷
    its baseline median; per op the median over targets. (None, None) when no op has both."""
    by_op: dict[str, list[float]] = {}
    for win, expected in windows:
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = baseline_medians(win["op"], win["duration_ns"], win["status"], len(expected)) / expected
        for code in np.flatnonzero(np.isfinite(ratio)):
            by_op.setdefault(ops[code], []).append(float(ratio[code]))
    return op_slowdowns(by_op)


def window_medians(op, start_ns, duration_ns, status, n_ops: int, since, until) -> tuple[np.ndarray, np.ndarray]:
    """Of one target's samples sorted by op then time, for every window [since[i], until[i]): (each op's median
    successful duration (s) in it, NaN if none: `baseline_medians` of the window's samples; whether the window
    holds any sample). One pass over the samples for every window, instead of one read of them per window."""
    since, until = np.asarray(since, np.int64), np.asarray(until, np.int64)
    out = np.full((len(since), n_ops), np.nan)
    present = np.zeros(len(since), bool)
    op = np.asarray(op)
    bounds = np.searchsorted(op, np.arange(n_ops + 1), side="left")
    for code in range(n_ops):
        lo, hi = bounds[code], bounds[code + 1]
        if lo == hi:
            continue
        t = start_ns[lo:hi]
        a, b = np.searchsorted(t, since, side="left"), np.searchsorted(t, until, side="left")
        present |= b > a
        ok = np.asarray(status[lo:hi]) == STATUS_OK
        dur = duration_ns[lo:hi]
        for i in np.flatnonzero(b > a):
            d = dur[a[i]:b[i]][ok[a[i]:b[i]]]
            if len(d):
                out[i, code] = median_s(d)
    return out, present


def median_s(d: np.ndarray) -> float:
    """`np.median(d / 1e9)` of int64 durations (ns), bit for bit (in seconds before the median, as
    baseline_medians: the division keeps their order, so the same middle elements, and their mean as
    np.median takes it), without np.median's per-call overhead: the Report's 191 events × 100 targets × 6 ops
    were 114,600 calls, ~5 s (issue 40)."""
    k = len(d) // 2
    if len(d) % 2:
        return float(np.partition(d, k)[k] / 1e9)
    p = np.partition(d, (k - 1, k))
    return float((p[k - 1] / 1e9 + p[k] / 1e9) / 2)


def op_slowdowns(ratios: dict[str, list[float]]) -> tuple[float | None, dict | None]:
    """(worst op's slowdown, {op: slowdown}): per op the median over targets of their ratios (`probe_slowdown`'s
    last step)."""
    if not ratios:
        return None, None
    med = {op: float(np.median(v)) for op, v in ratios.items()}
    return max(med.values()), med


def ost_names(osts) -> set[str]:
    """The 4-hex-digit index of each OST id, as target names end (fs-OST000a)."""
    return {f"{i:04x}" for i in osts}


def amounts_on_targets(rows: pd.DataFrame, osts, since_ns: int, until_ns: int) -> dict | None:
    """What the targets among `osts` moved in [since, until) (stats.coverage.window_amount per metric):
    the paper's coverage-factor denominator, only the servers the job used. `rows`: time_ns, target,
    metric, value, interval_s. None when no row is of those targets."""
    ids = rows["target"].astype(str).str.extract(_OST, expand=False).str.lower()
    sel = rows[ids.isin(ost_names(osts))]
    if sel.empty:
        return None

    def amount(metric):
        m = sel[sel["metric"] == metric]
        return cov.window_amount(m["time_ns"], m["interval_s"], m["value"], since_ns, until_ns)

    return {"bytes_read": amount("read_bytes"), "bytes_written": amount("write_bytes"),
            "read_ops": amount("read_ops"), "write_ops": amount("write_ops")}


def plausible_cf(values) -> np.ndarray:
    """Coverage factors as floats with the implausible ones (> stats.coverage.CF_MAX_PLAUSIBLE: clock
    skew or missing samples) as NaN: out of the statistics, as tokio-abcutils drops them."""
    a = np.array(values, dtype=float)
    with np.errstate(invalid="ignore"):
        a[a > cov.CF_MAX_PLAUSIBLE] = np.nan
    return a


def motif_matrix(perf, metrics, is_cf) -> tuple[np.ndarray, float | None]:
    """(x, peak) of one motif's jobs: x = [fraction of peak | metrics] (jobs × 1 + metrics), fraction
    of peak = perf ÷ peak with peak = the best finite performance of the motif (NaN when the peak is
    unknown or not positive, stats.umami.fraction_of_peak of one motif), and the metric columns where
    `is_cf` through `plausible_cf`."""
    perf = np.asarray(perf, dtype=float)
    m = np.array(metrics, dtype=float, ndmin=2).reshape(len(perf), -1)
    ok = np.isfinite(perf)
    peak = float(perf[ok].max()) if ok.any() else None
    x = np.full((len(perf), 1 + m.shape[1]), np.nan)
    for c, cf in enumerate(is_cf):
        x[:, c + 1] = plausible_cf(m[:, c]) if cf else m[:, c]
    if peak is not None and peak > 0:
        x[:, 0] = perf / peak
    return x, peak


def ost_ids(values) -> set[int]:
    """The OST ids of per-file records: the per-file table stores "0,3,7" (stats/job.py); a string is
    iterable, so it is split, never iterated."""
    ids: set[int] = set()
    for v in values:
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            continue
        parts = str(v).split(",") if isinstance(v, str | int | np.integer) else v
        ids.update(int(x) for x in parts if str(x).strip())
    return ids


def file_facts(f: pd.DataFrame) -> tuple[dict, dict, dict, dict]:
    """({hash: POSIX sums of reads, writes, opens}, {hash: mounts}, {hash: OST ids}, {hash: bytes per
    mount}) of per-file rows `f` (log_hash, module, reads, writes, opens, mount, ost_ids, fs_type,
    bytes_read, bytes_written). A job with records but none of POSIX did no POSIX operation (0); one
    without records is not in the result (unknown)."""
    if f.empty:
        return {}, {}, {}, {}
    # one group-by for every job: filtering the table per job cost 5 ms a job (50 s for 10,000)
    posix = f[f["module"] == "POSIX"]
    agg = posix.groupby("log_hash")[["reads", "writes", "opens"]].sum()
    sums = {h: {"reads": 0, "writes": 0, "opens": 0} for h in f["log_hash"].unique()}
    sums.update({h: {k: int(v) for k, v in r.items()} for h, r in agg.to_dict("index").items()})
    mounts = ({h: sorted({str(x) for x in m}) for h, m in f.dropna(subset=["mount"]).groupby("log_hash")["mount"]}
              if "mount" in f.columns else {})
    osts: dict = {}
    if "ost_ids" in posix.columns:
        for h, v in posix.dropna(subset=["ost_ids"]).groupby("log_hash")["ost_ids"]:
            osts[h] = ost_ids(v)
    return sums, mounts, {h: sorted(v) for h, v in osts.items() if v}, mount_bytes(f)


def mount_bytes(f: pd.DataFrame) -> dict:
    """{hash: [{mount, fs_type, bytes}]}: where each job moved its bytes (services/jobs/weather.py makes each
    a config.MountBytes for config.dataset_for_mounts; stats/ stays free of the config's types).
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
