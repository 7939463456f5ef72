"""The store's reads on `why`'s path through Python's `sqlite3` alone, read-only: no SQLAlchemy (issue 40).

`why JOB` read about fifteen rows of five tables (the job's rows, its scheduler job and links, the probe runs,
its weather row and its motif's) through modules that import SQLAlchemy at their top for their tables: ~0.2 s of
imports for a few milliseconds of reads. Here the same reads are the same SQL (what SQLAlchemy compiles for
SQLite, the same columns in the same order, the same Boolean conversion) on a read-only connection in one read
transaction; tests/test_sqlite_reads.py compares every one with the store module's on real stores.

What these reads cannot answer exactly they do not guess: a component of another schema version (or none: the
full door creates it), a probe's samples (an archived day is Parquet, the pieces are built and written) and
every write (a weather row computed on the store's first `why`) raise `Fallback`, and the caller answers again
through the store's usual door (`open_store`). `door(store, component)` hands the module to call: this one's
namespace for a `LightStore`, else the component's own module.
"""

from __future__ import annotations

import importlib
import json
import sqlite3
import time
from pathlib import Path
from types import SimpleNamespace

from ioweather.errors import UserError
from ioweather.stats.darshan_links import exe_name, match_darshan
from ioweather.stats.rules_revision import RULES_REVISION

#: The component versions these reads know (each store module's COMPONENT; tests/test_sqlite_reads.py checks).
VERSIONS = {"darshan": 5, "scheduler": 1, "job_weather": 1, "probe": 6}
#: store.jobs.COMPLETED_COLUMNS: a row lacking one, or whose rules_revision is not RULES_REVISION, is read again by
#: an ingest, so it is not "seen"
COMPLETED_COLUMNS = ("verdict", "findings_json", "why_facts", "rules_revision")
#: The tables' columns in their definitions' order (`SELECT table`'s; the test checks them against SQLAlchemy's).
JOB_COLUMNS = (
    "id", "log_hash", "path", "path_hash", "size_bytes", "mtime_ns", "ingested_ns", "jobid", "uid", "exe", "nprocs",
    "nnodes", "start_ns", "end_ns", "runtime_s", "log_version", "partial_modules", "modules", "bytes_read",
    "bytes_written", "files", "read_time_s", "write_time_s", "meta_time_s", "unique_files", "shared_files",
    "partially_shared_files", "unique_bytes", "shared_bytes", "partially_shared_bytes", "posix_bytes_read",
    "posix_bytes_written", "stdio_bytes_read", "stdio_bytes_written", "mpiio_bytes_read", "mpiio_bytes_written",
    "h5d_bytes_read", "h5d_bytes_written", "pnetcdf_bytes_read", "pnetcdf_bytes_written", "dfs_bytes_read",
    "dfs_bytes_written", "daos_bytes_read", "daos_bytes_written", "agg_perf_by_slowest_mibps", "mibps", "io_time_s",
    "io_fraction", "common_access_bytes", "seq_fraction", "top_file", "finding_codes", "files_part", "verdict",
    "findings_json", "why_facts", "rules_revision")
#: store.jobs.SUMMARY_COLUMNS (`jobs summary`'s columns, services/jobs/archive_light.py), in the same order
SUMMARY_COLUMNS = tuple(c for c in JOB_COLUMNS if c not in (
    "id", "path", "path_hash", "size_bytes", "mtime_ns", "ingested_ns", "start_ns", "end_ns", "log_version",
    "partial_modules", "seq_fraction", "finding_codes", "files_part", "agg_perf_by_slowest_mibps", "runtime_s",
    "jobid", *COMPLETED_COLUMNS))
SCHED_COLUMNS = ("cluster", "jobid", "user", "account", "name", "partition", "start_ns", "end_ns", "nnodes", "ncpus",
                 "nodelist", "state", "exit_code", "source", "imported_ns")
WEATHER_COLUMNS = ("job_key", "fs", "motif", "start_ns", "end_ns", "computed_ns", "telemetry_sig", "doc")
RUN_COLUMNS = ("id", "target", "host", "directory", "started_ns", "interval_s", "block_bytes", "file_bytes",
               "pool_files", "small_bytes", "direct", "fsync", "seed", "timeout_s", "file_exceeds_memory", "pid",
               "version", "fs")
