"""The state of a probe target right now, and where "now" sits in its climate (METHODS.md section 1, seed 003).

State of one target (decided here, documented in docs/dashboard.md):

- `stale` when its newest sample is older than `stale_after_s`: a probe that
  stopped reporting is never shown as normal;
- otherwise the state of its worst op's slowdown (median over the window, 10 min by
  default, against the baseline median): `normal` < warn <= `degraded` < crit <=
  `severely degraded`;
- at least `degraded` when an operation timed out in the window: a hung call has
  no duration to put into the median, so the median alone would look normal;
- `learning` while the rolling baseline holds less than `min_history_s` of history (24 h, or 95 % of a
  shorter window) or fewer than `min_samples` successful samples of an op (1,000, or half of what a
  shorter window holds at the probe's period): until then the window
  judged is most of the baseline itself, so its slowdown is about 1× by construction;
- `unknown` when no op has both samples in the window and a baseline.

The climate (UMAMI's box plots, seed 003): the distribution of an op's interval
slowdowns over the baseline window, with the current value placed in it.
"""

from __future__ import annotations

import numpy as np

from ioweather.stats.probe import (DEGRADED, SEVERE, SLOWDOWN_STATS, STAT_QUANTILES, STATUS_OK, interval_stats, slowdown,
                                   state)
from ioweather.stats.probe_spec import MIN_BASELINE_S, MIN_BASELINE_SAMPLES
from ioweather.stats.status_rules import (  # noqa: F401 (re-exported: the rules without numpy)
    MIN_SAMPLE_SHARE, PROBE_PERIOD_S, learning_reason, learning_span, min_history_s, min_samples, target_state)



def window_slowdown(op: np.ndarray, start_ns: np.ndarray, duration_ns: np.ndarray, status: np.ndarray,
                    since_ns: int, window_s: float, expected_s: np.ndarray, stat: str = "median",
                    all_stats: bool = False) -> dict[int, dict]:
    """Slowdown rows per op code over the one window [since, since + window), not aligned to a grid.

    `slowdown()` groups by intervals aligned to the epoch; shifting the times so the
    window starts at 0 makes the window a single interval. With `all_stats`, each row also
    has `ratios`: {stat: slowdown against `expected_s`} and `values`: {stat: seconds} for every
    statistic, from the same interval statistics.
    """
    start = np.asarray(start_ns, np.int64)
    sel = (start >= since_ns) & (start < since_ns + int(window_s * 1e9))
    args = (np.asarray(op)[sel], start[sel] - since_ns, np.asarray(duration_ns)[sel], np.asarray(status)[sel])
    rows = {r["op_code"]: r for r in slowdown(*args, window_s, expected_s, stat)}
    if all_stats:
        for r in interval_stats(*args, window_s):
            exp = expected_s[r["op_code"]]
            ratios, values = {}, {}
            for st in SLOWDOWN_STATS:
                v = values[st] = r["mean_s"] if st == "mean" else r[f"{st}_s"]
                ratios[st] = v / exp if v is not None and np.isfinite(exp) and exp > 0 else None
            rows[r["op_code"]]["ratios"] = ratios
            rows[r["op_code"]]["values"] = values
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


def baseline_stats(duration_ns: np.ndarray) -> dict[str, float]:
    """Every slowdown statistic (s) of one op's baseline durations (ns): the median bit for bit as
    `median_of_durations`, the quantiles as numpy's linear quantile on seconds, the mean. One in-place
    partition at every index the quantiles need: no sort, no copy of a month of samples."""
    n = len(duration_ns)
    if n == 0:
        return {st: float("nan") for st in SLOWDOWN_STATS}
    idx = baseline_ranks(n)
    duration_ns.partition(idx)
    # An integer sum is exact whatever the order the partition left the values in (a month of 60 s
    # timeouts is 1.6e17 ns, far below int64's limit), so the mean does not depend on the partition.
    return baseline_stats_from(n, int(duration_ns.sum()), {i: int(duration_ns[i]) for i in idx})


def baseline_ranks(n: int) -> list[int]:
    """The 0-based ranks (order statistics) of n durations that `baseline_stats_from` needs."""
    return sorted({i for st in SLOWDOWN_STATS if st != "mean" for i in _neighbours(n, STAT_QUANTILES[st])})


def baseline_stats_from(n: int, total_ns: int, order_ns: dict[int, int]) -> dict[str, float]:
    """`baseline_stats` from the count, the exact integer sum and the order statistics at
    `baseline_ranks(n)` ({rank: duration ns}), however these were found (issue 21: from per-day pieces)."""
    if n == 0:
        return {st: float("nan") for st in SLOWDOWN_STATS}
    out = {"mean": float(int(total_ns) / n / 1e9)}
    for st in SLOWDOWN_STATS:
        if st == "mean":
            continue
        q = STAT_QUANTILES[st]
        lo, hi = _neighbours(n, q)
        g = (n - 1) * q - lo
        a, b = order_ns[lo] / 1e9, order_ns[hi] / 1e9
        if st == "median":  # the formula of median_of_durations, so the two agree bit for bit
            out[st] = float(a + g * (b - a))
        else:  # numpy's _lerp: from the upper end past the middle, so q = 1 gives the maximum exactly
            out[st] = float(b - (b - a) * (1 - g) if g >= 0.5 else a + (b - a) * g)
    return out


