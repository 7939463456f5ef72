"""`ioweather job LOG --html` against PyDarshan's `python -m darshan summary LOG`: wall time, CPU time and
peak memory, side by side, each in a fresh process as a user runs it, plus where our time goes.

Target (issues 16 and 40): at least 5x faster and 2x less memory than PyDarshan's summary, on
imbalanced-io (496 ranks) and e3sm. The variants alternate within each round (this machine is shared:
a ratio holds within one run when the absolute times do not); printed are medians of the rounds.
CPU is user + system of the child and its children (`job` forks its reader), peak memory the
largest ru_maxrss among them (RUSAGE_CHILDREN after one child). `--before SRC` adds `job --html`
run from another tree's src/ (e.g. `git archive REV src | tar -x -C /tmp/before`, the _native .so
copied in), alternating with this one, and checks that both trees write the same page byte for byte.
`--fifo`: run each child under `chrt -f 10` (a core of its own, for the wall time on a loaded machine).
Both trees are byte-compiled first (`compileall`, as `pip install` does; PyDarshan's site-packages have
theirs): with PYTHONDONTWRITEBYTECODE=1, as on the developers' machines, a checkout's src/ is compiled
from source at every start (~0.1 s of CPU for `job --html`). `--no-compile` leaves it so.
The breakdown runs the same steps in one process with timestamps: imports, reading the log,
characterization + findings, plots (hand-made SVG, views/svg_charts.py), writing.
(pandas is imported by PyDarshan itself: `import darshan` loads it.)

    .venv/bin/python benchmarks/bench_darshan_report.py [LOG ...] [--runs N] [--before SRC] [--fifo] [--no-compile]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from darshan_support import TESTDATA_LOGS  # noqa: E402

SRC = Path(__file__).resolve().parents[1] / "src"

MEASURE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=sys.argv[1])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"s": time.perf_counter() - t, "cpu": r.ru_utime + r.ru_stime, "rss_mib": r.ru_maxrss / 1024}))
"""

BREAKDOWN = r"""
import json, sys, time
marks = [("start", time.perf_counter())]
from ioweather.services.jobs.report import job_answer, job_html
marks.append(("import (numpy, pandas, PyDarshan, ...)", time.perf_counter()))
rep, log = job_answer(sys.argv[1], dxt=True)
marks.append(("read + characterize + findings", time.perf_counter()))
page = job_html(rep, log, source=sys.argv[1])
marks.append(("plots (hand-made SVG) + HTML", time.perf_counter()))
assert "matplotlib" not in sys.modules, "job --html must not import matplotlib"
print(json.dumps([(name, b - a) for (name, b), (_, a) in zip(marks[1:], marks[:-1])]))
"""


def measure(args: list[str], cwd: str, src: Path, fifo: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    pre = ["chrt", "-f", "10"] if fifo else []
    out = subprocess.run([*pre, sys.executable, "-c", MEASURE, cwd, *args], check=True, capture_output=True,
                         text=True, env=env)
    return json.loads(out.stdout)


def compare(log: str, runs: int, before: Path | None, fifo: bool) -> None:
    py = sys.executable
    trees = [("job --html", SRC)] + ([("job --html [before]", before)] if before else [])
    got: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        pages = {}
        for _ in range(runs):
            for name, src in trees:
                page = os.path.join(tmp, f"r{len(pages)}.html")
                pages.setdefault(name, page)
                got.setdefault(name, []).append(measure(
                    [py, "-m", "ioweather", "--home", tmp, "job", log, "--html", pages[name]], tmp, src, fifo))
            got.setdefault("darshan summary", []).append(measure(
                [py, "-m", "darshan", "summary", log, "--output", os.path.join(tmp, "pd.html")], tmp, SRC, fifo))
        same = before is None or filecmp.cmp(*pages.values(), shallow=False)
        split = json.loads(subprocess.run([py, "-c", BREAKDOWN, log], check=True, capture_output=True, text=True,
                                          env={**os.environ, "PYTHONPATH": str(SRC)}).stdout)
    med = {k: {m: statistics.median(g[m] for g in v) for m in ("s", "cpu", "rss_mib")} for k, v in got.items()}
    theirs = med["darshan summary"]
    print(f"log: {log} ({os.path.getsize(log):,} bytes); load average {os.getloadavg()[0]:.1f}; "
          f"median of {runs}, alternating{'; chrt -f 10' if fifo else ''}")
    for name, m in med.items():
        ratio = "" if name == "darshan summary" else (
            f"  -> {theirs['s'] / m['s']:.2f}x wall, {theirs['cpu'] / m['cpu']:.2f}x CPU, "
            f"{theirs['rss_mib'] / m['rss_mib']:.2f}x less memory")
        print(f"  {name:22s} wall {m['s']:6.2f} s  CPU {m['cpu']:6.2f} s  {m['rss_mib']:7.1f} MiB peak{ratio}")
    if before:
        print(f"  pages of the two trees byte for byte the same: {same}")
    print("  where ioweather's time goes (one process, in order):")
    for name, s in split:
        print(f"    {name:38s} {s:6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", type=Path, help="another tree's src/ whose `job --html` alternates with this one")
    ap.add_argument("--fifo", action="store_true", help="each child under `chrt -f 10`")
    ap.add_argument("--no-compile", action="store_true", help="do not byte-compile the trees first")
    args = ap.parse_args()
    if not args.no_compile:
        for src in [SRC] + ([args.before] if args.before else []):
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)
    logs = args.logs or [str(TESTDATA_LOGS / n) for n in ("imbalanced-io.darshan", "e3sm_io_heatmap_only.darshan")]
    if args.fifo and not shutil.which("chrt"):
        sys.exit("--fifo needs chrt")
    for log in logs:
        compare(log, args.runs, args.before, args.fifo)


if __name__ == "__main__":
    main()
