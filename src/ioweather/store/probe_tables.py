"""The probe component's tables and their migrations: runs, raw samples, the archive's manifest, the
pieces (summaries of completed hours and days) and retired targets (METHODS.md section 1).

Apart from store/probe.py (runs and samples read and written), store/probe_archive.py and
store/probe_pieces.py, which all read these tables: each imports the definitions from here, so none
imports another to find a table.
"""

from __future__ import annotations

import sqlalchemy as sa

from ioweather.config import fs_name
from ioweather.store.migrations import Component, create_tables

OPS = ("data_write", "data_read", "md_create", "md_stat", "md_read", "md_delete")
STATUSES = ("ok", "error", "timeout")



class _LongBlob(sa.types.TypeDecorator):
    """A blob, LONGBLOB on MySQL and MariaDB (their BLOB stops at 64 KiB), as
    `sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql")` was: that needed `sqlalchemy.dialects.mysql` at
    import, whose package loads all six of its drivers' modules (~12 ms of every command that reads probes,
    `why` among them) on stores that are SQLite."""

    impl = sa.LargeBinary
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name == "mysql":
            # lazy: sqlalchemy.dialects.mysql and its drivers' modules: only a MySQL or MariaDB store needs it
            from sqlalchemy.dialects.mysql import LONGBLOB

            return dialect.type_descriptor(LONGBLOB())
        return dialect.type_descriptor(sa.LargeBinary())


metadata = sa.MetaData()

