"""Regression benchmark runs (`ioweather bench`): component `bench`.

`bench_runs`: one row per run of a motif (our fio runs, imported fio jobs, tokio-abc rows): motif,
file system, hosts, window, parameters, fio's version and the name of fio's full JSON output, kept
as a file `parquet_dir/bench/<run_id>.json`. `bench_results`: one row per run and direction
(read, write, create, stat, delete, ...) with bytes, duration, bandwidth, IOPS and latency
percentiles, and its run's motif, fs and start copied beside them so that one series (motif,
direction, fs) is an index range. `bench_groups`: per series the aggregates of the summary (runs,
optimum, total duration, best bandwidth), recomputed for the series a write touches, in its
transaction: `bench summary` then reads one row per series plus its last runs through the index,
whatever the length of the history (10 years of 3 runs a day x 10 motifs: milliseconds, where
loading the 10^5 rows took 1.3-1.7 s).

A run is stored whole or not at all: its JSON file is written under a temporary name and renamed,
then its rows go in one transaction. A JSON file without a row (the process died between the
two) is removed by the next `put_runs`.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from ioweather.config import fs_name
from ioweather.encoding import to_json
from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables, schema_versions

if TYPE_CHECKING:
    import pandas as pd

metadata = sa.MetaData()

bench_runs = sa.Table(
    "bench_runs", metadata,
    sa.Column("run_id", sa.String(160), primary_key=True),
    sa.Column("motif", sa.String(255), nullable=False),
    sa.Column("fs", sa.String(128), nullable=False),
    sa.Column("source", sa.String(32), nullable=False),      # fio (our run), fio-import, tokio-abc
    sa.Column("hosts", sa.Text, nullable=True),
    sa.Column("directory", sa.Text, nullable=True),
    sa.Column("start_ns", sa.BigInteger, nullable=False),
    sa.Column("end_ns", sa.BigInteger, nullable=False),
    sa.Column("tasks", sa.Integer, nullable=True),
    sa.Column("size_bytes", sa.BigInteger, nullable=True),
    sa.Column("tool_version", sa.String(64), nullable=True),
    sa.Column("json_file", sa.String(255), nullable=True),
    sa.Column("params", sa.Text, nullable=False),             # JSON
    sa.Column("stored_ns", sa.BigInteger, nullable=False),
)
sa.Index("bench_runs_motif", bench_runs.c.motif, bench_runs.c.fs, bench_runs.c.start_ns)

bench_results = sa.Table(
    "bench_results", metadata,
    sa.Column("run_id", sa.String(160), primary_key=True),
    sa.Column("direction", sa.String(32), primary_key=True),
    sa.Column("bytes", sa.BigInteger, nullable=True),
    sa.Column("duration_s", sa.Double, nullable=False),
    sa.Column("bw_bps", sa.Double, nullable=True),
    sa.Column("iops", sa.Double, nullable=True),
    sa.Column("lat_p50_s", sa.Double, nullable=True),
    sa.Column("lat_p95_s", sa.Double, nullable=True),
    sa.Column("lat_p99_s", sa.Double, nullable=True),
    # the run's, copied (schema v2): a series is then a range of the indexes below, without a join
    sa.Column("motif", sa.String(255), nullable=True),
    sa.Column("fs", sa.String(128), nullable=True),
    sa.Column("start_ns", sa.BigInteger, nullable=True),
)
_series_time = sa.Index("bench_results_series", bench_results.c.motif, bench_results.c.direction,
                        bench_results.c.fs, bench_results.c.start_ns, bench_results.c.run_id)
_series_bw = sa.Index("bench_results_series_bw", bench_results.c.motif, bench_results.c.direction,
                      bench_results.c.fs, bench_results.c.bw_bps)

bench_groups = sa.Table(
    "bench_groups", metadata,
    sa.Column("motif", sa.String(255), primary_key=True),
    sa.Column("direction", sa.String(32), primary_key=True),
    sa.Column("fs", sa.String(128), primary_key=True),
    sa.Column("runs", sa.Integer, nullable=False),           # runs with a positive duration
    sa.Column("optimum_s", sa.Double, nullable=True),         # the shortest of those
    sa.Column("total_s", sa.Double, nullable=True),           # their sum: mean = total / runs
    sa.Column("n_bw", sa.Integer, nullable=False),           # runs with a bandwidth
    sa.Column("best_bps", sa.Double, nullable=True),
)
_SERIES = ("motif", "direction", "fs")


def _series_v2(conn: sa.Connection) -> None:
    """v2: double precision on MariaDB, NaN and infinities as NULL on PostgreSQL, the run's motif, fs and
    start beside each result, the series indexes, and bench_groups filled.

    A database created by this release already has the columns and indexes (v1 creates the tables as
    defined now); one created by v1 gets them here and its rows are copied over once."""
    if conn.dialect.name in ("mysql", "mariadb"):
        # v1's sa.Float is a 4-byte FLOAT there: seven digits of a duration or a bandwidth
        for c in bench_results.columns:
            if isinstance(c.type, sa.Double):
                conn.execute(sa.text(f"ALTER TABLE bench_results MODIFY {c.name} DOUBLE"
                                     + ("" if c.nullable else " NOT NULL")))
    if conn.dialect.name == "postgresql":
        # v1 stored them as given; PostgreSQL orders NaN above every number (a NaN bandwidth was the best)
        for c in bench_results.columns:
            if isinstance(c.type, sa.Double) and c.nullable:
                conn.execute(sa.text(f"UPDATE bench_results SET {c.name} = NULL "
                                     f"WHERE {c.name} IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)"))
    have = {c["name"] for c in sa.inspect(conn).get_columns("bench_results")}
    for name in ("motif", "fs", "start_ns"):
        if name not in have:
            col = bench_results.c[name]
            conn.execute(sa.text(f"ALTER TABLE bench_results ADD COLUMN {name} {col.type.compile(dialect=conn.dialect)}"))
    r = bench_runs.alias("r")

    def of_run(c):
        return sa.select(r.c[c]).where(r.c.run_id == bench_results.c.run_id).scalar_subquery()

    conn.execute(bench_results.update().where(bench_results.c.motif.is_(None))
                 .values(motif=of_run("motif"), fs=of_run("fs"), start_ns=of_run("start_ns")))
    for ix in (_series_time, _series_bw):
        ix.create(conn, checkfirst=True)
    _rebuild_groups(conn)


def _rebuild_groups(conn: sa.Connection) -> None:
    bench_groups.create(conn, checkfirst=True)
    conn.execute(bench_groups.delete())
    conn.execute(bench_groups.insert().from_select([c.name for c in bench_groups.columns], _group_select()))


#: One host's name as `bench run` records it (SLURM_JOB_NODELIST or the host name): no list, no range.
_ONE_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")


def _fs_names_v3(conn: sa.Connection) -> None:
    """v3 (issue 28): runs of `bench run` on a node's root file system were filed under `root`; they get
    the file system's one name (config.fs_name: the short host name of a node's own disk). A run over
    several nodes (a node list) names no one host's disk and stays `root` (docs/store.md)."""
    old = (bench_runs.c.fs == "root") & (bench_runs.c.source == "fio")
    hosts = [h for (h,) in conn.execute(sa.select(bench_runs.c.hosts).where(old).distinct()) if h and _ONE_HOST.match(h)]
    for h in hosts:
        ids = sa.select(bench_runs.c.run_id).where(old, bench_runs.c.hosts == h).scalar_subquery()
        name = fs_name("/", None, None, [], h)
        conn.execute(bench_results.update().where(bench_results.c.run_id.in_(ids)).values(fs=name))
        conn.execute(bench_runs.update().where(old, bench_runs.c.hosts == h).values(fs=name))
    if hosts:
        _rebuild_groups(conn)


