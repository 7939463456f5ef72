"""Probe runs and raw samples (METHODS.md section 1).

Samples are stored raw, one row per timed operation, clustered by
(run_id, op, start_ns) so that reading one op of one target over a time window
is a range scan. Target and host live on the run, not on every sample.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import sqlalchemy as sa

from ioweather import __version__
from ioweather.errors import StoreError, UserError
from ioweather.store.db import Store
from ioweather.store.probe_archive import read_archived
from ioweather.store.probe_pieces import invalidate
from ioweather.store.probe_tables import (COMPONENT, OPS, STATUSES, probe_archive, probe_pieces,  # noqa: F401 (re-exported)
                                          probe_retired, probe_runs, probe_samples)


@dataclass
class RunInfo:
    target: str
    directory: str
    interval_s: float
    block_bytes: int
    file_bytes: int
    pool_files: int
    small_bytes: int
    direct: bool
    fsync: bool
    seed: int
    timeout_s: float
    file_exceeds_memory: bool
    host: str = ""
    pid: int = 0
    version: str = ""
    fs: str | None = None


#: The longest target label every database holds (PostgreSQL refuses more, SQLite would store it).
MAX_TARGET_CHARS = 255


def check_target(target: str) -> str:
    """`target` if every store can hold it as a label; a one-line UserError otherwise."""
    if not target or not target.strip():
        raise UserError("the probe target label is empty")
    if len(target) > MAX_TARGET_CHARS:
        raise UserError(f"the probe target label is {len(target)} characters long; at most {MAX_TARGET_CHARS}")
    return target


def start_run(store: Store, info: RunInfo) -> int:
    """Record a new run and return its id."""
    check_target(info.target)
    store.require(COMPONENT)
    values = asdict(info)
    values.update(host=info.host or socket.gethostname(), pid=info.pid or os.getpid(),
                  version=info.version or __version__, started_ns=time.time_ns())
    with store.begin() as conn:
        return conn.execute(probe_runs.insert().values(**values)).inserted_primary_key[0]


SAMPLE_COLUMNS = ("run_id", "op", "start_ns", "duration_ns", "bytes", "status", "errno")


def insert_samples(store: Store, rows: Sequence[tuple]) -> None:
    """Insert samples given as tuples in SAMPLE_COLUMNS order, in one transaction.

    Goes straight to the driver's executemany: building a dict per row through
    SQLAlchemy costs more than the insert itself at a day of 1 Hz samples.
    """
    if not rows:
        return
    store.require(COMPONENT)
    run_ids = {r[0] for r in rows}
    with store.begin() as conn:
        # The run must still exist (a `probe retire --purge` may have deleted it while the probe ran):
        # read under a share lock, so a purge waits for this transaction or this one sees its delete
        # (store/probe.py purge deletes the run first). Samples of a purged run are not stored.
        q = sa.select(probe_runs.c.id).where(probe_runs.c.id.in_(run_ids))
        alive = {r[0] for r in conn.execute(q if store.is_sqlite else q.with_for_update(read=True))}
        if alive != run_ids:
            rows = [r for r in rows if r[0] in alive]
            if not rows:
                raise RunGone(sorted(run_ids - alive))
        starts = [r[2] for r in rows]
        # Summaries of the spans these samples fall in are no longer exact (issue 21; usually none: live
        # samples fall in the current hour, which is never summarized).
        invalidate(conn, store, {r[0] for r in rows}, min(starts), max(starts))
        if store.is_sqlite or store.url.startswith("mysql"):
            ph = ", ".join(["?" if store.is_sqlite else "%s"] * len(SAMPLE_COLUMNS))
            conn.exec_driver_sql(f"INSERT INTO probe_samples ({', '.join(SAMPLE_COLUMNS)}) VALUES ({ph})", list(rows))
        else:
            # A session holding a lock on the table (LOCK TABLE, VACUUM FULL, a migration) would make COPY
            # wait forever; wait as long as SQLite's busy timeout instead, then fail and let the caller retry.
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(store.busy_timeout_s * 1000)}")
            # psycopg 3: COPY is the fast path for bulk rows.
            raw = conn.connection.driver_connection
            try:
                with raw.cursor() as cur, cur.copy(f"COPY probe_samples ({', '.join(SAMPLE_COLUMNS)}) FROM STDIN") as cp:
                    for r in rows:
                        cp.write_row(r)
            except raw.Error as e:  # the driver's own error: SQLAlchemy does not see the raw cursor
                raise store._error("write to", e) from None


class RunGone(StoreError):
    """The probe run these samples belong to was deleted (its target purged) while the probe ran."""

    def __init__(self, run_ids: list[int]):
        self.run_ids = run_ids
        super().__init__(f"probe run {', '.join(map(str, run_ids))} was deleted (its target purged): "
                         "its samples are not stored")


def delete_orphan_samples(store: Store, run_id: int) -> int:
    """Delete the samples of `run_id` if that run no longer exists (store check --repair); how many."""
    with store.begin() as conn:
        if conn.execute(sa.select(probe_runs.c.id).where(probe_runs.c.id == run_id)).first() is not None:
            return 0
        return conn.execute(probe_samples.delete().where(probe_samples.c.run_id == run_id)).rowcount or 0


def runs(store: Store, target: str | None = None) -> list[dict]:
    store.require(COMPONENT)
    q = sa.select(probe_runs).order_by(probe_runs.c.id)
    if target is not None:
        q = q.where(probe_runs.c.target == target)
    with store.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(q)]


def latest_runs(store: Store) -> dict[str, dict]:
    """Each target's latest run (`runs(store, target)[-1]` of every target, in one query)."""
    return {r["target"]: r for r in runs(store)}


