"""Linear models per factor and classification (METHODS.md 2.4-2.5).

The fit must give back the paper's Table 3 from data generated from it, including
the fixed-intercept rule at 4096 B; classification is checked against a literal,
per-observation implementation of the rule as METHODS.md words it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from factors_synthetic import PAPER_SIZES, TABLE3, iomodel_frame
from ioweather.stats.factor_models import (MODEL_FORMAT, FactorModel, Line, Piece, classify, fit_lines, fit_setup,
                                           models_from_doc, models_to_doc)


def test_table3_large_intercepts_are_the_small_model_at_4096():
    """The rule itself, on the paper's own numbers (METHODS.md: it reproduces every row)."""
    for (i_s, c_s), (i_l, _) in TABLE3.values():
        assert i_s + 4096 * c_s == pytest.approx(i_l, rel=0.02)


def test_fit_lines_on_exact_points_recovers_them():
    (i_s, c_s), (_, c_l) = TABLE3["cached-R-off0"]
    s = np.array(PAPER_SIZES)
    i_l = i_s + 4096 * c_s
    p = np.where(s <= 4096, i_s + c_s * s, i_l + c_l * s)
    small, large = fit_lines(s, p / 1.1)
    assert small.intercept_s == pytest.approx(i_s, rel=1e-9)
    assert small.slope_s_per_byte == pytest.approx(c_s, rel=1e-9)
    assert large.intercept_s == small(4096)  # fixed, not fitted
    assert large.slope_s_per_byte == pytest.approx(c_l, rel=1e-9)


def test_large_slope_is_fitted_through_the_fixed_intercept():
    """With a free intercept the large line would differ; the slope must be the constrained optimum."""
    s = np.array([8192, 65536, 1 << 20, 16 << 20])
    t = np.array([2e-6, 9e-6, 1.2e-4, 2.1e-3])
    small, large = fit_lines(np.r_[[1, 4096], s], np.r_[[1e-6, 1.5e-6], t] / 1.1)
    anchor = small(4096)
    resid = lambda c: ((anchor + c * s - t) ** 2).sum()  # noqa: E731
    c = large.slope_s_per_byte
    assert resid(c) <= min(resid(c * 1.001), resid(c * 0.999))


@pytest.mark.parametrize("label", list(TABLE3))
def test_fit_recovers_table3_from_data_generated_from_it(label):
    df = iomodel_frame({label: TABLE3[label]}, repeats=3000)
    model, problems = fit_setup(df["size"].to_numpy(), df["duration_ns"].to_numpy() / 1e9, label=label,
                                setup={"cache": label.split("-")[0]})
    assert problems == []
    (i_s, c_s), (i_l, c_l) = TABLE3[label]
    # intercepts within 3 %, slopes within 3 % (or, for the paper's near-flat discard write line,
    # within 3 % of the intercept over 16 MiB)
    assert model.small.line.intercept_s == pytest.approx(i_s, rel=0.03)
    assert model.small.line.slope_s_per_byte == pytest.approx(c_s, rel=0.03, abs=0.03 * i_s / 4096)
    assert model.large.line.intercept_s == pytest.approx(i_l, rel=0.03)
    assert model.large.line.intercept_s == model.small.line(4096)
    assert model.large.line.slope_s_per_byte == pytest.approx(c_l, rel=0.03, abs=0.03 * i_l / (16 << 20))
    # a perfect fit of 1.1 x cutoff errs by 10 % against the cutoffs (Table 3's 10.0-10.4 %)
    assert model.small.rel_err == pytest.approx(0.10, abs=0.01)
    # noise-free lognormal sizes: nothing beyond the density cutoff, nothing above 1.1 x it
    assert model.small.outlier_fraction < 0.005 and model.small.above_model_fraction < 0.005


def test_size_cap_ignores_the_slow_large_writes():
    """The paper's Lustre bug: 4-16 MiB cached writes vary by 100x; capped at 2 MiB they don't bend the line."""
    lines = {"cached-W-off0": TABLE3["cached-W-off0"]}
    df = iomodel_frame(lines, repeats=2000)
    big = df["size"] >= (4 << 20)
    d = df["duration_ns"].to_numpy() / 1e9
    d[big.to_numpy()] *= 100
    s = df["size"].to_numpy()
    capped, _ = fit_setup(s, d, label="cached-W-off0", setup={}, size_cap_bytes=2 << 20)
    uncapped, _ = fit_setup(s, d, label="cached-W-off0", setup={})
    c_l = TABLE3["cached-W-off0"][1][1]
    assert capped.large.line.slope_s_per_byte == pytest.approx(c_l, rel=0.03)
    assert uncapped.large.line.slope_s_per_byte > 10 * c_l
    assert max(capped.large.sizes_bytes) == 2 << 20
    # the capped model flags the slow large writes as above the model when classifying
    assert (classify(d[big.to_numpy()], s[big.to_numpy()], [capped]) == -1).all()


def test_single_size_and_missing_pieces():
    s = np.full(500, 65536)
    d = np.exp(np.random.default_rng(0).normal(np.log(1e-4), 0.1, 500))
    m, _ = fit_setup(s, d, label="x", setup={})
    assert m.small is None and m.large.line.slope_s_per_byte == 0.0  # flat: nothing to fit a slope to
    assert m.predict([1, 65536, 1 << 24]).tolist() == [m.large.line.intercept_s] * 3


