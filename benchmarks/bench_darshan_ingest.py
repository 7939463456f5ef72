"""Ingest throughput against bare PyDarshan on the same logs.

Baseline (measured in the same run): for every log, `with DarshanReport(path, read_all=True)`
(PyDarshan's own open + read of all modules, the least any Darshan tool does), serially.
Ours: `ioweather jobs ingest` (hash, read, characterize, findings, per-file table, SQLite
+ Parquet writes) with --workers 1 and with --workers 2.

    .venv/bin/python benchmarks/bench_darshan_ingest.py [N_LOGS]
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from darshan_support import all_real_logs  # noqa: E402


def build_corpus(root: Path, n: int) -> list[Path]:
    """n distinct logs: the real logs cycled, each copy made unique by trailing bytes (still a valid log)."""
    real = []
    seen = set()
    for p in all_real_logs():
        b = p.read_bytes()
        if b not in seen:
            seen.add(b)
            real.append(b)
    out = []
    for i in range(n):
        p = root / f"{i:05d}.darshan"
        p.write_bytes(real[i % len(real)] + i.to_bytes(4, "little"))
        out.append(p)
    return out


def baseline(paths: list[Path]) -> float:
    import darshan

    t = time.perf_counter()
    for p in paths:
        with darshan.DarshanReport(str(p), read_all=True) as r:
            _ = r.records
    return time.perf_counter() - t


def ours(paths_root: Path, workers: int) -> float:
    from ioweather.services.jobs.ingest import ingest
    from ioweather.config import Settings

    home = Path(tempfile.mkdtemp(prefix="iw-bench-home-"))
    try:
        t = time.perf_counter()
        counts = ingest(Settings.resolve(home), [str(paths_root)], workers=workers)
        dt = time.perf_counter() - t
        assert counts.ingested == counts.found, counts
        return dt
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    root = Path(tempfile.mkdtemp(prefix="iw-bench-logs-"))
    try:
        paths = build_corpus(root, n)
        import darshan  # noqa: F401  (import cost out of both timings)

        baseline(paths[:20])  # warm the page cache for both
        b = baseline(paths)
        o1 = ours(root, 1)
        o2 = ours(root, 2)
        print(f"logs: {n} ({sum(p.stat().st_size for p in paths) / 2**20:.1f} MiB), cpus: {os.cpu_count()}, "
              f"load: {os.getloadavg()[0]:.1f}")
        print(f"PyDarshan read_all (baseline): {b:.2f} s = {n / b:.0f} logs/s")
        print(f"ioweather ingest --workers 1:  {o1:.2f} s = {n / o1:.0f} logs/s, ratio to baseline {b / o1:.2f}")
        print(f"ioweather ingest --workers 2:  {o2:.2f} s = {n / o2:.0f} logs/s, ratio to baseline {b / o2:.2f}, "
              f"speedup over 1 worker {o1 / o2:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
