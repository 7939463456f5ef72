"""Issue 40: the dashboard's change-point marks end at the last settled 10-minute interval and each target's
search is kept until the next one settles (`ProbeCache.level_changes`, services/answers/changes.probe_marks).

As the clock passes interval ends and samples arrive (late ones among them: a batch flushed after the
previous answer, within the lag), the kept answer equals a cache that computes everything afresh and a
search of medians computed from the raw samples; a level shift planted an hour before the first answer
appears once enough intervals after it have settled, so an answer kept past its interval fails. The
dashboard's warm-up (`keep_marks`) leaves the default windows' searches kept for the pages."""

from __future__ import annotations

import time

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.services.answers.changes import PAGE_CONTEXT_S, keep_marks, probe_marks
from ioweather.services.probe import cache as cache_module
from ioweather.services.probe.cache import CHANGE_PERIOD_NS, ProbeCache
from ioweather.stats.changepoints import change_points
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from web_synthetic import MEDIANS_S, Episode, add_target, rollups_from_samples

#: Three days of two targets written and searched ten times: ~3 s on this machine, over the fast tier's 1.5 s.
pytestmark = pytest.mark.slow

S = 10**9
STEP = 600 * S
PERIOD = 30 * S
FACTOR = 3.0


def _rows(run: int, t0: int, t1: int, seed: int, shift_ns: int) -> list[tuple]:
    """Samples every PERIOD in [t0, t1) as web_synthetic.add_target makes them; data_read FACTOR× slower from
    shift_ns on."""
    rng = np.random.default_rng(seed)
    out = []
    times = np.arange(t0, t1, PERIOD, dtype=np.int64)
    for k, op in enumerate(probe_store.OPS):
        day = np.sin(2 * np.pi * (times % 86_400_000_000_000) / 86_400e9)  # web_synthetic's daily cycle
        dur = MEDIANS_S[op] * np.exp(rng.normal(0.0, 0.35, len(times)) + 0.15 * day)
        if op == "data_read":
            dur[times >= shift_ns] *= FACTOR
        out += [(run, op, int(t) + k * 10_000, int(d * 1e9), 0, "ok", 0) for t, d in zip(times, dur)]
    return out


def _reference(store, target: str, since_ns: int, until_ns: int) -> list[tuple]:
    """(op, time, level before, level after) of change_points over medians computed from every sample."""
    r = rollups_from_samples(store, target, 600, since_ns, until_ns)
    out = []
    for code, op in enumerate(probe_store.OPS):
        sel = r["op"] == code
        for c in change_points(r["median_s"][sel], log=True, times_ns=r["start_ns"][sel], period_ns=CHANGE_PERIOD_NS):
            out.append((op, int(r["start_ns"][sel][c.index]), c.level_before, c.level_after))
    return sorted(out)


