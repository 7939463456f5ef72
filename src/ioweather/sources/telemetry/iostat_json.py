"""`iostat -x -t -o JSON` output (sysstat) -> amounts per interval per block device.

iostat prints rates averaged over each report's interval; an amount is rate x interval, where
the interval is the time since the previous report's timestamp. The first report averages
since boot, so it is skipped (without -y) or has no known start (with -y): either way it gives
no row. Key names changed across sysstat versions and options:

    sysstat 12.x   r/s w/s rkB/s wkB/s (rMB/s wMB/s with -m) ... util
    sysstat 11.x   r w rkB wkB (rMB wMB) ... avgrq-sz avgqu-sz await svctm util

Timestamps follow the locale unless S_TIME_FORMAT=ISO is set (then ISO 8601 with offset, the
only unambiguous form: recommend it). Otherwise `11/22/26 03:48:36` (C, en_US: month first),
`11/22/2026 03:48:36 AM` (12-hour clocks) or day-first locales; a field above 12 decides the
order, else month-first is assumed. Times without offset are in `timezone`.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from datetime import datetime, timezone as dt_timezone

import numpy as np
import pandas as pd

from ioweather.errors import UserError, from_os_error
from ioweather.files import open_regular
from ioweather.sources.telemetry.base import Long, local_to_utc_ns
from ioweather.sources.telemetry.importers import Importer

RATE_KEYS = {  # metric: [(key, factor to per-second base units)]
    "read_ops": [("r/s", 1.0), ("r", 1.0)],
    "write_ops": [("w/s", 1.0), ("w", 1.0)],
    "read_bytes": [("rkB/s", 1024.0), ("rkB", 1024.0), ("rMB/s", 1048576.0), ("rMB", 1048576.0),
                   ("rsec/s", 512.0), ("rsec", 512.0)],
    "write_bytes": [("wkB/s", 1024.0), ("wkB", 1024.0), ("wMB/s", 1048576.0), ("wMB", 1048576.0),
                    ("wsec/s", 512.0), ("wsec", 512.0)],
    "busy_s": [("util", 0.01), ("%util", 0.01)],
}
_DATE = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{2}|\d{4})[ T]+(\d{1,2}):(\d{2}):(\d{2})\s*([AaPp][Mm])?$")


def parse_timestamp(text: str, tz: str = "UTC") -> tuple[int, bool]:
    """(UTC unix ns, day_first_was_assumed_or_decided) of one iostat timestamp."""
    s = str(text).strip()
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        dt = None
    if dt is None:
        m = _DATE.match(s)
        if not m:
            raise UserError(f"unrecognized iostat timestamp {s!r}: run iostat with S_TIME_FORMAT=ISO")
        a, b, year, hh, mm, ss, ampm = m.groups()
        a, b, y, hh = int(a), int(b), int(year), int(hh)
        month, day = (b, a) if a > 12 else (a, b)
        if len(year) == 2:  # 0001 is the year 1, not 2001
            y += 2000
        if ampm:
            hh = hh % 12 + (12 if ampm.lower() == "pm" else 0)
        try:
            dt = datetime(y, month, day, hh, int(mm), int(ss))
        except ValueError:  # 13/13/26, 02/30/26, 99:99:99
            raise UserError(f"impossible iostat timestamp {s!r}") from None
    if dt.tzinfo is None:
        ns, naive = int(local_to_utc_ns(pd.Series([dt], dtype=object), tz)[0]), True
    else:
        try:
            ns, naive = int(round(dt.astimezone(dt_timezone.utc).timestamp() * 1e9)), False
        except (OverflowError, ValueError):  # year 1 with a positive offset
            ns, naive = -1, False
    if not 0 <= ns < 2**63:  # before 1970 or after 2262: no unix ns holds it
        raise UserError(f"impossible iostat timestamp {s!r} (before 1970 or after 2262)")
    return ns, naive


def _rate(disk: dict, metric: str) -> float | None:
    """The per-second rate of `metric`; NaN when iostat printed an impossible one (negative, infinite)."""
    for key, factor in RATE_KEYS[metric]:
        if key in disk:
            try:
                r = float(disk[key]) * factor
            except (TypeError, ValueError, OverflowError):
                return None
            return r if 0 <= r < math.inf else math.nan
    return None


def _dicts(value, what: str) -> list[dict]:
    """`value` as a list of JSON objects, or a one-line error naming `what` is wrong."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise UserError(f"not iostat JSON output: {what} is not a list of objects")
    return value