COMPONENT = Component("bench", [create_tables(bench_runs, bench_results), _series_v2, _fs_names_v3])
RUN_COLUMNS = ["run_id", "motif", "fs", "source", "hosts", "start_ns", "end_ns"]
RESULT_COLUMNS = ["direction", "bytes", "duration_s", "bw_bps", "iops", "lat_p50_s", "lat_p95_s", "lat_p99_s"]
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,159}$")
_BATCH = 2000
_FLOATS = {"bytes", "duration_s", "bw_bps", "iops", "lat_p50_s", "lat_p95_s", "lat_p99_s"}


def bench_dir(parquet_dir: Path) -> Path:
    return Path(parquet_dir) / "bench"


def _write_json(d: Path, run_id: str, text: str) -> str:
    name = f"{run_id.replace(':', '_')}.json"
    final, tmp = d / name, d / f".{name}.tmp"
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp.write_text(text)
        os.replace(tmp, final)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise from_os_error(final, e, "write", cls=StoreError) from None
    return name


def _clean(v):
    """NaN and infinities as NULL: SQLite turns NaN into NULL, PostgreSQL keeps it and orders it above
    every number (a NaN bandwidth would be the best); one meaning on every database."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def put_runs(store: Store, runs: list[dict]) -> int:
    """Store runs ({run fields..., "results": [{direction, ...}], "json_text": str | None}), replacing runs
    of the same id, and refresh the aggregates of every series they enter or leave; all in one
    transaction. Returns the number of runs stored."""
    if not runs:
        return 0
    store.require(COMPONENT)
    for r in runs:
        if not _ID.match(r["run_id"]):
            raise UserError(f"invalid run id {r['run_id']!r}")
        for res in r["results"]:
            d = res.get("duration_s")
            if d is None or not math.isfinite(d):
                raise UserError(f"run {r['run_id']}: {res.get('direction')} has no finite duration ({d!r})")
    d = bench_dir(store.parquet_dir)
    remove_orphans(store)
    now = time.time_ns()
    run_rows, result_rows = [], []
    for r in runs:
        text = r.get("json_text")
        name = _write_json(d, r["run_id"], text) if text is not None else None
        row = {c.name: r.get(c.name) for c in bench_runs.columns}
        row.update(json_file=name, stored_ns=now, params=to_json(r.get("params") or {}))
        run_rows.append(row)
        result_rows += [{"run_id": r["run_id"], "motif": r["motif"], "fs": r["fs"], "start_ns": r["start_ns"],
                         **{c: _clean(res.get(c)) for c in RESULT_COLUMNS}} for res in r["results"]]
    ids = [r["run_id"] for r in runs]
    touched = {(r["motif"], r["direction"], r["fs"]) for r in result_rows}
    with store.begin() as conn:
        # One bench writer at a time: two runs of one series stored at once (nodes of one file system)
        # would each recompute the series without the other's rows, or collide on its bench_groups row.
        # A row lock, released at commit, on PostgreSQL and MariaDB; SQLite's BEGIN IMMEDIATE already
        # serializes writers (SQLAlchemy leaves FOR UPDATE out there).
        conn.execute(sa.select(schema_versions.c.version).where(schema_versions.c.component == COMPONENT.name)
                     .with_for_update())
        for i in range(0, len(ids), _BATCH):
            chunk = ids[i:i + _BATCH]
            touched |= set(tuple(k) for k in conn.execute(sa.select(*(bench_results.c[c] for c in _SERIES)).distinct()
                                        .where(bench_results.c.run_id.in_(chunk))).all())
            conn.execute(bench_results.delete().where(bench_results.c.run_id.in_(chunk)))
            conn.execute(bench_runs.delete().where(bench_runs.c.run_id.in_(chunk)))
        for i in range(0, len(run_rows), _BATCH):
            conn.execute(bench_runs.insert(), run_rows[i:i + _BATCH])
        for i in range(0, len(result_rows), _BATCH):
            conn.execute(bench_results.insert(), result_rows[i:i + _BATCH])
        _refresh_groups(conn, touched)
    return len(runs)


def _is_series(t, key) -> sa.ColumnElement:
    return sa.and_(*(t.c[c] == v for c, v in zip(_SERIES, key)))


def _group_select(key=None) -> sa.Select:
    """bench_groups' row(s) computed from bench_results: all series, or the one of `key`."""
    c = bench_results.c
    ok = c.duration_s > 0
    q = sa.select(c.motif, c.direction, c.fs,
                  sa.func.count(sa.case((ok, 1))), sa.func.min(sa.case((ok, c.duration_s))),
                  sa.func.sum(sa.case((ok, c.duration_s))), sa.func.count(c.bw_bps), sa.func.max(c.bw_bps))
    if key is not None:
        q = q.where(_is_series(bench_results, key))
    return q.group_by(c.motif, c.direction, c.fs)


