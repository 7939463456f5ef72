"""The periodic daemons' loop, one for all of them (`probe run`, `watch`'s probe, the probe's
archiver, `collect`): ticks on a fixed grid with missed-tick accounting, Ctrl-C/SIGTERM, and a
write-behind buffer that stores from its own thread and retries what the store refused.

One failure policy for every daemon: a store that refuses a write (locked, full, gone) never
stops the measuring; what it refused waits in a bounded buffer and is retried, the oldest is
dropped past the bound (counted and said), and a stop waits a bounded time for the last write.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from ioweather.config import retention_from_env
from ioweather.errors import UserError
from ioweather.services.runtime import retention


class Ticker:
    """Calls `tick(t_ns)` every `interval_s`, start to start, until `stop` is set or `duration_s` ends.

    The grid is fixed: a tick that runs late does not shift the next ones, and the ticks that
    could not start on time are skipped and counted in `missed` (a suspended or overloaded node
    must not produce a burst of catch-up ticks). With `align_to_epoch` the ticks fall on
    multiples of the interval since the epoch, so that the daemons of a site share one time grid;
    otherwise the first tick is at once. `t_ns` is the tick's scheduled wall-clock time.
    """

    def __init__(self, interval_s: float, *, duration_s: float | None = None,
                 stop: threading.Event | None = None, align_to_epoch: bool = False):
        if interval_s <= 0:
            raise UserError("the interval must be positive")
        self.interval_s, self.duration_s, self.align_to_epoch = interval_s, duration_s, align_to_epoch
        self.stop = stop if stop is not None else threading.Event()
        self.ticks = self.missed = 0

    def run(self, tick: Callable[[int], None]) -> None:
        step, step_ns = self.interval_s, int(round(self.interval_s * 1e9))
        now, now_ns = time.monotonic(), time.time_ns()
        first_ns = -(-now_ns // step_ns) * step_ns if self.align_to_epoch else now_ns
        t0 = now + (first_ns - now_ns) / 1e9
        end = now + self.duration_s if self.duration_s else None
        k = 0
        while not self.stop.is_set():
            due = t0 + k * step
            if end is not None and due >= end:
                break
            if self.stop.wait(max(0.0, due - time.monotonic())):
                break
            tick(first_ns + k * step_ns)
            self.ticks += 1
            k += 1
            late = time.monotonic() - (t0 + k * step)
            if late > 0:
                skipped = int(late // step) + 1
                self.missed += skipped
                k += skipped


def run_in_thread(name: str, interval_s: float, stop: threading.Event, tick: Callable[[int], None]) -> threading.Thread:
    """A housekeeping daemon (archiving, compaction): `tick` at once and then every interval, on a
    daemon thread, until `stop`."""
    thread = threading.Thread(target=Ticker(interval_s, stop=stop).run, args=(tick,), name=name, daemon=True)
    thread.start()
    return thread


#: How often a daemon enforces the retention settings (config.RETENTION_DEFAULTS): pruning is housekeeping.
RETENTION_EVERY_S = 3600.0


def start_retention(settings, store, kinds: tuple[str, ...], stop: threading.Event,
                    log: Callable[[str], None], warn: Callable[[str], None] | None = None) -> threading.Thread | None:
    """Remove the data of `kinds` older than their retention settings at start and then hourly, on its own
    thread (services/runtime/retention.py: short transactions, so the daemon's own writes never wait long). A bad
    IOWEATHER_RETAIN_* fails here, before the daemon starts, in one line. What it had to skip (a link in the
    store, an unreadable file) and its failures go to `warn` (said even with --quiet). Returns the thread,
    so a daemon that stops can let a pass in progress finish instead of cutting it at exit."""
    limits = {k: v for k, v in retention_from_env().items() if k in kinds and v is not None}
    if not limits:
        return None

    def tick(_t_ns: int) -> None:
        try:
            retention.prune(store, settings, limits, log=log, warn=warn or log)
        except Exception as e:  # housekeeping: report it, never stop measuring for it (tried again next hour)
            (warn or log)(f"retention failed: {e}")

    return run_in_thread("retention", RETENTION_EVERY_S, stop, tick)


class RowBuffer:
    """The probe's buffer: rows waiting for the store, oldest first, at most `max_rows` (beyond that
    the oldest go, counted in `dropped`). Another daemon hands WriteBehind its own buffer with the
    same four members (collect: its queued rows with the counters' readings they end at)."""

    def __init__(self, max_rows: int):
        self.max_rows = max_rows
        self.dropped = 0
        self._rows: deque = deque()
        self._mutex = threading.Lock()

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, rows: list) -> None:
        with self._mutex:
            self._rows.extend(rows)
            self._trim()

    def take(self) -> tuple[list, int]:
        """Everything that waits, as one batch, and its number of rows."""
        with self._mutex:
            batch = list(self._rows)
            self._rows.clear()
        return batch, len(batch)

    def put_back(self, batch: list) -> None:
        """A batch the store refused, back in front of what came since (and the bound applied)."""
        with self._mutex:
            self._rows.extendleft(reversed(batch))
            self._trim()

    def _trim(self) -> None:
        over = len(self._rows) - self.max_rows
        for _ in range(max(over, 0)):
            self._rows.popleft()
        self.dropped += max(over, 0)


