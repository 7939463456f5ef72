"""Store throughput (issues 3 and 21): inserting a day of 1 Hz samples, `slowdown` and `slowdown --check` over 30 days.

- insert: 6 ops x 86,400 samples through `insert_samples` vs a bare sqlite3
  executemany of the same rows into the same table (baseline), target < 5 s.
- slowdown (issue 21 row 1): `compute_slowdown` over 30 days of 1 Hz samples (15.6 M rows, completed
  days archived to Parquet) with a 10-minute interval, from the store's pieces (services/probe/pieces.py),
  vs the naive baseline in the same run: pandas `read_sql` of everything, then groupby().median().
  Target >= 10x the pandas baseline. Also printed: the full computation over every sample (the code
  before issue 21, `compute_slowdown_full`), and the one-time cost of building the pieces.
- check (issue 21 row 2): `slowdown --check` as a real CLI process (Python start included) and its
  service call alone, target < 1 s, against the full computation; the states must be equal.

Every fast result is compared with the full computation (equal, or the run stops).

    python benchmarks/bench_store.py [--days 30]

The store is built once in --dir (default /tmp/ioweather-bench-store) and reused while its marker matches.
"""

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.services.probe.slowdown import check_states, compute_slowdown, compute_slowdown_full
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.store.probe_archive import archive_completed_days
from ioweather.units import to_ns


def day_rows(run_id: int, day: int, t0_ns: int, rng) -> list[tuple]:
    n = 86_400
    base = t0_ns + day * 86_400 * 10**9 + np.arange(n, dtype=np.int64) * 10**9
    rows = []
    for k, op in enumerate(probe_store.OPS):
        dur = (rng.lognormal(-9 + k * 0.3, 0.4, n) * 1e9).astype(np.int64)
        starts = base + k * 1000
        rows.extend(zip([run_id] * n, [op] * n, starts.tolist(), dur.tolist(), [1 << 20] * n, ["ok"] * n, [0] * n))
    return rows


def build(home: Path, days: int) -> int:
    """The store (SQLite, completed days archived) and the baseline's plain SQLite table; returns t0_ns."""
    marker = home / f"bench-store-{days}d.json"
    if marker.exists():
        return json.loads(marker.read_text())["t0_ns"]
    home.mkdir(parents=True, exist_ok=True)
    for f in list(home.glob("*.sqlite*")):
        f.unlink()
    rng = np.random.default_rng(0)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    t0_ns = int((now - timedelta(days=days)).timestamp()) * 10**9
    store = open_store(Settings.resolve(home))
    run = probe_store.start_run(store, probe_store.RunInfo(
        target="bench", directory="/bench", interval_s=1, block_bytes=1 << 20, file_bytes=1 << 30, pool_files=200,
        small_bytes=3901, direct=False, fsync=False, seed=0, timeout_s=60, file_exceeds_memory=True))
    base_db = sqlite3.connect(home / "baseline.sqlite", isolation_level=None)
    base_db.execute("PRAGMA journal_mode=WAL")
    base_db.execute("CREATE TABLE probe_samples (run_id INTEGER, op VARCHAR(16), start_ns BIGINT, duration_ns BIGINT,"
                    " bytes BIGINT, status VARCHAR(8), errno INTEGER, PRIMARY KEY (run_id, op, start_ns)) WITHOUT ROWID")
    for day in range(days):
        rows = day_rows(run, day, t0_ns, rng)
        t = time.perf_counter()
        probe_store.insert_samples(store, rows)
        ours = time.perf_counter() - t
        t = time.perf_counter()
        base_db.execute("BEGIN")  # the baseline keeps every row in one SQLite table
        base_db.executemany("INSERT INTO probe_samples VALUES (?,?,?,?,?,?,?)", rows)
        base_db.execute("COMMIT")
        if day == 0:
            print(f"insert one day (6 x 86,400 = {len(rows):,} rows): {ours:.2f} s (target < 5 s); "
                  f"bare sqlite3 executemany {time.perf_counter() - t:.2f} s; ratio {ours / (time.perf_counter() - t):.2f}",
                  flush=True)
    t = time.perf_counter()
    moved = archive_completed_days(store, keep_days=1, now_ns=t0_ns + days * 86_400 * 10**9)
    print(f"archiving completed days (the daemon does this hourly): {moved:,} rows in {time.perf_counter() - t:.1f} s",
          flush=True)
    store.dispose()
    marker.write_text(json.dumps({"t0_ns": t0_ns}))
    return t0_ns


