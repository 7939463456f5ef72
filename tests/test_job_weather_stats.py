"""stats/job_weather.py (a job's weather: the array math) against hand-worked examples from METHODS.md
section 7 and independent references written differently here: plain Python loops over the jobs and
samples, and pandas group-bys, never ioweather's own code."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ioweather.stats import job_weather as jws

S = 10**9
HOUR = 3600 * S
OPS = ("data_write", "data_read", "md_create")


# ----------------------------------------------------------------------------- missing fraction

@pytest.mark.parametrize("covered, span, series, want", [
    (90.0, 60.0, 2, 0.25),     # one target's read and write series, 90 of their 120 s covered
    (120.0, 60.0, 2, 0.0),     # fully covered
    (130.0, 60.0, 2, 0.0),     # overlapping samples cover more than the window: clipped, never negative
    (0.0, 60.0, 8, 1.0),       # four targets reported that day, none in the window
])
def test_missing_fraction_by_hand(covered, span, series, want):
    assert jws.missing_fraction(covered, span, series) == pytest.approx(want, abs=1e-15)


def test_missing_fraction_unknown_is_none():
    assert jws.missing_fraction(0.0, 60.0, 0) is None  # nothing was ever collected: unknown, not 100 %
    assert jws.missing_fraction(0.0, 0.0, 2) is None


# ----------------------------------------------------------------------------- concurrency

def test_concurrency_by_hand():
    """The planted scheduler of tests/test_job_weather.py: a 60 s window; the job itself (2 nodes, all
    of the window), job 7 (10 nodes, its last 30 s in the window), job 8 (4 nodes, running, from 20 s),
    job 9 (after the window)."""
    t0 = 1_700_000_000 * S
    start = [t0 - 10 * S, t0 - HOUR, t0 + 20 * S, t0 + HOUR]
    end = [t0 + 70 * S, t0 + 30 * S, np.nan, t0 + 2 * HOUR]
    c = jws.concurrency(start, end, [2, 10, 4, 4], [True, False, False, False], t0, t0 + 60 * S, t0 + 10 * HOUR)
    assert c.jobs == 2 and c.found
    assert c.node_hours == pytest.approx((30 * 10 + 40 * 4) / 3600, rel=1e-12)
    assert c.coverage_factor_nodehrs == pytest.approx(120 / (120 + 300 + 160), rel=1e-12)


def test_concurrency_equals_a_loop_over_the_jobs():
    rng = np.random.default_rng(5)
    n = 400
    since, until, now = 1000 * S, 1600 * S, 1500 * S
    start = rng.integers(0, 2000, n) * S
    end = (start + rng.integers(1, 900, n) * S).astype(float)
    end[rng.random(n) < 0.1] = np.nan  # running
    nodes = rng.integers(0, 64, n).astype(float)
    mine = np.zeros(n, bool)
    mine[rng.integers(0, n, 2)] = True
    got = jws.concurrency(start, end, nodes, mine, since, until, now)
    others, others_nh, mine_nh, total, found = 0, 0.0, 0.0, 0.0, False
    for s, e, k, me in zip(start, end, nodes, mine):
        e_eff = until if np.isnan(e) else e
        overlaps = s < until and ((not np.isnan(e) and e > since) or (np.isnan(e) and now > since))
        if not overlaps:
            continue
        nh = max(0.0, min(until, e_eff) - max(since, s)) / 3.6e12 * k
        total += nh
        if me:
            mine_nh, found = mine_nh + nh, True
        else:
            others, others_nh = others + 1, others_nh + nh
    assert got.jobs == others and got.found == found
    assert got.node_hours == pytest.approx(others_nh, rel=1e-12)
    assert got.coverage_factor_nodehrs == (pytest.approx(mine_nh / total, rel=1e-12) if found and total > 0 else None)


def test_no_job_in_the_window_is_none():
    assert jws.concurrency([0], [10.0 * S], [4], [False], 20 * S, 30 * S, 40 * S) is None
    # a running job that started after "now" (clock skew between the scheduler and us) is not counted
    assert jws.concurrency([25 * S], [np.nan], [4], [False], 20 * S, 30 * S, 10 * S) is None


# ----------------------------------------------------------------------------- fullest OST

def _gauges(rng) -> pd.DataFrame:
    rows = []
    for target in ["fs-OST0000", "fs-OST0001", "fs-OST0002", "fs-MDT0000"]:
        for metric in ("capacity_bytes", "free_bytes"):
            t = np.sort(rng.choice(np.arange(0, 48 * HOUR, 600 * S), 120, replace=False))
            v = 1e13 if metric == "capacity_bytes" else rng.uniform(0.01, 0.9, t.size) * 1e13
            rows.append(pd.DataFrame({"time_ns": t, "target": target, "metric": metric, "value": v}))
    g = pd.concat(rows, ignore_index=True)
    g.loc[g.sample(frac=0.02, random_state=1).index, "value"] = np.nan  # a missing reading is not a value
    return g.sample(frac=1.0, random_state=2)  # any order


def test_fullest_ost_equals_a_pandas_last_reading():
    rng = np.random.default_rng(3)
    g = _gauges(rng)
    at = [30 * HOUR + 7 * S, 2 * HOUR, 47 * HOUR, 12 * HOUR + 600 * S]
    got = jws.fullest_ost(g, at, 24 * HOUR)
    for a, (pct, target) in zip(at, got):
        w = g[(g["time_ns"] <= a) & (g["time_ns"] >= a - 24 * HOUR) & g["value"].notna()]
        last = w.sort_values("time_ns").groupby(["target", "metric"])["value"].last().unstack()
        used = ((1 - last["free_bytes"] / last["capacity_bytes"]) * 100).dropna()
        used = used[used.index.str.contains("OST")]  # the MDT's fullness is not an OST's
        assert target == used.idxmax() and pct == pytest.approx(used.max(), rel=1e-12)


def test_fullest_ost_without_gauges():
    empty = pd.DataFrame({"time_ns": [], "target": [], "metric": [], "value": []})
    assert jws.fullest_ost(empty, [5, 6], HOUR) == [(None, None), (None, None)]
    old = pd.DataFrame({"time_ns": [0, 0], "target": "fs-OST0000", "metric": ["capacity_bytes", "free_bytes"],
                        "value": [10.0, 5.0]})
    assert jws.fullest_ost(old, [2 * HOUR, HOUR // 2], HOUR) == [(None, None), (50.0, "fs-OST0000")]


# ----------------------------------------------------------------------------- probe slowdown

def test_probe_slowdown_is_the_median_over_targets_of_each_ops_ratio():
    rng = np.random.default_rng(9)
    windows, ratios = [], {op: [] for op in OPS}
    for _t in range(3):
        expected = rng.uniform(0.001, 0.01, len(OPS))
        n = 90
        op = rng.integers(0, 2, n)  # md_create never probed in this window
        dur = rng.uniform(0.5, 5.0, n) * 1e7
        status = np.where(rng.random(n) < 0.1, 2, 0)  # timeouts are not durations
        windows.append(({"op": op, "duration_ns": dur, "status": status}, expected))
        for code in (0, 1):
            ok = (op == code) & (status == 0)
            ratios[OPS[code]].append(np.median(dur[ok] / 1e9) / expected[code])
    worst, by_op = jws.probe_slowdown(windows, OPS)
    want = {op: float(np.median(v)) for op, v in ratios.items() if v}
    assert by_op == pytest.approx(want, rel=1e-12) and set(by_op) == {"data_write", "data_read"}
    assert worst == pytest.approx(max(want.values()), rel=1e-12)


def test_no_probe_sample_is_unknown():
    assert jws.probe_slowdown([], OPS) == (None, None)
    nothing_ok = ({"op": np.array([0]), "duration_ns": np.array([5e6]), "status": np.array([1])}, np.ones(3))
    assert jws.probe_slowdown([nothing_ok], OPS) == (None, None)


# ----------------------------------------------------------------------------- the job's own targets

def test_amounts_on_targets_counts_only_the_jobs_osts():
    """Two 10 s samples of 100 bytes on each of three OSTs; a window from 5 s to 20 s counts both, the first
    whole (the job started in it: stats.coverage.job_overlap_s), 200 bytes per OST, and the job used OST 0
    and OST 2 (ids 0 and 2, names ...OST0000, ...OST0002)."""
    rows = pd.DataFrame({"time_ns": [0, 10 * S] * 3, "interval_s": 10.0, "value": 100.0, "metric": "write_bytes",
                         "target": ["fs-OST0000"] * 2 + ["fs-OST0001"] * 2 + ["fs-OST0002"] * 2})
    got = jws.amounts_on_targets(rows, [0, 2], 5 * S, 20 * S)
    assert got == {"bytes_read": None, "bytes_written": 400.0, "read_ops": None, "write_ops": None}
    # a window ending half-way into the second sample counts half of it
    assert jws.amounts_on_targets(rows, [0, 2], 5 * S, 15 * S)["bytes_written"] == 300.0
    assert jws.amounts_on_targets(rows, [7], 0, 20 * S) is None


# ----------------------------------------------------------------------------- the motif matrix

def test_motif_matrix_equals_fraction_of_peak_and_the_plausible_cfs():
    from ioweather.stats.umami import fraction_of_peak

    rng = np.random.default_rng(4)
    perf = rng.uniform(1e8, 1e9, 50)
    perf[[3, 9]] = np.nan
    cf = rng.uniform(0, 1.5, 50)
    cpu = rng.uniform(0, 300, 50)  # a CPU % above 1.2 is not a coverage factor: kept
    x, peak = jws.motif_matrix(perf, np.column_stack([cf, cpu]), [True, False])
    assert peak == np.nanmax(perf)
    np.testing.assert_array_equal(x[:, 0], fraction_of_peak(perf, ["m"] * 50))
    np.testing.assert_array_equal(x[:, 1], pd.Series(cf).where(pd.Series(cf) <= 1.2).to_numpy())
    np.testing.assert_array_equal(x[:, 2], cpu)


def test_motif_without_performance_has_no_fraction_of_peak():
    x, peak = jws.motif_matrix([np.nan, np.nan], [[0.5], [0.7]], [True])
    assert peak is None and np.isnan(x[:, 0]).all() and list(x[:, 1]) == [0.5, 0.7]


# ----------------------------------------------------------------------------- per-file facts

def test_file_facts_by_hand():
    f = pd.DataFrame({"log_hash": ["a", "a", "a", "b"], "module": ["POSIX", "STDIO", "MPI-IO", "STDIO"],
                      "reads": [3, 5, 7, 1], "writes": [2, 0, 9, 1], "opens": [1, 1, 1, 1],
                      "mount": ["/scratch", "/home", "/scratch", "/home"], "ost_ids": ["0,3", None, None, None],
                      "fs_type": ["lustre", "nfs", "lustre", "nfs"], "bytes_read": [10.0, 1.0, 99.0, 4.0],
                      "bytes_written": [5.0, np.nan, 99.0, 0.0]})
    sums, mounts, osts, mbytes = jws.file_facts(f)
    # b has records but none of POSIX: it did no POSIX operation (0), not an unknown number
    assert sums == {"a": {"reads": 3, "writes": 2, "opens": 1}, "b": {"reads": 0, "writes": 0, "opens": 0}}
    assert mounts == {"a": ["/home", "/scratch"], "b": ["/home"]}
    assert osts == {"a": [0, 3]}
    # MPI-IO bytes pass through POSIX: counted once
    assert mbytes == {"a": [{"mount": "/home", "fs_type": "nfs", "bytes": 1.0},
                            {"mount": "/scratch", "fs_type": "lustre", "bytes": 15.0}],
                      "b": [{"mount": "/home", "fs_type": "nfs", "bytes": 4.0}]}


def test_a_learning_probe_baseline_judges_no_job():
    """learning_at on raw samples equals learning_ops on counts and first times taken with pandas: an op
    with fewer than 24 h of successful history, or too few samples, before the job's day judges nothing."""
    import pandas as pd

    from ioweather.stats.status import learning_at, learning_ops

    rng = np.random.default_rng(7)
    n, now = 5000, 40 * 3600 * 10**9
    op = rng.integers(0, 5, n)  # op 5 of 6 has no sample at all
    start = rng.integers(0, now, n)
    start[op == 3] += now // 2  # op 3's history begins 20 h before now: still learning
    status = rng.choice([0, 0, 0, 1, 2], n)
    ok = pd.DataFrame({"op": op, "start": start})[status == 0]
    count = ok.groupby("op").size().reindex(range(6), fill_value=0).to_numpy()
    first = ok.groupby("op")["start"].min().reindex(range(6)).to_numpy()
    history = np.where(np.isnan(first), 0.0, (now - np.nan_to_num(first)) / 1e9)
    want = learning_ops(count, history, 24 * 3600.0, 100)
    got = learning_at(op, start, status, 6, now, 24 * 3600.0, 100)
    assert got.tolist() == want.tolist() == [False, False, False, True, False, True]


def test_median_s_is_numpys_median_bit_for_bit():
    """stats.job_weather.median_s (the events' window medians) = np.median(d / 1e9) exactly: odd and even
    counts, ties, durations whose quotients by 1e9 round to the same float, one sample."""
    import os

    from ioweather.stats.job_weather import median_s

    seed = int(os.environ.get("TEST_SEED", np.random.SeedSequence().entropy % 2**31))
    print("seed", seed, "(TEST_SEED)")
    rng = np.random.default_rng(seed)
    for n in [*range(1, 40), 1000, 1001]:
        for d in (rng.lognormal(13, 1.5, n).astype(np.int64), rng.integers(1, 4, n) * 10**9 + rng.integers(0, 3, n),
                  np.full(n, 123_456_789, np.int64)):
            assert median_s(d) == np.median(d / 1e9), (n, d)
