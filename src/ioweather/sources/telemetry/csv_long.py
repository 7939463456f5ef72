"""The generic long CSV anyone can produce: `time,target,metric,value[,interval_s]`.

time      ISO 8601 (`2024-03-01T10:00:05Z`, `2024-03-01 10:00:05+01:00`; without an offset it
          is read in `timezone`, UTC by default) or unix seconds (`1709287205.0`)
value     the amount in the interval that starts at `time` (bytes, operations) or a gauge;
          empty = missing. With `cumulative=True` the values are counters instead, handed over
          as readings and converted to amounts per interval at ingest like every other source's
          (a decrease is missing).
interval_s  optional; else `interval_s` given by the caller, else each series' median spacing.

Rows may come in any order (they are sorted). A (time, target, metric) given twice keeps its
last row and is reported. Negative amounts are impossible, so they become missing and are
reported. An unparseable time or value rejects the whole file with its line number: nothing
of a file that is half wrong is stored.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Iterator

import numpy as np
import pandas as pd

from ioweather.errors import UserError, from_os_error
from ioweather.files import open_regular
from ioweather.sources.telemetry.base import Long, local_to_utc_ns, utc_ns
from ioweather.sources.telemetry.importers import Importer

REQUIRED = ("time", "target", "metric", "value")
_OFFSET = re.compile(r"(?:Z|[+-]\d{2}:?\d{2})$", re.IGNORECASE)
_LAST_S = 9_223_372_036.0  # 2262-04-11: the last second an int64 of ns holds
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _parse_times(col: pd.Series, tz: str, path: str) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(col):  # all unix seconds: pandas already parsed them
        out = _seconds_to_ns(col.to_numpy(np.float64))
    else:
        out = np.full(len(col), -1, dtype=np.int64)
        todo = np.arange(len(col))
        if tz.upper() in ("UTC", "ETC/UTC"):
            # the common case in one call: ISO 8601 with or without offset, naive ones being UTC
            out = utc_ns(pd.to_datetime(col.astype(str), utc=True, errors="coerce", format="ISO8601"))
            todo = np.flatnonzero(out < 0)
        if todo.size:
            _parse_times_slowly(col.iloc[todo].astype(str).str.strip(), tz, out, todo)
    bad = np.flatnonzero(out < 0)
    if bad.size:
        i = int(bad[0])
        raise UserError(f"{path} line {i + 2}: unparseable time {col.iloc[i]!r} "
                        f"({bad.size} such rows): use ISO 8601 or unix seconds")
    return out


def _parse_times_slowly(s: pd.Series, tz: str, out: np.ndarray, where: np.ndarray) -> None:
    """Unix seconds among ISO strings, and naive ISO times in a zone other than UTC."""
    numeric = s.str.fullmatch(_NUMBER).to_numpy(dtype=bool)
    if numeric.any():
        out[where[numeric]] = _seconds_to_ns(pd.to_numeric(s[numeric], errors="coerce").to_numpy(np.float64))
    rest = np.flatnonzero(~numeric)
    if not rest.size:
        return
    text = s.iloc[rest]
    aware = text.str.contains(_OFFSET).to_numpy(dtype=bool)
    if aware.any():
        t = pd.to_datetime(text[aware].str.replace(r"z$", "Z", regex=True), utc=True, errors="coerce",
                           format="ISO8601")
        out[where[rest[aware]]] = utc_ns(t)
    if (~aware).any():
        naive = pd.to_datetime(text[~aware], errors="coerce", format="ISO8601")
        out[where[rest[~aware]]] = local_to_utc_ns(naive, tz)


def _seconds_to_ns(secs: np.ndarray) -> np.ndarray:
    """Unix seconds -> ns; -1 (bad) for NaN and for what an int64 of ns cannot hold (1e30, -5)."""
    ok = (secs >= 0) & (secs < _LAST_S)  # NaN compares False
    return np.where(ok, np.rint(np.where(ok, secs, 0) * 1e9), -1).astype(np.int64)


def _parse_values(col: pd.Series, path: str) -> np.ndarray:
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(np.float64)
    text = col.astype(str).str.strip()
    value = pd.to_numeric(text, errors="coerce").to_numpy(np.float64)
    missing = text.isin(["", "nan", "NaN", "null", "NULL", "NA"]).to_numpy(dtype=bool)
    bad = np.flatnonzero(np.isnan(value) & ~missing)
    if bad.size:
        i = int(bad[0])
        raise UserError(f"{path} line {i + 2}: value {col.iloc[i]!r} is not a number ({bad.size} such rows)")
    return value


#: The header is checked before the body is parsed: pandas took 17.6 s over a one-line CSV of 40,000
#: fields (10^6: over 300 s) before the missing columns could be said. A long CSV has 4 or 5 columns.
MAX_HEADER_BYTES = 1 << 20
MAX_COLUMNS = 256


def _check_header(f, path: str) -> None:
    """A one-line UserError unless the first line names the required columns (read at most
    MAX_HEADER_BYTES of it, at most MAX_COLUMNS columns); `f` is left at its start."""
    head = f.readline(MAX_HEADER_BYTES + 1)
    f.seek(0)
    if not head:
        return  # empty: pandas says so
    if len(head) > MAX_HEADER_BYTES:
        raise UserError(f"{path}: the header line is longer than {MAX_HEADER_BYTES:,} bytes; "
                        "expected time,target,metric,value[,interval_s]")
    try:
        text = head.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: the header line is not UTF-8 text (byte {e.start:,})") from None
    columns = [c.strip().lower() for c in next(csv.reader([text]), [])]
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}; expected time,target,metric,value[,interval_s]")
    if len(columns) > MAX_COLUMNS:
        raise UserError(f"{path}: the header has {len(columns):,} columns, more than {MAX_COLUMNS}; "
                        "expected time,target,metric,value[,interval_s]")


def read_csv_long(path: str, tz: str = "UTC", interval_s: float | None = None, cumulative: bool = False) -> Long:
    if not os.path.lexists(path):  # the message scripts and tests know, before the generic one
        raise UserError(f"CSV file {path!r} not found")
    with open_regular(path, what="read CSV file") as f:
        _check_header(f, path)
        try:
            # pandas parses numeric columns itself (fast); a column with anything else stays text and
            # is checked row by row, to name the first bad line
            raw = pd.read_csv(f, dtype={"target": str, "metric": str}, keep_default_na=False,
                              na_values={"value": ["", "nan", "NaN", "null", "NULL", "NA"], "interval_s": [""]})
        except OSError as e:
            raise from_os_error(path, e, "read CSV file") from None
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError, ValueError) as e:
            raise UserError(f"{path}: not a readable CSV ({str(e).splitlines()[0]})") from None
    raw.columns = [str(c).strip().lower() for c in raw.columns]
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}; expected time,target,metric,value[,interval_s]")
    notes: list[str] = []
    if raw.empty:
        return Long(pd.DataFrame(columns=["time_ns", "target", "metric", "value", "interval_s"]), [f"{path}: no rows"])
    t = _parse_times(raw["time"], tz, path)
    value = _parse_values(raw["value"], path)
    # series as integer codes: sorting and duplicate detection on numbers, not on strings
    tcode, tnames = pd.factorize(raw["target"].astype(str).str.strip())
    mcode, mnames = pd.factorize(raw["metric"].astype(str).str.strip())
    bad_name = np.flatnonzero((tnames[tcode] == "") | (mnames[mcode] == "")) if len(tnames) else np.empty(0, int)
    if bad_name.size:
        raise UserError(f"{path} line {int(bad_name[0]) + 2}: empty target or metric")
    iv = (pd.to_numeric(raw["interval_s"], errors="coerce").to_numpy(np.float64)
          if "interval_s" in raw.columns else None)

    if not (np.diff(t) >= 0).all():
        notes.append(f"{path}: rows out of time order: sorted")
    series_raw = tcode.astype(np.int64) * len(mnames) + mcode
    order = np.lexsort((np.arange(len(t)), t, series_raw))   # by series, time, then line
    series, times, value = series_raw[order], t[order], value[order]
    iv = iv[order] if iv is not None else None
    dup = np.r_[(series[1:] == series[:-1]) & (times[1:] == times[:-1]), False]  # a later row follows
    if dup.any():
        notes.append(f"{path}: {int(dup.sum())} duplicate (time, target, metric) rows: kept the last of each")
        keep = ~dup
        series, times, value, order = series[keep], times[keep], value[keep], order[keep]
        iv = iv[keep] if iv is not None else None
    target = np.asarray(tnames.astype(str), dtype=object)[tcode[order]]
    metric = np.asarray(mnames.astype(str), dtype=object)[mcode[order]]
    if cumulative:  # the readings as they are, sorted by series and time: ingest makes the amounts
        return Long(pd.DataFrame({"time_ns": times, "target": target, "metric": metric, "value": value}), notes,
                    cumulative=True, step_s=interval_s)
    first = np.r_[True, series[1:] != series[:-1]]          # rows are sorted by series, then time
    gaps = np.where(first, np.nan, np.r_[np.nan, np.diff(times)] / 1e9)
    median_gap = pd.Series(gaps).groupby(series).transform("median").to_numpy()
    if iv is not None:
        length = np.where(np.isnan(iv), interval_s or median_gap, iv)
    elif interval_s:
        length = np.full(len(times), float(interval_s))
    else:
        length = median_gap
    out = pd.DataFrame({"time_ns": times, "target": target, "metric": metric, "value": value,
                        "interval_s": length})
    if out["interval_s"].isna().any():
        raise UserError(f"{path}: cannot tell the interval of series with a single row: add an interval_s column "
                        "or give --interval")
    neg = (out["value"] < 0).to_numpy()
    if neg.any():
        notes.append(f"{path}: {int(neg.sum())} negative values are impossible amounts: stored as missing")
        out.loc[neg, "value"] = np.nan
    return Long(out, notes)


class CsvImporter(Importer):
    kind = "csv"

    def total(self) -> int:
        return 2

    def chunks(self, advance: Callable[[int], None]) -> Iterator[Long]:
        chunk = read_csv_long(self.source, self.tz or "UTC", self.interval, bool(self.cumulative))
        self.notes += chunk.notes
        advance(1)
        yield chunk
        advance(1)
