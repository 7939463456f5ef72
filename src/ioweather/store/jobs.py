"""Darshan jobs in the store: one row per ingested log, one per log that could not be read,
and a per-(job, file, module) table in Parquet under `parquet_dir/jobs`.

Idempotence: a log is identified by the SHA-256 of its bytes (`log_hash`, unique). A row counts as
stored ("seen") only when it was derived under this code's advisor rules (`rules_revision`, version 5) and
has every column added since: else the next ingest reads its log again and refreshes it in place (`_refresh`).
A file whose (device, inode, size, mtime) is unchanged since an ingest read it, stored or found a
duplicate (`seen_files`), is skipped before it is opened or hashed; a path known only from a job row
(stored before version 3) or a failure, by its (size, mtime). Each batch writes its Parquet part first
(temp name, then rename) and then commits its rows in one transaction that
names the part, so a kill between the two leaves only an unreferenced part,
which readers ignore and the next ingest removes.

Concurrency: processes on one host that ingest into one store take turns through
`ingest_lock` (flock on a file of ours in the Parquet directory) around each
batch write, and under it drop the logs another process stored meanwhile; so each
log has one job row and one set of Parquet rows, on SQLite as on PostgreSQL (where
the Parquet parts still live under IOWEATHER_HOME). Holding the lock also means no
part is between its write and its commit, so every unreferenced part is an orphan.

Paths are stored absolute and normalized; the content hash is the identity, so a
log known by hash under another (or a relative, older) path is `relocate`d, not re-read.
"""

from __future__ import annotations

import fcntl
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.files import StoreTree
from ioweather.stats.rules_revision import RULES_REVISION
from ioweather.store.db import Store
from ioweather.store.job_files import files_dir, is_part_name  # noqa: F401 (files_dir re-exported: store/check.py, the ingest)
from ioweather.store.job_rows import INTERFACE_COLUMNS
# re-exported: the ingest and the tests name them here; they live where `jobs ingest`'s light path reads them
from ioweather.store.job_stamps import file_stamp, path_hash  # noqa: F401
from ioweather.store.migrations import Component, create_tables

# pyarrow is imported where used: the dashboard imports this module at start (its memory).
if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

metadata = sa.MetaData()

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
    # version 2: the report's verdict line and its HIGH/WARN findings as JSON, most expensive first
    # ([{code, level, cost_s, cost_share, message, fix}]); NULL in rows ingested before
    sa.Column("verdict", sa.Text),
    sa.Column("findings_json", sa.Text),
    # version 4: what `why` answers with of the log's report (services/jobs/facts.py `LogFacts`, JSON), so that
    # it reads no log an ingest has read; NULL in rows ingested before (`why` reads their logs)
    sa.Column("why_facts", sa.Text),
    # version 5: the advisor's rules' revision the derived columns were made under (stats/rules_revision.py);
    # NULL in rows ingested before. A row of another revision is not "seen": the next ingest reads its log
    # again and refreshes it in place (`_refresh`), so no store keeps the findings of older rules unmarked
    sa.Column("rules_revision", sa.String(32)),
)
sa.Index("darshan_jobs_uid", jobs.c.uid)
#: Columns added after the first version, in the order their migration adds them.
VERDICT_COLUMNS = ("verdict", "findings_json")
FACTS_COLUMNS = ("why_facts",)
RULES_COLUMNS = ("rules_revision",)
#: The columns added since the first version: a row lacking one, or whose rules_revision is not this code's
#: RULES_REVISION, is not "seen" (`_current`); the next ingest reads its log and refreshes it (`_refresh`).
COMPLETED_COLUMNS = (*VERDICT_COLUMNS, *FACTS_COLUMNS, *RULES_COLUMNS)

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


