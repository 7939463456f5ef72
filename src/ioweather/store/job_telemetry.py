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

import pandas as pd

from ioweather.store import telemetry_layout as layout

#: Rows are interval starts: an interval that began this long before the window can still reach into it.
MAX_INTERVAL_NS = 600 * 10**9
DAY_NS = layout.DAY_NS


def fs_base(parquet_dir: Path, fs: str) -> Path:
    return Path(parquet_dir) / "telemetry" / f"fs={layout.check_fs_name(fs)}"


def known_fs(parquet_dir: Path) -> list[str]:
    d = Path(parquet_dir) / "telemetry"
    return sorted(p.name[3:] for p in d.glob("fs=*") if p.is_dir()) if d.is_dir() else []


def window_rows(parquet_dir: Path, fs: str, since_ns: int, until_ns: int, metrics: list[str] | None = None,
                metric_prefixes: tuple[str, ...] = (), con=None) -> pd.DataFrame:
    """Rows (time_ns, target, metric, value, interval_s) of `fs` that can overlap [since, until)."""
    files = layout.data_files(fs_base(parquet_dir, fs), since_ns - MAX_INTERVAL_NS, until_ns)
    cols = ["time_ns", "target", "metric", "value", "interval_s"]
    if not files:
        return pd.DataFrame({c: [] for c in cols})
    conds = []
    if metrics:
        conds.append("metric IN (" + ", ".join("'" + m.replace("'", "''") + "'" for m in metrics) + ")")
    conds += [f"starts_with(metric, '{p}')" for p in metric_prefixes]
    where = f"time_ns >= {int(since_ns - MAX_INTERVAL_NS)} AND time_ns < {int(until_ns)}"
    if conds:
        where += " AND (" + " OR ".join(conds) + ")"
    own = con is None
    con = con or layout.connect_duckdb(threads=1)
    try:
        return con.execute(f"SELECT {', '.join(cols)} FROM {layout.files_scan(files)} WHERE {where}").df()
    finally:
        if own:
            con.close()


def gauges_before(parquet_dir: Path, fs: str, at_ns: int, metrics: list[str], lookback_ns: int = DAY_NS,
                  con=None) -> pd.DataFrame:
    """Each target's latest value of each gauge at or before `at_ns` (at most `lookback_ns` older)."""
    rows = window_rows(parquet_dir, fs, at_ns - lookback_ns + MAX_INTERVAL_NS, at_ns + 1, metrics, con=con)
    rows = rows[(rows["time_ns"] <= at_ns) & (rows["time_ns"] >= at_ns - lookback_ns)]
    if rows.empty:
        return rows
    return rows.sort_values("time_ns").groupby(["target", "metric"], as_index=False).last()


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
        return hashlib.sha1(",".join(self.day(fs, d) for d in range(first, last + 1)).encode()).hexdigest()[:16]
