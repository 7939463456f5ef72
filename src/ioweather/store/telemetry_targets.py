"""Per-target reductions of the telemetry store for the admin's pages (servers, metadata, capacity, talkers).

`telemetry_query` sums over targets (the file system's aggregate); these queries keep the target:
amounts per (metric, target, time bin), the last gauge reading per bin, job_stats totals per job.
Nothing returns raw rows: the bin is chosen by the caller (the page's pixel resolution).

The per-target rollups these queries read where they can are store/telemetry_target_rollups.py's.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ioweather.store import telemetry_layout as layout
from ioweather.store.parquet_scan import files_scan
from ioweather.store.telemetry_query import footer_summary  # noqa: F401  (re-exported for services)
from ioweather.store.telemetry_rollup import VALID
from ioweather.store.telemetry_target_rollups import AMOUNT_METRICS, BUCKET_NS, build, HOUR_NS, LEVELS, read_range, rollup_path

_SAFE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@contextmanager
def _connection(con=None):
    """`con` when the caller shares one (a page's several queries: a connection costs ~0.1 s under
    load), else a fresh one closed after use."""
    if con is not None:
        yield con
        return
    con = layout.connect_duckdb()
    try:
        yield con
    finally:
        con.close()


def _metric_sql(metrics=(), prefix: str | None = None) -> str:
    """A filter on metric names; names and prefixes come from code, checked anyway since they reach SQL."""
    parts = []
    for m in metrics:
        if not _SAFE.match(m):
            raise ValueError(f"bad metric name {m!r}")
    if metrics:
        parts.append(f"metric IN ({', '.join(repr(m) for m in metrics)})")
    if prefix is not None:
        if not _SAFE.match(prefix):
            raise ValueError(f"bad metric prefix {prefix!r}")
        parts.append(f"starts_with(metric, '{prefix}')")
    return "(" + " OR ".join(parts) + ")" if parts else "TRUE"


def _time_sql(since_ns: int | None, until_ns: int | None) -> str:
    parts = []
    if since_ns is not None:
        parts.append(f"time_ns >= {int(since_ns)}")
    if until_ns is not None:
        parts.append(f"time_ns < {int(until_ns)}")
    return " AND ".join(parts) or "TRUE"


def level_for(step_ns: int) -> int | None:
    """The coarsest rollup level that divides `step_ns` (None: none does, read the rows)."""
    fits = [level for level in LEVELS if step_ns % level == 0]
    return fits[-1] if fits else None


def plan(base: Path, since_ns: int | None, until_ns: int | None, step_ns: int) -> tuple[int, list[Path], list[Path]]:
    """(the rollup level, files read through their target rollups, files read row by row) for [since, until)."""
    files = layout.data_files(base, since_ns, until_ns)
    level = level_for(step_ns)
    if level is None:
        return BUCKET_NS, [], files
    rolled, raw = [], []
    for f in files:
        r = read_range(rollup_path(f)) if rollup_path(f, level).exists() else None
        if r is None:
            try:
                build(f)
            except (OSError, ValueError, pa.ArrowException, duckdb_error()):
                pass  # read-only store, a file replaced meanwhile: read its rows
            r = read_range(rollup_path(f)) if rollup_path(f, level).exists() else None
        inside = r is not None and (r[0] is None or ((since_ns is None or r[0] >= since_ns)
                                                     and (until_ns is None or r[1] < until_ns)))
        (rolled if inside else raw).append(f)
    return level, rolled, raw


def duckdb_error():
    # lazy: duckdb (~0.1 s): only to name its error class, when a scan failed
    import duckdb

    return duckdb.Error


def _bins_sql(settings, fs: str, since_ns: int | None, until_ns: int | None, step_ns: int, metrics=(),
              prefix: str | None = None, target: str | None = None, names_only: bool = False,
              by_metric: bool = True, planned=None) -> tuple[str | None, list]:
    """The query of amounts per (metric, target, bin) and its parameters (with `names_only`: of the
    distinct targets; without `by_metric`: per (target, bin), for a caller that asked for one metric
    and need not group by its name on every row); None when there are no files."""
    base = layout.fs_dir(settings, fs)
    want = _metric_sql(metrics, prefix)
    tsql = "TRUE" if target is None else "target = ?"
    args = [] if target is None else [target]
    rollable = all(m in AMOUNT_METRICS or m.startswith("md_") for m in metrics) and \
        (prefix is None or prefix.startswith("md_")) and (metrics or prefix)
    if planned is not None:  # the caller's plan of the same window and bin (several metrics, one listing)
        level, rolled, raw = planned
    elif rollable:
        level, rolled, raw = plan(base, since_ns, until_ns, step_ns)
    else:
        level, rolled, raw = BUCKET_NS, [], layout.data_files(base, since_ns, until_ns)
    parts, params = [], []
    mcol = "metric, " if by_metric else ""
    if rolled:
        scan = files_scan([rollup_path(f, level) for f in rolled])
        parts.append(f"SELECT DISTINCT target FROM {scan} WHERE {want} AND {tsql}" if names_only else
                     f"""SELECT {mcol}target, bucket // {step_ns // level} AS bin, sum(amount) AS amount,
                                sum(n) AS n, max(top_bps) AS top_bps
                         FROM {scan} WHERE {want} AND {tsql} GROUP BY ALL""")
        params += args
    if raw:
        where = f"{want} AND {tsql} AND {VALID} AND {_time_sql(since_ns, until_ns)}"
        parts.append(f"SELECT DISTINCT target FROM {files_scan(raw)} WHERE {where}" if names_only else
                     f"""SELECT {mcol}target, time_ns // {step_ns} AS bin, sum(value) AS amount, count(*) AS n,
                                max(value / interval_s) AS top_bps
                         FROM {files_scan(raw)} WHERE {where} GROUP BY ALL""")
        params += args
    if not parts:
        return None, []
    if names_only:
        return " UNION ".join(parts), params
    sql = " UNION ALL ".join(parts)
    if len(parts) > 1:  # a bin can have rows in a rolled file and in a straddling one
        sql = f"""SELECT {mcol}target, bin, sum(amount) AS amount, sum(n) AS n, max(top_bps) AS top_bps
                  FROM ({sql}) GROUP BY ALL"""
    return sql, params


def target_bins(settings, fs: str, since_ns: int | None, until_ns: int | None, step_ns: int,
                metrics=(), prefix: str | None = None, target: str | None = None) -> pd.DataFrame:
    """Amount metrics per (metric, target, bin = time_ns // step_ns): amount (sum of valid values),
    n (their count) and top_bps (largest single value / its interval). Missing values count nowhere."""
    sql, params = _bins_sql(settings, fs, since_ns, until_ns, step_ns, metrics, prefix, target)
    if sql is None:
        return pd.DataFrame({"metric": [], "target": [], "bin": [], "amount": [], "n": [], "top_bps": []})
    con = layout.connect_duckdb()
    try:
        return con.execute(sql, params).df()
    finally:
        con.close()


def sample_peaks(settings, fs: str, since_ns: int | None, until_ns: int | None, prefix: str) -> dict[str | None, float]:
    """The highest rate of the samples over [since, until), summed over targets at each reading time:
    {metric: its peak, None: the peak of all the metrics together}. What a page shows as its peak when
    its columns are wider than the samples: a rollup's top_bps is one target's and one metric's, and the
    peak of a sum is not the sum (nor the largest) of their peaks, so this reads the rows."""
    files = layout.data_files(layout.fs_dir(settings, fs), since_ns, until_ns)
    if not files:
        return {}
    where = f"{_metric_sql(prefix=prefix)} AND {VALID} AND {_time_sql(since_ns, until_ns)}"
    sql = f"""SELECT metric, max(rate) AS peak FROM (
                  SELECT metric, time_ns, sum(value / interval_s) AS rate FROM {files_scan(files)}
                  WHERE {where} GROUP BY GROUPING SETS ((metric, time_ns), (time_ns)))
              GROUP BY metric"""
    with _connection() as con:
        return {m: float(v) for m, v in con.execute(sql).fetchall()}


def count_targets(settings, fs: str, since_ns: int, until_ns: int, metrics, con=None) -> int:
    """How many targets have rows of `metrics` in [since, until): from the hourly rollups (the rows
    of files without one), so that a page can size its bins before it reads them."""
    sql, params = _bins_sql(settings, fs, since_ns, until_ns, HOUR_NS, metrics, names_only=True)
    if sql is None:
        return 0
    with _connection(con) as con:
        return int(con.execute(f"SELECT count(*) FROM ({sql})", params).fetchall()[0][0])


def target_cells(settings, fs: str, since_ns: int, until_ns: int, step_ns: int, metrics, con=None) -> dict:
    """What `target_bins` gives for `metrics`, as numpy columns for a targets x bins matrix:
    `targets` (sorted names), `target` (index into them), `metric` (index into `metrics`), `bin`,
    `amount`, `top_bps`. A month of 500 targets is ~10^5 cells: the names travel once, not per cell
    (a DataFrame of per-cell strings cost more than the query). One query per metric: `metric = '...'`
    is pushed into the Parquet reader, a list of metrics compares strings on every row (3x the CPU)."""
    tables, codes = [], []
    planned = plan(layout.fs_dir(settings, fs), since_ns, until_ns, step_ns)
    with _connection(con) as con:
        for i, m in enumerate(metrics):
            sql, params = _bins_sql(settings, fs, since_ns, until_ns, step_ns, (m,), by_metric=False,
                                    planned=planned if m in AMOUNT_METRICS or m.startswith("md_") else None)
            if sql is not None:
                tables.append(con.sql(sql, params=params).to_arrow_table())
                codes.append(np.full(tables[-1].num_rows, i, np.int64))
    t = pa.concat_tables(tables) if tables else None
    if t is None or t.num_rows == 0:
        return {"targets": [], "target": np.zeros(0, np.int64), "metric": np.zeros(0, np.int64),
                "bin": np.zeros(0, np.int64), "amount": np.zeros(0), "top_bps": np.zeros(0)}
    names = pc.dictionary_encode(t["target"].combine_chunks())
    labels = names.dictionary.to_pylist()
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels), np.int64)
    rank[order] = np.arange(len(labels))
    return {"targets": [labels[i] for i in order], "target": rank[names.indices.to_numpy(zero_copy_only=False)],
            "metric": np.concatenate(codes),
            "bin": t["bin"].to_numpy().astype(np.int64, copy=False), "amount": t["amount"].to_numpy(),
            "top_bps": t["top_bps"].to_numpy()}


def gauge_bins(settings, fs: str, since_ns: int | None, until_ns: int | None, step_ns: int,
               metrics=(), prefix: str | None = None) -> pd.DataFrame:
    """Gauges per (metric, target, bin): the last valid reading in the bin (value) and its time_ns. Of two
    readings at the same instant (an LMT sample and an `lfs df` at 00:05) the snapshot's (no interval)
    wins: a tie left to the scan order gave a fullness of 67.4 % or 72.4 % from one run to the next."""
    files = layout.data_files(layout.fs_dir(settings, fs), since_ns, until_ns)
    if not files:
        return pd.DataFrame({"metric": [], "target": [], "bin": [], "value": [], "time_ns": []})
    con = layout.connect_duckdb()
    try:
        return con.execute(f"""
            SELECT metric, target, time_ns // {int(step_ns)} AS bin,
                   arg_max(value, time_ns * 2 + CASE WHEN interval_s IS NULL THEN 1 ELSE 0 END) AS value,
                   max(time_ns) AS time_ns
            FROM {files_scan(files)}
            WHERE {_metric_sql(metrics, prefix)} AND {VALID} AND {_time_sql(since_ns, until_ns)}
            GROUP BY ALL""").df()
    finally:
        con.close()


def last_before(settings, fs: str, until_ns: int | None, metrics=(), prefix: str | None = None) -> pd.DataFrame:
    """The latest row (any value, NaN included) of each (metric, target) before `until`: metric, target,
    value, time_ns. For states that must be shown as they were last seen."""
    files = layout.data_files(layout.fs_dir(settings, fs), None, until_ns)
    if not files:
        return pd.DataFrame({"metric": [], "target": [], "value": [], "time_ns": []})
    con = layout.connect_duckdb()
    try:
        return con.execute(f"""
            SELECT metric, target, arg_max(value, time_ns) AS value, max(time_ns) AS time_ns
            FROM {files_scan(files)} WHERE {_metric_sql(metrics, prefix)} AND {_time_sql(None, until_ns)}
            GROUP BY ALL""").df()
    finally:
        con.close()


def job_totals(settings, fs: str, since_ns: int | None, until_ns: int | None) -> pd.DataFrame:
    """Lustre job_stats amounts over [since, until) per (job id, metric): amount, n, targets.
    The job id is what follows the first '/' of the target ("<OST or MDT>/<job id>")."""
    files = layout.data_files(layout.fs_dir(settings, fs), since_ns, until_ns)
    if not files:
        return pd.DataFrame({"job": [], "metric": [], "amount": [], "n": [], "targets": []})
    con = layout.connect_duckdb()
    try:
        return con.execute(f"""
            SELECT substr(target, strpos(target, '/') + 1) AS job, metric, sum(value) AS amount, count(*) AS n,
                   count(DISTINCT split_part(target, '/', 1)) AS targets
            FROM {files_scan(files)}
            WHERE starts_with(metric, 'job_') AND strpos(target, '/') > 0 AND {VALID}
              AND {_time_sql(since_ns, until_ns)}
            GROUP BY ALL""").df()
    finally:
        con.close()


def extent(settings, fs: str, prefix: str | None = None, metrics=()) -> tuple[int | None, int | None]:
    """First and last interval start of the given metrics (a scan of one column pair; for short
    datasets and error messages), or of every metric from the footers when none is given."""
    files = layout.data_files(layout.fs_dir(settings, fs))
    if not files:
        return None, None
    con = layout.connect_duckdb()
    try:
        if not metrics and prefix is None:
            f = footer_summary(con, files)
            return f["first_ns"], f["last_ns"]
        row = con.execute(f"SELECT min(time_ns), max(time_ns) FROM {files_scan(files)} "
                          f"WHERE {_metric_sql(metrics, prefix)}").fetchone()
    finally:
        con.close()
    return (None, None) if row is None or row[0] is None else (int(row[0]), int(row[1]))


def spans(settings, fs: str, kinds: dict[str, tuple[tuple[str, ...], str | None]],
          since_ns: int | None = None, until_ns: int | None = None) -> dict[str, tuple[int, int, int]]:
    """Per kind (a name for `(metrics, prefix)`): the first interval start, the end of the last interval
    and the number of valid rows, of the kinds that have any (one scan of the metric and time columns).
    A gauge reading has no interval: it counts as one second, so a single snapshot still makes a window."""
    files = layout.data_files(layout.fs_dir(settings, fs), since_ns, until_ns)
    if not files or not kinds:
        return {}
    cases = " ".join(f"WHEN {_metric_sql(*kinds[k])} THEN '{k}'" for k in kinds if _SAFE.match(k))

    def scan(files):
        con = layout.connect_duckdb()
        try:
            return con.execute(f"""
                SELECT kind, min(time_ns), max(time_ns + CAST(greatest(coalesce(interval_s, 0), 1) * 1e9 AS BIGINT)),
                       count(*)
                FROM (SELECT CASE {cases} END AS kind, time_ns, interval_s FROM {files_scan(files)}
                      WHERE {VALID} AND {_time_sql(since_ns, until_ns)})
                WHERE kind IS NOT NULL GROUP BY kind""").fetchall()
        finally:
            con.close()

    try:
        rows = scan(files)
    except Exception:  # a damaged file (store check --repair sets it aside): the span of the readable ones
        bad = set(layout.unreadable(files))
        if not bad:
            raise
        files = [f for f in files if f not in bad]
        rows = scan(files) if files else []
    return {k: (int(a), int(b), int(n)) for k, a, b, n in rows}


def known_jobs(store, jobids: list[int]) -> dict[str, dict]:
    """{job id: {"user": scheduler's user or None, "job_url": "/job?id=<hash>" or None}} for the numeric
    job ids that the Darshan or scheduler tables know; tables that do not exist are not created."""
    # lazy: sqlalchemy: the job_stats pages ask this; `why`'s events (store/sqlite_reads.py) import this module, not it
    import sqlalchemy as sa

    # lazy: sqlalchemy via the tables, as above
    from ioweather.store import jobs as darshan, scheduler as sched

    versions = store.versions()
    out: dict[str, dict] = {}
    with store.connect() as conn:
        for i in range(0, len(jobids), 500):
            chunk = jobids[i:i + 500]
            if sched.COMPONENT.name in versions:
                q = sa.select(sched.sched_jobs.c.jobid, sched.sched_jobs.c.user).where(
                    sched.sched_jobs.c.jobid.in_([str(j) for j in chunk]))
                for jobid, user in conn.execute(q):
                    out.setdefault(str(jobid), {"user": None, "job_url": None})["user"] = user
            if darshan.COMPONENT.name in versions:
                q = sa.select(darshan.jobs.c.jobid, darshan.jobs.c.log_hash).where(darshan.jobs.c.jobid.in_(chunk))
                for jobid, h in conn.execute(q.order_by(darshan.jobs.c.id)):
                    out.setdefault(str(jobid), {"user": None, "job_url": None})["job_url"] = f"/job?id={h[:16]}"
    return out