#: version 3: every file an ingest read or found a duplicate in, with its identity and stamp when read, so
#: that the next ingest skips it unchanged before opening or hashing it (a directory of duplicates was
#: hashed again on every run: 4.2 s for 916 of them, issue 40). Device and inode numbers are unsigned
#: 64-bit, stored as the signed BigInteger of the same bits (`job_stamps._signed`).
seen_files = sa.Table(
    "darshan_seen_files", metadata,
    sa.Column("path_hash", sa.String(64), primary_key=True),
    sa.Column("log_hash", sa.String(64), nullable=False),
    sa.Column("st_dev", sa.BigInteger, nullable=False),
    sa.Column("st_ino", sa.BigInteger, nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("mtime_ns", sa.BigInteger, nullable=False),
)


def add_columns(table: sa.Table, names: Sequence[str]):
    """A migration that adds `names` (as `table` defines them now) where the table lacks them.

    The first migration creates the tables as defined now, so a database created by this
    release already has them: adding only what is missing upgrades old and new alike.
    """
    def migrate(conn: sa.Connection) -> None:
        have = {c["name"] for c in sa.inspect(conn).get_columns(table.name)}
        for name in names:
            if name not in have:
                col = table.c[name]
                conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN {name} "
                                     f"{col.type.compile(dialect=conn.dialect)}"))

    return migrate


COMPONENT = Component("darshan", [create_tables(jobs, failed_logs), add_columns(jobs, VERDICT_COLUMNS),
                                  create_tables(seen_files), add_columns(jobs, FACTS_COLUMNS),
                                  add_columns(jobs, RULES_COLUMNS)])

JOB_COLUMNS = [c.name for c in jobs.columns if c.name != "id"]
#: What a refresh keeps of a stored row (`_refresh`): its identity (id, content hash), where it was found and
#: its per-file Parquet part. Every other column is derived from the log's bytes by this code (the
#: characterization, and from it the findings, verdict and `why`'s facts), so all of them are written again:
#: a row then holds what a fresh ingest of its log would, whatever option (--cores-per-node) made it.
KEPT_ON_REFRESH = ("log_hash", "path", "path_hash", "size_bytes", "mtime_ns", "files_part")
REFRESHED_COLUMNS = tuple(c for c in JOB_COLUMNS if c not in (*KEPT_ON_REFRESH, "ingested_ns"))
#: What the cross-job summary reads (the rest stays in the database).
SUMMARY_COLUMNS = [c for c in JOB_COLUMNS if c not in ("path", "path_hash", "size_bytes", "mtime_ns", "ingested_ns",
                                                       "start_ns", "end_ns", "log_version", "partial_modules",
                                                       "seq_fraction", "finding_codes", "files_part",
                                                       "agg_perf_by_slowest_mibps", "runtime_s", "jobid",
                                                       *COMPLETED_COLUMNS)]


def seen(store: Store) -> tuple[set[str], dict[str, tuple[int, int]]]:
    """(content hashes already stored, {path_hash: (size, mtime_ns)} of every ingested or failed path)."""
    store.require(COMPONENT)
    hashes: set[str] = set()
    paths: dict[str, tuple[int, int]] = {}
    with store.connect() as conn:
        # rows stored before the verdict (version 1), `why`'s facts (version 3) or the rules' revision (version
        # 4), or under other rules, count as unseen: an ingest reads them again to refresh them
        for h, ph, size, mt in conn.execute(sa.select(jobs.c.log_hash, jobs.c.path_hash, jobs.c.size_bytes,
                                                      jobs.c.mtime_ns).where(_current())):
            hashes.add(h)
            paths[ph] = (size, mt)
        for h, ph, size, mt in conn.execute(sa.select(failed_logs.c.log_hash, failed_logs.c.path_hash,
                                                      failed_logs.c.size_bytes, failed_logs.c.mtime_ns)):
            paths[ph] = (size, mt)
    return hashes, paths


