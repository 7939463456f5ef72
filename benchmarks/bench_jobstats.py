"""`ioweather export --capture FILE --once` of a center's Lustre server: 10,000 job ids in the job_stats of
100 OSTs and an MDT (tests/jobstats_capture.py, the layout of the real job_stats files), after the
whole 100-OST `lctl get_param` capture of bench_lctl_export.py (stats, brw_stats, capacity, locks).

    python benchmarks/bench_jobstats.py [--jobs 10000] [--osts 100] [--scrapes 7] [--runs 5] [--before integ]

Printed: the capture's size; in this process, the scrape (read + parse + families + render) as the
median of --scrapes, wall and CPU time (the machine is shared: CPU time is what the scrape costs, wall
time what it took with the others' load), against two baselines in the same run: the plain way
(the whole text read, every job_stats block parsed by a regular-expression loop into a dict of dicts,
ioweather's /proc reader lustre.parse_job_stats, nothing rendered), and prometheus_client's
generate_latest of the same families (the rendering only); the exported series; then the command
as a process, --runs times: wall, CPU and peak RSS (/usr/bin/time's %e, %U + %S, %M), medians. --before REF runs the command of git revision REF too (its src/
exported to a temporary directory), alternating with this tree's.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_lctl_export import REAL, grown, registry_of  # noqa: E402
from jobstats_capture import capture  # noqa: E402


def _process(src: Path, path: Path, home: str) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS in MiB) of one `export --capture path --once` run on `src`, as
    /usr/bin/time reports them (the child's own ru_maxrss here would count this big process's pages
    it was forked from)."""
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "IOWEATHER_HOME": home}
    report = Path(home) / "time.txt"
    p = subprocess.run(["/usr/bin/time", "-o", str(report), "-f", "%e %U %S %M", sys.executable, "-m", "ioweather",
                        "export", "--capture", str(path), "--once"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=env)
    if p.returncode:
        raise SystemExit(f"export failed ({p.returncode}): {p.stderr.decode()[-500:]}")
    wall, user, system, kib = report.read_text().split()[-4:]
    return float(wall), float(user) + float(system), int(kib) // 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--osts", type=int, default=100)
    ap.add_argument("--seed", type=int, default=40)
    ap.add_argument("--scrapes", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--before", metavar="REF", help="also run the command of this git revision")
    a = ap.parse_args()
    if not REAL.is_file():
        print(f"needs {REAL}", file=sys.stderr)
        return 2
    from prometheus_client import generate_latest

    from ioweather.services.telemetry.exporter_lctl import capture_families, read_capture
    from ioweather.sources.telemetry.lustre import parse_job_stats
    from ioweather.views.exposition import render

    print(f"load average at the start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "center.txt"
        server = grown(REAL.read_text(), a.osts)
        jobs = capture(a.jobs, a.osts, seed=a.seed)
        path.write_text(server + jobs)
        del server
        records = jobs.count("- job_id:")
        print(f"capture: {path.stat().st_size / 1e6:.1f} MB, {(jobs.count(chr(10)))} job_stats lines, "
              f"{a.jobs} job ids in {records} job records on {a.osts} OSTs and an MDT")
        del jobs

        walls, cpus, out = [], [], b""
        for _ in range(a.scrapes):
            t0, c0 = time.perf_counter(), time.process_time()
            out = render(capture_families(read_capture(str(path))[0]))
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        series = sum(1 for line in out.decode().splitlines() if line and not line.startswith("#"))
        job_series = sum(1 for line in out.decode().splitlines() if line.startswith("lustre_job_"))
        print(f"exposition: {series} series ({job_series} of jobs: the top 50 and one _other per target and "
              f"operation), {len(out) / 1e6:.2f} MB")
        med_w, med_c = statistics.median(walls), statistics.median(cpus)
        print(f"scrape (read + parse + render), in process: median {med_w:.3f} s wall, {med_c:.3f} s CPU "
              f"over {a.scrapes} (CPU min {min(cpus):.3f}, max {max(cpus):.3f})")

        base = []
        block = re.compile(r"(?m)^(?:obdfilter|mdt)\.[^.\n]+\.job_stats=\n")
        for _ in range(a.scrapes):
            c0 = time.process_time()
            text = path.read_text()
            cuts = [m.end() for m in block.finditer(text)] + [len(text)]
            parsed = [parse_job_stats(text[x:y]) for x, y in zip(cuts, cuts[1:])]
            base.append(time.process_time() - c0)
            del text, parsed
        print(f"baseline, the whole text read + a regex loop into dicts of dicts (lustre.parse_job_stats), "
              f"nothing rendered: median {statistics.median(base):.3f} s CPU ({statistics.median(base) / med_c:.2f}x "
              f"this scrape's CPU)")

        fams = capture_families(read_capture(str(path))[0])

        reg = registry_of(fams)
        ours, theirs = [], []
        for _ in range(a.scrapes):
            c0 = time.process_time()
            render(fams)
            c1 = time.process_time()
            generate_latest(reg)
            ours.append(c1 - c0)
            theirs.append(time.process_time() - c1)
        print(f"rendering the same families: views.exposition {statistics.median(ours) * 1e3:.1f} ms CPU, "
              f"prometheus_client generate_latest {statistics.median(theirs) * 1e3:.1f} ms "
              f"({statistics.median(theirs) / max(statistics.median(ours), 1e-9):.2f}x)")
        del fams, reg

        trees = {"this tree": ROOT / "src"}
        if a.before:
            old = Path(d) / "before"
            old.mkdir()
            subprocess.run(f"git -C {ROOT} archive {a.before} src | tar -x -C {old}", shell=True, check=True)
            trees[a.before] = old / "src"
        got: dict[str, list] = {name: [] for name in trees}
        for _ in range(a.runs):
            for name, src in trees.items():
                got[name].append(_process(src, path, d))
        for name, runs in got.items():
            w, c, m = (statistics.median(x) for x in zip(*runs))
            print(f"the command as a process ({name}): median {w:.2f} s wall, {c:.2f} s CPU, {m:.0f} MiB peak RSS "
                  f"over {a.runs} (RSS max {max(r[2] for r in runs)} MiB)")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
          f"this process's peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
