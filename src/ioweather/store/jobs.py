"""Darshan jobs in the store: one row per ingested log, one per log that could not be read,
and a per-(job, file, module) table in Parquet under `parquet_dir/jobs`.

Idempotence: a log is identified by the SHA-256 of its bytes (`log_hash`, unique).
A path whose (size, mtime) is unchanged since it was ingested or failed is
skipped without being read again. Each batch writes its Parquet part first
(temp name, then rename) and then commits its rows in one transaction that
names the part, so a kill between the two leaves only an unreferenced part,
which readers ignore and the next ingest removes.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from ioweather.errors import UserError
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables

metadata = sa.MetaData()

#: Interfaces whose bytes are kept per job (column prefix in `jobs`).
INTERFACE_COLUMNS = {"POSIX": "posix", "STDIO": "stdio", "MPI-IO": "mpiio", "H5D": "h5d",
                     "PNETCDF_VAR": "pnetcdf", "DFS": "dfs", "DAOS": "daos"}

_interface_cols = []
for _p in INTERFACE_COLUMNS.values():
    _interface_cols += [sa.Column(f"{_p}_bytes_read", sa.BigInteger), sa.Column(f"{_p}_bytes_written", sa.BigInteger)]

jobs = sa.Table(
    "darshan_jobs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("log_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("path_hash", sa.String(64), nullable=False, index=True),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("mtime_ns", sa.BigInteger, nullable=False),
    sa.Column("ingested_ns", sa.BigInteger, nullable=False),
    sa.Column("jobid", sa.BigInteger),
    sa.Column("uid", sa.BigInteger),
    sa.Column("exe", sa.Text),
    sa.Column("nprocs", sa.BigInteger),
    sa.Column("nnodes", sa.Integer),
    sa.Column("start_ns", sa.BigInteger),
    sa.Column("end_ns", sa.BigInteger),
    sa.Column("runtime_s", sa.Float),
    sa.Column("log_version", sa.String(16)),
    sa.Column("partial_modules", sa.String(255)),
    sa.Column("modules", sa.String(255)),
    sa.Column("bytes_read", sa.BigInteger),
    sa.Column("bytes_written", sa.BigInteger),
    sa.Column("files", sa.BigInteger),
    sa.Column("read_time_s", sa.Float),
    sa.Column("write_time_s", sa.Float),
    sa.Column("meta_time_s", sa.Float),
    sa.Column("unique_files", sa.BigInteger),
    sa.Column("shared_files", sa.BigInteger),
    sa.Column("partially_shared_files", sa.BigInteger),
    sa.Column("unique_bytes", sa.BigInteger),
    sa.Column("shared_bytes", sa.BigInteger),
    sa.Column("partially_shared_bytes", sa.BigInteger),
    *_interface_cols,
    sa.Column("agg_perf_by_slowest_mibps", sa.Float),
    sa.Column("mibps", sa.Float),
    sa.Column("io_time_s", sa.Float),
    sa.Column("io_fraction", sa.Float),
    sa.Column("common_access_bytes", sa.BigInteger),
    sa.Column("seq_fraction", sa.Float),
    sa.Column("top_file", sa.Text),
    sa.Column("finding_codes", sa.String(255)),
    sa.Column("files_part", sa.String(64)),
)
sa.Index("darshan_jobs_uid", jobs.c.uid)

failed_logs = sa.Table(
    "darshan_failed_logs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("path_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("log_hash", sa.String(64)),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("mtime_ns", sa.BigInteger, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("failed_ns", sa.BigInteger, nullable=False),
)

COMPONENT = Component("darshan", [create_tables(jobs, failed_logs)])

JOB_COLUMNS = [c.name for c in jobs.columns if c.name != "id"]
#: What the cross-job summary reads (the rest stays in the database).
SUMMARY_COLUMNS = [c for c in JOB_COLUMNS if c not in ("path", "path_hash", "size_bytes", "mtime_ns", "ingested_ns",
                                                       "start_ns", "end_ns", "log_version", "partial_modules",
                                                       "seq_fraction", "finding_codes", "files_part",
                                                       "agg_perf_by_slowest_mibps", "runtime_s", "jobid")]


def path_hash(path: str) -> str:
    return hashlib.sha256(os.fsencode(path)).hexdigest()


def files_dir(parquet_dir: Path) -> Path:
    return Path(parquet_dir) / "jobs"


def seen(store: Store) -> tuple[set[str], dict[str, tuple[int, int]]]:
    """(content hashes already stored, {path_hash: (size, mtime_ns)} of every ingested or failed path)."""
    store.require(COMPONENT)
    hashes: set[str] = set()
    paths: dict[str, tuple[int, int]] = {}
    with store.connect() as conn:
        for h, ph, size, mt in conn.execute(sa.select(jobs.c.log_hash, jobs.c.path_hash, jobs.c.size_bytes, jobs.c.mtime_ns)):
            hashes.add(h)
            paths[ph] = (size, mt)
        for h, ph, size, mt in conn.execute(sa.select(failed_logs.c.log_hash, failed_logs.c.path_hash,
                                                      failed_logs.c.size_bytes, failed_logs.c.mtime_ns)):
            paths[ph] = (size, mt)
    return hashes, paths


def _insert_ignore(store: Store, table: sa.Table, key: str):
    """INSERT ... ON CONFLICT (key) DO NOTHING on SQLite and PostgreSQL (execute it with a list of rows)."""
    if store.is_sqlite:
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert
    return insert(table).on_conflict_do_nothing(index_elements=[key])


def write_batch(store: Store, parquet_dir: Path, job_rows: Sequence[dict], file_tables: Sequence[pa.Table],
                failures: Sequence[dict]) -> None:
    """Store one batch: the per-file Parquet part, then job and failure rows in one transaction."""
    store.require(COMPONENT)
    part = None
    tables = [t for t in file_tables if t is not None and t.num_rows]
    if tables and job_rows:
        d = files_dir(parquet_dir)
        d.mkdir(parents=True, exist_ok=True)
        part = f"files-{uuid.uuid4().hex}.parquet"
        tmp = d / f".{part}.tmp"
        pq.write_table(pa.concat_tables(tables, promote_options="default"), tmp, compression="zstd")
        os.replace(tmp, d / part)
    now = time.time_ns()
    with store.begin() as conn:
        if job_rows:
            rows = [{**{c: r.get(c) for c in JOB_COLUMNS}, "files_part": part, "ingested_ns": now} for r in job_rows]
            conn.execute(_insert_ignore(store, jobs, "log_hash"), rows)
            # a path that now reads fine is no longer a failure
            conn.execute(failed_logs.delete().where(failed_logs.c.path_hash.in_([r["path_hash"] for r in rows])))
        if failures:
            frows = [{**f, "failed_ns": now} for f in failures]
            conn.execute(failed_logs.delete().where(failed_logs.c.path_hash.in_([f["path_hash"] for f in frows])))
            conn.execute(failed_logs.insert(), frows)


def remove_orphan_parts(store: Store, parquet_dir: Path, older_than_s: float = 3600) -> int:
    """Delete Parquet parts no job row names (left by a killed ingest), if older than `older_than_s`."""
    d = files_dir(parquet_dir)
    if not d.is_dir():
        return 0
    store.require(COMPONENT)
    with store.connect() as conn:
        used = {r[0] for r in conn.execute(sa.select(jobs.c.files_part).distinct()) if r[0]}
    removed = 0
    now = time.time()
    for p in d.iterdir():
        if p.name.endswith(".parquet") or p.name.endswith(".tmp"):
            if p.name not in used and now - p.stat().st_mtime > older_than_s:
                p.unlink(missing_ok=True)
                removed += 1
    return removed


def load_jobs(store: Store, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """All job rows as a DataFrame (read through the raw driver cursor: 10^5 rows in well under a second)."""
    store.require(COMPONENT)
    cols = list(columns) if columns else JOB_COLUMNS
    with store.connect() as conn:
        raw = conn.connection.driver_connection
        cur = raw.cursor()
        cur.execute(f"SELECT {', '.join(cols)} FROM darshan_jobs")
        data = cur.fetchall()
        cur.close()
    return pd.DataFrame.from_records(data, columns=cols)


def count_failed(store: Store) -> int:
    store.require(COMPONENT)
    with store.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(failed_logs)).scalar_one())


def failed(store: Store) -> list[dict]:
    store.require(COMPONENT)
    with store.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.select(failed_logs).order_by(failed_logs.c.path))]


def count_jobs(store: Store) -> int:
    store.require(COMPONENT)
    with store.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(jobs)).scalar_one())


class AmbiguousJobId(UserError):
    """An id prefix that matches more than one stored job."""


def job(store: Store, parquet_dir: Path, id_prefix: str) -> tuple[dict, pd.DataFrame | None] | None:
    """The job whose log_hash starts with `id_prefix` and its rows of the per-file table.

    None when no job matches; AmbiguousJobId when several do. The files are None when
    the job's Parquet part is gone (the row outlives a deleted archive directory).
    """
    store.require(COMPONENT)
    with store.connect() as conn:
        rows = conn.execute(sa.select(jobs).where(jobs.c.log_hash.startswith(id_prefix, autoescape=True))
                            .limit(2)).mappings().all()
    if not rows:
        return None
    if len(rows) > 1:
        raise AmbiguousJobId(f"id {id_prefix} matches several jobs; give more of it")
    row = dict(rows[0])
    part = files_dir(parquet_dir) / row["files_part"] if row["files_part"] else None
    if part is None or not part.is_file():
        return row, None
    return row, pq.read_table(part, filters=[("log_hash", "=", row["log_hash"])]).to_pandas()


def change_marker(store: Store) -> tuple:
    """Changes whenever a job or a failed log is stored (rows are only ever added or replaced by newer ones)."""
    store.require(COMPONENT)
    with store.connect() as conn:
        a = conn.execute(sa.select(sa.func.count(), sa.func.max(jobs.c.ingested_ns))).one()
        b = conn.execute(sa.select(sa.func.count(), sa.func.max(failed_logs.c.failed_ns))).one()
    return tuple(a) + tuple(b)


def file_rows(store: Store, parquet_dir: Path) -> pa.Table | None:
    """The per-file table of the jobs in the store (only parts a job row names)."""
    store.require(COMPONENT)
    with store.connect() as conn:
        used = sorted({r[0] for r in conn.execute(sa.select(jobs.c.files_part).distinct()) if r[0]})
    paths = [files_dir(parquet_dir) / u for u in used if (files_dir(parquet_dir) / u).exists()]
    if not paths:
        return None
    return pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")


def job_row_values(row: dict) -> dict:
    """Normalize numpy scalars to Python for the drivers."""
    out = {}
    for k, v in row.items():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not np.isfinite(v):
            v = None
        out[k] = v
    return out
