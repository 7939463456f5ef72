"""R's `density()` (gaussian kernel, bw.nrd0), reproduced to floating-point noise.

METHODS.md section 2.2. The result must match
`density(x, bw = "nrd0", adjust = a, kernel = "gaussian", n = 512, cut = 3)` of R,
because the paper's classes, splits and outlier cutoffs were found on R's curve.

Why hand-written: no Python library reproduces R's estimator. scipy's
`gaussian_kde` and statsmodels' `KDEUnivariate` evaluate the exact (unbinned) sum or
bin differently (statsmodels uses its own grid and no `cut`/padding rule), and an
exact KDE differs from R by about 1 % on log durations and far more on raw ones. What
makes R's curve R's is the linear binning onto a padded grid, the FFT convolution
with kernel coordinates spanning `2 * (up - lo)` (R < 4.4; R >= 4.4 uses
`(2n - 1) / (n - 1) * (up - lo)`), and the final linear interpolation; all of it is
here, step for step, and tests compare against R itself.

Reference: R's `src/library/stats/R/density.R` and `bandwidths.R` (`bw.nrd0`),
`src/library/stats/src/massdist.c` (`BinDist`). Silverman (1986), eq. 3.31.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from ioweather._native import density_core

R_MIN_GRID = 512
SQRT_2PI = np.sqrt(2.0 * np.pi)
#: The smallest normal float: below it (a subnormal bandwidth) the kernel's peak 1 / (sqrt(2 pi) bw) overflows.
MIN_BW = float(np.finfo(np.float64).tiny)


@dataclass(frozen=True)
class Density:
    """What R's `density()` returns: grid `x`, density `y`, bandwidth (after `adjust`), N."""

    x: np.ndarray
    y: np.ndarray
    bw: float
    n: int


def r_seq(start: float, stop: float, length_out: int) -> np.ndarray:
    """`seq.int(start, stop, length.out = n)` as R computes it.

    R fills the first half forwards from `start` and the second half backwards from
    `stop`, so both end points are exact; `np.linspace` differs in the last bits.
    """
    n = int(length_out)
    if n <= 0:
        return np.empty(0)
    out = np.empty(n)
    out[0] = start
    if n > 1:
        out[-1] = stop
    if n > 2:
        by = (stop - start) / (n - 1)
        i = np.arange(1, n - 1)
        first = i < n // 2
        out[1:-1] = np.where(first, start + i * by, stop - (n - 1 - i) * by)
    return out


def _quartile_ranks(n: int) -> tuple[list[float], np.ndarray]:
    """Type-7 positions of the 0.25 and 0.75 quantiles of n values, and the four order
    statistics (floor and ceiling of each) they interpolate between."""
    idx = [(n - 1) * 0.25, (n - 1) * 0.75]
    return idx, np.array([float(math.floor(i)) for i in idx] + [float(math.ceil(i)) for i in idx])


def _iqr_from(x: np.ndarray, idx: list[float], ranks: np.ndarray, vals) -> float:
    """R's interpolation of the two quartiles from their order statistics (`vals`, or None
    when the C selection gave up on clumped data: numpy's partition is then the better tool)."""
    if vals is None:
        vals = np.partition(x, [int(r) for r in ranks])[[int(r) for r in ranks]]
    q = []
    for j, i in enumerate(idx):
        a, b, h = vals[j], vals[j + 2], i - math.floor(i)
        q.append((1 - h) * a + h * b if h > 0 and a != b else a)
    return float(q[1] - q[0])


def iqr7(x: np.ndarray, lo: float, hi: float) -> float:
    """R's `IQR(x)`: quantiles of type 7 at 0.25 and 0.75, interpolated the way R does.

    The order statistics come from two counting passes in C (`order_stats`), not a
    partition of a copy of x (5x faster at 10 M values); `lo`, `hi` are min and max of x.
    """
    idx, ranks = _quartile_ranks(len(x))
    return _iqr_from(x, idx, ranks, density_core.order_stats(x, lo, hi, ranks))


def moments_and_iqr(x: np.ndarray, first_pass: tuple | None = None
                    ) -> tuple[tuple[float, float, float, float], float | None]:
    """((min, max, mean, var), IQR) of x in three passes (`moments` then `iqr7` take four).

    The IQR is None when x is not all finite (the mean then is not finite either).
    `first_pass` = (min, max, sum_hi, sum_lo) of x as `check_logs` returns them saves a pass.
    """
    if len(x) < 2:
        return density_core.moments(x), None
    idx, ranks = _quartile_ranks(len(x))
    mn, mx, mean, var, vals = density_core.moments_order_stats(x, ranks, *(first_pass or ()))
    if not math.isfinite(mean):
        return (mn, mx, mean, var), None
    return (mn, mx, mean, var), _iqr_from(x, idx, ranks, vals)


