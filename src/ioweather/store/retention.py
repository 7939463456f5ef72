"""Removing the server telemetry older than a limit (issue 30, `store prune` and the daemons' retention).

Telemetry is kept as Parquet day directories (store/telemetry_layout.py): a day goes whole once all of it is
older than the limit, its rollups and target index with it (telemetry_layout.remove_files). A directory
written in the last `BUSY_S` is left for the next pass: an import of old data may be writing into it.
Probe samples and their summaries are pruned in store/probe.py.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pyarrow.parquet as pq

from ioweather.config import Settings
from ioweather.errors import from_os_error
from ioweather.store import telemetry_layout as layout

DAY_NS = layout.DAY_NS
BUSY_S = 600.0


def old_telemetry_days(settings: Settings, cutoff_ns: int, now_s: float | None = None) -> list[tuple[str, Path]]:
    """(fs, day directory) of every day that ended by `cutoff_ns` and was not written in the last `BUSY_S`."""
    now_s = time.time() if now_s is None else now_s
    out = []
    for fs in layout.list_fs(settings):
        for d in layout.day_dirs(layout.fs_dir(settings, fs), None, (cutoff_ns // DAY_NS) * DAY_NS):
            try:
                newest = max([d.stat().st_mtime] + [p.stat().st_mtime for p in d.glob("*.parquet")])
            except FileNotFoundError:  # removed meanwhile (compaction, another prune)
                continue
            if now_s - newest >= BUSY_S:
                out.append((fs, d))
    return out


def count_rows(day_dir: Path) -> tuple[int, int]:
    """(data files, rows) of a day directory, from the files' footers."""
    files = sorted(day_dir.glob("*.parquet"))
    rows = 0
    for f in files:
        try:
            rows += pq.read_metadata(f).num_rows
        except FileNotFoundError:
            continue
        except OSError as e:
            raise from_os_error(f, e, "read") from None
    return len(files), rows


def remove_day(day_dir: Path) -> None:
    """Remove a day directory: its data files through telemetry_layout (rollups and index first), then the rest."""
    layout.remove_files(sorted(day_dir.glob("*.parquet")))
    try:
        shutil.rmtree(day_dir)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise from_os_error(day_dir, e, "remove") from None