def targets(store: Store) -> list[str]:
    if store.read_only and not store.has(COMPONENT):
        return []
    store.require(COMPONENT)
    with store.connect() as conn:
        return [r[0] for r in conn.execute(sa.select(probe_runs.c.target).distinct().order_by(probe_runs.c.target))]


def retired_targets(store: Store) -> list[str]:
    """Targets retired since their last run started."""
    if store.read_only and not store.has(COMPONENT):
        return []
    store.require(COMPONENT)
    last = (sa.select(probe_runs.c.target, sa.func.max(probe_runs.c.started_ns).label("started"))
            .group_by(probe_runs.c.target).subquery())
    q = (sa.select(probe_retired.c.target).join(last, last.c.target == probe_retired.c.target)
         .where(probe_retired.c.retired_ns >= last.c.started).order_by(probe_retired.c.target))
    with store.connect() as conn:
        return [r[0] for r in conn.execute(q)]


def active_targets(store: Store) -> list[str]:
    """Targets that Status, /metrics and `slowdown --check` judge: every one but the retired."""
    retired = set(retired_targets(store))
    return [t for t in targets(store) if t not in retired]


def retire(store: Store, target: str, now_ns: int | None = None) -> None:
    """Mark `target` retired now (its data stays)."""
    store.require(COMPONENT)
    with store.begin() as conn:
        conn.execute(probe_retired.delete().where(probe_retired.c.target == target))
        conn.execute(probe_retired.insert().values(target=target, retired_ns=now_ns or time.time_ns()))


def purge(store: Store, target: str) -> dict:
    """Delete every row of `target` (runs, samples, archive manifest, pieces, retirement) in one transaction;
    returns the counts and the archived Parquet files (relative to the archive directory) for the caller
    to remove once committed (a reader's snapshot may still list them until then)."""
    store.require(COMPONENT)
    with store.begin() as conn:
        ids = [r[0] for r in conn.execute(sa.select(probe_runs.c.id).where(probe_runs.c.target == target))]
        files = [r[0] for r in conn.execute(sa.select(probe_archive.c.path).where(probe_archive.c.run_id.in_(ids)))]
        archived = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(probe_archive.c.rows), 0))
                                .where(probe_archive.c.run_id.in_(ids))).scalar()
        # The runs first: a probe still writing checks its run under a share lock in the same transaction
        # as its samples (insert_samples), so it either commits before this delete (and its rows are
        # deleted below) or finds its run gone and stores nothing: no sample outlives its run.
        conn.execute(probe_runs.delete().where(probe_runs.c.id.in_(ids)))
        samples = conn.execute(probe_samples.delete().where(probe_samples.c.run_id.in_(ids))).rowcount or 0
        conn.execute(probe_archive.delete().where(probe_archive.c.run_id.in_(ids)))
        pieces = conn.execute(probe_pieces.delete().where(probe_pieces.c.target == target)).rowcount or 0
        conn.execute(probe_retired.delete().where(probe_retired.c.target == target))
    return {"runs": len(ids), "samples": int(samples) + int(archived), "pieces": int(pieces), "files": files}


