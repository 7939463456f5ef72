"""The DuckDB reductions behind `ioweather workload`: raw telemetry rows in, small tables out.

A year of 5-second samples for 100 targets is over a billion rows in the long layout
(`telemetry_layout`), so nothing here fetches raw rows: each query scans the Parquet
files once, in parallel, and returns per-interval or per-bin sums that fit in memory
(about half a million rows for a year at 60 s). `ioweather.stats.workload` does the rest.

Whole files inside the asked range are read through their rollups (`telemetry_rollup`): the
per-minute series and per-target counts come from those, and only the power spectrum's histogram
scans their values. Files that straddle the range's ends, predate rollups and cannot get one, or a
resample interval that is not a whole number of minutes, go through the row-by-row queries; the two
parts are merged with sums, maxima and minima, so both ways give the same numbers.

A value is *valid* when it is a finite, non-negative number; NaN (a counter reset,
a failed read) and NULL are missing. DuckDB orders NaN above every number, so the one
range predicate below excludes NaN, NULL, infinities and negatives alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_rollup as rollup
from ioweather.store.telemetry_layout import files_scan

BYTES_METRICS = rollup.BYTES_METRICS
DAY_NS = layout.DAY_NS
_VALID = rollup.VALID


def options(memory_limit: str = "4GB") -> dict:
    """Bounded memory (the benchmark's budget is 8 GB RSS) and no ordering work we do not need: the
    database-wide settings of the workload's reads (parquet_scan.connect_duckdb's `options`)."""
    return {"memory_limit": memory_limit, "preserve_insertion_order": "false"}


def _where(since_ns: int | None, until_ns: int | None, metric: str | None = None) -> str:
    parts = [_VALID]
    if metric is not None:
        parts.append(f"metric = '{metric}'")  # one equality is pushed into the Parquet reader: cheap
    if since_ns is not None:
        parts.append(f"time_ns >= {int(since_ns)}")
    if until_ns is not None:
        parts.append(f"time_ns < {int(until_ns)}")
    return " AND ".join(parts)


def footer_summary(con, files) -> dict:
    """First and last interval start and the shortest interval, from the Parquet footers alone
    (no data is read; all metrics together): enough to refuse a hopeless request at once."""
    files = [str(f) for f in files]
    if not files:
        return {"first_ns": None, "last_ns": None, "min_interval_s": None}
    rows = con.execute(
        "SELECT path_in_schema, min(TRY_CAST(stats_min_value AS DOUBLE)), max(TRY_CAST(stats_max_value AS DOUBLE)) "
        "FROM parquet_metadata(?) WHERE path_in_schema IN ('time_ns', 'interval_s') GROUP BY ALL",
        [files]).fetchall()
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


def _bin_sql(top: float | None, bins: int) -> str:
    """The spectrum bin of `value` among `bins` equal bins from 0 to `top`, the top value in the last
    bin: numpy.histogram's rule. repr() of a float round-trips exactly, so DuckDB multiplies by the
    same double numpy would."""
    top = float(top or 0.0)
    scale = repr(float(bins) / top) if top > 0 else "0.0"
    return f"least(CAST(floor(value * {scale}) AS INTEGER), {bins - 1})"


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
        df = con.execute(f"""
            SELECT target, {_bin_sql(tops[m], bins)} AS bin,
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


# ----------------------------------------------------------------------------- rollup-aware planning

@dataclass
class FilePlan:
    """Which data files a query reads through their rollups and which row by row."""

    rolled: list[Path] = field(default_factory=list)   # wholly inside the range, with a rollup
    raw: list[Path] = field(default_factory=list)      # straddling the range, or without a usable rollup
    built: int = 0                                     # rollups written on the way (older data)


def plan_files(base: Path, since_ns: int | None, until_ns: int | None, step_ns: int,
               use_rollups: bool = True, on_build=None, files: list[Path] | None = None) -> FilePlan:
    """Sort the data files of one file system's dataset (or its listing `files`) into rolled and raw
    for [since, until).

    A data file without a readable rollup gets one built (it is immutable, so the rollup stays
    right; a read-only store just keeps reading it row by row)."""
    plan = FilePlan()
    files = layout.data_files(base, since_ns, until_ns) if files is None else files
    if not use_rollups or step_ns % rollup.MINUTE_NS != 0:
        plan.raw = files
        return plan
    for f in files:
        r = rollup.read_range(rollup.rollup_path(f))
        if r is None:
            try:
                rollup.build(f)
                plan.built += 1
                if on_build:
                    on_build(plan.built)
            except (OSError, ValueError) as e:  # read-only store, vanished file, unreadable Parquet
                if isinstance(e, FileNotFoundError) and not f.exists():
                    raise  # the listing is stale (an import replaced the file): layout.read_listed lists again
            r = rollup.read_range(rollup.rollup_path(f))
        if r is None:
            plan.raw.append(f)
        elif r[0] is None:
            continue  # no byte-metric rows at all (gauges only): nothing for the workload
        elif (since_ns is None or r[0] >= since_ns) and (until_ns is None or r[1] < until_ns):
            plan.rolled.append(f)
        else:
            plan.raw.append(f)
    return plan


