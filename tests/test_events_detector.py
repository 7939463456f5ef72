"""The event detector on numpy alone (stats/events.py, issue 40) against scipy, its reference: the
smoothed curve, the local maxima, their prominences and the events, bit for bit, on random series of
every shape the detector meets (sparse bursts, plateaus and ties, steps, random walks) and on the
workload's real telemetry sample. scipy stays a dependency of the workload's autocorrelation and
spectrogram, so the reference is at hand wherever the suite runs."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from ioweather.stats import events as E

signal = pytest.importorskip("scipy.signal")
ndimage = pytest.importorskip("scipy.ndimage")


def _scipy_smooth(x, window):
    window = max(1, int(window))
    if window == 1:
        return np.asarray(x, np.float64).copy()
    k = signal.windows.hann(window + 2)[1:-1]
    return ndimage.convolve1d(np.asarray(x, np.float64), k / k.sum(), mode="nearest")


def _series(rng, trial: int) -> np.ndarray:
    n = int(rng.integers(1, 400))
    kind = trial % 4
    if kind == 0:
        return rng.exponential(1e9, size=n) * (rng.random(n) < 0.3)
    if kind == 1:
        return np.round(rng.random(n) * 4) * 1e9  # plateaus and equal peaks
    if kind == 2:
        return np.repeat(rng.integers(0, 5, size=max(1, n // 5)).astype(float), 5) * 1e9
    return np.abs(np.cumsum(rng.normal(size=n))) * 1e9


def test_the_numpy_detector_is_scipys_bit_for_bit():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    events = 0
    for trial in range(250):
        x = _series(rng, trial)
        window = int(rng.integers(1, 60))
        s = E.smooth(x, window)
        assert np.array_equal(s, _scipy_smooth(x, window)), (seed, trial, window)
        for y in (x, s):
            peaks = signal.find_peaks(y)[0]
            assert np.array_equal(E.local_maxima(y), peaks), (seed, trial)
            if len(peaks):
                assert np.array_equal(E.prominences(y, peaks), signal.peak_prominences(y, peaks)[0]), (seed, trial)
            for amp in (0.5e9, 2e9):
                assert np.array_equal(E.find_peaks(y, amp), signal.find_peaks(y, prominence=amp)[0]), (seed, trial)
        events += len(E.detect_events(x, 60.0, window * 60.0, 1e9))
    assert events > 40  # the comparison met events, not only empty lists


def test_the_detector_finds_scipys_events_on_a_real_series(testdata):
    """Five minutes of a real Lustre file system's bytes (an LMT day's first 61 samples, every OST's
    cumulative read and write bytes, differenced): the events scipy's own steps find, at several scales."""
    import sqlite3

    path = testdata / "lmt" / "snx11025_2018-01-28.sqlite3"
    if not path.is_file():
        pytest.skip(f"no {path}")
    with sqlite3.connect(path) as con:
        rows = con.execute("SELECT TS_ID, SUM(READ_BYTES) + SUM(WRITE_BYTES) FROM OST_DATA GROUP BY TS_ID "
                           "ORDER BY TS_ID").fetchall()
    rate = np.diff(np.array([r[1] for r in rows], np.float64)) / 5.0
    assert len(rate) == 60 and rate.max() > 0
    found = 0
    for window_s in (5.0, 15.0, 30.0, 60.0):
        for amp in np.quantile(rate, [0.1, 0.5, 0.9]) - rate.min():
            s = _scipy_smooth(E.fill_missing(rate), round(window_s / 5.0))
            assert np.array_equal(E.smoothed(rate, 5.0, window_s), s)
            want = signal.find_peaks(s, prominence=amp)[0]
            assert np.array_equal(E.find_peaks(s, amp), want)
            found += len(want)
            assert len(E.detect_events(rate, 5.0, window_s, amp)) == len(E._merge_shallow(s, want, amp))
    assert found > 0


def test_the_detector_loads_no_scipy():
    import subprocess

    code = ("import sys, numpy as np; from ioweather.stats import events as E; "
            "E.detect_events(np.r_[np.zeros(50), np.full(20, 5e9), np.zeros(50)], 60.0); "
            "print(any(m == 'scipy' or m.startswith('scipy.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
