"""Per-target reductions of the telemetry store for the admin's pages (servers, metadata, capacity, talkers).

`telemetry_query` sums over targets (the file system's aggregate); these queries keep the target:
amounts per (metric, target, time bin), the last gauge reading per bin, job_stats totals per job.
Nothing returns raw rows: the bin is chosen by the caller (the page's pixel resolution).

Target rollups. 30 days x 500 targets at 5 s is ~5 x 10^8 byte rows, too many to scan per page
view. Beside each data file, `date=<D>/_targets/<same name>` holds its per-target sums of the
amount metrics (AMOUNT_METRICS and md_*) per 5-minute bucket: metric, target, bucket, amount
(sum of valid values), n (their count) and top_bps (the largest value / interval_s). They combine
exactly (sums, counts, maxima), so any bin that is a whole number of 5 minutes is read from them:
~8,600 rows per target and month instead of ~520,000. Like `telemetry_rollup`, a data file is
immutable, so its target rollup never goes stale; it is built on the first read that wants it
(pages, `bench_servers`), and ignored when its data file is gone (compaction, re-import).
Files straddling the asked range, a bin that is not a multiple of 5 minutes, or a read-only
store go through the rows instead: both ways give the same numbers.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.store import telemetry_layout as layout
from ioweather.store.telemetry_layout import files_scan
from ioweather.store.telemetry_query import footer_summary  # noqa: F401  (re-exported for services)
from ioweather.store.telemetry_rollup import VALID

BUCKET_NS = 300_000_000_000
AMOUNT_METRICS = ("read_bytes", "write_bytes", "read_ops", "write_ops")
VERSION = b"1"
_DIR = "_targets"
_SAFE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_ROLLED = f"(metric IN ({', '.join(repr(m) for m in AMOUNT_METRICS)}) OR metric LIKE 'md\\_%' ESCAPE '\\')"

SCHEMA = pa.schema([("metric", pa.string()), ("target", pa.string()), ("bucket", pa.int64()),
                    ("amount", pa.float64()), ("n", pa.int64()), ("top_bps", pa.float64())])


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


def rollup_path(data_path: Path) -> Path:
    data_path = Path(data_path)
    return data_path.parent / _DIR / data_path.name


def build(data_path: Path) -> Path:
    """Write the target rollup of one data file (temporary name, then rename)."""
    con = layout.connect_duckdb()
    try:
        scan = files_scan([data_path])
        rows = con.sql(f"""
            SELECT metric, target, time_ns // {BUCKET_NS} AS bucket, sum(value) AS amount, count(*) AS n,
                   max(value / interval_s) AS top_bps
            FROM {scan} WHERE {_ROLLED} AND {VALID} GROUP BY ALL""").to_arrow_table()
        first, last = con.execute(f"SELECT min(time_ns), max(time_ns) FROM {scan} WHERE {_ROLLED}").fetchone()
    finally:
        con.close()
    meta = {b"ioweather.targets": VERSION, b"first_ns": b"" if first is None else str(first).encode(),
            b"last_ns": b"" if last is None else str(last).encode()}
    out = rollup_path(data_path)
    out.parent.mkdir(exist_ok=True, mode=0o700)
    tmp = out.parent / f".{out.name}.tmp"
    try:
        pq.write_table(rows.cast(SCHEMA).replace_schema_metadata(meta), tmp, compression="zstd")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def read_range(path: Path) -> tuple[int | None, int | None] | None:
    """(first_ns, last_ns) of the rolled metrics in a target rollup's data file; None when unusable."""
    try:
        meta = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowException):
        return None
    if meta.get(b"ioweather.targets") != VERSION:
        return None
    first, last = meta.get(b"first_ns", b""), meta.get(b"last_ns", b"")
    return (int(first) if first else None, int(last) if last else None)


