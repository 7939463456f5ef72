"""Workload statistics of a file system from server-side telemetry (METHODS.md section 4; seeds 002 section IV, 004).

Everything here is a pure function of numpy arrays. The input is the *aggregate*
series: bytes moved per resample interval (summed over every target), NaN where no
target reported anything in that interval, plus (for the power spectrum) a histogram
of per-target per-sampling-interval bytes. The heavy reduction from raw rows to these
arrays happens in DuckDB (`ioweather.store.telemetry_query`), so a year never enters
Python row by row.

Conventions (decided, see docs/workload.md):
- a missing interval is NaN, never 0; it is left out of means, CDFs and shares of time,
  and it breaks an idle run (we do not know whether the system was idle then);
- shares of time are relative to the *observed* time (intervals with data);
- an event's bytes and peak come from the raw (unsmoothed) series; smoothing only
  decides where events are.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ioweather.stats.events import (  # noqa: F401 (re-exported: the workload's names)
    DEFAULT_MIN_AMPLITUDE,
    DEFAULT_SMOOTH_S,
    detect_events,
    Event,
    fill_missing,
    smooth,
    smoothed,
)

# pandas and scipy are imported where used: the dashboard imports this module at start (its memory).
if TYPE_CHECKING:
    import pandas as pd

#: Table III of seed 002: upper bound (minutes, inclusive) of each idle-duration bin.
IDLE_BINS: tuple[tuple[str, float], ...] = (
    ("1", 1), ("2-5", 5), ("6-10", 10), ("11-20", 20), ("21-30", 30), ("31-40", 40),
    ("41-50", 50), ("51-60", 60), (">60", math.inf),
)
BURST_FRACTION = 0.33          # seed 002: "98 % of the time below 33 % of peak"
DEFAULT_IDLE_THRESHOLD = 0.05  # seed 002: "less than 5 % of peak"
SPECTRUM_BINS = 100            # seed 004 Fig. 7
STUDY_WINDOWS_S = (60, 120, 300, 600, 900, 1200, 1800, 3600, 7200)  # seed 004 Fig. 11


# --------------------------------------------------------------------------- totals
def calendar_totals(day: np.ndarray, read_bytes: np.ndarray, write_bytes: np.ndarray) -> tuple[list[dict], list[dict]]:
    """Daily and monthly totals from per-day sums; `day` counts UTC days since 1970-01-01.

    Days without data are absent (not zero): a missing day is unknown, not idle.
    """
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    if len(day) == 0:
        return [], []
    df = pd.DataFrame({"day": np.asarray(day, np.int64), "read_bytes": read_bytes, "write_bytes": write_bytes})
    df = df.groupby("day", sort=True).sum(min_count=1)
    dates = pd.to_datetime(df.index.to_numpy() * 86_400, unit="s")
    daily = [{"date": d.strftime("%Y-%m-%d"), "read_bytes": _num(r), "write_bytes": _num(w)}
             for d, r, w in zip(dates, df["read_bytes"], df["write_bytes"])]
    m = df.groupby(dates.strftime("%Y-%m")).sum(min_count=1)
    monthly = [{"date": k, "read_bytes": _num(r), "write_bytes": _num(w)}
               for k, r, w in zip(m.index, m["read_bytes"], m["write_bytes"])]
    return daily, monthly


def read_write_ratio(read_bytes: float, write_bytes: float) -> float | None:
    """Bytes read per byte written (seed 004: "1.6 times as much data is read as is written")."""
    return read_bytes / write_bytes if write_bytes > 0 else None


# --------------------------------------------------------------------------- throughput
def rates(bytes_per_interval: np.ndarray, interval_s: float) -> np.ndarray:
    return np.asarray(bytes_per_interval, np.float64) / interval_s


def peak_and_mean(rate: np.ndarray) -> tuple[float | None, float | None]:
    """Highest and mean rate over the observed intervals (None when nothing was observed)."""
    ok = np.isfinite(rate)
    if not ok.any():
        return None, None
    return float(rate[ok].max()), float(rate[ok].mean())


def burstiness(total_rate: np.ndarray, points: int = 101, below: float = BURST_FRACTION) -> dict:
    """The CDF of aggregate throughput (seed 002 Fig. 7) and the share of time below `below` x peak.

    The CDF is evaluated on `points` evenly spaced rates from 0 to the peak:
    cdf_frac[i] = share of observed intervals whose rate is <= cdf_bps[i].
    """
    r = np.sort(total_rate[np.isfinite(total_rate)])
    if len(r) == 0:
        return {"frac_time_below_33pct_peak": None, "cdf_bps": [], "cdf_frac": []}
    peak = r[-1]
    grid = np.linspace(0.0, peak, points)
    frac = np.searchsorted(r, grid, side="right") / len(r)
    frac[-1] = 1.0  # linspace's last point is the peak itself, but guard against rounding
    below_frac = np.searchsorted(r, below * peak, side="left") / len(r)
    return {"frac_time_below_33pct_peak": float(below_frac), "cdf_bps": grid.tolist(), "cdf_frac": frac.tolist()}


# --------------------------------------------------------------------------- idle periods
def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start index, length) of each run of True in `mask`."""
    m = np.concatenate(([False], np.asarray(mask, bool), [False])).astype(np.int8)
    d = np.diff(m)
    starts = np.flatnonzero(d == 1)
    ends = np.flatnonzero(d == -1)
    return starts, ends - starts