class WriteBehind:
    """Hands buffered rows to `sink` from its own thread, every `every_s`.

    On the measuring thread, a write that waited for a locked store (another writer, archiving, a
    slow server) was a gap in the measurements: 30 s at SQLite's busy timeout. Here the daemon goes
    on while the write waits; what the store refused is kept and retried. The buffer is bounded:
    past `max_rows` the oldest rows go, counted in `dropped` and logged, never silently.
    `unit` and `doing` word the log lines ("samples", "probing"). `buffer` (default a RowBuffer of
    `max_rows`) holds what waits: `len()`, `take()`, `put_back(batch)`, `dropped`; `sink` gets its batches.
    """

    def __init__(self, sink: Callable, every_s: float, max_rows: int, log: Callable[[str], None],
                 *, unit: str = "samples", doing: str = "probing", name: str = "write-behind", buffer=None):
        self.sink, self.every_s, self.max_rows, self.log = sink, every_s, max_rows, log
        self.unit, self.doing = unit, doing
        self.buffer = buffer if buffer is not None else RowBuffer(max_rows)
        self._inflight = 0  # rows of the write under way, held besides the bound
        self._closing = threading.Event()
        self._abandoned = False
        self.stored = 0
        self._dropped_seen = 0
        self.error: str | None = None  # of the current outage of the store
        self._outage = {"since": 0.0, "dropped": 0, "logged": 0.0}
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def dropped(self) -> int:
        return self.buffer.dropped

    @property
    def waiting(self) -> int:
        return len(self.buffer) + self._inflight

    def add(self, rows: list) -> None:
        self.buffer.add(rows)

    def _note_drops(self) -> None:
        """Say once per outage that the buffer is full; count what it dropped since."""
        new = self.buffer.dropped - self._dropped_seen
        if new <= 0:
            return
        if not self._outage["dropped"]:
            self.log(f"buffer full ({self.max_rows} {self.unit} waiting for the store): dropping the oldest "
                     f"until the store takes {self.unit} again")
        self._outage["dropped"] += new
        self._dropped_seen += new

    def _loop(self) -> None:
        while not self._abandoned:
            closing = self._closing.wait(self.every_s)
            ok = self._flush_once()
            if closing and ok and not self.waiting:
                return
            if closing and not ok:
                time.sleep(0.5)  # a stop retries until its deadline, but not in a busy loop

    def _flush_once(self) -> bool:
        self._note_drops()
        batch, n = self.buffer.take()
        self._inflight = n
        if not n:
            return True
        try:
            self.sink(batch)
        except Exception as e:  # any failure of the store: keep the rows, retry, tell once a minute
            self.buffer.put_back(batch)
            self._inflight = 0
            self._note_drops()
            self._failed(e, n)
            return False
        self._inflight = 0
        self.stored += n
        self._note_drops()
        if self.error is not None or self._outage["dropped"]:
            o = self._outage
            after = f" after {time.monotonic() - o['since']:.0f} s" if self.error is not None else ""
            self.log(f"the store took {n} waiting {self.unit}{after}"
                     + (f"; {o['dropped']} {self.unit} were dropped meanwhile (buffer full)" if o["dropped"] else ""))
            self.error = None
            self._outage = {"since": 0.0, "dropped": 0, "logged": 0.0}
        return True

    def _failed(self, e: Exception, n: int) -> None:
        msg = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {e}"
        now = time.monotonic()
        if self.error is None:
            self._outage["since"] = now
        if self.error is None or now - self._outage["logged"] >= 60:
            self.log(f"could not store {n} {self.unit} ({msg}); still {self.doing}, will retry")
            self._outage["logged"] = now
        self.error = msg

    def close(self, timeout_s: float) -> int:
        """Store what waits, retrying for at most timeout_s; returns how many rows were not stored."""
        self._closing.set()
        self._thread.join(timeout_s)
        self._abandoned = True
        return self.waiting