#: probe_runs' Boolean columns: SQLAlchemy hands them as bool, SQLite stores 0/1
RUN_BOOLEANS = ("direct", "fsync", "file_exceeds_memory")
_CHUNK = 500  # below SQLite's bound-parameter limit, as the store modules chunk


class Fallback(Exception):
    """This answer needs the store's usual door (its reason is the message)."""


class AmbiguousJobId(UserError):
    """store.jobs.AmbiguousJobId's twin (that module imports SQLAlchemy): the same message, a UserError."""


def _cols(names) -> str:
    return ", ".join(f'"{c}"' for c in names)


class LightStore:
    """A read-only SQLite store read with `sqlite3` in one read transaction (a snapshot of every read)."""

    is_sqlite = True
    read_only = True

    def __init__(self, path: Path, parquet_dir: Path):
        self.path = Path(path)
        self.url = f"sqlite:///{path}"
        self.parquet_dir = parquet_dir
        # As store/db.py's read-only engine: without a -wal (no writer attached) every committed page is in the
        # main file, read as immutable, so that no -wal or -shm is left behind; with one, mode=ro shares them.
        query = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
        try:
            self.conn = sqlite3.connect(f"{self.path.absolute().as_uri()}?{query}", uri=True, timeout=30.0,
                                        isolation_level=None, check_same_thread=False)
            self.conn.execute("BEGIN")
            has = self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_versions'"
                                    ).fetchone()
            self._versions = dict(self.conn.execute("SELECT component, version FROM schema_versions").fetchall()) \
                if has else {}
        except sqlite3.Error as e:  # the usual door says what is wrong in its words
            raise Fallback(str(e)) from None

    def versions(self) -> dict[str, int]:
        return dict(self._versions)

    def require(self, component: str) -> None:
        """The full door creates a missing component and upgrades an older one: that is a write."""
        have = self._versions.get(component)
        if have != VERSIONS[component]:
            raise Fallback(f"{component} schema v{have}, not v{VERSIONS[component]}")

    def rows(self, sql: str, params=()) -> list[tuple]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise Fallback(str(e)) from None

    def dispose(self) -> None:
        self.conn.close()


def open_light(settings) -> LightStore | None:
    """The store of `settings` read through `sqlite3` when it is the embedded SQLite file, else None."""
    if settings.db_url is not None or not settings.sqlite_path.exists():
        return None
    return LightStore(settings.sqlite_path, settings.parquet_dir)


# ----------------------------------------------------------------------------- store.jobs

def _like_prefix(prefix: str) -> str:
    """SQLAlchemy's `startswith(..., autoescape=True)` parameter (ESCAPE '/')."""
    return prefix.replace("/", "//").replace("%", "/%").replace("_", "/_")


def find_jobs(store: LightStore, ident: str) -> list[dict]:
    store.require("darshan")
    ident = ident.strip().lower()
    where, params = [], []
    if ident.isdigit() and int(ident) < 2**63:
        where.append("jobid = ?")
        params.append(int(ident))
    if len(ident) >= 8 and all(c in "0123456789abcdef" for c in ident):
        where.append("(log_hash LIKE ? || '%' ESCAPE '/')")
        params.append(_like_prefix(ident))
    if not where:
        return []
    rows = store.rows(f"SELECT log_hash, jobid, path FROM darshan_jobs WHERE {' OR '.join(where)} ORDER BY log_hash",
                      params)
    return [dict(zip(("log_hash", "jobid", "path"), r)) for r in rows]


def job_row(store: LightStore, id_prefix: str) -> dict | None:
    store.require("darshan")
    rows = store.rows(f"SELECT {_cols(JOB_COLUMNS)} FROM darshan_jobs WHERE (log_hash LIKE ? || '%' ESCAPE '/') "
                      "LIMIT 2", (_like_prefix(id_prefix),))
    if not rows:
        return None
    if len(rows) > 1:
        raise AmbiguousJobId(f"id {id_prefix} matches several jobs; give more of it")
    return dict(zip(JOB_COLUMNS, rows[0]))


