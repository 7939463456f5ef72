"""Climate vs weather (seed 003 "UMAMI"; METHODS.md section 7): a job's value against its motif's history.

Quartile class of a value against a history (numpy's linear percentiles, the history excluding the
job): 1 when value <= Q1, 2 when <= median, 3 when <= Q3, 4 above. Colours follow the paper: red,
orange, green, blue from class 1 to 4 when bigger is better, the reverse when smaller is better, so
red always means "bad for this job". Box statistics put the whiskers at the 5th and 95th percentiles.
Fraction of peak = a job's performance / the best performance of its motif (the job included: a job
can be its motif's peak, 1.0).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

#: Colours of quartile classes 1..4 when bigger is better (reversed when smaller is better).
COLOURS = ("red", "orange", "green", "blue")

#: Whether bigger is better, per metric; a metric not named here has no "bad direction".
#: The tokio-abc names come from its abcconfig.json (`metric_big_is_good`), ours are the job weather's.
DIRECTIONS: dict[str, bool] = {
    "fraction_of_peak": True,
    "darshan_normalized_perf_by_max": True,
    "performance_bps": True,
    "darshan_agg_perf_by_slowest_posix": True,
    "coverage_factor_bw": True, "coverage_factor_read_bw": True, "coverage_factor_write_bw": True,
    "coverage_factor_ops": True, "coverage_factor_read_ops": True, "coverage_factor_write_ops": True,
    "coverage_factor_opens": True, "coverage_factor_stats": True, "coverage_factor_nodehrs": True,
    "contention_bw": False, "contention_read_bw": False, "contention_write_bw": False,
    "contention_ops": False, "contention_read_ops": False, "contention_write_ops": False,
    "contention_opens": False, "contention_stats": False, "contention_nodehrs": False,
    "md_ops_per_s": False, "mds_cpu_pct": False, "oss_cpu_pct": False,
    "fullest_ost_pct": False, "probe_slowdown": False,
    "concurrent_jobs": False, "concurrent_node_hours": False, "missing_fraction": False,
}


def direction(metric: str, table: dict[str, bool] | None = None) -> bool | None:
    """True when bigger is better for `metric`, False when smaller is, None when neither is known."""
    if table and metric in table:
        return table[metric]
    return DIRECTIONS.get(metric)


def _finite(values) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return a[np.isfinite(a)]


def quartile(value: float | None, history) -> int | None:
    """The quartile class (1-4) of `value` in `history` (NaN ignored); None without a value or history."""
    h = _finite(history)
    if value is None or not math.isfinite(value) or h.size == 0:
        return None
    q1, q2, q3 = np.percentile(h, [25, 50, 75])
    if value <= q1:
        return 1
    if value <= q2:
        return 2
    if value <= q3:
        return 3
    return 4


def colour(quartile_class: int | None, bigger_is_better: bool | None) -> str | None:
    """red/orange/green/blue for classes 1-4 when bigger is better, reversed when smaller is better;
    'grey' when the metric has no direction; None without a class."""
    if quartile_class is None:
        return None
    if bigger_is_better is None:
        return "grey"
    i = quartile_class - 1
    return COLOURS[i] if bigger_is_better else COLOURS[3 - i]


def box(history) -> dict:
    """Box-plot numbers of `history` (NaN ignored): whiskers at the 5th and 95th percentiles."""
    h = _finite(history)
    if h.size == 0:
        return {"n": 0, "p5": None, "q1": None, "median": None, "q3": None, "p95": None, "mean": None}
    p5, q1, med, q3, p95 = np.percentile(h, [5, 25, 50, 75, 95])
    return {"n": int(h.size), "p5": float(p5), "q1": float(q1), "median": float(med), "q3": float(q3),
            "p95": float(p95), "mean": float(h.mean())}


def unusual_in_bad_direction(value: float | None, history, bigger_is_better: bool | None) -> bool:
    """Whether `value` lies outside the history's interquartile range on the bad side."""
    if bigger_is_better is None or value is None or not math.isfinite(value):
        return False
    h = _finite(history)
    if h.size == 0:
        return False
    q1, q3 = np.percentile(h, [25, 75])
    return bool(value < q1) if bigger_is_better else bool(value > q3)