def seen_stamps(store: Store) -> dict[str, tuple[tuple[int, int, int, int], str]]:
    """{path_hash: ((st_dev, st_ino, size, mtime_ns), log_hash)} of every file an ingest read or found a
    duplicate in (`remember`)."""
    store.require(COMPONENT)
    with store.connect() as conn:
        return {ph: ((dev, ino, size, mt), h) for ph, h, dev, ino, size, mt in conn.execute(sa.select(
            seen_files.c.path_hash, seen_files.c.log_hash, seen_files.c.st_dev, seen_files.c.st_ino,
            seen_files.c.size_bytes, seen_files.c.mtime_ns))}


def remember(store: Store, files: Sequence[dict]) -> None:
    """Record files whose content is stored (`files`: path_hash, log_hash and `file_stamp`'s st_dev, st_ino,
    size_bytes, mtime_ns as read), replacing what was recorded for their paths."""
    store.require(COMPONENT)
    by_path = {f["path_hash"]: {c.name: f[c.name] for c in seen_files.columns} for f in files}
    if not by_path:
        return
    rows = list(by_path.values())
    with store.begin() as conn:
        for i in range(0, len(rows), 500):  # SQLite's bound-parameter limit
            chunk = rows[i:i + 500]
            conn.execute(seen_files.delete().where(seen_files.c.path_hash.in_([r["path_hash"] for r in chunk])))
            conn.execute(seen_files.insert(), chunk)


def _insert_ignore(store: Store, table: sa.Table, key: str):
    """INSERT that skips rows whose `key` is stored (execute it with a list of rows): ON CONFLICT DO NOTHING
    on SQLite and PostgreSQL, INSERT IGNORE on MariaDB/MySQL (which has no ON CONFLICT; IGNORE also turns
    other errors into warnings there, but every column we write is already typed and bounded)."""
    if store.is_sqlite:
        # lazy: the insert of the dialect in use (ON CONFLICT), chosen at run time
        from sqlalchemy.dialects.sqlite import insert
    elif store.engine.dialect.name in ("mysql", "mariadb"):
        return sa.insert(table).prefix_with("IGNORE")
    else:
        # lazy: as above
        from sqlalchemy.dialects.postgresql import insert
    return insert(table).on_conflict_do_nothing(index_elements=[key])


LOCK_NAME = ".ingest.lock"


@contextmanager
def ingest_lock(parquet_dir: Path) -> Iterator[None]:
    """Exclusive, across the processes of this host, for writing jobs of the store whose Parquet dir this is.

    Our own file, never the SQLite database (closing any descriptor of that file would drop
    SQLite's POSIX locks), opened without following a symlink someone may have planted.
    """
    d = files_dir(parquet_dir)
    path = d / LOCK_NAME
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise from_os_error(path, e, "open the ingest lock") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _stored_hashes(conn, hashes: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(hashes), 500):  # SQLite's bound-parameter limit
        chunk = list(hashes[i:i + 500])
        found.update(r[0] for r in conn.execute(sa.select(jobs.c.log_hash).where(jobs.c.log_hash.in_(chunk))))
    return found


def _without(t: pa.Table, hashes: set[str]) -> pa.Table:
    """`t`'s rows of logs other than `hashes`."""
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa
    # lazy: pyarrow, loaded only when this runs
    import pyarrow.compute as pc

    return t.filter(pc.invert(pc.is_in(t.column("log_hash"), value_set=pa.array(sorted(hashes), pa.string()))))


