"""What every page needs: the store (opened lazily), the probe cache, the thresholds."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TypeVar

from ioweather.config import Settings
from ioweather.encoding import to_json
from ioweather.errors import UserError
from ioweather.services.runtime.defaults import DEGRADED, SEVERE
from ioweather.services.probe.cache import DEFAULT_BASELINE_S, ProbeCache
from ioweather.services.runtime.stores import Store, keep_answer, kept_answer, open_store, store_location


T = TypeVar("T")
#: Results kept by `WebContext.memo` (the least recently used go first).
MEMO_ENTRIES = 32
#: At most this long (s) `close` waits for the background answers' threads: one Status answer at a center's size
#: is ~0.4-0.8 s of CPU; a thread still computing after it is a daemon and dies with the process.
CLOSE_JOIN_S = 3.0


@dataclass
class WebConfig:
    warn: float = DEGRADED
    crit: float = SEVERE
    baseline_s: float = DEFAULT_BASELINE_S


class WebContext:
    """Opens the store only once it exists: `serve` must not create an empty database as a side effect."""

    def __init__(self, settings: Settings, config: WebConfig | None = None):
        self.settings = settings
        self.config = config or WebConfig()
        self._store: Store | None = None
        self._cache: ProbeCache | None = None
        self._lock = threading.Lock()
        self._memo: OrderedDict[Hashable, tuple[Hashable, object]] = OrderedDict()
        #: Set when the first response has gone out: the background warm-up's later work waits for it.
        self.answered = threading.Event()
        #: Set while no request is being answered (`request_started`, `request_ended`: web/app.py's middleware).
        self.idle = threading.Event()
        self.idle.set()
        self._inflight = 0
        self._closing = threading.Lock()
        self._closed = False
        #: Set when the warm-up has the probe cache's baselines and kept hours (its `hold`): the pages' newest
        #: answers are computed in the background from then on (web/app.py `_keep_latest`).
        self.warmed = threading.Event()
        #: The warm-up thread (web/app.py `_warm`), when the server runs one.
        self.warm_up: threading.Thread | None = None
        #: Set when the context closes: the background threads stop before the store they read is released.
        self.closing = threading.Event()
        #: The newest answers of the pages that keep them (web/latest.py's `Latest`, by slug; not imported here:
        #: it reads this context, and a cycle would follow even for an annotation, tests/test_import_cycles.py).
        self.latest: dict[str, object] = {}
        #: Threads that compute answers from the store in the background (web/app.py `_keep_latest`): `close`
        #: waits for them (at most CLOSE_JOIN_S), else one would reopen the disposed engine and hold the cache's
        #: locks while the kept files are written.
        self.background: list[threading.Thread] = []

    def request_started(self) -> None:
        with self._lock:
            self._inflight += 1
            self.idle.clear()

    def request_ended(self) -> None:
        with self._lock:
            self._inflight -= 1
            if self._inflight <= 0:
                self._inflight = 0
                self.idle.set()

    def busy(self) -> bool:
        """Whether a request is being answered."""
        return not self.idle.is_set()

    @property
    def where(self) -> str:
        return store_location(self.settings)

    def problem(self) -> str | None:
        """Why there is no probe data to show (None when there is)."""
        if not self.settings.store_exists():
            return f"there is no ioweather store at {self.where} yet"
        try:
            if not self.cache.targets():
                return f"the store at {self.where} has no probe samples yet"
        except UserError as e:
            return str(e)
        return None

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                self._store = open_store(self.settings)
            return self._store

    @property
    def cache(self) -> ProbeCache:
        store = self.store
        with self._lock:
            if self._cache is None:
                self._cache = ProbeCache(store, baseline_s=self.config.baseline_s, persist=True, keep_recent=True)
            return self._cache

    def clock(self) -> int | None:
        """The probe cache's clock; None while there is no store (opening the cache would create one)."""
        if self._cache is None and not self.settings.store_exists():
            return None
        return self.cache.clock()

    def memo(self, key: Hashable, version: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, reused while `version` (a cheap fingerprint of the data it reads) is unchanged.

        For pages whose numbers come from a whole table or archive (the jobs summary, a
        workload study): a reload costs the fingerprint query, not the computation. Two
        requests racing on a stale entry may both compute; the result is the same.
        """
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None and hit[0] == version:
                self._memo.move_to_end(key)
                return hit[1]  # type: ignore[return-value]
        value = compute()
        with self._lock:
            self._memo[key] = (version, value)
            self._memo.move_to_end(key)
            while len(self._memo) > MEMO_ENTRIES:
                self._memo.popitem(last=False)
        return value

    def kept(self, key: tuple, version: Hashable, compute: Callable[[], dict],
             version_now: Callable[[], Hashable] | None = None) -> dict:
        """`memo` of a JSON document (`compute()`'s), also kept in the store's home across a restart
        (services.runtime.stores.keep_answer: store/kept_answers.py) for the same key, `version` and ioweather
        version: a restarted server's first view of a page computed from a whole dataset (Workload's week of
        telemetry, ~2 s at a center's size) reads it back instead. `version` must change whenever anything the
        answer is computed from does, as for `memo`. Both paths hand the document as parsed from its JSON text:
        the same answer whether computed or read back. `version_now()`: the version read again once computed;
        when it moved, the inputs changed during the computation and the answer (of either, or of both) is
        handed out but kept under neither."""
        k, v = repr(key), repr(version)
        moved = False

        def load_or_compute() -> dict:
            nonlocal moved
            text = kept_answer(self.settings, k, v)
            if text is None:
                text = to_json(compute())
                moved = version_now is not None and version_now() != version
                if not moved:
                    keep_answer(self.settings, k, v, text)
            return json.loads(text)
        doc = self.memo(("kept", key), version, load_or_compute)
        if moved:
            with self._lock:
                if self._memo.get(("kept", key), (None, None))[1] is doc:
                    del self._memo[("kept", key)]
        return doc

    def close(self) -> None:
        """Write what the probe cache keeps across a restart and release the store, once: the lifespan's
        shutdown, or `services.runtime.server.run_server`'s when a request was abandoned (a second call waits
        for the first to end, then does nothing)."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
            self.closing.set()
            deadline = time.monotonic() + CLOSE_JOIN_S
            for t in self.background:
                if t is not threading.current_thread():
                    t.join(max(0.0, deadline - time.monotonic()))
            if self._cache is not None:
                self._cache.close()
            if self._store is not None:
                self._store.dispose()
