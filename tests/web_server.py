"""Shared fixtures of the web, metrics and watch tests: a store filled by a real probe run plus
synthetic long windows, and the dashboard served by uvicorn on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.web.app import create_app
from ioweather.web.context import WebConfig, WebContext

sys.path.insert(0, str(Path(__file__).parent))
from web_synthetic import Episode, add_target  # noqa: E402

#: A probe target label built to break naive HTML, JSON-in-HTML, Prometheus labels and Plotly text.
NASTY = """<script>window.__xss=1</script><img src=x onerror="window.__xss=2"> 'q' & "lustre\\"""
H = 3600 * 10**9
MIN = 60 * 10**9


@dataclass
class Filled:
    home: Path
    t0_ns: int  # the frozen "now" of the in-process server: every sample is before it


def fill_store(home: Path, run_cli) -> Filled:
    """Real probe samples (a short run of the real probe, labelled NASTY) and three synthetic targets:

    - scratch: 30 days every 60 s, data ops 5x slower from 3 h to 2 h ago, normal now;
    - home-nfs: 2 days every 5 s, every op 25x slower in the last 30 minutes (severely degraded now);
    - archive: 2 days every 10 s, ending 3 h ago (stale now).
    """
    probe_dir = home.parent / "probe-dir"
    run_cli("probe", "init", str(probe_dir), "--file-size", "4MiB", "--pool", "10", home=home, check=True)
    run_cli("probe", "run", str(probe_dir), "--duration", "2.5s", "--interval", "0.25s", "--target", NASTY,
            "--quiet", home=home, check=True)
    t0 = (time.time_ns() // 10**9 + 1) * 10**9
    store = open_store(Settings.resolve(home))
    add_target(store, "scratch", t0 - 30 * 86400 * 10**9, t0, period_s=60, seed=1,
               episodes=[Episode(t0 - 3 * H, t0 - 2 * H, 5.0, ("data_write", "data_read"))])
    add_target(store, "home-nfs", t0 - 2 * 86400 * 10**9, t0, period_s=5, seed=2,
               episodes=[Episode(t0 - 30 * MIN, t0, 25.0)], error_rate=1e-3, timeout_rate=0)
    add_target(store, "archive", t0 - 2 * 86400 * 10**9, t0 - 3 * H, period_s=10, seed=3)
    store.dispose()
    return Filled(home, t0)


class Server:
    """uvicorn serving `app` on a free loopback port in a thread of this process."""

    def __init__(self, app):
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def get(self, path: str, accept: str | None = None) -> tuple[int, dict, bytes]:
        req = urllib.request.Request(self.url + path, headers={"Accept": accept} if accept else {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()


def api(server: Server, path: str) -> tuple[int, dict]:
    """(status, JSON body) of GET `path`."""
    code, _, body = server.get(path)
    return code, json.loads(body)


def assert_bad_request(server: Server, path: str, message: str) -> None:
    """`path` (under /api) answers 400 with `message` in its JSON error, and its HTML page 400 too."""
    code, _, body = server.get(path)
    assert code == 400, body
    assert message in json.loads(body)["error"]
    code, _, html = server.get(path.replace("/api/", "/"))
    assert code == 400 and "Bad request" in html.decode()


def escaped_page(server: Server, path: str) -> tuple[str, dict]:
    """(HTML, embedded JSON twin) of the page at `path`, after checking that it answered 200, that the
    NASTY labels of the test data are not live markup in it, and that the twin in its
    <script id="page-data"> holds no "<" that could close that script early."""
    code, _, body = server.get(path)
    assert code == 200
    html = body.decode()
    assert "<script>window.__xss" not in html and "<img src=x" not in html
    blob = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', html, re.S).group(1)
    assert blob.count("<") == 0
    return html, json.loads(blob)


def assert_never_500(server: Server, params: dict[str, list[str]], alphabet: list[str], *, tries: int, seed: int,
                     codes: tuple[int, ...] = (200, 400), base: dict[str, str] | None = None, max_len: int = 12) -> None:
    """Fuzz: `tries` requests, each giving one parameter of one page a random string from `alphabet`.

    `params` maps an API path to its parameter names; `base` holds parameters every request
    carries (overridden when the fuzzed one has the same name). Every answer is in `codes`.
    """
    rng = np.random.default_rng(seed)
    pages = list(params)
    for _ in range(tries):
        page = pages[int(rng.integers(len(pages)))]
        name = rng.choice(params[page])
        value = "".join(rng.choice(alphabet, size=int(rng.integers(0, max_len))))
        query = {**(base or {}), name: value}
        code, _, body = server.get(page + "?" + "&".join(f"{k}={quote(v)}" for k, v in query.items()))
        assert code in codes, (page, name, value, code, body[:200])


#: Query values that broke parsers somewhere (issue 19): numbers at and past the float limits, times
#: outside any calendar, durations that overflow, markup, traversal, control characters, huge text.
HOSTILE_VALUES = ["nan", "inf", "-inf", "1e-320", "5e-324", "1e309", "-1", "0", "-0", "1e999", "0x10",
                  "99999999999999999999999", "-99999999999999999999", "0001-01-01", "0001-01-01T00:00:00+14:00",
                  "9999-12-31T23:59:59Z", "99999999999999", "now-99999999w", "now+1s", "99999999w", "0.0000000001s",
                  "1e400s", "../../etc/passwd", "/etc/shadow", "<script>alert(1)</script>", "[/oops]", "[bold]x",
                  "\x00", "\u202e", "' OR 1=1 --", "%00", "a" * 5000, "", " ", "true", "null", "[]", "{}",
                  "1,2", "#1", "id:1", "file:/etc/passwd", "NaNs", "1..2", "٣", "１"]


def hostile_strings():
    """A hypothesis strategy of query values: the list above, any text, and those glued together."""
    from hypothesis import strategies as st

    known = st.sampled_from(HOSTILE_VALUES)
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
    return st.one_of(known, text, st.tuples(known, text).map("".join), st.tuples(text, known).map("".join))


def page_parameters(server: Server) -> dict[str, list[str]]:
    """Every page's API path and the parameters it takes, as the pages themselves say (an unknown
    parameter is a 400 listing them), so that a new page is fuzzed without a change here."""
    code, index = api(server, "/api")
    assert code == 200
    out = {}
    for p in index["pages"]:
        for path in (p["json"], *p["parts"].values()):  # a part (/api/timeline/changes) takes the page's query
            code, body = api(server, f"{path}?__unknown__=1")
            assert code == 400, (path, code, body)
            takes = re.search(r"this page takes: (.*)$", body["error"]).group(1)
            out[path] = [] if takes == "no parameters" else takes.split(", ")
    return out


def fuzz_pages(server: Server, params: dict[str, list[str]], *, examples: int, base: dict[str, dict] | None = None,
               codes: tuple[int, ...] = (200, 400, 404)) -> None:
    """Hypothesis: requests giving one to three parameters of a page hostile values (over `base`, the
    valid parameters a page needs to get past its first check). Every answer is in `codes`, an error is
    JSON with a one-line message, nothing takes longer than the deadline."""
    from datetime import timedelta

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    pages = sorted(p for p in params if params[p])

    @settings(max_examples=examples, deadline=timedelta(seconds=30), derandomize=not os.environ.get(
        "IOWEATHER_FUZZ_RANDOM"), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def run(data):
        page = data.draw(st.sampled_from(pages))
        names = data.draw(st.lists(st.sampled_from(params[page]), min_size=1, max_size=3, unique=True))
        query = {**(base or {}).get(page, {}), **{n: data.draw(hostile_strings()) for n in names}}
        code, _, body = server.get(page + "?" + "&".join(f"{k}={quote(v)}" for k, v in query.items()))
        assert code in codes, (page, query, code, body[:300])
        if code != 200:
            err = json.loads(body)["error"]
            assert isinstance(err, str) and "\n" not in err and "Traceback" not in err, (page, query, err)

    run()


def frozen_app(home: Path, t0_ns: int, clock: list[int] | None = None, db_url: str | None = None, **config):
    """The dashboard over `home` with its clock stopped at t0 (so 'now' does not drift during the tests),
    or at whatever `clock[0]` says when a test moves it."""
    ctx = WebContext(Settings.resolve(home, db_url), WebConfig(**config))
    clock = clock if clock is not None else [t0_ns]
    ctx.cache.clock = lambda: clock[0]
    return create_app(ctx.settings, ctx=ctx)


_FILLED: list[Filled] = []


def _fill(root: Path) -> None:
    from conftest import run_cli

    root.mkdir()
    (root / "t0_ns").write_text(str(fill_store(root / "home", run_cli).t0_ns))


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Filled:
    """Built once per test run (tests/shared_stores.py), copied once per worker and shared by the modules
    that import it (read-only for them)."""
    from shared_stores import built_once, copy_home

    if not _FILLED:
        root = copy_home(built_once(tmp_path_factory, "web", _fill), tmp_path_factory.mktemp("web") / "root")
        _FILLED.append(Filled(root / "home", int((root / "t0_ns").read_text())))
    return _FILLED[0]


@pytest.fixture(scope="module")
def server(filled):
    with Server(frozen_app(filled.home, filled.t0_ns)) as s:
        yield s
