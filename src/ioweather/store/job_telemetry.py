"""The telemetry of one job's window, read without touching the rest of the year.

A job's weather needs a few thousand rows out of ~10^9: `window_rows` lists only the `date=<D>`
directories the window overlaps (telemetry_layout.data_files: one UTC day per directory), and the
DuckDB query filters `metric IN (...)` and `time_ns` in [since - longest interval, until), which DuckDB
pushes into the Parquet reader, so row groups whose time_ns statistics lie outside the window are
skipped unread (files are written in time order, so their row groups are time ranges).

`window_signature` tells whether the telemetry of a window changed since a weather was computed:
files are immutable (written under a temporary name, then renamed; an import or a compaction adds
new names), so the names and sizes of the data files of the window's days are a watermark that moves
exactly when rows for those days arrive or are replaced.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.stats.coverage import job_overlap_s, overlap_s
from ioweather.store import telemetry_layout as layout
from ioweather.store.job_files import files_dir
from ioweather.store.telemetry_names import known_fs  # noqa: F401  re-exported: weather, bench runs list them here

if TYPE_CHECKING:
    import pandas as pd

#: The way a weather is computed from the same rows, part of every window's signature: a stored weather of an
#: older way is stale. 2: the interval a job started in counts whole (stats.coverage.job_overlap_s).
WEATHER_METHOD = 2
#: Rows are interval starts: an interval that began this long before the window can still reach into it.
MAX_INTERVAL_NS = 600 * 10**9
DAY_NS = layout.DAY_NS


def fs_base(parquet_dir: Path, fs: str) -> Path:
    return Path(parquet_dir) / "telemetry" / f"fs={layout.check_fs_name(fs)}"


def _quote(v: str) -> str:
    return "'" + str(v).replace("'", "''") + "'"


def _where(since_ns: int, until_ns: int, metrics, metric_prefixes=(), targets=None) -> str:
    conds = []
    if metrics:
        conds.append("metric IN (" + ", ".join(_quote(m) for m in metrics) + ")")
    conds += [f"starts_with(metric, {_quote(p)})" for p in metric_prefixes]
    where = f"time_ns >= {int(since_ns - MAX_INTERVAL_NS)} AND time_ns < {int(until_ns)}"
    if conds:
        where += " AND (" + " OR ".join(conds) + ")"
    if targets is not None:
        # Lustre target names end in OST<hex id>: the ids a job's Darshan records name
        ids = ", ".join(_quote(t.lower()) for t in sorted(targets)) or "NULL"
        where += f" AND lower(regexp_extract(target, 'OST([0-9a-fA-F]{{4}})$', 1)) IN ({ids})"
    return where


def window_rows(parquet_dir: Path, fs: str, since_ns: int, until_ns: int, metrics: list[str] | None = None,
                metric_prefixes: tuple[str, ...] = (), con=None, targets: set[str] | None = None) -> pd.DataFrame:
    """Rows (time_ns, target, metric, value, interval_s) of `fs` that can overlap [since, until)
    (of the OSTs whose 4-digit hex ids are `targets`, when given)."""
    # lazy: pandas, loaded only when this runs
    import pandas as pd
    files = layout.data_files(fs_base(parquet_dir, fs), since_ns - MAX_INTERVAL_NS, until_ns)
    cols = ["time_ns", "target", "metric", "value", "interval_s"]
    if not files:
        return pd.DataFrame({c: [] for c in cols})
    where = _where(since_ns, until_ns, metrics, metric_prefixes, targets)
    own = con is None
    con = con or layout.connect_duckdb(threads=1)
    try:
        return con.execute(f"SELECT {', '.join(cols)} FROM {layout.files_scan(files)} WHERE {where}").df()
    finally:
        if own:
            con.close()


class Series:
    """One metric of a time range summed over targets per (interval start, interval length), sorted by
    start: what a window's amount, coverage and mean need, without the rows of each target.

    s_ok/n_ok: sum and count of the values an amount uses (finite, >= 0, interval > 0); n_valid: of
    the finite values >= 0 (covered seconds); s_fin/n_fin: of the finite values (means)."""

    def __init__(self, cols: dict):
        self.time = cols["time_ns"].astype(np.int64)
        self.iv = cols["interval_s"].astype(float)
        for k in ("s_ok", "n_ok", "n_valid", "s_fin", "n_fin"):
            setattr(self, k, np.nan_to_num(cols[k].astype(float)))

    def cut(self, since_ns: int, until_ns: int) -> tuple[int, int]:
        """The rows whose interval starts in [since, until)."""
        a, b = np.searchsorted(self.time, [since_ns, until_ns], side="left")
        return int(a), int(b)

    def amount(self, cut: tuple[int, int], since_ns: int, until_ns: int, job_window: bool = True) -> float | None:
        """stats.coverage.window_amount of the rows summed per interval (with `job_window`: the interval the
        job started in counts whole, stats.coverage.job_overlap_s; without: only its part inside [since,
        until), for a rate over the window's length). None when no valid interval overlaps."""
        a, b = cut
        if b <= a:
            return None
        ov = (job_overlap_s if job_window else overlap_s)(self.time[a:b], self.iv[a:b], since_ns, until_ns)
        ok = (self.n_ok[a:b] > 0) & (ov > 0)
        if not ok.any():
            return None
        return float(np.sum(self.s_ok[a:b][ok] * ov[ok] / self.iv[a:b][ok]))

    def covered(self, cut: tuple[int, int], since_ns: int, until_ns: int) -> float:
        """Seconds of [since, until) covered by valid samples, summed over targets."""
        a, b = cut
        if b <= a:
            return 0.0
        return float(np.sum(overlap_s(self.time[a:b], self.iv[a:b], since_ns, until_ns) * self.n_valid[a:b]))

    def mean(self, cut: tuple[int, int]) -> float | None:
        a, b = cut
        n = float(self.n_fin[a:b].sum())
        return float(self.s_fin[a:b].sum() / n) if n > 0 else None


def window_series(parquet_dir: Path, fs: str, since_ns: int, until_ns: int, metrics: list[str],
                  metric_prefixes: tuple[str, ...] = (), con=None, target: str | None = None) -> dict[str, Series]:
    """{metric: Series} of the rows of `fs` that can overlap [since, until), summed over targets in
    one DuckDB query (the same rows and pushdown as `window_rows`); `target`: of that one target only."""
    files = layout.data_files(fs_base(parquet_dir, fs), since_ns - MAX_INTERVAL_NS, until_ns)
    if not files:
        return {}
    ok = "isfinite(value) AND value >= 0"
    sql = f"""SELECT metric, time_ns, interval_s,
                     sum(value) FILTER (WHERE {ok} AND interval_s > 0) AS s_ok,
                     count(*) FILTER (WHERE {ok} AND interval_s > 0) AS n_ok,
                     count(*) FILTER (WHERE {ok}) AS n_valid,
                     sum(value) FILTER (WHERE isfinite(value)) AS s_fin,
                     count(*) FILTER (WHERE isfinite(value)) AS n_fin
              FROM {layout.files_scan(files)} WHERE {_where(since_ns, until_ns, metrics, metric_prefixes)}
              {"" if target is None else f"AND target = {_quote(target)}"}
              GROUP BY metric, time_ns, interval_s ORDER BY metric, time_ns, interval_s"""
    own = con is None
    con = con or layout.connect_duckdb(threads=1)
    try:
        cols = con.execute(sql).fetchnumpy()
    finally:
        if own:
            con.close()
    names = np.asarray(cols["metric"], dtype=object)
    out = {}
    if not len(names):
        return out
    starts = np.flatnonzero(np.r_[True, names[1:] != names[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], len(names)]):
        out[str(names[a])] = Series({k: np.asarray(v)[a:b] for k, v in cols.items() if k != "metric"})
    return out


class DayTargets:
    """Which targets reported some metrics on each UTC day: the series a window should have had."""

    def __init__(self, by_day: dict[int, set[str]]):
        self.by_day = by_day

    def count(self, since_ns: int, until_ns: int) -> int:
        names: set[str] = set()
        for d in range(since_ns // DAY_NS, (until_ns - 1) // DAY_NS + 1):
            names |= self.by_day.get(d, set())
        return len(names)


def day_targets(parquet_dir: Path, fs: str, since_ns: int, until_ns: int, metrics: list[str], con=None) -> DayTargets:
    """The targets with rows of `metrics` on each UTC day that [since - longest interval, until) touches."""
    first = (since_ns - MAX_INTERVAL_NS) // DAY_NS * DAY_NS
    last = -(-until_ns // DAY_NS) * DAY_NS
    files = layout.data_files(fs_base(parquet_dir, fs), first, last)
    if not files:
        return DayTargets({})
    sql = f"""SELECT DISTINCT time_ns // {DAY_NS} AS day, target FROM {layout.files_scan(files)}
              WHERE {_where(first + MAX_INTERVAL_NS, last, metrics)}"""
    own = con is None
    con = con or layout.connect_duckdb(threads=1)
    try:
        rows = con.execute(sql).fetchall()
    finally:
        if own:
            con.close()
    out: dict[int, set[str]] = {}
    for day, target in rows:
        out.setdefault(int(day), set()).add(str(target))
    return DayTargets(out)


class WindowSignatures:
    """Watermarks of telemetry windows, one directory listing per (fs, day) however many jobs ask."""

    def __init__(self, parquet_dir: Path):
        self.parquet_dir = Path(parquet_dir)
        self._days: dict[tuple[str, int], str] = {}

    def day(self, fs: str, day: int) -> str:
        key = (fs, day)
        if key not in self._days:
            base = fs_base(self.parquet_dir, fs)
            files = layout.data_files(base, day * DAY_NS, (day + 1) * DAY_NS)
            h = hashlib.sha1()
            for f in files:
                try:
                    h.update(f"{f.name}:{f.stat().st_size}\n".encode())
                except FileNotFoundError:
                    continue  # replaced meanwhile: the next listing sees its successor
            self._days[key] = h.hexdigest()[:16] if files else "-"
        return self._days[key]

    def window(self, fs: str, since_ns: int, until_ns: int) -> str:
        first = (since_ns - MAX_INTERVAL_NS - DAY_NS) // DAY_NS  # the day before: fullness looks back a day
        last = (until_ns - 1) // DAY_NS
        days = ",".join(self.day(fs, d) for d in range(first, last + 1))
        return hashlib.sha1(f"{WEATHER_METHOD};{days}".encode()).hexdigest()[:16]


def darshan_file_rows(parquet_dir: Path, parts: dict[str, list[str]], columns: list[str]) -> pd.DataFrame:
    """The per-file rows of some Darshan jobs: `parts` maps a files part (the job row's `files_part`)
    to the log hashes wanted from it. Only those parts are opened, and only those jobs' rows kept:
    a refresh of a few new jobs does not read the archive of every job."""
    # lazy: pandas, loaded only when this runs
    import pandas as pd
    tables = []
    for part, hashes in parts.items():
        path = files_dir(parquet_dir) / part
        if not part or not path.is_file():
            continue
        schema = pq.read_schema(path)
        cols = [c for c in columns if c in schema.names]
        tables.append(pq.read_table(path, columns=cols, filters=[("log_hash", "in", sorted(set(hashes)))]))
    if not tables:
        return pd.DataFrame({c: [] for c in columns})
    return pa.concat_tables(tables, promote_options="default").to_pandas()
