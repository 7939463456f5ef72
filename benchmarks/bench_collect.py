"""Cost of `ioweather collect` and throughput of `ioweather import`, each against a baseline
measured in the same run.

collect: a generated Lustre OSS tree with --targets OSTs (Lustre 2.x layout, see
sources/telemetry/synthetic.py). CPU time per tick is taken with getrusage around the tick
(the source threads are in this process), and compared with
  * `cat` of the same files (a fork+exec per tick: what a shell-script collector pays), and
  * a bare Python open/read of the same files (the floor for any collector in Python).
The share of a core at the sampling interval is CPU per tick / interval. A real run of the
daemon loop (run_collect, --real-seconds at --interval, the counters moved by a separate
process) then measures CPU against wall time with getrusage, including the sleeping, the
threads, the deltas and the Parquet flush.

import: an LMT database in SQLite with --lmt-osts OSTs and --lmt-hours of 5 s samples is
generated, imported, and the rows/s compared with a bare sqlite3 SELECT of the rows it reads
(OST_DATA and OSS_DATA).

    .venv/bin/python benchmarks/bench_collect.py [--targets 50] [--interval 5] [--ticks 200]
        [--real-seconds 30] [--lmt-osts 50] [--lmt-hours 6] [--csv-rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ioweather.config import Settings
from ioweather.services.telemetry.collector import Collector
from ioweather.sources.telemetry.lustre import Lustre
from ioweather.sources.telemetry.synthetic import advance, make_tree


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def bench_ticks(root: Path, names: list[str], ticks: int, interval: float) -> dict:
    files = sorted(str(p) for p in root.rglob("*") if p.is_file())
    collector = Collector([Lustre(root, host="oss")], interval, "oss", timeout_s=10)
    t0 = 1_700_000_000 * 10**9
    spent = 0.0
    for i in range(ticks):
        advance(root, names, i)                 # the "server" moves data (not counted)
        c0 = cpu_self()
        collector.tick(t0 + i * int(interval * 1e9))
        spent += cpu_self() - c0
    rows = collector.pending_rows
    # baseline 1: cat of the same files, once per tick
    c0 = cpu_children()
    for _ in range(ticks):
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)
    cat = cpu_children() - c0
    # baseline 2: a bare Python read of the same files
    c0 = cpu_self()
    for _ in range(ticks):
        for f in files:
            with open(f, "rb") as fh:
                fh.read()
    bare = cpu_self() - c0
    per_tick = spent / ticks
    return {"files": len(files), "rows_per_tick": rows / max(1, ticks - 1), "cpu_per_tick_s": per_tick,
            "cat_per_tick_s": cat / ticks, "bare_read_per_tick_s": bare / ticks,
            "core_pct_at_interval": 100 * per_tick / interval, "ratio_vs_cat": spent / cat if cat else float("nan"),
            "ratio_vs_bare_read": spent / bare if bare else float("nan")}


SERVER = """
import sys, time
from pathlib import Path
from ioweather.sources.telemetry.synthetic import advance
root, names, half = Path(sys.argv[1]), sys.argv[2].split(","), float(sys.argv[3])
step = 0
while True:
    step += 1
    advance(root, names, step)
    time.sleep(half)
