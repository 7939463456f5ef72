"""Interval statistics and slowdown against an independent pandas/numpy computation."""

import numpy as np
import pandas as pd
import pytest

from ioweather.stats.grouped import quantile_sorted, sort_groups
from ioweather.stats.probe import (STAT_QUANTILES, baseline_medians, interval_stats, slowdown, state)


def _synthetic(n=20000, seed=1):
    rng = np.random.default_rng(seed)
    t0 = 1_763_800_000 * 10**9
    start = t0 + np.sort(rng.integers(0, 6 * 3600 * 10**9, n))
    op = rng.integers(0, 6, n)
    dur = (rng.lognormal(-8 + op, 0.5, n) * 1e9).astype(np.int64)
    status = np.where(rng.random(n) < 0.02, 1, 0)
    status[rng.random(n) < 0.005] = 2
    return op.astype(np.int8), start, dur, status.astype(np.int8)


def test_grouped_quantiles_equal_numpy_per_group():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, 5000)
    vals = rng.exponential(size=5000)
    uk, starts, counts, v = sort_groups(keys, vals)
    for q in (0, 0.25, 0.5, 0.9, 0.99, 1):
        got = quantile_sorted(v, starts, counts, q)
        want = [np.quantile(vals[keys == k], q) for k in uk]
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_interval_stats_match_pandas():
    op, start, dur, status = _synthetic()
    rows = interval_stats(op, start, dur, status, 600)
    df = pd.DataFrame({"op": op, "b": start // (600 * 10**9) * 600 * 10**9, "d": dur / 1e9, "s": status})
    ok = df[df.s == 0].groupby(["op", "b"]).d
    assert len(rows) == df.groupby(["op", "b"]).ngroups
    for r in rows:
        key = (r["op_code"], r["interval_start_ns"])
        g = ok.get_group(key)
        assert r["count"] == len(g)
        assert r["errors"] == int(((df.op == key[0]) & (df.b == key[1]) & (df.s == 1)).sum())
        assert r["timeouts"] == int(((df.op == key[0]) & (df.b == key[1]) & (df.s == 2)).sum())
        assert r["mean_s"] == pytest.approx(g.mean(), rel=1e-12)
        for name, q in STAT_QUANTILES.items():
            assert r[f"{name}_s"] == pytest.approx(g.quantile(q), rel=1e-12), name


def test_no_quantile_from_fewer_than_two_samples():
    start = np.array([0, 10**9, 700 * 10**9], np.int64)
    rows = interval_stats(np.zeros(3, np.int8), start, np.array([5, 7, 9]) * 10**6, np.zeros(3, np.int8), 600)
    first, second = rows
    assert first["count"] == 2 and first["median_s"] == pytest.approx(0.006)
    assert second["count"] == 1
    assert second["median_s"] is None and second["p99_s"] is None
    assert second["min_s"] == pytest.approx(0.009) and second["max_s"] == pytest.approx(0.009)


def test_slowdown_is_stat_over_baseline_median():
    op, start, dur, status = _synthetic(seed=2)
    exp = baseline_medians(op, dur, status, 6)
    for code in range(6):
        sel = (op == code) & (status == 0)
        assert exp[code] == pytest.approx(np.median(dur[sel] / 1e9))
    # an interval where md_stat (op 3) is 5x slower must show a slowdown near 5
    slow = dur.copy()
    window = (start >= start[0] + 3600 * 10**9) & (start < start[0] + 4200 * 10**9) & (op == 3)
    slow[window] *= 5
    rows = slowdown(op, start, slow, status, 600, exp, "median")
    hit = [r for r in rows if r["op_code"] == 3 and r["slowdown"] and r["slowdown"] > 3]
    assert hit, "the slowed interval must stand out"
    assert all(r["stat"] == "median" for r in rows)
    for r in rows:
        if r["value_s"] is not None:
            assert r["slowdown"] == pytest.approx(r["value_s"] / r["expected_s"])
    with pytest.raises(ValueError):
        slowdown(op, start, dur, status, 600, exp, "mode")


def test_states():
    assert state(0.5) == "normal" and state(1.99) == "normal"
    assert state(2) == "degraded" and state(9.9) == "degraded"
    assert state(10) == "severely degraded"
    assert state(None) == "unknown" and state(float("nan")) == "unknown"
    assert state(3, degraded=4) == "normal"


def test_empty_input():
    e = np.zeros(0, np.int64)
    assert interval_stats(e, e, e, e, 60) == []
    assert np.isnan(baseline_medians(e, e, e, 6)).all()