def top_up(store, home: Path, t0_ns: int, days: int) -> None:
    """Samples from the end of the built month until now, in the database (as a live probe leaves them),
    so that --check judges a real last 10 minutes; the 30-day window measured above is unchanged."""
    marker = home / "top-up.json"
    last = json.loads(marker.read_text())["end_ns"] if marker.exists() else t0_ns + days * 86_400 * 10**9
    now = time.time_ns() // 10**9 * 10**9
    run = probe_store.runs(store, "bench")[0]["id"]
    rng = np.random.default_rng(last // 10**9)
    rows = []
    for k, op in enumerate(probe_store.OPS):
        starts = np.arange(last, now, 10**9, dtype=np.int64) + k * 1000
        dur = (rng.lognormal(-9 + k * 0.3, 0.4, len(starts)) * 1e9).astype(np.int64)
        rows.extend(zip([run] * len(starts), [op] * len(starts), starts.tolist(), dur.tolist(), [1 << 20] * len(starts),
                        ["ok"] * len(starts), [0] * len(starts)))
    for i in range(0, len(rows), 500_000):
        probe_store.insert_samples(store, rows[i:i + 500_000])
    marker.write_text(json.dumps({"end_ns": now}))


def timed(fn, repeat: int = 1):
    out, times = None, []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ioweather-bench-store"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    home = args.dir / f"home-{args.days}d"
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    t0_ns = build(home, args.days)
    settings = Settings.resolve(home)
    store = open_store(settings)
    top_up(store, home, t0_ns, args.days)
    total = args.days * 6 * 86_400
    until = datetime.fromtimestamp(t0_ns / 1e9 + args.days * 86400, timezone.utc)
    since = until - timedelta(days=args.days)
    base_ns = (to_ns(since), to_ns(until))
    with store.begin() as conn:  # measure the one-time build every run
        conn.execute(sa.text("DELETE FROM probe_pieces"))

    built, first = timed(lambda: compute_slowdown(store, "bench", 600, "median", args.days * 86400, since, until))
    with store.connect() as conn:
        n, nbytes = conn.execute(sa.text("SELECT count(*), sum(length(hist) + length(sorted_ns) + length(rollups)) "
                                         "FROM probe_pieces")).one()
    parquet = sum(p.stat().st_size for p in (settings.parquet_dir / "probe").rglob("*.parquet"))
    print(f"pieces built on first use: {first:.2f} s once; {n} rows (target, op, span), {nbytes / 2**20:.0f} MiB "
          f"in the database (Parquet archive of the same samples: {parquet / 2**20:.0f} MiB)", flush=True)
    fast, ours = timed(lambda: compute_slowdown(store, "bench", 600, "median", args.days * 86400, since, until),
                       args.repeat)
    full, full_s = timed(lambda: compute_slowdown_full(store, "bench", 600, "median", since, until, "median", base_ns))
    assert fast == full == built, "pieces differ from the full computation"
    print(f"slowdown over {args.days} days ({total:,} rows, {len(fast):,} op-intervals): {ours:.2f} s from pieces "
          f"(median of {args.repeat}); full computation over every sample {full_s:.2f} s; equal: yes", flush=True)

    base_db = sqlite3.connect(home / "baseline.sqlite")
    t = time.perf_counter()
    df = pd.read_sql("SELECT op, start_ns, duration_ns FROM probe_samples WHERE status = 'ok'", base_db)
    expected = df.groupby("op").duration_ns.median()
    df["interval"] = df.start_ns // (600 * 10**9)
    med = df.groupby(["op", "interval"]).duration_ns.median()
    naive_sd = med / expected.reindex(med.index.get_level_values(0)).to_numpy()
    naive = time.perf_counter() - t
    del df
    assert len(naive_sd) == len(fast), (len(naive_sd), len(fast))
    print(f"pandas read-everything baseline (same rows, one SQLite table): {naive:.2f} s; "
          f"ours {naive / ours:.1f}x faster (target >= 10x); full computation {naive / full_s:.1f}x", flush=True)

    # ---- --check: the service call, then a real CLI process as cron runs it
    from ioweather.services.probe.cache import ProbeCache
    from ioweather.stats.probe import STATUS_OK
    from ioweather.stats.status import baseline_stats

    top_up(store, home, t0_ns, args.days)  # a live last 10 minutes, as a running probe leaves it
    states, check_s = timed(lambda: check_states(store, None, 600, "median", args.days * 86400, 2, 10), args.repeat)
    b = ProbeCache(store, baseline_s=args.days * 86400, warm_rollups=False).baseline("bench")
    t = time.perf_counter()
    s = probe_store.read_samples(store, "bench", since_ns=b.since_ns, until_ns=b.until_ns)
    for c in range(len(probe_store.OPS)):  # the rolling baseline at the check's own "now", every statistic
        ref = baseline_stats(s["duration_ns"][(s["op"] == c) & (s["status"] == STATUS_OK)].copy())
        assert ref == {st: b.stat_s[st][c] for st in ref}, (c, ref, {st: b.stat_s[st][c] for st in ref})
    ref_s = time.perf_counter() - t
    del s
    print(f"check: {[(x['state'], x['worst']) for x in states]}; its baseline (every statistic, every op) "
          "equals the full computation over the same window: yes", flush=True)
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    cli = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "ioweather", "slowdown", "--check", "--baseline", f"{args.days}d"],
                           env=env, capture_output=True, text=True)
        cli.append(time.perf_counter() - t)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ioweather", "--help"], env=env, capture_output=True)
    startup = time.perf_counter() - t
    print(f"slowdown --check: CLI {statistics.median(cli):.2f} s wall (Python start-up alone {startup:.2f} s; "
          f"'{p.stdout.strip()[:90]}'), service call {check_s * 1000:.0f} ms (target < 1 s); "
          f"full computation of the baseline {ref_s:.2f} s -> {ref_s / check_s:.0f}x", flush=True)


if __name__ == "__main__":
    main()