def old_samples(store: Store, cutoff_ns: int) -> dict:
    """What `prune_samples(cutoff_ns)` would remove: {"rows": database rows + rows of archived days that end by
    the cutoff, "files": those days' Parquet files}. Each count is a range of the primary key."""
    if store.read_only and not store.has(COMPONENT):
        return {"rows": 0, "files": 0}
    store.require(COMPONENT)
    s, a = probe_samples.c, probe_archive.c
    with store.connect() as conn:
        ids = [r[0] for r in conn.execute(sa.select(probe_runs.c.id))]
        rows = sum(conn.execute(sa.select(sa.func.count()).where(s.run_id == rid, s.op == op, s.start_ns < cutoff_ns)
                                ).scalar() for rid in ids for op in OPS)
        files, archived = conn.execute(sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(a.rows), 0))
                                       .where(a.day_ns + _DAY_NS <= cutoff_ns)).one()
    return {"rows": int(rows) + int(archived), "files": int(files)}


def prune_samples(store: Store, cutoff_ns: int, *, chunk_ns: int = 3_600 * 10**9) -> dict:
    """Delete the samples that started before `cutoff_ns`: database rows exactly, archived days once all of the day
    is older (a day's file goes whole). {"rows", "files", "paths"}: the archive files (relative to the archive
    directory) for the caller to unlink once committed.

    One transaction per run, op and hour of rows (about 3,600 rows at 1 Hz): the probe's writer never waits for
    more than one such delete, so `watch` keeps its grid while a year is pruned."""
    store.require(COMPONENT)
    s, a = probe_samples.c, probe_archive.c
    removed = 0
    with store.connect() as conn:
        firsts = _firsts(conn)
    for (rid, op), lo in firsts.items():
        while lo is not None and lo < cutoff_ns:
            hi = min(cutoff_ns, lo + chunk_ns)
            with store.begin() as conn:
                removed += conn.execute(probe_samples.delete().where(
                    s.run_id == rid, s.op == op, s.start_ns >= lo, s.start_ns < hi)).rowcount or 0
                # The next sample, not the next hour: an imported year-old run leaves long gaps.
                lo = conn.execute(sa.select(sa.func.min(s.start_ns)).where(
                    s.run_id == rid, s.op == op, s.start_ns >= hi, s.start_ns < cutoff_ns)).scalar()
    with store.begin() as conn:
        old = a.day_ns + _DAY_NS <= cutoff_ns
        paths = [r[0] for r in conn.execute(sa.select(a.path).where(old))]
        archived = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(a.rows), 0)).where(old)).scalar()
        conn.execute(probe_archive.delete().where(old))
    return {"rows": removed + int(archived), "files": len(paths), "paths": paths}


def rows_begin(store: Store, lo: int, hi: int) -> int:
    """Where each run's and op's database rows begin, each clipped to [lo, hi], summed. Deleting rows only moves
    a first row later: `prune_samples` removing any row in [lo, hi) raises it, where no piece or archive count
    moves (an insert there deletes the span's pieces instead)."""
    store.require(COMPONENT)
    with store.connect() as conn:
        firsts = _firsts(conn)
    return sum(hi if f is None else min(max(f, lo), hi) for f in firsts.values())


def _firsts(conn: sa.Connection) -> dict[tuple[int, str], int | None]:
    """{(run id, op): the start of its first database row, None without one}: one index seek each, one statement."""
    s = probe_samples.c
    ops = sa.union_all(*(sa.select(sa.literal(op).label("op")) for op in OPS)).subquery()
    first = sa.select(sa.func.min(s.start_ns)).where(s.run_id == probe_runs.c.id, s.op == ops.c.op).scalar_subquery()
    q = sa.select(probe_runs.c.id, ops.c.op, first).select_from(probe_runs.join(ops, sa.true()))
    return {(int(rid), op): None if f is None else int(f) for rid, op, f in conn.execute(q)}


def old_pieces(store: Store, cutoff_ns: int, *, delete: bool = False) -> int:
    """Probe pieces (summaries of a target's hour or day, one row per op) that ended by `cutoff_ns`: how many,
    and with `delete` removed (in one transaction: a few hundred rows a year per target)."""
    if store.read_only and not store.has(COMPONENT):
        return 0
    store.require(COMPONENT)
    p = probe_pieces.c
    old = p.start_ns + p.span_ns <= cutoff_ns
    if not delete:
        with store.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(probe_pieces).where(old)).scalar())
    with store.begin() as conn:
        return int(conn.execute(probe_pieces.delete().where(old)).rowcount or 0)


