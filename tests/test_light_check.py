"""`slowdown --check` without numpy and SQLAlchemy (issue 40): services/probe/light_check.py answers exactly as
the full path (the Status card's target_status over the probe cache) on the same store at the same instant,
and gives way to it where it cannot be exact.

The store: five targets of synthetic samples (tests/web_synthetic.py) written through the store, completed days
archived to Parquet, pieces built by the dashboard's cache an hour before and at "now" (as a running dashboard
or probe daemon leaves them). The rolling baseline of 2 days then starts in an archived hour, which the light
path cuts from the hour piece's start times (store v6) and the full path reads from Parquet.
"""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.services.probe import light_check
from ioweather.services.probe.cache import ProbeCache
from ioweather.services.probe.slowdown import check_result, check_states, run_check
from ioweather.stats.slowdown_pieces import N_BUCKETS, bucket_of
from ioweather.store import open_store
from ioweather.store import probe_light
from ioweather.store.probe_archive import archive_completed_days
from ioweather.store.probe_tables import COMPONENT, OPS
from web_synthetic import Episode, add_target

H, MIN, DAY = 3600 * 10**9, 60 * 10**9, 86400 * 10**9
#: "now": 20 min 40 s into an hour (the baseline's head is then a partial, archived hour).
T = 1_795_000_000 * 10**9 // H * H + 20 * MIN + 40 * 10**9
BASE_S = 2 * 86400.0


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("light") / "home"
    settings = Settings.resolve(home)
    store = open_store(settings)
    add_target(store, "steady", T - 4 * DAY, T, period_s=30, seed=1)
    add_target(store, "slow", T - 4 * DAY, T, period_s=30, seed=2, error_rate=5e-3, timeout_rate=2e-3,
               episodes=[Episode(T - 30 * MIN, T, 25.0, ("data_read", "md_stat")),
                         Episode(T - 20 * MIN, T, 3.0, ("md_create",))])
    add_target(store, "young", T - 3 * H, T, period_s=10, seed=3)
    add_target(store, "quiet", T - 3 * DAY, T - 20 * MIN, period_s=20, seed=4)
    add_target(store, "gone", T - 4 * DAY, T - 26 * H, period_s=60, seed=5)  # its last samples: yesterday's
    archive_completed_days(store, keep_days=1, now_ns=T)
    for now in (T - H, T):  # the pieces a running dashboard leaves: built an hour ago and now
        cache = ProbeCache(store, baseline_s=BASE_S, warm_rollups=False, clock=lambda now=now: now)
        for t in ("steady", "slow", "young", "quiet", "gone"):
            cache.baseline(t)
    store.dispose()
    return settings


def _full(settings, target, window_s, stat, warn=2.0, crit=10.0, reference=None):
    store = open_store(settings, read_only=True)
    try:
        states = check_states(store, target, window_s, stat, BASE_S, warn, crit, "median", reference, now_ns=T)
    finally:
        store.dispose()
    return (*check_result(states, warn, crit), states)


@pytest.mark.parametrize("target, window_s, stat", [
    (None, 600.0, "median"), ("slow", 600.0, "median"), ("slow", 300.0, "p99"), (None, 900.0, "max"),
    ("gone", 600.0, "p90"), ("young", 600.0, "p95"), ("quiet", 120.0, "median")])
def test_light_check_is_the_full_check(home, target, window_s, stat):
    light = light_check.run_check(home, target, window_s, stat, BASE_S, 2.0, 10.0, now_ns=T)
    assert light == _full(home, target, window_s, stat)


def test_the_answers_cover_every_state_and_a_learning_target(home):
    code, line, states = light_check.run_check(home, None, 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T)
    by = {s.target: s for s in states}
    assert code == 2 and by["slow"].state == "severely degraded" and by["slow"].worst > 10
    assert "timeouts" in by["slow"].reason or by["slow"].worst > 20
    assert by["steady"].state == "normal" and 0.5 < by["steady"].worst < 2
    assert by["young"].state == "learning" and by["young"].worst is None
    assert by["quiet"].state == "stale" and by["gone"].abandoned and not by["quiet"].abandoned
    assert line.startswith("IOWEATHER CRITICAL - slow severely degraded") and "'steady'=" in line


def test_a_reference_period_and_thresholds(home):
    ref = (T - 3 * DAY - 7 * MIN, T - DAY + 13 * MIN)  # archived both ends: the hour pieces' start times
    store = open_store(home, read_only=True)
    try:
        full = check_states(store, None, 600.0, "median", BASE_S, 1.05, 30.0, "median", ref, now_ns=T)
    finally:
        store.dispose()
    try:
        light = light_check.run_check(home, None, 600.0, "median", BASE_S, 1.05, 30.0, reference=ref, now_ns=T)
    except light_check.Fallback as e:  # a reference end whose hour no dashboard summarized: the full path
        assert "start times" in str(e) or "not built" in str(e)
        return
    assert light == (*check_result(full, 1.05, 30.0), full)


