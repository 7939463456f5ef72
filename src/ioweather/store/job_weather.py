"""Each job's weather, stored: one row per (job, file system) with its metrics as a JSON document.

`telemetry_sig` is the watermark of the telemetry the weather was computed from
(store/job_telemetry.WindowSignatures: the data files of the window's days); services/job_weather.py
recomputes a row whose signature no longer matches, i.e. when telemetry for its window arrived or
was replaced. `computed_ns` says when.
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa

from ioweather.encoding import to_json
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables

metadata = sa.MetaData()

job_weather = sa.Table(
    "job_weather", metadata,
    sa.Column("job_key", sa.String(255), primary_key=True),   # darshan:<log hash> or sched:<cluster>:<job id>
    sa.Column("fs", sa.String(128), primary_key=True),
    sa.Column("motif", sa.String(512), nullable=False),
    sa.Column("start_ns", sa.BigInteger, nullable=False),
    sa.Column("end_ns", sa.BigInteger, nullable=False),
    sa.Column("computed_ns", sa.BigInteger, nullable=False),
    sa.Column("telemetry_sig", sa.String(64), nullable=False),
    sa.Column("doc", sa.Text, nullable=False),
)
sa.Index("job_weather_motif", job_weather.c.motif)

COMPONENT = Component("job_weather", [create_tables(job_weather)])


def get(store: Store, job_key: str, fs: str) -> dict | None:
    store.require(COMPONENT)
    with store.connect() as conn:
        row = conn.execute(sa.select(job_weather).where((job_weather.c.job_key == job_key)
                                                        & (job_weather.c.fs == fs))).mappings().first()
    return _decode(row) if row else None


def all_rows(store: Store, fs: str | None = None) -> list[dict]:
    store.require(COMPONENT)
    q = sa.select(job_weather)
    if fs:
        q = q.where(job_weather.c.fs == fs)
    with store.connect() as conn:
        return [_decode(r) for r in conn.execute(q).mappings()]


def of_jobs(store: Store, job_keys: list[str]) -> list[dict]:
    """The stored rows of these jobs (every file system), read by key: a page of a list, not the table."""
    store.require(COMPONENT)
    out = []
    with store.connect() as conn:
        for i in range(0, len(job_keys), 500):  # below every database's limit of bound parameters
            q = sa.select(job_weather).where(job_weather.c.job_key.in_(job_keys[i:i + 500]))
            out += [_decode(r) for r in conn.execute(q).mappings()]
    return out


def _decode(row) -> dict:
    out = dict(row)
    out["doc"] = json.loads(out["doc"])
    return out


def put_many(store: Store, rows: list[dict]) -> None:
    """Insert or replace weather rows ({job_key, fs, motif, start_ns, end_ns, telemetry_sig, doc})."""
    if not rows:
        return
    store.require(COMPONENT)
    now = time.time_ns()
    with store.begin() as conn:
        for r in rows:
            conn.execute(job_weather.delete().where((job_weather.c.job_key == r["job_key"])
                                                    & (job_weather.c.fs == r["fs"])))
        conn.execute(job_weather.insert(), [{**r, "doc": to_json(r["doc"]), "computed_ns": now} for r in rows])
