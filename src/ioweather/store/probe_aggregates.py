"""Aggregates of probe samples computed inside the database (for `/metrics`).

Counting a month of 1 Hz samples into histogram buckets in the database moves
a few dozen numbers to Python instead of 15 M rows. Every query has run_id and
op fixed by equality and start_ns as a range, so it is a range scan of the
samples' primary key (run_id, op, start_ns) on SQLite, PostgreSQL and MariaDB.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sqlalchemy as sa

from ioweather.store.db import Store
from ioweather.store.probe import COMPONENT, OPS, probe_archive, probe_runs, probe_samples


def run_ids(store: Store, target: str) -> list[int]:
    store.require(COMPONENT)
    q = sa.select(probe_runs.c.id).where(probe_runs.c.target == target)
    with store.connect() as conn:
        return [r[0] for r in conn.execute(q.order_by(probe_runs.c.id))]


def sample_range(store: Store, target: str) -> tuple[int, int] | None:
    """(first, last) start time (ns) of the target's samples, or None. Two index lookups per (run, op)."""
    s = probe_samples.c
    lo = hi = None
    with store.connect() as conn:
        for rid in run_ids(store, target):
            for op in OPS:
                # Two queries: SQLite answers a lone min() or max() from the index, not both at once.
                where = (s.run_id == rid, s.op == op)
                a = conn.execute(sa.select(sa.func.min(s.start_ns)).where(*where)).scalar()
                b = conn.execute(sa.select(sa.func.max(s.start_ns)).where(*where)).scalar()
                if a is not None:
                    lo = int(a) if lo is None else min(lo, int(a))
                    hi = int(b) if hi is None else max(hi, int(b))
        # Completed days may have moved to Parquet (store/probe_archive.py): their manifest knows the span.
        ids = run_ids(store, target)
        if ids:
            a = probe_archive.c
            first, last = conn.execute(sa.select(sa.func.min(a.first_ns), sa.func.max(a.last_ns))
                                       .where(a.run_id.in_(ids))).one()
            if first is not None:
                lo = int(first) if lo is None else min(lo, int(first))
                hi = int(last) if hi is None else max(hi, int(last))
    return None if lo is None else (lo, hi)


def last_sample_ns(store: Store, target: str) -> int | None:
    """Start time (ns) of the target's newest sample, or None (one index lookup per run and op)."""
    s = probe_samples.c
    best = None
    with store.connect() as conn:
        for rid in run_ids(store, target):
            for op in OPS:
                v = conn.execute(sa.select(sa.func.max(s.start_ns)).where(s.run_id == rid, s.op == op)).scalar()
                if v is not None and (best is None or v > best):
                    best = int(v)
    return best


def bucket_counts(store: Store, target: str, edges_ns: Sequence[int], since_by_run: dict[int, int],
                  until_ns: int, since_ns: int | None = None) -> tuple[dict[str, dict], list[int]]:
    """Per op, over samples with since <= start_ns < until: histogram of successful durations and failure counts.

    `since_by_run` gives each run's lower bound; a run not in it (new since the last call)
    is counted from `since_ns` (None: from its first sample). Returns ({op: {"le": int64 counts per bucket (duration
    <= edge, not cumulative; one extra bucket for > last edge), "sum_ns", "count", "errors",
    "timeouts"}}, the run ids counted); ops without samples are absent.
    """
    s = probe_samples.c
    d = s.duration_ns
    bucket = sa.case(*[(d <= int(e), i) for i, e in enumerate(edges_ns)], else_=len(edges_ns)).label("b")
    ids = run_ids(store, target)
    out: dict[str, dict] = {}
    with store.connect() as conn:
        for rid in ids:
            for op in OPS:
                where = [s.run_id == rid, s.op == op, s.start_ns < until_ns]
                lo = since_by_run.get(rid, since_ns)
                if lo is not None:
                    where.append(s.start_ns >= lo)
                q = (sa.select(s.status, bucket, sa.func.count(), sa.func.sum(d))
                     .where(*where).group_by(s.status, bucket))
                for status, b, n, total in conn.execute(q):
                    row = out.setdefault(op, {"le": np.zeros(len(edges_ns) + 1, np.int64), "sum_ns": 0, "count": 0,
                                              "errors": 0, "timeouts": 0})
                    if status == "ok":
                        row["le"][int(b)] += int(n)
                        row["count"] += int(n)
                        row["sum_ns"] += int(total or 0)
                    elif status == "timeout":
                        row["timeouts"] += int(n)
                    else:
                        row["errors"] += int(n)
    return out, ids
