"""Performance factors from latency densities (Kunkel 2015, seed 000; METHODS.md 2.3).

Classes are found on the density of ln(duration): its significant maxima are the
performance factors, the density minimum between two of them splits them, and the
point right of the last maximum where the density falls below a fraction of it is
the outlier cutoff. The linear models built on those cutoffs are in `factor_models`.

Pure functions: numpy arrays in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ioweather._native import density_core
from ioweather.stats.density import r_density

OUTLIER_LABEL = "outliers"
from ioweather.stats.factor_spec import DEFAULT_SIGNIFICANCE  # noqa: F401 (re-exported)


# ---------------------------------------------------------------- durations


def invalid_durations(durations_s: np.ndarray) -> dict[str, int]:
    """Counts of values a log-density cannot take: NaN, +-inf, zero, negative."""
    d = np.asarray(durations_s, dtype=np.float64)
    nan = int(np.isnan(d).sum())
    inf = int(np.isinf(d).sum())
    return {k: v for k, v in (("NaN", nan), ("infinite", inf), ("zero", int((d == 0).sum())),
                              ("negative", int((d < 0).sum()) - int(np.isneginf(d).sum()))) if v}


def all_positive_finite(durations_s: np.ndarray) -> bool:
    """True when every duration has a logarithm: one C pass (NaN slips through min/max, not the mean)."""
    d = np.ascontiguousarray(durations_s, dtype=np.float64)
    if not len(d):
        return True
    lo, _, mean, _ = density_core.moments(d)
    return lo > 0 and math.isfinite(mean)


def _checked_log(durations_s: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float, tuple]:
    """(durations as float64, their logs, min, max, first pass of the logs' moments), or
    ValueError naming what is wrong.

    After numpy's log, one C pass checks, finds the extremes and sums the logs (`check_logs`):
    at 10 M durations the separate passes were a third of the whole analysis.
    """
    d = np.ascontiguousarray(durations_s, dtype=np.float64)
    with np.errstate(all="ignore"):  # bad values are counted and named below
        logd = np.log(d)
    dmin, dmax, nbad, *first_pass = density_core.check_logs(d, logd)
    if nbad:
        what = ", ".join(f"{v} {k}" for k, v in invalid_durations(d).items())
        raise ValueError(f"durations must be positive and finite: found {what}")
    if len(d) < 2:
        raise ValueError(f"need at least 2 durations for a density, got {len(d)}")
    if dmin == dmax:
        raise ValueError(f"all {len(d)} durations are equal ({d[0]:.6g} s): a density needs spread")
    return d, logd, dmin, dmax, tuple(first_pass)


# ---------------------------------------------------------------- extrema, splits, cutoff


def local_maxima(y: np.ndarray) -> np.ndarray:
    """Indices of the local maxima of `y`, a plateau counted once at its middle (rounded down).

    The same answer as `scipy.signal.find_peaks(y)[0]` (the tests compare the two), written
    out because importing scipy.signal costs about a second, more than the whole analysis
    of 10 M durations. The ends of the curve are never maxima; a monotone curve gets its
    highest end.
    """
    y = np.asarray(y, dtype=np.float64)
    if len(y) < 3:
        return np.array([int(np.argmax(y))]) if len(y) else np.zeros(0, dtype=np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(y) != 0) + 1]  # runs of equal values
    ends = np.r_[starts[1:], len(y)] - 1
    v = y[starts]
    higher_than_left = np.r_[False, v[1:] > v[:-1]]
    higher_than_right = np.r_[v[:-1] > v[1:], False]
    peaks = ((starts + ends) // 2)[higher_than_left & higher_than_right]
    if len(peaks) == 0:
        peaks = np.array([int(np.argmax(y))])
    return peaks


def significant_maxima(y: np.ndarray, peaks: np.ndarray, h: float) -> np.ndarray:
    """The maxima at least `h` x the global maximum (METHODS.md 2.3).

    Without it one slow operation makes its own tiny bump, the "last maximum" moves
    onto it and the outlier rule finds no outliers at all. METHODS.md decided h = 0.01;
    on mixtures with known classes a tail of 1-5 % extreme values still makes bumps
    above 1 % often enough that 0.03 recovers the true number of classes more often in
    every category measured (docs/factors.md, "Choosing h"), so DEFAULT_SIGNIFICANCE is 0.03.
    """
    return peaks[y[peaks] >= h * y.max()]


def valley_minima(y: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """Index of the lowest density between each pair of consecutive `peaks` (middle of a flat floor)."""
    out = []
    for a, b in zip(peaks[:-1], peaks[1:]):
        seg = y[a:b + 1]
        at = np.flatnonzero(seg == seg.min())
        out.append(a + int(at[len(at) // 2]))
    return np.array(out, dtype=np.int64)


def outlier_cutoff(x: np.ndarray, y: np.ndarray, last_peak: int, fraction: float) -> float:
    """Grid position right of `last_peak` where the density first drops below `fraction` x its height.

    Linearly interpolated between the two grid points around the crossing; +inf when the
    density never drops that far (then nothing is an outlier).
    """
    thr = fraction * y[last_peak]
    below = np.flatnonzero(y[last_peak + 1:] < thr)
    if len(below) == 0:
        return math.inf
    j = last_peak + 1 + int(below[0])
    x0, x1, y0, y1 = x[j - 1], x[j], y[j - 1], y[j]
    return float(x0 + (y0 - thr) / (y0 - y1) * (x1 - x0))


# ---------------------------------------------------------------- classes


@dataclass
class FactorClass:
    label: str
    lo_s: float | None
    hi_s: float | None
    count: int
    fraction: float
    mean_s: float | None
    mean_bps: float | None


@dataclass
class FactorAnalysis:
    """The density of ln(duration) and what METHODS.md 2.3 reads from it."""

    n: int
    bandwidth: float
    adjust: float
    grid_x: np.ndarray
    grid_y: np.ndarray
    maxima_s: list[float]
    minima_s: list[float]
    splits_s: list[float]
    cutoff_s: float | None
    outlier_fraction: float
    classes: list[FactorClass]
    labels: np.ndarray = field(repr=False)  # per observation: class index, len(classes)-1 = outliers

    def as_dict(self) -> dict:
        """The `--json` shape of `ioweather factors density` (keys fixed by issue 4)."""
        return {
            "n": self.n, "bandwidth": self.bandwidth, "adjust": self.adjust,
            "grid_x": self.grid_x.tolist(), "grid_y": self.grid_y.tolist(),
            "maxima_s": self.maxima_s, "minima_s": self.minima_s, "splits_s": self.splits_s,
            "cutoff_s": self.cutoff_s, "outlier_fraction": self.outlier_fraction,
            "classes": [c.__dict__.copy() for c in self.classes],
        }


def class_labels(n_classes: int) -> list[str]:
    return [str(i + 1) for i in range(n_classes)] + [OUTLIER_LABEL]


def assign_classes(d: np.ndarray, logd: np.ndarray, bounds_log: np.ndarray, sizes: np.ndarray | None,
                   names: list[str], extremes: tuple[float, float] | None = None
                   ) -> tuple[np.ndarray, list[FactorClass]]:
    """Class index per observation (a value on a bound belongs to the class below) and
    range, count, fraction, mean duration and throughput per class. `extremes` = (min, max)
    of d when already known.

    Throughput is the class's bytes over its time, i.e. size / mean duration for one
    access size, which is how the paper turns 0.115 ms at 256 KiB into 2170 MiB/s.
    One C pass (`_native/density_core.c`): labels and sums at once.
    """
    labels = np.empty(len(d), dtype=np.int16)
    count, tsum, bsum = density_core.assign_classes(
        logd, d, None if sizes is None else np.ascontiguousarray(sizes, dtype=np.float64),
        np.ascontiguousarray(bounds_log, dtype=np.float64), labels)
    dmin, dmax = extremes or (float(d.min()), float(d.max()))
    edges = [dmin, *(math.exp(b) for b in bounds_log), dmax]
    out = []
    for i, name in enumerate(names):
        c = int(count[i])
        lo, hi = edges[i], edges[i + 1]
        if i == len(names) - 1 and c == 0:
            hi = None  # no outliers: the class has no upper end
        out.append(FactorClass(
            label=name,
            lo_s=lo if lo is not None and math.isfinite(lo) else None,
            hi_s=hi if hi is not None and math.isfinite(hi) else None,
            count=c, fraction=c / len(d),
            mean_s=tsum[i] / c if c else None,
            mean_bps=bsum[i] / tsum[i] if (sizes is not None and c and tsum[i] > 0) else None))
    return labels, out


def analyse(durations_s, sizes=None, *, adjust: float = 2.0, significance: float = DEFAULT_SIGNIFICANCE,
            cutoff_fraction: float = 0.05, split: str = "minimum", old_coords: bool = True) -> FactorAnalysis:
    """Classes, splits and outlier cutoff of `durations_s` (seconds) as METHODS.md 2.3.

    `split` is "minimum" (lowest density between two significant maxima) or "mean"
    (midpoint of the two maxima in log space, i.e. their geometric mean in seconds).
    Raises ValueError for durations that have no log-density, naming what is wrong with them.
    """
    if split not in ("minimum", "mean"):
        raise ValueError(f"split must be 'minimum' or 'mean', not {split!r}")
    if not 0 < significance <= 1:
        raise ValueError("significance must be in (0, 1]")
    if not 0 < cutoff_fraction < 1:
        raise ValueError("cutoff fraction must be in (0, 1)")
    if not adjust > 0:
        raise ValueError("adjust must be positive")
    d, logd, dmin, dmax, first_pass = _checked_log(durations_s)
    sz = None if sizes is None else np.asarray(sizes, dtype=np.float64)
    dens = r_density(logd, adjust=adjust, old_coords=old_coords, first_pass=first_pass)
    x, y = dens.x, dens.y
    peaks = significant_maxima(y, local_maxima(y), significance)
    valleys = valley_minima(y, peaks)
    if split == "minimum":
        split_log = [float(x[i]) for i in valleys]
    else:
        split_log = [float((x[a] + x[b]) / 2) for a, b in zip(peaks[:-1], peaks[1:])]
    cut_log = outlier_cutoff(x, y, int(peaks[-1]), cutoff_fraction)
    # "Durations above the cutoff are outliers": one on a bound belongs to the class below.
    labels, classes = assign_classes(d, logd, np.array([*split_log, cut_log]), sz, class_labels(len(peaks)),
                                     (dmin, dmax))
    cutoff_s = math.exp(cut_log) if math.isfinite(cut_log) else None
    return FactorAnalysis(
        n=len(d), bandwidth=dens.bw, adjust=adjust, grid_x=x, grid_y=y,
        maxima_s=[math.exp(x[i]) for i in peaks], minima_s=[math.exp(x[i]) for i in valleys],
        splits_s=[math.exp(s) for s in split_log], cutoff_s=cutoff_s,
        outlier_fraction=classes[-1].count / len(d), classes=classes, labels=labels)


def cutoff_of(durations_s, **kw) -> tuple[float, float]:
    """(outlier cutoff in s, outlier fraction) of one group; all-equal durations cut at their value.

    A timer too coarse to tell the operations apart is not an error for a model fit:
    the slowest duration of the group is then also its cutoff.
    """
    d = np.asarray(durations_s, dtype=np.float64)
    if len(d) >= 2 and d.min() == d.max() and d.min() > 0 and np.isfinite(d).all():
        return float(d[0]), 0.0
    a = analyse(d, **kw)
    return (a.cutoff_s if a.cutoff_s is not None else float(d.max())), a.outlier_fraction
