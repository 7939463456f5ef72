"""Exact order statistics of a union of sorted pieces (issue 21: a 30-day baseline without reading 15.6 M rows).

A *piece* is the successful durations of one op over one span (a day, an hour), kept sorted,
with a histogram over fixed buckets. The k-th smallest duration of many pieces is found
exactly in two steps (the classic two-level selection, as in a distributed quantile by
counting; cf. Greenwald & Khanna's observation that ranks add over partitions):

1. the pieces' histograms add up; the cumulative counts name the bucket holding rank k and the
   rank within it (k minus the count of every lower bucket);
2. each piece's values in that bucket are a contiguous slice of its sorted array, at an offset
   given by its own cumulative counts; only those slices are read, sorted, and indexed.

No approximation is involved: the result is the same integer `np.partition` finds in the
concatenation of every duration. Buckets are log-linear over integers (HDR-histogram style:
64 sub-buckets per power of two, relative width <= 1/64), so a slice holds about 1.5 % of the
samples near the mode of a lognormal-ish op and far fewer in the tails.
"""

from __future__ import annotations

import numpy as np

#: Sub-buckets per power of two (2**SUB_BITS); values below 2 * SUB get a bucket each.
SUB_BITS = 6
SUB = 1 << SUB_BITS
_LINEAR = 2 * SUB  # 128: values 0..127 are their own bucket
_MAX_BITS = 53  # float64 holds every int below 2**53 exactly (104 days in ns)
N_BUCKETS = _LINEAR + (_MAX_BITS - SUB_BITS - 2) * SUB + SUB  # 3072


def bucket_of(duration_ns: np.ndarray) -> np.ndarray:
    """Bucket index of each duration (ns); non-decreasing in the duration, so sorted values keep bucket order."""
    d = np.clip(np.asarray(duration_ns, np.int64), 0, (1 << _MAX_BITS) - 1)
    bits = np.frexp(d.astype(np.float64))[1].astype(np.int64)  # bit length, exact below 2**53
    shift = np.maximum(bits - (SUB_BITS + 1), 0)
    top = np.right_shift(d, shift) & (SUB - 1)
    return np.where(d < _LINEAR, d, _LINEAR + (bits - (SUB_BITS + 2)) * SUB + top)


def bucket_low(b: int) -> int:
    """The smallest duration (ns) of bucket `b` (for tests and documentation of the bounds)."""
    if b < _LINEAR:
        return b
    bits, top = divmod(b - _LINEAR, SUB)
    bits += SUB_BITS + 2
    return (SUB + top) << (bits - (SUB_BITS + 1))


def summarize(ok_duration_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted durations, histogram of N_BUCKETS counts) of one piece's successful durations."""
    v = np.sort(np.asarray(ok_duration_ns, np.int64))
    return v, np.bincount(bucket_of(v), minlength=N_BUCKETS).astype(np.int64)


def locate(hists: np.ndarray, ranks: list[int]) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """For each 0-based rank in the union of pieces with these histograms (pieces x buckets):
    (rank within its bucket, per-piece offset of the bucket's slice, per-piece slice length)."""
    hists = np.atleast_2d(np.asarray(hists, np.int64))
    total = np.cumsum(hists.sum(axis=0))
    per_piece = np.cumsum(hists, axis=1)
    out = []
    for r in ranks:
        if not 0 <= r < (total[-1] if len(total) else 0):
            raise ValueError(f"rank {r} outside the {int(total[-1]) if len(total) else 0} values")
        b = int(np.searchsorted(total, r, side="right"))
        below = int(total[b - 1]) if b else 0
        offsets = per_piece[:, b - 1] if b else np.zeros(len(hists), np.int64)
        out.append((r - below, offsets, hists[:, b]))
    return out


def pick(slices: list[np.ndarray], rank_in_bucket: int) -> int:
    """The `rank_in_bucket`-th smallest of the bucket's values gathered from every piece."""
    v = np.concatenate([np.asarray(s, np.int64) for s in slices]) if slices else np.zeros(0, np.int64)
    return int(np.partition(v, rank_in_bucket)[rank_in_bucket])


def median_ranks(n: int) -> list[int]:
    """Ranks numpy's median reads for n values (one, or the two middle ones)."""
    if n == 0:
        return []
    return [(n - 1) // 2] if n % 2 else [n // 2 - 1, n // 2]


def numpy_median_s(n: int, order_ns: dict[int, int]) -> float:
    """`np.median(durations / 1e9)` from its order statistics, bit for bit: numpy averages the
    middle values after dividing them (the mean of one or two float64 seconds)."""
    if n == 0:
        return float("nan")
    return float(np.mean(np.array([order_ns[r] for r in median_ranks(n)], np.int64) / 1e9))
