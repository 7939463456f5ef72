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
  fractions: an idle NSD server shows 0.08; pytokio multiplies them by 100 (8 %), which would
  make the idle servers of the test data 20-76 % busy. mem_total/mem_free carry a unit
  (`31371.0 MB`); MB and kB are binary (MiB, KiB), as /proc/meminfo which they come from.
* Timestamps are the collector's local time without a zone (`--timezone`), and label the
  **end** of their bucket: an archive file made by querying 12:00-13:00 holds the rows
  12:01 ... 13:00 (pytokio notes the same: "files labeled for HH:00:00 don't contain the
  data point for HH:00:00"). Stored times are bucket starts, as everywhere in ioweather.

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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ioweather.errors import UserError
from ioweather.sources.telemetry.base import local_to_utc_ns
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
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


@dataclass
class Values:
    """The numbers of one text, one entry per (row, column), before any mapping."""

    time: list = field(default_factory=list)      # 'YYYY-MM-DD-HH:MM:SS' as printed
    host: list = field(default_factory=list)
    sensor: list = field(default_factory=list)
    instance: list = field(default_factory=list)  # the legend's middle part ('' when none)
    metric: list = field(default_factory=list)
    value: list = field(default_factory=list)
    table: list = field(default_factory=list)     # which table of the text: buckets are per table
    line: list = field(default_factory=list)
    bad_lines: list = field(default_factory=list)  # (line number, why)
    columns: set = field(default_factory=set)      # every (host, sensor, instance, metric) of the legends


def _split_values(tokens: list[str]) -> list[float] | None:
    """'31371.0 MB 1.7 kB 0 null' -> [bytes, bytes, 0, nan]; None when a token is not a value."""
    out: list[float] = []
    for tok in tokens:
        if tok in UNITS and out and not np.isnan(out[-1]):
            out[-1] *= UNITS[tok]
        elif _NUMBER.match(tok):
            out.append(float(tok))
        elif tok in MISSING:
            out.append(np.nan)
        else:
            return None
    return out


def parse_text(text: str, values: Values | None = None, table_base: int = 0) -> Values:
    """One `mmperfmon query` output (or several concatenated) -> Values. Lines that are none of
    legend, table header, row or blank are counted in `bad_lines`, as are rows that do not fit
    their header and every row of a table whose header disagrees with the legend."""
    v = values if values is not None else Values()
    legend: dict[int, tuple[str, str, str, str]] = {}
    used = 0            # legend columns consumed by the tables printed so far
    columns: list[tuple[str, str, str, str]] | None = None
    table = table_base
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _ROW.match(line)
        if m:
            if columns is None:
                v.bad_lines.append((lineno, "row without a usable table header"))
                continue
            vals = _split_values(m.group(2).split())
            if vals is None or len(vals) != len(columns):
                v.bad_lines.append((lineno, f"row does not fit its header ({len(columns)} columns)"))
                continue
            for (host, sensor, instance, metric), x in zip(columns, vals):
                v.time.append(m.group(1))
                v.host.append(host)
                v.sensor.append(sensor)
                v.instance.append(instance)
                v.metric.append(metric)
                v.value.append(x)
                v.table.append(table)
                v.line.append(lineno)
            continue
        m = _HEADER.match(line)
        if m:
            names = m.group(1).split()
            table += 1
            want = [legend.get(used + 1 + i) for i in range(len(names))]
            if not names or any(w is None or w[3] != n for w, n in zip(want, names)):
                v.bad_lines.append((lineno, "table header does not match the legend"))
                columns = None
            else:
                columns = want
            used += len(names)
            continue
        if line.strip() == "Legend:":
            legend, used, columns = {}, 0, None
            continue
        m = _LEGEND.match(line)
        if m and "|" in m.group(2):
            parts = m.group(2).split("|")
            if len(parts) >= 3:
                legend[int(m.group(1))] = col = (parts[0].split(".")[0], parts[1], "|".join(parts[2:-1]), parts[-1])
                v.columns.add(col)
                continue
        v.bad_lines.append((lineno, "unrecognized line"))
    return v


def _bucket_seconds(times_ns: np.ndarray, tables: np.ndarray) -> np.ndarray:
    """Each value's bucket length: the median spacing of its table's distinct times; a table of
    a single row borrows the median over all tables of the text."""
    out = np.full(times_ns.size, np.nan)
    per_table = {}
    for t in np.unique(tables):
        u = np.unique(times_ns[tables == t])
        if u.size > 1:
            per_table[t] = float(np.median(np.diff(u))) / 1e9
    fallback = float(np.median(list(per_table.values()))) if per_table else np.nan
    for t in np.unique(tables):
        out[tables == t] = per_table.get(t, fallback)
    return out


def _target(host: str, sensor: str, instance: str) -> str:
    """NSD metrics belong to the server; file-system metrics to '<node>:<GPFS file system>'."""
    return host if sensor == "GPFSNSDDisk" else f"{host}:{instance.rsplit('|', 1)[-1]}"


def _amounts(df: pd.DataFrame, columns: set) -> pd.DataFrame:
    ours = pd.Series([AMOUNTS.get(k) for k in zip(df["sensor"], df["metric"])], index=df.index, dtype=object)
    a = df[ours.notna()].assign(ours=ours[ours.notna()])
    if a.empty:
        return pd.DataFrame(columns=COLUMNS)
    a = a.assign(target=[_target(h, s, i) for h, s, i in zip(a["host"], a["sensor"], a["instance"])])
    # How many legend columns add up to each (target, metric): a server's amount is the sum over
    # its NSDs, and one NSD without a value (null, a damaged row, a table lost to truncation)
    # makes that sum unknown, not smaller.
    expected: dict = {}
    for host, sensor, instance, metric in columns:
        if (sensor, metric) in AMOUNTS:
            k = (_target(host, sensor, instance), AMOUNTS[(sensor, metric)])
            expected[k] = expected.get(k, 0) + 1
    g = a.groupby(["time_ns", "target", "ours"], sort=False)
    out = g.agg(value=("value", "sum"), valid=("value", "count"), interval_s=("interval_s", "max")).reset_index()
    want = np.array([expected.get(k, 0) for k in zip(out["target"], out["ours"])])
    out.loc[out["valid"].to_numpy() < want, "value"] = np.nan
    return out.rename(columns={"ours": "metric"})[COLUMNS]


def _gauges(df: pd.DataFrame) -> pd.DataFrame:
    g = df[[k in GAUGE_INPUTS for k in zip(df["sensor"], df["metric"])]]
    if g.empty:
        return pd.DataFrame(columns=COLUMNS)
    wide = g.pivot_table(index=["time_ns", "host"], columns="metric", values="value", aggfunc="last", dropna=False)
    wide = wide.reindex(columns=["cpu_user", "cpu_sys", "mem_total", "mem_free"])
    iv = g.groupby(["time_ns", "host"])["interval_s"].max().reindex(wide.index)
    used = wide["mem_total"] - wide["mem_free"]
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = 100.0 * used / wide["mem_total"].where(wide["mem_total"] > 0)
    frames = []
    for metric, s in (("cpu_pct", wide["cpu_user"] + wide["cpu_sys"]), ("mem_total_bytes", wide["mem_total"]),
                      ("mem_used_bytes", used), ("mem_used_pct", pct)):
        present = wide[["cpu_user", "cpu_sys"] if metric == "cpu_pct" else ["mem_total", "mem_free"]].notna().any(axis=1)
        if not present.any():
            continue  # the text has no such sensor: no rows, rather than rows of NaN
        idx = s.index[present.to_numpy()]
        frames.append(pd.DataFrame({"time_ns": idx.get_level_values(0), "target": idx.get_level_values(1),
                                    "metric": metric, "value": s[present].to_numpy(np.float64),
                                    "interval_s": iv[present].to_numpy(np.float64)}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)


@dataclass
class Result:
    rows: pd.DataFrame
    notes: list[str]
    bad_lines: int
    skipped_metrics: set


def to_rows(v: Values, tz: str, where: str = "") -> Result:
    """Parsed values -> rows of the store (bucket starts in UTC); bad timestamps count as bad lines."""
    notes: list[str] = []
    bad = len(v.bad_lines)
    if not v.value:
        return Result(pd.DataFrame(columns=COLUMNS), notes, bad, set())
    df = pd.DataFrame({"host": v.host, "sensor": v.sensor, "instance": v.instance, "metric": v.metric,
                       "value": np.asarray(v.value, dtype=np.float64), "table": v.table, "line": v.line})
    stamp = pd.to_datetime(pd.Series(v.time), format=TIME_FORMAT, errors="coerce")
    end_ns = local_to_utc_ns(stamp, tz)
    ok = end_ns >= 0
    if not ok.all():
        bad += int(df.loc[~ok, "line"].nunique())
        df, end_ns = df[ok], end_ns[ok]
    df = df.assign(interval_s=_bucket_seconds(end_ns, df["table"].to_numpy()))
    unknown = df["interval_s"].isna()
    if unknown.any():
        notes.append(f"{where}{int(unknown.sum())} values in tables of a single row: bucket length unknown, skipped")
        df, end_ns = df[~unknown], end_ns[~unknown.to_numpy()]
    df = df.assign(time_ns=end_ns - np.rint(df["interval_s"].to_numpy() * 1e9).astype(np.int64))
    skipped = {f"{s}|{m}" for s, m in zip(df["sensor"], df["metric"]) if (s, m) not in AMOUNTS and (s, m) not in GAUGE_INPUTS}
    rows = pd.concat([_amounts(df, v.columns), _gauges(df)], ignore_index=True)
    return Result(rows, notes, bad, skipped)


def read_mmperfmon(source: str, tz: str = "UTC", advance: Callable[[int], None] | None = None) -> TextImport:
    """All members of `source` (text, .gz, tar/.tgz, directory) -> one Long chunk with notes.

    A (time, target, metric) given twice (overlapping archive files) keeps its last row."""
    frames, notes, skipped = [], [], set()
    bad_total, members = 0, 0
    first_bad: str | None = None
    for member in read_members(source):
        members += 1
        if member.damage:
            notes.append(f"{member.damage}: the rest is lost")
        v = parse_text(member.text)
        r = to_rows(v, tz, where=f"{member.name}: ")
        frames.append(r.rows)
        notes += r.notes
        skipped |= r.skipped_metrics
        if r.bad_lines:
            bad_total += r.bad_lines
            if first_bad is None and v.bad_lines:
                first_bad = f"{member.name} line {v.bad_lines[0][0]}: {v.bad_lines[0][1]}"
        if advance:
            advance(1)
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
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
    rows = rows.astype({"time_ns": np.int64, "target": object, "metric": object, "value": np.float64,
                        "interval_s": np.float64})
    return TextImport(rows, notes, bad_lines=bad_total)