def fraction_of_peak(performance, motifs: Sequence[Hashable]) -> np.ndarray:
    """performance / max(performance of the same motif), element-wise; NaN where the performance is
    missing or the motif's peak is not positive."""
    perf = np.asarray(performance, dtype=float)
    keys = np.asarray([hash_key(m) for m in motifs], dtype=object)
    out = np.full(perf.shape, np.nan)
    for k in set(keys.tolist()):
        sel = keys == k
        vals = perf[sel]
        ok = np.isfinite(vals)
        if not ok.any():
            continue
        peak = vals[ok].max()
        if peak > 0:
            out[sel] = vals / peak
    return out


def hash_key(m: Hashable):
    """A motif key usable in a set (lists become tuples)."""
    return tuple(m) if isinstance(m, list) else m


#: How many jobs of the same motif a verdict needs (the job excluded).
MIN_HISTORY = 10

#: Words for a metric in the verdict; the number shown is the value of the metric named.
CAUSES = {
    "coverage_factor_bw": "bandwidth contention", "contention_bw": "bandwidth contention",
    "coverage_factor_read_bw": "read bandwidth contention", "contention_read_bw": "read bandwidth contention",
    "coverage_factor_write_bw": "write bandwidth contention", "contention_write_bw": "write bandwidth contention",
    "coverage_factor_ops": "IOPS contention", "contention_ops": "IOPS contention",
    "coverage_factor_opens": "open(2) contention", "contention_opens": "open(2) contention",
    "coverage_factor_stats": "stat(2) contention", "contention_stats": "stat(2) contention",
    "md_ops_per_s": "metadata load", "fs_ave_mds_cpu": "metadata server load", "mds_cpu_pct": "metadata server load",
    "fs_ave_oss_cpu": "data server load", "oss_cpu_pct": "data server load",
    "fullest_ost_pct": "a full OST", "fshealth_ost_most_full_pct": "a full OST",
    "probe_slowdown": "a slow file system (probes)", "concurrent_jobs": "many concurrent jobs",
    "jobsdb_concurrent_jobs": "many concurrent jobs",
}
QUARTILE_WORDS = {1: "bottom quartile", 2: "second quartile", 3: "third quartile", 4: "top quartile"}


def _num(x: float) -> str:
    """Two significant decimals, never an exponent (verdicts are read by people)."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def verdict(performance: dict | None, culprit_rows: list[dict], history_n: int, min_history: int = MIN_HISTORY) -> str:
    """One line with its numbers: the system (the top culprit), your code, not enough history, or no data.

    performance: the row of the performance metric ({metric, value, quartile}); culprit_rows ranked."""
    if history_n < min_history:
        return f"not enough history ({history_n} similar jobs; need {min_history})"
    if performance is None or performance.get("value") is None:
        return "no data: the job's performance is unknown"
    q = performance.get("quartile")
    if culprit_rows and q in (1, 2):  # the system is blamed only for a job that ran below its motif's median
        c = culprit_rows[0]
        cause = CAUSES.get(c["metric"], c["metric"])
        return (f"the system: {cause} ({c['metric'].replace('_', ' ')} {_num(c['value'])}, "
                f"{QUARTILE_WORDS.get(c.get('quartile'), 'unranked')}, r = {c['r']:.2f} with performance)")
    perf = f"{performance['metric'].replace('_', ' ')} {_num(performance['value'])}"
    if q == 1:
        return (f"your code (or an unmeasured cause): performance is in the bottom quartile of this motif "
                f"({perf}, {history_n} similar jobs) and no measured system metric was both unusual and "
                f"correlated; see findings")
    return (f"your code: performance is usual for this motif ({perf}, {QUARTILE_WORDS.get(q, 'unranked')} "
            f"of {history_n} similar jobs); see findings")
