"""Each job's weather, stored: one row per (job, file system) with its metrics as a JSON document.

`telemetry_sig` is the watermark of the telemetry the weather was computed from
(store/job_telemetry.WindowSignatures: the data files of the window's days); services/jobs/weather.py
recomputes a row whose signature no longer matches, i.e. when telemetry for its window arrived or
was replaced. `computed_ns` says when.
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa

from ioweather.encoding import to_json
from ioweather.store import jobs as jstore
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


def signatures(store: Store, fs: str | None = None, motif: str | None = None) -> list[dict]:
    """The rows' keys, file systems, motifs, windows and telemetry signatures (of one file system and
    motif when given), without their documents: what tells which weather is stale. Read through the
    raw driver cursor: 10^4 rows as SQLAlchemy mappings cost ~0.5 s on a loaded machine."""
    store.require(COMPONENT)
    cols = ["job_key", "fs", "motif", "start_ns", "end_ns", "telemetry_sig", "computed_ns"]
    where, params = [], []
    ph = "?" if store.is_sqlite else "%s"
    if fs:
        where.append(f"fs = {ph}")
        params.append(fs)
    if motif is not None:
        where.append(f"motif = {ph}")
        params.append(motif)
    sql = f"SELECT {', '.join(cols)} FROM job_weather" + (" WHERE " + " AND ".join(where) if where else "")
    with store.connect() as conn:
        cur = conn.connection.driver_connection.cursor()
        cur.execute(sql, params)
        rows = cur.fetchall()
        cur.close()
    return [dict(zip(cols, r)) for r in rows]


def of_keys(store: Store, fs: str, job_keys: list[str]) -> list[dict]:
    """{job_key, telemetry_sig} of these jobs' rows on `fs`, by key."""
    store.require(COMPONENT)
    c = job_weather.c
    out = []
    with store.connect() as conn:
        for i in range(0, len(job_keys), 500):  # below every database's limit of bound parameters
            q = sa.select(c.job_key, c.telemetry_sig).where((c.fs == fs) & c.job_key.in_(job_keys[i:i + 500]))
            out += [dict(r) for r in conn.execute(q).mappings()]
    return out


def darshan_without_weather(store: Store, fs: str | None = None) -> tuple[int, list[str]]:
    """(Darshan jobs with a window, the log hashes of those without a weather row (on `fs` when given)),
    in one query on the two tables' indexes instead of both tables in Python."""
    store.require(COMPONENT)
    store.require(jstore.COMPONENT)
    d, w = jstore.jobs.c, job_weather.c
    has = sa.select(w.job_key).where(w.job_key == sa.literal("darshan:") + d.log_hash)
    if fs:
        has = has.where(w.fs == fs)
    windowed = d.start_ns.is_not(None) & d.end_ns.is_not(None)
    with store.connect() as conn:
        n = conn.execute(sa.select(sa.func.count()).select_from(jstore.jobs).where(windowed)).scalar_one()
        new = [r[0] for r in conn.execute(sa.select(d.log_hash).where(windowed, ~sa.exists(has)))]
    return int(n), new


def of_motif(store: Store, fs: str, motif: str) -> list[dict]:
    """The rows of one motif on one file system (the motif index: a job's climate reads only its own motif)."""
    store.require(COMPONENT)
    q = sa.select(job_weather).where((job_weather.c.motif == motif) & (job_weather.c.fs == fs))
    with store.connect() as conn:
        return [_decode(r) for r in conn.execute(q).mappings()]


def set_docs(store: Store, rows: list[dict]) -> None:
    """Replace the documents of existing rows ({job_key, fs, doc}) and nothing else: a verdict kept with
    a weather is not a new weather (computed_ns and the signature stay)."""
    if not rows:
        return
    store.require(COMPONENT)
    c = job_weather.c
    q = job_weather.update().where((c.job_key == sa.bindparam("k")) & (c.fs == sa.bindparam("f"))) \
        .values(doc=sa.bindparam("d"))
    with store.begin() as conn:
        conn.execute(q, [{"k": r["job_key"], "f": r["fs"], "d": to_json(r["doc"])} for r in rows])


def invalidate(store: Store, since_ns: int, until_ns: int) -> int:
    """Mark stale the weather of the jobs that ran in [since, until) (their next refresh recomputes them):
    scheduler jobs imported there change their concurrency, which no telemetry signature sees."""
    store.require(COMPONENT)
    c = job_weather.c
    with store.begin() as conn:
        return conn.execute(job_weather.update().where((c.start_ns < until_ns) & (c.end_ns > since_ns))
                            .values(telemetry_sig="")).rowcount


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
    by_fs: dict[str, list[str]] = {}
    for r in rows:
        by_fs.setdefault(r["fs"], []).append(r["job_key"])
    with store.begin() as conn:
        for fs, keys in by_fs.items():
            for i in range(0, len(keys), 500):  # below every database's limit of bound parameters
                conn.execute(job_weather.delete().where((job_weather.c.fs == fs)
                                                        & job_weather.c.job_key.in_(keys[i:i + 500])))
        conn.execute(job_weather.insert(), [{**r, "doc": to_json(r["doc"]), "computed_ns": now} for r in rows])
