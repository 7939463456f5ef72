"""Change points (stats/changepoints.py, services/changes.py, `ioweather changes`).

Planted shifts are found at their interval; stationary noise gives no change at the documented
penalty (the false-positive rate over 1,000 seeded series is printed and bounded); a daily cycle
is not a change; long series are searched in blocks and refined to the exact point.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.stats.changepoints import MIN_SEGMENT, PENALTY_PER_LOG_N, change_points
from ioweather.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from web_synthetic import Episode, add_target  # noqa: E402

DAY = 86400 * 10**9


@pytest.mark.parametrize("seed", range(20))
def test_planted_shift_found_at_its_interval(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 3000))
    at = int(rng.integers(MIN_SEGMENT * 3, n - MIN_SEGMENT * 3))
    factor = float(rng.choice([0.25, 0.5, 2.0, 4.0]))
    x = np.exp(rng.normal(np.log(1e-3), 0.1, n))  # log-normal durations, 10 % spread
    x[at:] *= factor
    found = change_points(x, log=True)
    assert [c.index for c in found] == [at]
    assert found[0].factor == pytest.approx(factor, rel=0.03)


def test_false_positive_rate_on_stationary_noise():
    """1,000 seeded Gaussian series of 1,000 points at the documented penalty."""
    fp = sum(bool(change_points(np.random.default_rng(s).normal(0, 1, 1000))) for s in range(1000))
    print(f"false positives: {fp} of 1000 series at penalty {PENALTY_PER_LOG_N} log n")
    assert fp / 1000 <= 0.01


def test_long_series_is_refined_to_the_exact_point():
    rng = np.random.default_rng(7)
    x = np.exp(rng.normal(0, 0.1, 52_560))  # a year of 10-minute intervals
    x[31_337:] *= 1.5
    found = change_points(x, log=True)
    assert [c.index for c in found] == [31_337]


def test_daily_cycle_is_not_a_change_and_a_shift_over_it_is():
    step = 600 * 10**9
    t = np.arange(20 * 144, dtype=np.int64) * step
    rng = np.random.default_rng(3)
    cycle = 1.0 + 0.3 * np.sin(2 * np.pi * (t % DAY) / DAY)
    x = cycle * np.exp(rng.normal(0, 0.05, len(t)))
    assert change_points(x, log=True, times_ns=t, period_ns=DAY) == []
    assert len(change_points(x, log=True)) > 2  # without the seasonal step it would see every morning
    x[1500:] *= 2
    assert [c.index for c in change_points(x, log=True, times_ns=t, period_ns=DAY)] == [1500]


def test_nan_gaps_and_too_short_series():
    x = np.r_[np.full(30, 1.0), np.nan * np.ones(10), np.full(30, 3.0)] + np.random.default_rng(1).normal(0, .01, 70)
    found = change_points(x)
    assert [c.index for c in found] == [40]  # the first point after the gap, as an index of the input
    with pytest.raises(UserError, match=f"needs at least {2 * MIN_SEGMENT}"):
        change_points([1.0, 2.0, np.nan, 3.0])


def test_changes_command_on_a_store_with_a_planted_episode(tmp_path, cli):
    home = tmp_path / "home"
    t0 = (time.time_ns() // (600 * 10**9)) * 600 * 10**9
    store = open_store(Settings.resolve(home))
    add_target(store, "scratch", t0 - 20 * DAY, t0, period_s=60, seed=1,
               episodes=[Episode(t0 - 7 * DAY, t0, 3.0, ("data_read",))])
    store.dispose()
    r = cli("changes", "--since", "21d", "--json", home=home, check=True)
    doc = json.loads(r.stdout)
    assert [(c["series"], c["time"]) for c in doc["changes"]] == [
        ("probe:scratch:data_read", time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime((t0 - 7 * DAY) / 1e9)))]
    assert doc["changes"][0]["factor"] == pytest.approx(3.0, rel=0.05)
    r = cli("changes", "--since", "21d", home=home, check=True)
    assert "probe:scratch:data_read" in r.stdout and re.search(r"(2\.9\d|3\.0\d)×", r.stdout) and "e-0" not in r.stdout
    r = cli("changes", "--since", "1h", "--json", home=home, check=True)
    assert json.loads(r.stdout)["skipped"]  # six 10-minute intervals: too short, said so
