"""The re-ingest of an unchanged directory of logs (issue 40: < 1 s for 1,000), whole processes, this tree against
another src/ tree on the same store, alternating, in the same minutes.

    python benchmarks/bench_reingest.py [--logs 1000] [--runs 7] [--before-src DIR]

One first ingest (this tree) fills an empty home; then `jobs ingest DIR` runs --runs times per tree, the trees
alternating, each answering "N already ingested" without opening a log. Wall, CPU (user + system) and peak
RSS from /usr/bin/time (bench_fleet_ingest.timed); medians and ranges. bench_fleet_ingest.py measures the same
re-ingest inside its much longer fleet run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_darshan_ingest import build_corpus  # noqa: E402
from bench_fleet_ingest import env_for, timed  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before-src", type=Path, help="a src/ tree to run too (e.g. the previous commit's)")
    a = ap.parse_args()
    trees = {"this tree": ROOT / "src"}
    if a.before_src:
        trees["before"] = a.before_src.resolve()
    with tempfile.TemporaryDirectory(prefix="iw-reingest-") as d:
        scratch = Path(d)
        logs, home = scratch / "logs", scratch / "home"
        logs.mkdir()
        build_corpus(logs, a.logs)
        argv = [sys.executable, "-m", "ioweather", "jobs", "ingest", str(logs), "--json"]
        timed(argv, env_for(ROOT / "src", home), scratch)
        print(f"{a.logs} logs ingested; load {os.getloadavg()[0]:.1f}", flush=True)
        res: dict[str, list] = {name: [] for name in trees}
        for _ in range(a.runs):
            for name, src in trees.items():
                res[name].append(timed(argv, env_for(src, home), scratch))
        print(f"re-ingest of the unchanged {a.logs} files, {a.runs} runs each, load {os.getloadavg()[0]:.1f}:")
        for name, xs in res.items():
            wall, cpu, mib = (sorted(x[i] for x in xs) for i in range(3))
            print(f"  {name}: wall median {statistics.median(wall):.2f} s ({wall[0]:.2f}-{wall[-1]:.2f}), "
                  f"CPU median {statistics.median(cpu):.2f} s ({cpu[0]:.2f}-{cpu[-1]:.2f}), "
                  f"{int(statistics.median(mib))} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
