"""Scheduler jobs (Slurm's sacct, the NERSC jobs database): one row per (cluster, job id).

A re-import replaces the rows of the same (cluster, jobid), whatever source they came from,
in one transaction; a job still running has `end_ns` NULL until an import sees it end.

Darshan jobs link to scheduler jobs (`link_darshan`) by this rule, first match wins:

1. **job id**: the log's job id (not NULL, not 0) equals a scheduler job id, and the two
   runs overlap (the log within the job, `LINK_SLACK_NS` of clock skew allowed; a job still
   running counts as running until now). Among several such jobs (one per cluster) the
   one whose start is nearest the log's wins, and the link says how many there were.
   An id that matches only jobs at other times (ids are reused) does not link.
2. **time + exe**, only when the log has no job id (NULL or 0): scheduler jobs whose run
   contains the log's run (same slack) and whose name is the executable's file name
   (the first word of the log's exe, without its directory). Among several, the shortest
   job wins (the tightest fit), and the link says how many there were.
3. Otherwise the log is unlinked, with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import sqlalchemy as sa

from ioweather.errors import UserError
from ioweather.stats.darshan_links import exe_name, LINK_SLACK_NS, match_darshan  # noqa: F401 (re-exported)
from ioweather.store import jobs as darshan
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables

metadata = sa.MetaData()

sched_jobs = sa.Table(
    "sched_jobs", metadata,
    # String(255), not Text: MariaDB cannot put a TEXT column in a primary key
    sa.Column("cluster", sa.String(255), primary_key=True, nullable=False),
    sa.Column("jobid", sa.String(255), primary_key=True, nullable=False),
    sa.Column("user", sa.Text),
    sa.Column("account", sa.Text),
    sa.Column("name", sa.Text),
    sa.Column("partition", sa.Text),
    sa.Column("start_ns", sa.BigInteger, nullable=False),
    sa.Column("end_ns", sa.BigInteger),
    sa.Column("nnodes", sa.Integer),
    sa.Column("ncpus", sa.Integer),
    sa.Column("nodelist", sa.Text),
    sa.Column("state", sa.Text),
    sa.Column("exit_code", sa.Text),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("imported_ns", sa.BigInteger, nullable=False),
)
sa.Index("sched_jobs_start", sched_jobs.c.start_ns)
sa.Index("sched_jobs_jobid", sched_jobs.c.jobid)

COMPONENT = Component("scheduler", [create_tables(sched_jobs)])

COLUMNS = [c.name for c in sched_jobs.columns]
_CHUNK = 500  # below SQLite's bound-parameter limit


def replace_jobs(store: Store, rows: Sequence[dict], source: str) -> int:
    """Store `rows` (keys of `sched_jobs` but source/imported_ns) from `source`, replacing stored rows
    of the same (cluster, jobid), in one transaction. Returns how many stored rows were replaced."""
    store.require(COMPONENT)
    now = time.time_ns()
    values = [{**{c: r.get(c) for c in COLUMNS}, "cluster": r.get("cluster") or "", "source": source,
               "imported_ns": now} for r in rows]
    by_cluster: dict[str, list[str]] = {}
    for v in values:
        by_cluster.setdefault(v["cluster"], []).append(v["jobid"])
    replaced = 0
    with store.begin() as conn:
        for cluster, ids in by_cluster.items():
            for i in range(0, len(ids), _CHUNK):
                replaced += conn.execute(sched_jobs.delete().where(
                    sched_jobs.c.cluster == cluster, sched_jobs.c.jobid.in_(ids[i:i + _CHUNK]))).rowcount
        for i in range(0, len(values), _CHUNK):
            conn.execute(sched_jobs.insert(), values[i:i + _CHUNK])
    return replaced


def get_job(store: Store, jobid: str, cluster: str | None = None) -> dict | None:
    """The job `jobid` (of `cluster` when given); UserError when several clusters have that id."""
    store.require(COMPONENT)
    q = sa.select(sched_jobs).where(sched_jobs.c.jobid == str(jobid))
    if cluster is not None:
        q = q.where(sched_jobs.c.cluster == cluster)
    with store.connect() as conn:
        rows = [dict(r) for r in conn.execute(q.order_by(sched_jobs.c.cluster)).mappings()]
    if len(rows) > 1:
        names = ", ".join(repr(r["cluster"]) for r in rows)
        raise UserError(f"job {jobid} exists on several clusters ({names}): name one")
    return rows[0] if rows else None


def jobs_overlapping(store: Store, since_ns: int, until_ns: int, cluster: str | None = None) -> list[dict]:
    """Jobs running at any moment of [since, until); a job with no end counts as running until now."""
    store.require(COMPONENT)
    now = time.time_ns()
    c = sched_jobs.c
    overlaps = sa.or_(c.end_ns > since_ns, c.end_ns.is_(None)) if now > since_ns else c.end_ns > since_ns
    q = sa.select(sched_jobs).where(c.start_ns < until_ns, overlaps)
    if cluster is not None:
        q = q.where(c.cluster == cluster)
    with store.connect() as conn:
        return [dict(r) for r in conn.execute(q.order_by(c.start_ns, c.cluster, c.jobid)).mappings()]


def count(store: Store) -> int:
    store.require(COMPONENT)
    with store.connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(sched_jobs)).scalar_one())


# -- Darshan links -------------------------------------------------------------------------------
def link_darshan(store: Store, log_hashes: Iterable[str] | None = None) -> list[dict]:
    """For each Darshan job (or those of `log_hashes`): {log_hash, darshan_jobid, exe, cluster, jobid,
    how ("jobid", "time+exe" or None), candidates, reason}. The rule is in this module's docstring."""
    store.require(COMPONENT)
    store.require(darshan.COMPONENT)
    d = darshan.jobs.c
    q = sa.select(d.log_hash, d.jobid, d.exe, d.start_ns, d.end_ns)
    wanted = list(log_hashes) if log_hashes is not None else None
    with store.connect() as conn:
        if wanted is None:
            logs = [dict(r) for r in conn.execute(q.order_by(d.id)).mappings()]
        else:
            logs = []
            for i in range(0, len(wanted), _CHUNK):
                logs += [dict(r) for r in conn.execute(q.where(d.log_hash.in_(wanted[i:i + _CHUNK]))).mappings()]
        ids = sorted({str(x["jobid"]) for x in logs if x["jobid"]})
        by_id: dict[str, list[dict]] = {}
        for i in range(0, len(ids), _CHUNK):
            for r in conn.execute(sa.select(sched_jobs).where(sched_jobs.c.jobid.in_(ids[i:i + _CHUNK]))).mappings():
                by_id.setdefault(r["jobid"], []).append(dict(r))
        names = sorted({exe_name(x["exe"]) for x in logs if not x["jobid"] and exe_name(x["exe"])})
        by_name: dict[str, list[dict]] = {}
        for i in range(0, len(names), _CHUNK):
            for r in conn.execute(sa.select(sched_jobs).where(sched_jobs.c.name.in_(names[i:i + _CHUNK]))).mappings():
                by_name.setdefault(r["name"], []).append(dict(r))
    now = time.time_ns()
    return [match_darshan(x, by_id.get(str(x["jobid"]), []) if x["jobid"] else by_name.get(exe_name(x["exe"]), []),
                          now) for x in logs]


def scheduler_job_for_darshan(store: Store, log_hash: str) -> dict | None:
    """The scheduler job a Darshan log links to (the full `sched_jobs` row), or None."""
    links = link_darshan(store, [log_hash])
    if not links or links[0]["how"] is None:
        return None
    return get_job(store, links[0]["jobid"], links[0]["cluster"])


def change_marker(store: Store) -> tuple[int, ...]:
    """Changes when jobs are added or a running job ends (rows are replaced by the scheduler's newer ones)."""
    store.require(COMPONENT)
    c = sched_jobs.c
    with store.connect() as conn:
        row = conn.execute(sa.select(sa.func.count(), sa.func.count(c.end_ns), sa.func.max(c.start_ns),
                                     sa.func.max(c.end_ns), sa.func.sum(c.end_ns % 1_000_003))).one()
    return tuple(int(x or 0) for x in row)
