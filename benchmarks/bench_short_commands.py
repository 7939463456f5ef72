"""Short commands start light (issue 40 item 2): whole-process time of `job LOG`, `why JOB` and
`slowdown --check`, against a bare `python -c "import numpy, pandas, darshan"` in the same run.

Each command runs as a real process, the variants alternating, N times; printed are the median wall
time and the median CPU time (user + system of the child: on a loaded machine the wall time measures
the queue, the CPU time the work). `--before SRC` adds the same commands run from another tree's src/
(e.g. `git archive REV src | tar -x -C /tmp/before`), alternating with this one.

    python benchmarks/bench_short_commands.py [--runs 5] [--why-home H --why-job J] [--why-light-home H] [--store-home H30]
                                              [--before-why-home H]
                                              [--before /tmp/before/src] [--only why]

--only why: the bare `python -c "import numpy, pandas"`, the libraries `why` cannot answer without on a store
with telemetry (WHY_LIBRARIES: pandas through services.answers.events' imports — SQLAlchemy too before branch
whysql, whose `why` reads an SQLite store through sqlite3 —, DuckDB for the telemetry reads, PyDarshan's cffi
backend for the log), and `why JOB` (text and --json) alone (issue 40's
`why` < 1 s). Each command's medians are also printed as a ratio of the first (bare-import) row's, which
ran in the same rounds: on this shared machine the ratio holds when the absolute times do not.

--why-light-home: a store that ingested the job's log and holds no telemetry for its file system (tests/test_why.py's
`ingested` fixture: the why0 home beside the storm one); `why JOB` there needs no numpy, pandas or DuckDB since branch
whyfast (wave 4, issue 40), so its rows show the command's own floor (text and --json).

--why-home: the store tests/test_why.py builds (the storm store); --before-why-home: the one the before tree
built, when the trees' store schemas differ (the darshan v4 of branch why40: the older tree refuses a newer store,
so each tree reads the store its own code built); --store-home: a 30-day probe store as
benchmarks/bench_store.py builds it (`--dir D` -> D/home-30d). Commands whose home is not given are skipped.

--main-thread (with --only why): also `why JOB --json` run through click in a fresh interpreter that prints
its main thread's CPU time (`time.thread_time()`) at the end, alternating the trees: the answer's own thread,
without the CPU of numpy's OpenBLAS threads and DuckDB's pool, whose spinning on a loaded machine makes the
process's CPU time (and its wall time) vary by a tenth of a second from round to round.

--chrt PRIO: every process run under `chrt -f PRIO` (SCHED_FIFO: needs root), so that on a shared, loaded
machine the wall time is the process's own and not the run queue's; a bare `python -c "import numpy"` row
is added as the floor any numpy-using command pays. (`slowdown --check` on a 30-day store alone:
benchmarks/bench_check.py, run under `chrt -f PRIO` itself.) `why` writes its weather rows on the first call of a
store: run it once on the store before measuring (the rounds then measure the steady answer).
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
LOG = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "darshan" / "imbalanced-io.darshan"
#: What `why JOB` imports that its own code does not choose: the events' module and its store reads
#: (numpy, pandas, pyarrow; SQLAlchemy before branch whysql), DuckDB, PyDarshan's backend (its C declarations
#: parsed at import).
WHY_LIBRARIES = "import ioweather.services.answers.events, duckdb, darshan.backend.cffi_backend"


def run(cmd: list[str], src: Path, prefix: list[str] = ()) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [*prefix, *cmd]
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--log", type=Path, default=LOG)
    ap.add_argument("--why-home", type=Path)
    ap.add_argument("--why-job", default="1452113755")
    ap.add_argument("--before-why-home", type=Path,
                    help="the before tree's storm store, when the trees' store schemas differ (each reads its own)")
    ap.add_argument("--why-light-home", type=Path, help="a store with the job's facts and no telemetry for it")
    ap.add_argument("--store-home", type=Path)
    ap.add_argument("--before", type=Path, help="another tree's src/ to alternate with")
    ap.add_argument("--only", choices=["why"], help="only the bare imports and `why JOB` (needs --why-home)")
    ap.add_argument("--main-thread", action="store_true", help="also the main thread's CPU time of `why JOB --json`")
    ap.add_argument("--chrt", type=int, metavar="PRIO", help="run every process under `chrt -f PRIO` (root)")
    args = ap.parse_args()
    print("load average:", " ".join(open("/proc/loadavg").read().split()[:3]), "(at the start)", flush=True)
    py, cli = sys.executable, [sys.executable, "-m", "ioweather"]
    prefix = ["chrt", "-f", str(args.chrt)] if args.chrt else []
    empty = tempfile.mkdtemp()
    if args.only == "why":
        cases = [("import numpy, pandas", [py, "-c", "import numpy, pandas"], False),
                 ("why's libraries", [py, "-c", WHY_LIBRARIES], True)]
    else:
        cases = [("import numpy, pandas, darshan", [py, "-c", "import numpy, pandas, darshan"], False),
                 ("job LOG", [*cli, "job", str(args.log)], True),
                 ("slowdown --check, empty home", [*cli, "--home", empty, "slowdown", "--check"], True)]
    if args.chrt:
        cases.insert(1, ("import numpy", [py, "-c", "import numpy"], False))
    if args.store_home and not args.only:
        cases.append(("slowdown --check, 30 days", [*cli, "--home", str(args.store_home), "slowdown", "--check"], True))
    if args.why_home:
        cases.append(("why JOB, storm store", [*cli, "--home", str(args.why_home), "why", args.why_job], True))
        if args.only == "why":
            cases.append(("why JOB --json, storm store",
                          [*cli, "--home", str(args.why_home), "why", args.why_job, "--json"], True))
    if args.why_light_home:
        for name, extra in (("why JOB, no telemetry", []), ("why JOB --json, no telemetry", ["--json"])):
            cases.append((name, [*cli, "--home", str(args.why_light_home), "why", args.why_job, *extra], True))
    trees = [("after", SRC)] + ([("before", args.before)] if args.before else [])
    times: dict[str, list[tuple[float, float]]] = {}
    main_thread: dict[str, list[float]] = {}
    def home_of(tree: str) -> str:
        return str(args.before_why_home if tree == "before" and args.before_why_home else args.why_home)

    def in_process(tree: str) -> str:
        return ("import contextlib, io, time\nfrom ioweather.cli import cli\n"
                "with contextlib.redirect_stdout(io.StringIO()):\n"
                f"    cli.main(['--home', {home_of(tree)!r}, 'why', {args.why_job!r}, '--json'], "
                "prog_name='ioweather', standalone_mode=False)\n"
                "print(time.thread_time())")
    for _ in range(args.runs):
        for name, cmd, both in cases:
            for tree, src in trees if both else trees[:1]:
                cmd_t = [home_of(tree) if args.why_home and c == str(args.why_home) else c for c in cmd]
                times.setdefault(f"{name} [{tree}]" if both and args.before else name, []).append(run(cmd_t, src, prefix))
        if args.main_thread and args.only == "why" and args.why_home:
            for tree, src in trees:
                out = subprocess.run([*prefix, py, "-c", in_process(tree)], env={**os.environ, "PYTHONPATH": str(src)},
                                     capture_output=True, text=True, check=True).stdout
                main_thread.setdefault(tree, []).append(float(out.strip().splitlines()[-1]))
    base = next(iter(times.values()))
    bw, bc = statistics.median(w for w, _ in base), statistics.median(c for _, c in base)
    for label, v in times.items():
        w, c = statistics.median(x for x, _ in v), statistics.median(y for _, y in v)
        print(f"{label:44s} wall median {w:.3f} s (min {min(x for x, _ in v):.3f}); CPU median {c:.3f} s; "
              f"{w / bw:.2f}× / {c / bc:.2f}× the first row")
    for tree, v in main_thread.items():
        print(f"{'why JOB --json, main thread [' + tree + ']':44s} CPU median {statistics.median(v):.3f} s "
              f"(min {min(v):.3f})")
    print("load average:", " ".join(open("/proc/loadavg").read().split()[:3]), "(at the end)",
          f"under chrt -f {args.chrt}" if args.chrt else "")


if __name__ == "__main__":
    main()
