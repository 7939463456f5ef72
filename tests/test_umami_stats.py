"""stats/umami.py, stats/coverage.py, stats/correlate.py against independent references:
numpy percentiles, scipy.stats.pearsonr, R's cor.test (when Rscript is installed), planted shares."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from scipy import stats

from ioweather.stats import correlate
from ioweather.stats import coverage as cov
from ioweather.stats import umami as um

S = 10**9


def test_planted_competing_job_gives_its_share_exactly():
    # 4 targets x 5 s samples over 10 min; our job moves 3 MiB/interval on each target, a competitor
    # 1 MiB on targets 0-1 only: the job's share of the window is 12 / (12 + 2) = 6/7.
    t0 = 1_700_000_000 * S
    times = np.arange(t0, t0 + 600 * S, 5 * S)
    start, end = t0 + 100 * S, t0 + 400 * S
    rows_t, rows_v = [], []
    for target in range(4):
        for t in times:
            inside = start <= t < end + int(cov.TAIL_S * S)
            v = (3 << 20) * inside + ((1 << 20) if target < 2 else 0)
            rows_t.append(t)
            rows_v.append(float(v))
    rows_t, rows_v = np.array(rows_t), np.array(rows_v)
    iv = np.full(rows_t.size, 5.0)
    fs = cov.window_amount(rows_t, iv, rows_v, start, end + int(cov.TAIL_S * S))
    n_in = int(((times >= start) & (times < end + 5 * S)).sum())
    job_bytes = 4 * n_in * (3 << 20)
    assert fs == job_bytes + 2 * n_in * (1 << 20)
    cf = cov.coverage_factors({"bytes_read": 0, "bytes_written": job_bytes}, {"bytes_read": 0, "bytes_written": fs})
    assert cf["coverage_factor_bw"] == 12 / 14
    assert cf["contention_bw"] == 1 - 12 / 14
    assert cf["coverage_factor_bw_flagged"] is False


def test_partial_intervals_are_prorated():
    # one 10 s interval of 100 bytes, half of it inside the window's end (its start: test_coverage_job_start.py)
    assert cov.window_amount([15 * S], [10.0], [100.0], 5 * S, 20 * S) == 50.0


def test_no_telemetry_is_none_not_zero():
    assert cov.window_amount([], [], [], 0, 10 * S) is None
    assert cov.window_amount([0], [5.0], [np.nan], 0, 10 * S) is None  # a NaN sample is missing, not 0
    assert cov.coverage_factor(10.0, None) is None
    assert cov.coverage_factor(10.0, 0.0) is None
    assert cov.contention(None) is None
    assert cov.coverage_factors({"bytes_read": 5}, {"bytes_read": None})["coverage_factor_read_bw"] is None


def test_implausible_cf_is_flagged_and_unusable():
    cf = cov.coverage_factors({"bytes_read": 130}, {"bytes_read": 100})
    assert cf["coverage_factor_read_bw"] == 1.3 and cf["coverage_factor_read_bw_flagged"] is True
    assert cov.implausible(1.3) and not cov.implausible(1.2)


@pytest.mark.parametrize("seed", range(5))
def test_quartile_classes_match_numpy_percentiles(seed):
    rng = np.random.default_rng(seed)
    h = rng.lognormal(size=37)
    q1, q2, q3 = np.percentile(h, [25, 50, 75])
    for v in list(h) + [q1, q2, q3, h.min() - 1, h.max() + 1] + list(rng.lognormal(size=50)):
        expect = 1 if v <= q1 else 2 if v <= q2 else 3 if v <= q3 else 4
        assert um.quartile(v, h) == expect
    assert [um.colour(q, True) for q in (1, 2, 3, 4)] == ["red", "orange", "green", "blue"]
    assert [um.colour(q, False) for q in (1, 2, 3, 4)] == ["blue", "green", "orange", "red"]


def test_box_whiskers_are_5th_and_95th_percentiles():
    h = np.r_[np.arange(100.0), np.nan]
    b = um.box(h)
    ref = np.percentile(np.arange(100.0), [5, 25, 50, 75, 95])
    assert [b["p5"], b["q1"], b["median"], b["q3"], b["p95"]] == list(ref)
    assert b["n"] == 100
    assert um.box([np.nan])["n"] == 0 and um.quartile(1.0, [np.nan]) is None


def test_fraction_of_peak_per_motif():
    f = um.fraction_of_peak([1, 2, 4, np.nan, 3, 6], ["a", "a", "a", "a", "b", "b"])
    assert f[:3].tolist() == [0.25, 0.5, 1.0] and np.isnan(f[3]) and f[4:].tolist() == [0.5, 1.0]


def _pairs(seed, n=60):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.3 * x + rng.normal(size=n)
    x[::11] = np.nan  # NaN pairs are dropped, as tokio-abcutils does
    return x, y


@pytest.mark.parametrize("seed", range(4))
def test_pearson_matches_scipy(seed):
    x, y = _pairs(seed)
    ok = np.isfinite(x) & np.isfinite(y)
    ref = stats.pearsonr(x[ok], y[ok])
    got = correlate.pearson(x, y)
    assert got["n"] == int(ok.sum())
    assert got["r"] == pytest.approx(ref[0], rel=1e-12) and got["p"] == pytest.approx(ref[1], rel=1e-9)
    assert got["strength"] == ("strong" if ref[1] < 0.01 else "weak" if ref[1] < 0.05 else "none")


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed (apt-get install r-base-core)")
def test_pearson_matches_r_cor_test():
    x, y = _pairs(7, 80)
    ok = np.isfinite(x) & np.isfinite(y)
    src = (f"x <- c({','.join(repr(float(v)) for v in x[ok])}); y <- c({','.join(repr(float(v)) for v in y[ok])}); "
           "t <- cor.test(x, y); cat(sprintf('%.17g %.17g', t$estimate, t$p.value))")
    out = subprocess.run(["Rscript", "-e", src], capture_output=True, text=True, timeout=120, check=True).stdout
    r, p = map(float, out.split())
    got = correlate.pearson(x, y)
    assert got["r"] == pytest.approx(r, rel=1e-12) and got["p"] == pytest.approx(p, rel=1e-8)


def test_pearson_degenerate_inputs():
    assert correlate.pearson([1, 2], [3, 4])["r"] is None              # fewer than 3 pairs
    assert correlate.pearson([1, 1, 1, 1], [1, 2, 3, 4])["r"] is None  # a constant side
    assert correlate.pearson([np.nan] * 5, range(5)) == {"n": 0, "r": None, "p": None, "strength": "none"}
    assert correlate.strength(0.009) == "strong" and correlate.strength(0.04) == "weak" and correlate.strength(0.05) == "none"


def test_culprits_and_verdict():
    rows = [{"metric": "contention_bw", "value": 0.7, "quartile": 4, "r": -0.39, "strength": "strong", "unusual": True},
            {"metric": "coverage_factor_bw", "value": 0.31, "quartile": 1, "r": 0.39, "strength": "strong", "unusual": True},
            {"metric": "md_ops_per_s", "value": 9.0, "quartile": 4, "r": -0.5, "strength": "none", "unusual": True},
            {"metric": "fullest_ost_pct", "value": 50.0, "quartile": 2, "r": -0.6, "strength": "strong", "unusual": False}]
    found = correlate.culprits(rows)
    assert [r["metric"] for r in found] == ["coverage_factor_bw", "contention_bw"]
    perf = {"metric": "fraction_of_peak", "value": 0.2, "quartile": 1}
    assert um.verdict(perf, found, 25) == ("the system: bandwidth contention (coverage factor bw 0.31, bottom quartile, "
                                           "r = 0.39 with performance)")
    assert um.verdict(perf, found, 9) == "not enough history (9 similar jobs; need 10)"
    assert um.verdict({**perf, "quartile": 3, "value": 0.8}, [], 25).startswith(
        "your code: performance is usual for this motif (fraction of peak 0.80, third quartile of 25")
    assert um.verdict({**perf, "value": None}, [], 25).startswith("no data")


def test_html_report_escapes_and_puts_the_verdict_first():
    from ioweather.views.umami_report import render

    m = {"metric": "coverage_factor_bw", "label": "<b>CF</b>", "value": 0.31, "quartile": 1, "colour": "red",
         "r": 0.39, "strength": "strong", "box": um.box([0.5, 0.9, 1.0]), "history": {"time": [], "value": []}}
    html = render({"job": "j<1>", "motif": "m", "history_jobs": 3, "verdict": "the system: <x>", "metrics": [m]})
    assert html.index('id="verdict"') < html.index("<h2>")
    assert "the system: &lt;x&gt;" in html and "&lt;b&gt;CF&lt;/b&gt;" in html and "<b>CF</b>" not in html
    assert '"hex": "#d62728"' in html  # the dashed line in the red of quartile 1
