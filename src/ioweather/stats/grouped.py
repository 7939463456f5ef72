"""Quantiles and summaries of many groups at once, vectorized.

`pandas.groupby().quantile()` handles one quantile per pass and costs seconds on
the 15 M samples of a month of probes; sorting once by (group, value) and
indexing every group's order statistics directly is one lexsort plus O(groups).
"""

from __future__ import annotations

import numpy as np


def sort_groups(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sort `values` by (key, value). Returns (unique_keys, starts, counts, sorted_values)."""
    keys = np.asarray(keys)
    if len(keys) == 0:
        return keys[:0], np.zeros(0, np.int64), np.zeros(0, np.int64), np.asarray(values, np.float64)[:0]
    fast = _sort_int_groups(keys, values)
    if fast is not None:
        k, v = fast
    else:
        values = np.asarray(values, dtype=np.float64)
        order = np.lexsort((values, keys))
        k, v = keys[order], values[order]
    brk = np.flatnonzero(k[1:] != k[:-1]) + 1
    starts = np.concatenate(([0], brk)).astype(np.int64)
    counts = np.diff(np.concatenate((starts, [len(k)]))).astype(np.int64)
    return k[starts], starts, counts, v


def quantile_sorted(v: np.ndarray, starts: np.ndarray, counts: np.ndarray, q: float, min_count: int = 2) -> np.ndarray:
    """Quantile `q` of each group of sorted `v` (numpy's default 'linear' method = R type 7).

    Groups with fewer than `min_count` values get NaN: a quantile of one sample is not a quantile.
    """
    out = np.full(len(starts), np.nan)
    ok = counts >= max(min_count, 1)
    if not ok.any():
        return out
    h = (counts[ok] - 1) * q
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, counts[ok] - 1)
    base = starts[ok]
    out[ok] = v[base + lo] + (h - lo) * (v[base + hi] - v[base + lo])
    return out


def mean_sorted(v: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    out = np.full(len(starts), np.nan)
    nz = counts > 0
    sums = np.add.reduceat(v, starts[nz]) if nz.any() else np.zeros(0)
    out[nz] = sums / counts[nz]
    return out


def _sort_int_groups(keys: np.ndarray, values) -> tuple[np.ndarray, np.ndarray] | None:
    """Fast path for non-negative integer values (durations in ns): one int64 sort of
    (dense group rank << b) | value instead of a two-key lexsort (4-5x faster on 10^7 rows).
    Returns None when the values do not fit."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu" or len(values) == 0:
        return None
    vmax, vmin = int(values.max()), int(values.min())
    if vmin < 0:
        return None
    if np.all(keys[1:] >= keys[:-1]):  # already grouped (probe samples come sorted by op, time)
        k = keys
        rank = np.concatenate(([0], np.cumsum(keys[1:] != keys[:-1])))
    else:
        k, rank = np.unique(keys, return_inverse=True)
        k = None
    bits = max(vmax.bit_length(), 1)
    if int(rank[-1] if k is not None else rank.max()).bit_length() + bits > 62:
        return None
    composite = (rank.astype(np.int64) << bits) | values.astype(np.int64)
    composite.sort()
    r = composite >> bits
    v = (composite & ((1 << bits) - 1)).astype(np.float64)
    if k is not None:
        firsts = np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1))
        uk = keys[firsts]
    else:
        uk = np.unique(keys)
    return uk[r], v
