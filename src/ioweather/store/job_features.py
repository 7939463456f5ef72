"""Per-job feature rows imported from elsewhere (`ioweather import job-features`, e.g. tokio-abc's summaries).

One set per source name (tokio-abc: the system, `edison`): its rows, with their derived columns, are
one Parquet file `parquet_dir/job_features/<set>.parquet` (written beside under a temporary name, then
renamed), and the set is listed in the table `job_feature_sets` (name, preset, source, rows, file,
imported_ns). A re-import of a set replaces it whole: the new file is renamed over the old one and
the row updated in one transaction after it.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from ioweather.encoding import to_json
from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables

metadata = sa.MetaData()

job_feature_sets = sa.Table(
    "job_feature_sets", metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("preset", sa.String(64), nullable=False),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("rows", sa.BigInteger, nullable=False),
    sa.Column("file", sa.String(255), nullable=False),
    sa.Column("imported_ns", sa.BigInteger, nullable=False),
    # JSON: {"directions": {metric: bigger is better}, "umami_rows": [metric, ...], "labels": {metric: label}}
    sa.Column("config", sa.Text, nullable=False),
)

COMPONENT = Component("job_features", [create_tables(job_feature_sets)])
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def features_dir(parquet_dir: Path) -> Path:
    return Path(parquet_dir) / "job_features"


def write_set(store: Store, name: str, preset: str, source: str, df: pd.DataFrame, config: dict) -> int:
    """Store `df` as the feature set `name` (replacing any set of that name). Returns its rows."""
    if not _NAME.match(name):
        raise UserError(f"invalid feature set name {name!r}: use letters, digits, '.', '_' and '-'")
    store.require(COMPONENT)
    d = features_dir(store.parquet_dir)
    final = d / f"{name}.parquet"
    tmp = d / f".{name}.parquet.tmp"
    # Mixed object columns (numbers and strings in one column) are stored as text.
    df = df.copy()
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].map(lambda v: None if v is None or (isinstance(v, float) and v != v) else str(v))
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp, compression="zstd")
        os.replace(tmp, final)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise from_os_error(final, e, "write", cls=StoreError) from None
    values = {"preset": preset, "source": source, "rows": len(df), "file": final.name, "imported_ns": time.time_ns(),
              "config": to_json(config)}
    with store.begin() as conn:
        if conn.execute(sa.select(job_feature_sets.c.name).where(job_feature_sets.c.name == name)).first():
            conn.execute(job_feature_sets.update().where(job_feature_sets.c.name == name).values(**values))
        else:
            conn.execute(job_feature_sets.insert().values(name=name, **values))
    return len(df)


def sets(store: Store) -> list[dict]:
    store.require(COMPONENT)
    with store.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(sa.select(job_feature_sets).order_by(job_feature_sets.c.name))]
    for r in rows:
        r["config"] = json.loads(r["config"] or "{}")
    return rows


def load(store: Store, names: list[str] | None = None, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of the named sets (all when None), with a `_set` column; empty when none is stored."""
    frames = []
    for s in sets(store):
        if names is not None and s["name"] not in names:
            continue
        path = features_dir(store.parquet_dir) / s["file"]
        with store.connect():  # Arrow's errors on a damaged or missing file become one StoreError line
            schema = pq.read_schema(path)
            cols = None if columns is None else [c for c in columns if c in schema.names]
            df = pq.read_table(path, columns=cols).to_pandas()
        df["_set"] = s["name"]
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
