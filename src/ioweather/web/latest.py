"""A page's newest answers, served for a few seconds once computed, their JSON and HTML made once (issue 40 item 4).

The Status page is "now" by the probe cache's clock: each answer was computed again for every request and every
target (~0.4 s of CPU for 100 targets at a center's size, plus ~1.1 MB of JSON and 1.4 MB of HTML), though the
state it shows is a 10-minute median of samples that reach the store in 5 s batches. A page with `fresh_s` > 0
(web/registry.py) is served from its newest answer for the same query while that answer is at most `fresh_s`
old by that clock, as it was computed (its `generated_at` says when): the same answer the page computed at that
clock, its bytes encoded once. A clock that did not move (a test's or a replay's pinned clock) never reuses one:
what is stored meanwhile would be missing from an answer that claims the same instant. While the page is being
asked for, `refresh` computes its default view again in the background before requests would find it too old.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from starlette.datastructures import QueryParams

from ioweather.encoding import to_json
from ioweather.web.context import WebContext

#: Answers kept per page (the least recently computed go first): the default view and a few targets' own.
KEPT = 8
#: At most this long (s) a request waits for the warm-up's first part after a start (then computes beside it).
WARM_WAIT_S = 120.0
#: `refresh` keeps the default view computed while it was asked for within this long (s): the Status page
#: reloads itself every 60 s.
WATCHED_S = 150.0


class Rendered:
    """One answer (`data`, computed at the cache's `clock_ns`) and its encodings, each made once."""

    def __init__(self, data: dict, clock_ns: int | None):
        self.data = data
        self.clock_ns = clock_ns
        self._json: bytes | None = None
        self._html: dict[Hashable, bytes] = {}
        self._lock = threading.Lock()

    def json(self) -> bytes:
        """The answer as `/api/<slug>` sends it (web/errors.json_response's text)."""
        with self._lock:
            if self._json is None:
                self._json = to_json(self.data).encode()
            return self._json

    def html(self, key: Hashable, make: Callable[[], bytes]) -> bytes:
        """The page's HTML for `key` (its navigation and query), made by `make` the first time."""
        with self._lock:
            body = self._html.get(key)
            if body is None:
                body = self._html[key] = make()
            return body


class Latest:
    """The newest answers of one page (`data(ctx, params)`) per query, reused for `fresh_s` of the cache's clock.

    `_answers` and `asked` are read outside `_computing` by requests and the background thread: single dict
    operations (get, item assignment, values of a str-keyed dict), atomic under CPython's GIL. A free-threaded
    build would need a lock around them."""

    def __init__(self, ctx: WebContext, data: Callable[[WebContext, QueryParams], dict], fresh_s: float):
        self.ctx = ctx
        self.data = data
        self.fresh_ns = int(fresh_s * 1e9)
        self._answers: OrderedDict[tuple, Rendered] = OrderedDict()
        #: Held while an answer is computed: a request that finds none fresh waits for the one being computed.
        self._computing = threading.Lock()
        #: When (monotonic) the default view was last asked for, as HTML and as JSON; None: not yet.
        self.asked: dict[str, float] = {}
        #: Called with each answer of the default view `refresh` computes, to make its HTML before a request does.
        self.prerender: Callable[[Rendered], object] | None = None
        #: When (monotonic) `refresh`'s last computation failed; None: it did not. A store that cannot answer (a
        #: damaged or locked table) was read again every LATEST_EVERY_S by the background thread, asked or not.
        self.failed_at: float | None = None

    def _fresh(self, a: Rendered | None, now_ns: int | None) -> bool:
        return a is not None and now_ns is not None and 0 < now_ns - a.clock_ns <= self.fresh_ns

    def get(self, params: QueryParams, kind: str) -> Rendered:
        """The answer for `params`: the newest one while fresh, else computed (or waited for) now. `kind`: html
        or json, what the request will send."""
        key = tuple(sorted(params.multi_items()))
        if not key:
            self.asked[kind] = time.monotonic()
        a = self._answers.get(key)
        if self._fresh(a, self.ctx.clock()):
            return a
        warm = self.ctx.warm_up
        if a is None and warm is not None and warm.is_alive() and not self.ctx.warmed.is_set():
            # after a start, the warm-up's first part (the kept baselines, rows and hours) is what an answer reads
            # first: computed beside it, the first Status answer after a restart did that work again target by
            # target (1.2-2.7 s instead of ~1 s, issue 40)
            self.ctx.warmed.wait(WARM_WAIT_S)
        with self._computing:
            a = self._answers.get(key)
            if self._fresh(a, self.ctx.clock()):  # computed while this request waited
                return a
            return self._compute(key, params)

    def _compute(self, key: tuple, params: QueryParams) -> Rendered:
        # the clock before the answer's own reading of it: the answer's age is never under-counted
        clock_ns = self.ctx.clock()
        a = Rendered(self.data(self.ctx, params), clock_ns)
        if clock_ns is None:  # no store (yet): nothing to keep
            return a
        self._answers[key] = a
        self._answers.move_to_end(key)
        while len(self._answers) > KEPT:
            self._answers.popitem(last=False)
        return a

    def refresh(self) -> bool:
        """Compute the default view again when it is half its `fresh_s` old (or there is none) and it was asked
        for within WATCHED_S (or not yet since the start: the first answer after a restart), with its JSON and
        HTML when those were asked for: the requests then find it fresh. True when it computed."""
        a = self._answers.get(())
        now = time.monotonic()
        watched = bool(self.asked) and now - max(self.asked.values()) <= WATCHED_S
        if self.failed_at is not None and (not watched or now - self.failed_at < self.fresh_ns / 1e9):
            # after a failure: again only while the page is asked for, at most once per fresh_s (a request
            # computes its own answer meanwhile and says what failed)
            return False
        if a is not None:
            age = self.ctx.clock() - a.clock_ns
            # not asked for lately; fresh still; or a clock that does not move, whose answers are never reused
            if not watched or 0 <= age <= self.fresh_ns // 2:
                return False
        with self._computing:
            try:
                a = self._compute((), QueryParams(""))
            except Exception:
                self.failed_at = time.monotonic()
                raise
            self.failed_at = None
        for kind, make in (("json", a.json), ("html", self.prerender and (lambda: self.prerender(a)))):
            if make is not None and (not self.asked or now - self.asked.get(kind, -float("inf")) <= WATCHED_S):
                make()
        return True
