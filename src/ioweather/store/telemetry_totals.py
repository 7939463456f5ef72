"""Per-file totals of the telemetry store, for `ioweather export` (services/telemetry/exporter.py).

A Prometheus counter is a running total, and the store holds amounts per interval: the total of a
(metric, target) is the sum of its valid amounts over every data file. Data files are immutable once
renamed into place (telemetry_layout), so each file is summed once and its sums kept; a scrape then
only lists the dataset and sums the files it has not seen. `FileLister` makes that listing cheap: a
day directory is listed again only when it changed (its mtime) or an import switched (the markers).

Lustre job_stats rows (target "<OST or MDT>/<job id>") are keyed by "<OST|MDT|>/<job id>": summed
over the targets of one kind, so one job is one series per kind, not one per target it touched.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ioweather.errors import StoreError
from ioweather.store import telemetry_layout as layout
from ioweather.store.telemetry_rollup import VALID

#: A directory modified less than this long ago is listed again at the next call: two changes
#: within one tick of a coarse file-system clock would otherwise look like one (git's "racy clean").
RACY_NS = 2_000_000_000

_KEY = ("CASE WHEN starts_with(metric, 'job_') AND strpos(target, '/') > 0 "
        "THEN regexp_extract(split_part(target, '/', 1), '-(OST|MDT)[0-9A-Fa-f]+$', 1) || '/' "
        "|| substr(target, strpos(target, '/') + 1) ELSE target END")


def file_sums(files: list[Path], con=None) -> dict[str, np.ndarray]:
    """Columns (numpy arrays) with one row per (file, metric, key) of the given data files:

    amount    sum of the valid values (finite, >= 0), NaN when there is none
    seen_ns   start of the latest interval with a row, valid or not
    value_ns  start of the latest interval with a valid value (-1 when none)
    value     that value (a gauge's last reading; NaN when none)

    `con`: a DuckDB connection to reuse (opening one costs more than summing a 5-minute file).
    """
    if not files:
        return {"file": np.array([], object), "metric": np.array([], object), "key": np.array([], object),
                "amount": np.array([]), "seen_ns": np.array([], np.int64), "value_ns": np.array([], np.int64),
                "value": np.array([])}
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in files)
    # lazy: duckdb (~0.1 s): only a query of the totals needs it
    import duckdb

    own = con is None
    con = layout.connect_duckdb() if own else con
    try:
        return con.execute(f"""
            SELECT filename AS file, metric, {_KEY} AS key,
                   coalesce(sum(value) FILTER (WHERE {VALID}), 'NaN'::DOUBLE) AS amount,
                   max(time_ns) AS seen_ns,
                   coalesce(max(time_ns) FILTER (WHERE {VALID}), -1) AS value_ns,
                   coalesce(arg_max(value, time_ns) FILTER (WHERE {VALID}), 'NaN'::DOUBLE) AS value
            FROM read_parquet([{quoted}], filename = true, hive_partitioning = false, union_by_name = true)
            GROUP BY ALL""").fetchnumpy()
    except duckdb.Error as e:  # a damaged file, or one a compaction removed since the listing
        where = files[0] if len(files) == 1 else f"{len(files)} files of {files[0].parent.parent}"
        raise StoreError(f"{where}: cannot read: {str(e).splitlines()[0]}") from None
    finally:
        if own:
            con.close()


class FileLister:
    """`telemetry_layout.data_files` of one dataset, each day directory listed again only when it changed."""

    def __init__(self, base: Path):
        self.base = base
        self._days: dict[str, tuple[int, str, list[Path]]] = {}

    def files(self) -> list[Path]:
        if not self.base.is_dir():
            self._days.clear()
            return []
        markers = json.dumps(layout.import_markers(self.base), sort_keys=True)
        now = time.time_ns()
        out: list[Path] = []
        seen = set()
        for d in layout.day_dirs(self.base):
            try:
                mtime = d.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            seen.add(d.name)
            cached = self._days.get(d.name)
            if cached is not None and cached[0] == mtime and cached[1] == markers:
                out.extend(cached[2])
                continue
            day0 = int(pd.Timestamp(d.name[5:], tz="UTC").value)
            files = layout.data_files(self.base, day0, day0 + layout.DAY_NS)
            if now - mtime > RACY_NS:
                self._days[d.name] = (mtime, markers, files)
            else:
                self._days.pop(d.name, None)
            out.extend(files)
        for name in set(self._days) - seen:
            del self._days[name]
        return out
