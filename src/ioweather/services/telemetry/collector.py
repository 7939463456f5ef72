"""The `collect` loop's state: raw samples of each tick -> rows of the store's long format.

Counters keep their previous reading per (file system, target, metric); each new reading
gives one interval row through stats/counters.py (backwards = NaN, gaps = NaN rows). Gauges
give a row at the tick time. Rows wait in memory and are written as Parquet every `flush_s`
seconds (one file per file system and day each time), and at stop. While they cannot be written
(a full disk) at most `max_pending_rows` wait: beyond that the oldest tick's rows are dropped,
counted in `rows_dropped` (the caller reports them).

Ticks are stamped with their scheduled time, aligned to multiples of the interval since the
epoch, so that every collector of a site (one per OSS, per MDS) puts its targets on the same
time grid; the read itself happens within milliseconds of that time, less than LMT's own jitter.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ioweather.config import valid_dataset_name
from ioweather.errors import StoreError, UserError, os_error_reason
from ioweather.files import display_path, read_home_file, write_atomic
from ioweather.services.telemetry.exporter_defaults import JOB_TOP, OTHER_JOBS
from ioweather.sources.telemetry.base import GAUGE, Source
from ioweather.sources.telemetry.host import CPU_BUSY, CPU_TOTAL
from ioweather.sources.telemetry.runner import Runner
from ioweather.stats import counters

# About 230 bytes a queued row (tracemalloc, a 370-series synthetic OSS), so at most ~230 MB; at
# the default 5 s interval that holds 69 h of 20 series, 4.6 h of 300 (an OSS with job_stats has more).
MAX_PENDING_ROWS = 1_000_000
#: The largest state file read: ~100 bytes a series, so 2.6 million series (job_stats of a big OSS
#: hold tens of thousands).
STATE_MAX_BYTES = 256 << 20


def _state_problem(state) -> str | None:
    """What is wrong with a parsed state file, None when it has save_state's shape."""
    if not isinstance(state, dict):
        return f"a JSON {type(state).__name__}, not an object"
    if not isinstance(state.get("interval_s"), (int, float)) or isinstance(state.get("interval_s"), bool):
        return "no interval_s number"
    prev = state.get("prev", [])
    if not isinstance(prev, list):
        return "prev is not a list"
    for row in prev:
        if not (isinstance(row, list) and len(row) == 5 and all(isinstance(x, str) for x in row[:3])
                and type(row[3]) is int and type(row[4]) in (int, float)):
            return "prev holds an entry that is not [fs, target, metric, time_ns, reading]"
    files = state.get("files", {})
    if not (isinstance(files, dict) and all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                                            for v in files.values())):
        return "files is not {fs: [paths]}"
    # recover() removes the files an intent names: only ever files of the store's own day directories
    if any(not x.startswith("fs=") or ".." in Path(x).parts or "\0" in x for v in files.values() for x in v):
        return "files names a path outside the store's day directories"
    return None


#: A counter's key: (file system, target, metric).
Key = tuple[str, str, str]


@dataclass(frozen=True)
class CollectorState:
    """A state (or intent) file: the last reading (time_ns, value) of every counter, at `interval_s`, and
    for an intent the files its flush is about to write ({fs: paths under the telemetry directory})."""

    interval_s: float
    readings: dict[Key, tuple[int, int | float]]
    files: dict[str, list[str]] | None = None

    @classmethod
    def from_json(cls, doc: dict) -> CollectorState:
        """A parsed file that `_state_problem` accepted."""
        return cls(doc["interval_s"], {(fs, target, metric): (t, v) for fs, target, metric, t, v in doc.get("prev", [])},
                   doc.get("files"))

    def to_json(self) -> dict:
        out = {"interval_s": self.interval_s,
               "prev": [[fs, target, metric, t, v] for (fs, target, metric), (t, v) in self.readings.items()]}
        if self.files is not None:
            out["files"] = self.files
        return out


