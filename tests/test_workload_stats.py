"""The pure workload statistics against references: seed 002's Table III, direct formulas, known signals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ioweather.stats import workload as W

# Seed 002, Table III: (bin, count, cumulative minutes, percentage of total time)
TABLE_III = [("1", 1420, 1420, 1.7), ("2-5", 2259, 7053, 8.4), ("6-10", 775, 5882, 7.0), ("11-20", 383, 5530, 6.6),
             ("21-30", 104, 2581, 3.1), ("31-40", 50, 1756, 2.1), ("41-50", 30, 1369, 1.6), ("51-60", 19, 1052, 1.3),
             ("> 60", 169, 30935, 37.1)]
# Bin ranges in minutes; the >60 bin's runs are sized to add up to the paper's minutes.
RANGES = [(1, 1), (2, 5), (6, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 60), (61, 1140)]


def _lengths(count: int, total: int, lo: int, hi: int) -> list[int]:
    """`count` run lengths in [lo, hi] summing to `total`, including both ends of the range when possible."""
    base = [lo] * count
    extra = total - lo * count
    assert 0 <= extra <= (hi - lo) * count
    for i in range(count):
        add = min(hi - lo, extra)
        base[i] += add
        extra -= add
    return base


def test_idle_table_reproduces_seed_002_table_iii():
    """A one-minute series whose idle runs have Table III's counts and minutes gives Table III back,
    percentages included, with the total time the paper's percentages imply (83,480 minutes)."""
    rng = np.random.default_rng(3)
    runs = []
    for (_, count, minutes, _), (lo, hi) in zip(TABLE_III, RANGES):
        runs += _lengths(count, minutes, lo, hi)
    rng.shuffle(runs)
    idle_minutes = sum(runs)
    total = 83_480
    busy = total - idle_minutes
    # separate idle runs by busy minutes (rate 100, the peak), spread as evenly as possible
    gaps = np.full(len(runs) + 1, busy // (len(runs) + 1))
    gaps[: busy - gaps.sum()] += 1
    assert gaps.min() >= 1
    series = []
    for g, r in zip(gaps, runs + [0]):
        series += [100.0] * int(g) + [rng.uniform(0, 4.99)] * r  # idle: below 5 % of the peak 100
    rate = np.array(series)
    assert len(rate) == total
    table = W.idle_periods(rate, 60.0)
    assert [row["bin"] for row in table] == ["1", "2-5", "6-10", "11-20", "21-30", "31-40", "41-50", "51-60", ">60"]
    for row, (_, count, minutes, pct) in zip(table, TABLE_III):
        assert row["count"] == count
        assert row["minutes"] == minutes
        assert round(100 * row["frac_time"], 1) == pct


def test_idle_run_boundaries_and_missing_break_runs():
    # 5 % of peak 100 is 5: exactly 5 is not idle (the paper says "less than")
    rate = np.array([100, 0, 5, 0, 0, np.nan, 0, 100] + [1] * 61, float)
    table = {r["bin"]: r for r in W.idle_periods(rate, 60.0)}
    assert table["1"]["count"] == 2          # [0] then 5 breaks it; [0] after the NaN
    assert table["2-5"]["count"] == 1        # the two zeros before the NaN
    assert table[">60"]["count"] == 1 and table[">60"]["minutes"] == 61
    assert table["1"]["frac_time"] == pytest.approx(2 / 68)  # the NaN is not observed time


def test_idle_bins_follow_minutes_at_other_resample_intervals():
    rate = np.array([10.0] + [0.0] * 12 + [10.0] + [0.0] * 13 + [10.0])  # 12 x 5 s = 1 min, 13 x 5 s > 1 min
    table = {r["bin"]: r for r in W.idle_periods(rate, 5.0)}
    assert table["1"]["count"] == 1 and table["2-5"]["count"] == 1
    assert table["2-5"]["minutes"] == pytest.approx(13 * 5 / 60)


def test_no_io_at_all_is_all_idle():
    table = W.idle_periods(np.zeros(90), 60.0)
    assert sum(r["count"] for r in table) == 1 and table[-1]["minutes"] == 90


def test_burstiness_cdf_and_share_below_33pct():
    rate = np.array([0, 1, 2, 3, 32, 33, 34, 100, np.nan], float)
    b = W.burstiness(rate, points=101)
    assert b["frac_time_below_33pct_peak"] == pytest.approx(5 / 8)  # 33 itself is not below
    assert b["cdf_bps"][0] == 0 and b["cdf_bps"][-1] == 100 and len(b["cdf_frac"]) == 101
    assert b["cdf_frac"][0] == pytest.approx(1 / 8) and b["cdf_frac"][-1] == 1.0
    assert b["cdf_frac"][33] == pytest.approx(6 / 8)  # <= 33
    assert np.all(np.diff(b["cdf_frac"]) >= 0)


def test_autocorrelation_matches_direct_sum():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=500)) + 0.3 * rng.normal(size=500)
    x[[10, 200, 201]] = np.nan
    got = W.autocorrelation(x, 50)
    m = np.nanmean(x)
    y = np.where(np.isfinite(x), x - m, 0.0)
    direct = np.array([np.dot(y[: len(y) - k], y[k:]) for k in range(51)]) / np.dot(y, y)
    np.testing.assert_allclose(got, direct, rtol=1e-10, atol=1e-12)


