"""The one small interface every telemetry source implements (node_exporter style).

A live source (`Source`) reads raw samples when asked: cumulative counters as the kernel or
Lustre exports them, gauges as they are. It never computes deltas or rates (stats/counters.py
does) and it never writes anything. A source that fails raises; one that finds part of its
files unreadable returns what it could read and notes the rest with `warn`. The runner
(runner.py) calls each source in its own thread with a deadline, so one that fails or hangs
is reported and skipped while the others go on.

Importers (lmt, iostat_json, tts, csv_long) read a recorded history instead and yield
`Wide` or `Long` chunks, also raw: counters stay cumulative until services/telemetry/ingest.py converts them.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ioweather.config import short_host
from ioweather.units import check_timezone  # noqa: F401 (re-exported: the importers check --timezone)

COUNTER = "counter"   # cumulative; becomes an amount per interval
GAUGE = "gauge"       # a level at the sample time
AMOUNT = "amount"     # already an amount per interval (iostat, TTS, CSV)


class SourceError(Exception):
    """A source cannot read anything this time (missing tree, unparseable file, no tool)."""


@dataclass(frozen=True, slots=True)
class Sample:
    target: str
    metric: str
    value: float
    kind: str = COUNTER
    fs: str | None = None  # dataset override: Lustre server targets belong to their own file system


class Source:
    """Base of live sources. Subclasses set `name` and implement `collect`."""

    name: ClassVar[str] = "source"
    description: ClassVar[str] = ""

    def __init__(self, root: str | os.PathLike = "/", host: str | None = None):
        self.root = Path(root)
        self.host = host or short_hostname()
        self.warnings: list[str] = []

    def available(self) -> bool:
        """Whether this machine (or --proc-root tree) has anything for this source now."""
        return True

    def collect(self) -> list[Sample]:
        raise NotImplementedError

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def path(self, rel: str) -> Path:
        """`rel` (like 'proc/diskstats') under the root (/ or --proc-root)."""
        return self.root / rel.lstrip("/")


def short_hostname() -> str:
    return short_host(socket.gethostname())


def read_text(path: Path) -> str:
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        return f.read()


def lustre_fsname(target: str) -> str | None:
    """'lquake-OST000a' -> 'lquake' (None when the name has no -OST/-MDT part)."""
    for marker in ("-OST", "-MDT"):
        i = target.rfind(marker)
        if i > 0:
            return target[:i]
    return None


@dataclass
class Wide:
    """One metric for several targets on a common time grid, as an importer reads it.

    `values[i, j]` is the reading of targets[j] at times_ns[i]; NaN (or `missing`) marks a
    sample that does not exist. For AMOUNT, `interval_s[i]` is the length of row i's interval.
    `overlap` says the first row repeats the previous chunk's last row (counters need it as a
    baseline; gauges and amounts skip it).
    """

    metric: str
    kind: str
    times_ns: np.ndarray
    targets: list[str]
    values: np.ndarray
    step_s: float | None = None
    missing: np.ndarray | None = None
    interval_s: np.ndarray | None = None
    overlap: bool = False
    scale: float = 1.0  # multiply amounts/levels by this (KiB -> bytes); applied after the deltas
    sparse: bool = False  # a missing gauge reading is no row, not a missing value (a capture without the parameter)


@dataclass
class Long:
    """Rows already in the store's long format (time_ns, target, metric, value, interval_s).

    With `cumulative`, `value` is each series' counter reading at `time_ns` (no interval_s):
    ingest turns consecutive readings into amounts, over `step_s` or else each series' median spacing."""

    frame: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    cumulative: bool = False
    step_s: float | None = None


def local_to_utc_ns(values: pd.Series, tz: str) -> np.ndarray:
    """Naive local date-times (strings or datetime objects) in zone `tz` -> UTC unix ns (-1 = bad).

    In the autumn hour that occurs twice, the order of the samples decides (pandas 'infer');
    when it cannot, the first (summer) reading is taken.
    """
    check_timezone(tz)
    naive = pd.to_datetime(values, errors="coerce")
    if getattr(naive.dt, "tz", None) is not None:
        naive = naive.dt.tz_convert("UTC").dt.tz_localize(None)
    # a day of margin for the zone's offset; utc_ns checks the exact range after the conversion
    naive = naive.where((naive > _FIRST_NAIVE) & (naive < _LAST_NAIVE))
    if tz.upper() in ("UTC", "ETC/UTC", "Z"):
        local = naive.dt.tz_localize("UTC")
    else:
        try:
            local = naive.dt.tz_localize(tz, ambiguous="infer", nonexistent="shift_forward")
        except Exception:  # pytz AmbiguousTimeError: not inferable from the sequence
            local = naive.dt.tz_localize(tz, ambiguous=np.ones(len(naive), dtype=bool), nonexistent="shift_forward")
    return utc_ns(local.dt.tz_convert("UTC"))


# Stored times are int64 unix nanoseconds: from 1970 (earlier ones are bad input here) to 2262-04-11.
_FIRST_UTC = pd.Timestamp("1970-01-01", tz="UTC")
_LAST_UTC = pd.Timestamp("2262-04-11", tz="UTC")
_FIRST_NAIVE = pd.Timestamp("1969-12-31")
_LAST_NAIVE = pd.Timestamp("2262-04-12")


def utc_ns(times: pd.Series) -> np.ndarray:
    """UTC date-times -> unix ns; -1 for missing ones and those a unix ns cannot hold (year 1, 9999),
    which pandas would raise OutOfBoundsDatetime for."""
    ok = ((times >= _FIRST_UTC) & (times < _LAST_UTC)).to_numpy(dtype=bool)  # NaT compares False
    out = np.full(len(times), -1, dtype=np.int64)
    if ok.any():
        out[ok] = times[ok].dt.as_unit("ns").astype("int64").to_numpy()
    return out