def plan(base: Path, since_ns: int | None, until_ns: int | None, step_ns: int) -> tuple[list[Path], list[Path]]:
    """(files read through their target rollups, files read row by row) for [since, until)."""
    files = layout.data_files(base, since_ns, until_ns)
    if step_ns % BUCKET_NS:
        return [], files
    rolled, raw = [], []
    for f in files:
        r = read_range(rollup_path(f))
        if r is None:
            try:
                build(f)
            except (OSError, ValueError, pa.ArrowException):
                pass  # read-only store, a file replaced meanwhile: read its rows
            r = read_range(rollup_path(f))
        inside = r is not None and (r[0] is None or ((since_ns is None or r[0] >= since_ns)
                                                     and (until_ns is None or r[1] < until_ns)))
        (rolled if inside else raw).append(f)
    return rolled, raw


def target_bins(settings, fs: str, since_ns: int | None, until_ns: int | None, step_ns: int,
                metrics=(), prefix: str | None = None, target: str | None = None) -> pd.DataFrame:
    """Amount metrics per (metric, target, bin = time_ns // step_ns): amount (sum of valid values),
    n (their count) and top_bps (largest single value / its interval). Missing values count nowhere."""
    base = layout.fs_dir(settings, fs)
    want = _metric_sql(metrics, prefix)
    tsql = "TRUE" if target is None else "target = ?"
    args = [] if target is None else [target]
    rollable = all(m in AMOUNT_METRICS or m.startswith("md_") for m in metrics) and \
        (prefix is None or prefix.startswith("md_")) and (metrics or prefix)
    rolled, raw = plan(base, since_ns, until_ns, step_ns) if rollable else ([], layout.data_files(base, since_ns, until_ns))
    parts, params = [], []
    if rolled:
        parts.append(f"""SELECT metric, target, bucket // {step_ns // BUCKET_NS} AS bin, sum(amount) AS amount,
                                sum(n) AS n, max(top_bps) AS top_bps
                         FROM {files_scan([rollup_path(f) for f in rolled])} WHERE {want} AND {tsql} GROUP BY ALL""")
        params += args
    if raw:
        parts.append(f"""SELECT metric, target, time_ns // {step_ns} AS bin, sum(value) AS amount, count(*) AS n,
                                max(value / interval_s) AS top_bps
                         FROM {files_scan(raw)} WHERE {want} AND {tsql} AND {VALID} AND {_time_sql(since_ns, until_ns)}
                         GROUP BY ALL""")
        params += args
    if not parts:
        return pd.DataFrame({"metric": [], "target": [], "bin": [], "amount": [], "n": [], "top_bps": []})
    sql = " UNION ALL ".join(parts)
    if len(parts) > 1:  # a bin can have rows in a rolled file and in a straddling one
        sql = f"""SELECT metric, target, bin, sum(amount) AS amount, sum(n) AS n, max(top_bps) AS top_bps
                  FROM ({sql}) GROUP BY ALL"""
    con = layout.connect_duckdb()
    try:
        return con.execute(sql, params).df()
    finally:
        con.close()


def gauge_bins(settings, fs: str, since_ns: int | None, until_ns: int | None, step_ns: int,
               metrics=(), prefix: str | None = None) -> pd.DataFrame:
    """Gauges per (metric, target, bin): the last valid reading in the bin (value) and its time_ns."""
    files = layout.data_files(layout.fs_dir(settings, fs), since_ns, until_ns)
    if not files:
        return pd.DataFrame({"metric": [], "target": [], "bin": [], "value": [], "time_ns": []})
    con = layout.connect_duckdb()
    try:
        return con.execute(f"""
            SELECT metric, target, time_ns // {int(step_ns)} AS bin, arg_max(value, time_ns) AS value,
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


def known_jobs(store, jobids: list[int]) -> dict[str, dict]:
    """{job id: {"user": scheduler's user or None, "job_url": "/job?id=<hash>" or None}} for the numeric
    job ids that the Darshan or scheduler tables know; tables that do not exist are not created."""
    import sqlalchemy as sa

    from ioweather.store import jobs as darshan
    from ioweather.store import scheduler as sched

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
