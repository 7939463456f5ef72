"""stats/climate.py (a motif's climates in one pass) against independent references: numpy's
percentiles, scipy.stats.pearsonr, and the one-metric-at-a-time definitions of stats/umami.py."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ioweather.stats import climate as cs
from ioweather.stats import umami as um


def _data(seed: int, n: int = 80, m: int = 6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, m)) * rng.uniform(0.1, 1e9, size=m) + rng.uniform(-5, 5, size=m)
    x[:, 1] = 0.6 * x[:, 0] + rng.normal(size=n) * x[:, 0].std()  # a correlated metric
    x[rng.random((n, m)) < 0.15] = np.nan
    x[3, 2] = np.inf  # not finite: left out like NaN
    return x


@pytest.mark.parametrize("seed", range(4))
def test_percentiles_equal_numpy(seed):
    x = _data(seed)
    qs = [5, 25, 50, 75, 95]
    got = cs.linear_percentiles(x, qs)
    for c in range(x.shape[1]):
        col = x[:, c][np.isfinite(x[:, c])]
        assert np.array_equal(got[:, c], np.percentile(col, qs))  # the same interpolation, bit for bit
    assert np.isnan(cs.linear_percentiles(np.full((4, 1), np.nan), [50])).all()
    assert cs.linear_percentiles(np.array([[7.0]]), [5, 95]).ravel().tolist() == [7.0, 7.0]


@pytest.mark.parametrize("seed", range(4))
def test_r_and_p_equal_scipy_pearsonr(seed):
    x = _data(seed)
    y = x[:, 0] * 0.3 + np.random.default_rng(seed + 10).normal(size=len(x)) * np.nanstd(x[:, 0])
    n, r = cs.pearson_columns(x, y)
    p = cs.pearson_p(r, n)
    for c in range(x.shape[1]):
        ok = np.isfinite(x[:, c]) & np.isfinite(y)
        ref = stats.pearsonr(x[ok, c], y[ok])
        assert n[c] == ok.sum()
        assert r[c] == pytest.approx(ref[0], rel=1e-9, abs=1e-12)
        assert p[c] == pytest.approx(ref[1], rel=1e-7, abs=1e-300)


def test_p_of_strong_correlations_and_degenerate_inputs():
    rng = np.random.default_rng(3)
    a = rng.normal(size=3000)
    b = a + rng.normal(size=3000) * 0.5
    n, r = cs.pearson_columns(a[:, None], b)
    ref = stats.pearsonr(a, b)
    # p is far below 1e-300 here: scipy's own value (0.0 or a subnormal), never a rounding of 1 - x
    assert cs.pearson_p(r, n)[0] == pytest.approx(ref[1], abs=1e-300)
    for x, y in (([1.0, 2.0], [1.0, 2.0]), ([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]),
                 ([1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]), ([1.0, np.nan, 3.0, np.nan], [1.0, 2.0, 3.0, 4.0])):
        n, r = cs.pearson_columns(np.array(x)[:, None], np.array(y))
        assert np.isnan(r[0])
        assert np.isnan(cs.pearson_p(r, n)[0])


@pytest.mark.parametrize("seed", range(3))
def test_expanding_equals_the_one_job_definitions(seed):
    """Every job's climate against its own history (the jobs that started before it, ties excluded)
    equals stats/umami.py's quartile, box and unusual and scipy's r and p computed job by job."""
    x = _data(seed, n=40, m=5)
    starts = np.sort(np.random.default_rng(seed).integers(0, 30, size=len(x)))  # ties on purpose
    prefix = np.searchsorted(starts, starts, side="left")
    big = np.array([1, 0, -1, 1, 0])  # column 0 is performance (bigger is better)
    rows = np.arange(len(x))
    res = cs.expanding(x, 0, prefix, rows, big)
    names = {1: True, 0: False, -1: None}
    for i in rows:
        h = x[: prefix[i]]
        assert res["history_n"][i] == np.isfinite(h[:, 0]).sum()
        for c in range(x.shape[1]):
            v = x[i, c] if np.isfinite(x[i, c]) else None
            assert (res["quartile"][i, c] or None) == um.quartile(v, h[:, c])
            assert res["unusual"][i, c] == um.unusual_in_bad_direction(v, h[:, c], names[big[c]])
            box = um.box(h[:, c])
            assert res["count"][i, c] == box["n"]
            if box["n"]:
                assert res["box"][:, i, c].tolist() == [box[k] for k in ("p5", "q1", "median", "q3", "p95")]
            if c == 0:
                continue
            ok = np.isfinite(h[:, c]) & np.isfinite(h[:, 0])
            if ok.sum() >= 3 and np.ptp(h[ok, c]) > 0 and np.ptp(h[ok, 0]) > 0:
                ref = stats.pearsonr(h[ok, c], h[ok, 0])
                assert res["r"][i, c] == pytest.approx(ref[0], rel=1e-9, abs=1e-12)
                assert res["p"][i, c] == pytest.approx(ref[1], rel=1e-7, abs=1e-300)
            else:
                assert np.isnan(res["r"][i, c])