def test_autocorrelation_of_a_daily_cycle():
    t = np.arange(0, 10 * 86400, 60.0)
    x = 5 + np.sin(2 * np.pi * t / 86400)
    acf = W.autocorrelation(x, 1440)
    n = len(x)
    # biased estimator of a pure sinusoid: r(k) ~ (1 - k/n) cos(2 pi k / period)
    assert acf[720] == pytest.approx(-(1 - 720 / n), abs=2e-3)
    assert acf[1440] == pytest.approx(1 - 1440 / n, abs=2e-3)
    assert np.isnan(W.autocorrelation(np.ones(10), 3)).all()


def test_power_spectrum_weights_by_bytes_and_centroid_halves_the_bytes():
    obs = np.array([10.0] * 50 + [90.0] * 10 + [100.0])  # bytes: 500 in the 10 bin, 900 + 100 in the top bins
    s = W.power_spectrum(obs, bins=10)
    assert s["bin_edges_bytes"][0] == 0 and s["bin_edges_bytes"][-1] == 100
    assert s["bytes"][1] == 500 and s["bytes"][9] == 1000 and sum(s["bytes"]) == 1500
    # half of 1500 = 750: 500 below bin 9, then 250 of bin 9's 1000 -> a quarter into [90, 100]
    assert s["centroid_bytes"] == pytest.approx(92.5)
    ref, _ = np.histogram(obs, np.linspace(0, 100, 11), weights=obs)
    np.testing.assert_array_equal(s["bytes"], ref)


def test_power_spectrum_of_nothing():
    s = W.power_spectrum(np.array([0.0, np.nan]))
    assert s["centroid_bytes"] is None and sum(s["bytes"]) == 0


def _square(n, bursts, floor=0.0, rng=None):
    x = np.full(n, floor, float)
    if rng is not None:
        x += rng.uniform(0, floor, n)
    for s, e, a in bursts:
        x[s:e] += a
    return x


def test_events_recover_bursts_within_half_a_window():
    rng = np.random.default_rng(5)
    bursts = [(100, 130, 4e9), (300, 305, 3e9), (500, 600, 2e9), (900, 960, 6e9)]
    x = _square(1200, bursts, floor=2e7, rng=rng)
    ev = W.detect_events(x, 60.0, window_s=600, min_amplitude=1 << 30)
    assert len(ev) == len(bursts)
    half = 5  # half the 10-interval window
    for e, (s, end, a) in zip(ev, bursts):
        assert s - half - 1 <= e.start <= s
        assert end <= e.end <= end + half + 1
        assert s <= e.peak < end
        assert a <= e.peak_bps <= a + 4e7
        burst_bytes = a * (end - s) * 60
        assert burst_bytes <= e.bytes <= burst_bytes + 4e7 * 60 * (e.end - e.start)


def test_events_ignore_small_bumps_and_split_two_close_bursts():
    x = _square(600, [(100, 140, 3e9), (150, 190, 3e9), (300, 302, 5e8)])
    ev = W.detect_events(x, 60.0, window_s=300, min_amplitude=2e9)
    assert len(ev) == 2  # after a 5-minute window the 10-minute dip is 3e9 deep
    assert ev[0].end <= ev[1].start
    merged = W.detect_events(x, 60.0, window_s=1800, min_amplitude=2e9)
    assert len(merged) == 1  # a 30-minute window fills it to 1.76e9 below the peaks: one event
    assert merged[0].bytes == pytest.approx(2 * 3e9 * 40 * 60)
    assert W.detect_events(x, 60.0, window_s=300, min_amplitude=5e9) == []


def test_events_skip_missing_values():
    x = _square(400, [(100, 140, 3e9)])
    x[120] = np.nan
    x[300:310] = np.nan
    ev = W.detect_events(x, 60.0, window_s=300, min_amplitude=1e9)
    assert len(ev) == 1 and ev[0].bytes == pytest.approx(3e9 * 39 * 60)


def test_window_study_keeps_stable_peaks():
    x = _square(2000, [(200, 260, 4e9), (1000, 1030, 4e9)])
    study = W.window_study(x, 60.0, windows_s=(60, 300, 600, 1800), min_amplitude=1e9)
    assert [r["count"] for r in study] == [2, 2, 2, 2]
    for r in study:
        assert 200 <= r["peaks"][0] < 260 and 1000 <= r["peaks"][1] < 1030


def test_spectrogram_finds_the_planted_period():
    t = np.arange(0, 3 * 86400, 60.0)
    x = 1e9 * (1 + np.sin(2 * np.pi * t / 7200))
    f, seg, p = W.spectrogram(x, 60.0, segment_s=8 * 3600)
    assert p.shape == (len(f), len(seg))
    assert f[np.argmax(p.mean(axis=1))] == pytest.approx(1 / 7200, rel=0.05)


def test_calendar_totals_group_days_and_months():
    day = np.array([19782, 19782, 19783, 19813])  # 2024-02-29, 2024-02-29, 2024-03-01, 2024-03-31
    daily, monthly = W.calendar_totals(day, np.array([1.0, 2, 4, 8]), np.array([0.0, 0, 1, math.nan]))
    assert daily == [{"date": "2024-02-29", "read_bytes": 3.0, "write_bytes": 0.0},
                     {"date": "2024-03-01", "read_bytes": 4.0, "write_bytes": 1.0},
                     {"date": "2024-03-31", "read_bytes": 8.0, "write_bytes": None}]
    assert monthly == [{"date": "2024-02", "read_bytes": 3.0, "write_bytes": 0.0},
                       {"date": "2024-03", "read_bytes": 12.0, "write_bytes": 1.0}]
    assert W.read_write_ratio(3.0, 2.0) == 1.5 and W.read_write_ratio(1.0, 0.0) is None