def _number(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return math.nan


def parse_iostat_json(text: str, tz: str = "UTC") -> Long:
    try:
        doc = json.loads(text)
        hosts = doc["sysstat"]["hosts"]
    except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as e:
        raise UserError(f"not iostat JSON output ({e.__class__.__name__}: {e}): expected iostat -x -t -o JSON") from None
    hosts = _dicts(hosts, '"hosts"')
    rows = {"time_ns": [], "target": [], "metric": [], "value": [], "interval_s": []}
    notes: list[str] = []
    naive = False
    known_keys = False
    impossible = 0
    for host in hosts:
        node = str(host.get("nodename") or "host")
        stats = _dicts(host.get("statistics"), '"statistics"')
        prev = None
        for rep in stats:
            if "timestamp" not in rep:
                raise UserError("iostat JSON has no timestamps: run iostat with -t")
            t, was_naive = parse_timestamp(rep["timestamp"], tz)
            naive |= was_naive
            if prev is None:
                prev = t
                continue  # since boot (or since an unknown start with -y)
            dt = (t - prev) / 1e9
            if dt <= 0:
                notes.append(f"{node}: report at {rep['timestamp']} does not advance in time: skipped")
                continue
            start, prev = prev, t
            for disk in _dicts(rep.get("disk"), '"disk"'):
                dev = disk.get("disk_device") or disk.get("disk-device") or disk.get("device")
                if not dev:
                    continue
                for metric in RATE_KEYS:
                    r = _rate(disk, metric)
                    if r is None:
                        continue
                    known_keys = True
                    impossible += math.isnan(r)
                    rows["time_ns"].append(start)
                    rows["target"].append(f"{node}:{dev}")
                    rows["metric"].append(metric)
                    rows["value"].append(r * dt)
                    rows["interval_s"].append(dt)
            cpu = rep.get("avg-cpu")
            if isinstance(cpu, dict) and "idle" in cpu:
                idle = _number(cpu["idle"])
                ok = 0 <= idle <= 100
                impossible += not ok
                rows["time_ns"].append(start)
                rows["target"].append(node)
                rows["metric"].append("cpu_pct")
                rows["value"].append(100.0 - idle if ok else math.nan)
                rows["interval_s"].append(dt)
        if len(stats) == 1:
            notes.append(f"{node}: only one report (the since-boot average): nothing to import; run iostat with a count >= 2")
    if any(h.get("statistics") for h in hosts) and not known_keys and rows["time_ns"] == []:
        disks = [d for h in hosts for r in _dicts(h.get("statistics"), '"statistics"')[1:]
                 for d in _dicts(r.get("disk"), '"disk"')]
        if disks:
            keys = ", ".join(sorted(disks[0].keys())[:12])
            raise UserError(f"iostat JSON with unknown device keys ({keys}): expected r/s, rkB/s, ... (iostat -x)")
    if impossible:
        notes.append(f"{impossible} impossible rates (negative, infinite or not a number): stored as missing")
    if naive:
        notes.append(f"timestamps without UTC offset read as {tz} (set S_TIME_FORMAT=ISO for unambiguous times)")
    frame = pd.DataFrame(rows)
    frame["time_ns"] = frame["time_ns"].astype(np.int64)
    return Long(frame, notes)


class IostatImporter(Importer):
    kind = "iostat"

    def label(self) -> str:
        return "iostat stdin" if self.source == "-" else super().label()

    def total(self) -> int:
        return 2

    def chunks(self, advance: Callable[[int], None]) -> Iterator[Long]:
        if self.source == "-":
            text = sys.stdin.read()
        elif not os.path.lexists(self.source):
            raise UserError(f"iostat file {self.source!r} not found")
        else:
            with open_regular(self.source, what="read iostat file") as f:
                try:
                    text = f.read().decode("utf-8", errors="replace")
                except OSError as e:
                    raise from_os_error(self.source, e, "read iostat file") from None
        chunk = parse_iostat_json(text, self.tz or "UTC")
        self.notes += chunk.notes
        advance(1)
        yield chunk
        advance(1)
