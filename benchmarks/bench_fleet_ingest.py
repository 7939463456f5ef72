"""Fleet ingest (issue 40 item 1): `ioweather jobs ingest` + `jobs summary` against PyDarshan's
`python -m darshan job_stats` on the same distinct logs, whole processes, in one run; then the re-ingest
of the unchanged directory, and of a directory of duplicates.

    python benchmarks/bench_fleet_ingest.py [--logs 1000] [--workers N] [--runs 3] [--before-src DIR] [--fifo]
                                            [--fifo-all]

The logs: every distinct public log (tests/darshan_support.all_real_logs), cycled, each copy made unique
by trailing bytes (bench_darshan_ingest.build_corpus). job_stats reads them with its ProcessPoolExecutor's
default worker count (os.cpu_count()); ioweather gets the same `--workers` unless told. Each round runs,
alternating: job_stats; ingest into an empty home, then `jobs summary` (ours = the two together); the
same ingest again (nothing changed: the re-ingest); with --before-src, the same two with that src/ tree
(another checkout's, for a before/after in the same run). Then a directory of `--logs` files holding 84
distinct logs and duplicates of them (the issue's 916 of 84): its first ingest and its re-ingest. Wall,
CPU (user + system, children included) and peak RSS from /usr/bin/time; medians over --runs rounds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_darshan_ingest import build_corpus  # noqa: E402


#: `--fifo-all`: every command under SCHED_FIFO: on 2 cores shared with other engineers' work, the wall time of a
#: quiet machine (a process that waits for a core is not slower, it is elsewhere's load; issue 40 item 1 is wall)
FIFO_ALL: list[str] = []


def timed(argv: list[str], env: dict, scratch: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS MiB) of one command, as /usr/bin/time reports them (workers included)."""
    report = scratch / "time.txt"
    p = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%e %U %S %M", *FIFO_ALL, *argv],
                       stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=env)
    if p.returncode:
        raise SystemExit(f"{' '.join(argv[:4])} failed ({p.returncode}): {p.stderr.decode()[-800:]}")
    wall, user, system, kib = report.read_text().split()[-4:]
    return float(wall), float(user) + float(system), int(kib) // 1024


def env_for(src: Path, home: Path) -> dict:
    return {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "IOWEATHER_HOME": str(home), "HOME": str(home)}


#: `--fifo`: the re-ingest run again under SCHED_FIFO (a core of its own, as the jobstats benchmark measures its
#: wall time): on 2 cores shared by eight engineers a 0.4 s CPU re-ingest otherwise waits 3-9 s for a core
FIFO: list[str] = []


def ours(src: Path, logs: Path, workers: int, scratch: Path) -> dict:
    """Ingest into an empty home + summary, then the re-ingest of the unchanged directory."""
    home = scratch / "home"
    shutil.rmtree(home, ignore_errors=True)
    env = env_for(src, home)
    py = sys.executable
    ing = timed([py, "-m", "ioweather", "jobs", "ingest", str(logs), "--workers", str(workers)], env, scratch)
    summ = timed([py, "-m", "ioweather", "jobs", "summary", "--json"], env, scratch)
    again = timed([py, "-m", "ioweather", "jobs", "ingest", str(logs), "--workers", str(workers)], env, scratch)
    again_fifo = timed([*FIFO, py, "-m", "ioweather", "jobs", "ingest", str(logs), "--workers", str(workers)], env,
                       scratch) if FIFO else again
    shutil.rmtree(home, ignore_errors=True)
    return {"ingest": ing, "summary": summ, "both": (ing[0] + summ[0], ing[1] + summ[1], max(ing[2], summ[2])),
            "again": again, "again_fifo": again_fifo}


def job_stats(logs: Path, scratch: Path) -> tuple[float, float, int]:
    manifest = scratch / "manifest.txt"
    manifest.write_text("".join(f"{p}\n" for p in sorted(logs.glob("*.darshan"))))
    return timed([sys.executable, "-m", "darshan", "job_stats", "--log_paths_file", str(manifest)],
                 {"PATH": "/usr/bin:/bin", "HOME": str(scratch)}, scratch)


def med(xs: list[tuple]) -> tuple:
    return tuple(statistics.median(x[i] for x in xs) for i in range(3))


def fmt(t: tuple) -> str:
    return f"{t[0]:.2f} s wall, {t[1]:.2f} s CPU, {t[2]} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                    help="ioweather's --workers (default: job_stats' own, os.cpu_count())")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before-src", type=Path, help="a src/ tree to run too (e.g. /work/main/src)")
    ap.add_argument("--fifo", action="store_true", help="also time each re-ingest under `chrt -f 10` (needs root)")
    ap.add_argument("--fifo-all", action="store_true",
                    help="time every command under `chrt -f 10` (needs root): a quiet machine's wall times")
    a = ap.parse_args()
    if a.fifo:
        FIFO[:] = ["chrt", "-f", "10"]
    if a.fifo_all:
        FIFO_ALL[:] = ["chrt", "-f", "10"]
    trees = {"this tree": ROOT / "src"}
    if a.before_src:
        trees["before"] = a.before_src.resolve()
    with tempfile.TemporaryDirectory(prefix="iw-fleet-") as d:
        scratch = Path(d)
        logs = scratch / "logs"
        logs.mkdir()
        paths = build_corpus(logs, a.logs)
        dups = scratch / "dups"
        dups.mkdir()
        distinct = build_corpus(scratch / "dups", 84)
        for i in range(84, a.logs):
            shutil.copy(distinct[i % 84], dups / f"dup-{i:05d}.darshan")
        print(f"logs: {a.logs} distinct ({sum(p.stat().st_size for p in paths) / 2**20:.1f} MiB); a directory of "
              f"{a.logs} holding 84 distinct logs and {a.logs - 84} duplicates; cpus {os.cpu_count()}, "
              f"job_stats workers {os.cpu_count()}, ioweather --workers {a.workers}; load {os.getloadavg()[0]:.1f}")
        for p in paths:  # the page cache warm for everyone
            p.read_bytes()
        res: dict[str, list] = {"job_stats": []}
        for r in range(a.runs):
            res["job_stats"].append(job_stats(logs, scratch))
            for name, src in trees.items():
                res.setdefault(name, []).append(ours(src, logs, a.workers, scratch))
            print(f"round {r + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
        js = med(res["job_stats"])
        print(f"python -m darshan job_stats: {fmt(js)} = {a.logs / js[0]:.0f} logs/s")
        for name in trees:
            o = {k: med([x[k] for x in res[name]]) for k in ("ingest", "summary", "both", "again", "again_fifo")}
            print(f"{name}: jobs ingest {fmt(o['ingest'])}; jobs summary {fmt(o['summary'])}; together "
                  f"{o['both'][0]:.2f} s wall = {a.logs / o['both'][0]:.0f} logs/s, {o['both'][1]:.2f} s CPU")
            print(f"  ratio job_stats / ours: wall {js[0] / o['both'][0]:.2f}x, CPU {js[1] / o['both'][1]:.2f}x, "
                  f"memory {js[2] / o['both'][2]:.2f}x less")
            print(f"  re-ingest of the unchanged {a.logs} files: {fmt(o['again'])}"
                  + (f"; under SCHED_FIFO {fmt(o['again_fifo'])}" if FIFO else ""))
            dup = [ours(trees[name], dups, a.workers, scratch) for _ in range(a.runs)]
            first, again = med([x["ingest"] for x in dup]), med([x["again"] for x in dup])
            print(f"  {a.logs} files of 84 distinct logs: first ingest {fmt(first)}; re-ingest {fmt(again)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
