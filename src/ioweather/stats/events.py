"""The I/O event detector of seed 004 section 7 (METHODS.md section 4), on numpy alone.

`ioweather workload`, `events`, `report`, the Servers page and `why JOB` find events with this one
detector. It used scipy (`signal.windows.hann`, `ndimage.convolve1d`, `signal.find_peaks` with a
prominence); importing scipy.signal took 0.8 s of `why`'s 2.2 s (issue 40), so the three are written
here in numpy, computed the way scipy computes them, operation for operation: the smoothed curve and
the events are bit for bit scipy's (tests/test_events_detector.py checks both against scipy on random
and real series, every window width from 1 to 59).

Conventions (docs/workload.md): a missing interval is NaN; it is filled linearly before smoothing so
smoothing neither spreads NaN nor invents dips; an event's bytes and peak come from the raw series.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_SMOOTH_S = 600.0       # seed 004 Fig. 10
DEFAULT_MIN_AMPLITUDE = float(1 << 30)  # seed 004: "about 1 GB/s"; binary, like every size ioweather parses


@dataclass(frozen=True)
class Event:
    start: int       # index of the first interval
    end: int         # index one past the last interval (the minimum that closes the event)
    peak: int        # index of the highest raw rate in [start, end)
    peak_bps: float
    bytes: float


def fill_missing(x: np.ndarray) -> np.ndarray:
    """Missing values linearly interpolated (so smoothing does not spread NaN or invent dips)."""
    x = np.asarray(x, np.float64)
    ok = np.isfinite(x)
    if ok.all() or not ok.any():
        return np.where(ok, x, 0.0)
    idx = np.arange(len(x))
    return np.interp(idx, idx[ok], x[ok])


def smoothed(rate: np.ndarray, interval_s: float, window_s: float) -> np.ndarray:
    """The rate smoothed over `window_s` with its missing intervals filled: the curve events are found on."""
    return smooth(fill_missing(rate), round(window_s / interval_s))


def hann(window: int) -> np.ndarray:
    """The `window` nonzero points of a Hann window of window + 2 points (scipy.signal.windows.hann(window + 2)
    without its zero ends), summed as scipy's general_cosine sums them: 0.5 + 0.5 cos over linspace(-π, π)."""
    fac = np.linspace(-np.pi, np.pi, window + 2)
    w = np.zeros(window + 2)
    w += 0.5 * np.cos(0 * fac)
    w += 0.5 * np.cos(1 * fac)
    return w[1:-1]