def rolled_sums(con, data_files, step_ns: int) -> IntervalSums:
    """interval_sums() from the rollups of `data_files` (wholly inside the range; step_ns whole minutes)."""
    k = step_ns // rollup.MINUTE_NS
    by_day = DAY_NS % step_ns != 0
    scan = files_scan([rollup.rollup_path(f) for f in data_files])
    day_col = f", minute // {DAY_NS // rollup.MINUTE_NS} AS day" if by_day else ""
    df = con.execute(f"""
        SELECT metric, minute // {k} AS bin{day_col}, sum(bytes) AS bytes, max(top) AS top
        FROM {scan} WHERE minute IS NOT NULL GROUP BY ALL""").df()
    daily = None
    if by_day:
        daily = df.groupby(["metric", "day"], as_index=False).agg(bytes=("bytes", "sum"))
        df = df.groupby(["metric", "bin"], as_index=False).agg(bytes=("bytes", "sum"), top=("top", "max"))
    return IntervalSums(step_ns, df[["metric", "bin", "bytes", "top"]], daily)


def rolled_coverage(con, data_files) -> pd.DataFrame:
    """Per-target valid counts and sampling interval (metric, target, n, min_interval_s) from rollups."""
    scan = files_scan([rollup.rollup_path(f) for f in data_files])
    return con.execute(f"""
        SELECT metric, target, sum(n) AS n, min(min_interval_s) AS min_interval_s
        FROM {scan} WHERE target IS NOT NULL GROUP BY ALL""").df()


def histogram(con, scan: str, tops: dict[str, float], bins: int) -> pd.DataFrame:
    """The spectrum histogram alone (metric, bin, bytes) over whole files whose coverage comes from
    rollups: spectrum_and_coverage() without the per-target grouping and without a time filter.
    Measured on a month x 100 targets: 37 % less CPU; one UNION ALL of the per-metric queries (each
    pushing its `metric = ...` into the reader) runs both on the two cores, where two queries or one
    query with `metric IN (...)` or CASE took 1.3-2.6x the wall time (docs/benchmarks/workload.md)."""
    parts = []
    for m in BYTES_METRICS:
        if m not in tops:
            continue
        parts.append(f"""SELECT '{m}' AS metric, {_bin_sql(tops[m], bins)} AS bin,
                                sum(value) AS bytes FROM {scan} WHERE {_where(None, None, m)} GROUP BY ALL""")
    if not parts:
        return pd.DataFrame({"metric": [], "bin": [], "bytes": []})
    return con.execute(" UNION ALL ".join(parts)).df()


@dataclass
class WorkloadInputs:
    """Everything `ioweather workload` needs from the store, small enough for memory."""

    sums: IntervalSums
    histogram: pd.DataFrame   # metric, bin, bytes
    coverage: pd.DataFrame    # metric, target, n, min_interval_s
    tops: dict                # metric -> largest single per-target value in the range
    plan: FilePlan


def _merge_sums(parts: list[IntervalSums], step_ns: int) -> IntervalSums:
    series = pd.concat([p.series for p in parts], ignore_index=True)
    if len(parts) > 1:
        series = series.groupby(["metric", "bin"], as_index=False).agg(bytes=("bytes", "sum"), top=("top", "max"))
    dailies = [p.daily for p in parts if p.daily is not None]
    daily = None
    if dailies:
        daily = pd.concat(dailies, ignore_index=True).groupby(["metric", "day"], as_index=False).agg(bytes=("bytes", "sum"))
    return IntervalSums(step_ns, series, daily)


def workload_inputs(con, base: Path, step_ns: int, bins: int, since_ns: int | None = None,
                    until_ns: int | None = None, on_step=None, use_rollups: bool = True,
                    files: list[Path] | None = None) -> WorkloadInputs | None:
    """Series, histogram and coverage of one file system's byte metrics over [since, until) (from
    the listing `files` when given); None when no file holds rows there."""
    step = on_step or (lambda name: None)
    plan = plan_files(base, since_ns, until_ns, step_ns, use_rollups,
                      on_build=lambda n: step(f"summarizing older files ({n})") if n % 10 == 1 else None, files=files)
    if not plan.rolled and not plan.raw:
        return None
    step("scanning telemetry")
    raw_scan = files_scan(plan.raw) if plan.raw else None
    parts = []
    if plan.rolled:
        parts.append(rolled_sums(con, plan.rolled, step_ns))
    if raw_scan:
        parts.append(interval_sums(con, raw_scan, step_ns, since_ns, until_ns))
    sums = _merge_sums(parts, step_ns)
    if sums.series.empty:
        return WorkloadInputs(sums, pd.DataFrame(), pd.DataFrame(), {}, plan)
    tops = sums.series.groupby("metric")["top"].max().to_dict()
    step("power spectrum")
    hists, covs = [], []
    if plan.rolled:
        hists.append(histogram(con, files_scan(plan.rolled), tops, bins))
        covs.append(rolled_coverage(con, plan.rolled))
    if raw_scan:
        h, c = spectrum_and_coverage(con, raw_scan, tops, bins, since_ns, until_ns)
        hists.append(h)
        covs.append(c)
    hist = pd.concat(hists, ignore_index=True).groupby(["metric", "bin"], as_index=False)["bytes"].sum()
    cov = pd.concat(covs, ignore_index=True).groupby(["metric", "target"], as_index=False).agg(
        n=("n", "sum"), min_interval_s=("min_interval_s", "min"))
    return WorkloadInputs(sums, hist, cov, tops, plan)
