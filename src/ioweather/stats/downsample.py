"""Server-side downsampling of a time series that keeps its extremes.

A month of 1 Hz probe samples is 2.6 M points per op: a browser cannot draw
that, and an average per bucket would hide exactly the slow outliers a user is
looking for. Each equal-width time bucket keeps its smallest and its largest
value (the "min/max" or M4-without-first/last reduction), so every spike and
every dip stays visible at any zoom level, and the shape of the cloud is kept.

Hand-written rather than taken from `tsdownsample`: it is a dozen vectorized
numpy lines, and a compiled dependency for the same min/max per bucket would
not pay for itself.
"""

from __future__ import annotations

import numpy as np


def minmax_indices(t: np.ndarray, y: np.ndarray, n_buckets: int, t0: float | None = None,
                   t1: float | None = None) -> np.ndarray:
    """Indices (sorted) of the minimum and maximum of `y` in each of `n_buckets` equal time buckets.

    `t` must be sorted ascending. Buckets span [t0, t1] (default: the data's range).
    A bucket with one point keeps it once. `y` must be finite (durations are).
    """
    t = np.asarray(t)
    y = np.asarray(y, dtype=np.float64)
    n = len(t)
    if n == 0:
        return np.empty(0, np.int64)
    if n_buckets < 1:
        raise ValueError("n_buckets must be at least 1")
    lo = float(t[0]) if t0 is None else float(t0)
    hi = float(t[-1]) if t1 is None else float(t1)
    span = hi - lo
    if span <= 0:
        b = np.zeros(n, np.int64)
    else:
        b = ((t.astype(np.float64) - lo) * (n_buckets / span)).astype(np.int64)
        np.clip(b, 0, n_buckets - 1, out=b)
    order = np.lexsort((y, b))
    sb = b[order]
    first = np.flatnonzero(np.r_[True, sb[1:] != sb[:-1]])
    last = np.r_[first[1:] - 1, n - 1]
    return np.unique(np.concatenate([order[first], order[last]]))


def downsample(t: np.ndarray, y: np.ndarray, max_points: int, t0: float | None = None,
               t1: float | None = None) -> np.ndarray:
    """Indices of at most `max_points` points of (t, y) keeping each bucket's extremes; all when they fit."""
    n = len(t)
    if n <= max_points:
        return np.arange(n)
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    return minmax_indices(t, y, max_points // 2, t0, t1)


def split_budget(sizes: list[int], total: int, minimum: int = 2) -> list[int]:
    """Share a point budget among series: each gets what it has if that fits, the rest share equally.

    Water-filling, so a short series never wastes budget a long one could use.
    """
    budget = [0] * len(sizes)
    remaining = total
    pending = sorted(range(len(sizes)), key=lambda i: sizes[i])
    while pending:
        share = max(minimum, remaining // len(pending))
        i = pending[0]
        if sizes[i] <= share:
            budget[i] = sizes[i]
            remaining -= sizes[i]
            pending.pop(0)
            continue
        for j in pending:
            budget[j] = share
        break
    return budget