def convolve_nearest(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """scipy.ndimage.convolve1d(x, kernel, mode="nearest"): the kernel reversed and correlated, an even
    kernel's origin one sample left, edges padded with the edge value; a symmetric odd kernel (to within
    DBL_EPSILON, as ndimage tests it) sums each pair of samples first. Same operations in the same
    order as ndimage's C loop, one tap at a time over the whole series (kernel × series work, as there)."""
    x = np.asarray(x, np.float64)
    fw = np.asarray(kernel, np.float64)[::-1]
    size, n = len(fw), len(x)
    size1 = size // 2
    size2 = size - size1 - 1
    before = size1 if size & 1 else size1 - 1
    pad = np.concatenate((np.full(before, x[0]), x, np.full(size - 1 - before, x[-1])))

    def tap(j: int) -> np.ndarray:
        return pad[size1 + j:size1 + j + n]

    eps = np.finfo(np.float64).eps
    if size & 1 and all(abs(fw[size1 + i] - fw[size1 - i]) <= eps for i in range(1, size1 + 1)):
        out = tap(0) * fw[size1]
        for j in range(-size1, 0):
            out = out + (tap(j) + tap(-j)) * fw[size1 + j]
        return out
    out = tap(size2) * fw[size1 + size2]
    for j in range(-size1, size2):
        out = out + tap(j) * fw[size1 + j]
    return out


def smooth(rate: np.ndarray, window: int) -> np.ndarray:
    """Convolve with a Hann kernel `window` samples wide (differentiable, unlike a moving average,
    which is what seed 004 asks of the kernel). Edges are padded with the edge value."""
    window = max(1, int(window))
    if window == 1:
        return np.asarray(rate, np.float64).copy()
    kernel = hann(window)
    return convolve_nearest(np.asarray(rate, np.float64), kernel / kernel.sum())


def local_maxima(x: np.ndarray) -> np.ndarray:
    """Indices of the local maxima of `x` as scipy.signal.find_peaks finds them: a run of equal values
    with a strictly lower neighbour on both sides (never at either end), at its middle ((first + last) // 2)."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if n < 3:
        return np.zeros(0, np.int64)
    change = np.flatnonzero(x[1:] != x[:-1]) + 1
    first = np.concatenate(([0], change))
    last = np.concatenate((change - 1, [n - 1]))
    ok = (first >= 1) & (last <= n - 2)
    first, last = first[ok], last[ok]
    ok = (x[first - 1] < x[first]) & (x[last + 1] < x[first])
    return ((first[ok] + last[ok]) // 2).astype(np.int64)


def _bases(x: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """For each peak, the lowest value between it and the nearest higher sample on its left (or the
    series' start): scipy's left base. The nearest higher sample lies on the slope of the nearest higher
    *peak* (or there is none on that side), so a stack over the peaks, carrying the minima of the gaps
    between them, finds every base in one pass over the peaks instead of one scan of the series each."""
    if len(peaks) == 0:
        return np.zeros(0)
    gaps = np.minimum.reduceat(x[:peaks[-1] + 1], np.concatenate(([0], peaks[:-1] + 1)))  # (previous peak, peak]
    out = []
    stack: list[tuple[float, float]] = []  # (height, lowest value since the peak below it on the stack)
    for height, low in zip(x[peaks].tolist(), gaps.tolist()):  # Python floats: a year's 40,000 peaks in 50 ms
        while stack and stack[-1][0] <= height:
            below = stack.pop()[1]
            if below < low:
                low = below
        out.append(low)
        stack.append((height, low))
    return np.array(out, np.float64)


def prominences(x: np.ndarray, peaks: np.ndarray) -> np.ndarray:
    """scipy.signal.peak_prominences(x, peaks)[0] without a window: each peak's height above the higher
    of its two bases (the lowest points between it and a higher sample on either side)."""
    x = np.asarray(x, np.float64)
    peaks = np.asarray(peaks, np.int64)
    left = _bases(x, peaks)
    right = _bases(x[::-1], (len(x) - 1 - peaks)[::-1])[::-1]
    return x[peaks] - np.maximum(left, right)


def find_peaks(x: np.ndarray, prominence: float) -> np.ndarray:
    """scipy.signal.find_peaks(x, prominence=prominence)[0]: the local maxima at least that prominent."""
    peaks = local_maxima(x)
    return peaks[prominences(x, peaks) >= prominence] if len(peaks) else peaks


def _feet(s: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Turning points of the derivative where a rise starts (left feet) and a fall ends (right feet).

    A slope within +-tol counts as flat, so an event starts where the signal leaves its
    floor and ends where it reaches it again, not at some ripple of the smoothed floor.
    """
    d = np.diff(s)
    rising = d > tol
    falling = d < -tol
    # left foot j: the signal rises after j and did not rise into j
    left = np.flatnonzero(rising & np.concatenate(([True], ~rising[:-1])))
    # right foot j: the signal fell into j and does not fall after j
    right = np.flatnonzero(np.concatenate(([False], falling)) & np.concatenate((~falling, [True])))
    return left, right


def _merge_shallow(s: np.ndarray, peaks: np.ndarray, amplitude: float) -> np.ndarray:
    """Keep one of two neighbouring peaks when the dip between them is shallower than `amplitude`
    below the lower one. Prominence alone keeps both when they are exactly equal (a flat-topped
    signal split by a shallow dip), since neither is *higher* than the other."""
    kept: list[int] = []
    for p in peaks:
        if kept:
            last = kept[-1]
            if s[last:p + 1].min() > min(s[last], s[p]) - amplitude:
                if s[p] > s[last]:
                    kept[-1] = int(p)
                continue
        kept.append(int(p))
    return np.array(kept, np.int64)


def detect_events(rate: np.ndarray, interval_s: float, window_s: float = DEFAULT_SMOOTH_S,
                  min_amplitude: float = DEFAULT_MIN_AMPLITUDE, bytes_per_interval: np.ndarray | None = None) -> list[Event]:
    """Seed 004 section 7: smooth, find the turning points of the derivative, keep significant peaks.

    A peak of the smoothed rate is kept when it rises at least `min_amplitude` (bytes/s)
    above the minima that separate it from higher peaks (its prominence: two bumps of
    one burst separated by a shallow dip are one event). The start is the last foot before
    the peak, after the previous peak, that lies at least `min_amplitude` below the peak;
    the end is the first such foot after it. (decided: seed 004's text takes the minimum
    closest to the *previous* peak, which on a noisy floor stretches every event back over
    the whole idle gap before it; docs/workload.md shows the measurement.)
    An event's bytes are summed from `bytes_per_interval` when given (exact), else rate x interval.
    """
    raw = np.asarray(rate, np.float64)
    moved = raw * interval_s if bytes_per_interval is None else np.asarray(bytes_per_interval, np.float64)
    n = len(raw)
    if n < 3 or not np.isfinite(raw).any():
        return []
    window = max(1, round(window_s / interval_s))
    s = smoothed(raw, interval_s, window_s)
    peaks = _merge_shallow(s, find_peaks(s, min_amplitude), min_amplitude)
    if len(peaks) == 0:
        return []
    # Flat = rising more slowly than 1 % of the gentlest slope an event of min_amplitude can have.
    left, right = _feet(s, 0.01 * min_amplitude / window)
    events = []
    bounds = np.concatenate(([-1], peaks, [n]))
    for k, p in enumerate(peaks):
        lo, hi = bounds[k], bounds[k + 2]
        deep = s[p] - min_amplitude
        cand = left[np.searchsorted(left, lo, "right"):np.searchsorted(left, p, "left")]
        cand = cand[s[cand] <= deep]
        start = int(cand[-1]) + 1 if len(cand) else (lo + 1 + int(np.argmin(s[lo + 1:p + 1])) if p > lo + 1 else p)
        cand = right[np.searchsorted(right, p, "right"):np.searchsorted(right, hi, "left")]
        cand = cand[s[cand] <= deep]
        end = int(cand[0]) if len(cand) else (p + int(np.argmin(s[p:hi])) if hi > p else n)
        events.append([start, max(end, start + 1), int(p)])
    # Neighbouring events must not overlap: split at the lowest point between their peaks.
    for a, b in zip(events, events[1:]):
        if a[1] > b[0]:
            cut = a[2] + int(np.argmin(s[a[2]:b[2] + 1]))
            a[1], b[0] = max(cut, a[0] + 1), cut
    out = []
    for start, end, _ in events:
        seg = raw[start:end]
        if not np.isfinite(seg).any():
            continue
        i = int(np.nanargmax(seg))
        out.append(Event(start, end, start + i, float(seg[i]), float(np.nansum(moved[start:end]))))
    return out