def test_bad_sizes_are_reported_and_skipped():
    df = iomodel_frame({"cached-R-off0": TABLE3["cached-R-off0"]}, sizes=[1, 4096, 8192], repeats=500)
    s = np.r_[df["size"].to_numpy(), [16]]  # size 16 has a single observation
    d = np.r_[df["duration_ns"].to_numpy() / 1e9, [1e-5]]
    m, problems = fit_setup(s, d, label="cached-R-off0", setup={})
    assert len(problems) == 1 and "size 16" in problems[0] and "at least 2" in problems[0]
    assert m.small.sizes_bytes == [1, 4096]


# ---------------------------------------------------------------- classification


def _model(label, small, large):
    return FactorModel(label=label, setup={}, small=Piece(Line(*small), [], 0, 0, 0, 0, 0),
                       large=Piece(Line(*large), [], 0, 0, 0, 0, 0))


def literal_rule(d, s, models):
    """METHODS.md 2.5 word for word: sort by prediction at the size, first with prediction >= d."""
    out = []
    for di, si in zip(d, s):
        preds = [(float(m.predict([si])[0]), k) for k, m in enumerate(models)]
        preds.sort(key=lambda pk: pk[0])  # stable: equal predictions keep the model order
        out.append(next((k for p, k in preds if p >= di), -1))
    return np.array(out)


def test_classify_matches_the_literal_rule_with_crossing_lines():
    # The paper's read models (Table 3); discard-rnd is made up to cross cached-off0 at large sizes (Fig. 5).
    models = [_model(k, *TABLE3[k]) for k in ("discard-R-off0", "cached-R-off0", "cached-R-rnd")]
    models.insert(1, _model("discard-R-rnd", (5e-7, 2e-10), (5e-7 + 4096 * 2e-10, 2e-10)))
    rng = np.random.default_rng(9)
    s = rng.choice(PAPER_SIZES, 20000)
    d = np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), len(s)))
    d[:50] = models[2].predict(s[:50])  # exactly on a line: that model explains it
    ours = classify(d, s, models)
    assert (ours == literal_rule(d, s, models)).all()
    assert (ours[:50] <= 2).all()
    assert set(np.unique(ours)) == {-1, 0, 1, 2, 3}


def test_classify_recovers_the_generating_factor():
    """Observations drawn from each of the four read factors land in their own class."""
    lines = {k: TABLE3[k] for k in ("discard-R-off0", "cached-R-off0")}
    train = iomodel_frame(lines, sizes=[1, 64, 1024, 4096, 16384, 65536], repeats=2000)
    models = [fit_setup(g["size"].to_numpy(), g["duration_ns"].to_numpy() / 1e9, label=k, setup={})[0]
              for k, g in train.groupby(train["cache"] + "-R-off0")]
    test = iomodel_frame(lines, sizes=[1, 64, 1024, 4096, 16384, 65536], repeats=500, seed=1)
    truth = (test["cache"] == "discard").map({True: 1, False: 0}).to_numpy()  # groupby order: cached, discard
    got = classify(test["duration_ns"].to_numpy() / 1e9, test["size"].to_numpy(), models)
    assert np.mean(got == truth) > 0.99


def test_classify_10_values_by_hand():
    fast = _model("fast", (1e-6, 0.0), (1e-6, 0.0))
    slow = _model("slow", (1e-5, 0.0), (1e-5, 0.0))
    d = np.array([5e-7, 1e-6, 2e-6, 1e-5, 2e-5])
    assert classify(d, np.ones(5), [slow, fast]).tolist() == [1, 1, 0, 0, -1]


# ---------------------------------------------------------------- model document


def _doc():
    df = iomodel_frame({"cached-R-off0": TABLE3["cached-R-off0"]}, sizes=[1, 4096, 65536], repeats=300)
    m, _ = fit_setup(df["size"].to_numpy(), df["duration_ns"].to_numpy() / 1e9, label="cached-R-off0",
                     setup={"cache": "cached", "op": "R", "mem_layout": "off0"})
    return models_to_doc([m], grouping=["cache", "op", "mem_layout"]), m


def test_model_document_round_trips():
    doc, m = _doc()
    import json

    (back,) = models_from_doc(json.loads(json.dumps(doc)))
    assert back.setup == m.setup and back.label == m.label
    np.testing.assert_array_equal(back.predict(PAPER_SIZES), m.predict(PAPER_SIZES))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="something-else"), "not an ioweather factor model file"),
    (lambda d: d.update(version=2), "version 2 is not supported"),
    (lambda d: d.pop("version"), "version None is not supported"),
    (lambda d: d.update(models=[]), "non-empty list"),
    (lambda d: d["models"][0]["small"].pop("intercept_s"), r"models\[0\].small.intercept_s is missing"),
    (lambda d: d["models"][0]["small"].update(slope_s_per_byte="4e-10"), r"slope_s_per_byte must be a finite number"),
    (lambda d: d["models"][0]["large"].update(intercept_s=math.nan), r"large.intercept_s must be a finite number"),
    (lambda d: d["models"][0].update(small=None, large=None), "neither a small nor a large line"),
    (lambda d: d["models"].append(dict(d["models"][0])), "appears twice"),
    (lambda d: d["models"][0].update(label=""), "label must be a non-empty string"),
    (lambda d: d["models"][0].update(small_max_bytes=-1), "small_max_bytes must be positive"),
])
def test_bad_model_documents_say_what_is_wrong(edit, message):
    doc, _ = _doc()
    edit(doc)
    with pytest.raises(ValueError, match=message):
        models_from_doc(doc)
    assert MODEL_FORMAT == "ioweather.factors.models"
