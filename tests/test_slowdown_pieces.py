"""Issue 21: the slowdown baseline and rollups from per-day and per-hour pieces equal the full computation.

The reference is the computation over every sample (`compute_slowdown_full`, numpy's median and
partition on the concatenated durations), on generated SQLite stores (with archived days) and
PostgreSQL stores, before and after pieces exist, after late samples, new archived days, a restart.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.services.probe import pieces as probe_pieces
from ioweather.services.probe.slowdown import compute_slowdown, compute_slowdown_full
from ioweather.stats.slowdown_pieces import N_BUCKETS, bucket_low, bucket_of, locate, numpy_median_s, pick, summarize
from ioweather.stats.status import baseline_ranks, baseline_stats, baseline_stats_from
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.store.db import Store
from ioweather.store.probe import probe_pieces as pieces_table
from ioweather.store.probe_archive import archive_completed_days
from ioweather.units import to_ns

from web_synthetic import Episode, add_target, rollups_from_samples

DAY = 86_400 * 10**9
H = 3_600 * 10**9


# ---- the pure selection -------------------------------------------------------------------------
def test_buckets_are_monotone_and_bounded():
    rng = np.random.default_rng(1)
    d = np.unique(np.concatenate([np.arange(0, 5000), rng.integers(0, 2**50, 200_000), [2**52, 2**53 - 1]]))
    b = bucket_of(d)
    assert (np.diff(b) >= 0).all() and b.min() == 0 and b.max() < N_BUCKETS
    for k in rng.choice(len(d), 2000):
        lo = bucket_low(int(b[k]))
        assert lo <= d[k] and (b[k] < 128 or d[k] - lo < lo / 64 + 1)  # relative width <= 1/64
        assert bucket_of(np.array([lo]))[0] == b[k] and (lo == 0 or bucket_of(np.array([lo - 1]))[0] == b[k] - 1)


@pytest.mark.parametrize("seed", range(6))
def test_order_statistics_of_pieces_equal_partition(seed):
    rng = np.random.default_rng(seed)
    pieces = []
    for _ in range(rng.integers(1, 40)):
        n = int(rng.integers(0, 3000))
        kind = rng.integers(3)
        v = (rng.lognormal(10, 0.4, n) if kind == 0 else rng.integers(0, 50, n) if kind == 1  # heavy ties
             else rng.pareto(1.5, n) * 1e5).astype(np.int64)
        pieces.append(summarize(v))
    allv = np.concatenate([p[0] for p in pieces])
    if not len(allv):
        return
    ranks = sorted({0, len(allv) - 1, *rng.integers(0, len(allv), 20).tolist(), *baseline_ranks(len(allv))})
    located = locate(np.vstack([p[1] for p in pieces]), ranks)
    ref = np.sort(allv)
    for r, (within, offs, lens) in zip(ranks, located):
        got = pick([p[0][o:o + n] for p, o, n in zip(pieces, offs, lens)], within)
        assert got == ref[r]
    order = {r: int(ref[r]) for r in baseline_ranks(len(allv))}
    assert baseline_stats_from(len(allv), int(allv.sum()), order) == baseline_stats(allv.copy())
    assert numpy_median_s(len(allv), {r: int(ref[r]) for r in range(len(ref))}) == np.median(allv / 1e9)


# ---- stores -------------------------------------------------------------------------------------
def _fill(store, now_ns: int, days: float, period_s: float = 30.0) -> None:
    """Two targets; the second with two runs (a restart) that overlap one interval."""
    start = now_ns - int(days * DAY)
    ep = [Episode(start + DAY, start + DAY + 3 * H, 7.0, ("data_read", "md_stat"))]
    add_target(store, "scratch", start, now_ns, period_s=period_s, seed=1, episodes=ep, error_rate=0.01,
               timeout_rate=0.002)
    mid = start + int(days * DAY / 2)
    add_target(store, "home", start, mid + 123 * 10**9, period_s=period_s, seed=2, error_rate=0.005)
    add_target(store, "home", mid, now_ns, period_s=period_s * 2, seed=3, episodes=ep)


def _compare(store, until: datetime, days: float, **kw) -> None:
    since = until - timedelta(days=days)
    for interval, stat, expected in ((600, "median", "median"), (14400, "p99", "same"), (3600, "mean", "same"),
                                     (420, "p95", "median"), (1800, "max", "median")):
        args = (store, None, interval, stat, since, until, expected)
        base = (to_ns(until - timedelta(days=days)), to_ns(until))
        fast = compute_slowdown(store, None, interval, stat, days * 86400, since, until, expected)
        full = compute_slowdown_full(*args, base)
        assert len(fast) == len(full) > 0, (interval, stat)
        assert fast == full, (interval, stat, expected)


def _pieces(store) -> int:
    with store.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(pieces_table)).scalar()


def _late_rows(store, target: str, t_ns: int, n: int = 50) -> list[tuple]:
    run = probe_store.runs(store, target)[0]["id"]
    return [(run, op, t_ns + 1_234_567 + i * 997 + k, 10**9 + i, 0, "ok", 0) for i in range(n) for k, op in enumerate(probe_store.OPS)]


def _exercise(store, now_ns: int, days: float) -> None:
    until = datetime.fromtimestamp(now_ns / 1e9, timezone.utc) - timedelta(seconds=1234.5)
    assert _pieces(store) == 0
    _compare(store, until, days - 0.3)  # builds the pieces
    assert _pieces(store) > 0
    _compare(store, until, days - 0.3)  # reads them
    # a late sample in a summarized day (an import, a restarted probe's buffer) deletes that day's pieces
    with store.connect() as conn:
        before = conn.execute(sa.select(sa.func.count()).select_from(pieces_table).where(
            pieces_table.c.start_ns <= now_ns - 2 * DAY, pieces_table.c.start_ns > now_ns - 3 * DAY)).scalar()
    assert before > 0
    probe_store.insert_samples(store, _late_rows(store, "scratch", now_ns - 2 * DAY - 5 * H))
    _compare(store, until, days - 0.3)
    _compare_cache(store, now_ns, days - 0.5)
    # a fixed reference period, partly raw
    ref = (now_ns - 3 * DAY - 7 * H - 17, now_ns - DAY + 3 * H)
    since = until - timedelta(hours=30)
    for expected in ("median", "same"):
        fast = compute_slowdown(store, "scratch", 600, "p90", 0, since, until, expected, reference=ref)
        assert fast == compute_slowdown_full(store, "scratch", 600, "p90", since, until, expected, ref)


def _compare_cache(store, now_ns: int, days: float) -> None:
    """The dashboard's and --check's cache: every baseline statistic and the rollups equal numpy over the samples."""
    from ioweather.services.probe.cache import ProbeCache
    from ioweather.stats.probe import STATUS_OK

    cache = ProbeCache(store, baseline_s=days * 86400, clock=lambda: now_ns)
    for target in ("scratch", "home"):
        b = cache.baseline(target)
        s = probe_store.read_samples(store, target, since_ns=b.since_ns, until_ns=b.until_ns)
        for code in range(len(probe_store.OPS)):
            sel = (s["op"] == code) & (s["status"] == STATUS_OK)
            ref = baseline_stats(s["duration_ns"][sel].copy())
            assert ref == {st: b.stat_s[st][code] for st in ref}
            assert b.samples[code] == sel.sum() and b.first_ns[code] == s["start_ns"][sel].min()
        for interval in (600, 14400):
            got = cache.rollups(target, interval, b.since_ns, now_ns)
            ref = rollups_from_samples(store, target, interval, b.since_ns, now_ns)
            for c in ref:
                np.testing.assert_array_equal(got[c], ref[c], err_msg=f"{target} {interval} {c}")


def test_sqlite_pieces_equal_full_computation_with_archive_and_restart(tmp_path):
    settings = Settings.resolve(tmp_path / "h")
    store = open_store(settings)
    now = time.time_ns()
    _fill(store, now, 5.0)
    assert archive_completed_days(store, keep_days=1) > 0  # days move to Parquet, pieces are built for them
    _exercise(store, now, 5.0)
    # a new day archived later: its pieces join, the result is still the full computation's
    n_before = _pieces(store)
    store.dispose()
    store = open_store(settings)  # a restart: pieces persist
    assert _pieces(store) == n_before
    until = datetime.fromtimestamp(now / 1e9, timezone.utc)
    _compare(store, until, 4.0)


def test_postgresql_pieces_equal_full_computation(pg_url):
    store = Store(pg_url)
    now = time.time_ns()
    _fill(store, now, 4.0, period_s=60.0)
    _exercise(store, now, 4.0)
    store.dispose()
    store = Store(pg_url)
    _compare(store, datetime.fromtimestamp(now / 1e9, timezone.utc), 3.5)


def test_mariadb_keeps_the_full_computation(mariadb_url):
    store = Store(mariadb_url)
    now = time.time_ns()
    add_target(store, "t", now - 2 * DAY, now, period_s=60.0, seed=4)
    until = datetime.fromtimestamp(now / 1e9, timezone.utc)
    since = until - timedelta(days=1)
    fast = compute_slowdown(store, None, 600, "median", 2 * 86400, since, until)
    assert fast == compute_slowdown_full(store, None, 600, "median", since, until, "median",
                                         (to_ns(until - timedelta(days=2)), to_ns(until)))
    assert not probe_pieces.enabled(store) and _pieces(store) == 0


def test_a_piece_written_from_a_stale_read_is_refused(tmp_path):
    """The fingerprint check: a sample inserted between reading a span and writing its pieces."""
    store = open_store(Settings.resolve(tmp_path / "h"))
    now = time.time_ns()
    add_target(store, "t", now - 2 * DAY, now, period_s=30.0, seed=5)
    day0 = (now // DAY - 1) * DAY
    from ioweather.store import probe_pieces as pieces_store

    with store.connect() as conn:
        fp = pieces_store.fingerprint(conn, pieces_store.run_ids(conn, "t"), day0, day0 + DAY)
    s = probe_store.read_samples(store, "t", since_ns=day0, until_ns=day0 + DAY)
    rows = probe_pieces._summarize_span(s, day0, DAY, probe_pieces.ROLLUP_INTERVALS_S)
    probe_store.insert_samples(store, _late_rows(store, "t", day0 + 7 * H, 3))
    assert not pieces_store.write(store, "t", day0, DAY, fp, rows)
    assert _pieces(store) == 0


def test_a_day_whose_hours_are_summarized_is_not_read_again(tmp_path):
    """After midnight the day that just ended has its 24 hour pieces (the window's tail built them): a
    baseline uses them instead of reading the day, and stays exact."""
    from ioweather.services.probe.pieces import baseline, gather
    from ioweather.stats.probe import STATUS_OK

    store = open_store(Settings.resolve(tmp_path / "h"))
    now = time.time_ns()
    add_target(store, "t", now - 3 * DAY, now, period_s=20.0, seed=6, error_rate=0.01)
    # the last day that ended PIECE_LAG_NS before now: in the first 5 minutes after midnight the day that just
    # ended is not settled yet, its last hour no piece (1 run in 288 asked for 24 hours and got 23)
    day0 = ((now - probe_pieces.PIECE_LAG_NS) // DAY - 1) * DAY
    assert gather(store, "t", day0, day0 + DAY, now, spans=(H,), raw=False).built == 24
    g = gather(store, "t", day0 - 5 * H, now, now, raw=False)
    used = [p["span_ns"] for p in g.pieces[0] if day0 <= p["start_ns"] < day0 + DAY]
    assert used == [H] * 24  # the day's hours, no day piece built
    with store.connect() as conn:
        assert not conn.execute(sa.select(sa.func.count()).select_from(pieces_table).where(
            pieces_table.c.span_ns == DAY, pieces_table.c.start_ns == day0)).scalar()
    since = now - 2 * DAY - 5 * H
    got = baseline(store, "t", since, now, now)
    s = probe_store.read_samples(store, "t", since_ns=since, until_ns=now)
    for code, o in enumerate(got):
        d = np.sort(s["duration_ns"][(s["op"] == code) & (s["status"] == STATUS_OK)])
        assert o.n == len(d) and o.sum_ns == int(d.sum())
        assert o.order_ns == {r: int(d[r]) for r in baseline_ranks(len(d))}


def test_four_hour_rollups_from_hour_pieces_equal_interval_stats(tmp_path):
    """4-hour intervals of a day not yet summarized come from its hours' sorted arrays, merged."""
    from ioweather.stats.rollups import rollup_arrays
    from ioweather.services.probe.pieces import rollups
    from ioweather.stats.probe import interval_stats

    store = open_store(Settings.resolve(tmp_path / "h"))
    now = time.time_ns()
    add_target(store, "t", now - 2 * DAY, now, period_s=20.0, seed=7, error_rate=0.02, timeout_rate=0.01)
    since = now - DAY - 7 * H - 12345
    for _ in range(2):  # builds the pieces, then reads them
        got = rollups(store, "t", 14400, since, now, now)
        s = probe_store.read_samples(store, "t", since_ns=since, until_ns=now)
        ref = rollup_arrays(interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], 14400))
        order = np.lexsort((ref["op"], ref["start_ns"]))
        for c in ref:
            np.testing.assert_array_equal(got[c], ref[c][order], err_msg=c)
