"""`ioweather export`: one Prometheus scrape of a store with TARGETS OSTs at 5 s, against summing the
raw rows at every scrape.

    python benchmarks/bench_exporter.py --targets 500 --days 2 --hours 6     # the target: scrape < 100 ms

Writes DAYS finished days (one file per day, as `collect` compacts them) and HOURS of the current day
in 5-minute files (collect's flushes) of read/write bytes and operations per OST plus its free space,
into a temporary IOWEATHER_HOME. Times, over HTTP on loopback: the first summing (once per start),
a scrape with nothing new (the steady state between flushes), a scrape right after one new flush
file; and the baseline in the same run: one DuckDB GROUP BY over every row of the dataset (what an
exporter without per-file sums would run at each scrape), rendering excluded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

METRICS = ("read_bytes", "write_bytes", "read_ops", "write_ops")


def frame(names, t: np.ndarray, rng) -> pd.DataFrame:
    n, k = len(t), len(names)
    parts = []
    for m in METRICS:
        v = rng.gamma(0.3, 2e7 if m.endswith("bytes") else 50, size=(n, k))
        parts.append(pd.DataFrame({"time_ns": np.repeat(t, k), "target": np.tile(names, n), "metric": m,
                                   "value": v.ravel(), "interval_s": 5.0}))
    parts.append(pd.DataFrame({"time_ns": t[-1], "target": names, "metric": "free_bytes",
                               "value": rng.uniform(1e12, 9e13, k), "interval_s": 5.0}))
    return pd.concat(parts, ignore_index=True)


def fill(settings, fs: str, targets: int, days: int, hours: float, rng) -> tuple[int, int]:
    from ioweather.store.telemetry_layout import DAY_NS, write_rows

    names = np.array([f"{fs}-OST{i:04x}" for i in range(targets)])
    t0 = int(pd.Timestamp("2024-03-01T00:00:00Z").value)
    rows = files = 0
    for d in range(days):
        t = t0 + d * DAY_NS + np.arange(17280, dtype=np.int64) * 5 * 10**9
        rows += write_rows(settings, fs, frame(names, t, rng), writer="collect-bench-compact-x")
        files += 1
    today = t0 + days * DAY_NS
    for k in range(int(hours * 12)):
        t = today + (k * 60 + np.arange(60, dtype=np.int64)) * 5 * 10**9
        rows += write_rows(settings, fs, frame(names, t, rng), writer="collect-bench")
        files += 1
    return rows, files


def scrape(url: str) -> tuple[float, int]:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        n = len(r.read())
    return time.perf_counter() - t, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", type=int, default=500)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--hours", type=float, default=6)
    ap.add_argument("--scrapes", type=int, default=20)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from ioweather.config import Settings
    from ioweather.services.telemetry.exporter import TelemetryExporter, make_server, serve
    from ioweather.store import telemetry_layout as layout

    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.resolve(Path(tmp) / "home")
        t = time.perf_counter()
        rows, files = fill(settings, "scr", a.targets, a.days, a.hours, rng)
        print(f"store: {a.targets} OSTs, {a.days} days + {a.hours:g} h at 5 s: {rows / 1e6:.1f} M rows in {files} files "
              f"(written in {time.perf_counter() - t:.0f} s)")
        exp = TelemetryExporter(settings)
        server = make_server(exp, "127.0.0.1", 0)
        stop = threading.Event()
        threading.Thread(target=serve, args=(exp, server, stop), kwargs={"refresh_s": 3600.0}, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        try:
            t = time.perf_counter()
            while b"\nioweather_exporter_ready 1.0" not in urllib.request.urlopen(url, timeout=600).read():
                time.sleep(0.2)  # scrapes during the first summing answer at once: "not ready"
            first, size = time.perf_counter() - t, scrape(url)[1]
            series = sum(1 for line in exp.exposition().splitlines() if line and not line.startswith(b"#"))
            print(f"first summing (every file once, at start): {first * 1e3:.0f} ms, {series} series, {size / 1024:.0f} KiB")
            steady = [scrape(url)[0] for _ in range(a.scrapes)]
            print(f"scrape, nothing new: median {statistics.median(steady) * 1e3:.1f} ms, "
                  f"max {max(steady) * 1e3:.1f} ms ({a.scrapes} scrapes)")
            after, cached = [], []
            names = np.array([f"scr-OST{i:04x}" for i in range(a.targets)])
            last = max(int(f.last_ns) for f in exp._files.values())
            for k in range(5):
                t = last + (1 + k * 60 + np.arange(60, dtype=np.int64)) * 5 * 10**9
                layout.write_rows(settings, "scr", frame(names, t, rng), writer="collect-bench")
                after.append(scrape(url)[0])   # this scrape sums the new file (the refresher is off here)
                cached.append(scrape(url)[0])  # what every scrape after the refresher's pass costs
            print(f"scrape that sums one new 5-minute flush file itself: median {statistics.median(after) * 1e3:.1f} ms; "
                  f"the next scrape: median {statistics.median(cached) * 1e3:.1f} ms (5 flushes)")
        finally:
            stop.set()
        con = layout.connect_duckdb()
        base = []
        try:
            scan = layout.scan_sql(settings, "scr")
            for _ in range(3):
                t = time.perf_counter()
                con.execute(f"SELECT metric, target, sum(value) FROM {scan} WHERE value >= 0 GROUP BY ALL").fetchall()
                base.append(time.perf_counter() - t)
        finally:
            con.close()
        b = statistics.median(base)
        print(f"baseline, raw rows summed per scrape: median {b * 1e3:.0f} ms "
              f"({b / statistics.median(steady):.0f}x the steady scrape, {b / statistics.median(after):.1f}x the scrape "
              "after a flush)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