def write_batch(store: Store, parquet_dir: Path, job_rows: Sequence[dict], file_tables: Sequence[pa.Table],
                failures: Sequence[dict]) -> tuple[set[str], set[str]]:
    """Store one batch: the per-file Parquet part, then job and failure rows in one transaction.

    Returns (duplicates, refreshed): the hashes of `job_rows` that were already stored and current (by another
    process since this one looked), left out, rows and Parquet alike; and those stored but not current (not
    "seen": lacking a column added since, or derived under other rules), whose row this one's derived columns
    replaced in place (`_refresh`: same id, path and Parquet part).
    """
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa
    # lazy: pyarrow, loaded only when this runs
    import pyarrow.parquet as pq

    store.require(COMPONENT)
    with ingest_lock(parquet_dir):
        present: set[str] = set()
        rows_in = list(job_rows)
        if job_rows:
            with store.connect() as conn:
                present = _stored_hashes(conn, [r["log_hash"] for r in job_rows])
            job_rows = [r for r in job_rows if r["log_hash"] not in present]
        part = None
        tables = [t for t in file_tables if t is not None and t.num_rows]
        if present:  # a table may hold several logs' rows (the ingest makes one of a batch): those rows left out
            tables = [t for t in (_without(t, present) for t in tables) if t.num_rows]
        if tables and job_rows:
            d = files_dir(parquet_dir)
            part = f"files-{uuid.uuid4().hex}.parquet"
            tmp = d / f".{part}.tmp"
            try:
                pq.write_table(pa.concat_tables(tables, promote_options="default"), tmp, compression="zstd")
                os.replace(tmp, d / part)
            except OSError as e:  # pyarrow's too (a full disk was a traceback): one line, no half part left
                tmp.unlink(missing_ok=True)
                raise from_os_error(d / part, e, "write", cls=StoreError) from None
        now = time.time_ns()
        with store.begin() as conn:
            refreshed = _refresh(conn, [r for r in rows_in if r["log_hash"] in present], now)
            if job_rows:
                rows = [{**{c: r.get(c) for c in JOB_COLUMNS}, "files_part": part, "ingested_ns": now} for r in job_rows]
                conn.execute(_insert_ignore(store, jobs, "log_hash"), rows)
                # a log that now reads fine is no longer a failure, under this path or an older one
                _delete_failures(conn, rows)
            if failures:
                frows = [{**f, "failed_ns": now} for f in failures]
                _delete_failures(conn, frows)
                conn.execute(failed_logs.insert(), frows)
    return present - refreshed, refreshed


def _current():
    """A stored row that has every column added since the first version and was derived under this code's
    rules (what `seen` calls seen; store/sqlite_reads.py `seen` is the same condition in SQL)."""
    return sa.and_(*(jobs.c[c].is_not(None) for c in COMPLETED_COLUMNS), jobs.c.rules_revision == RULES_REVISION)


def _stale():
    """NOT `_current()`, spelled so that a NULL revision is true (NOT of `NULL = 'x'` is NULL: no row)."""
    return sa.or_(*(jobs.c[c].is_(None) for c in COMPLETED_COLUMNS), jobs.c.rules_revision != RULES_REVISION)


def _refresh(conn, rows: Sequence[dict], now: int) -> set[str]:
    """Write the derived columns (REFRESHED_COLUMNS) of freshly read `rows` over their stored rows that are not
    current (`_stale`); their hashes. The row keeps its id, path and Parquet part. The new ingested_ns moves
    `change_marker`, so pages drop what they built from the old rows."""
    done = set()
    for r in rows:
        res = conn.execute(jobs.update().where(jobs.c.log_hash == r["log_hash"], _stale())
                           .values({**{c: r.get(c) for c in REFRESHED_COLUMNS}, "ingested_ns": now}))
        if res.rowcount:
            done.add(r["log_hash"])
    return done


def _delete_failures(conn, rows: Sequence[dict]) -> None:
    """Failure rows of these paths, or of the same content under another path (stored before paths were absolute)."""
    conn.execute(failed_logs.delete().where(failed_logs.c.path_hash.in_([r["path_hash"] for r in rows])))
    hashes = [r["log_hash"] for r in rows if r.get("log_hash")]
    if hashes:
        conn.execute(failed_logs.delete().where(failed_logs.c.log_hash.in_(hashes)))


