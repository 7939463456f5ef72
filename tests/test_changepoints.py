"""Change points (stats/changepoints.py, services/answers/changes.py, `ioweather changes`).

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
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

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


def test_deseasonalize_against_pandas():
    """The daily shape taken out equals a pandas groupby of the same definition (per-day median
    removed, then the median per time of day), with gaps: missing slots, a missing day."""
    import pandas as pd

    from ioweather.stats.changepoints import deseasonalize

    step = 600 * 10**9
    rng = np.random.default_rng(11)
    t = np.arange(15 * 144, dtype=np.int64) * step + 3 * step
    x = np.sin(2 * np.pi * (t % DAY) / DAY) + rng.normal(0, 0.2, len(t))
    keep = (rng.random(len(t)) > 0.1) & ((t // DAY) != 6)
    t, x = t[keep], x[keep]
    df = pd.DataFrame({"x": x, "slot": (t % DAY) // step, "day": (t - t[0]) // DAY})
    df["resid"] = df["x"] - df.groupby("day")["x"].transform("median")
    shape = df.groupby("slot")["resid"].median()
    want = x - shape.reindex(df["slot"]).to_numpy()
    np.testing.assert_allclose(deseasonalize(x, t, DAY), want, rtol=0, atol=1e-12)


def test_year_long_stationary_series_give_no_change():
    """The blocked path (a year of 10-minute statistics with a daily cycle): no change in 30 seeded
    series at the documented penalty."""
    step = 600 * 10**9
    t = np.arange(365 * 144, dtype=np.int64) * step
    cycle = 1 + 0.3 * np.sin(2 * np.pi * (t % DAY) / DAY)
    found = [change_points(np.exp(np.random.default_rng(100 + s).normal(0, 0.1, len(t))) * cycle, log=True,
                           times_ns=t, period_ns=DAY) for s in range(30)]
    assert sum(map(len, found)) == 0


def test_worker_pool_gives_what_one_process_gives(monkeypatch):
    """services.answers.changes.search with two forked workers (forced past its size threshold) returns, in
    the order given, exactly what the in-process search returns; a series too short says why."""
    from ioweather.services.answers import changes
    from ioweather.services.answers.changes import search

    pooled = []
    real = changes._pooled
    monkeypatch.setattr(changes, "_pooled", lambda *a: pooled.append(1) or real(*a))
    monkeypatch.setattr(changes.threading, "active_count", lambda: 1)  # pytest's own threads, if any

    step = 600 * 10**9
    t = np.arange(60 * 144, dtype=np.int64) * step
    items = []
    for i in range(8):
        rng = np.random.default_rng(i)
        x = np.exp(rng.normal(0, 0.1, len(t)))
        if i % 2 == 0:
            x[1000 * (i + 1):] *= 2
        items.append((f"s{i}", t, x, True, "median_s", DAY))
    items.append(("short", t[:5], np.ones(5), True, "median_s", DAY))
    one = list(search(items, workers=1))
    two = list(search(items, workers=2, pool_min_points=0))
    assert pooled == [1]
    assert [r[0] for r in two] == [r[0] for r in one] == [i[0] for i in items]
    assert [r[3] for r in two] == [r[3] for r in one]
    assert [[c.index for c in r[3]] for r in one[:8]] == [[1000 * (i + 1)] if i % 2 == 0 else [] for i in range(8)]
    assert "needs at least" in one[8][3]
