"""Per-log CPU of the characterization and the findings (issue 40 item 1): `stats.job.characterize` and
`stats.findings.job_findings` on every distinct public log, in one process per tree, the trees alternating.

    python benchmarks/bench_rules_per_log.py [--before-src DIR] [--rounds 3] [--passes 5]

Each pass reads every log again (`read_log`, `drop_impossible`; not timed), so the per-log caches start empty
as in an ingest worker, then times `characterize` and `job_findings` with `time.process_time`. A log's time is
its least over the passes (the machine is shared: the least is the one least disturbed); the answer is the
mean of those over the logs, in ms, per round and tree. The logs: tests/darshan_support.all_real_logs, each
distinct content once (the fleet benchmark's corpus, bench_darshan_ingest.build_corpus, cycles the same).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: run inside the tree under test (its PYTHONPATH): prints "characterize_ms findings_ms logs"
MEASURE = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from darshan_support import all_real_logs
from ioweather.sources.darshan_log import read_log
from ioweather.stats.damage import drop_impossible
from ioweather.stats.findings import job_findings
from ioweather.stats.job import characterize

seen, paths = set(), []
for p in all_real_logs():
    b = p.read_bytes()
    if b in seen:
        continue
    seen.add(b)
    try:
        read_log(str(p), dxt=False, heatmaps=False)
    except Exception:
        continue
    paths.append(str(p))
best_c, best_f = {}, {}
for _ in range(int(sys.argv[2]) + 1):  # the first pass warms the imports and the mount and library memos
    for p in paths:
        clean = drop_impossible(read_log(p, dxt=False, heatmaps=False))[0]
        t0 = time.process_time()
        ch = characterize(clean)
        t1 = time.process_time()
        job_findings(clean, ch)
        t2 = time.process_time()
        best_c[p] = min(best_c.get(p, 1e9), t1 - t0)
        best_f[p] = min(best_f.get(p, 1e9), t2 - t1)
n = len(paths)
print(sum(best_c.values()) / n * 1e3, sum(best_f.values()) / n * 1e3, n)
"""


def measure(src: Path, passes: int) -> tuple[float, float, int]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", MEASURE, str(ROOT / "tests"), str(passes)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before-src", type=Path, help="a src/ tree to measure too, alternating")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=5)
    a = ap.parse_args()
    trees = {"this tree": ROOT / "src"}
    if a.before_src:
        trees["before"] = a.before_src.resolve()
    for r in range(a.rounds):
        for name, src in trees.items():
            c, f, n = measure(src, a.passes)
            print(f"round {r + 1} {name}: {n} logs, characterize {c:.2f} ms + findings {f:.2f} ms = {c + f:.2f} ms "
                  f"a log (load {os.getloadavg()[0]:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