def idle_periods(total_rate: np.ndarray, interval_s: float, threshold: float = DEFAULT_IDLE_THRESHOLD,
                 peak: float | None = None) -> list[dict]:
    """Table III of seed 002: runs of consecutive intervals with rate < threshold x peak, by duration.

    Each row: bin (minutes), count of runs, minutes in those runs, and their share of the
    observed time. A missing interval ends a run. With no I/O at all, every observed interval is idle.
    """
    rate = np.asarray(total_rate, np.float64)
    ok = np.isfinite(rate)
    if peak is None:
        peak = float(rate[ok].max()) if ok.any() else 0.0
    idle = ok & ((rate < threshold * peak) if peak > 0 else True)
    _, lengths = runs(idle)
    # Compare in milliseconds so 5 x 60 s is exactly 5 minutes, not 4.999999.
    dur_ms = np.round(lengths * interval_s * 1000).astype(np.int64)
    edges_ms = np.array([60_000 * e for _, e in IDLE_BINS[:-1]], np.int64)
    which = np.searchsorted(edges_ms, dur_ms, side="left")
    observed_s = ok.sum() * interval_s
    out = []
    for i, (label, _) in enumerate(IDLE_BINS):
        sel = which == i
        minutes = float(dur_ms[sel].sum()) / 60_000
        out.append({"bin": label, "count": int(sel.sum()), "minutes": minutes,
                    "frac_time": minutes * 60 / observed_s if observed_s > 0 else None})
    return out


# --------------------------------------------------------------------------- power spectrum
def spectrum_edges(top: float, bins: int = SPECTRUM_BINS) -> np.ndarray:
    """Bin edges from 0 to the largest observation (seed 004 section 5)."""
    return np.linspace(0.0, top, bins + 1)


def power_spectrum_from_histogram(edges: np.ndarray, bytes_per_bin: np.ndarray) -> dict:
    """The I/O power spectrum given the bytes held by each bin, with its centroid.

    The centroid is where half of all bytes lie in smaller observations and half in larger
    ones (seed 004 section 5). We report the point inside that bin by linear interpolation
    of the cumulative bytes, so it does not jump by a whole bin width (decided).
    """
    w = np.asarray(bytes_per_bin, np.float64)
    total = w.sum()
    centroid = None
    if total > 0:
        cum = np.cumsum(w)
        i = int(np.searchsorted(cum, total / 2, side="left"))
        before = cum[i - 1] if i > 0 else 0.0
        frac = (total / 2 - before) / w[i] if w[i] > 0 else 0.0
        centroid = float(edges[i] + frac * (edges[i + 1] - edges[i]))
    return {"bin_edges_bytes": np.asarray(edges, np.float64).tolist(), "bytes": w.tolist(), "centroid_bytes": centroid}


