"""Store throughput (issue 3): inserting a day of 1 Hz samples, and `slowdown` over 30 days.

- insert: 6 ops x 86,400 samples through `insert_samples` vs a bare sqlite3
  executemany of the same rows into the same table (baseline), target < 5 s.
- slowdown: `compute_slowdown` over 30 days of 1 Hz samples (15.6 M rows) with a
  10-minute interval vs the naive baseline: pandas `read_sql` of everything, then
  groupby().median(). Target < 15 s on the embedded default (SQLite).

    python benchmarks/bench_store.py [--days 30]
"""

import argparse
import sqlite3
import tempfile
import time
from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

from ioweather.services.slowdown import compute_slowdown
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.store.probe_archive import archive_completed_days


def day_rows(run_id: int, day: int, t0_ns: int, rng) -> list[tuple]:
    n = 86_400
    base = t0_ns + day * 86_400 * 10**9 + np.arange(n, dtype=np.int64) * 10**9
    rows = []
    for k, op in enumerate(probe_store.OPS):
        dur = (rng.lognormal(-9 + k * 0.3, 0.4, n) * 1e9).astype(np.int64)
        starts = base + k * 1000
        rows.extend(zip([run_id] * n, [op] * n, starts.tolist(), dur.tolist(), [1 << 20] * n, ["ok"] * n, [0] * n))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=30)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    t0_ns = int((now - timedelta(days=args.days)).timestamp()) * 10**9
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.resolve(f"{tmp}/home")
        store = open_store(settings)
        info = probe_store.RunInfo(target="bench", directory="/bench", interval_s=1, block_bytes=1 << 20,
                                   file_bytes=1 << 30, pool_files=200, small_bytes=3901, direct=False, fsync=False,
                                   seed=0, timeout_s=60, file_exceeds_memory=True)
        run = probe_store.start_run(store, info)
        rows = day_rows(run, 0, t0_ns, rng)

        t = time.perf_counter()
        probe_store.insert_samples(store, rows)
        ours = time.perf_counter() - t

        base_db = sqlite3.connect(f"{tmp}/baseline.sqlite", isolation_level=None)
        base_db.execute("PRAGMA journal_mode=WAL")
        base_db.execute("CREATE TABLE probe_samples (run_id INTEGER, op VARCHAR(16), start_ns BIGINT, duration_ns BIGINT,"
                        " bytes BIGINT, status VARCHAR(8), errno INTEGER, PRIMARY KEY (run_id, op, start_ns)) WITHOUT ROWID")
        t = time.perf_counter()
        base_db.execute("BEGIN")
        base_db.executemany("INSERT INTO probe_samples VALUES (?,?,?,?,?,?,?)", rows)
        base_db.execute("COMMIT")
        bare = time.perf_counter() - t
        print(f"insert one day (6 x 86,400 = {len(rows):,} rows): {ours:.2f} s (target < 5 s); "
              f"bare sqlite3 executemany {bare:.2f} s; ratio {ours / bare:.2f}")

        for day in range(1, args.days):
            rows = day_rows(run, day, t0_ns, rng)
            probe_store.insert_samples(store, rows)
            base_db.execute("BEGIN")  # the baseline keeps every row in one SQLite table
            base_db.executemany("INSERT INTO probe_samples VALUES (?,?,?,?,?,?,?)", rows)
            base_db.execute("COMMIT")
        total = args.days * len(rows)
        until = datetime.fromtimestamp(t0_ns / 1e9 + args.days * 86400, timezone.utc)
        t = time.perf_counter()
        moved = archive_completed_days(store, keep_days=1, now_ns=int(until.timestamp() * 1e9))
        print(f"archiving completed days (the daemon does this hourly): {moved:,} rows in {time.perf_counter() - t:.1f} s")
        since = until - timedelta(days=args.days)

        t = time.perf_counter()
        out = compute_slowdown(store, "bench", 600, "median", args.days * 86400, since, until)
        ours = time.perf_counter() - t
        print(f"slowdown over {args.days} days ({total:,} rows, {len(out):,} op-intervals): {ours:.2f} s (target < 15 s)",
              flush=True)

        t = time.perf_counter()
        df = pd.read_sql("SELECT op, start_ns, duration_ns FROM probe_samples WHERE status = 'ok'", base_db)
        expected = df.groupby("op").duration_ns.median()
        df["interval"] = df.start_ns // (600 * 10**9)
        med = df.groupby(["op", "interval"]).duration_ns.median()
        naive_sd = med / expected.reindex(med.index.get_level_values(0)).to_numpy()
        naive = time.perf_counter() - t
        assert len(naive_sd) == len(out), (len(naive_sd), len(out))
        print(f"pandas read-everything baseline (same rows, one SQLite table): {naive:.2f} s; ratio {ours / naive:.2f}")


if __name__ == "__main__":
    main()
