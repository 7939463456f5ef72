"""Importer chunks -> the store's long format, and imports that replace or roll back as a whole.

An import of the same source twice must not double the bytes, and an import that fails half
way must not leave half a history. Each import therefore writes its files under a writer name
derived from the source (`lmt-<hash>`, `csv-<hash>`, ...) plus a run id; when it completes,
the files of earlier runs of that source are removed; when it fails, its own files are.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ioweather.config import Settings
from ioweather.sources.telemetry.base import AMOUNT, COUNTER, Long, Wide
from ioweather.stats import counters
from ioweather.store import telemetry_layout as layout

COLUMNS = ["time_ns", "target", "metric", "value", "interval_s"]


def wide_to_long(w: Wide) -> pd.DataFrame:
    """Rows of one Wide chunk: counters become amounts per interval, gauges and amounts pass."""
    t = np.asarray(w.times_ns, dtype=np.int64)
    n = len(w.targets)
    if w.kind == COUNTER:
        if t.size < 2:
            return pd.DataFrame(columns=COLUMNS)
        d = counters.grid_deltas(w.values, w.missing) * w.scale
        start, vals, length, _ = counters.expand_gaps(t[:-1], t[1:], d, w.step_s)
    else:
        first = 1 if w.overlap else 0
        start = t[first:]
        vals = np.asarray(w.values, dtype=np.float64)[first:] * w.scale
        if w.missing is not None:
            vals = np.where(np.asarray(w.missing, bool)[first:], np.nan, vals)
        if w.kind == AMOUNT and w.interval_s is not None:
            length = np.asarray(w.interval_s, dtype=np.float64)[first:]
        else:
            length = np.full(start.size, float(w.step_s or np.nan))
    rows = start.size
    return pd.DataFrame({
        "time_ns": np.repeat(start, n),
        "target": np.tile(np.asarray(w.targets, dtype=object), rows),
        "metric": w.metric,
        "value": np.asarray(vals, dtype=np.float64).reshape(rows * n),
        "interval_s": np.repeat(length, n),
    })


def to_long(chunk) -> pd.DataFrame:
    if isinstance(chunk, Wide):
        return wide_to_long(chunk)
    if isinstance(chunk, Long):
        return chunk.frame[COLUMNS]
    raise TypeError(f"not an importer chunk: {type(chunk).__name__}")


def source_writer(kind: str, source: str) -> str:
    """A stable writer name for one source, so a re-import replaces the earlier one."""
    return f"{kind}-{hashlib.sha1(source.encode()).hexdigest()[:10]}"


@dataclass
class ImportRun:
    """Writes the rows of one import; `commit` replaces earlier imports of the same source."""

    settings: Settings
    fs: str
    writer: str
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    paths: list = field(default_factory=list)
    rows: int = 0
    missing: int = 0
    t_min: int | None = None
    t_max: int | None = None
    targets: set = field(default_factory=set)
    metrics: dict = field(default_factory=dict)
    buffer_rows: int = 2_000_000
    _buffer: list = field(default_factory=list)
    _buffered: int = 0

    def write(self, frame: pd.DataFrame) -> int:
        """Queue rows; they are written in files of up to `buffer_rows` rows (few, large files
        scan fastest), at the latest by `finish`."""
        if frame.empty:
            return 0
        self._buffer.append(frame)
        self._buffered += len(frame)
        if self._buffered >= self.buffer_rows:
            self._flush()
        return len(frame)

    def _flush(self) -> None:
        if not self._buffer:
            return
        frame = pd.concat(self._buffer, ignore_index=True) if len(self._buffer) > 1 else self._buffer[0]
        self._buffer, self._buffered = [], 0
        n = layout.write_rows(self.settings, self.fs, frame, writer=f"{self.writer}-{self.run}", paths_out=self.paths)
        self.rows += n
        self.missing += int(frame["value"].isna().sum())
        tmin, tmax = int(frame["time_ns"].min()), int(frame["time_ns"].max())
        self.t_min = tmin if self.t_min is None else min(self.t_min, tmin)
        self.t_max = tmax if self.t_max is None else max(self.t_max, tmax)
        self.targets.update(frame["target"].unique())
        for metric, count in frame["metric"].value_counts().items():
            self.metrics[metric] = self.metrics.get(metric, 0) + int(count)
        return n

    def finish(self) -> None:
        self._flush()

    def commit(self) -> int:
        """Remove the files of earlier runs of this source; returns how many."""
        self._flush()
        mine = set(self.paths)
        old = [p for p in layout.writer_files(self.settings, self.fs, self.writer + "-") if p not in mine]
        return layout.remove_files(old)

    def rollback(self) -> int:
        self._buffer, self._buffered = [], 0
        n = layout.remove_files(self.paths)
        self.paths.clear()
        return n

    def summary(self) -> dict:
        from ioweather.units import ns_to_iso

        return {"fs": self.fs, "rows": self.rows, "missing_values": self.missing,
                "start": ns_to_iso(self.t_min) if self.t_min is not None else None,
                "end": ns_to_iso(self.t_max) if self.t_max is not None else None,
                "targets": len(self.targets), "metrics": dict(sorted(self.metrics.items())),
                "files": len(self.paths)}