def relocate(store: Store, found: Sequence[dict]) -> int:
    """Give stored jobs the path they were just found under (`found`: log_hash, path, size_bytes, mtime_ns),
    where the stored path is relative (older ioweather) or names no file any more (the archive moved):
    the next ingest then skips them by path without hashing them. Returns how many moved."""
    store.require(COMPONENT)
    by_hash = {f["log_hash"]: f for f in found}
    if not by_hash:
        return 0
    moved = 0
    with store.begin() as conn:
        hashes = list(by_hash)
        for i in range(0, len(hashes), 500):
            stored = conn.execute(sa.select(jobs.c.log_hash, jobs.c.path)
                                  .where(jobs.c.log_hash.in_(hashes[i:i + 500]))).all()
            for h, old in stored:
                new = by_hash[h]
                if old == new["path"] or (os.path.isabs(old) and os.path.lexists(old)):
                    continue
                conn.execute(jobs.update().where(jobs.c.log_hash == h).values(
                    # path_hash of the name's bytes when given: a non-UTF-8 name is stored in a display form
                    path=new["path"], path_hash=new.get("path_hash") or path_hash(new["path"]), size_bytes=new["size_bytes"],
                    mtime_ns=new["mtime_ns"]))
                moved += 1
    return moved


def remove_orphan_parts(store: Store, parquet_dir: Path) -> int:
    """Delete Parquet parts no job row names (left by a killed ingest).

    Under `ingest_lock` no other ingest is between writing a part and committing it.
    """
    d = files_dir(parquet_dir)
    if not d.is_dir():
        return 0
    store.require(COMPONENT)
    removed = 0
    with ingest_lock(parquet_dir):
        with store.connect() as conn:
            used = {r[0] for r in conn.execute(sa.select(jobs.c.files_part).distinct()) if r[0]}
        # the store's no-follow walker: a link at jobs/ or at a part is skipped, never followed
        tree = StoreTree(parquet_dir)
        for p in tree.regular_files(d, lambda n: is_part_name(n) and n not in used):
            removed += tree.unlink(p)
    return removed


