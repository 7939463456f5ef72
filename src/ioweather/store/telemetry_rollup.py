"""Rollups: a small summary beside each telemetry file, so a year of workload need not re-read every row.

For the data file   fs=<name>/date=<D>/<file>.parquet   the rollup is   fs=<name>/date=<D>/_rollup/<file>.parquet
(the dataset's glob `date=*/*.parquet` does not descend into `_rollup/`). It holds, for the byte
metrics only and valid values only (finite, >= 0: the same rule as `telemetry_query`):

    minute rows   metric, minute (time_ns // 60 s), bytes = sum, top = max, n = count    (target NULL)
    target rows   metric, target, n = count, min_interval_s                           (minute NULL)

and, in the Parquet key-value metadata, the format version and the first and last interval start of
the file's byte-metric rows. Every column is a sum, maximum, count or minimum, so the rollups of many
files combine exactly: per-minute series (hence any resample interval that is a whole number of
minutes), daily totals, peaks and per-target coverage come from about 3,000 rows a day instead of
~3.5 million (100 targets at 5 s). The power spectrum's histogram cannot be rolled up exactly (its bin
edges depend on the maximum over the asked range), so `telemetry_query` still scans the values for it.

Data files are immutable once renamed into place, so a rollup never goes stale. It is written after
its data file and removed before it: a crash in between leaves a data file without a rollup (read
row by row, still right) or nothing at all; a rollup whose data file is gone is ignored.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.store.parquet_scan import connect_duckdb

VERSION = b"1"
MINUTE_NS = 60_000_000_000
BYTES_METRICS = ("read_bytes", "write_bytes")
# A valid value is a finite, non-negative number: DuckDB orders NaN above every number, so this one
# range predicate excludes NaN, NULL, infinities and negatives alike (telemetry_query uses it too).
VALID = "value BETWEEN 0 AND 1.7976931348623157e308"
_DIR = "_rollup"

SCHEMA = pa.schema([
    ("metric", pa.string()),
    ("minute", pa.int64()),
    ("target", pa.string()),
    ("bytes", pa.float64()),
    ("top", pa.float64()),
    ("n", pa.int64()),
    ("min_interval_s", pa.float64()),
])


def rollup_path(data_path: Path) -> Path:
    data_path = Path(data_path)
    return data_path.parent / _DIR / data_path.name


def summarize(table: pa.Table) -> tuple[pa.Table, int | None, int | None]:
    """The rollup rows of one data table (columns of the telemetry schema), and its first and last
    byte-metric interval start (None when it has no byte-metric rows)."""
    metrics = ", ".join(f"'{m}'" for m in BYTES_METRICS)
    con = connect_duckdb()
    try:
        con.register("t", table)
        rows = con.sql(f"""
            SELECT metric, time_ns // {MINUTE_NS} AS minute, NULL::VARCHAR AS target, sum(value) AS bytes,
                   max(value) AS top, count(*) AS n, NULL::DOUBLE AS min_interval_s
            FROM t WHERE metric IN ({metrics}) AND {VALID} GROUP BY ALL
            UNION ALL
            SELECT metric, NULL::BIGINT, target, NULL::DOUBLE, NULL::DOUBLE, count(*), min(interval_s)
            FROM t WHERE metric IN ({metrics}) AND {VALID} GROUP BY ALL""").to_arrow_table()
        first, last = con.execute(f"SELECT min(time_ns), max(time_ns) FROM t WHERE metric IN ({metrics})").fetchone()
    finally:
        con.close()
    return rows.cast(SCHEMA), first, last


def write(data_path: Path, table: pa.Table) -> Path:
    """Write the rollup of `table`, the content of `data_path` (atomically: temporary name, rename)."""
    rows, first, last = summarize(table)
    return write_rows(data_path, rows, first, last)


def write_rows(data_path: Path, rows: pa.Table, first: int | None, last: int | None) -> Path:
    """Write rollup rows already computed (e.g. merged from other rollups) for `data_path`."""
    meta = {b"ioweather.rollup": VERSION,
            b"first_ns": b"" if first is None else str(int(first)).encode(),
            b"last_ns": b"" if last is None else str(int(last)).encode()}
    out = rollup_path(data_path)
    refuse_link(out)
    out.parent.mkdir(exist_ok=True, mode=0o700)
    tmp = out.parent / f".{out.name}.tmp"
    try:
        pq.write_table(rows.replace_schema_metadata(meta), tmp, compression="zstd")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out


def build(data_path: Path) -> Path:
    """Write the rollup of an existing data file (one that predates rollups, or whose rollup was lost)."""
    return write(data_path, pq.read_table(data_path))


def merge(data_paths) -> tuple[pa.Table, int | None, int | None]:
    """One rollup for the data files together, from theirs (built where missing): sums, maxima,
    counts and minima combine exactly. Returns the rows and the first and last interval start."""
    # lazy: pandas, loaded only when this runs
    import pandas as pd

    frames, firsts, lasts = [], [], []
    for p in data_paths:
        r = read_range(rollup_path(p))
        if r is None and not own(rollup_path(p)):
            # a link planted at _rollup or at the rollup: neither read through nor written through
            rows, first, last = summarize(pq.read_table(p))
            frames.append(rows.to_pandas())
            r = (first, last)
        else:
            if r is None:
                build(p)
                r = read_range(rollup_path(p))
            frames.append(pq.read_table(rollup_path(p)).to_pandas())
        if r and r[0] is not None:
            firsts.append(r[0])
            lasts.append(r[1])
    df = pd.concat(frames, ignore_index=True)
    minute = df[df["minute"].notna()].groupby(["metric", "minute"], as_index=False).agg(
        bytes=("bytes", "sum"), top=("top", "max"), n=("n", "sum"))
    target = df[df["target"].notna()].groupby(["metric", "target"], as_index=False).agg(
        n=("n", "sum"), min_interval_s=("min_interval_s", "min"))
    merged = pd.concat([minute, target], ignore_index=True)[SCHEMA.names]
    rows = pa.Table.from_pandas(merged, schema=SCHEMA, preserve_index=False)
    return rows, (min(firsts) if firsts else None), (max(lasts) if lasts else None)


def own(path: Path) -> bool:
    """Neither the rollup nor its `_rollup` directory is a link (nor anything but a file in a directory);
    absent counts as the store's: build() makes them."""
    for p, want in ((path.parent, stat.S_ISDIR), (path, stat.S_ISREG)):
        try:
            if not want(os.lstat(p).st_mode):
                return False
        except FileNotFoundError:
            return True
        except OSError:
            return False
    return True


def refuse_link(out: Path) -> None:
    """Raise (OSError, which the readers take as "no rollup: read the rows") when `out` or its directory
    is a link: a rollup is never written through one (it would land outside the store)."""
    if not own(out):
        raise OSError(errno.ELOOP, "a link in place of the store's rollup (not written through)", str(out))


def read_range(path: Path) -> tuple[int | None, int | None] | None:
    """(first_ns, last_ns) of a rollup's data file, or None when the rollup is missing, unreadable,
    of another version or reached through a link (the caller then reads the data file itself)."""
    if not own(path):
        return None
    try:
        meta = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowException):
        return None
    if meta.get(b"ioweather.rollup") != VERSION:
        return None
    first, last = meta.get(b"first_ns", b""), meta.get(b"last_ns", b"")
    return (int(first) if first else None, int(last) if last else None)


