"""`ioweather job LOG --html` against PyDarshan's `python -m darshan summary LOG`: wall time and peak memory,
side by side, each in a fresh process as a user runs it, plus where our time goes.

Target (issue 16): at least 5x faster and 2x less memory than PyDarshan's summary on the
496-rank log. Peak memory is the child's ru_maxrss (RUSAGE_CHILDREN after one child).
The breakdown runs the same steps in one process with timestamps: imports, reading the log,
characterization + findings, plots (hand-made SVG, views/svg_charts.py), writing.
(pandas is imported by PyDarshan itself: `import darshan` loads it.)

    .venv/bin/python benchmarks/bench_darshan_report.py [LOG] [--runs N]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from darshan_support import TESTDATA_LOGS  # noqa: E402

MEASURE = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=sys.argv[1])
print(json.dumps({"s": time.perf_counter() - t,
                  "rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""

BREAKDOWN = r"""
import json, sys, time
marks = [("start", time.perf_counter())]
import numpy, pandas
marks.append(("import numpy+pandas", time.perf_counter()))
import darshan
from ioweather.services.jobs.darshan import job_answer  # noqa: F401 (timed: the module `job` imports)
marks.append(("import darshan+ioweather", time.perf_counter()))
from ioweather.sources.darshan_log import read_log
log = read_log(sys.argv[1], heatmaps=False)
marks.append(("read log (+DXT)", time.perf_counter()))
from ioweather.stats.job import characterize, per_rank_with_shared
from ioweather.stats.findings import job_findings, job_verdict
rep = characterize(log)
rep["findings"] = job_findings(log, rep)
rep["verdict"] = job_verdict(rep["findings"], rep)["text"]
pr, how = per_rank_with_shared(log)
marks.append(("characterize + findings + per rank", time.perf_counter()))
from ioweather.views.job_report import render_job_html
page = render_job_html(rep, pr, log.dxt, per_rank_how=how)
marks.append(("plots (hand-made SVG) + HTML", time.perf_counter()))
assert "matplotlib" not in sys.modules, "job --html must not import matplotlib"
print(json.dumps([(name, b - a) for (name, b), (_, a) in zip(marks[1:], marks[:-1])]))
"""


def measure(args: list[str], cwd: str) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, cwd, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def best(args: list[str], cwd: str, runs: int) -> dict:
    got = [measure(args, cwd) for _ in range(runs)]
    return {"s": min(g["s"] for g in got), "rss_mib": min(g["rss_mib"] for g in got)}


def main() -> None:
    argv = [a for a in sys.argv[1:] if not a.startswith("--runs")]
    runs = int(next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--runs=")), 3))
    log = argv[0] if argv else str(TESTDATA_LOGS / "imbalanced-io.darshan")
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        ours = best([py, "-m", "ioweather", "--home", tmp, "job", log, "--html", os.path.join(tmp, "r.html")], tmp, runs)
        theirs = best([py, "-m", "darshan", "summary", log, "--output", os.path.join(tmp, "pd.html")], tmp, runs)
        split = json.loads(subprocess.run([py, "-c", BREAKDOWN, log], check=True, capture_output=True,
                                          text=True).stdout)
    print(f"log: {log} ({os.path.getsize(log):,} bytes); load average {os.getloadavg()[0]:.1f}; best of {runs}")
    print(f"PyDarshan summary:    {theirs['s']:6.2f} s  {theirs['rss_mib']:7.1f} MiB peak")
    print(f"ioweather job --html: {ours['s']:6.2f} s  {ours['rss_mib']:7.1f} MiB peak")
    print(f"ratio: {theirs['s'] / ours['s']:.1f}x faster (target >= 5x), "
          f"{theirs['rss_mib'] / ours['rss_mib']:.1f}x less memory (target >= 2x)")
    print("where ioweather's time goes (one process, in order):")
    for name, s in split:
        print(f"  {name:36s} {s:6.2f} s")


if __name__ == "__main__":
    main()
