"""Compaction: a finished day's small files of one writer become one file.

`ioweather collect` flushes every few minutes (so a crash loses minutes, not a day), which is ~300
files a day per host: a year of them is 100,000 files, and every reader pays per file. Once a UTC
day is over, the collector merges its own files of that day into one `<writer>-compact-<id>.parquet`,
whose footer lists the names it replaces, and whose rollup is the merge of theirs (sums, maxima,
counts and minima combine exactly).

The order keeps every row counted once for every reader, at every instant:
  1. the compacted file is written under a temporary name and renamed into place, then its rollup;
  2. from then on `telemetry_layout.data_files` drops the replaced names, even while they exist;
  3. the replaced files (rollup first) are unlinked.
A crash after 1 leaves files that are already ignored; the next compaction of that day unlinks them.
A file the writer adds to the day later (a late flush) is not in the list, so it still counts.
Memory is bounded by one small file at a time: the data is streamed file by file.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_rollup as rollup


def _parts(day_dir: Path, writer: str) -> tuple[list[Path], set[str]]:
    """The writer's files of a day that are not compacted yet, and the names already replaced."""
    files = sorted(day_dir.glob(f"{writer}-*.parquet"))
    done = {n for f in files for n in layout.replaced_by(f)}
    return [f for f in files if layout.COMPACT_TAG not in f.name and f.name not in done], done


def _remove(day_dir: Path, names) -> None:
    for name in names:
        layout.remove_files([day_dir / name])


def _merged_rollup(parts: list[Path]) -> tuple[pa.Table, int | None, int | None]:
    """The rollup of the parts together, from their rollups (building any that is missing)."""
    frames, firsts, lasts = [], [], []
    for p in parts:
        r = rollup.read_range(rollup.rollup_path(p))
        if r is None:
            rollup.build(p)
            r = rollup.read_range(rollup.rollup_path(p))
        frames.append(pq.read_table(rollup.rollup_path(p)).to_pandas())
        if r and r[0] is not None:
            firsts.append(r[0])
            lasts.append(r[1])
    df = pd.concat(frames, ignore_index=True)
    minute = df[df["minute"].notna()].groupby(["metric", "minute"], as_index=False).agg(
        bytes=("bytes", "sum"), top=("top", "max"), n=("n", "sum"))
    target = df[df["target"].notna()].groupby(["metric", "target"], as_index=False).agg(
        n=("n", "sum"), min_interval_s=("min_interval_s", "min"))
    merged = pd.concat([minute, target], ignore_index=True)[rollup.SCHEMA.names]
    table = pa.Table.from_pandas(merged, schema=rollup.SCHEMA, preserve_index=False)
    return table, (min(firsts) if firsts else None), (max(lasts) if lasts else None)


def compact_day(day_dir: Path, writer: str, min_files: int = 2) -> Path | None:
    """Merge `writer`'s files of one finished day; returns the new file, or None when there was
    nothing to do. Also unlinks files that an earlier, interrupted compaction already replaced."""
    parts, done = _parts(day_dir, writer)
    _remove(day_dir, [n for n in done if (day_dir / n).exists()])
    if len(parts) < min_files:
        return None
    name = f"{writer}{layout.COMPACT_TAG}{uuid.uuid4().hex[:12]}.parquet"
    out = day_dir / name
    tmp = day_dir / f".{name}.tmp"
    meta = {layout.REPLACES_KEY: "\n".join(p.name for p in parts).encode()}
    try:
        with pq.ParquetWriter(tmp, layout.SCHEMA.with_metadata(meta), **layout.WRITE_OPTIONS) as w:
            for p in parts:
                w.write_table(pq.read_table(p).select(layout.SCHEMA.names).cast(layout.SCHEMA))
        rolled, first, last = _merged_rollup(parts)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    rollup.write_rows(out, rolled, first, last)
    _remove(day_dir, [p.name for p in parts])
    return out


def compact_finished_days(base: Path, writer: str, now_ns: int, grace_ns: int) -> list[Path]:
    """Compact `writer`'s files of every day that ended at least `grace_ns` before `now_ns`."""
    made = []
    for d in layout.day_dirs(base):
        day0 = int(pd.Timestamp(d.name[5:], tz="UTC").value)
        if day0 + layout.DAY_NS + grace_ns <= now_ns:
            out = compact_day(d, writer)
            if out is not None:
                made.append(out)
    return made