def bw_nrd0(x: np.ndarray, moments: tuple | None = None, iqr: float | None = None) -> float:
    """R's `bw.nrd0`: 0.9 * min(sd, IQR / 1.34) * N^(-1/5), with R's fallbacks.

    When the minimum is 0 R uses sd, then |x[1]|, then 1 (so constant data still gets
    a bandwidth). `moments` = (min, max, mean, var) and `iqr` of x when already known.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    if len(x) < 2:
        raise ValueError("need at least 2 data points")
    mn, mx, _, var = moments or density_core.moments(x)
    hi = math.sqrt(var)
    lo = min(hi, (iqr7(x, mn, mx) if iqr is None else iqr) / 1.34)
    if not lo:
        lo = hi or abs(float(x[0])) or 1.0
    return 0.9 * lo * len(x) ** -0.2


def bin_dist(x: np.ndarray, weight: float, lo: float, up: float, n: int) -> np.ndarray:
    """R's C `BinDist`: linear binning of `x` (each of mass `weight`) onto n points in [lo, up].

    Returns 2n values, the upper half zero (the FFT's padding). A point in the outermost
    half cells keeps only the share that falls inside, as in R. The loop is C
    (`_native/density_core.c`), in R's order, so the sums are R's to the last bit.
    """
    out = np.empty(2 * n)
    density_core.bin_dist(np.ascontiguousarray(x, dtype=np.float64), float(weight), float(lo), float(up), out)
    return out


def kernel_coords(lo: float, up: float, n: int, old_coords: bool = True) -> np.ndarray:
    """Kernel coordinates of length 2n, the second half mirrored negative (R's `kords`)."""
    span = 2.0 if old_coords else (2 * n - 1) / (n - 1)
    k = r_seq(0.0, span * (up - lo), 2 * n)
    k[n + 1:] = -k[n - 1:0:-1]
    return k


def r_density(x, *, adjust: float = 1.0, n: int = R_MIN_GRID, cut: float = 3.0,
              bw: float | None = None, old_coords: bool = True, first_pass: tuple | None = None) -> Density:
    """R's `density(x, bw = "nrd0", adjust, kernel = "gaussian", n, cut)`.

    `old_coords=True` (default) gives R < 4.4's kernel coordinates, which is what R
    4.2.2 produced for `../shared/testdata/r-density/`; False gives R >= 4.4's.
    Infinite values are dropped and the mass scaled by the finite share, as R does;
    NaN raises (R's `na.rm = FALSE`). `bw` overrides the nrd0 rule (before `adjust`).
    `first_pass` = (min, max, sum_hi, sum_lo) of x from `check_logs` (the caller took the logs).
    """
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    N = len(x)
    # (min, max, mean, var) and the IQR the bandwidth rule needs; the mean is finite only if every x is
    moments, iqr = moments_and_iqr(x, first_pass) if bw is None else (density_core.moments(x), None)
    if N and not math.isfinite(moments[2]):
        if np.isnan(x).any():
            raise ValueError("'x' contains missing values")
        x = x[np.isfinite(x)]
        moments, iqr = moments_and_iqr(x) if bw is None else (density_core.moments(x), None)
    nx = len(x)
    n_user = int(n)
    if n_user < 1:
        raise ValueError("n must be at least 1")
    n_grid = max(n_user, R_MIN_GRID)
    if n_grid > R_MIN_GRID:
        n_grid = 1 << int(np.ceil(np.log2(n_grid)))
    if bw is None:
        if nx < 2:
            raise ValueError("need at least 2 points to select a bandwidth automatically")
        bw = bw_nrd0(x, moments, iqr)
    if not np.isfinite(bw):
        raise ValueError("non-finite 'bw'")
    bw = adjust * bw
    if not bw > 0:
        raise ValueError("'bw' is not positive.")
    if bw < MIN_BW:
        # adjust=1e-320: the density would be all NaN, and no class could be read from it.
        raise ValueError(f"bandwidth {bw:.3g} is too small for floating point (use a larger adjust)")
    xmin, xmax = moments[0], moments[1]
    if nx == 0:
        raise ValueError("non-finite 'from'")
    start = xmin - cut * bw
    stop = xmax + cut * bw
    lo = start - 4 * bw
    up = stop + 4 * bw
    y = bin_dist(x, 1.0 / nx, lo, up, n_grid) * (nx / N)
    kords = kernel_coords(lo, up, n_grid, old_coords)
    with np.errstate(over="ignore"):  # far tails of a tiny bandwidth: (k / bw)^2 is inf, its kernel value 0
        kern = np.exp(-0.5 * (kords / bw) ** 2) / (SQRT_2PI * bw)
    # R: fft(fft(y) * Conj(fft(kords)), inverse = TRUE) / length(y); numpy's ifft already divides by the length.
    conv = np.fft.ifft(np.fft.fft(y) * np.conj(np.fft.fft(kern))).real[:n_grid]
    dens = np.maximum(conv, 0.0)
    xords = r_seq(lo, up, n_grid)
    grid = r_seq(start, stop, n_user)
    return Density(x=grid, y=np.interp(grid, xords, dens), bw=float(bw), n=N)