def _refresh_groups(conn: sa.Connection, keys) -> None:
    # recomputed from the series' rows (an index range) rather than adjusted: a replaced run may
    # have left one series for another, and sums adjusted over years drift
    cols = [c.name for c in bench_groups.columns]
    for key in sorted(keys, key=lambda k: tuple(map(str, k))):
        conn.execute(bench_groups.delete().where(_is_series(bench_groups, key)))
        conn.execute(bench_groups.insert().from_select(cols, _group_select(key)))


def remove_orphans(store: Store) -> int:
    """Remove JSON files (and temporary files) that no run row names: leftovers of a killed store."""
    d = bench_dir(store.parquet_dir)
    if not d.is_dir():
        return 0
    with store.connect() as conn:
        named = {n for (n,) in conn.execute(sa.select(bench_runs.c.json_file).where(bench_runs.c.json_file.isnot(None)))}
    # a file renamed in the last minute may belong to a run whose transaction is committing right now
    cutoff = time.time() - 60
    removed = 0
    for p in d.iterdir():
        if p.name not in named and p.is_file() and p.stat().st_mtime < cutoff:
            p.unlink(missing_ok=True)
            removed += 1
    return removed


def has_runs(store: Store) -> bool:
    if COMPONENT.name not in store.versions():
        return False
    with store.connect() as conn:
        return conn.execute(sa.select(bench_runs.c.run_id).limit(1)).first() is not None


