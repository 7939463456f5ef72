"""The state of a probe target right now, and where "now" sits in its climate (METHODS.md section 1, seed 003).

State of one target (decided here, documented in docs/dashboard.md):

- `stale` when its newest sample is older than `stale_after_s`: a probe that
  stopped reporting is never shown as normal;
- otherwise the state of its worst op's slowdown (median over the window, 10 min by
  default, against the baseline median): `normal` < warn <= `degraded` < crit <=
  `severely degraded`;
- at least `degraded` when an operation timed out in the window: a hung call has
  no duration to put into the median, so the median alone would look normal;
- `unknown` when no op has both samples in the window and a baseline.

The climate (UMAMI's box plots, seed 003): the distribution of an op's interval
slowdowns over the baseline window, with the current value placed in it.
"""

from __future__ import annotations

import numpy as np

from ioweather.stats.probe import DEGRADED, SEVERE, SLOWDOWN_STATS, interval_stats, slowdown, state
from ioweather.units import format_age

SEVERITY = ("unknown", "normal", "degraded", "severely degraded", "stale")
_RANK = {"normal": 0, "degraded": 1, "severely degraded": 2}


def window_slowdown(op: np.ndarray, start_ns: np.ndarray, duration_ns: np.ndarray, status: np.ndarray,
                    since_ns: int, window_s: float, expected_s: np.ndarray, stat: str = "median",
                    all_stats: bool = False) -> dict[int, dict]:
    """Slowdown rows per op code over the one window [since, since + window), not aligned to a grid.

    `slowdown()` groups by intervals aligned to the epoch; shifting the times so the
    window starts at 0 makes the window a single interval. With `all_stats`, each row also
    has `ratios`: {stat: slowdown} for every statistic, from the same interval statistics.
    """
    start = np.asarray(start_ns, np.int64)
    sel = (start >= since_ns) & (start < since_ns + int(window_s * 1e9))
    args = (np.asarray(op)[sel], start[sel] - since_ns, np.asarray(duration_ns)[sel], np.asarray(status)[sel])
    rows = {r["op_code"]: r for r in slowdown(*args, window_s, expected_s, stat)}
    if all_stats:
        for r in interval_stats(*args, window_s):
            exp = expected_s[r["op_code"]]
            ratios = {}
            for st in SLOWDOWN_STATS:
                v = r["mean_s"] if st == "mean" else r[f"{st}_s"]
                ratios[st] = v / exp if v is not None and np.isfinite(exp) and exp > 0 else None
            rows[r["op_code"]]["ratios"] = ratios
    return rows


def median_of_durations(duration_ns: np.ndarray) -> float:
    """Median (s) of integer durations (ns) exactly as `stats.probe.baseline_medians` computes it
    (numpy's linear quantile, R type 7, on seconds), bit for bit, in O(n) time and without a copy:
    the array is partitioned in place. A month of 1 Hz samples of one op is 2.6 M values; sorting
    them with their group keys would cost 70 MB of temporaries, this costs none.
    """
    n = len(duration_ns)
    if n == 0:
        return float("nan")
    h = (n - 1) * 0.5
    lo = int(np.floor(h))
    hi = min(lo + 1, n - 1)
    duration_ns.partition([lo, hi])
    a, b = duration_ns[lo] / 1e9, duration_ns[hi] / 1e9
    return float(a + (h - lo) * (b - a))


def target_state(op_rows: list[dict], age_s: float | None, stale_after_s: float,
                 warn: float = DEGRADED, crit: float = SEVERE) -> tuple[str, str]:
    """(state, one-line reason) of a target from its ops' window rows (`slowdown`, `timeouts`, `op`)."""
    if age_s is None:
        return "unknown", "no samples yet"
    if age_s > stale_after_s:
        return "stale", f"no sample for {format_age(age_s)} (probe stopped or hung?)"
    worst = None
    for r in op_rows:
        if r.get("slowdown") is not None and (worst is None or r["slowdown"] > worst["slowdown"]):
            worst = r
    timeouts = sum(r.get("timeouts") or 0 for r in op_rows)
    if worst is None:
        if timeouts:
            return "degraded", f"{timeouts} timed-out operations and no completed ones to compare"
        return "unknown", "no completed operations in the window, or no baseline yet"
    st = state(worst["slowdown"], warn, crit)
    reason = f"worst: {worst['op']} {worst['slowdown']:.2f}× usual"
    if timeouts:
        slow = [r["op"] for r in op_rows if r.get("timeouts")]
        reason += f"; {timeouts} timeouts ({', '.join(slow)})"
        if _RANK[st] < _RANK["degraded"]:
            st = "degraded"
    return st, reason




#: Fewer past intervals than this (an hour of 10-minute ones) make no climate worth a box plot.
MIN_CLIMATE_INTERVALS = 6


def climate(values: np.ndarray, current: float | None, min_intervals: int = MIN_CLIMATE_INTERVALS) -> dict:
    """Summary of past interval slowdowns (box plot numbers) and the percentile of the current one.

    Whiskers at p1/p99 rather than Tukey fences: with thousands of intervals the
    fences flag hundreds of points, while p1/p99 read directly as "rarely worse".
    The percentile is the share of past intervals at or below the current value (%).
    """
    v = np.sort(np.asarray(values, np.float64)[np.isfinite(values)])
    out = {"n_intervals": int(len(v)), "p01": None, "q1": None, "median": None, "q3": None, "p99": None,
           "percentile_now": None}
    if len(v) < min_intervals:
        return out
    for key, q in (("p01", 0.01), ("q1", 0.25), ("median", 0.5), ("q3", 0.75), ("p99", 0.99)):
        out[key] = float(np.quantile(v, q))
    if current is not None and np.isfinite(current):
        out["percentile_now"] = float(100.0 * np.searchsorted(v, current, side="right") / len(v))
    return out