@dataclass
class Taken:
    """Queued rows taken for a flush: the parts of each file system, their number, and a copy of the
    counters' readings they end at (what the state file must hold once they are stored)."""

    pending: dict[str, list[tuple]] = field(default_factory=dict)
    rows: int = 0
    readings: dict[Key, tuple[int, int | float]] = field(default_factory=dict)


class Collector:
    def __init__(self, sources: list[Source], interval_s: float, fs: str, fs_forced: bool = False,
                 timeout_s: float | None = None, log=lambda m: None, forget_after_s: float = 3600.0,
                 max_pending_rows: int = MAX_PENDING_ROWS, job_top: int = JOB_TOP):
        self.interval_s = float(interval_s)
        self.job_top = job_top
        self.fs = fs
        self.fs_forced = fs_forced
        self.runner = Runner(sources, timeout_s if timeout_s is not None else min(0.8 * interval_s, 30.0), log)
        self.forget_after_ns = int(forget_after_s * 1e9)
        self.prev: dict[tuple[str, str, str], tuple[int, int | float]] = {}
        self.pending: dict[str, list[tuple]] = defaultdict(list)
        self.pending_rows = 0
        self.max_pending_rows = max_pending_rows
        self.rows_dropped = 0
        self.ticks = 0
        self.rows_written = 0
        self.log = log
        self._datasets: set[str] = set()  # the file system names already found valid
        self._noted: set = set()

    # -- one tick ----------------------------------------------------------------------------
    # Rows are kept as plain column arrays until a flush: a DataFrame per tick costs more CPU than
    # reading and parsing 300 proc files (benchmarks/bench_collect.py).
    def tick(self, t_ns: int | None = None) -> int:
        """Read every source once (stamped `t_ns`) and queue the resulting rows; returns rows queued."""
        t_ns = int(t_ns if t_ns is not None else time.time_ns())
        readings: dict[tuple[str, str, str], object] = {}
        repeated: set = set()
        for result in self.runner.collect():
            for s in result.samples:
                fs = s.fs if s.fs and not self.fs_forced else self.fs
                if fs not in self._datasets and not self._dataset_ok(fs, s.target):
                    continue
                key = (fs, s.target, s.metric)
                if key in readings:
                    repeated.add(key)
                readings[key] = s
        if repeated:  # two readings of one series in one tick: neither is known to be the one
            for key in repeated:
                del readings[key]
            first = sorted(repeated)[0]
            self._note("repeated", f"{len(repeated)} series read twice in one tick (the same target listed twice?), "
                                   f"left out of this tick (first: {first[1][:80]} {first[2]})")
        keys_c, vals_c, gauges = [], [], []
        for key, s in readings.items():
            if s.kind == GAUGE:
                gauges.append((key, s.value))
            else:
                keys_c.append(key)
                vals_c.append(s.value)
        parts = [self._roll_up_jobs(self._counter_rows(t_ns, keys_c, vals_c)), self._gauge_rows(t_ns, gauges)]
        keys = [k for p in parts if p for k in p[0]]
        self.ticks += 1
        if self.ticks % 100 == 0:
            self._forget(t_ns)
        if not keys:
            return 0
        cols = [np.concatenate([p[i] for p in parts if p]) for i in (1, 2, 3)]
        keys, (start, value, length) = self._derive_cpu(keys, cols)
        fs_of = [k[0] for k in keys]
        for fs in set(fs_of):
            sel = np.fromiter((f == fs for f in fs_of), dtype=bool, count=len(fs_of))
            idx = np.flatnonzero(sel)
            self.pending[fs].append(([keys[i] for i in idx], start[idx], value[idx], length[idx]))
        self.pending_rows += len(keys)
        self._bound()
        return len(keys)

    def _dataset_ok(self, fs: str, target: str) -> bool:
        """Whether `fs` can be a dataset of the store; a target whose name makes one that cannot (a
        Lustre target `a b-OST0000`) is left out with a note, and the others are stored: the whole
        flush used to be refused, at every retry, so no reading of any target was ever stored."""
        if valid_dataset_name(fs):
            self._datasets.add(fs)
            return True
        self._note(("dataset", fs), f"target {target[:80]!r} left out: its file system name {fs[:80]!r} is not "
                                    "one the store can hold (letters, digits, '.', '_' and '-')")
        return False

    def _note(self, key, message: str) -> None:
        """Say `message` once per `key` and run (a problem of every tick would flood the log)."""
        if key not in self._noted and len(self._noted) < 1000:
            self._noted.add(key)
            self.log(message)

    def _bound(self) -> None:
        """Drop the oldest queued rows beyond max_pending_rows (a disk full for long): memory stays
        bounded and the newest readings, the ones people look at, are kept."""
        while self.pending_rows > self.max_pending_rows:
            fs = min((f for f, parts in self.pending.items() if parts), key=lambda f: self.pending[f][0][1].min())
            n = len(self.pending[fs].pop(0)[0])
            self.pending_rows -= n
            self.rows_dropped += n

    def _counter_rows(self, t_ns: int, keys: list, values: list):
        """Amounts since each counter's previous reading. The difference is taken on the readings as
        read, Python ints for Lustre's u64 counters: through float64 a counter past 2^63 moved by
        1000 came out 4096, 0 or 2048. A decrease (a reset), an unreadable reading (NaN) and a jump
        faster than counters.MAX_RATE_PER_S (500 -> 2^64-10: a corrupt or wrapped reading, never
        1.8e19 bytes moved) are missing."""
        idx, prev_t, deltas = [], [], []
        for i, key in enumerate(keys):
            v = values[i]
            p = self.prev.get(key)
            self.prev[key] = (t_ns, v)
            if p is None:
                continue
            d = v - p[1]
            if not d >= 0:  # a reset, or NaN
                d = math.nan
            elif d > counters.MAX_RATE_PER_S * max((t_ns - p[0]) / 1e9, self.interval_s):
                self._note(("jump", key), f"{key[1][:80]} {key[2]} jumped by {d:.3g} in one interval, more than "
                                          f"{counters.MAX_RATE_PER_S:.3g} a second: stored as missing")
                d = math.nan
            idx.append(i)
            prev_t.append(p[0])
            deltas.append(float(d))
        if not idx:
            return None  # first reading of everything: baselines only
        start, vals, length, src = counters.expand_gaps(np.array(prev_t, np.int64), np.full(len(idx), t_ns, np.int64),
                                                        np.array(deltas, np.float64), self.interval_s)
        return [keys[idx[j]] for j in src], start, vals, length

    def _roll_up_jobs(self, rows):
        """Counter rows with the job_stats rows (target `<target>/<job>`, metric job_*) of a target that
        has more than job_top jobs this tick cut to its job_top jobs moving the most (bytes, then
        operations, in this tick's amounts) and one `<target>/_other` row per metric and interval
        holding the sum of the others' amounts: the stored rows of a target add up to exactly what its
        jobs moved. The ranking is on amounts, not on the cumulative counters, so a job entering or
        leaving the top changes no sum. The baselines (self.prev) stay per job: an amount is only
        known against the job's own previous reading. A rolled-up job whose amount is unknown (its
        counter went back) adds nothing; `_other` is unknown only when all of them are."""
        if rows is None:
            return None
        keys, start, vals, length = rows
        jobs: dict[tuple[str, str], dict[str, list]] = {}  # (fs, target) -> job -> [bytes, ops]
        for i, (fs, target, metric) in enumerate(keys):
            if metric.startswith("job_") and "/" in target:
                base, _, job = target.partition("/")
                v = vals[i]
                if v == v:  # not NaN
                    amounts = jobs.setdefault((fs, base), {}).setdefault(job, [0.0, 0.0])
                    amounts[0 if metric.endswith("_bytes") else 1] += v
                else:
                    jobs.setdefault((fs, base), {}).setdefault(job, [0.0, 0.0])
        over = {}
        for where, by_job in jobs.items():
            if len(by_job) > self.job_top:
                ranked = sorted(by_job.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
                over[where] = {job for job, _ in ranked[self.job_top:]}
        if not over:
            return rows
        kept: list[int] = []
        other: dict[tuple, list] = {}  # (fs, target/_other, metric, start, length) -> [sum, known]
        for i, (fs, target, metric) in enumerate(keys):
            if metric.startswith("job_") and "/" in target:
                base, _, job = target.partition("/")
                if job in over.get((fs, base), ()):
                    acc = other.setdefault((fs, f"{base}/{OTHER_JOBS}", metric, int(start[i]), float(length[i])),
                                           [0.0, False])
                    if vals[i] == vals[i]:
                        acc[0] += vals[i]
                        acc[1] = True
                    continue
            kept.append(i)
        idx = np.array(kept, dtype=np.int64)
        return ([keys[i] for i in kept] + [k[:3] for k in other],
                np.concatenate([start[idx], np.array([k[3] for k in other], np.int64)]),
                np.concatenate([vals[idx], np.array([v if known else math.nan for v, known in other.values()])]),
                np.concatenate([length[idx], np.array([k[4] for k in other], np.float64)]))

    def _gauge_rows(self, t_ns: int, gauges: list):
        if not gauges:
            return None
        return ([k for k, _ in gauges], np.full(len(gauges), t_ns, np.int64),
                np.array([v for _, v in gauges], dtype=np.float64), np.full(len(gauges), self.interval_s))

    @staticmethod
    def _derive_cpu(keys: list, cols: list):
        """Replace the busy/total tick amounts of the host source by cpu_pct = 100 busy / total."""
        cpu = [i for i, k in enumerate(keys) if k[2] in (CPU_BUSY, CPU_TOTAL)]
        if not cpu:
            return keys, cols
        start, value, length = cols
        pairs: dict[tuple, dict[str, int]] = {}
        for i in cpu:
            pairs.setdefault((keys[i][0], keys[i][1], int(start[i])), {})[keys[i][2]] = i
        keep = np.ones(len(keys), dtype=bool)
        keep[cpu] = False
        new_keys, new_rows = [], []
        for (fs, target, _), p in pairs.items():
            if CPU_BUSY in p and CPU_TOTAL in p:
                b, t = p[CPU_BUSY], p[CPU_TOTAL]
                new_keys.append((fs, target, "cpu_pct"))
                new_rows.append((start[b], counters.busy_pct(value[b], value[t]).item(), length[b]))
        idx = np.flatnonzero(keep)
        keys = [keys[i] for i in idx] + new_keys
        extra = np.array(new_rows, dtype=np.float64).reshape(-1, 3)
        return keys, [np.concatenate([start[idx], extra[:, 0].astype(np.int64)]),
                      np.concatenate([value[idx], extra[:, 1]]), np.concatenate([length[idx], extra[:, 2]])]

    # -- state across restarts ---------------------------------------------------------------------
    # The last reading of every counter is saved with each flush, so that after a restart (an
    # upgrade, a reboot) the first tick measures from it: a short stop loses nothing and a long
    # one becomes missing intervals instead of silently absent ones.
    def save_state(self, path, files: dict[str, list[str]] | None = None, readings: dict[Key, tuple[int, int | float]] | None = None) -> None:
        """Write the readings (default the current ones; a flush's intent: those its rows end at, and
        the files it is about to write) to `path`, through the one atomic writer (a random
        O_EXCL|O_NOFOLLOW temporary, fsync, rename): a fixed `PATH.tmp` opened with open() wrote the
        state into whatever file a link planted there pointed at. StoreError when it cannot."""
        body = CollectorState(self.interval_s, self.prev if readings is None else readings, files)
        try:
            write_atomic(path, json.dumps(body.to_json()))  # fsynced before the files it names
        except UserError as e:
            raise StoreError(str(e)) from None

    @staticmethod
    def read_state(path, warn: Callable[[str], None] = lambda m: None) -> CollectorState | None:
        """The state (or intent) file at `path`, None when there is none. One that is not a state file
        (unreadable, not JSON, not the shape save_state writes: a damaged disk, a hand edit, another
        version) is set aside as `PATH.damaged-<time>` and said through `warn`: it used to be a traceback
        at every start. The file must be a regular file inside its own directory (files.read_home_file)."""
        path = Path(path)
        try:
            text = read_home_file(path, path.parent, max_bytes=STATE_MAX_BYTES, what="read collector state")
            if text is None:
                return None
            state = json.loads(text)
            problem = _state_problem(state)
        except UserError as e:
            problem = str(e)
        except (ValueError, RecursionError):
            problem = "not JSON"
        if problem is None:
            return CollectorState.from_json(state)
        aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
        try:
            os.replace(path, aside)  # renames the name itself, never what a link there points to
            where = f"set aside as {display_path(aside.name)}"
        except OSError as e:
            where = f"left in place ({os_error_reason(e, aside)})"
        warn(f"collector state {display_path(path)} is not usable ({problem}); {where}, starting without it")
        return None

    def load_state(self, path, skip_fs=(), warn: Callable[[str], None] = lambda m: None) -> int:
        """Restore saved readings, except those of the file systems `skip_fs` (ignored when the
        interval changed); returns how many."""
        state = self.read_state(path, warn)
        if state is None or state.interval_s != self.interval_s:
            return 0
        n = 0
        for (fs, target, metric), (t, v) in state.readings.items():
            if fs not in skip_fs:
                self.prev[(fs, target, metric)] = (int(t), v)
                n += 1
        return n

    def _forget(self, t_ns: int) -> None:
        """Drop baselines of targets gone for long (finished jobs in job_stats, removed devices)."""
        old = [k for k, (t, _) in self.prev.items() if t_ns - t > self.forget_after_ns]
        for k in old:
            del self.prev[k]

    # -- writing -----------------------------------------------------------------------------
    @staticmethod
    def _frame(parts: list[tuple]) -> pd.DataFrame:
        keys = [k for p in parts for k in p[0]]
        if not keys:
            return pd.DataFrame(columns=["time_ns", "target", "metric", "value", "interval_s"])
        return pd.DataFrame({"time_ns": np.concatenate([p[1] for p in parts]),
                             "target": [k[1] for k in keys], "metric": [k[2] for k in keys],
                             "value": np.concatenate([p[2] for p in parts]),
                             "interval_s": np.concatenate([p[3] for p in parts])})

    def pending_frame(self, fs: str) -> pd.DataFrame:
        """The rows queued for `fs` (not yet written), as a flush would write them."""
        return self._frame(self.pending.get(fs, []))

    def take(self) -> Taken:
        """Remove the queued rows, with a copy of the counters' readings they end at (`Taken`). Ticks may
        go on meanwhile."""
        taken = Taken(dict(self.pending), self.pending_rows, dict(self.prev))
        self.pending = defaultdict(list)
        self.pending_rows = 0
        return taken

    def put_back(self, taken: Taken) -> None:
        """Rows the store refused, back in front of those queued since (the bound applies)."""
        for fs, parts in taken.pending.items():
            self.pending[fs][:0] = parts
        self.pending_rows += taken.rows
        self._bound()

    def write(self, taken: Taken, write, begin=lambda frames: None) -> int:
        """Hand taken rows to `write(fs, frame)` (the store); returns rows written. `begin(frames)`
        runs first ({fs: frame}; collect records what it will write). When `begin` or a `write`
        raises (a full disk) the caller puts the rows back and removes what the earlier writes
        stored, so a retry counts no row twice."""
        frames = {fs: self._frame(parts) for fs, parts in taken.pending.items() if parts}
        begin(frames)
        n = sum(write(fs, frame) for fs, frame in frames.items())
        self.rows_written += n
        return n

    def flush(self, write, begin=lambda frames: None) -> int:
        """take() and write() at once, all file systems or none: on failure every row stays queued."""
        taken = self.take()
        try:
            return self.write(taken, write, begin)
        except BaseException:
            self.put_back(taken)
            raise
