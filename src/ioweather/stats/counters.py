"""Cumulative counters -> amounts per interval (METHODS.md section 4), pure functions.

Servers export cumulative counters (bytes read since the target was mounted, opens since boot).
What the statistics need is the amount moved in each sampling interval. The rules:

* the amount in [t_i, t_i+1) is c(t_i+1) - c(t_i);
* a counter that goes backwards (server restart, target remount, 32-bit wrap) gives a
  **missing** value (NaN) for that interval, never a negative one; the next interval is
  measured from the new, lower value again;
* an interval with a missing end (no sample) is missing;
* a span longer than `max_gap` nominal steps between two samples is a gap: it becomes
  round(span / step) intervals, all missing. The bytes moved during a gap happened at unknown
  times, so no interval gets them (pytokio adds them all to the interval after the gap, which
  invents a burst that never happened). Totals over a range with gaps are therefore lower
  bounds, and the number of missing intervals says by how much to distrust them;
* a counter that rises faster than `MAX_RATE_PER_S` per second of the interval gives a **missing**
  value too: no server moves 2^50 bytes (1 PiB) or does 10^15 operations a second, so such a jump
  is a corrupt, reset-and-wrapped or misread counter (500 -> 2^64-10 would be 1.8e19 bytes).

Integer inputs stay integers through the subtraction, so byte counters above 2**53 (9 PB)
keep exact deltas; the result is float64 because NaN marks missing values.
"""

from __future__ import annotations

import numpy as np

MAX_GAP_STEPS = 1.5
#: The fastest a counter can rise, per second (see above); 1,000 times the fastest Lustre OST today.
MAX_RATE_PER_S = float(2**50)


def grid_deltas(values: np.ndarray, missing: np.ndarray | None = None) -> np.ndarray:
    """(T, ...) cumulative counters on a common time grid -> (T-1, ...) amounts per interval.

    `values` may be integer (exact) or float with NaN for missing samples; `missing` (same
    shape, bool) marks missing samples of an integer array. An interval is NaN when either end
    is missing or the counter decreased.
    """
    v = np.asarray(values)
    if v.shape[0] < 2:
        return np.empty((0,) + v.shape[1:], dtype=np.float64)
    if np.issubdtype(v.dtype, np.integer):
        raw = v[1:].astype(np.int64) - v[:-1].astype(np.int64)
        out = raw.astype(np.float64)
        bad = raw < 0
    else:
        out = v[1:].astype(np.float64) - v[:-1].astype(np.float64)
        bad = ~(out >= 0)  # NaN compares false: missing ends are caught here too
    if missing is not None:
        m = np.asarray(missing, dtype=bool)
        bad = bad | m[1:] | m[:-1]
    out[bad] = np.nan
    return out


def expand_gaps(start_ns: np.ndarray, end_ns: np.ndarray, values: np.ndarray, step_s: float | None,
                max_gap: float = MAX_GAP_STEPS) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows (start_ns, value, interval_s, source) for intervals [start, end); a span > max_gap steps
    becomes round(span/step) missing intervals of one step each (the last one absorbs the
    remainder). `source` is the input interval each output row comes from.

    `values` may be (n,) or (n, k): one column per series sharing the same times.
    """
    start = np.asarray(start_ns, dtype=np.int64)
    end = np.asarray(end_ns, dtype=np.int64)
    vals = np.asarray(values, dtype=np.float64)
    span_ns = end - start
    same = np.arange(start.size)
    if not step_s or step_s <= 0 or span_ns.size == 0:
        return start, vals, span_ns / 1e9, same
    step_ns = int(round(step_s * 1e9))
    gap = span_ns > max_gap * step_ns
    if not gap.any():
        return start, vals, span_ns / 1e9, same
    count = np.where(gap, np.maximum(1, np.rint(span_ns / step_ns)).astype(np.int64), 1)
    idx = np.repeat(np.arange(start.size), count)
    # position of each output row inside its source interval: 0, 1, ..., count-1
    first = np.cumsum(count) - count
    pos = np.arange(idx.size) - np.repeat(first, count)
    out_start = start[idx] + pos * np.where(gap[idx], step_ns, 0)
    out_len = np.where(gap[idx], step_ns, span_ns[idx])
    last = pos == count[idx] - 1
    out_len = np.where(gap[idx] & last, end[idx] - out_start, out_len)
    out_vals = vals[idx].copy()
    out_vals[gap[idx]] = np.nan
    return out_start, out_vals, out_len / 1e9, idx


def series_deltas(times_ns: np.ndarray, values: np.ndarray, step_s: float | None = None,
                  max_gap: float = MAX_GAP_STEPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One counter sampled at `times_ns` (sorted) -> (start_ns, amount, interval_s) per interval.

    `step_s` is the nominal sampling period (default: the median spacing); see `expand_gaps`.
    """
    t = np.asarray(times_ns, dtype=np.int64)
    if t.size < 2:
        return np.empty(0, np.int64), np.empty(0), np.empty(0)
    if step_s is None:
        step_s = float(np.median(np.diff(t))) / 1e9
    d = grid_deltas(values)
    return expand_gaps(t[:-1], t[1:], d, step_s, max_gap)[:3]


def rates(amounts: np.ndarray, interval_s: np.ndarray) -> np.ndarray:
    """Amount per second of each interval (NaN stays NaN; zero-length intervals give NaN)."""
    a = np.asarray(amounts, dtype=np.float64)
    s = np.asarray(interval_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s > 0, a / s, np.nan)


def busy_pct(busy: np.ndarray, total: np.ndarray) -> np.ndarray:
    """100 * busy / total of two per-interval amounts (CPU ticks): LMT's %CPU."""
    b = np.asarray(busy, dtype=np.float64)
    t = np.asarray(total, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, np.clip(100.0 * b / t, 0.0, 100.0), np.nan)
