"""Cost of `ioweather bench`: the runner's own overhead beyond fio, and `bench summary` over a long history.

overhead: `services.bench.run` of one tiny motif (fpp-write, 1 MiB, 1 task) in this process, --runs
times; the runner's own time = total - the time spent waiting for fio (its subprocess); peak RSS of
this process (fio is another process). The command as people run it (`python -m ioweather bench run`)
is also timed, start-up included.

summary: --years x 365 days x 3 runs a day x 10 motifs stored (synthetic durations), then
`services.bench.summary` and the `bench summary --json` command are timed.

    .venv/bin/python benchmarks/bench_bench.py [--runs 5] [--years 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ioweather.config import Settings
from ioweather.services import bench as svc
from ioweather.store import bench as bstore
from ioweather.store import open_store


def overhead(home: Path, runs: int) -> None:
    store = open_store(Settings.resolve(home))
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        own = []
        for _ in range(runs):
            out = svc.run(store, ["fpp-write"], d, size=1 << 20, tasks=1)
            own.append(out["total_s"] - out["fio_s"])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        walls = []
        env = dict(os.environ, IOWEATHER_HOME=str(home))
        for _ in range(runs):
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "ioweather", "bench", "run", "fpp-write", "--dir", d,
                                "--size", "1MiB", "--tasks", "1", "--json"], capture_output=True, text=True, env=env)
            wall = time.perf_counter() - t
            walls.append(wall - json.loads(p.stdout)["fio_s"])
    print(f"runner overhead beyond fio, in process: median {np.median(own) * 1000:.0f} ms, max {max(own) * 1000:.0f} ms "
          f"over {runs} runs; peak RSS {rss:.0f} MiB")
    print(f"`bench run` command wall minus fio (Python start-up included): median {np.median(walls):.2f} s, "
          f"max {max(walls):.2f} s")


def summary(home: Path, years: int) -> None:
    store = open_store(Settings.resolve(home))
    rng = np.random.default_rng(1)
    n_days = years * 365
    t0 = 1_262_304_000 * 10**9
    t = time.perf_counter()
    batch = []
    for m in range(10):
        motif = f"motif{m}"
        for day in range(n_days):
            for k in range(3):
                start = t0 + (day * 86400 + k * 28800) * 10**9
                dur = 60 * (1 + rng.gamma(1.5, 0.5))
                batch.append({"run_id": f"{motif}-{day}-{k}", "motif": motif, "fs": "scratch", "source": "fio",
                              "start_ns": start, "end_ns": start + int(dur * 1e9), "params": {},
                              "results": [{"direction": "write" if m % 2 else "read", "bytes": 10**11,
                                           "duration_s": dur, "bw_bps": 1e11 / dur}]})
        bstore.put_runs(store, batch)
        batch = []
    n = 10 * n_days * 3
    print(f"stored {n:,} runs in {time.perf_counter() - t:.1f} s")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        rows = svc.summary(store)
        times.append(time.perf_counter() - t)
    assert sum(r["runs"] for r in rows) == n
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "ioweather", "bench", "summary", "--json"], capture_output=True, env=env)
    cmd = time.perf_counter() - t
    assert p.returncode == 0
    print(f"summary over {n:,} runs ({years} years x 3 a day x 10 motifs): service min {min(times):.2f} s, "
          f"max {max(times):.2f} s; `bench summary --json` command {cmd:.2f} s (start-up included)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--years", type=int, default=10)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as h:
        overhead(Path(h) / "a", a.runs)
        summary(Path(h) / "b", a.years)


if __name__ == "__main__":
    main()