def test_kept_marks_equal_fresh_as_intervals_settle(tmp_path, monkeypatch):
    store = open_store(Settings.resolve(tmp_path / "h"))
    try:
        now = (time.time_ns() // STEP - 12) * STEP + 7 * S  # not on the grid: the settled end is rounded down
        shift = now // STEP * STEP - STEP  # the first answer's search ends where the shift starts
        clock = [now]
        run = add_target(store, "t", now - 3 * 86400 * S, now, period_s=30.0, seed=3,
                         episodes=[Episode(shift, now + 86400 * S, FACTOR, ("data_read",))], error_rate=0.0,
                         timeout_rate=0.0)
        add_target(store, "u", now - 3 * 86400 * S, now, period_s=30.0, seed=4, error_rate=0.0, timeout_rate=0.0)
        kept = ProbeCache(store, clock=lambda: clock[0], keep_recent=True)
        seen = []
        written, held = now, []
        for i in range(10):  # 10 steps of 6 min 10 s: 10 intervals settle
            fresh = ProbeCache(store, clock=lambda: clock[0])
            end = (clock[0] - kept.lag_ns) // STEP * STEP
            for since in (clock[0] - 3600 * S, clock[0] - 7 * 86400 * S):  # Timeline's and History's windows
                a = probe_marks(kept, ["t", "u"], since, clock[0], clock[0])
                assert a == probe_marks(fresh, ["t", "u"], since, clock[0], clock[0]), (i, since)
                assert a.until_settled and a.until == _iso(end) and a.since == _iso(end - PAGE_CONTEXT_S * S)
            window = (end - PAGE_CONTEXT_S * S, end)
            got = kept.level_changes("t", *window, penalty_per_log_n=4.0, min_segment=6)
            assert kept.level_changes("t", *window, penalty_per_log_n=4.0, min_segment=6) is got  # kept, not redone
            ref = _reference(store, "t", *window)
            mine = sorted((c.op, c.at_ns, c.level_before, c.level_after) for c in got.changes)
            assert [c[:2] for c in mine] == [r[:2] for r in ref], i
            assert [v for c in mine for v in c[2:]] == \
                pytest.approx([v for r in ref for v in r[2:]], rel=1e-9)
            seen.append([(p.target, p.op, p.time) for p in a.points if p.op == "data_read"])
            # the next batch, less 30 s the probe flushes only after the next answer (late: those samples
            # started before it, within the lag), and the previous step's late 30 s
            clock[0] += 370 * S
            probe_store.insert_samples(store, held + _rows(run, written, clock[0] - 80 * S, 10 + i, shift)
                                       + _rows(run, clock[0] - 50 * S, clock[0] - 20 * S, 50 + i, shift))
            held = _rows(run, clock[0] - 80 * S, clock[0] - 50 * S, 90 + i, shift)
            written = clock[0] - 20 * S
        # no mark while too few intervals after the shift have settled, then at the shift
        assert seen[0] == [] and seen[-1] == [("t", "data_read", _iso(shift))], seen
        assert len({tuple(m) for m in seen}) > 2  # the answer moved as intervals settled: a kept one had to go
        # the dashboard's warm-up searches the default windows ahead of the pages, again when the next interval settles
        want = probe_marks(ProbeCache(store, clock=lambda: clock[0]), ["t", "u"], clock[0] - 7 * 86400 * S, clock[0],
                           clock[0])
        warm = ProbeCache(store, clock=lambda: clock[0])
        wait = keep_marks(warm, clock[0])
        assert 0 < wait <= 600 and (clock[0] + round(wait * 1e9) - warm.lag_ns) % STEP == 0

        def searched(*args, **kwargs):
            raise AssertionError("searched again")

        monkeypatch.setattr(cache_module, "change_points", searched)
        assert probe_marks(warm, ["t", "u"], clock[0] - 7 * 86400 * S, clock[0], clock[0]) == want
    finally:
        store.dispose()


def _iso(ns: int) -> str:
    from ioweather.units import ns_to_iso

    return ns_to_iso(ns)


def test_searches_kept_across_a_restart_for_the_same_series_only(tmp_path, monkeypatch):
    """A dashboard's cache (`persist`) writes its settled windows' searches at close; a restarted one takes a
    result back only for the very same series (its digest): the same marks without searching, and a late sample
    that changes one target's medians searches that target again, the new sample in its answer."""
    store = open_store(Settings.resolve(tmp_path / "h"))
    try:
        now = (time.time_ns() // STEP - 12) * STEP + 7 * S
        shift = now - 86400 * S
        run = add_target(store, "t", now - 3 * 86400 * S, now, period_s=30.0, seed=3,
                         episodes=[Episode(shift, now + 86400 * S, FACTOR, ("data_read",))], error_rate=0.0,
                         timeout_rate=0.0)
        add_target(store, "u", now - 3 * 86400 * S, now, period_s=30.0, seed=4, error_rate=0.0, timeout_rate=0.0)
        since = now - 7 * 86400 * S
        first = ProbeCache(store, clock=lambda: now, persist=True)
        want = probe_marks(first, ["t", "u"], since, now, now)
        assert [p.target for p in want.points].count("t") >= 1  # the planted shift is found: something to keep
        first.close()
        assert (tmp_path / "h" / "cache" / "probe-changes.json").exists()
        calls = []
        real = cache_module.change_points

        def counted(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        monkeypatch.setattr(cache_module, "change_points", counted)
        again = ProbeCache(store, clock=lambda: now, persist=True)
        assert probe_marks(again, ["t", "u"], since, now, now) == want and calls == []
        assert probe_marks(ProbeCache(store, clock=lambda: now), ["t", "u"], since, now, now) == want  # not persisted
        assert len(calls) == 12
        # a late sample 3× slower in every settled 10-minute interval of t's data_read for a day: other medians
        late = [(run, "data_read", int(t) + 20 * S, int(40 * MEDIANS_S["data_read"] * 1e9), 0, "ok", 0)
                for t in range(now - 2 * 86400 * S, now - 86400 * S, STEP)]
        probe_store.insert_samples(store, late)
        calls.clear()
        restarted = ProbeCache(store, clock=lambda: now, persist=True)
        got = probe_marks(restarted, ["t", "u"], since, now, now)
        assert len(calls) == 6  # t's 6 ops searched again, u's kept
        assert got == probe_marks(ProbeCache(store, clock=lambda: now), ["t", "u"], since, now, now)
        assert got != want
    finally:
        store.dispose()
