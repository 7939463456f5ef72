"""CPU a log of the ingest worker's whole work (`_extract_in_pool`: open, hash, read, characterize, findings,
row) in one process, as a pool worker runs it (its memory setting applied), issue 40 item 1.

    PYTHONPATH=TREE/src chrt -f 10 python benchmarks/ingest_worker_cpu.py [--logs DIR]

`--logs`: a directory of *.darshan (default /tmp/fleet-logs: 1,000 distinct public logs, made as
`bench_fleet_ingest.py` makes them when missing). 100 logs warm up, then every log is timed once; prints wall
and CPU (user + system) ms a log. Whole-process runs move by about ±1 ms a log from one run to the next on 2
shared cores: alternate two trees several times, or use `bench_read_ab.py --whole` (both in one process).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=Path, default=Path("/tmp/fleet-logs"))
    a = ap.parse_args()
    if not any(a.logs.glob("*.darshan")):
        from bench_darshan_ingest import build_corpus

        a.logs.mkdir(parents=True, exist_ok=True)
        build_corpus(a.logs, 1000)
    import ioweather.services.jobs.ingest as ing

    ing._load_reader()
    ing._init_worker(frozenset(), None, ing.Scan.of([str(a.logs)], False))
    ing._keep_freed_memory()
    paths = sorted(str(p) for p in a.logs.glob("*.darshan"))
    for p in paths[:100]:
        ing._extract_in_pool(p)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for p in paths:
        ing._extract_in_pool(p)
    r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    print(f"{len(paths)} logs: {wall / len(paths) * 1e3:.2f} ms wall, {cpu / len(paths) * 1e3:.2f} ms CPU a log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
