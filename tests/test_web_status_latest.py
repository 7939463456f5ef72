"""Issue 40 item 4: the Status page's newest answer is served for FRESH_S of the probe cache's clock, its JSON and
HTML made once (web/latest.py). A served answer must be byte for byte what a fresh dashboard computes at the
answer's clock; a clock that did not move never reuses one (what was stored meanwhile is in the next answer);
the background refresh computes the default view before requests would find it too old, only while asked for."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from starlette.datastructures import QueryParams
from starlette.testclient import TestClient

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.units import ns_to_iso
from ioweather.web import latest as latest_mod
from ioweather.web.app import create_app
from ioweather.web.context import WebContext
from ioweather.web.pages.status import FRESH_S

from web_server import Server, frozen_app
from web_synthetic import Episode, add_target

S = 10**9
H = 3600 * S


def _build(home) -> int:
    store = open_store(Settings.resolve(home))
    now = (time.time_ns() // S) * S
    add_target(store, "scratch", now - 6 * H, now, period_s=10, seed=1, episodes=[Episode(now - 20 * 60 * S, now, 6.0)])
    add_target(store, "home", now - 6 * H, now, period_s=10, seed=2)
    store.dispose()
    return now


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("latest") / "home"
    return home, _build(home)


def _client(home, clock: list[int]) -> TestClient:
    ctx = WebContext(Settings.resolve(home))
    ctx.cache.clock = lambda: clock[0]
    return TestClient(create_app(ctx.settings, ctx=ctx, warm=False), base_url="http://127.0.0.1:8000")


def _fresh(home, at_ns: int, path: str) -> bytes:
    """The answer of a dashboard that never answered before, its clock at `at_ns`: the reference."""
    return _client(home, [at_ns]).get(path).content


def test_a_served_answer_is_the_one_computed_at_its_clock(home):
    home, t0 = home
    clock = [t0]
    client = _client(home, clock)
    first = client.get("/api/status").content
    assert json.loads(first)["generated_at"] == ns_to_iso(t0)
    page = None
    for step_s in (1, 4, FRESH_S - 1):  # the clock moves less than FRESH_S: the same answer, as computed at t0
        clock[0] = t0 + int(step_s * S)
        assert client.get("/api/status").content == first
        html = client.get("/status").content
        assert page is None or html == page
        page = html
    assert first == _fresh(home, t0, "/api/status")
    assert page == _fresh(home, t0, "/status")
    # a target's own view is kept apart from the default one: computed at the clock of now (with the baselines
    # computed at t0, which a fresh dashboard would compute again: not compared with one)
    one = client.get("/api/status?target=home").json()
    assert [t["target"] for t in one["targets"]] == ["home"] and one["generated_at"] == ns_to_iso(clock[0])
    clock[0] = t0 + int((FRESH_S + 1) * S)  # too old: computed again at the clock of now
    later = client.get("/api/status").content
    assert json.loads(later)["generated_at"] == ns_to_iso(clock[0])


def test_a_clock_that_does_not_move_never_reuses(tmp_path):
    home = tmp_path / "home"
    t0 = _build(home)
    clock = [t0 + 30 * S]
    client = _client(home, clock)
    before = {t["target"]: t for t in client.get("/api/status").json()["targets"]}
    store = open_store(Settings.resolve(home))
    run = probe_store.runs(store, "home")[-1]["id"]
    late = t0 + 20 * S
    probe_store.insert_samples(store, [(run, op, late + k, 5_000_000, 0, "ok", 0) for k, op in enumerate(probe_store.OPS)])
    store.dispose()
    after = {t["target"]: t for t in client.get("/api/status").json()["targets"]}
    assert before["home"]["last_sample"] != after["home"]["last_sample"]
    assert after["home"]["last_sample"] == ns_to_iso(late + len(probe_store.OPS) - 1)
    assert after["scratch"] == before["scratch"]


def test_the_background_refresh_keeps_the_default_view_while_asked_for(home, monkeypatch):
    home, t0 = home
    clock = [t0]
    client = _client(home, clock)
    latest = client.app.state.ctx.latest["status"]
    rendered = []
    latest.prerender = rendered.append
    assert latest.refresh()  # the first answer after a start, before any request
    assert not latest.refresh()  # not asked for yet: not again
    made = latest._answers[()]
    clock[0] = t0 + 2 * S
    assert latest.get(QueryParams(""), "html") is made  # fresh: served, and now asked for
    assert not latest.refresh()  # under half its FRESH_S old
    clock[0] = t0 + int(FRESH_S / 2 * S) + 1
    assert latest.refresh() and latest._answers[()].clock_ns == clock[0]
    assert latest._answers[()]._json is None and rendered[-1] is latest._answers[()]  # the HTML asked for: made
    assert not latest.refresh()  # a clock that does not move: its answers are never reused, never refreshed
    clock[0] += int(FRESH_S * S)
    asked = time.monotonic()
    monkeypatch.setattr(latest_mod.time, "monotonic", lambda: asked + latest_mod.WATCHED_S + 1)
    assert not latest.refresh()  # nobody asked for the page lately


def test_the_server_computes_the_first_answer_without_a_request(home):
    home, t0 = home
    app = frozen_app(home, t0)
    with Server(app):
        latest = app.state.ctx.latest["status"]
        deadline = time.monotonic() + 60
        while () not in latest._answers:
            assert time.monotonic() < deadline, "no answer computed in the background"
            time.sleep(0.05)
        body = latest._answers[()].json()
    assert np.all([t["state"] != "unknown" for t in json.loads(body)["targets"]])
    assert body == _fresh(home, t0, "/api/status")


def test_a_failed_refresh_is_tried_again_only_while_asked_and_once_per_fresh_s(home, monkeypatch):
    """A store that cannot answer was read again every 0.5 s by the background thread, asked for or not."""
    home, t0 = home
    client = _client(home, [t0])
    latest = client.app.state.ctx.latest["status"]
    tries = []

    def broken(ctx, params):
        tries.append(1)
        raise OSError("disk I/O error")

    latest.data = broken
    with pytest.raises(OSError):
        latest.refresh()  # the first answer after a start is tried unasked
    assert not latest.refresh() and len(tries) == 1  # not asked for: not again
    now = time.monotonic()
    latest.asked["html"] = now
    assert not latest.refresh() and len(tries) == 1  # asked, but within FRESH_S of the failure
    monkeypatch.setattr(latest_mod.time, "monotonic", lambda: now + FRESH_S + 0.1)
    with pytest.raises(OSError):
        latest.refresh()
    assert len(tries) == 2


def test_a_warm_up_that_fails_before_its_hold_releases_the_requests(home, monkeypatch):
    """The first Status request waits for the warm-up's baselines (`warmed`); a warm-up that raised before them
    left it waiting WARM_WAIT_S (120 s)."""
    from ioweather.web import app as app_mod

    home, _ = home
    ctx = WebContext(Settings.resolve(home))

    def locked(*a, **kw):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(ctx.cache, "warm", locked)
    app_mod._warm(ctx)
    assert ctx.warmed.is_set()
    ctx.close()


def test_close_waits_for_the_background_answer_before_releasing_the_store(home):
    """The background refresh computing while the server stops must end before the cache writes its kept files
    and the store is disposed (it reopened a connection on the disposed engine)."""
    import threading

    from ioweather.web import app as app_mod

    home, t0 = home
    client = _client(home, [t0])
    ctx = client.app.state.ctx
    latest = ctx.latest["status"]
    order, computing = [], threading.Event()

    def slow(c, params):
        computing.set()
        time.sleep(0.5)
        order.append("answer computed")
        return {"targets": []}

    latest.data = slow
    real_close = ctx.cache.close
    ctx.cache.close = lambda: (order.append("cache closed"), real_close())
    ctx.warmed.set()
    keeper = threading.Thread(target=app_mod._keep_latest, args=(ctx,), daemon=True)
    ctx.background.append(keeper)
    keeper.start()
    assert computing.wait(10)
    ctx.close()
    assert order == ["answer computed", "cache closed"]
    keeper.join(5)
    assert not keeper.is_alive()