"""


def bench_real(root: Path, names: list[str], seconds: float, interval: float) -> dict:
    """The daemon loop for `seconds`, counters moved by a separate process (its CPU is not ours)."""
    from ioweather.services.telemetry.collect import run_collect

    home = Path(tempfile.mkdtemp(prefix="iw-bench-home-"))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(root), ",".join(names), str(interval / 2)])
    try:
        s = run_collect(Settings(home=home), interval=interval, source_names="lustre", root=str(root), fs=None,
                        duration=seconds, flush_s=60.0, timeout=None, quiet=True, install_signals=False)
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(home, ignore_errors=True)
    return {"wall_s": s["wall_s"], "ticks": s["ticks"], "rows_written": s["rows_written"], "cpu_s": s["cpu_s"],
            "core_pct": s["cpu_pct"]}


def make_lmt(path: Path, osts: int, hours: float) -> int:
    n_ts = int(hours * 3600 / 5)
    c = sqlite3.connect(path)
    c.executescript("""
        CREATE TABLE FILESYSTEM_INFO (FILESYSTEM_ID, FILESYSTEM_NAME, FILESYSTEM_MOUNT_NAME, SCHEMA_VERSION);
        CREATE TABLE OST_INFO (OST_ID, OSS_ID, OST_NAME, HOSTNAME, OFFLINE, DEVICE_NAME);
        CREATE TABLE OSS_INFO (OSS_ID, FILESYSTEM_ID, HOSTNAME, FAILOVERHOST);
        CREATE TABLE TIMESTAMP_INFO (TS_ID, TIMESTAMP);
        CREATE TABLE OST_DATA (OST_ID, TS_ID, READ_BYTES, WRITE_BYTES, PCT_CPU, KBYTES_FREE, KBYTES_USED,
                               INODES_FREE, INODES_USED);
        CREATE TABLE OSS_DATA (OSS_ID, TS_ID, PCT_CPU, PCT_MEMORY);""")
    c.execute("INSERT INTO FILESYSTEM_INFO VALUES (1, 'bench', '', 1.1)")
    c.executemany("INSERT INTO OST_INFO VALUES (?, ?, ?, ?, 0, '/dev/md0')",
                  [(i, i, f"bench-OST{i:04x}", f"oss{i}") for i in range(osts)])
    c.executemany("INSERT INTO OSS_INFO VALUES (?, 1, ?, '')", [(i, f"oss{i}") for i in range(osts)])
    base = np.datetime64("2024-01-01T00:00:00")
    c.executemany("INSERT INTO TIMESTAMP_INFO VALUES (?, ?)",
                  [(int(i), str(base + np.timedelta64(5 * int(i), "s")).replace("T", " ")) for i in range(n_ts)])
    rng = np.random.default_rng(1)
    for i in range(osts):
        rb = np.cumsum(rng.integers(0, 1 << 30, n_ts))
        wb = np.cumsum(rng.integers(0, 1 << 30, n_ts))
        c.executemany("INSERT INTO OST_DATA VALUES (?, ?, ?, ?, 0.0, 1000000, 2000000, 5000, 100)",
                      zip([i] * n_ts, range(n_ts), rb.tolist(), wb.tolist()))
        c.executemany("INSERT INTO OSS_DATA VALUES (?, ?, ?, ?)",
                      zip([i] * n_ts, range(n_ts), rng.uniform(0, 100, n_ts).tolist(), [50.0] * n_ts))
    c.commit()
    c.close()
    return n_ts * osts


def bench_import(osts: int, hours: float) -> dict:
    from ioweather.services.telemetry.imports import import_one

    d = Path(tempfile.mkdtemp(prefix="iw-bench-lmt-"))
    try:
        db = d / "lmt.sqlite3"
        ost_rows = make_lmt(db, osts, hours)
        t0, c0 = time.perf_counter(), cpu_self()
        with sqlite3.connect(db) as c:  # the same rows the import reads, fetched and dropped
            n = len(c.execute("SELECT OST_ID, TS_ID, READ_BYTES, WRITE_BYTES, KBYTES_FREE, KBYTES_USED, "
                              "INODES_FREE, INODES_USED FROM OST_DATA").fetchall())
            n += len(c.execute("SELECT OSS_ID, TS_ID, PCT_CPU, PCT_MEMORY FROM OSS_DATA").fetchall())
        select_s, select_cpu = time.perf_counter() - t0, cpu_self() - c0
        t0, c0 = time.perf_counter(), cpu_self()
        s = import_one(Settings(home=d / "home"), "lmt", str(db), "bench", tz="UTC", since_ns=None, until_ns=None,
                       interval=None, cumulative=False)
        import_s, import_cpu = time.perf_counter() - t0, cpu_self() - c0
        return {"ost_data_rows": ost_rows, "rows_out": s["rows"], "import_s": import_s, "import_cpu_s": import_cpu,
                "ost_rows_per_s": ost_rows / import_s, "rows_out_per_s": s["rows"] / import_s,
                "bare_select_rows_per_s": n / select_s, "ratio_vs_bare_select": import_s / select_s,
                "cpu_ratio_vs_bare_select": import_cpu / select_cpu}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def bench_csv(rows: int) -> dict:
    """import csv of `rows` rows (ISO times, 100 targets) against pandas.read_csv of the same file."""
    import pandas as pd

    from ioweather.services.telemetry.imports import import_one

    d = Path(tempfile.mkdtemp(prefix="iw-bench-csv-"))
    try:
        n_t = 100
        steps = rows // n_t
        t = pd.date_range("2024-01-01", periods=steps, freq="5s", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
        frame = pd.DataFrame({"time": np.repeat(t.to_numpy(), n_t),
                              "target": np.tile([f"fs-OST{i:04x}" for i in range(n_t)], steps),
                              "metric": "write_bytes", "value": np.arange(steps * n_t) % 1000003})
        path = d / "long.csv"
        frame.to_csv(path, index=False)
        t0, c0 = time.perf_counter(), cpu_self()
        pd.read_csv(path)
        base, base_cpu = time.perf_counter() - t0, cpu_self() - c0
        t0, c0 = time.perf_counter(), cpu_self()
        s = import_one(Settings(home=d / "home"), "csv", str(path), "bench", tz=None, since_ns=None, until_ns=None,
                       interval=None, cumulative=False)
        took, took_cpu = time.perf_counter() - t0, cpu_self() - c0
        return {"rows": s["rows"], "import_s": took, "import_cpu_s": took_cpu, "rows_per_s": s["rows"] / took,
                "read_csv_s": base, "read_csv_cpu_s": base_cpu, "ratio_vs_read_csv": took / base,
                "cpu_ratio_vs_read_csv": took_cpu / base_cpu}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=int, default=50)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--ticks", type=int, default=200)
    ap.add_argument("--real-seconds", type=float, default=30.0)
    ap.add_argument("--lmt-osts", type=int, default=50)
    ap.add_argument("--lmt-hours", type=float, default=6.0)
    ap.add_argument("--csv-rows", type=int, default=1_000_000)
    a = ap.parse_args()
    print(f"# {platform.node()} {platform.processor() or platform.machine()} cores={os.cpu_count()} "
          f"load={os.getloadavg()[0]:.2f} python={sys.version.split()[0]}")
    root = Path(tempfile.mkdtemp(prefix="iw-bench-tree-"))
    try:
        names = make_tree(root, a.targets, fs="bench")
        t = bench_ticks(root, names, a.ticks, a.interval)
        print(f"collect tick, {a.targets} OSTs + 1 MDT, {t['files']} files, {t['rows_per_tick']:.0f} rows/tick:")
        print(f"  CPU per tick {t['cpu_per_tick_s'] * 1e3:.2f} ms  = {t['core_pct_at_interval']:.3f} % of a core "
              f"at {a.interval:g} s")
        print(f"  baseline cat  {t['cat_per_tick_s'] * 1e3:.2f} ms/tick   ratio collect/cat = {t['ratio_vs_cat']:.2f}")
        print(f"  baseline bare Python read {t['bare_read_per_tick_s'] * 1e3:.2f} ms/tick   "
              f"ratio collect/bare read = {t['ratio_vs_bare_read']:.2f}")
        if a.real_seconds > 0:
            r = bench_real(root, names, a.real_seconds, a.interval)
            print(f"collect daemon loop, {r['wall_s']:.1f} s wall, {r['ticks']} ticks, {r['rows_written']} rows "
                  f"written (Parquet flush included): CPU {r['cpu_s']:.3f} s = {r['core_pct']:.3f} % of a core")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if a.lmt_osts > 0 and a.lmt_hours > 0:
        i = bench_import(a.lmt_osts, a.lmt_hours)
        print(f"import lmt (SQLite), {i['ost_data_rows']} OST_DATA rows -> {i['rows_out']} rows: {i['import_s']:.2f} s "
              f"({i['import_cpu_s']:.2f} s CPU), {i['ost_rows_per_s']:,.0f} OST_DATA rows/s, "
              f"{i['rows_out_per_s']:,.0f} stored rows/s")
        print(f"  baseline bare sqlite3 SELECT of OST_DATA + OSS_DATA: {i['bare_select_rows_per_s']:,.0f} rows/s   "
              f"ratio import/select: wall {i['ratio_vs_bare_select']:.2f}, CPU {i['cpu_ratio_vs_bare_select']:.2f}")
    if a.csv_rows > 0:
        c = bench_csv(a.csv_rows)
        print(f"import csv, {c['rows']} rows: {c['import_s']:.2f} s ({c['import_cpu_s']:.2f} s CPU) = "
              f"{c['rows_per_s']:,.0f} rows/s   baseline pandas.read_csv {c['read_csv_s']:.2f} s "
              f"({c['read_csv_cpu_s']:.2f} s CPU)   ratio: wall {c['ratio_vs_read_csv']:.2f}, "
              f"CPU {c['cpu_ratio_vs_read_csv']:.2f}")


if __name__ == "__main__":
    main()
