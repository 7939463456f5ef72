"""Where one `jobs ingest` spends its wall time (issue 40 item 1): the phases of the parent, marked as they
start and end, and the CPU of the parent and of its pool workers.

    PYTHONPATH=src chrt -f 10 python benchmarks/ingest_phases.py [--logs DIR] [--workers 2]

Runs the real command (`ioweather jobs ingest DIR --workers N`) in this process with a fresh temporary home,
the service's own functions wrapped to print seconds since the start: what the store has seen
(`_light_seen`), the reader's imports before the fork (`_load_reader`), the pool (`run_pool`), the store's
opening beside the workers (`_open`), the first result, each batch written (`flush`) and the new jobs'
weather (`after_import`). `--logs`: a directory of *.darshan; without it, 1,000 distinct public logs are made
as `bench_fleet_ingest.py` makes them. Everything before the pool forks runs while one of two cores idles.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

T0 = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]


def mark(what: str) -> None:
    print(f"{time.perf_counter() - T0:7.3f} s  {what}", file=sys.stderr, flush=True)


def wrap(owner, name: str) -> None:
    f = getattr(owner, name)

    def marked(*a, **k):
        mark(f"> {name}")
        try:
            return f(*a, **k)
        finally:
            mark(f"< {name}")

    setattr(owner, name, marked)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logs", type=Path, help="a directory of *.darshan (default: 1,000 distinct public logs)")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="iw-phases-") as d:
        logs = a.logs
        if logs is None:
            from bench_darshan_ingest import build_corpus

            logs = Path(d) / "logs"
            logs.mkdir()
            build_corpus(logs, 1000)
        os.environ["IOWEATHER_HOME"] = os.environ["HOME"] = str(Path(d) / "home")
        global T0
        T0 = time.perf_counter()
        import ioweather.services.jobs.ingest as ing
        import ioweather.services.jobs.weather as weather
        from ioweather.cli import cli

        mark("imported")
        for name in ("_light_seen", "_load_reader", "run_pool", "_open"):
            wrap(ing, name)
        wrap(weather, "after_import")
        wrap(ing.Ingest, "flush")
        add, first = ing.Ingest.add, [True]

        def add_marked(self, result):
            if first[0]:
                first[0] = False
                mark("first result")
            add(self, result)

        ing.Ingest.add = add_marked
        try:
            cli(["jobs", "ingest", str(logs), "--workers", str(a.workers)], prog_name="ioweather",
                standalone_mode=False)
        finally:
            mark("end")
            me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            print(f"parent CPU {me.ru_utime:.2f} s user + {me.ru_stime:.2f} s system; workers "
                  f"{kids.ru_utime:.2f} s + {kids.ru_stime:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