probe_runs = sa.Table(
    "probe_runs", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("target", sa.String(255), nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("directory", sa.Text, nullable=False),
    sa.Column("started_ns", sa.BigInteger, nullable=False),
    sa.Column("interval_s", sa.Float, nullable=False),
    sa.Column("block_bytes", sa.BigInteger, nullable=False),
    sa.Column("file_bytes", sa.BigInteger, nullable=False),
    sa.Column("pool_files", sa.Integer, nullable=False),
    sa.Column("small_bytes", sa.Integer, nullable=False),
    sa.Column("direct", sa.Boolean, nullable=False),
    sa.Column("fsync", sa.Boolean, nullable=False),
    sa.Column("seed", sa.BigInteger, nullable=False),
    sa.Column("timeout_s", sa.Float, nullable=False),
    # The file should exceed client memory so reads miss the page cache (METHODS.md section 1);
    # a smaller one is allowed but recorded here and reported.
    sa.Column("file_exceeds_memory", sa.Boolean, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("version", sa.String(32), nullable=False),
    # v5 (issue 28): the one name of the file system probed (config.fs_name), as benchmark runs and
    # telemetry datasets call it; NULL for a run of an older store the migration could not name.
    sa.Column("fs", sa.String(128), nullable=True),
)
sa.Index("probe_runs_target", probe_runs.c.target)

probe_samples = sa.Table(
    "probe_samples", metadata,
    sa.Column("run_id", sa.Integer, primary_key=True),
    sa.Column("op", sa.String(16), primary_key=True),
    sa.Column("start_ns", sa.BigInteger, primary_key=True),
    sa.Column("duration_ns", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("status", sa.String(8), nullable=False),
    sa.Column("errno", sa.Integer, nullable=False),
    sqlite_with_rowid=False,
)

# v2: completed days of samples move to Parquet (see probe_archive.py); this is their manifest.
probe_archive = sa.Table(
    "probe_archive", metadata,
    sa.Column("run_id", sa.Integer, primary_key=True),
    sa.Column("day_ns", sa.BigInteger, primary_key=True),
    sa.Column("part", sa.Integer, primary_key=True),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("rows", sa.BigInteger, nullable=False),
    sa.Column("first_ns", sa.BigInteger, nullable=False),
    sa.Column("last_ns", sa.BigInteger, nullable=False),
)

# v3 (issue 21): per-target summaries of completed hours and days, sorted successful durations and
# interval rollups per op, so a 30-day baseline reads a few slices instead of 15.6 M rows
# (store/probe_pieces.py). A cache of the samples: any insert into a span deletes its pieces.
probe_pieces = sa.Table(
    "probe_pieces", metadata,
    sa.Column("target", sa.String(255), primary_key=True),
    sa.Column("op", sa.String(16), primary_key=True),
    sa.Column("start_ns", sa.BigInteger, primary_key=True),
    sa.Column("span_ns", sa.BigInteger, primary_key=True),
    sa.Column("rows", sa.BigInteger, nullable=False),
    sa.Column("ok", sa.BigInteger, nullable=False),
    sa.Column("errors", sa.BigInteger, nullable=False),
    sa.Column("timeouts", sa.BigInteger, nullable=False),
    sa.Column("sum_ns", sa.BigInteger, nullable=False),
    sa.Column("first_ok_ns", sa.BigInteger, nullable=False),
    # Samples (database rows + archived rows) and archive parts of the target in the span when it
    # was summarized: the check that no insert slipped between reading the span and writing this.
    sa.Column("fp_rows", sa.BigInteger, nullable=False),
    sa.Column("fp_parts", sa.BigInteger, nullable=False),
    sa.Column("hist", _LongBlob(), nullable=False),
    sa.Column("rollups", _LongBlob(), nullable=False),
    # Last: SQLite reads a row's columns in order, through the overflow pages of any big one before.
    sa.Column("sorted_ns", _LongBlob(), nullable=False),
    # v6 (issue 40): an hour piece's start times in the order of `sorted_ns` (NULL for a day piece, and for an
    # hour summarized before v6). The hour a rolling window starts in is cut at the window's start from these,
    # where its samples would otherwise be read from an archived day's Parquet file (store/probe_light.py).
    sa.Column("starts_ns", _LongBlob(), nullable=True),
)
sa.Index("probe_pieces_span", probe_pieces.c.target, probe_pieces.c.start_ns)

# v4 (issue 30): targets an admin retired (`probe retire`): their data stays, Status, /metrics and
# `slowdown --check` leave them out. A run started after `retired_ns` brings the target back.
probe_retired = sa.Table(
    "probe_retired", metadata,
    sa.Column("target", sa.String(255), primary_key=True),
    sa.Column("retired_ns", sa.BigInteger, nullable=False),
)



def _fs_names_v5(conn: sa.Connection) -> None:
    """v5: the file system's name on each run. An older run is named from what it stored: a default label
    `HOST:MOUNT` of its own host gives the mount (its type unknown: `/` is the host's disk, else the
    mount's last part); a label the user chose names no mount and stays NULL until the target's next
    run, which records its exact name (docs/store.md)."""
    if "fs" not in {c["name"] for c in sa.inspect(conn).get_columns("probe_runs")}:
        conn.execute(sa.text(f"ALTER TABLE probe_runs ADD COLUMN fs {probe_runs.c.fs.type.compile(dialect=conn.dialect)}"))
    unnamed = conn.execute(sa.select(probe_runs.c.target, probe_runs.c.host).where(probe_runs.c.fs.is_(None))
                           .distinct()).all()
    for target, host in unnamed:
        mount = target[len(host) + 1:] if target.startswith(f"{host}:/") else None
        if mount is not None:
            conn.execute(probe_runs.update().where(probe_runs.c.target == target, probe_runs.c.host == host,
                                                   probe_runs.c.fs.is_(None))
                         .values(fs=fs_name(mount, None, None, [], host)))


def _starts_v6(conn: sa.Connection) -> None:
    """v6: `probe_pieces.starts_ns` (a store created at v3 or later has it from create_tables). The hour pieces
    summarized before go: a cache, built again on first use with their start times (only the hours around a
    window's ends are kept, so this is a few hours per target)."""
    if "starts_ns" not in {c["name"] for c in sa.inspect(conn).get_columns("probe_pieces")}:
        kind = probe_pieces.c.starts_ns.type.compile(dialect=conn.dialect)
        conn.execute(sa.text(f"ALTER TABLE probe_pieces ADD COLUMN starts_ns {kind}"))
    conn.execute(probe_pieces.delete().where(probe_pieces.c.span_ns < 86_400 * 10**9,
                                             probe_pieces.c.starts_ns.is_(None)))


COMPONENT = Component("probe", [create_tables(probe_runs, probe_samples), create_tables(probe_archive),
                                create_tables(probe_pieces), create_tables(probe_retired), _fs_names_v5,
                                _starts_v6])
