"""Regression benchmark runs (`ioweather bench`): component `bench`.

`bench_runs`: one row per run of a motif (our fio runs, imported fio jobs, tokio-abc rows): motif,
file system, hosts, window, parameters, fio's version and the name of fio's full JSON output, kept
as a file `parquet_dir/bench/<run_id>.json`. `bench_results`: one row per run and direction
(read, write, create, stat, delete, ...) with bytes, duration, bandwidth, IOPS and latency
percentiles.

A run is stored whole or not at all: its JSON file is written under a temporary name and renamed,
then its rows go in one transaction. A JSON file without a row (the process died between the
two) is removed by the next `put_runs`.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sqlalchemy as sa

from ioweather.encoding import to_json
from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables

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
    sa.Column("duration_s", sa.Float, nullable=False),
    sa.Column("bw_bps", sa.Float, nullable=True),
    sa.Column("iops", sa.Float, nullable=True),
    sa.Column("lat_p50_s", sa.Float, nullable=True),
    sa.Column("lat_p95_s", sa.Float, nullable=True),
    sa.Column("lat_p99_s", sa.Float, nullable=True),
)

COMPONENT = Component("bench", [create_tables(bench_runs, bench_results)])
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


def put_runs(store: Store, runs: list[dict]) -> int:
    """Store runs ({run fields..., "results": [{direction, ...}], "json_text": str | None}), replacing runs
    of the same id; all in one transaction. Returns the number of runs stored."""
    if not runs:
        return 0
    store.require(COMPONENT)
    for r in runs:
        if not _ID.match(r["run_id"]):
            raise UserError(f"invalid run id {r['run_id']!r}")
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
        result_rows += [{"run_id": r["run_id"], **{c: res.get(c) for c in RESULT_COLUMNS}} for res in r["results"]]
    ids = [r["run_id"] for r in runs]
    with store.begin() as conn:
        for i in range(0, len(ids), _BATCH):
            chunk = ids[i:i + _BATCH]
            conn.execute(bench_results.delete().where(bench_results.c.run_id.in_(chunk)))
            conn.execute(bench_runs.delete().where(bench_runs.c.run_id.in_(chunk)))
        for i in range(0, len(run_rows), _BATCH):
            conn.execute(bench_runs.insert(), run_rows[i:i + _BATCH])
        for i in range(0, len(result_rows), _BATCH):
            conn.execute(bench_results.insert(), result_rows[i:i + _BATCH])
    return len(runs)


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


def results_frame(store: Store, motif: str | None = None, fs: str | None = None,
                  columns: list[str] | None = None) -> pd.DataFrame:
    """Every (run, direction) with its run's motif, fs, source, hosts and window, oldest first
    (only `columns` when given: a summary of 10^5 runs needs six)."""
    store.require(COMPONENT)
    names = columns or RUN_COLUMNS + RESULT_COLUMNS
    cols = [bench_runs.c[c] if c in RUN_COLUMNS else bench_results.c[c] for c in names]
    q = sa.select(*cols).select_from(bench_runs.join(bench_results, bench_runs.c.run_id == bench_results.c.run_id))
    if motif:
        q = q.where(bench_runs.c.motif == motif)
    if fs:
        q = q.where(bench_runs.c.fs == fs)
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


def json_path(store: Store, run: dict) -> Path | None:
    return bench_dir(store.parquet_dir) / run["json_file"] if run.get("json_file") else None
