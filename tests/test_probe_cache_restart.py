"""Issue 21 row 3: after a restart the cache warms every baseline first and the rollups after them.

The first Status answer must not wait for the month of rollups, yet every answer must be the one a
fully warmed cache gives; a page asking for rollups while the warm-up thread fills them gets the
full computation, and pages, scrapes and the warm-up never compute the same thing twice.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.services.probe.cache import INTERVALS_S, ProbeCache
from ioweather.services.probe.status import target_status
from ioweather.store import open_store
from ioweather.store import probe as probe_store

from web_server import Server, api, frozen_app
from web_synthetic import Episode, add_target, rollups_from_samples

DAY = 86_400 * 10**9
H = 3_600 * 10**9
TARGETS = ("scratch", "home")
WARM = "ioweather-warm"  # the name of the dashboard's warm-up thread (web/app.py)
#: Rollup ranges a page may ask, (since, until) before now: the Status climate's 30 days, history's 7 days,
#: a partial day, and a range ending 9 h ago.
RANGES = ((30 * DAY, 0), (7 * DAY, 0), (26 * H + 17 * 10**9, 0), (2 * DAY + 5 * H, 9 * H + 123))


@pytest.fixture(scope="module")
def store_home(tmp_path_factory):
    """Three days of two targets every 30 s, the second restarted once; the pieces built by a first start."""
    home = tmp_path_factory.mktemp("restart") / "home"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    start = now - 3 * DAY
    add_target(store, "scratch", start, now, period_s=30, seed=1, error_rate=0.01, timeout_rate=0.002,
               episodes=[Episode(start + DAY, start + DAY + 3 * H, 7.0, ("data_read", "md_stat"))])
    add_target(store, "home", start, now - DAY + 123 * 10**9, period_s=30, seed=2, error_rate=0.005)
    add_target(store, "home", now - DAY, now, period_s=60, seed=3, episodes=[Episode(now - 2 * H, now - H, 4.0)])
    store.dispose()
    app = frozen_app(home, now)
    with Server(app):  # the first start: builds the pieces, as `serve` does
        _warmed(app.state.ctx.cache)
    return home, now


def _warmed(cache: ProbeCache, timeout_s: float = 120) -> ProbeCache:
    deadline = time.monotonic() + timeout_s
    while cache.warm_s is None:
        assert time.monotonic() < deadline, "the warm-up did not finish"
        time.sleep(0.02)
    return cache


def _assert_same(got: dict, ref: dict, what) -> None:
    assert list(got) == list(ref), what
    for c in ref:
        np.testing.assert_array_equal(got[c], ref[c], err_msg=f"{what} {c}")


@pytest.fixture()
def scans(monkeypatch):
    """Every computation the cache starts: ('baseline', target) and ('rollups', target, interval, lo, hi)."""
    done: list[tuple] = []
    scan = ProbeCache._scan

    def counted(self, target, roll, lengths, base):
        done.extend(("rollups", target, i, *roll) for i in lengths)
        if base is not None:
            done.append(("baseline", target))
        return scan(self, target, roll, lengths, base)

    monkeypatch.setattr(ProbeCache, "_scan", counted)
    return done


def _assert_no_double_work(done: list[tuple]) -> None:
    for t in TARGETS:
        # at most once: a baseline kept across the restart and still within its TTL is not computed at all
        assert done.count(("baseline", t)) <= 1, (t, done)
    for t in TARGETS:
        for i in INTERVALS_S:
            spans = sorted(d[3:] for d in done if d[:3] == ("rollups", t, i))
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), (t, i, spans)


def _status_json(st) -> str:
    return json.dumps(st.to_json(), sort_keys=True)


@pytest.fixture(scope="module")
def reference(store_home):
    """A fully warmed cache (every baseline and every rollup of the window): its Status answer (the page's
    JSON and each target's `target_status`), baselines and rollups."""
    home, now = store_home
    app = frozen_app(home, now)
    with Server(app) as s:
        cache = _warmed(app.state.ctx.cache)
        assert all(r.covered is not None for t in TARGETS for r in cache._t(t).rolled.values())
        code, page = api(s, "/api/status")
        assert code == 200 and sorted(t["target"] for t in page["targets"]) == sorted(TARGETS)
        return {"page": page,
                "status": {t: _status_json(target_status(cache, t, now_ns=now)) for t in TARGETS},
                "baseline": {t: cache.baseline(t).stat_s for t in TARGETS},
                "rollups": {(t, i, r): cache.rollups(t, i, now - r[0], now - r[1])
                            for t in TARGETS for i in INTERVALS_S for r in RANGES}}


def test_first_status_after_restart_equals_the_fully_warmed_answer(store_home, reference, scans, monkeypatch):
    home, now = store_home
    fill = threading.Event()
    cover = ProbeCache._cover

    def held_back(self, *a, **kw):
        if threading.current_thread().name == WARM:
            fill.wait(60)  # until the first answer is in (the timeout only keeps a failing test from hanging)
        return cover(self, *a, **kw)

    monkeypatch.setattr(ProbeCache, "_cover", held_back)
    app = frozen_app(home, now)
    with Server(app) as s:
        code, first = api(s, "/api/status")  # the warm-up has not started filling rollups: held back
        assert code == 200 and first == reference["page"]
        cache = app.state.ctx.cache
        # (the 10-minute to 1-hour rows come from the kept file of the first start: the 4-hour ones are filled)
        assert cache.warm_s is None and all(cache._t(t).rolled[14400].covered is None for t in TARGETS)
        fill.set()
        _warmed(cache)
        assert api(s, "/api/status") == (200, reference["page"])
        for (t, i, r), ref in reference["rollups"].items():
            _assert_same(cache.rollups(t, i, now - r[0], now - r[1]), ref, (t, i, r))
    _assert_no_double_work(scans)


def test_rollups_asked_during_the_fill_equal_the_full_computation(store_home, reference, scans, monkeypatch):
    home, now = store_home
    store = open_store(Settings.resolve(home))
    cache = ProbeCache(store, clock=lambda: now)
    inside, go = threading.Event(), threading.Event()
    held: list[tuple[str, tuple[int, ...]]] = []
    scan = ProbeCache._scan

    def paused(self, target, roll, lengths, base):
        if threading.current_thread().name == WARM and roll is not None and not held:
            held.append((target, lengths))  # the fill holds the locks of these rollups while paused
            inside.set()
            go.wait(60)
        return scan(self, target, roll, lengths, base)

    monkeypatch.setattr(ProbeCache, "_scan", paused)
    warm = threading.Thread(target=cache.warm, name="ioweather-warm", daemon=True)
    warm.start()
    try:
        assert inside.wait(60)
        # the Status page's climate comes first, with the lengths that share its pieces (one read of them)
        target, filling = held[0]
        assert filling[0] == 600 and set(filling) == {600, 1800, 3600}
        # Other lengths and targets: the request computes them, over the range it asks only.
        got = {(t, i, r): cache.rollups(t, i, now - r[0], now - r[1])
               for t in TARGETS for i in INTERVALS_S for r in RANGES if not (t == target and i in filling)}
        # The rollups being filled: the request waits for the fill instead of computing them a second time.
        waited = {}
        page = threading.Thread(target=lambda: waited.update(
            {(target, i, r): cache.rollups(target, i, now - r[0], now - r[1]) for i in filling for r in RANGES}))
        page.start()
        page.join(0.3)
        assert page.is_alive()
        go.set()
        page.join(60)
        warm.join(60)
        assert not page.is_alive() and not warm.is_alive() and cache.warm_s is not None
    finally:
        go.set()
    got.update(waited)
    assert got.keys() == reference["rollups"].keys()
    for (t, i, r), v in got.items():
        _assert_same(v, reference["rollups"][(t, i, r)], (t, i, r))
        if r[1] == 0:  # up to now: the samples of each interval started in the range (a past end has whole intervals)
            _assert_same(v, rollups_from_samples(store, t, i, now - r[0], now), ("samples", t, i, r))
    _assert_no_double_work(scans)
    store.dispose()


def test_a_status_answer_reads_the_last_hour_once(store_home, reference, monkeypatch):
    """On a cold cache the answer's window, sparkline, unfinished rollups and the baseline's raw tail all
    need the last hour of samples: one read per target (`ProbeCache.sharing_reads`), the same answer."""
    home, now = store_home
    store = open_store(Settings.resolve(home))
    read = probe_store.read_samples
    recent: list[tuple] = []

    def counted(store, target, *, since_ns=None, until_ns=None, ops=None):
        if since_ns is None or since_ns > now - 2 * H:
            recent.append((target, since_ns, until_ns))
        return read(store, target, since_ns=since_ns, until_ns=until_ns, ops=ops)

    monkeypatch.setattr(probe_store, "read_samples", counted)
    cache = ProbeCache(store, clock=lambda: now)
    for t in TARGETS:
        assert _status_json(target_status(cache, t, now_ns=now)) == reference["status"][t]
    assert sorted(r[0] for r in recent) == sorted(TARGETS), recent
    store.dispose()


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("pieces", [True, False], ids=["pieces", "samples"])
def test_concurrent_requests_while_warming_give_identical_results(store_home, reference, scans, seed, pieces,
                                                                  monkeypatch):
    """Pages (Status, rollups) and scrapes (a baseline without waiting) from several threads while the
    warm-up runs: each gets what the fully warmed cache gives, and nothing is computed twice. Also on a
    store without pieces (MariaDB), where one pass fills the baseline and the rollups of the window."""
    home, now = store_home
    if not pieces:
        monkeypatch.setattr("ioweather.services.probe.pieces.enabled", lambda store: False)
    store = open_store(Settings.resolve(home))
    cache = ProbeCache(store, clock=lambda: now)
    rng = np.random.default_rng(seed)
    asks = [[(str(t), int(i), RANGES[k]) for t, i, k in zip(rng.choice(TARGETS, 8), rng.choice(INTERVALS_S, 8),
                                                          rng.integers(len(RANGES), size=8))] for _ in range(6)]
    start = threading.Barrier(len(asks) + 1)
    errors: list[BaseException] = []

    def page(k):
        try:
            start.wait(30)
            for n, (t, i, r) in enumerate(asks[k]):
                if n % 3 == k % 3:
                    assert _status_json(target_status(cache, t, now_ns=now)) == reference["status"][t]
                b = cache.baseline(t, wait=k % 2 == 0)  # odd threads scrape: no waiting, None until computed
                if b is not None:
                    for st, v in reference["baseline"][t].items():
                        np.testing.assert_array_equal(b.stat_s[st], v)
                _assert_same(cache.rollups(t, i, now - r[0], now - r[1]), reference["rollups"][(t, i, r)], (t, i, r))
        except BaseException as e:  # noqa: BLE001 - reported by the test's thread
            errors.append(e)

    threads = [threading.Thread(target=page, args=(k,)) for k in range(len(asks))]
    for th in threads:
        th.start()
    start.wait(30)
    warm = threading.Thread(target=cache.warm, name="ioweather-warm", daemon=True)
    warm.start()
    for th in [*threads, warm]:
        th.join(120)
    assert not errors, errors
    assert not any(th.is_alive() for th in [*threads, warm]) and cache.warm_s is not None
    _assert_no_double_work(scans)
    store.dispose()


def test_hours_pruned_by_another_request_meanwhile_are_summarized_again(store_home, tmp_path, monkeypatch):
    """4-hour rollups merge hour pieces: loaded, then their sorted arrays read. Another request's gather prunes
    the hours outside its own window's ends, which between the two reads made a KeyError (one thread of
    the test above, 6 runs in 20 at load 10): the pruned hours are summarized again, the rows the same."""
    import shutil

    from ioweather.services.probe import pieces
    from ioweather.store import probe_pieces as pieces_store

    home, now = store_home
    shutil.copytree(home, tmp_path / "home")  # the module's store keeps its pieces for the other tests
    store = open_store(Settings.resolve(tmp_path / "home"))
    asks = [(t, now - r[0], now - r[1]) for t in TARGETS for r in RANGES[2:]]  # the ranges of partial days
    expected = [pieces.rollups(store, t, 14_400, lo, hi, now) for t, lo, hi in asks]
    read, pruned = pieces_store.sorted_arrays, []

    def pruned_meanwhile(store, target, keys):
        if keys:
            pruned.append(pieces_store.prune_hours(store, target, []))
        return read(store, target, keys)

    monkeypatch.setattr(pieces_store, "sorted_arrays", pruned_meanwhile)
    for (t, lo, hi), want in zip(asks, expected):
        _assert_same(pieces.rollups(store, t, 14_400, lo, hi, now), want, (t, lo, hi))
    assert any(pruned), "no hour piece was pruned between the two reads: the test tests nothing"
    store.dispose()


def test_the_fill_waits_for_the_first_answer(store_home, scans, monkeypatch):
    """After a restart the dashboard's warm-up fills every baseline at once, then waits for the first answer
    to go out before the rollups and the change-point libraries, which would take the GIL from it; with no
    request at all it goes on after WARM_HOLD_S."""
    import ioweather.web.app as web_app

    home, now = store_home
    app = frozen_app(home, now)
    with Server(app) as s:
        cache, answered = app.state.ctx.cache, app.state.ctx.answered
        deadline = time.monotonic() + 60
        while not all(cache._t(t).baseline is not None for t in TARGETS):
            assert time.monotonic() < deadline, "the baselines were not filled"
            time.sleep(0.02)
        time.sleep(1.0)  # the time under test: nothing may be read while it waits for the first answer
        assert not answered.is_set() and cache.warm_s is None
        assert [d for d in scans if d[0] == "rollups"] == []  # held: nothing read beside the first answer
        assert api(s, "/api/status")[0] == 200
        assert answered.wait(5)  # set once the response has gone out, on the server's thread
        _warmed(cache)
    assert {d[1] for d in scans if d[0] == "rollups"} == set(TARGETS)
    _assert_no_double_work(scans)

    monkeypatch.setattr(web_app, "WARM_HOLD_S", 0.5)
    app = frozen_app(home, now)
    with Server(app):
        _warmed(app.state.ctx.cache, 60)
        assert not app.state.ctx.answered.is_set()


def test_a_shutdown_stops_the_held_warm_up(store_home):
    """A server stopped while its warm-up waits for a first answer ends that thread at once, instead of
    filling rollups and importing libraries after the shutdown."""
    home, now = store_home
    app = frozen_app(home, now)
    with Server(app):
        cache = app.state.ctx.cache
        deadline = time.monotonic() + 60
        while not all(cache._t(t).baseline is not None for t in TARGETS):
            assert time.monotonic() < deadline, "the baselines were not filled"
            time.sleep(0.02)
        warm = next(t for t in threading.enumerate() if t.name == WARM)
    warm.join(2.0)
    assert not warm.is_alive() and cache.warm_s is None  # stopped in the hold, before the rollups


def test_the_work_after_the_first_answer_waits_for_the_pages_being_answered(store_home, scans, monkeypatch):
    """After its hold, the warm-up's background work (the month's rollups, the marks' search) waits before each
    target while a page is being answered (web/app.py WARM_YIELD_S, `WebContext.busy`), and goes on when none is."""
    import ioweather.web.app as web_app

    monkeypatch.setattr(web_app, "WARM_YIELD_S", 60.0)
    home, now = store_home
    app = frozen_app(home, now)
    with Server(app) as s:
        ctx = app.state.ctx
        ctx.request_started()  # a page being answered, as the middleware marks it, from before the first answer
        assert api(s, "/api/status")[0] == 200
        assert ctx.answered.wait(5)
        asked = len([d for d in scans if d[0] == "rollups"])  # the Status answer's own
        time.sleep(1.5)  # the time under test: the first answer went out, the page in progress holds the warm-up
        assert len([d for d in scans if d[0] == "rollups"]) == asked and ctx.cache.warm_s is None
        ctx.request_ended()
        _warmed(ctx.cache)
        assert {d[1] for d in [d for d in scans if d[0] == "rollups"][asked:]} == set(TARGETS)
        # the middleware marks every request as answered once its response has gone out, errors included
        for path, code in (("/api/status", 200), ("/api/nothing-here", 404), ("/api/history?days=x", 400)):
            assert api(s, path)[0] == code
            assert ctx.idle.wait(5)  # set on the server's thread once the response has gone out
