"""How many 1 Hz probes one PostgreSQL holds on this machine, and what one stored sample costs.

For each N: N real `ioweather probe run` processes (distinct --target labels) for DURATION seconds
into one fresh PostgreSQL database, the dashboard read every second meanwhile (tests/many_probes.py).
Reported: samples stored vs taken (lost), periods missed, the largest start-to-start gap of a
probe's periods, dashboard reads, PostgreSQL's CPU per stored sample; then `insert_samples` of one
probe flush (30 rows, one COPY) timed alone.

    .venv/bin/python benchmarks/bench_many_probes.py [DURATION_S] [N ...]     # default 60 s, N = 4 16 32
    .venv/bin/python benchmarks/bench_many_probes.py --one-process 30 8        # N targets in one process

--one-process (issue 17 item 6) runs one `probe run` with N directories, each its own target, instead of
N processes; "probe CPU" is the probe processes' user + system time (one Python interpreter instead of N).
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import psycopg  # noqa: E402

from many_probes import OPS, run, write_cost  # noqa: E402

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"


def fresh_db() -> str:
    name = f"ioweather_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_db(name: str) -> None:
    with psycopg.connect(ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    argv = sys.argv[1:]
    one = "--one-process" in argv
    argv = [a for a in argv if a != "--one-process"]
    duration = int(argv[0]) if argv else 60
    counts = [int(a) for a in argv[1:]] or [4, 16, 32]
    print(f"({'one process, N targets' if one else 'N processes'})")
    print("| probes | s | periods taken | samples stored | lost | missed | max gap s | page reads ok "
          "| page p50 s | PG CPU per sample ms | PG CPU % of a core | probe CPU % of a core |")
    for n in counts:
        name = fresh_db()
        try:
            with tempfile.TemporaryDirectory(prefix="iw-bench-probes-") as tmp:
                out = run(f"postgresql://postgres@127.0.0.1:5432/{name}", n, duration, Path(tmp), one_process=one)
        finally:
            drop_db(name)
        taken = sum(r["periods"] for r in out.runs.values())
        stored = sum(sum(ops.values()) for ops in out.stored.values())
        pages = sorted(s for code, s in out.pages if code == 200)
        p50 = pages[len(pages) // 2] if pages else float("nan")
        print(f"| {n} | {duration} | {taken} | {stored} | {OPS * taken - stored} | {out.missed} "
              f"| {max(out.max_gap_s.values()):.2f} | {len(pages)}/{len(out.pages)} | {p50:.2f} "
              f"| {out.pg_cpu_s / max(1, stored) * 1e3:.3f} | {out.pg_cpu_s / duration * 100:.1f} "
              f"| {out.probe_cpu_s / duration * 100:.1f} |"
              + (f" problems: {out.problems[:3]}" if out.problems else ""))
    name = fresh_db()
    try:
        with tempfile.TemporaryDirectory(prefix="iw-bench-cost-") as tmp:
            cost = write_cost(f"postgresql://postgres@127.0.0.1:5432/{name}", Path(tmp))
    finally:
        drop_db(name)
    print(f"insert_samples, one probe flush (30 rows, COPY): {cost['batch_s'] * 1e3:.2f} ms per flush, "
          f"{cost['sample_s'] * 1e6:.0f} us per sample (client wall time)")


if __name__ == "__main__":
    main()
