"""The Report's closed hours kept between its computations (services/answers/report_kept.py, issue 40 item 4).

A live store moves the report's window every minute; the climate's and the change points' first partial hour and
the climate's baseline's first partial hour are read from closed days. Here: two targets' month of samples (the
older days archived to Parquet, the rest in SQLite), the window moved a minute at a time and across an hour. The
reference is the same parts computed with every sample read from the store (no kept hour: `compute_slowdown`
without readers, `detect` with its own ProbeCache). Each kept hour is read once; a late sample in a kept hour's
closed day is in the next answer."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timedelta, timezone
import json
import os
import random

import pytest

from ioweather.config import Settings
from ioweather.services.answers import report, report_kept
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.store.probe_archive import archive_completed_days
from web_synthetic import Episode, add_target

#: ~12 s of a month's store and its moving windows: the full tier (`make test`), not the fast one
pytestmark = pytest.mark.slow

SEED = int(os.environ.get("IOWEATHER_TEST_SEED", random.randrange(1 << 20)))
DAY = 86_400 * 10**9
HOUR = 3600 * 10**9
MINUTE = 60 * 10**9
T0 = 1_709_251_200 * 10**9  # 2024-03-01: every day of the store is closed today


@pytest.fixture(scope="module")
def month(tmp_path_factory):
    print(f"seed {SEED}")
    settings = Settings.resolve(tmp_path_factory.mktemp("rk") / "home")
    store = open_store(settings)
    for k, target in enumerate(("scratch", "home")):
        add_target(store, target, T0 - 32 * DAY, T0 + 2 * DAY, period_s=300, seed=SEED + k,
                   episodes=[Episode(T0 - 3 * DAY, T0 - 2 * DAY, 3.0)])
    assert archive_completed_days(store, keep_days=1, now_ns=T0 - 10 * DAY) > 0
    store.dispose()
    return settings


@pytest.fixture
def kept(monkeypatch):
    """A fresh memory of kept hours, and the hours read whole from the store ([(target, start)])."""
    monkeypatch.setattr(report_kept, "_kept", OrderedDict())
    monkeypatch.setattr(report_kept, "_bytes", 0)
    reads, real = [], report_kept._read_hour

    def counting(store, target, hour):
        reads.append((target, hour))
        return real(store, target, hour)

    monkeypatch.setattr(report_kept, "_read_hour", counting)
    return reads


def _parts(store, settings, until_ns: int, closed) -> str:
    until = datetime.fromtimestamp(until_ns / 1e9, timezone.utc)
    since = until - timedelta(days=7)
    climate = report._climate(store, since, until, closed)
    changes = report._changes(store, settings, since, until, None if closed.on is False else closed)
    return json.dumps([climate.to_json(), changes.to_json()])


def _reference(store, settings, until_ns: int) -> str:
    off = report_kept.ClosedHours(store)
    off.on = False
    return _parts(store, settings, until_ns, off)


def test_moving_window_same_parts_each_closed_hour_read_once(month, kept):
    store = open_store(month)
    try:
        first = T0 + DAY + 10 * HOUR + 17 * MINUTE
        seen: list[int] = []
        for k, until in enumerate([first, first + MINUTE, first + 2 * MINUTE, first + 50 * MINUTE]):
            want = _reference(store, month, until)
            before = len(kept)
            got = _parts(store, month, until, report_kept.ClosedHours(store))
            assert got == want, f"until {until}"
            seen.append(len(kept) - before)
        doc = json.loads(want)
        assert doc[0]["ops"] and doc[1]["available"] and doc[1]["points"]  # a climate and its change points
        # the first reads the edges' hours (the window's start and end, its baseline's start: all closed here)
        # of each target; the next minutes cut them from the kept ones; past the hour, the new edges' hours
        assert seen[0] == 6 and seen[1] == seen[2] == 0 and seen[3] == 6, seen
        assert {h % DAY for _, h in kept} == {10 * HOUR, 11 * HOUR}
    finally:
        store.dispose()


@pytest.fixture
def copied(month, tmp_path):
    """A copy of the month's store to change: (its settings, the store open)."""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(month.home, home)
    settings = Settings.resolve(home)
    store = open_store(settings)
    yield settings, store
    store.dispose()


