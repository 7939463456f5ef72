"""The Servers page for DAYS x TARGETS targets at 5 s: server time and bytes to the browser, against
serving the raw per-target series.

    python benchmarks/bench_servers.py --days 30 --targets 500      # the target: < 1 s, < 2 MB
    python benchmarks/bench_servers.py --days 3 --home /tmp/h3      # keep the data (filled once) for reruns

Writes synthetic read/write telemetry (one file per day, as `collect` compacts it) into a temporary
IOWEATHER_HOME (or --home, reused when it holds the data already), then times services.telemetry.fsview.servers
(what /api/servers computes): "cold" is the first read after the write (the per-target rollups are
written with the data, so nothing is built on the way), then warm reads; wall time and the process's
CPU time (DuckDB's threads included: on a shared machine the wall time is mostly waiting for a core).
The baseline: the window's raw rows per target fetched from DuckDB (what a page without server-side
aggregation would have to ship); the baseline's JSON size is measured on one day's rows and scaled by
the days.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def fill(settings, fs: str, days: int, targets: int, step_s: float, t0_ns: int) -> int:
    from ioweather.store.telemetry_layout import write_rows

    rng = np.random.default_rng(1)
    per_day = int(86400 / step_s)
    names = np.array([f"{fs}-OST{i:04x}" for i in range(targets)])
    rows = 0
    for d in range(days):
        t = t0_ns + (d * per_day + np.arange(per_day, dtype=np.int64)) * int(step_s * 1e9)
        for metric in ("read_bytes", "write_bytes"):
            v = rng.gamma(0.3, 2e7, size=(per_day, targets))
            df = pd.DataFrame({"time_ns": np.repeat(t, targets), "target": np.tile(names, per_day),
                               "metric": metric, "value": v.ravel(), "interval_s": step_s})
            rows += write_rows(settings, fs, df, writer=f"bench-{metric.split('_')[0]}")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--targets", type=int, default=500)
    ap.add_argument("--step", type=float, default=5.0)
    ap.add_argument("--home", type=Path, default=None, help="keep the data here (filled when empty) for reruns")
    ap.add_argument("--no-baseline", action="store_true", help="skip the raw-rows baseline (minutes at 30 days)")
    a = ap.parse_args()
    from ioweather.config import Settings
    from ioweather.services.telemetry import fsview
    from ioweather.store.telemetry_layout import connect_duckdb, data_files, files_scan, fs_dir
    from ioweather.encoding import to_json

    with tempfile.TemporaryDirectory(prefix="bench-servers-", dir=os.environ.get("TMPDIR")) as tmp:
        settings = Settings.resolve(a.home or Path(tmp))
        t0 = 1_700_006_400 * 10**9 // 86_400_000_000_000 * 86_400_000_000_000
        w0 = time.perf_counter()
        if a.home is not None and data_files(fs_dir(settings, "bench")):
            rows = a.days * int(86400 / a.step) * a.targets * 2
        else:
            rows = fill(settings, "bench", a.days, a.targets, a.step, t0)
            print(f"wrote {rows:,} rows in {time.perf_counter() - w0:.1f} s", file=sys.stderr)
        since, until = t0, t0 + a.days * 86_400_000_000_000
        out = {"days": a.days, "targets": a.targets, "rows": rows, "load": os.getloadavg()[0]}
        for label in ("cold", "warm", "warm2", "warm3"):
            s, c = time.perf_counter(), time.process_time()
            doc = fsview.servers(settings, "bench", since, until, "bytes")
            out[f"{label}_s"] = round(time.perf_counter() - s, 3)
            out[f"{label}_cpu_s"] = round(time.process_time() - c, 3)
        s = time.perf_counter()
        out["json_bytes"] = len(to_json(doc).encode())
        out["json_encode_s"] = round(time.perf_counter() - s, 3)
        out["columns"] = len(doc["time"])
        out["step_s"] = doc["step_s"]
        out["load_after"] = os.getloadavg()[0]
        if a.no_baseline:
            print(json.dumps(out))
            return 0
        con = connect_duckdb()
        scan = files_scan(data_files(fs_dir(settings, "bench")))
        s = time.perf_counter()
        day = con.sql(f"SELECT target, metric, time_ns, value FROM {scan} "
                      f"WHERE time_ns >= {t0} AND time_ns < {t0 + 86_400_000_000_000}").to_arrow_table()
        out["raw_rows_fetch_s_estimate"] = (time.perf_counter() - s) * a.days
        n = day.num_rows * a.days
        day = day.slice(0, 1_000_000).to_pandas()
        con.close()
        one_day = len(json.dumps({"time": day["time_ns"].tolist(), "target": day["target"].tolist(),
                                  "value": day["value"].round(0).tolist()}).encode()) * (n // a.days) / len(day)
        out["raw_rows"] = int(n)
        out["raw_json_bytes_estimate"] = int(one_day * a.days)
        out["bytes_ratio"] = out["raw_json_bytes_estimate"] / out["json_bytes"]
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