def groups(store: Store, motif: str | None = None, fs: str | None = None) -> list[dict]:
    """bench_groups' rows (motif, direction, fs, runs, optimum_s, total_s, n_bw, best_bps), sorted."""
    store.require(COMPONENT)
    q = sa.select(bench_groups)
    if motif:
        q = q.where(bench_groups.c.motif == motif)
    if fs:
        q = q.where(bench_groups.c.fs == fs)
    with store.connect() as conn:
        rows = [dict(r) for r in conn.execute(q).mappings()]
    return sorted(rows, key=lambda r: (r["motif"], r["direction"], r["fs"]))  # Python's order on every database


def series_tails(store: Store, keys, last: int) -> dict[tuple, dict]:
    """Per series key (motif, direction, fs): its `last` newest results, newest first, as rows of
    (start_ns, duration_s, bw_bps), and `at_or_below`: how many of its bandwidths are at or below the
    newest one's (None without one). Two index range reads per series."""
    store.require(COMPONENT)
    c = bench_results.c
    out = {}
    with store.connect() as conn:
        for key in keys:
            tail = conn.execute(sa.select(c.start_ns, c.duration_s, c.bw_bps).where(_is_series(bench_results, key))
                                .order_by(c.start_ns.desc(), c.run_id.desc()).limit(last)).all()
            bw = tail[0][2] if tail else None
            below = None if bw is None else conn.execute(
                sa.select(sa.func.count()).select_from(bench_results)
                .where(_is_series(bench_results, key), c.bw_bps <= bw)).scalar()
            out[tuple(key)] = {"tail": [tuple(t) for t in tail], "at_or_below": below}
    return out


def results_frame(store: Store, motif: str | None = None, fs: str | None = None,
                  columns: list[str] | None = None, direction: str | None = None) -> "pd.DataFrame":
    """Every (run, direction) with its run's motif, fs, source, hosts and window, oldest first
    (only `columns` when given)."""
    # lazy: numpy, pandas, pyarrow, loaded only when this runs
    import numpy as np
    import pandas as pd

    store.require(COMPONENT)
    names = columns or RUN_COLUMNS + RESULT_COLUMNS
    cols = [bench_runs.c[c] if c in RUN_COLUMNS else bench_results.c[c] for c in names]
    q = sa.select(*cols).select_from(bench_runs.join(bench_results, bench_runs.c.run_id == bench_results.c.run_id))
    # the results' own copies of motif and fs: one series is then a range of its index
    if motif:
        q = q.where(bench_results.c.motif == motif)
    if fs:
        q = q.where(bench_results.c.fs == fs)
    if direction:
        q = q.where(bench_results.c.direction == direction)
    with store.connect() as conn:
        rows = conn.execute(q.order_by(bench_runs.c.start_ns, bench_runs.c.run_id)).fetchall()
    # column-wise: pandas probes every SQLAlchemy Row for attributes (seconds for 10^5 rows)
    values = list(zip(*rows)) if rows else [()] * len(names)
    df = pd.DataFrame({name: np.asarray(v, dtype=float if name in _FLOATS else object)
                       for name, v in zip(names, values)})
    return df


def get_run(store: Store, run_id: str) -> dict | None:
    """A run with its params decoded and its results; None when unknown."""
    store.require(COMPONENT)
    with store.connect() as conn:
        row = conn.execute(sa.select(bench_runs).where(bench_runs.c.run_id == run_id)).mappings().first()
        if row is None:
            return None
        res = [dict(r) for r in conn.execute(sa.select(bench_results).where(bench_results.c.run_id == run_id)
                                             .order_by(bench_results.c.direction)).mappings()]
    out = dict(row)
    out["params"] = json.loads(out["params"] or "{}")
    out["results"] = res
    return out


def change_marker(store: Store) -> tuple[int, ...]:
    """Changes when benchmark runs are stored or removed (a run's results are stored with it)."""
    with store.connect() as conn:
        row = conn.execute(sa.select(sa.func.count(), sa.func.max(bench_runs.c.stored_ns),
                                     sa.func.sum(bench_runs.c.stored_ns % 1_000_003))).one()
    return tuple(int(x or 0) for x in row)
