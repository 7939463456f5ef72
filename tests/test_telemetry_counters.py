"""stats/counters.py: cumulative counters -> amounts per interval, resets and gaps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioweather.stats import counters

S = 1_000_000_000


def test_grid_deltas_reset_and_missing_are_nan_never_negative():
    c = np.array([100, 150, 150, 40, 90, 95], dtype=np.int64)   # restart between 150 and 40
    d = counters.grid_deltas(c)
    assert d[:2].tolist() == [50.0, 0.0]
    assert np.isnan(d[2])                                         # backwards: missing
    assert d[3:].tolist() == [50.0, 5.0]                          # counted again from the new value
    missing = np.array([False, False, False, False, True, False])
    d2 = counters.grid_deltas(c, missing)
    assert np.isnan(d2[3]) and np.isnan(d2[4]) and d2[0] == 50.0


def test_float_nan_ends_are_missing_and_2d_columns_independent():
    c = np.array([[0.0, 10.0], [5.0, np.nan], [7.0, 30.0], [6.0, 31.0]])
    d = counters.grid_deltas(c)
    assert d[:, 0].tolist()[:2] == [5.0, 2.0] and np.isnan(d[2, 0])
    assert np.isnan(d[0, 1]) and np.isnan(d[1, 1]) and d[2, 1] == 1.0


def test_integer_counters_above_2_to_53_keep_exact_deltas():
    base = 2**62
    c = np.array([base, base + 1, base + 4097], dtype=np.int64)
    assert counters.grid_deltas(c).tolist() == [1.0, 4096.0]
    # the same through float64 would lose them: this is why integers stay integers
    assert (np.diff(c.astype(np.float64)) != np.array([1.0, 4096.0])).any()


def test_expand_gaps_turns_a_long_span_into_missing_steps():
    start = np.array([0, 5, 30]) * S
    end = np.array([5, 30, 35]) * S                 # the second interval spans 25 s at a 5 s step
    vals = np.array([1.0, 99.0, 3.0])
    t, v, length, src = counters.expand_gaps(start, end, vals, 5.0)
    assert (t // S).tolist() == [0, 5, 10, 15, 20, 25, 30]
    assert v[0] == 1.0 and v[-1] == 3.0 and np.isnan(v[1:6]).all()
    assert length.tolist() == [5.0] * 7
    assert src.tolist() == [0, 1, 1, 1, 1, 1, 2]
    # a little jitter is no gap
    t2, v2, l2, _ = counters.expand_gaps(np.array([0]), np.array([int(6.2 * S)]), np.array([4.0]), 5.0)
    assert v2.tolist() == [4.0] and l2.tolist() == [6.2]
    # an uneven gap: the last missing interval takes the remainder, the total time is kept
    t3, v3, l3, _ = counters.expand_gaps(np.array([0]), np.array([int(17 * S)]), np.array([4.0]), 5.0)
    assert l3.sum() == pytest.approx(17.0) and np.isnan(v3).all() and len(v3) == 3


def test_series_deltas_infers_the_step_and_rates():
    t = np.array([0, 10, 20, 60, 70]) * S
    c = np.array([0, 100, 300, 900, 950])
    start, amount, length = counters.series_deltas(t, c)
    assert (start // S).tolist() == [0, 10, 20, 30, 40, 50, 60]
    assert amount[:2].tolist() == [100.0, 200.0] and np.isnan(amount[2:6]).all() and amount[6] == 50.0
    r = counters.rates(amount, length)
    assert r[0] == 10.0 and np.isnan(r[3])
    assert counters.busy_pct(np.array([5.0, 0.0, 1.0]), np.array([10.0, 0.0, np.nan]))[0] == 50.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**50), min_size=2, max_size=60))
def test_property_amounts_never_negative_and_sum_to_the_increases(values):
    c = np.array(values, dtype=np.int64)
    d = counters.grid_deltas(c)
    assert not (d < 0).any()
    increases = sum(b - a for a, b in zip(values, values[1:]) if b >= a)
    assert int(np.nansum(d)) == increases
    assert int(np.isnan(d).sum()) == sum(1 for a, b in zip(values, values[1:]) if b < a)