def power_spectrum(observations: np.ndarray, bins: int = SPECTRUM_BINS) -> dict:
    """The power spectrum of raw per-target per-interval byte counts (the in-memory reference
    for what `telemetry_query.spectrum_histogram` computes in DuckDB)."""
    v = np.asarray(observations, np.float64)
    v = v[np.isfinite(v) & (v >= 0)]
    if len(v) == 0 or v.max() <= 0:
        return power_spectrum_from_histogram(spectrum_edges(0.0, bins), np.zeros(bins))
    edges = spectrum_edges(float(v.max()), bins)
    weights, _ = np.histogram(v, edges, weights=v)
    return power_spectrum_from_histogram(edges, weights)


# --------------------------------------------------------------------------- autocorrelation
def autocorrelation(x: np.ndarray, max_lag: int) -> np.ndarray:
    """Sample autocorrelation r(k) = sum (x_t - m)(x_{t+k} - m) / sum (x_t - m)^2, k = 0..max_lag,
    computed by FFT (seed 004 section 6: to 24 h lag).

    Missing values are set to the mean (they add nothing to the sums), the usual biased
    estimator as in R's acf() and statsmodels' acf(adjusted=False). Constant series give NaN.
    """
    # lazy: scipy, loaded only when this runs
    from scipy import signal

    x = np.asarray(x, np.float64)
    ok = np.isfinite(x)
    n = len(x)
    max_lag = max(0, min(int(max_lag), n - 1))
    if ok.sum() < 2:
        return np.full(max_lag + 1, np.nan)
    y = np.where(ok, x - x[ok].mean(), 0.0)
    full = signal.correlate(y, y, mode="full", method="fft")[n - 1:n + max_lag]
    if not full[0] > 0:
        return np.full(max_lag + 1, np.nan)
    return full / full[0]


# --------------------------------------------------------------------------- events
# The detector is stats/events.py (numpy alone, scipy's numbers): `why JOB` finds a window's events
# without importing scipy; the names stay here for the workload's callers.
def window_study(rate: np.ndarray, interval_s: float, windows_s=STUDY_WINDOWS_S,
                 min_amplitude: float = DEFAULT_MIN_AMPLITUDE) -> list[dict]:
    """Events found with each smoothing window (seed 004 Fig. 11): stable peaks persist across windows."""
    out = []
    for w in windows_s:
        if w < interval_s or w > len(rate) * interval_s:
            continue
        ev = detect_events(rate, interval_s, w, min_amplitude)
        out.append({"window_s": float(w), "count": len(ev), "peaks": [e.peak for e in ev]})
    return out


# --------------------------------------------------------------------------- spectrogram
def spectrogram(rate: np.ndarray, interval_s: float, segment_s: float = 3600.0):
    """Short-time Fourier transform power of the rate (seed 004 Fig. 12), missing values at the mean.

    Returns (frequencies in Hz, segment centres in s from the first interval, power [freq x time]).
    """
    # lazy: scipy, loaded only when this runs
    from scipy import signal

    x = np.asarray(rate, np.float64)
    ok = np.isfinite(x)
    if ok.sum() < 4:
        return np.array([]), np.array([]), np.zeros((0, 0))
    y = np.where(ok, x - x[ok].mean(), 0.0)
    nper = int(min(len(y), max(8, round(segment_s / interval_s))))
    f, t, p = signal.spectrogram(y, fs=1.0 / interval_s, window="hann", nperseg=nper, noverlap=nper // 2,
                                 detrend="constant", scaling="density", mode="psd")
    return f, t, p


def _num(v) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None


# --------------------------------------------------------------------------- everything at once
def total_of(read: np.ndarray, write: np.ndarray) -> np.ndarray:
    """read + write, missing only where both are missing (one side missing counts as what we saw)."""
    both_missing = ~np.isfinite(read) & ~np.isfinite(write)
    return np.where(both_missing, np.nan, np.nan_to_num(read) + np.nan_to_num(write))


