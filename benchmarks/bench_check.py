"""`slowdown --check` as cron runs it (issue 40: < 0.25 s whole process on a 30-day store), against a bare
`python -c "import sqlite3"` in the same run.

Each variant runs as a real process, alternating, N times; printed are the median wall and CPU time (user +
system of the child: on a loaded machine the wall time measures the run queue, the CPU time the work) and
their ratio to the bare interpreter's. `--before SRC` alternates the same command run from another tree's
src/ (`git archive REV src | tar -x -C /tmp/before`, the built _native/*.so copied in).

    python benchmarks/bench_check.py --store-home H30 [--runs 9] [--before /tmp/before/src]

H30: a 30-day probe store as benchmarks/bench_store.py builds it (`--dir D` -> D/home-30d), topped up to now
and its pieces built by a writable computation at now - 1 h and now (`--prepare` does both: what a running
dashboard or probe daemon leaves; the check itself opens the store read-only and writes nothing).
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def run(cmd: list[str], src: Path, home: Path) -> tuple[float, float, str]:
    env = {**os.environ, "PYTHONPATH": str(src), "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, p.stdout.strip()


def prepare(home: Path) -> None:
    """Samples up to now and the pieces a running dashboard keeps (hour pieces with start times, store v6)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_store import top_up
    import json

    from ioweather.config import Settings
    from ioweather.services.probe.cache import ProbeCache
    from ioweather.store import open_store

    store = open_store(Settings.resolve(home))  # upgrades the schema (v6: start times of hour pieces)
    t0 = json.loads(next(home.glob("bench-store-*d.json")).read_text())["t0_ns"]
    top_up(store, home, t0, 30)
    now = time.time_ns()
    for clock in (now - 3600 * 10**9, now):
        t = time.perf_counter()
        ProbeCache(store, baseline_s=30 * 86400, warm_rollups=False, clock=lambda c=clock: c).baseline("bench")
        print(f"pieces for a baseline at now{'' if clock == now else ' - 1 h'}: {time.perf_counter() - t:.1f} s",
              flush=True)
    store.dispose()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--store-home", type=Path, required=True)
    ap.add_argument("--before", type=Path, help="another tree's src/ to alternate with")
    ap.add_argument("--before-home", type=Path, help="the 30-day store for --before (a copy at its schema: a tree "
                    "older than probe v6 refuses a v6 store in one line, which is no measure)")
    ap.add_argument("--prepare", action="store_true", help="top the store up to now and build its pieces first")
    args = ap.parse_args()
    if args.prepare:
        prepare(args.store_home)
    py = sys.executable
    empty = Path(tempfile.mkdtemp())
    check = [py, "-m", "ioweather", "slowdown", "--check"]
    cases = [("python -c 'import sqlite3'", [py, "-c", "import sqlite3"], args.store_home, [("after", SRC)]),
             ("slowdown --check, 30-day store", check, args.store_home, []),
             ("slowdown --check, empty home", check, empty, [])]
    trees = [("after", SRC)] + ([("before", args.before)] if args.before else [])
    homes = {("slowdown --check, 30-day store", "before"): args.before_home or args.store_home}
    times: dict[str, list[tuple[float, float]]] = {}
    said: dict[str, str] = {}
    for _ in range(args.runs):
        for name, cmd, home, only in cases:
            for tree, src in only or trees:
                label = name if only else f"{name} [{tree}]"
                wall, cpu, out = run(cmd, src, homes.get((name, tree), home))
                times.setdefault(label, []).append((wall, cpu))
                said[label] = out
    base_wall = statistics.median(w for w, _ in times[cases[0][0]])
    base_cpu = statistics.median(c for _, c in times[cases[0][0]])
    for label, v in times.items():
        wall, cpu = statistics.median(w for w, _ in v), statistics.median(c for _, c in v)
        print(f"{label:44s} wall {wall:.3f} s ({wall / base_wall:.2f}x), CPU {cpu:.3f} s ({cpu / base_cpu:.2f}x); "
              f"min wall {min(w for w, _ in v):.3f} s")
    for label, out in said.items():
        if out:
            print(f"  {label}: {out[:150]}")
    print("load average:", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
