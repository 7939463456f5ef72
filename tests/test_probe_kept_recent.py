"""Issue 40: the dashboard's probe cache keeps each target's last hour of samples between requests and
reads only what can still change (`ProbeCache(keep_recent=True)`, services/probe/cache._kept_read). Its
reads, its Status cards and its rollups equal a cache that reads everything each time, after new samples,
after late ones (a batch flushed after the previous read, within the lag) and after a new run."""

from __future__ import annotations

import time

import numpy as np

from ioweather.config import Settings
from ioweather.services.probe.cache import ProbeCache
from ioweather.services.probe.status import status
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from web_synthetic import add_target

S = 10**9


def _rows(run: int, t0: int, t1: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    out = []
    for k, op in enumerate(probe_store.OPS):
        for t in range(t0, t1, S):
            st = "ok" if rng.random() > 0.01 else "error"
            out.append((run, op, t + 500_000 + k * 1000, int(rng.lognormal(13, 0.4)), 0, st, 0 if st == "ok" else 5))
    return out


def test_kept_reads_equal_full_reads(tmp_path):
    store = open_store(Settings.resolve(tmp_path / "h"))
    try:
        now = (time.time_ns() // S - 600) * S
        clock = [now]
        run = add_target(store, "t", now - 2 * 3600 * S, now, period_s=1.0, seed=3)
        add_target(store, "u", now - 5400 * S, now, period_s=2.0, seed=4)
        kept = ProbeCache(store, clock=lambda: clock[0], keep_recent=True, warm_rollups=False)

        def check():
            fresh = ProbeCache(store, clock=lambda: clock[0], warm_rollups=False)
            for target in ("t", "u"):
                for since in (clock[0] - 3600 * S, clock[0] - 600 * S, clock[0] - 60 * S):
                    a = kept.read(target, since, None)
                    b = probe_store.read_samples(store, target, since_ns=since)
                    assert all(np.array_equal(a[c], b[c]) for c in b), (target, since)
                r1, r2 = kept.rollups(target, 600, clock[0] - 3 * 3600 * S, clock[0]), \
                    fresh.rollups(target, 600, clock[0] - 3 * 3600 * S, clock[0])
                assert all(np.array_equal(r1[c], r2[c], equal_nan=True) for c in r2), target
            for target in ("t", "u"):  # the baselines as of now (a server refreshes them past their TTL)
                kept._refresh(target)
            a = status(kept, ["t", "u"], warn=1.5, crit=3.0, baseline_s=86400.0).to_json()
            b = status(fresh, ["t", "u"], warn=1.5, crit=3.0, baseline_s=86400.0).to_json()
            assert a == b

        check()
        # a batch the probe flushed late: samples that started before the previous read, within the lag
        probe_store.insert_samples(store, _rows(run, now + 1 * S - 60 * S, now - 30 * S, 1))
        probe_store.insert_samples(store, _rows(run, now, now + 120 * S, 2))
        clock[0] = now + 120 * S
        check()
        # a new run of the target (a probe restarted)
        run2 = add_target(store, "t", now + 120 * S, now + 300 * S, period_s=1.0, seed=5)
        assert run2 != run
        clock[0] = now + 300 * S
        check()
    finally:
        store.dispose()


def test_kept_climate_and_sparkline_equal_fresh(tmp_path):
    """The climate's values (`rollup_values`: the kept intervals' sorted once per settled interval, the tail
    merged in) are the sorted finite column of a cache that computes the rollups afresh, and the Status
    cards (their sparkline's ended minutes kept by `recent_medians`) equal a fresh cache's, as the clock
    passes interval ends and samples arrive, late ones included."""
    store = open_store(Settings.resolve(tmp_path / "h"))
    try:
        now = (time.time_ns() // S - 4000) * S
        clock = [now]
        run = add_target(store, "t", now - 3 * 3600 * S, now, period_s=1.0, seed=3)
        kept = ProbeCache(store, clock=lambda: clock[0], keep_recent=True)
        seen_tails = 0
        for step in range(8):
            fresh = ProbeCache(store, clock=lambda: clock[0])
            since = clock[0] - 2 * 3600 * S
            for column in ("median_s", "p99_s", "mean_s"):
                got = kept.rollup_values("t", 600, since, clock[0], column)
                ref = fresh.rollups("t", 600, since, clock[0])
                for code in range(len(probe_store.OPS)):
                    v = ref[column][ref["op"] == code]
                    assert np.array_equal(got[code], np.sort(v[np.isfinite(v)])), (step, column, code)
            seen_tails += int(ref["start_ns"].max() >= kept.settled_ns(600 * S))
            kept._refresh("t")  # the baseline as of now (a server refreshes it past its TTL)
            a = status(kept, ["t"], warn=1.5, crit=3.0, baseline_s=86400.0).to_json()
            b = status(fresh, ["t"], warn=1.5, crit=3.0, baseline_s=86400.0).to_json()
            assert a == b, step
            assert a["targets"][0]["sparkline"]["points"] > 300
            # 4 min of new samples, some of them late (started before the previous answer, inside the lag)
            t0 = clock[0]
            probe_store.insert_samples(store, _rows(run, t0 - 40 * S + S // 4, t0 - 20 * S, 10 + step))  # between the seconds
            probe_store.insert_samples(store, _rows(run, t0, t0 + 240 * S, 20 + step))
            clock[0] = t0 + 240 * S
        assert seen_tails  # the unfinished interval was merged in at least once, not only kept rows compared
    finally:
        store.dispose()


def test_baseline_refreshes_of_all_targets_cost_one_percent():
    """Refreshing every target's baseline costs at most 1 / TTL_COST_FACTOR of a core in all, not per target:
    at 100 targets with ~20 ms baselines the per-target rule (TTL 2 s) made a Status answer compute many of
    them again in the request, a whole core's worth (docs/benchmarks.md, issue 40 item 4)."""
    from ioweather.services.probe import cache as cache_mod

    for compute_s in (0.001, 0.004, 0.02, 0.038, 0.3):
        for targets in (1, 10, 100, 1000):
            b = cache_mod.Baseline(np.ones(6), np.ones(6, np.int64), 0, 1, 0, compute_s)
            ttl = b.ttl_s(targets)
            assert cache_mod.TTL_MIN_S <= ttl <= cache_mod.TTL_MAX_S
            if cache_mod.TTL_MIN_S < ttl < cache_mod.TTL_MAX_S:  # not clamped: the budget holds exactly
                assert abs(targets * compute_s / ttl - 1 / cache_mod.TTL_COST_FACTOR) < 1e-12
            elif ttl == cache_mod.TTL_MAX_S:  # at most an hour old (the window moves 0.14 % an hour), even over budget
                assert targets * compute_s * cache_mod.TTL_COST_FACTOR >= cache_mod.TTL_MAX_S