def rows_of(store: LightStore, log_hashes, columns) -> list[dict]:
    store.require("darshan")
    hashes = sorted(set(log_hashes))
    cols = list(dict.fromkeys(["log_hash", *columns]))
    out: list[dict] = []
    for i in range(0, len(hashes), _CHUNK):
        part = hashes[i:i + _CHUNK]
        out.extend(dict(zip(cols, r)) for r in store.rows(
            f"SELECT {_cols(cols)} FROM darshan_jobs WHERE log_hash IN ({', '.join('?' * len(part))}) "
            "ORDER BY log_hash", part))
    return [{c: r[c] for c in columns} for r in out]


def load_jobs(store: LightStore, columns=None):
    # lazy: pandas, loaded only when this runs (as store.jobs.load_jobs)
    import pandas as pd

    store.require("darshan")
    cols = list(columns) if columns else [c for c in JOB_COLUMNS if c != "id"]
    data = store.rows(f"SELECT {', '.join(cols)} FROM darshan_jobs ORDER BY log_hash")
    return pd.DataFrame.from_records(data, columns=cols)


def darshan_job_by_hash(store: LightStore, prefix: str, columns: list[str]) -> dict | None:
    store.require("darshan")
    rows = store.rows(f"SELECT {_cols(columns)} FROM darshan_jobs WHERE log_hash >= ? AND log_hash < ? "
                      "ORDER BY log_hash LIMIT 2", (prefix, prefix + "g"))
    if len(rows) > 1:
        raise AmbiguousJobId(f"id {prefix} matches several jobs; give more of it")
    return dict(zip(columns, rows[0])) if rows else None


def darshan_job_by_jobid(store: LightStore, jobid: int, columns: list[str]) -> dict | None:
    if jobid >= 2**63:
        return None
    store.require("darshan")
    rows = store.rows(f"SELECT {_cols(columns)} FROM darshan_jobs WHERE jobid = ? "
                      "ORDER BY ingested_ns DESC, log_hash LIMIT 1", (jobid,))
    return dict(zip(columns, rows[0])) if rows else None


def seen(store: LightStore) -> tuple[set[str], dict[str, tuple[int, int]]]:
    """store.jobs.seen's answer: (hashes of the jobs stored with every completed column under this code's rules
    (store.jobs._current), {path_hash: (size, mtime_ns)} of those jobs' and the failed logs' paths, a failure's
    over a job's)."""
    store.require("darshan")
    hashes: set[str] = set()
    paths: dict[str, tuple[int, int]] = {}
    current = " AND ".join([*(f"{c} IS NOT NULL" for c in COMPLETED_COLUMNS), "rules_revision = ?"])
    for h, ph, size, mt in store.rows(f"SELECT log_hash, path_hash, size_bytes, mtime_ns FROM darshan_jobs "
                                      f"WHERE {current}", (RULES_REVISION,)):
        hashes.add(h)
        paths[ph] = (size, mt)
    for _h, ph, size, mt in store.rows("SELECT log_hash, path_hash, size_bytes, mtime_ns FROM darshan_failed_logs"):
        paths[ph] = (size, mt)
    return hashes, paths


def seen_stamps(store: LightStore) -> dict[str, tuple[tuple[int, int, int, int], str]]:
    store.require("darshan")
    return {ph: ((dev, ino, size, mt), h) for ph, h, dev, ino, size, mt in store.rows(
        "SELECT path_hash, log_hash, st_dev, st_ino, size_bytes, mtime_ns FROM darshan_seen_files")}


def used_parts(store: LightStore) -> set[str]:
    """The Parquet parts job rows name (what store.jobs.remove_orphan_parts keeps)."""
    store.require("darshan")
    return {r[0] for r in store.rows("SELECT DISTINCT files_part FROM darshan_jobs") if r[0]}


# ----------------------------------------------------------------------------- store.scheduler

def _sched(rows) -> list[dict]:
    return [dict(zip(SCHED_COLUMNS, r)) for r in rows]


def get_job(store: LightStore, jobid: str, cluster: str | None = None) -> dict | None:
    store.require("scheduler")
    sql, params = f"SELECT {_cols(SCHED_COLUMNS)} FROM sched_jobs WHERE jobid = ?", [str(jobid)]
    if cluster is not None:
        sql += " AND cluster = ?"
        params.append(cluster)
    rows = _sched(store.rows(sql + " ORDER BY cluster", params))
    if len(rows) > 1:
        names = ", ".join(repr(r["cluster"]) for r in rows)
        raise UserError(f"job {jobid} exists on several clusters ({names}): name one")
    return rows[0] if rows else None