def test_late_sample_in_a_kept_hour_is_read_again(copied, kept):
    settings, store = copied
    until = T0 + DAY + 10 * HOUR + 17 * MINUTE
    first = _parts(store, settings, until, report_kept.ClosedHours(store))
    assert _parts(store, settings, until, report_kept.ClosedHours(store)) == first and len(kept) == 6
    # slow samples into the window's first partial hour (scratch, a day in SQLite) and into its baseline's
    # (home, an archived day): their medians move
    late = []
    for target, lo in (("scratch", until - 7 * DAY), ("home", until - 30 * DAY)):
        run_id = max(r["id"] for r in probe_store.runs(store, target))
        late.append((target, lo // HOUR * HOUR))
        probe_store.insert_samples(store, [(run_id, op, lo + i * MINUTE + k * 1000 + 7, 10**11, 0, "ok", 0)
                                           for k, op in enumerate(probe_store.OPS) for i in range(30)])
    want = _reference(store, settings, until)
    assert want != first
    n = len(kept)
    assert _parts(store, settings, until, report_kept.ClosedHours(store)) == want
    assert set(late) <= set(kept[n:])
    n = len(kept)
    assert _parts(store, settings, until, report_kept.ClosedHours(store)) == want and len(kept) == n


def test_pruned_raw_rows_of_a_kept_hour_are_not_served(copied, kept):
    """`store prune` deletes a day's database rows and keeps the day's pieces (nor does it touch a run): the
    hours kept from those rows are read again, so the parts are those of the pruned store."""
    settings, store = copied
    until = T0 + DAY + 10 * HOUR + 17 * MINUTE
    # a first prune takes the archived days: the second then deletes database rows only
    assert probe_store.prune_samples(store, until - 8 * DAY)["files"] > 0
    first = _parts(store, settings, until, report_kept.ClosedHours(store))
    hour = (until - 7 * DAY) // HOUR * HOUR  # the window's first partial hour: a day in SQLite, kept
    assert ("scratch", hour) in kept
    pruned = probe_store.prune_samples(store, hour + HOUR)
    assert pruned["rows"] > 0 and pruned["files"] == 0
    want = _reference(store, settings, until)
    assert want != first
    n = len(kept)
    assert _parts(store, settings, until, report_kept.ClosedHours(store)) == want
    assert ("scratch", hour) in kept[n:]


@pytest.mark.parametrize("db", [None, "pg_url", "mariadb_url"])
def test_rows_begin_rises_when_a_prune_deletes_rows_of_the_day(db, request, tmp_path):
    """`rows_begin` (the marker's part `store prune` moves) on each database, against each run's and op's first
    sample read back: a prune before the day leaves it, one deleting some of the day's rows raises it, and an
    insert back into the day lowers it again."""
    url = request.getfixturevalue(db) if db else None
    store = open_store(Settings.resolve(tmp_path / "home", url))
    day = T0 - 2 * DAY

    def reference() -> int:
        out = 0
        for target in ("scratch", "home"):
            s = probe_store.read_samples(store, target)
            for code in range(len(probe_store.OPS)):
                starts = s["start_ns"][s["op"] == code]
                out += min(max(int(starts.min()), day), day + DAY) if len(starts) else day + DAY
        return out

    try:
        add_target(store, "scratch", day - DAY, day + DAY, period_s=1800, seed=SEED)
        add_target(store, "home", day + HOUR, day + DAY, period_s=1800, seed=SEED + 1)
        start = probe_store.rows_begin(store, day, day + DAY)
        assert start == reference()
        probe_store.prune_samples(store, day - HOUR)
        assert probe_store.rows_begin(store, day, day + DAY) == start == reference()
        probe_store.prune_samples(store, day + 2 * HOUR)
        moved = probe_store.rows_begin(store, day, day + DAY)
        assert moved > start and moved == reference()
        run_id = max(r["id"] for r in probe_store.runs(store, "scratch"))
        probe_store.insert_samples(store, [(run_id, "md_stat", day + 7, 10**6, 0, "ok", 0)])
        assert probe_store.rows_begin(store, day, day + DAY) == reference() < moved
    finally:
        store.dispose()
