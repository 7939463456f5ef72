"""Completed days of probe samples, moved from the database to Parquet.

Why: a month of 1 Hz samples is 15.6 M rows; SQLite scans ~1.5 M rows/s, so
`slowdown` over 30 days spent ~10 s just reading. Parquet (zstd) reads the same
in a fraction of a second and takes ~5x less disk. Recent samples stay in the
database, where daemons write and anyone can query them with SQL.

Layout: <home>/parquet/probe/run=<id>/<YYYY-MM-DD>-<part>.parquet, immutable once
written, listed in the `probe_archive` table. A day is archived by writing its
file (temporary name, then rename) and, in one transaction, adding the manifest
row and deleting the day's rows: a reader's snapshot sees each sample once. A
crash in between leaves an unlisted file that the next run overwrites.

Only the embedded SQLite store is archived: with a server database (PostgreSQL)
the database is the shared place of record and the Parquet directory is local.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np
import sqlalchemy as sa

from ioweather.errors import StoreError, from_os_error
from ioweather.store.db import Store
from ioweather.store.probe_tables import COMPONENT, OPS, probe_archive, probe_samples, STATUSES

if TYPE_CHECKING:
    import pyarrow as pa

DAY_NS = 86_400 * 10**9


def enabled(store: Store) -> bool:
    return store.is_sqlite and getattr(store, "parquet_dir", None) is not None


def read_archived(store: Store, conn: sa.Connection, run_ids: list[int], ops: set[str],
                  since_ns: int | None, until_ns: int | None) -> list[np.ndarray]:
    """Archived samples of `run_ids` overlapping [since, until) as column tuples (op code, start, duration, status)."""
    if getattr(store, "parquet_dir", None) is None:
        return []
    q = sa.select(probe_archive.c.path).where(probe_archive.c.run_id.in_(run_ids))
    if since_ns is not None:
        q = q.where(probe_archive.c.day_ns + DAY_NS > since_ns)
    if until_ns is not None:
        q = q.where(probe_archive.c.day_ns < until_ns)
    paths = [store.parquet_dir / r[0] for r in conn.execute(q)]
    if not paths:
        return []
    # Imported here: every read of samples comes through this module, and most find no archived day in
    # their range (a dashboard's first Status answer paid 30 ms for pyarrow's import).
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa
    # lazy: pyarrow, loaded only when this runs
    import pyarrow.parquet as pq

    # Whole files (a day each), filtered here: `read_table(filters=...)` goes through pyarrow.dataset,
    # whose import (with pandas) costs 0.8 s, more than `slowdown --check` spends on its answer (issue 21).
    table = pa.concat_tables([pq.ParquetFile(str(p)).read(columns=["op", "start_ns", "duration_ns", "status"])
                              for p in paths])
    op_codes = {name: i for i, name in enumerate(OPS)}
    st_codes = {name: i for i, name in enumerate(STATUSES)}
    op = _codes(table.column("op"), op_codes)
    start = _numpy(table.column("start_ns"))
    keep = np.isin(op, [op_codes[o] for o in ops])
    if since_ns is not None:
        keep &= start >= since_ns
    if until_ns is not None:
        keep &= start < until_ns
    status = _codes(table.column("status"), st_codes)
    return [(op[keep].astype(np.int8), start[keep], _numpy(table.column("duration_ns"))[keep],
             status[keep].astype(np.int8))]


def _numpy(col) -> np.ndarray:
    """A null-free fixed-width Arrow column as numpy, from its data buffer: Arrow's own to_numpy()
    imports pandas (0.7 s), which a one-shot `slowdown --check` does not otherwise need."""
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa

    a = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if a.null_count:
        return a.to_numpy(zero_copy_only=False)
    dtype = np.dtype(f"<i{a.type.bit_width // 8}")
    return np.frombuffer(a.buffers()[1], dtype, count=len(a), offset=a.offset * dtype.itemsize)


def _codes(col: pa.ChunkedArray, mapping: dict[str, int]) -> np.ndarray:
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa

    col = col.combine_chunks()
    if pa.types.is_dictionary(col.type):
        lut = np.array([mapping[v] for v in col.dictionary.to_pylist()], np.int64)
        return lut[_numpy(col.indices)] if len(lut) else np.zeros(len(col), np.int64)
    return np.array([mapping[v] for v in col.to_pylist()], np.int64)


def archive_completed_days(store: Store, *, keep_days: int = 1, now_ns: int | None = None) -> int:
    """Move every day that ended more than `keep_days` ago to Parquet. Returns rows moved."""
    if not enabled(store):
        return 0
    store.require(COMPONENT)
    now_ns = now_ns or time.time_ns()
    cutoff = (now_ns // DAY_NS - keep_days) * DAY_NS
    with store.connect() as conn:
        days = conn.execute(sa.text(
            f"SELECT run_id, start_ns / {DAY_NS} FROM probe_samples WHERE start_ns < :c GROUP BY 1, 2 ORDER BY 1, 2"),
            {"c": cutoff}).all()
    moved = 0
    for run_id, day in days:
        lo, hi = day * DAY_NS, (day + 1) * DAY_NS
        sel = (probe_samples.c.run_id == run_id) & (probe_samples.c.start_ns >= lo) & (probe_samples.c.start_ns < hi)
        # Read, write the file and delete under one write lock: no sample can slip in between.
        # A writer (the probe) waits about a second meanwhile; it keeps its samples buffered.
        with store.begin() as conn:
            columns = _day_columns(conn, run_id, lo, hi)
            if columns is None:
                continue
            part = conn.execute(sa.select(sa.func.count()).select_from(probe_archive).where(
                (probe_archive.c.run_id == run_id) & (probe_archive.c.day_ns == lo))).scalar()
            date = time.strftime("%Y-%m-%d", time.gmtime(lo / 1e9))
            rel = Path("probe") / f"run={run_id}" / f"{date}-{part}.parquet"
            n = _write(store.parquet_dir / rel, columns)
            conn.execute(probe_archive.insert().values(
                run_id=run_id, day_ns=lo, part=part, path=str(rel), rows=n,
                first_ns=int(columns["start_ns"].min()), last_ns=int(columns["start_ns"].max())))
            conn.execute(probe_samples.delete().where(sel))
        moved += n
    return moved


def _day_columns(conn: sa.Connection, run_id: int, lo: int, hi: int) -> dict[str, list] | None:
    """One day of one run as columns, concatenated by SQLite per op (see read_samples for why)."""
    cur = conn.connection.driver_connection.cursor()
    try:
        cur.execute("SELECT op, group_concat(start_ns), group_concat(duration_ns), group_concat(bytes), "
                    "group_concat(status), group_concat(errno) FROM "
                    "(SELECT * FROM probe_samples WHERE run_id = ? AND start_ns >= ? AND start_ns < ? "
                    " ORDER BY op, start_ns) GROUP BY op ORDER BY op", (run_id, lo, hi))
        got = cur.fetchall()
    finally:
        cur.close()
    if not got:
        return None
    cols: dict[str, list] = {k: [] for k in ("op", "start_ns", "duration_ns", "bytes", "status", "errno")}
    for op, starts, durs, nbytes, statuses, errnos in got:
        start = np.fromstring(starts, dtype=np.int64, sep=",")
        cols["op"].append(np.full(len(start), op, dtype=object))
        cols["start_ns"].append(start)
        cols["duration_ns"].append(np.fromstring(durs, dtype=np.int64, sep=","))
        cols["bytes"].append(np.fromstring(nbytes, dtype=np.int64, sep=","))
        cols["status"].append(np.array(statuses.split(","), dtype=object))
        cols["errno"].append(np.fromstring(errnos, dtype=np.int32, sep=","))
    return {k: np.concatenate(v) for k, v in cols.items()}


def _write(path: Path, columns: dict) -> int:
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa
    # lazy: pyarrow, loaded only when this runs
    import pyarrow.parquet as pq

    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise from_os_error(path.parent, e, "create probe archive directory", cls=StoreError) from None
    table = pa.table({
        "op": pa.array(columns["op"], pa.string()).dictionary_encode(),
        "start_ns": pa.array(columns["start_ns"], pa.int64()),
        "duration_ns": pa.array(columns["duration_ns"], pa.int64()),
        "bytes": pa.array(columns["bytes"], pa.int64()),
        "status": pa.array(columns["status"], pa.string()).dictionary_encode(),
        "errno": pa.array(columns["errno"], pa.int32()),
    })
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except (OSError, pa.ArrowException) as e:
        # The day's rows stay in the database (the caller's transaction rolls back): nothing is lost.
        tmp.unlink(missing_ok=True)
        raise from_os_error(path, e, "write probe archive", cls=StoreError) from None
    return table.num_rows