def _neighbours(n: int, q: float) -> tuple[int, int]:
    lo = int(np.floor((n - 1) * q))
    return lo, min(lo + 1, n - 1)


def learning_ops(samples: np.ndarray, history_s: np.ndarray, min_s: float = MIN_BASELINE_S,
                 min_samples: int = MIN_BASELINE_SAMPLES) -> np.ndarray:
    """Per op: True while its baseline holds less than `min_s` of history or fewer than `min_samples`."""
    return (np.asarray(samples) < min_samples) | ~(np.nan_to_num(np.asarray(history_s, np.float64), nan=0.0) >= min_s)


def learning_at(op, start_ns, status, n_ops: int, now_ns: int, min_s: float = MIN_BASELINE_S,
                min_samples: int = MIN_BASELINE_SAMPLES) -> np.ndarray:
    """`learning_ops` of a baseline given as its raw samples (op code, start ns, status), judged at `now_ns`:
    per op, its successful samples and the history since its oldest one."""
    ok = np.asarray(status) == STATUS_OK
    op, start = np.asarray(op)[ok].astype(np.int64), np.asarray(start_ns)[ok].astype(np.int64)
    count = np.bincount(op, minlength=n_ops)[:n_ops]
    first = np.full(n_ops, now_ns, np.int64)
    np.minimum.at(first, op, start)
    return learning_ops(count, (now_ns - first) / 1e9, min_s, min_samples)


#: Fewer past intervals than this (an hour of 10-minute ones) make no climate worth a box plot.
MIN_CLIMATE_INTERVALS = 6


CLIMATE_KEYS = ("p01", "q1", "median", "q3", "p99")
CLIMATE_Q = np.array((0.01, 0.25, 0.5, 0.75, 0.99))


def climate(values: np.ndarray, current: float | None, min_intervals: int = MIN_CLIMATE_INTERVALS) -> dict:
    """Summary of past interval slowdowns (box plot numbers) and the percentile of the current one.

    Whiskers at p1/p99 rather than Tukey fences: with thousands of intervals the
    fences flag hundreds of points, while p1/p99 read directly as "rarely worse".
    The percentile is the share of past intervals at or below the current value (%).
    """
    return climates([values], [current], min_intervals)[0]


def _sorted(v: np.ndarray) -> np.ndarray:
    """`np.sort(v)` (finite values): `v` itself when already in order, as a Status card's are (the probe cache's
    sorted month divided by one positive baseline): 600 sorts were ~0.04 s of a restart's first answer. Not
    with a negative zero, whose place beside a zero the sort decides."""
    if len(v) < 2 or ((v[1:] < v[:-1]).any() or np.signbit(v).any()):
        return np.sort(v)
    return v


def climates(values: list[np.ndarray], currents: list[float | None],
             min_intervals: int = MIN_CLIMATE_INTERVALS) -> list[dict]:
    """`climate` of each (values, current) pair: a Status card's six ops in one pass (600 `np.quantile` calls
    were ~15 % of a Status answer of 100 targets, issue 40). The quantiles are numpy's default ('linear')
    computed as `np.quantile` does them, operation for operation: bit for bit its numbers
    (tests/test_web.py compares them)."""
    sorted_ = [_sorted(np.asarray(v, np.float64)[np.isfinite(v)]) for v in values]
    out = [{"n_intervals": int(len(v)), "p01": None, "q1": None, "median": None, "q3": None, "p99": None,
            "percentile_now": None} for v in sorted_]
    judged = [k for k, v in enumerate(sorted_) if len(v) >= min_intervals]
    if not judged:
        return out
    flat = np.concatenate([sorted_[k] for k in judged])
    n = np.array([len(sorted_[k]) for k in judged], np.int64)
    offset = np.concatenate(([0], np.cumsum(n)[:-1]))
    # numpy's _quantile for method 'linear': virtual index (n - 1) * q, its floor and the next, the last value
    # past the end; gamma the index's fraction; _lerp's two formulas, the second where gamma >= 0.5
    index = (n[:, None] - 1) * CLIMATE_Q
    below = np.floor(index)
    above = below + 1
    past_end = index >= (n[:, None] - 1)
    below[past_end] = -1
    above[past_end] = -1
    below, above = below.astype(np.intp), above.astype(np.intp)
    gamma = index - below
    last = offset[:, None] + n[:, None] - 1
    a = flat[np.where(below < 0, last, offset[:, None] + below)]
    b = flat[np.where(above < 0, last, offset[:, None] + above)]
    diff = b - a
    q = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=q, where=gamma >= 0.5)
    for row, k in enumerate(judged):
        out[k].update(zip(CLIMATE_KEYS, q[row].tolist()))
        current = currents[k]
        if current is not None and np.isfinite(current):
            v = sorted_[k]
            out[k]["percentile_now"] = float(100.0 * np.searchsorted(v, current, side="right") / len(v))
    return out
