"""Target rollups: the per-target sums beside each telemetry data file, written with it.

30 days x 500 targets at 5 s is ~5 x 10^8 byte rows, too many to scan per page
view. Beside each data file, `date=<D>/_targets/<same name>` holds its per-target sums of the
amount metrics (AMOUNT_METRICS and md_*) per 5-minute bucket, and `date=<D>/_targets_900s/` and
`_targets_3600s/` the same per 15 minutes and per hour: metric, target, bucket, amount (sum of valid
values), n (their count) and top_bps (the largest value / interval_s). They combine exactly (sums, counts, maxima), so any bin
that is a whole number of buckets is read from the coarsest level that divides it: a month of 500
targets is 720,000 hourly rows instead of 8.6 M 5-minute rows or ~5 x 10^8 raw rows (measured in
docs/benchmarks.md, Servers page).

They are written with their data file (`write`, called by `telemetry_layout` for every file that
`collect` or an import writes), merged from the parts' rollups when `collect` compacts a day
(`merge`), and removed before their data file (`remove`). A data file is immutable, so its rollups
never go stale. A data file without them (a store written before they existed, a crash or a full
disk between the two writes) gets them on the first read that wants them (telemetry_targets.plan); files straddling
the asked range, a bin that is not a multiple of 5 minutes, or a read-only store go through the
rows instead: every way gives the same numbers.

Below telemetry_layout, which writes and removes them with their data file: this module imports
nothing of the layout (store/telemetry_targets.py reads them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.store.parquet_scan import connect_duckdb, files_scan
from ioweather.store.telemetry_rollup import own, refuse_link, VALID

BUCKET_NS = 300_000_000_000
HOUR_NS = 3_600_000_000_000
#: The rollup levels, finest first; each is a whole number of the one before. With 500 targets the
#: page's bin (MAX_CELLS) is 5 min for a day, 15 min for 3 to 7 days, hours for a month: each reads
#: at most ~700,000 rollup rows.
LEVELS = (BUCKET_NS, 3 * BUCKET_NS, HOUR_NS)
AMOUNT_METRICS = ("read_bytes", "write_bytes", "read_ops", "write_ops")
VERSION = b"1"
_DIR = "_targets"
_ROLLED = f"(metric IN ({', '.join(repr(m) for m in AMOUNT_METRICS)}) OR metric LIKE 'md\\_%' ESCAPE '\\')"

SCHEMA = pa.schema([("metric", pa.string()), ("target", pa.string()), ("bucket", pa.int64()),
                    ("amount", pa.float64()), ("n", pa.int64()), ("top_bps", pa.float64())])


def rollup_path(data_path: Path, bucket_ns: int = BUCKET_NS) -> Path:
    data_path = Path(data_path)
    sub = _DIR if bucket_ns == BUCKET_NS else f"{_DIR}_{bucket_ns // 10**9}s"
    return data_path.parent / sub / data_path.name


def _summaries(con, source: str) -> tuple[list[pa.Table], int | None, int | None]:
    """The rollup rows of `source` (a DuckDB table expression over data rows) at every level, and the
    first and last interval start of its rolled metrics. The coarser levels are sums of the finest."""
    con.execute(f"""CREATE TEMP TABLE fine AS
        SELECT metric, target, time_ns // {BUCKET_NS} AS bucket, sum(value) AS amount, count(*) AS n,
               max(value / interval_s) AS top_bps
        FROM {source} WHERE {_ROLLED} AND {VALID} GROUP BY ALL""").fetchall()
    first, last = con.execute(f"SELECT min(time_ns), max(time_ns) FROM {source} WHERE {_ROLLED}").fetchall()[0]
    tables = [con.sql("SELECT * FROM fine").to_arrow_table()]
    for level in LEVELS[1:]:
        tables.append(con.sql(f"""SELECT metric, target, bucket // {level // BUCKET_NS} AS bucket, sum(amount) AS amount,
                                         sum(n) AS n, max(top_bps) AS top_bps FROM fine GROUP BY ALL""").to_arrow_table())
    con.execute("DROP TABLE fine").fetchall()
    return tables, first, last


def _write_levels(data_path: Path, tables: list[pa.Table], first: int | None, last: int | None) -> Path:
    """Each level's file (temporary name, then rename), coarsest first: the 5-minute file, which
    `read_range` checks for the file's span, comes last, when every level is in place."""
    meta = {b"ioweather.targets": VERSION, b"first_ns": b"" if first is None else str(first).encode(),
            b"last_ns": b"" if last is None else str(last).encode()}
    for level, rows in reversed(list(zip(LEVELS, tables))):
        out = rollup_path(data_path, level)
        refuse_link(out)
        out.parent.mkdir(exist_ok=True, mode=0o700)
        tmp = out.parent / f".{out.name}.tmp"
        try:
            pq.write_table(rows.cast(SCHEMA).replace_schema_metadata(meta), tmp, compression="zstd")
            os.replace(tmp, out)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return rollup_path(data_path)


