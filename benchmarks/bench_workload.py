"""Benchmark: `ioweather workload --json` over a year of 5-second telemetry for 100 targets.

Generates the telemetry as Parquet in the store's layout (pyarrow, one file per day,
written from numpy arrays without going through pandas), runs the full
`ioweather workload --json` in a subprocess (wall time and peak RSS of the child),
and compares one month against the naive pandas way (read the month's Parquet into a
DataFrame, group by in pandas) measured in the same run. Deletes the data afterwards.

    .venv/bin/python benchmarks/bench_workload.py                 # the full size: 365 days x 100 targets
    .venv/bin/python benchmarks/bench_workload.py --days 30 --targets 20   # scaled down
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DAY_NS = 86_400_000_000_000


def day_table(day: int, targets: int, interval_s: float, rng: np.random.Generator, names: pa.Array) -> pa.Table:
    """One UTC day of read/write bytes per target: a noise floor, a daily cycle and scheduled bursts."""
    step_ns = int(interval_s * 1e9)
    n = int(86400 / interval_s)
    t = np.arange(n, dtype=np.int64) * step_ns + day * DAY_NS
    hours = (np.arange(n) * interval_s / 3600.0)
    cycle = 1.0 + 0.5 * np.sin(2 * np.pi * hours / 24.0)
    per_target = 20e6 * interval_s  # 20 MB/s per target on average: the floor
    rows = []
    for metric, scale in (("read_bytes", 1.0), ("write_bytes", 0.6)):
        v = rng.exponential(per_target * scale, size=(n, targets)).astype(np.float64) * cycle[:, None]
        # checkpoint-like bursts: a few per day, 5-20 minutes, on all targets at ~500 MB/s each
        for _ in range(int(rng.integers(2, 6))):
            s = int(rng.integers(0, n))
            length = int(rng.integers(300, 1200) / interval_s)
            v[s:s + length] += 500e6 * interval_s * scale
        np.floor(v, out=v)
        rows.append((metric, v))
    time_col = np.tile(np.repeat(t, targets), 2)
    target_idx = np.tile(np.arange(targets, dtype=np.int32), n * 2)
    metric_idx = np.repeat(np.array([0, 1], dtype=np.int32), n * targets)
    value = np.concatenate([rows[0][1].ravel(), rows[1][1].ravel()])
    return pa.table({
        "time_ns": pa.array(time_col, pa.int64()),
        "target": pa.DictionaryArray.from_arrays(pa.array(target_idx), names).cast(pa.string()),
        "metric": pa.DictionaryArray.from_arrays(pa.array(metric_idx), pa.array(["read_bytes", "write_bytes"])).cast(pa.string()),
        "value": pa.array(value, pa.float64()),
        "interval_s": pa.array(np.full(len(value), interval_s), pa.float64()),
    })


def generate(fs_path: Path, first_day: int, days: int, targets: int, interval_s: float = 5.0,
             seed: int = 1) -> tuple[int, float, float]:
    """Write `days` days of telemetry under fs_path (the layout's fs=<name> directory), each with its
    rollup as an import writes it. Returns rows, seconds writing data, seconds writing rollups."""
    from ioweather.store import telemetry_rollup
    from ioweather.store.telemetry_layout import SCHEMA, WRITE_OPTIONS

    rng = np.random.default_rng(seed)
    names = pa.array([f"bench-OST{i:04x}" for i in range(targets)])
    rows = 0
    t_data = t_rollup = 0.0
    for d in range(first_day, first_day + days):
        t = time.perf_counter()
        table = day_table(d, targets, interval_s, rng, names).cast(SCHEMA)
        date = time.strftime("%Y-%m-%d", time.gmtime(d * 86400))
        out = fs_path / f"date={date}"
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, out / "bench-0.parquet", row_group_size=1 << 20, **WRITE_OPTIONS)
        t_data += time.perf_counter() - t
        t = time.perf_counter()
        telemetry_rollup.write(out / "bench-0.parquet", table)
        t_rollup += time.perf_counter() - t
        rows += table.num_rows
    return rows, t_data, t_rollup


# --------------------------------------------------------------------------- the pandas baseline
def pandas_workload(fs_path: Path, since_ns: int, until_ns: int, resample_s: float = 60.0) -> dict:
    """The naive way: read the range's Parquet into one DataFrame and group by in pandas, then the
    same pure statistics (`ioweather.stats.workload`) on the resulting series."""
    import pandas as pd

    from ioweather.stats import workload as W

    files = sorted(str(f) for f in fs_path.glob("date=*/*.parquet")  # data files, not date=*/_rollup/
                   if since_ns // DAY_NS <= _day_of(f) < -(-until_ns // DAY_NS))
    df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    df = df[(df["time_ns"] >= since_ns) & (df["time_ns"] < until_ns) & df["metric"].isin(["read_bytes", "write_bytes"])]
    step = int(resample_s * 1e9)
    df = df[df["value"].notna() & (df["value"] >= 0)]
    per_bin = df.groupby([df["time_ns"] // step, "metric"])["value"].sum().unstack()
    bins = np.arange(since_ns // step, -(-until_ns // step))
    per_bin = per_bin.reindex(bins)
    coverage = df.groupby(["metric", "target"])["value"].count()
    spectra = {k: W.power_spectrum(df.loc[df["metric"] == f"{k}_bytes", "value"].to_numpy()) for k in ("read", "write")}
    stats = W.summarize(int(bins[0]) * step, resample_s, per_bin["read_bytes"].to_numpy(), per_bin["write_bytes"].to_numpy())
    daily = per_bin.groupby((bins * step) // DAY_NS).sum()
    return {"read_bytes": float(per_bin["read_bytes"].sum()), "write_bytes": float(per_bin["write_bytes"].sum()),
            "peak_total_bps": stats["peak_total_bps"], "observations": int(coverage.sum()),
            "centroid_read": spectra["read"]["centroid_bytes"], "days": len(daily), "events": len(stats["events"])}


def _day_of(path: Path) -> int:
    return int(np.datetime64(path.parent.name[5:], "D").astype(np.int64))


# --------------------------------------------------------------------------- measuring
def run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user + system), peak RSS (GiB) of the child (its own rusage, from wait4),
    its stdout. CPU time is what an idle machine would need: on a loaded one wall time is mostly waiting."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read()}")
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / (1 << 20), out.read()


def machine_state() -> str:
    load = os.getloadavg()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES") / (1 << 30)
    return f"{os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {mem:.1f} GiB free"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=365)
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--pandas-days", type=int, default=30, help="the month for the pandas comparison (0: skip)")
    ap.add_argument("--dir", default=None, help="where to put the data (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--reuse", action="store_true", help="with --dir: use the data an earlier --keep run left there")
    ap.add_argument("--generate-only", action="store_true", help="generate (with --dir --keep) and stop")
    ap.add_argument("--raw-year", action="store_true", help="also time the whole range with --no-rollups (every row)")
    ap.add_argument("--pandas-only", nargs=3, metavar=("FS_PATH", "SINCE_NS", "UNTIL_NS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.pandas_only:
        print(json.dumps(pandas_workload(Path(args.pandas_only[0]), int(args.pandas_only[1]), int(args.pandas_only[2]))))
        return

    rows = args.days * int(86400 / args.interval) * args.targets * 2
    base = Path(args.dir or tempfile.mkdtemp(prefix="ioweather-bench-workload-"))
    base.mkdir(parents=True, exist_ok=True)
    need = rows * 6  # ~4.6 bytes a row in zstd Parquet, with a margin
    free = shutil.disk_usage(base).free
    if free < need * 1.5:
        raise SystemExit(f"need ~{need / 1e9:.1f} GB for {rows} rows, {free / 1e9:.1f} GB free on {base}")
    home = base / "home"
    fs_path = home / "parquet" / "telemetry" / "fs=bench"
    first_day = int(np.datetime64("2025-01-01", "D").astype(np.int64))
    print(f"machine: {machine_state()}")
    print(f"generating {args.days} days x {args.targets} targets x 2 metrics at {args.interval:g} s = {rows:,} rows ...",
          flush=True)
    try:
        if args.reuse and len(list(fs_path.glob("date=*/_rollup/*.parquet"))) == args.days:
            written, t_data, t_rollup = rows, float("nan"), float("nan")
            print("  reusing the data generated by an earlier --keep run")
        else:
            written, t_data, t_rollup = generate(fs_path, first_day, args.days, args.targets, args.interval)
        size = sum(f.stat().st_size for f in fs_path.glob("date=*/*.parquet"))
        rsize = sum(f.stat().st_size for f in fs_path.glob("date=*/_rollup/*.parquet"))
        timing = "" if args.reuse else (f" in {t_data:.0f} s (generated and written); rollups in {t_rollup:.0f} s "
                                        f"({100 * t_rollup / t_data:.0f} % of the writing)")
        print(f"  {written:,} rows, {size / 1e9:.2f} GB Parquet, rollups {rsize / 1e6:.1f} MB{timing}")
        if args.generate_only:
            return
        env = dict(os.environ, IOWEATHER_HOME=str(home))
        py = sys.executable
        month = (first_day * DAY_NS, (first_day + min(args.pandas_days, args.days)) * DAY_NS)
        since, until = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(x / 1e9)) for x in month)

        print(f"machine: {machine_state()}")
        if args.pandas_days > 0:
            wall_m, cpu_m, rss_m, out = run_measured([py, "-m", "ioweather", "workload", "--fs", "bench", "--since",
                                                      since, "--until", until, "--json"], env)
            ours = json.loads(out)
            print(f"ioweather workload, {args.pandas_days} days: {wall_m:.1f} s wall, {cpu_m:.1f} s CPU, "
                  f"peak RSS {rss_m:.2f} GiB", flush=True)
            wall_p, cpu_p, rss_p, out = run_measured([py, __file__, "--pandas-only", str(fs_path), str(month[0]),
                                                      str(month[1])], env)
            theirs = json.loads(out)
            print(f"pandas, {args.pandas_days} days:             {wall_p:.1f} s wall, {cpu_p:.1f} s CPU, "
                  f"peak RSS {rss_p:.2f} GiB", flush=True)
            assert theirs["read_bytes"] == ours["read_bytes"] and theirs["write_bytes"] == ours["write_bytes"]
            assert abs(theirs["peak_total_bps"] - ours["peak_total_bps"]) <= 1e-9 * ours["peak_total_bps"]
            assert theirs["observations"] == ours["observations"] and theirs["events"] == len(ours["events"])
            print(f"ratio pandas / ioweather on {args.pandas_days} days: {wall_p / wall_m:.1f}x wall, "
                  f"{cpu_p / cpu_m:.1f}x CPU (same totals, peak, observations, events)")

        print(f"machine: {machine_state()}")
        wall_y, cpu_y, rss_y, out = run_measured([py, "-m", "ioweather", "workload", "--fs", "bench", "--json"], env)
        full = json.loads(out)
        print(f"ioweather workload, all {args.days} days: {wall_y:.1f} s wall, {cpu_y:.1f} s CPU, peak RSS {rss_y:.2f} GiB "
              f"({full['samples']} intervals, {full['observations']:,} observations, {len(full['events'])} events)")
        print(f"machine: {machine_state()}")
        if args.raw_year:
            wall_r, cpu_r, rss_r, out = run_measured([py, "-m", "ioweather", "workload", "--fs", "bench", "--json",
                                                      "--no-rollups"], env)
            raw = json.loads(out)
            print(f"the same, --no-rollups (every row): {wall_r:.1f} s wall, {cpu_r:.1f} s CPU, peak RSS {rss_r:.2f} GiB")
            same = all(raw[k] == full[k] for k in ("samples", "observations", "missing_observations", "events",
                                                    "idle_periods", "daily"))
            close = all(abs(raw[k] - full[k]) <= 1e-12 * abs(raw[k]) for k in ("read_bytes", "write_bytes", "peak_total_bps"))
            assert same and close, "rollups and rows disagree"
            print(f"ratio every-row / rollups, all {args.days} days: {wall_r / wall_y:.1f}x wall, {cpu_r / cpu_y:.1f}x CPU "
                  f"(same document)")
            print(f"machine: {machine_state()}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
