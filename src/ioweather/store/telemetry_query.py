"""The DuckDB reductions behind `ioweather workload`: raw telemetry rows in, small tables out.

A year of 5-second samples for 100 targets is over a billion rows in the long layout
(`telemetry_layout`), so nothing here fetches raw rows: each query scans the Parquet
files once, in parallel, and returns per-interval or per-bin sums that fit in memory
(about half a million rows for a year at 60 s). `ioweather.stats.workload` does the rest.

A value is *valid* when it is a finite, non-negative number; NaN (a counter reset,
a failed read) and NULL are missing. DuckDB orders NaN above every number, so the one
range predicate below excludes NaN, NULL, infinities and negatives alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

BYTES_METRICS = ("read_bytes", "write_bytes")
DAY_NS = 86_400_000_000_000
_VALID = "value BETWEEN 0 AND 1.7976931348623157e308"


def configure(con, memory_limit: str = "4GB") -> None:
    """Bounded memory (the benchmark's budget is 8 GB RSS) and no ordering work we do not need."""
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET preserve_insertion_order = false")


def _where(since_ns: int | None, until_ns: int | None, metric: str | None = None) -> str:
    parts = [_VALID]
    if metric is not None:
        parts.append(f"metric = '{metric}'")  # one equality is pushed into the Parquet reader: cheap
    if since_ns is not None:
        parts.append(f"time_ns >= {int(since_ns)}")
    if until_ns is not None:
        parts.append(f"time_ns < {int(until_ns)}")
    return " AND ".join(parts)


def footer_summary(con, pattern: str) -> dict:
    """First and last interval start and the shortest interval, from the Parquet footers alone
    (no data is read; all metrics together): enough to refuse a hopeless request at once."""
    rows = con.execute(
        "SELECT path_in_schema, min(TRY_CAST(stats_min_value AS DOUBLE)), max(TRY_CAST(stats_max_value AS DOUBLE)) "
        "FROM parquet_metadata(?) WHERE path_in_schema IN ('time_ns', 'interval_s') GROUP BY ALL", [pattern]).fetchall()
    stats = {name: (lo, hi) for name, lo, hi in rows}
    t = stats.get("time_ns", (None, None))
    return {"first_ns": None if t[0] is None else int(t[0]), "last_ns": None if t[1] is None else int(t[1]),
            "min_interval_s": stats.get("interval_s", (None, None))[0]}


@dataclass
class IntervalSums:
    """Bytes per resample interval, summed over targets (valid values only).

    series: metric, bin (time_ns // step_ns), bytes, top (largest single value in the interval)
    daily:  metric, day (UTC days since the epoch), bytes — only when step_ns does not divide a day
            (otherwise days are sums of bins and the query does not group by day)
    """

    step_ns: int
    series: pd.DataFrame
    daily: pd.DataFrame | None


def interval_sums(con, scan: str, step_ns: int, since_ns: int | None = None, until_ns: int | None = None) -> IntervalSums:
    """One scan per metric, each grouping by an integer interval number.

    A row's whole value is attributed to the interval its start falls in (decided: rows
    longer than the resample interval, e.g. after a gap, are not spread over it).
    Measured (docs/benchmarks/workload.md): a query per metric with `metric = '...'` is
    pushed into the Parquet reader and groups by an integer; one query over both metrics
    compares strings on every row and, with GROUPING SETS, DuckDB ran it on one core.
    """
    step_ns = int(step_ns)
    by_day = DAY_NS % step_ns != 0
    day_col = f", time_ns // {DAY_NS} AS day" if by_day else ""
    series, daily = [], []
    for m in BYTES_METRICS:
        df = con.execute(f"""
            SELECT time_ns // {step_ns} AS bin{day_col}, sum(value) AS bytes, max(value) AS top
            FROM {scan} WHERE {_where(since_ns, until_ns, m)} GROUP BY ALL""").df()
        df.insert(0, "metric", m)
        if by_day:
            daily.append(df.groupby(["metric", "day"], as_index=False).agg(bytes=("bytes", "sum")))
            df = df.groupby(["metric", "bin"], as_index=False).agg(bytes=("bytes", "sum"), top=("top", "max"))
        series.append(df)
    return IntervalSums(step_ns, pd.concat(series, ignore_index=True), pd.concat(daily, ignore_index=True) if by_day else None)


def spectrum_and_coverage(con, scan: str, tops: dict[str, float], bins: int, since_ns: int | None = None,
                          until_ns: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The I/O power spectrum's histogram (seed 004 section 5) and per-target counts, in one scan per metric.

    histogram: metric, bin, bytes — the bytes of every valid per-target per-interval value in each
               of `bins` equal bins from 0 to tops[metric]; the bin is floor(value * bins / top), the
               top value in the last bin: numpy.histogram's rule
    coverage:  metric, target, n (valid values), min_interval_s (the target's sampling interval)
    Grouping by (target, bin) gives both at the cost of one small hash table (targets x bins groups).
    """
    hist, cov = [], []
    for m in BYTES_METRICS:
        if m not in tops:
            continue
        top = float(tops[m] or 0.0)
        # repr() of a float round-trips exactly, so DuckDB multiplies by the same double numpy would
        scale = repr(float(bins) / top) if top > 0 else "0.0"
        df = con.execute(f"""
            SELECT target, least(CAST(floor(value * {scale}) AS INTEGER), {bins - 1}) AS bin,
                   sum(value) AS bytes, count(*) AS n, min(interval_s) AS min_interval_s
            FROM {scan} WHERE {_where(since_ns, until_ns, m)} GROUP BY ALL""").df()
        h = df.groupby("bin", as_index=False)["bytes"].sum()
        h.insert(0, "metric", m)
        hist.append(h)
        c = df.groupby("target", as_index=False).agg(n=("n", "sum"), min_interval_s=("min_interval_s", "min"))
        c.insert(0, "metric", m)
        cov.append(c)
    empty = pd.DataFrame({"metric": [], "bin": [], "bytes": []})
    return (pd.concat(hist, ignore_index=True) if hist else empty,
            pd.concat(cov, ignore_index=True) if cov else pd.DataFrame({"metric": [], "target": [], "n": [], "min_interval_s": []}))


def extent(con, scan: str) -> tuple[int | None, int | None]:
    """First and last interval start of the byte metrics over the whole dataset (for error messages)."""
    row = con.execute(f"SELECT min(time_ns), max(time_ns) FROM {scan} "
                      f"WHERE metric IN ({', '.join(repr(m) for m in BYTES_METRICS)})").fetchone()
    return (None, None) if row is None or row[0] is None else (int(row[0]), int(row[1]))