class Signal(NamedTuple):
    """The aggregate signal as every surface draws it (rates in bytes/s, NaN = missing)."""

    read: np.ndarray
    write: np.ndarray
    total: np.ndarray
    smoothed: np.ndarray


def aggregate_signal(read_bytes: np.ndarray, write_bytes: np.ndarray, interval_s: float, smooth_s: float) -> Signal:
    """Read and write rates, their total and the total smoothed as `detect_events` smooths it."""
    read = rates(read_bytes, interval_s)
    write = rates(write_bytes, interval_s)
    total = total_of(read, write)
    return Signal(read, write, total, smoothed(total, interval_s, smooth_s))


def summarize(t0_ns: int, interval_s: float, read_bytes: np.ndarray, write_bytes: np.ndarray, *,
              idle_threshold: float = DEFAULT_IDLE_THRESHOLD, smooth_s: float = DEFAULT_SMOOTH_S,
              min_amplitude: float = DEFAULT_MIN_AMPLITUDE, acf_max_lag_s: float = 86400.0) -> dict:
    """The time-series statistics of the aggregate read and write bytes per interval (NaN = missing).

    Returns the `ioweather workload` JSON keys that depend only on the series; times are
    nanoseconds here (the command formats them).
    """
    read = rates(read_bytes, interval_s)
    write = rates(write_bytes, interval_s)
    total = total_of(read, write)
    peak_read, _ = peak_and_mean(read)
    peak_write, _ = peak_and_mean(write)
    peak_total, mean_total = peak_and_mean(total)
    lags = int(acf_max_lag_s // interval_s)
    acf_read = autocorrelation(read, lags)
    acf_write = autocorrelation(write, lags)
    events = events_of(t0_ns, interval_s, read_bytes, write_bytes, smooth_s, min_amplitude)
    return {
        "peak_read_bps": peak_read,
        "peak_write_bps": peak_write,
        "peak_total_bps": peak_total,
        "mean_total_bps": mean_total,
        "burstiness": burstiness(total),
        "idle_periods": idle_periods(total, interval_s, idle_threshold, peak_total),
        "acf": {"lags_s": (np.arange(len(acf_read)) * interval_s).tolist(),
                "read": acf_read.tolist(), "write": acf_write.tolist()},
        "events": events,
    }


def events_of(t0_ns: int, interval_s: float, read_bytes: np.ndarray, write_bytes: np.ndarray,
              smooth_s: float = DEFAULT_SMOOTH_S, min_amplitude: float = DEFAULT_MIN_AMPLITUDE) -> list[dict]:
    """The events of the aggregate series (`summarize`'s "events", times in ns): found on the total rate,
    their bytes summed from the bytes per interval (exact)."""
    total = total_of(rates(read_bytes, interval_s), rates(write_bytes, interval_s))
    step_ns = int(round(interval_s * 1e9))
    return [{"start_ns": t0_ns + e.start * step_ns, "end_ns": t0_ns + e.end * step_ns,
             "peak_time_ns": t0_ns + e.peak * step_ns, "peak_bps": e.peak_bps, "bytes": e.bytes}
            for e in detect_events(total, interval_s, smooth_s, min_amplitude, total_of(read_bytes, write_bytes))]


def daily_mean_rates(t0_ns: int, interval_s: float, read_bytes: np.ndarray, write_bytes: np.ndarray) -> pd.DataFrame:
    """Mean read and write rate of each UTC day over its observed intervals (seed 004 Fig. 1)."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    step_ns = int(round(interval_s * 1e9))
    day = (t0_ns + np.arange(len(read_bytes), dtype=np.int64) * step_ns) // 86_400_000_000_000
    df = pd.DataFrame({"day": day, "read_bps": rates(read_bytes, interval_s), "write_bps": rates(write_bytes, interval_s)})
    out = df.groupby("day").mean()
    out.index = pd.to_datetime(out.index.to_numpy() * 86_400, unit="s")
    return out
