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

import pyarrow.parquet as pq

from ioweather.files import StoreTree
from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_rollup as rollup
from ioweather.store import telemetry_target_rollups


def _parts(day_dir: Path, writer: str, tree: StoreTree) -> tuple[list[Path], set[str]]:
    """The writer's files of a day that are not compacted yet, and the names already replaced (regular
    files only, listed through the store's no-follow walker: a link there is neither read nor removed)."""
    files = tree.regular_files(day_dir, lambda n: n.startswith(f"{writer}-") and n.endswith(".parquet"))
    done = {n for f in files for n in layout.replaced_by(f)}
    return [f for f in files if layout.COMPACT_TAG not in f.name and f.name not in done], done


def compact_day(day_dir: Path, writer: str, min_files: int = 2, tree: StoreTree | None = None) -> Path | None:
    """Merge `writer`'s files of one finished day; returns the new file, or None when there was
    nothing to do. Also unlinks files that an earlier, interrupted compaction already replaced."""
    tree = tree or layout.store_tree(day_dir)
    with tree.opened(day_dir) as fd:
        if fd is None:  # a link or a mount point in place of the day (or on its way): never entered
            return None
    parts, done = _parts(day_dir, writer, tree)
    layout.remove_files([day_dir / n for n in done], tree)  # left by an interrupted compaction (absent ones are skipped)
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
        rolled, first, last = rollup.merge(parts)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    rollup.write_rows(out, rolled, first, last)
    try:
        telemetry_target_rollups.merge(out, parts)
    except OSError:
        pass  # a full disk: the first page that reads the day builds them from the rows
    layout.remove_files(parts, tree)
    return out


def compact_finished_days(base: Path, writer: str, now_ns: int, grace_ns: int, done: set | None = None,
                          on_error=None) -> list[Path]:
    """Compact `writer`'s files of every day that ended at least `grace_ns` before `now_ns`.

    Days named in `done` are skipped and the ones handled are added to it (a daemon merges each
    day once). A day that fails with an OSError (a full disk) is passed to `on_error(day_dir, exc)`
    when given, and tried again next time: its small files stay, and are still right."""
    done = set() if done is None else done
    made = []
    tree = layout.store_tree(base)
    until = now_ns - grace_ns - layout.DAY_NS + 1
    days = [d for d in tree.subdirs(base, lambda n: n.startswith("date="))
            if (day0 := layout._day_of_dir(d.name)) is not None and day0 < until]
    for d in days:
        if d in done:
            continue
        try:
            out = compact_day(d, writer, tree=tree)
        except OSError as e:
            if on_error is None:
                raise
            on_error(d, e)
            continue
        done.add(d)
        if out is not None:
            made.append(out)
    return made