def test_what_the_light_path_cannot_do_exactly_it_leaves(home, tmp_path):
    with pytest.raises(light_check.Fallback):  # a mean is a float sum numpy orders its own way
        light_check.run_check(home, None, 600.0, "mean", BASE_S, 2.0, 10.0, now_ns=T)
    with pytest.raises(light_check.Fallback):  # the full path's words for an unknown target
        light_check.run_check(home, "nope", 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T)
    with pytest.raises(light_check.Fallback):  # and for thresholds out of order
        light_check.run_check(home, None, 600.0, "median", BASE_S, 10.0, 2.0, now_ns=T)
    # the hour the baseline starts in without its start times (summarized before v6): archived, so not here
    import shutil
    import sqlite3

    copy = tmp_path / "home"
    shutil.copytree(home.home, copy)
    db = sqlite3.connect(copy / "ioweather.sqlite")
    db.execute("UPDATE probe_pieces SET starts_ns = NULL")
    db.commit()
    db.close()
    with pytest.raises(light_check.Fallback, match="start times"):
        light_check.run_check(Settings.resolve(copy), "steady", 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T)
    # run_check then answers through the full path, the same
    got = run_check(Settings.resolve(copy), "steady", 600.0, "median", BASE_S, 2.0, 10.0)
    assert got[0] in (0, 1, 2, 3) and got[2][0].target == "steady"


def test_the_light_path_loads_neither_numpy_nor_sqlalchemy(home):
    code = ("import sys, time; T = %d; time.time_ns = lambda: T\n"
            "from ioweather.services.probe.slowdown import run_check\n"
            "from ioweather.config import Settings\n"
            "print(run_check(Settings.resolve(sys.argv[1]), None, 600.0, 'median', %r, 2.0, 10.0)[0],"
            " sorted({'numpy', 'sqlalchemy', 'pyarrow'} & set(sys.modules)))" % (T, BASE_S))
    out = subprocess.run([sys.executable, "-c", code, str(home.home)], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["2", "[]"], out.stdout + out.stderr


def test_the_light_readers_know_the_stores_format():
    assert probe_light.PROBE_VERSION == COMPONENT.version and probe_light.OPS == OPS
    assert light_check.N_BUCKETS == N_BUCKETS
    seed = random.randrange(2**32)
    print("seed", seed)
    rng = np.random.default_rng(seed)
    d = np.r_[np.arange(0, 300), rng.integers(0, 2**40, 5000), rng.lognormal(10, 3, 5000).astype(np.int64),
              [2**53 - 1, 2**53, 2**62, -5]]
    assert [light_check.bucket_of(int(x)) for x in d] == bucket_of(d).tolist()


def test_a_v5_store_upgrades_and_its_hours_are_summarized_again(home, tmp_path):
    """v6 adds the start times and drops the hour pieces summarized without them; the next writable computation
    builds them again, and the light path then answers as before the upgrade."""
    import shutil
    import sqlite3

    copy = tmp_path / "home"
    shutil.copytree(home.home, copy)
    db = sqlite3.connect(copy / "ioweather.sqlite")
    db.execute("ALTER TABLE probe_pieces DROP COLUMN starts_ns")
    db.execute("UPDATE schema_versions SET version = 5 WHERE component = 'probe'")
    days, hours = db.execute("SELECT sum(span_ns = ?), sum(span_ns < ?) FROM probe_pieces", (DAY, DAY)).fetchone()
    db.commit()
    db.close()
    assert days and hours
    settings = Settings.resolve(copy)
    with pytest.raises(light_check.Fallback):  # a probe schema these reads do not know
        light_check.run_check(settings, None, 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T)
    store = open_store(settings)
    store.require(COMPONENT)
    db = sqlite3.connect(copy / "ioweather.sqlite")
    assert db.execute("SELECT sum(span_ns = ?), sum(span_ns < ?) FROM probe_pieces", (DAY, DAY)).fetchone() == (days, 0)
    db.close()
    for now in (T - H, T):
        cache = ProbeCache(store, baseline_s=BASE_S, warm_rollups=False, clock=lambda now=now: now)
        for t in ("steady", "slow", "young", "quiet", "gone"):
            cache.baseline(t)
    store.dispose()
    assert light_check.run_check(settings, None, 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T) == \
        light_check.run_check(home, None, 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T)


def test_unsummarized_spans_empty_before_the_first_sample_or_the_last_hour(home, tmp_path):
    """A young target's days before its first sample (the probe daemon never summarizes them) are empty, and an
    hour completed since the daemon's last hourly pass is read raw: the light path still answers, the same."""
    import shutil
    import sqlite3

    copy = tmp_path / "home"
    shutil.copytree(home.home, copy)
    last_hour = (T - light_check.PIECE_LAG_NS) // H * H - H
    db = sqlite3.connect(copy / "ioweather.sqlite")
    gone = db.execute("DELETE FROM probe_pieces WHERE (target = 'young' AND start_ns + span_ns <= ?) "
                      "OR (span_ns = ? AND start_ns = ?)", (T - 3 * H, H, last_hour)).rowcount
    db.commit()
    db.close()
    assert gone > 6
    settings = Settings.resolve(copy)
    for target in (None, "young"):
        light = light_check.run_check(settings, target, 600.0, "median", BASE_S, 2.0, 10.0, now_ns=T)
        assert light == _full(settings, target, 600.0, "median")