def jobs_overlapping(store: LightStore, since_ns: int, until_ns: int, cluster: str | None = None) -> list[dict]:
    store.require("scheduler")
    now = time.time_ns()
    overlaps = "(end_ns > ? OR end_ns IS NULL)" if now > since_ns else "end_ns > ?"
    sql, params = f"SELECT {_cols(SCHED_COLUMNS)} FROM sched_jobs WHERE start_ns < ? AND {overlaps}", \
        [until_ns, since_ns]
    if cluster is not None:
        sql += " AND cluster = ?"
        params.append(cluster)
    return _sched(store.rows(sql + " ORDER BY start_ns, cluster, jobid", params))


def link_darshan(store: LightStore, log_hashes=None) -> list[dict]:
    store.require("scheduler")
    store.require("darshan")
    q = "SELECT log_hash, jobid, exe, start_ns, end_ns FROM darshan_jobs"
    names5 = ("log_hash", "jobid", "exe", "start_ns", "end_ns")
    wanted = list(log_hashes) if log_hashes is not None else None
    if wanted is None:
        logs = [dict(zip(names5, r)) for r in store.rows(q + " ORDER BY id")]
    else:
        logs = []
        for i in range(0, len(wanted), _CHUNK):
            part = wanted[i:i + _CHUNK]
            logs += [dict(zip(names5, r)) for r in store.rows(f"{q} WHERE log_hash IN ({', '.join('?' * len(part))})",
                                                              part)]
    ids = sorted({str(x["jobid"]) for x in logs if x["jobid"]})
    by_id = _sched_by(store, "jobid", ids)
    names = sorted({exe_name(x["exe"]) for x in logs if not x["jobid"] and exe_name(x["exe"])})
    by_name = _sched_by(store, "name", names)
    now = time.time_ns()
    return [match_darshan(x, by_id.get(str(x["jobid"]), []) if x["jobid"] else by_name.get(exe_name(x["exe"]), []),
                          now) for x in logs]


def _sched_by(store: LightStore, column: str, values: list[str]) -> dict[str, list[dict]]:
    """{value: the sched_jobs rows whose `column` is it}, asked _CHUNK values at a time."""
    out: dict[str, list[dict]] = {}
    for i in range(0, len(values), _CHUNK):
        part = values[i:i + _CHUNK]
        for r in _sched(store.rows(f"SELECT {_cols(SCHED_COLUMNS)} FROM sched_jobs WHERE {column} IN "
                                   f"({', '.join('?' * len(part))})", part)):
            out.setdefault(r[column], []).append(r)
    return out


def scheduler_job_for_darshan(store: LightStore, log_hash: str) -> dict | None:
    links = link_darshan(store, [log_hash])
    if not links or links[0]["how"] is None:
        return None
    return get_job(store, links[0]["jobid"], links[0]["cluster"])


# ----------------------------------------------------------------------------- store.probe

def runs(store: LightStore, target: str | None = None) -> list[dict]:
    store.require("probe")
    sql, params = f"SELECT {_cols(RUN_COLUMNS)} FROM probe_runs", ()
    if target is not None:
        sql, params = sql + " WHERE target = ?", (target,)
    out = []
    for r in store.rows(sql + " ORDER BY id", params):
        d = dict(zip(RUN_COLUMNS, r))
        for c in RUN_BOOLEANS:
            d[c] = None if d[c] is None else bool(d[c])
        out.append(d)
    return out


def targets(store: LightStore) -> list[str]:
    store.require("probe")
    return [r[0] for r in store.rows("SELECT DISTINCT target FROM probe_runs ORDER BY target")]


def read_samples(store: LightStore, target: str, **_window):
    """A probe's samples: an archived day is a Parquet file, and the events' baselines build and write pieces."""
    raise Fallback(f"the samples of probe {target}")


# ----------------------------------------------------------------------------- store.job_weather

def _decode(row) -> dict:
    out = dict(zip(WEATHER_COLUMNS, row))
    out["doc"] = json.loads(out["doc"])
    return out


