"""Importer chunks -> the store's long format, and the writer name of each import source.

The importers (sources/telemetry/) hand over raw readings: counters stay cumulative until here,
where stats/counters.py turns them into amounts per interval (a decrease is missing, a gap is
missing intervals).

Writing an import so that it replaces the earlier one or rolls back as a whole is the store's
concern: store/telemetry_imports.py (ImportRun).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from ioweather.sources.telemetry.base import AMOUNT, COUNTER, GAUGE, Long, Wide
from ioweather.stats import counters

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
    out = pd.DataFrame({
        "time_ns": np.repeat(start, n),
        "target": np.tile(np.asarray(w.targets, dtype=object), rows),
        "metric": w.metric,
        "value": np.asarray(vals, dtype=np.float64).reshape(rows * n),
        "interval_s": np.repeat(length, n),
    })
    if w.sparse and w.kind == GAUGE:
        out = out[out["value"].notna().to_numpy()]
    return out


def readings_to_long(readings: pd.DataFrame, step_s: float | None) -> pd.DataFrame:
    """Counter readings (time_ns, target, metric, value), sorted by series then time -> amounts per
    interval of each series, over `step_s` or else the series' median spacing."""
    frames = []
    for (target, metric), g in readings.groupby(["target", "metric"], sort=False):
        gt = g["time_ns"].to_numpy(np.int64)
        step = step_s or (float(np.median(np.diff(gt))) / 1e9 if gt.size > 1 else None)
        start, vals, length = counters.series_deltas(gt, g["value"].to_numpy(), step)
        frames.append(pd.DataFrame({"time_ns": start, "target": str(target), "metric": str(metric), "value": vals,
                                    "interval_s": length}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


def to_long(chunk) -> pd.DataFrame:
    if isinstance(chunk, Wide):
        return wide_to_long(chunk)
    if isinstance(chunk, Long) and chunk.cumulative:
        return readings_to_long(chunk.frame, chunk.step_s)
    if isinstance(chunk, Long):
        return chunk.frame[COLUMNS]
    raise TypeError(f"not an importer chunk: {type(chunk).__name__}")


def source_writer(kind: str, source: str) -> str:
    """A stable writer name for one source, so a re-import replaces the earlier one."""
    return f"{kind}-{hashlib.sha1(source.encode()).hexdigest()[:10]}"


#: The intervals a sample can cover: a microsecond (the store keeps nanoseconds; `1e-320` passed as
#: positive, and every rate over it was infinite, failing `workload` and its pages for good) to ten years.
MIN_INTERVAL_S = 1e-6
MAX_INTERVAL_S = 10 * 366 * 86400.0


def impossible_to_missing(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Rows whose value no reading can have become missing, counted by why.

    An infinite value (`inf`, or `1e309` which parses as one) is no amount or level; an interval
    outside [MIN_INTERVAL_S, MAX_INTERVAL_S] (zero, negative, infinite, subnormal) is no interval,
    and the value over it means nothing. Every importer's rows pass here, so no file format can
    store them."""
    value = frame["value"].to_numpy(np.float64)
    iv = frame["interval_s"].to_numpy(np.float64)
    infinite = np.isinf(value)
    bad_iv = ~np.isnan(iv) & ~((iv >= MIN_INTERVAL_S) & (iv <= MAX_INTERVAL_S))
    counts = {"infinite": int(infinite.sum()), "interval": int(bad_iv.sum())}
    if counts["infinite"] or counts["interval"]:
        frame = frame.copy()
        frame["value"] = np.where(infinite | bad_iv, np.nan, value)
        frame["interval_s"] = np.where(bad_iv, np.nan, iv)
    return frame, counts


#: The longest target or metric name stored: Lustre's are ~20 characters, a host and a device ~100;
#: a 300-character name was stored, then widened every table and label it reached.
MAX_NAME = 255


def overlong_names(frame: pd.DataFrame) -> tuple[pd.DataFrame, int, str | None]:
    """(`frame` without the rows whose target or metric name is longer than MAX_NAME, how many rows
    were left out, the first such name cut to 40 characters for the note)."""
    long = (frame["target"].astype(str).str.len() > MAX_NAME) | (frame["metric"].astype(str).str.len() > MAX_NAME)
    if not long.any():
        return frame, 0, None
    row = frame[long].iloc[0]
    name = row["target"] if len(str(row["target"])) > MAX_NAME else row["metric"]
    return frame[~long], int(long.sum()), f"{str(name)[:40]}... ({len(str(name)):,} characters)"