def load_jobs(store: Store, columns: Iterable[str] | None = None) -> pd.DataFrame:
    """All job rows as a DataFrame, by log_hash (read through the raw driver cursor: 10^5 rows in well under a second).

    Ordered because float sums over the rows depend on their order: without it, the summary's
    means changed in the last digit with the order an ingest happened to store the logs."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    store.require(COMPONENT)
    cols = list(columns) if columns else JOB_COLUMNS
    with store.connect() as conn:
        raw = conn.connection.driver_connection
        cur = raw.cursor()
        cur.execute(f"SELECT {', '.join(cols)} FROM darshan_jobs ORDER BY log_hash")
        data = cur.fetchall()
        cur.close()
    return pd.DataFrame.from_records(data, columns=cols)


def rows_of(store: Store, log_hashes: Iterable[str], columns: Sequence[str]) -> list[dict]:
    """The stored rows of `log_hashes` (those stored), `columns` only, by log_hash: without pandas, for a
    few jobs among many (load_jobs reads them all into a DataFrame)."""
    store.require(COMPONENT)
    hashes = sorted(set(log_hashes))
    cols = list(dict.fromkeys(["log_hash", *columns]))
    out: list[dict] = []
    with store.connect() as conn:
        # chunks: SQLite limits the variables of one statement
        for i in range(0, len(hashes), 500):
            q = sa.select(*[jobs.c[c] for c in cols]).where(jobs.c.log_hash.in_(hashes[i:i + 500]))
            out.extend(dict(r) for r in conn.execute(q.order_by(jobs.c.log_hash)).mappings())
    return [{c: r[c] for c in columns} for r in out]


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
    # lazy: pyarrow, loaded only when this runs
    import pyarrow.parquet as pq

    row = job_row(store, id_prefix)
    if row is None:
        return None
    part = files_dir(parquet_dir) / row["files_part"] if row["files_part"] else None
    if part is None or not part.is_file():
        return row, None
    return row, pq.read_table(part, filters=[("log_hash", "=", row["log_hash"])]).to_pandas()


def job_row(store: Store, id_prefix: str) -> dict | None:
    """The stored row of the job whose log_hash starts with `id_prefix`, without its files (`why` needs no
    more, and reading the part filtered loads pyarrow.dataset and pandas: 0.2 s). None when no job
    matches; AmbiguousJobId when several do."""
    store.require(COMPONENT)
    with store.connect() as conn:
        rows = conn.execute(sa.select(jobs).where(jobs.c.log_hash.startswith(id_prefix, autoescape=True))
                            .limit(2)).mappings().all()
    if not rows:
        return None
    if len(rows) > 1:
        raise AmbiguousJobId(f"id {id_prefix} matches several jobs; give more of it")
    return dict(rows[0])


def change_marker(store: Store) -> tuple:
    """Changes whenever a job or a failed log is stored (rows are only ever added or replaced by newer ones)."""
    store.require(COMPONENT)
    with store.connect() as conn:
        a = conn.execute(sa.select(sa.func.count(), sa.func.max(jobs.c.ingested_ns))).one()
        b = conn.execute(sa.select(sa.func.count(), sa.func.max(failed_logs.c.failed_ns))).one()
    return tuple(a) + tuple(b)


def file_rows(store: Store, parquet_dir: Path) -> pa.Table | None:
    """The per-file table of the jobs in the store (only parts a job row names)."""
    # lazy: pyarrow, loaded only when this runs
    import pyarrow as pa
    # lazy: pyarrow, loaded only when this runs
    import pyarrow.parquet as pq

    store.require(COMPONENT)
    with store.connect() as conn:
        used = sorted({r[0] for r in conn.execute(sa.select(jobs.c.files_part).distinct()) if r[0]})
    paths = [files_dir(parquet_dir) / u for u in used if (files_dir(parquet_dir) / u).exists()]
    if not paths:
        return None
    return pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")


def find_jobs(store: Store, ident: str) -> list[dict]:
    """Jobs named by `ident`: its scheduler job id (digits), or the start of its log hash (8 or more hex
    digits), both when it could be either. [{log_hash, jobid, path}], by log_hash."""
    store.require(COMPONENT)
    ident = ident.strip().lower()
    where = []
    if ident.isdigit() and int(ident) < 2**63:
        where.append(jobs.c.jobid == int(ident))
    if len(ident) >= 8 and all(c in "0123456789abcdef" for c in ident):
        where.append(jobs.c.log_hash.startswith(ident, autoescape=True))
    if not where:
        return []
    with store.connect() as conn:
        rows = conn.execute(sa.select(jobs.c.log_hash, jobs.c.jobid, jobs.c.path).where(sa.or_(*where))
                            .order_by(jobs.c.log_hash)).mappings().all()
    return [dict(r) for r in rows]


def darshan_job_by_hash(store, prefix: str, columns: list[str]) -> dict | None:
    """The Darshan job row whose log hash starts with `prefix` (lower-case hex; AmbiguousJobId when
    several do), without its per-file rows."""
    store.require(COMPONENT)
    t = jobs
    with store.connect() as conn:
        # a range on the unique index (hashes are lower-case hex, 'g' sorts after them): LIKE would scan
        rows = conn.execute(sa.select(*[t.c[c] for c in columns]).where(t.c.log_hash >= prefix, t.c.log_hash < prefix + "g")
                            .order_by(t.c.log_hash).limit(2)).mappings().all()
    if len(rows) > 1:
        raise AmbiguousJobId(f"id {prefix} matches several jobs; give more of it")
    return dict(rows[0]) if rows else None


def darshan_job_by_jobid(store, jobid: int, columns: list[str]) -> dict | None:
    """The most recently ingested Darshan job row of scheduler job id `jobid`."""
    if jobid >= 2**63:
        return None
    store.require(COMPONENT)
    t = jobs
    with store.connect() as conn:
        row = conn.execute(sa.select(*[t.c[c] for c in columns]).where(t.c.jobid == jobid)
                           .order_by(t.c.ingested_ns.desc(), t.c.log_hash).limit(1)).mappings().first()
    return dict(row) if row else None