def write(data_path: Path, table: pa.Table) -> Path:
    """Write the target rollups of `table`, the content of the data file `data_path` just written
    (the write path of `collect` and imports: no second read of the file)."""
    con = connect_duckdb()
    try:
        con.register("written", table)
        tables, first, last = _summaries(con, "written")
    finally:
        con.close()
    return _write_levels(data_path, tables, first, last)


def build(data_path: Path) -> Path:
    """Write the target rollups of an existing data file (one that predates them, or lost them)."""
    con = connect_duckdb()
    try:
        tables, first, last = _summaries(con, files_scan([data_path]))
    finally:
        con.close()
    return _write_levels(data_path, tables, first, last)


def merge(out_path: Path, data_paths) -> Path:
    """The target rollups of `out_path`, a compaction of `data_paths`, from theirs (built where missing):
    sums, counts and maxima of one bucket in several parts combine exactly."""
    ranges = []
    for p in data_paths:
        r = read_range(rollup_path(p))
        if r is None:
            build(p)
            r = read_range(rollup_path(p))
        ranges.append(r)
    con = connect_duckdb()
    try:
        tables = [con.sql(f"""SELECT metric, target, bucket, sum(amount) AS amount, sum(n) AS n, max(top_bps) AS top_bps
                              FROM {files_scan([rollup_path(p) for p in data_paths])} GROUP BY ALL""").to_arrow_table()]
        for level in LEVELS[1:]:
            tables.append(con.sql(f"""SELECT metric, target, bucket // {level // BUCKET_NS} AS bucket,
                                             sum(amount) AS amount, sum(n) AS n, max(top_bps) AS top_bps
                                      FROM {files_scan([rollup_path(p) for p in data_paths])} GROUP BY ALL""").to_arrow_table())
    finally:
        con.close()
    firsts = [r[0] for r in ranges if r and r[0] is not None]
    lasts = [r[1] for r in ranges if r and r[1] is not None]
    return _write_levels(out_path, tables, min(firsts, default=None), max(lasts, default=None))




_RANGES: dict[tuple, tuple[int | None, int | None]] = {}


def read_range(path: Path) -> tuple[int | None, int | None] | None:
    """(first_ns, last_ns) of the rolled metrics in a target rollup's data file; None when unusable.
    Remembered per (path, inode, mtime, size): a rollup is written once and replaced whole, and a
    month of files cost a page 0.3 s of footer reads each time."""
    if not all(own(rollup_path(path.parent.parent / path.name, level)) for level in LEVELS):
        return None  # a link planted at a level's directory or file: read the rows, never through it
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (str(path), st.st_ino, st.st_mtime_ns, st.st_size)
    if key in _RANGES:
        return _RANGES[key]
    try:
        meta = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowException):
        return None
    if meta.get(b"ioweather.targets") != VERSION:
        return None
    first, last = meta.get(b"first_ns", b""), meta.get(b"last_ns", b"")
    if len(_RANGES) > 100_000:
        _RANGES.clear()
    _RANGES[key] = out = (int(first) if first else None, int(last) if last else None)
    return out
