"""GPFS (IBM Storage Scale) `mmperfmon query` output -> amounts per NSD server, gauges per node.

The text is what NERSC archives and pytokio's connectors/mmperfmon.py reads: a legend naming
each column, then tables whose rows are buckets (`-b 60` gives one row a minute):

    Legend:
     1:	ngfsv468.nersc.gov|GPFSNSDDisk|ddn59dt00|gpfs_nsdds_bytes_read
     2:	ngfsv468.nersc.gov|CPU|cpu_user
    Row           Timestamp gpfs_nsdds_bytes_read cpu_user
      1 2019-03-04-16:01:00             203539391      0.2

A legend entry is `host|sensor[|instance...]|metric`. A wide query is printed as several tables
one after the other, each holding the next columns of the legend (the second table of a query
with 42 columns starts at legend entry 3 when the first held 2). pytokio maps every table's
first column to legend entry 1, which files the later tables' values under the wrong disks and
metrics; here a table's columns continue the legend where the previous table stopped, and its
header names must agree with the legend's metric names, or the table is rejected as garbage.

What the numbers are (how we know):
* I/O metrics (gpfs_nsdds_*, gpfs_fs_*, gpfs_fis_*) are **amounts per bucket**, already the
  difference of GPFS's counters: they go up and down from row to row (a counter never falls),
  and a rate reading is impossible — data/tokio/mmperfmon-gpfsNumberOperations.txt.gz has one
  node reading 39,811,020,800 bytes in one 10-minute row, which as bytes/s would be 40 GB/s from
  a single node, as bytes per bucket an ordinary 66 MB/s. pytokio's archive_mmperfmon stores
  them as `readbytes`/`writebytes` in bytes per step too.
* cpu_user, cpu_sys are percentages (IBM's metric list: "Percentage of total CPU time"), not
  fractions: pytokio multiplies them by 100, yet the samples' cpu_user + cpu_sys reach 7.0,
  which as a fraction would be 700 % busy. mem_total/mem_free carry a unit
  (`31371.0 MB`); MB and kB are binary (MiB, KiB), as /proc/meminfo which they come from.
* Timestamps are the collector's local time without a zone (`--timezone`). We read them as the
  **end** of their bucket: the hourly archive file named ...12:00:00.out holds the rows
  12:01 ... 13:00 (pytokio: "files labeled for HH:00:00 don't contain the data point for
  HH:00:00"); IBM's documentation does not say. Stored times are bucket starts, as everywhere
  in ioweather.

Mapping (the rest is skipped and named in the notes):
    GPFSNSDDisk    gpfs_nsdds_bytes_read/_written, gpfs_nsdds_read_ops/_write_ops
                   -> read_bytes, write_bytes, read_ops, write_ops of the NSD server (its NSDs summed)
    GPFSFilesystem gpfs_fs_bytes_read/_written, gpfs_fs_read_ops/_write_ops
                   -> the same metrics of target "<node>:<gpfs file system>" (that node's I/O to it)
    GPFSFilesystemAPI gpfs_fis_open_calls, _close_calls, _readdir_calls -> md_open, md_close, md_readdir
    CPU            cpu_user + cpu_sys -> cpu_pct
    Memory         mem_total, mem_free -> mem_total_bytes, mem_used_bytes, mem_used_pct
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ioweather.errors import UserError
from ioweather.sources.telemetry.base import local_to_utc_ns
from ioweather.sources.telemetry.importers import Importer
from ioweather.sources.telemetry.textfiles import TextImport, read_members

COLUMNS = ["time_ns", "target", "metric", "value", "interval_s"]
TIME_FORMAT = "%Y-%m-%d-%H:%M:%S"
UNITS = {"B": 1.0, "kB": 1024.0, "KB": 1024.0, "MB": 1024.0 ** 2, "GB": 1024.0 ** 3, "TB": 1024.0 ** 4}
MISSING = {"null", "NULL", "nan", "NaN", "N/A", "n/a", "-"}

# (sensor, GPFS metric) -> our metric; all amounts per bucket
AMOUNTS = {
    ("GPFSNSDDisk", "gpfs_nsdds_bytes_read"): "read_bytes",
    ("GPFSNSDDisk", "gpfs_nsdds_bytes_written"): "write_bytes",
    ("GPFSNSDDisk", "gpfs_nsdds_read_ops"): "read_ops",
    ("GPFSNSDDisk", "gpfs_nsdds_write_ops"): "write_ops",
    ("GPFSFilesystem", "gpfs_fs_bytes_read"): "read_bytes",
    ("GPFSFilesystem", "gpfs_fs_bytes_written"): "write_bytes",
    ("GPFSFilesystem", "gpfs_fs_read_ops"): "read_ops",
    ("GPFSFilesystem", "gpfs_fs_write_ops"): "write_ops",
    ("GPFSFilesystemAPI", "gpfs_fis_open_calls"): "md_open",
    ("GPFSFilesystemAPI", "gpfs_fis_close_calls"): "md_close",
    ("GPFSFilesystemAPI", "gpfs_fis_readdir_calls"): "md_readdir",
}
GAUGE_INPUTS = {("CPU", "cpu_user"), ("CPU", "cpu_sys"), ("Memory", "mem_total"), ("Memory", "mem_free")}

_LEGEND = re.compile(r"^\s*(\d+):\s+(\S.*?)\s*$")
_HEADER = re.compile(r"^\s*Row\s+Timestamp((?:\s+\S+)*)\s*$")
_ROW = re.compile(r"^\s*\d+\s+(\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d)((?:\s+\S+)*)\s*$")


@dataclass
class Values:
    """The numbers of one text before any mapping: one entry per (row, column), in flat lists
    (filled with list.extend per row: per-value Python work is what an archive's size multiplies)."""

    columns: list = field(default_factory=list)    # (host, sensor, instance, metric) of each legend column
    row_time: list = field(default_factory=list)   # 'YYYY-MM-DD-HH:MM:SS' as printed, per row
    row_table: list = field(default_factory=list)  # which table of the text: buckets are per table
    row_line: list = field(default_factory=list)
    value: list = field(default_factory=list)      # per entry
    col: list = field(default_factory=list)        # per entry: index into `columns`
    row: list = field(default_factory=list)        # per entry: index into the row lists
    bad_lines: list = field(default_factory=list)  # (text name, line number, why)
    tables: int = 0                                # tables seen so far
    col_id: dict = field(default_factory=dict)     # legend column -> index into `columns`

    def metric_of(self) -> list[str]:
        """Each entry's GPFS metric name (for inspection and tests)."""
        return [self.columns[c][3] for c in self.col]


def _split_values(tokens: list[str]) -> list[float] | None:
    """'31371.0 MB 1.7 kB 0 null' -> [bytes, bytes, 0, nan]; None when a token is not a value."""
    try:  # the common row holds plain numbers only: convert them in one C-level pass
        out = list(map(float, tokens))
        if all(t[-1].isdigit() or t[-1] == "." for t in tokens):
            return out
    except ValueError:
        pass
    out = []
    for tok in tokens:
        if tok[-1].isdigit() or tok[-1] == ".":
            try:
                out.append(float(tok))
                continue
            except ValueError:
                return None
        if tok in UNITS and out and out[-1] == out[-1]:
            out[-1] *= UNITS[tok]
        elif tok in MISSING:
            out.append(np.nan)
        else:
            return None
    return out


def parse_text(text: str, v: Values | None = None, name: str = "") -> Values:
    """One `mmperfmon query` output (or several concatenated) -> Values, appended to `v` when
    given (an archive's files are converted together: the pandas work per call is fixed). Lines
    that are none of legend, table header, row or blank are counted in `bad_lines`, as are rows
    that do not fit their header and every row of a table whose header disagrees with the legend."""
    v = v if v is not None else Values()
    col_id = v.col_id
    legend: dict[int, tuple[str, str, str, str]] = {}
    used = 0            # legend columns consumed by the tables printed so far
    columns: list[int] | None = None
    ncols = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line or line.isspace():
            continue
        m = _ROW.match(line)
        if m:
            if columns is None:
                v.bad_lines.append((name, lineno, "row without a usable table header"))
                continue
            vals = _split_values(m.group(2).split())
            if vals is None or len(vals) != ncols:
                v.bad_lines.append((name, lineno, f"row does not fit its header ({ncols} columns)"))
                continue
            v.value.extend(vals)
            v.col.extend(columns)
            v.row.extend([len(v.row_time)] * ncols)
            v.row_time.append(m.group(1))
            v.row_table.append(v.tables)
            v.row_line.append(lineno)
            continue
        m = _HEADER.match(line)
        if m:
            names = m.group(1).split()
            v.tables += 1
            want = [legend.get(used + 1 + i) for i in range(len(names))]
            if not names or any(w is None or w[3] != n for w, n in zip(want, names)):
                v.bad_lines.append((name, lineno, "table header does not match the legend"))
                columns = None
            else:
                columns = [col_id[w] for w in want]
                ncols = len(columns)
            used += len(names)
            continue
        if line.strip() == "Legend:":
            legend, used, columns = {}, 0, None
            continue
        m = _LEGEND.match(line)
        if m and "|" in m.group(2):
            parts = m.group(2).split("|")
            if len(parts) >= 3:
                col = (_short(parts[0]), parts[1], "|".join(parts[2:-1]), parts[-1])
                legend[int(m.group(1))] = col
                if col not in col_id:
                    col_id[col] = len(v.columns)
                    v.columns.append(col)
                continue
        v.bad_lines.append((name, lineno, "unrecognized line"))
    return v


def _short(host: str) -> str:
    """'ngfsv468.nersc.gov' -> 'ngfsv468', as the other sources name hosts; an IP address stays whole."""
    first = host.split(".")[0]
    return first if any(c.isalpha() for c in first) and ":" not in host else host


def _target(host: str, sensor: str, instance: str) -> str:
    """NSD metrics belong to the server; file-system metrics to '<node>:<GPFS file system>'."""
    return host if sensor == "GPFSNSDDisk" else f"{host}:{instance.rsplit('|', 1)[-1]}"


def _bucket_seconds(end_ns: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Each row's bucket length: the median spacing of its table's distinct times; a table of a
    single row borrows the median over all tables of the text."""
    per_table = {}
    for t in np.unique(tables):
        u = np.unique(end_ns[tables == t])
        if u.size > 1:
            per_table[t] = float(np.median(np.diff(u))) / 1e9
    fallback = float(np.median(list(per_table.values()))) if per_table else np.nan
    return np.array([per_table.get(t, fallback) for t in tables], dtype=np.float64)


def _group(keys: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group ids of (key, time) pairs: (inverse per entry, key per group, time per group)."""
    tvals, tcode = np.unique(times, return_inverse=True)
    combined = keys.astype(np.int64) * tvals.size + tcode.reshape(-1)
    uniq, inverse = np.unique(combined, return_inverse=True)
    return inverse.reshape(-1), uniq // tvals.size, tvals[uniq % tvals.size]


def _frame(time_ns, target, metric, value, interval_s) -> pd.DataFrame:
    return pd.DataFrame({"time_ns": np.asarray(time_ns, np.int64), "target": np.asarray(target, dtype=object),
                         "metric": np.asarray(metric, dtype=object), "value": np.asarray(value, np.float64),
                         "interval_s": np.asarray(interval_s, np.float64)})


def _amounts(v: Values, col: np.ndarray, val: np.ndarray, start: np.ndarray, iv: np.ndarray) -> pd.DataFrame:
    keys: dict[tuple[str, str], int] = {}
    key_of_col = np.full(len(v.columns), -1, dtype=np.int64)
    expected: list[int] = []
    for i, (host, sensor, instance, metric) in enumerate(v.columns):
        ours = AMOUNTS.get((sensor, metric))
        if ours:
            k = keys.setdefault((_target(host, sensor, instance), ours), len(keys))
            key_of_col[i] = k
            if k == len(expected):
                expected.append(0)
            expected[k] += 1
    k = key_of_col[col]
    sel = k >= 0
    if not sel.any():
        return _frame([], [], [], [], [])
    inv, gkey, gtime = _group(k[sel], start[sel])
    x = val[sel]
    ok = ~np.isnan(x)
    total = np.bincount(inv, weights=np.where(ok, x, 0.0))
    valid = np.bincount(inv, weights=ok)
    # A server's amount is the sum over its NSDs (the legend says how many): one NSD without a
    # value (null, a damaged row, a table lost to truncation) makes the sum unknown, not smaller.
    total[valid < np.asarray(expected)[gkey]] = np.nan
    length = np.zeros(gkey.size)
    np.maximum.at(length, inv, iv[sel])
    names = list(keys)
    return _frame(gtime, [names[g][0] for g in gkey], [names[g][1] for g in gkey], total, length)


def _gauges(v: Values, col: np.ndarray, val: np.ndarray, start: np.ndarray, iv: np.ndarray) -> pd.DataFrame:
    slots = ("cpu_user", "cpu_sys", "mem_total", "mem_free")
    hosts: dict[str, int] = {}
    host_of_col = np.full(len(v.columns), -1, dtype=np.int64)
    slot_of_col = np.full(len(v.columns), -1, dtype=np.int64)
    for i, (host, sensor, _, metric) in enumerate(v.columns):
        if (sensor, metric) in GAUGE_INPUTS:
            host_of_col[i] = hosts.setdefault(host, len(hosts))
            slot_of_col[i] = slots.index(metric)
    h = host_of_col[col]
    sel = h >= 0
    if not sel.any():
        return _frame([], [], [], [], [])
    inv, ghost, gtime = _group(h[sel], start[sel])
    m = np.full((ghost.size, len(slots)), np.nan)
    m[inv, slot_of_col[col][sel]] = val[sel]
    length = np.zeros(ghost.size)
    np.maximum.at(length, inv, iv[sel])
    names = np.asarray(list(hosts), dtype=object)[ghost]
    used = m[:, 2] - m[:, 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(m[:, 2] > 0, 100.0 * used / m[:, 2], np.nan)
    frames = []
    for metric, x, inputs in (("cpu_pct", m[:, 0] + m[:, 1], (0, 1)), ("mem_total_bytes", m[:, 2], (2,)),
                              ("mem_used_bytes", used, (2, 3)), ("mem_used_pct", pct, (2, 3))):
        present = ~np.isnan(m[:, list(inputs)]).all(axis=1)  # a host without that sensor gets no rows
        if present.any():
            frames.append(_frame(gtime[present], names[present], [metric] * int(present.sum()), x[present],
                                 length[present]))
    return pd.concat(frames, ignore_index=True) if frames else _frame([], [], [], [], [])


@dataclass
class Result:
    rows: pd.DataFrame
    notes: list[str]
    bad_lines: int
    skipped_metrics: set


def to_rows(v: Values, tz: str) -> Result:
    """Parsed values -> rows of the store (bucket starts in UTC); bad timestamps count as bad lines."""
    notes: list[str] = []
    bad = len(v.bad_lines)
    skipped = {f"{s}|{m}" for _, s, _, m in v.columns if (s, m) not in AMOUNTS and (s, m) not in GAUGE_INPUTS}
    if not v.value:
        return Result(_frame([], [], [], [], []), notes, bad, skipped)
    times = pd.Series(v.row_time)
    codes, distinct = pd.factorize(times)
    stamp = pd.to_datetime(pd.Series(distinct), format=TIME_FORMAT, errors="coerce")
    end_ns = local_to_utc_ns(stamp, tz)[codes]
    tables = np.asarray(v.row_table)
    ok_row = end_ns >= 0
    bad += int((~ok_row).sum())
    iv_row = np.full(end_ns.size, np.nan)
    iv_row[ok_row] = _bucket_seconds(end_ns[ok_row], tables[ok_row])
    unknown = ok_row & np.isnan(iv_row)
    if unknown.any():
        notes.append(f"{int(unknown.sum())} rows in tables of a single row: bucket length unknown, skipped")
    start_row = end_ns - np.rint(np.nan_to_num(iv_row) * 1e9).astype(np.int64)
    row = np.asarray(v.row, dtype=np.int64)
    keep = (ok_row & ~np.isnan(iv_row))[row]
    col = np.asarray(v.col, dtype=np.int64)[keep]
    val = np.asarray(v.value, dtype=np.float64)[keep]
    start, iv = start_row[row[keep]], iv_row[row[keep]]
    rows = pd.concat([_amounts(v, col, val, start, iv), _gauges(v, col, val, start, iv)], ignore_index=True)
    return Result(rows, notes, bad, skipped)


BATCH_VALUES = 2_000_000  # values converted at once: memory stays flat on big archives


def read_mmperfmon(source: str, tz: str = "UTC", advance: Callable[[int], None] | None = None) -> TextImport:
    """All members of `source` (text, .gz, tar/.tgz, directory) -> one chunk of rows with notes.

    A (time, target, metric) given twice (overlapping archive files) keeps its last row."""
    frames, notes, skipped = [], [], set()
    bad_total, members = 0, 0
    first_bad: str | None = None
    v = Values()

    def convert() -> None:
        nonlocal bad_total, first_bad, v
        r = to_rows(v, tz)
        frames.append(r.rows)
        notes.extend(r.notes)
        skipped.update(r.skipped_metrics)
        bad_total += r.bad_lines
        if first_bad is None and v.bad_lines:
            name, line, why = v.bad_lines[0]
            first_bad = f"{name} line {line}: {why}"
        v = Values()

    for member in read_members(source):
        members += 1
        if member.damage:
            notes.append(f"{member.damage}: the rest is lost")
        parse_text(member.text, v, member.name)
        if len(v.value) >= BATCH_VALUES:
            convert()
        if advance:
            advance(1)
    convert()
    rows = pd.concat(frames, ignore_index=True)
    if rows.empty:
        why = f" ({bad_total} unreadable lines, first {first_bad})" if bad_total else ""
        raise UserError(f"{source}: no mmperfmon values found in {members} file(s){why}")
    n = len(rows)
    rows = rows.drop_duplicates(subset=["time_ns", "target", "metric"], keep="last")
    if len(rows) < n:
        notes.append(f"{n - len(rows)} repeated (time, target, metric) rows: kept the last of each")
    if bad_total:
        notes.append(f"{bad_total} unreadable lines skipped (first: {first_bad})" if first_bad
                     else f"{bad_total} rows with impossible timestamps skipped")
    if skipped:
        notes.append(f"metrics without a mapping skipped: {', '.join(sorted(skipped))}")
    if tz.upper() in ("UTC", "ETC/UTC"):
        notes.append("mmperfmon prints the collector's local time without a zone; read as UTC (give --timezone ZONE)")
    rows = rows.sort_values(["time_ns", "target", "metric"], kind="stable").reset_index(drop=True)
    return TextImport(rows, notes, bad_lines=bad_total)


class MmperfmonImporter(Importer):
    kind = "mmperfmon"

    def chunks(self, advance: Callable[[int], None]) -> Iterator[TextImport]:
        chunk = read_mmperfmon(self.source, self.tz or "UTC", advance=advance)
        self.notes += chunk.notes
        self.bad_lines = chunk.bad_lines
        yield chunk
