"""stats.job's column helpers made cheaper for issue 40 against what they replaced: nan_sum against np.nansum to
the last bit, subset (columns cut when asked) against cutting every column at once."""

from __future__ import annotations

import numpy as np
import pytest

from darshan_support import LOGS, need_darshan_logs  # noqa: F401

from ioweather.sources.darshan_log import read_log
from ioweather.stats.job import cols, monitored, nan_sum, subset


def same(a, b) -> bool:
    return np.float64(a).tobytes() == np.float64(b).tobytes() or (np.isnan(a) and np.isnan(b))


@pytest.mark.parametrize("values", [[], [np.nan], [1.0, np.nan, 2.5], [np.inf, -np.inf], [np.inf, np.nan, 1.0],
                                    [-0.0], [-0.0, np.nan], [0.1] * 1000 + [np.nan] + [1e-17] * 999])
def test_edge_values(values):
    v = np.array(values, dtype=np.float64)
    assert same(nan_sum(v), np.nansum(v)), values


def test_every_counter_column_of_the_public_logs():
    """Pairwise summation makes the order matter: every column of every module of every public log, as
    `monitored` hands them over (not monitored = NaN), with NaNs planted in a third of them."""
    rng = np.random.default_rng(7)
    n = 0
    for path in LOGS:
        for rec in read_log(path, dxt=False, heatmaps=False).records.values():
            for name in [*rec.counter_names, *rec.fcounter_names]:
                v = monitored(rec, name)
                if rng.random() < 0.3 and len(v):
                    v = v.copy()
                    v[rng.random(len(v)) < 0.3] = np.nan
                assert same(nan_sum(v), np.nansum(v)), (path.name, name)
                n += 1
    assert n > 5_000  # 7,464 columns in 2026-11


def test_subset_is_every_column_cut_at_once():
    """On every module of every public log, a random row mask: what a rule reads before iterating (a column,
    `in`, `get`), then the whole subset, its order, and a subset of it, against the eager cut of all columns."""
    rng = np.random.default_rng(11)
    n = 0
    for path in LOGS:
        for rec in read_log(path, dxt=False, heatmaps=False).records.values():
            whole = cols(rec)
            mask = rng.random(whole.n) < 0.5
            want = {k: v[mask] for k, v in whole.items()}
            got = subset(rec, mask)
            assert got.n == int(mask.sum())
            name = rec.counter_names[0]
            assert name in got and "NOT_A_COUNTER" not in got and got.get("NOT_A_COUNTER") is None
            assert np.array_equal(got[name], want[name])
            got["extra"] = np.zeros(got.n)
            assert list(got) == [*want, "extra"] and len(got) == len(want) + 1
            assert all(np.array_equal(got[k], v) for k, v in want.items())
            inner = rng.random(got.n) < 0.5
            again = subset(got, inner)
            assert all(np.array_equal(again[k], v[inner]) for k, v in want.items())
            n += 1
    assert n > 50
