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

import time
from collections import defaultdict

import numpy as np
import pandas as pd

from ioweather.sources.telemetry.base import GAUGE, Source
from ioweather.sources.telemetry.host import CPU_BUSY, CPU_TOTAL
from ioweather.sources.telemetry.runner import Runner
from ioweather.stats import counters

_I64 = 2**63  # a u64 counter beyond int64 (never seen in practice) goes the float way instead of failing
# About 230 bytes a queued row (tracemalloc, a 370-series synthetic OSS), so at most ~230 MB; at
# the default 5 s interval that holds 69 h of 20 series, 4.6 h of 300 (an OSS with job_stats has more).
MAX_PENDING_ROWS = 1_000_000


class Collector:
    def __init__(self, sources: list[Source], interval_s: float, fs: str, fs_forced: bool = False,
                 timeout_s: float | None = None, log=lambda m: None, forget_after_s: float = 3600.0,
                 max_pending_rows: int = MAX_PENDING_ROWS):
        self.interval_s = float(interval_s)
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

    # -- one tick ----------------------------------------------------------------------------
    # Rows are kept as plain column arrays until a flush: a DataFrame per tick costs more CPU than
    # reading and parsing 300 proc files (benchmarks/bench_collect.py).
    def tick(self, t_ns: int | None = None) -> int:
        """Read every source once (stamped `t_ns`) and queue the resulting rows; returns rows queued."""
        t_ns = int(t_ns if t_ns is not None else time.time_ns())
        keys_i, vals_i, keys_f, vals_f, gauges = [], [], [], [], []
        for result in self.runner.collect():
            for s in result.samples:
                key = (s.fs if s.fs and not self.fs_forced else self.fs, s.target, s.metric)
                if s.kind == GAUGE:
                    gauges.append((key, s.value))
                elif isinstance(s.value, int) and -_I64 <= s.value < _I64:  # exact int64 deltas
                    keys_i.append(key)
                    vals_i.append(s.value)
                else:
                    keys_f.append(key)
                    vals_f.append(s.value)
        parts = [self._counter_rows(t_ns, keys_i, np.array(vals_i, dtype=np.int64)),
                 self._counter_rows(t_ns, keys_f, np.array(vals_f, dtype=np.float64)),
                 self._gauge_rows(t_ns, gauges)]
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

    def _bound(self) -> None:
        """Drop the oldest queued rows beyond max_pending_rows (a disk full for long): memory stays
        bounded and the newest readings, the ones people look at, are kept."""
        while self.pending_rows > self.max_pending_rows:
            fs = min((f for f, parts in self.pending.items() if parts), key=lambda f: self.pending[f][0][1].min())
            n = len(self.pending[fs].pop(0)[0])
            self.pending_rows -= n
            self.rows_dropped += n

    def _counter_rows(self, t_ns: int, keys: list, values: np.ndarray):
        if not keys:
            return None
        prev_t = np.empty(len(keys), dtype=np.int64)
        prev_v = np.zeros(len(keys), dtype=values.dtype)
        have = np.zeros(len(keys), dtype=bool)
        for i, key in enumerate(keys):
            p = self.prev.get(key)
            if p is not None:
                prev_t[i], prev_v[i], have[i] = p[0], p[1], True
            self.prev[key] = (t_ns, values[i].item())
        if not have.any():
            return None  # first reading of everything: baselines only
        idx = np.flatnonzero(have)
        d = counters.grid_deltas(np.vstack([prev_v[idx], values[idx]]))[0]
        start, vals, length, src = counters.expand_gaps(prev_t[idx], np.full(idx.size, t_ns, np.int64), d,
                                                        self.interval_s)
        return [keys[i] for i in idx[src]], start, vals, length

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
    def save_state(self, path, files: dict[str, list[str]] | None = None, readings: dict | None = None) -> None:
        """Write the readings (default the current ones; a flush's intent: those its rows end at, and
        the files it is about to write) to `path`."""
        import json
        import os

        tmp = f"{path}.tmp"
        readings = self.prev if readings is None else readings
        body = {"interval_s": self.interval_s,
                "prev": [[fs, target, metric, t, v] for (fs, target, metric), (t, v) in readings.items()]}
        if files is not None:
            body["files"] = files
        with open(tmp, "w") as f:
            json.dump(body, f)
            f.flush()
            os.fsync(f.fileno())  # it must be on disk before the files it names
        os.replace(tmp, path)

    @staticmethod
    def read_state(path) -> dict | None:
        import json

        try:
            with open(path) as f:
                state = json.load(f)
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def load_state(self, path, skip_fs=()) -> int:
        """Restore saved readings, except those of the file systems `skip_fs` (ignored when the
        interval changed); returns how many."""
        state = self.read_state(path)
        if state is None or state.get("interval_s") != self.interval_s:
            return 0
        n = 0
        for fs, target, metric, t, v in state.get("prev", []):
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

    def take(self) -> tuple[dict, int, dict]:
        """Remove the queued rows: ({fs: parts}, their number, a copy of the counters' readings they
        end at, which the state file must hold once they are stored). Ticks may go on meanwhile."""
        taken = (dict(self.pending), self.pending_rows, dict(self.prev))
        self.pending = defaultdict(list)
        self.pending_rows = 0
        return taken

    def put_back(self, taken: tuple[dict, int, dict]) -> None:
        """Rows the store refused, back in front of those queued since (the bound applies)."""
        pending, rows, _ = taken
        for fs, parts in pending.items():
            self.pending[fs][:0] = parts
        self.pending_rows += rows
        self._bound()

    def write(self, taken: tuple[dict, int, dict], write, begin=lambda frames: None) -> int:
        """Hand taken rows to `write(fs, frame)` (the store); returns rows written. `begin(frames)`
        runs first ({fs: frame}; collect records what it will write). When `begin` or a `write`
        raises (a full disk) the caller puts the rows back and removes what the earlier writes
        stored, so a retry counts no row twice."""
        frames = {fs: self._frame(parts) for fs, parts in taken[0].items() if parts}
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
