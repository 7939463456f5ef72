"""The Report's reads of closed hours, kept between its computations on a live store (issue 40 item 4).

On a store whose telemetry arrives every minute the report's window moves every minute and the whole report is
computed again. Its climate's and change points' rows of whole hours come from the probe pieces, already cheap;
what each recompute paid for (docs/benchmarks.md, branch reportlive) was the raw samples at the window's moving
edges: the partial hour at its start (the climate's hourly rows, the change points' 10-minute series) and at its
baseline's start 30 days before its end, three reads of an archived day per target, each a whole Parquet row
group. Those hours lie in closed days: their samples are kept here, in this process's memory, and each edge cut
from them, until the window leaves the hour.

Kept per (store, target, hour) under `store.probe_pieces.days_marker` of the hour's day, only while the target
has that day's pieces (a late sample deletes them and so moves the marker; the pieces are built first where
missing, `services.probe.pieces.build_days`), and only if the marker did not move during the read. The marker
also holds where the day's database rows begin: `store prune` deletes raw rows and keeps their pieces.
A selection of `read_samples`' op-then-time order is the order `read_samples` gives the smaller range: the same
arrays, the same answers. Not kept across a restart: these are samples, megabytes, not an answer; a restart
keeps the whole report while its inputs hold (`report.inputs_version`), and its first recompute reads each
edge once.
"""

from __future__ import annotations

from collections import OrderedDict
import threading
import time

import numpy as np

from ioweather.services.probe.cache import ProbeCache
from ioweather.store import probe as probe_store
from ioweather.store.probe_pieces import DAY_NS, HOUR_NS

#: The kept hours' samples at most (bytes; the least recently used go first): 1 Hz x 6 ops is ~0.4 MB an hour,
#: a recompute of 100 targets keeps ~200 hours (two edges a target), ~80 MB.
MAX_BYTES = 160 << 20

_lock = threading.Lock()
_kept: OrderedDict[tuple[str, str, int], tuple[tuple, dict[str, np.ndarray]]] = OrderedDict()
_bytes = 0


class ClosedHours:
    """One computation's reads: `read(target, lo, hi)` is `read_samples`, a range inside one hour of a closed
    day cut from that hour's kept samples. Each day's marker and pieces are looked up once per computation."""

    def __init__(self, store, now_ns: int | None = None):
        # lazy: sqlalchemy via services.probe.pieces, loaded only when this runs
        from ioweather.services.probe import pieces as probe_pieces

        self.store = store
        self.today = (now_ns if now_ns is not None else time.time_ns()) // DAY_NS * DAY_NS
        self.on = store is not None and not store.read_only and probe_pieces.enabled(store)
        self._days: dict[int, tuple] = {}
        self._whole: dict[int, set[str]] = {}

    def reader(self, target: str):
        """`read(lo, hi)` of `target` (services.probe.pieces' `read`)."""
        return lambda lo, hi: self.read(target, lo, hi)

    def read(self, target: str, lo: int | None, hi: int | None) -> dict[str, np.ndarray]:
        global _bytes
        hour = lo // HOUR_NS * HOUR_NS if lo is not None else None
        if not self.on or hour is None or hi is None or hi > hour + HOUR_NS or hour + HOUR_NS > self.today \
                or not self._has_day(target, hour // DAY_NS * DAY_NS):
            return probe_store.read_samples(self.store, target, since_ns=lo, until_ns=hi)
        day = hour // DAY_NS * DAY_NS
        marker = self._marker(day)
        key = (self.store.url, target, hour)
        with _lock:
            hit = _kept.get(key)
            if hit is not None:
                _kept.move_to_end(key)
        if hit is not None and hit[0] == marker:
            s = hit[1]
        else:
            s = _read_hour(self.store, target, hour)
            if _days_marker(self.store, day) == marker:
                size = sum(v.nbytes for v in s.values())
                with _lock:
                    old = _kept.pop(key, None)
                    _bytes -= sum(v.nbytes for v in old[1].values()) if old else 0
                    _kept[key] = (marker, s)
                    _bytes += size
                    while _bytes > MAX_BYTES and _kept:
                        _bytes -= sum(v.nbytes for v in _kept.popitem(last=False)[1][1].values())
        sel = (s["start_ns"] >= lo) & (s["start_ns"] < hi)
        return {k: v[sel] for k, v in s.items()}

    def _has_day(self, target: str, day: int) -> bool:
        """Whether `target` has `day`'s pieces: without them a late sample into the day would not move its
        marker. Every target's missing ones are built at once (the marker counts every target's: one built
        after it was read would move it)."""
        # lazy: sqlalchemy via services.probe.pieces, loaded only when this runs
        from ioweather.services.probe import pieces as probe_pieces

        if day not in self._whole:
            have = probe_pieces.build_days(self.store, probe_store.targets(self.store), {day})
            self._whole[day] = {t for t, days in have.items() if day in days}
        return target in self._whole[day]

    def _marker(self, day: int) -> tuple:
        if day not in self._days:
            self._days[day] = _days_marker(self.store, day)
        return self._days[day]


def _read_hour(store, target: str, hour: int) -> dict[str, np.ndarray]:
    return probe_store.read_samples(store, target, since_ns=hour, until_ns=hour + HOUR_NS)


def _days_marker(store, day: int) -> tuple:
    """The day's pieces, archived rows and runs (`days_marker`), and where its database rows begin: `store prune`
    deletes a day's raw rows and keeps its pieces, and the hours kept from those rows must then go."""
    # lazy: sqlalchemy via store.probe_pieces, loaded only when this runs
    from ioweather.store import probe_pieces as pieces_store

    return (*pieces_store.days_marker(store, day, day + DAY_NS), probe_store.rows_begin(store, day, day + DAY_NS))


class ClosedHoursCache(ProbeCache):
    """A one-shot `ProbeCache` (the change points' series) whose raw reads go through `ClosedHours`."""

    def __init__(self, closed: ClosedHours):
        super().__init__(closed.store)
        self.closed = closed

    def read(self, target: str, since_ns: int | None, until_ns: int | None, ops=None) -> dict[str, np.ndarray]:
        if ops is not None:
            return super().read(target, since_ns, until_ns, ops)
        return self.closed.read(target, since_ns, until_ns)
