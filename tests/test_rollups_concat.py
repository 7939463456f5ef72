"""stats.rollups.concat_rollups: rows by time then op, whether the parts come in order (a month of kept rows
and the intervals settled after them: no sort) or not (ties between parts, overlapping parts, reversed)."""

from __future__ import annotations

import os

import numpy as np

from ioweather.stats.rollups import ROLLUP_COLUMNS, concat_rollups

SEED = int(os.environ.get("TEST_SEED", "4040"))


def _part(rng, starts) -> dict[str, np.ndarray]:
    n = len(starts)
    d = {c: rng.random(n) for c in ROLLUP_COLUMNS}
    d["op"] = rng.integers(0, 6, n).astype(np.int64)
    d["start_ns"] = np.asarray(starts, np.int64)
    for c in ("count", "errors", "timeouts"):
        d[c] = rng.integers(0, 100, n).astype(np.int64)
    order = np.lexsort((d["op"], d["start_ns"]))
    return {c: v[order] for c, v in d.items()}


def _reference(parts):
    out = {c: np.concatenate([p[c] for p in parts]) for c in ROLLUP_COLUMNS}
    order = np.lexsort((out["op"], out["start_ns"]), )
    return {c: v[order] for c, v in out.items()}


def test_in_order_or_not_the_rows_of_a_stable_sort_by_time_then_op():
    print("seed", SEED)
    rng = np.random.default_rng(SEED)
    step = 600 * 10**9
    cases = [
        [_part(rng, np.repeat(np.arange(0, 50), 6) * step), _part(rng, np.repeat(np.arange(50, 53), 6) * step)],  # appended
        [_part(rng, np.arange(50, 53) * step), _part(rng, np.arange(0, 50) * step)],  # reversed
        [_part(rng, rng.integers(0, 40, 80) * step), _part(rng, rng.integers(30, 60, 40) * step)],  # overlapping
        [_part(rng, [5 * step] * 3), _part(rng, [5 * step] * 3)],  # ties at one time across parts
        [_part(rng, np.arange(10) * step)],
    ]
    for k, parts in enumerate(cases):
        got, ref = concat_rollups(parts), _reference(parts)
        assert list(got) == list(ref), k
        for c in ref:
            assert got[c].dtype == ref[c].dtype
            np.testing.assert_array_equal(got[c], ref[c], err_msg=f"case {k} {c}")
        assert not any(np.shares_memory(got[c], p[c]) for p in parts for c in got)  # never a view of a part
