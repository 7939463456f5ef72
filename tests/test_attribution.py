"""stats/attribution.py against independent references: a pandas cross join, hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ioweather.stats import attribution as A


def naive_join(es, ee, js, je) -> set[tuple[int, int]]:
    ev = pd.DataFrame({"e": np.arange(len(es)), "es": es, "ee": ee})
    jb = pd.DataFrame({"j": np.arange(len(js)), "js": js, "je": je})
    x = ev.merge(jb, how="cross")
    x = x[(x["js"] < x["ee"]) & (x["je"] > x["es"])]
    return set(zip(x["e"].tolist(), x["j"].tolist()))


@pytest.mark.parametrize("seed", range(20))
def test_sweep_join_equals_cross_join(seed):
    rng = np.random.default_rng(seed)
    n_ev, n_jobs = rng.integers(0, 40), rng.integers(0, 300)
    es = rng.integers(0, 10_000, n_ev)
    ee = es + rng.integers(0, 500, n_ev)     # overlapping events, zero-length ones too
    js = rng.integers(-2_000, 10_000, n_jobs)
    je = js + rng.integers(0, 3_000, n_jobs)
    e, j = A.sweep_join(es, ee, js, je)
    got = list(zip(e.tolist(), j.tolist()))
    assert len(got) == len(set(got))
    assert set(got) == naive_join(es, ee, js, je)


def test_sweep_join_empty():
    e, j = A.sweep_join([], [], [1], [2])
    assert len(e) == len(j) == 0
    e, j = A.sweep_join([0], [10], [], [])
    assert len(e) == 0


def test_overlap_shares_by_hand():
    # 3 intervals of 10 s moving 100, 200, NaN bytes; job a runs all, b the second half of interval 0
    # and all of interval 1: interval 0 splits 100 as 1 : 0.5, interval 1 200 as 1 : 1, interval 2 unknown.
    s = 1_000_000_000
    edges = np.array([0, 10, 20, 30]) * s
    r = A.event_shares(edges, [100.0, 200.0, np.nan], [0, 5 * s], [30 * s, 20 * s], [np.nan, np.nan])
    assert r["event_bytes"] == 300.0
    np.testing.assert_allclose(r["bytes"], [100 / 1.5 + 100, 50 / 1.5 + 100])
    np.testing.assert_allclose(r["alone_fraction"], [0.0, 0.0])


def test_darshan_bytes_come_first_and_are_capped():
    s = 1_000_000_000
    edges = np.array([0, 10, 20]) * s
    # job 0 has a log: 5 B/s over its run -> 50 per interval; interval 1 moved only 30: capped at 30.
    r = A.event_shares(edges, [80.0, 30.0], [0, 0], [20 * s, 20 * s], [5.0, np.nan])
    np.testing.assert_allclose(r["bytes"], [80.0, 30.0])
    assert list(r["darshan"]) == [True, False]
    assert r["alone_fraction"][1] == 1.0   # the only job without a log in both intervals


def test_rank_share_then_nodes():
    order = A.rank([0.2, 0.5, 0.2, 0.1], [1, 1, 8, 99])
    assert order.tolist() == [1, 2, 0, 3]


def test_exposed_core_hours_by_hand():
    # 64 cores for 30 min -> 32 core-h; 128 cores whose Darshan I/O time is 600 s over a 7200 s run:
    # 300 s of the overlap's 1800 s are I/O... (600 * 1800 / 7200 = 150 s) -> 128 * 150 / 3600.
    got = A.exposed_core_hours([1800, 1800], [64, 128], [np.nan, 600.0], [np.nan, 7200.0])
    np.testing.assert_allclose(got, [32.0, 128 * 150 / 3600])


def test_confidence_labels():
    assert A.confidence("job_stats") == "exact"
    assert A.confidence("darshan") == "medium"
    assert [A.confidence("overlap", f) for f in (1.0, 0.6, 0.1)] == ["high", "medium", "low"]