def darshan_without_weather(store: LightStore, fs: str | None = None) -> tuple[int, list[str]]:
    store.require("job_weather")
    store.require("darshan")
    windowed = "darshan_jobs.start_ns IS NOT NULL AND darshan_jobs.end_ns IS NOT NULL"
    has, params = "job_weather.job_key = (? || darshan_jobs.log_hash)", ["darshan:"]
    if fs:
        has += " AND job_weather.fs = ?"
        params.append(fs)
    n = store.rows(f"SELECT count(*) AS count_1 FROM darshan_jobs WHERE {windowed}")[0][0]
    new = [r[0] for r in store.rows(f"SELECT darshan_jobs.log_hash FROM darshan_jobs WHERE {windowed} AND NOT "
                                    f"(EXISTS (SELECT job_weather.job_key FROM job_weather WHERE {has}))", params)]
    return int(n), new


def signatures(store: LightStore, fs: str | None = None, motif: str | None = None) -> list[dict]:
    store.require("job_weather")
    cols = ["job_key", "fs", "motif", "start_ns", "end_ns", "telemetry_sig", "computed_ns"]
    where, params = [], []
    if fs:
        where.append("fs = ?")
        params.append(fs)
    if motif is not None:
        where.append("motif = ?")
        params.append(motif)
    sql = f"SELECT {', '.join(cols)} FROM job_weather" + (" WHERE " + " AND ".join(where) if where else "")
    return [dict(zip(cols, r)) for r in store.rows(sql, params)]


def of_motif(store: LightStore, fs: str, motif: str) -> list[dict]:
    store.require("job_weather")
    return [_decode(r) for r in store.rows(f"SELECT {_cols(WEATHER_COLUMNS)} FROM job_weather "
                                           "WHERE motif = ? AND fs = ?", (motif, fs))]


def of_keys(store: LightStore, fs: str, job_keys: list[str]) -> list[dict]:
    store.require("job_weather")
    out = []
    for i in range(0, len(job_keys), _CHUNK):
        part = job_keys[i:i + _CHUNK]
        out += [dict(zip(("job_key", "telemetry_sig"), r)) for r in store.rows(
            f"SELECT job_key, telemetry_sig FROM job_weather WHERE fs = ? AND job_key IN ({', '.join('?' * len(part))})",
            [fs, *part])]
    return out


def put_many(store: LightStore, rows: list[dict]) -> None:
    if rows:
        raise Fallback("new weather rows to store")


def set_docs(store: LightStore, rows: list[dict]) -> None:
    if rows:
        raise Fallback("climates to store")


# ----------------------------------------------------------------------------- the door

def will_write(store, what: str) -> None:
    """Said before work whose end is a write (a job's weather computed to be stored): a `LightStore` stops
    there with `Fallback`, not after the work."""
    if isinstance(store, LightStore):
        raise Fallback(what)


#: What each store module's reads are here, by the module's name.
READS = {
    "jobs": ("find_jobs", "job_row", "rows_of", "load_jobs", "darshan_job_by_hash", "darshan_job_by_jobid"),
    "scheduler": ("get_job", "jobs_overlapping", "link_darshan", "scheduler_job_for_darshan"),
    "probe": ("runs", "targets", "read_samples"),
    "job_weather": ("darshan_without_weather", "signatures", "of_motif", "of_keys", "put_many", "set_docs"),
}
_LIGHT = {name: SimpleNamespace(**{f: globals()[f] for f in fs}) for name, fs in READS.items()}


def door(store, module: str):
    """The module whose reads answer for `store`: this one's for a `LightStore` (a read it lacks is a
    `Fallback`, never a guess), else `ioweather.store.<module>` (SQLAlchemy)."""
    if isinstance(store, LightStore):
        return _Door(_LIGHT[module], module)
    return importlib.import_module(f"ioweather.store.{module}")


class _Door:
    def __init__(self, reads: SimpleNamespace, module: str):
        self._reads, self._module = reads, module

    def __getattr__(self, name: str):
        try:
            return getattr(self._reads, name)
        except AttributeError:
            raise Fallback(f"store.{self._module}.{name} is not read through sqlite3") from None