_STATUS_CODE = "CASE status WHEN 'ok' THEN 0 WHEN 'error' THEN 1 ELSE 2 END"
_DAY_NS = 86_400 * 10**9


def read_samples(store: Store, target: str, *, since_ns: int | None = None, until_ns: int | None = None,
                 ops: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Columns `op` (index into OPS, int8), `start_ns`, `duration_ns`, `status` (index into STATUSES)
    of `target`'s samples in [since, until), as numpy arrays sorted by op then time.

    A month of 1 Hz samples is 15.6 M rows. Fetching them as Python tuples costs
    ~0.8 us a row; instead the database concatenates each column per op and day
    (group_concat / string_agg, in C) and numpy parses the text (in C): 3-4x faster,
    and the rows stay plain rows for anyone querying the store with SQL.
    """
    store.require(COMPONENT)
    wanted = set(ops) if ops is not None else set(OPS)
    parts: list[tuple[np.ndarray, ...]] = []
    # One read transaction for the manifest and the rows: archiving moves a day from rows to a
    # file in one transaction, so this snapshot sees every sample exactly once.
    with store.connect() as conn:
        run_ids = [r[0] for r in conn.execute(sa.select(probe_runs.c.id).where(probe_runs.c.target == target))]
        if run_ids:
            parts.extend(read_archived(store, conn, run_ids, wanted, since_ns, until_ns))
            raw = conn.connection.driver_connection
            for code, op in enumerate(OPS):
                if op in wanted:
                    parts.extend(_read_op(store, raw, run_ids, op, code, since_ns, until_ns))
    return _columns(parts)


def read_windows(store: Store, target: str, ranges: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    """`read_samples`' columns of `target`'s samples in any of `ranges` (sorted, disjoint [lo, hi)): the
    archived days they touch, each file read once, and the database's rows of each range by its key. The
    Report's events cover a fraction of their week: reading the whole week of every target was most of its
    first answer (issue 40)."""
    store.require(COMPONENT)
    if not ranges:
        return _columns([])
    edges = np.array([x for r in ranges for x in r], np.int64)
    days = sorted({d for lo, hi in ranges for d in range(lo // _DAY_NS, (hi - 1) // _DAY_NS + 1)})
    spans: list[list[int]] = []  # consecutive days, one archive read each
    for d in days:
        if spans and spans[-1][1] == d:
            spans[-1][1] = d + 1
        else:
            spans.append([d, d + 1])
    parts: list[tuple[np.ndarray, ...]] = []
    with store.connect() as conn:  # one snapshot, as read_samples
        run_ids = [r[0] for r in conn.execute(sa.select(probe_runs.c.id).where(probe_runs.c.target == target))]
        if run_ids:
            for a, b in spans:
                for p in read_archived(store, conn, run_ids, set(OPS), max(a * _DAY_NS, ranges[0][0]),
                                       min(b * _DAY_NS, ranges[-1][1])):
                    inside = np.searchsorted(edges, p[1], side="right") % 2 == 1
                    parts.append(tuple(c[inside] for c in p))
            raw = conn.connection.driver_connection
            for code, op in enumerate(OPS):
                for lo, hi in ranges:
                    parts.extend(_read_op(store, raw, run_ids, op, code, lo, hi))
    return _columns(parts)


def read_recent_many(store: Store, runs: dict[str, tuple[int, ...]], since_ns: int) -> dict[str, dict[str, np.ndarray]] | None:
    """`read_samples(store, target, since_ns=since_ns)` of several targets (`runs`: each one's run ids) in one
    statement per op instead of ~8 a target (the dashboard's Status answer asks every target for what arrived
    since its previous answer: 800 statements for 100 targets, issue 40). None where it does not apply: a store
    other than SQLite, or an archived day in the range (then each target is read by `read_samples`)."""
    if not store.is_sqlite or not runs:
        return None
    store.require(COMPONENT)
    owner = {r: t for t, ids in runs.items() for r in ids}
    if not owner:
        return None
    parts: dict[str, list[tuple]] = {t: [] for t in runs}
    marks = ", ".join("?" * len(owner))
    with store.connect() as conn:
        if getattr(store, "parquet_dir", None) is not None and conn.exec_driver_sql(
                f"SELECT count(*) FROM probe_archive WHERE run_id IN ({marks}) AND day_ns + {_DAY_NS} > ?",
                (*owner, since_ns)).scalar():
            return None
        cur = conn.connection.driver_connection.cursor()
        try:
            for code, op in enumerate(OPS):
                cur.execute(f"SELECT run_id, group_concat(start_ns), group_concat(duration_ns), group_concat({_STATUS_CODE}) "
                            f"FROM probe_samples WHERE run_id IN ({marks}) AND op = ? AND start_ns >= ? GROUP BY run_id",
                            (*owner, op, since_ns))
                for run_id, starts, durs, statuses in cur.fetchall():
                    st, du = (np.fromstring(x, dtype=np.int64, sep=",") for x in (starts, durs))
                    parts[owner[run_id]].append((np.full(len(st), code, np.int8), st, du,
                                                 np.fromstring(statuses, dtype=np.int8, sep=",")))
        finally:
            cur.close()
    return {t: _columns(p) for t, p in parts.items()}


def _columns(parts: list[tuple]) -> dict[str, np.ndarray]:
    """Column tuples (op code, start, duration, status code) as `read_samples`' columns, by op then time."""
    names = ("op", "start_ns", "duration_ns", "status")
    dtypes = (np.int8, np.int64, np.int64, np.int8)
    cols = {n: (np.concatenate([p[i] for p in parts]).astype(dt, copy=False) if parts else np.zeros(0, dt))
            for i, (n, dt) in enumerate(zip(names, dtypes))}
    if len(cols["op"]) > 1:
        # op in the top bits, time since the first sample below: one int64 sort instead of a
        # two-key lexsort. Parts arrive as sorted runs, which the stable (merging) sort exploits;
        # one part needs the check too: an archived day's file is by op name, not code.
        start = cols["start_ns"]
        rel = start - start.min()
        key = (cols["op"].astype(np.int64) << 56) | rel if int(rel.max()) < 1 << 56 else None
        if key is None or not np.all(key[1:] >= key[:-1]):
            order = np.argsort(key, kind="stable") if key is not None else np.lexsort((start, cols["op"]))
            cols = {n: c[order] for n, c in cols.items()}
    return cols


def _read_op(store: Store, raw, run_ids: list[int], op: str, code: int, since_ns, until_ns) -> list[tuple]:
    """Column tuples (op code, start_ns, duration_ns, status code)."""
    ph = "?" if store.is_sqlite else "%s"
    where = [f"run_id IN ({', '.join([ph] * len(run_ids))})", f"op = {ph}"]
    params: list = [*run_ids, op]
    if since_ns is not None:
        where.append(f"start_ns >= {ph}")
        params.append(since_ns)
    if until_ns is not None:
        where.append(f"start_ns < {ph}")
        params.append(until_ns)
    cond = " AND ".join(where)
    out = []
    cur = raw.cursor()
    try:
        if store.is_sqlite or store.url.startswith("postgresql"):
            if store.is_sqlite:
                cols = f"group_concat(start_ns), group_concat(duration_ns), group_concat({_STATUS_CODE})"
            else:  # the same ORDER BY in every aggregate keeps the three lists aligned
                cols = ", ".join(f"string_agg(({c})::text, ',' ORDER BY start_ns)"
                                 for c in ("start_ns", "duration_ns", _STATUS_CODE))
            cur.execute(f"SELECT {cols} FROM probe_samples WHERE {cond} GROUP BY start_ns / {_DAY_NS}", params)
            for starts, durs, statuses in cur.fetchall():
                st, du = (np.fromstring(x, dtype=np.int64, sep=",") for x in (starts, durs))
                status = np.fromstring(statuses, dtype=np.int8, sep=",")
                out.append((np.full(len(st), code, np.int8), st, du, status))
        else:
            cur.execute(f"SELECT start_ns, duration_ns, {_STATUS_CODE} FROM probe_samples WHERE {cond}", params)
            while got := cur.fetchmany(1 << 20):
                a = np.array(got, dtype=np.int64).reshape(-1, 3).T
                out.append((np.full(a.shape[1], code, np.int8), a[0], a[1], a[2].astype(np.int8)))
    finally:
        cur.close()
    return out
