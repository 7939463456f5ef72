"""The reader's per-log CPU against another tree's, in one process (issue 40 item 1): the other tree's
`sources/darshan_log.py` is loaded beside this one, and each log is read with one tree's `read_log` then the
other's, the order flipped every log and round, so the machine's load falls on both alike (on 2 shared cores
whole-process runs moved by ±1 ms a log from one run to the next, more than a reader change).

    PYTHONPATH=src chrt -f 10 python benchmarks/bench_read_ab.py --before-src DIR [--logs DIR] [--rounds 3] [--whole]

`--whole` times the ingest worker's whole per-log work (`_extract_in_pool`: open, hash, read, characterize,
findings, row) with each tree's `read_log`; without it, `read_log` alone as the ingest calls it (no DXT, no
heatmaps). CPU by `time.process_time`, after 100 warm-up logs; prints ms a log per tree and round.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import os
import sys
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before-src", required=True, help="the other tree's src/ directory")
    ap.add_argument("--logs", default="/tmp/fleet-logs", help="a directory of *.darshan (the fleet benchmark's)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--whole", action="store_true", help="the worker's whole per-log work, not the read alone")
    args = ap.parse_args()

    import ioweather.services.jobs.ingest as ing
    import ioweather.sources.darshan_log as new

    ing._load_reader()
    ing._init_worker(frozenset(), None, ing.Scan.of([args.logs], False))
    ing._keep_freed_memory()
    path = os.path.join(args.before_src, "ioweather", "sources", "darshan_log.py")
    spec = importlib.util.spec_from_file_location("darshan_log_before", path)
    old = importlib.util.module_from_spec(spec)
    sys.modules["darshan_log_before"] = old  # dataclasses look their module up
    spec.loader.exec_module(old)
    readers = {"before": old.read_log, "after": new.read_log}
    paths = sorted(glob.glob(os.path.join(args.logs, "*.darshan")))

    def run(which: str, p: str) -> float:
        t = time.process_time()
        if args.whole:
            new.read_log = readers[which]  # `_extract` imports it from the module at each call
            ing._extract_in_pool(p)
        else:
            try:
                readers[which](p, dxt=False, heatmaps=False)
            except Exception:  # a log that fails, fails in both
                pass
        return time.process_time() - t

    try:
        for p in paths[:100]:
            run("before", p)
            run("after", p)
        for r in range(args.rounds):
            acc = {"before": 0.0, "after": 0.0}
            for i, p in enumerate(paths):
                for which in (("before", "after") if (i + r) % 2 else ("after", "before")):
                    acc[which] += run(which, p)
            a, b = acc["before"] / len(paths) * 1e3, acc["after"] / len(paths) * 1e3
            print(f"round {r}: before {a:.3f} ms/log, after {b:.3f} ms/log, after/before {b / a:.3f}", flush=True)
    finally:
        new.read_log = readers["after"]


if __name__ == "__main__":
    main()
