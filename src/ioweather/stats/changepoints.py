"""Change points: where the level of a long series shifts (an upgrade, a failing OST, a new workload).

Method (seed 001's conclusion and seed 004 §7 ask for long-term shifts; the detector is ruptures'):
PELT (Killick, Fearnhead & Eckley 2012) with the least-squares cost (a change in mean; ruptures'
C implementation, KernelCPD with the linear kernel) on the series divided by a robust estimate of
its noise, so that one penalty serves every series whatever its unit:

    sigma   = MAD(diff(x)) / (sqrt(2) * 0.6745)     (noise from first differences: insensitive
                                                     to the level shifts being looked for)
    penalty = PENALTY_PER_LOG_N * log(n)            (on x / sigma; a BIC-like penalty)
    minimum segment = MIN_SEGMENT points

PENALTY_PER_LOG_N = 4 keeps the false-positive rate on stationary Gaussian noise below 1 % of
series (measured over 1,000 seeded series of 1,000 points in tests/test_changepoints.py, which
reports the rate). Positive ratios (slowdown, fraction of peak, durations) are compared in log
space (`log=True`): a doubling is the same shift at every level, and the factor reported is the
ratio of the geometric means of the segments on each side.

Long series (a year of 10-minute statistics is 52,560 points; exact PELT on it takes ~20 s) are
searched in two steps: PELT on means of consecutive blocks (at most MAX_POINTS of them), then
each change is placed at the exact point, within the blocks on either side, that minimises the
squared error of the two segments it separates. A shift is thus found to the interval; a level
lasting less than MIN_SEGMENT blocks can go unseen (such a series is an episode, not a new level).

MAX_POINTS = 500: PELT's cost on a series without a change is quadratic (pruning needs changes),
7 ms for 1,000 blocks and 1.5 ms for 500 in ruptures' C code; 500 blocks of a year are 17.5 h
each, so a new level must last about 35 h to be seen (benchmarks/bench_changes.py, docs/changes.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ioweather.errors import UserError
from ioweather.stats.changepoint_spec import MIN_SEGMENT, PENALTY_PER_LOG_N  # noqa: F401 (re-exported)

MAX_POINTS = 500
CLIP = 3.0
_MAD_TO_SIGMA = 1.0 / (np.sqrt(2.0) * 0.6744897501960817)


@dataclass(frozen=True)
class Change:
    index: int           # first point of the new level, in the series as given (NaNs included)
    level_before: float  # mean (geometric mean with log=True) of the segment before
    level_after: float   # the same for the segment after
    factor: float | None  # level_after / level_before (None when the level before is 0)


def noise_sigma(x: np.ndarray) -> float:
    """Robust noise scale from first differences (0 for a constant series)."""
    d = np.diff(x)
    if len(d) == 0:
        return 0.0
    return float(np.median(np.abs(d - np.median(d))) * _MAD_TO_SIGMA)


def load_libraries() -> None:
    """Import what `change_points` uses (ruptures, which loads scipy: ~1.5 s and ~80 MB), so that a
    long-running process can pay for it in the background rather than in its first search."""
    # lazy: ruptures, scipy, loaded only when this runs
    import ruptures  # noqa: F401
    # lazy: scipy, loaded only when this runs
    from scipy.ndimage import median_filter  # noqa: F401


def change_points(values, *, log: bool = False, penalty_per_log_n: float = PENALTY_PER_LOG_N,
                  min_segment: int = MIN_SEGMENT, max_points: int = MAX_POINTS,
                  times_ns=None, period_ns: int | None = None) -> list[Change]:
    """Level shifts in `values` (NaN = missing, skipped). Raises UserError when too short to tell.

    With `times_ns` and `period_ns` (a day, for the probe's 10-minute medians) the typical value of
    each time of the period (the median over the series) is taken out before the search, so a
    daily cycle of load is not read as a level going up every morning and down every evening.
    """
    v = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(v) & ((v > 0) if log else True)
    idx = np.flatnonzero(keep)
    if len(idx) < 2 * min_segment:
        raise UserError(f"the series has {len(idx)} usable points; change detection needs at least "
                        f"{2 * min_segment} (two segments of {min_segment})")
    x = np.log(v[idx]) if log else v[idx]
    y = x if times_ns is None or not period_ns else deseasonalize(x, np.asarray(times_ns, np.int64)[idx], period_ns)
    k = -(-len(y) // max_points)  # block length: 1 unless the series is long
    coarse = _block_means(y, k)
    cuts = [b * k for b in _pelt(coarse, penalty_per_log_n, max(2, -(-min_segment // k)))]
    if k > 1:
        # A block holding the step itself sits between the two levels and can yield a second cut
        # beside the real one: after placing cuts exactly, keep only those worth their penalty.
        cuts = _prune(y, _refine(y, cuts, k), penalty_per_log_n, min_segment)
    bounds = [0, *cuts, len(x)]
    out = []
    for a, b, c in zip(bounds[:-2], bounds[1:-1], bounds[2:]):
        before, after = _level(x[a:b], log), _level(x[b:c], log)
        # a factor means something for positive levels only (ratios, rates, durations)
        out.append(Change(index=int(idx[b]), level_before=before, level_after=after,
                          factor=(after / before) if before > 0 and after >= 0 else None))
    return out


def deseasonalize(x: np.ndarray, times_ns: np.ndarray, period_ns: int) -> np.ndarray:
    """`x` minus the median of its time-of-period slot, when the series spans two periods or more.

    The cycle's shape is taken from the deviations around each period's own median, so that a
    level shift (which moves whole periods up or down) does not leak into the shape.
    """
    if len(times_ns) < 2 or times_ns[-1] - times_ns[0] < 2 * period_ns:
        return x
    step = int(np.median(np.diff(times_ns))) or 1
    slot = (times_ns % period_ns) // step
    period = (times_ns - times_ns[0]) // period_ns
    grid = np.full((int(period[-1]) + 1, int(slot.max()) + 1), np.nan)
    grid[period, slot] = x  # one value per (period, slot) on a regular grid; a repeat keeps the last
    resid = grid - _nanmedian(grid, axis=1)[:, None]
    shape = np.nan_to_num(_nanmedian(resid, axis=0))  # a slot without data: no correction
    return x - shape[slot]


def _nanmedian(a: np.ndarray, axis: int) -> np.ndarray:
    """np.nanmedian along `axis` of a 2-D array, by one sort (NaNs sort last): numpy's own goes
    through masked arrays for short rows and took 8 of the 25 ms a year-long series cost."""
    s = np.sort(a, axis=axis)
    n = np.sum(~np.isnan(a), axis=axis, keepdims=True)
    lo = np.take_along_axis(s, np.maximum((n - 1) // 2, 0), axis)
    hi = np.take_along_axis(s, np.minimum(n // 2, a.shape[axis] - 1), axis)
    return np.squeeze((lo + hi) / 2, axis=axis)  # NaN where the row or column has no value


def _block_means(x: np.ndarray, k: int) -> np.ndarray:
    if k == 1:
        return x
    n = len(x) // k * k
    means = x[:n].reshape(-1, k).mean(axis=1)
    return np.append(means, x[n:].mean()) if n < len(x) else means


def _pelt(x: np.ndarray, penalty_per_log_n: float, min_size: int) -> list[int]:
    """Change indices (the first point of each new level) by PELT on the noise-scaled series."""
    # lazy: ruptures, scipy, loaded only when this runs
    import ruptures

    sigma = noise_sigma(x) or float(np.std(x)) or 1.0  # piecewise constant: any difference is a change
    # Points further than CLIP sigmas from their neighbourhood's median count as CLIP sigmas: a
    # heavy-tailed series (benchmark runs hit by one bad night) must not make a level of each burst.
    med = _running_median(x, 2 * min_size + 1)
    z = (med + np.clip(x - med, -CLIP * sigma, CLIP * sigma)) / sigma
    z = (z - z.mean()).reshape(-1, 1)
    ends = ruptures.KernelCPD(kernel="linear", min_size=min_size, jump=1).fit(z).predict(
        pen=penalty_per_log_n * np.log(len(z)))
    return [int(e) for e in ends[:-1]]


def _prune(x: np.ndarray, cuts: list[int], penalty_per_log_n: float, min_segment: int) -> list[int]:
    """Drop, weakest first, cuts that leave a segment shorter than `min_segment` or gain less than
    the penalty (in squared noise units) over merging their two segments."""
    if not cuts:
        return []
    sigma2 = (noise_sigma(x) or float(np.std(x)) or 1.0) ** 2
    pen = penalty_per_log_n * np.log(len(x))
    c1 = np.concatenate([[0.0], np.cumsum(x)])
    c2 = np.concatenate([[0.0], np.cumsum(x * x)])

    def sse(a, b):
        return c2[b] - c2[a] - (c1[b] - c1[a]) ** 2 / (b - a)

    cuts = sorted(set(cuts))
    while cuts:
        bounds = [0, *cuts, len(x)]
        gains = [(sse(bounds[i], bounds[i + 2]) - sse(bounds[i], bounds[i + 1]) - sse(bounds[i + 1], bounds[i + 2]))
                 / sigma2 for i in range(len(cuts))]
        short = [min(bounds[i + 1] - bounds[i], bounds[i + 2] - bounds[i + 1]) < min_segment for i in range(len(cuts))]
        bad = [i for i in range(len(cuts)) if short[i] or gains[i] < pen]
        if not bad:
            break
        cuts.pop(min(bad, key=lambda i: gains[i]))
    return cuts


def _running_median(x: np.ndarray, w: int) -> np.ndarray:
    # lazy: scipy, loaded only when this runs
    from scipy.ndimage import median_filter

    return median_filter(x, size=min(w, len(x)), mode="nearest")


def _refine(x: np.ndarray, cuts: list[int], k: int) -> list[int]:
    """Each cut moved to the exact point within a block of it that best separates its two segments."""
    if not cuts:
        return []
    c1 = np.concatenate([[0.0], np.cumsum(x)])
    c2 = np.concatenate([[0.0], np.cumsum(x * x)])

    def sse(a, b):
        n = b - a
        return c2[b] - c2[a] - (c1[b] - c1[a]) ** 2 / n

    out = []
    bounds = [0, *cuts, len(x)]
    for i, cut in enumerate(cuts):
        lo, hi = bounds[i], bounds[i + 2]
        cand = np.arange(max(lo + 1, cut - k), min(hi - 1, cut + k) + 1)
        cost = sse(lo, cand) + sse(cand, hi)
        out.append(int(cand[np.argmin(cost)]))
    return out


def _level(seg: np.ndarray, log: bool) -> float:
    return float(np.exp(seg.mean())) if log else float(seg.mean())
