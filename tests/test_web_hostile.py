"""Issue 19, web: DNS rebinding (only the bound host names are answered, by a real `serve` process),
a bandwidth that underflows (`adjust=1e-320`: a one-line error, not an IndexError and a 500), and the
security headers on every response, the 500s included."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from web_pages_data import BIMODAL, pages_home, pages_server  # noqa: F401  (fixtures)
from web_server import Server, assert_bad_request

from ioweather.config import Settings
from ioweather.web import app as web_app
from ioweather.web.registry import Page
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

SECURITY = ("content-security-policy", "x-content-type-options", "referrer-policy")


class ServeProcess:
    """`ioweather serve --port 0 ARGS` in its own process; `port` from the URL it prints."""

    def __init__(self, home: Path, *args: str, env: dict | None = None):
        full = {**os.environ, "IOWEATHER_HOME": str(home), **(env or {})}
        full.pop("IOWEATHER_DB", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", "0", *args],
                                     env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r":(\d+)/", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"no URL from serve: {line!r} {self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def get(self, path: str, host: str) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", host)
            conn.endheaders()
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def served(tmp_path):
    started = []

    def start(*args, env=None):
        started.append(ServeProcess(tmp_path / "home", *args, env=env))
        return started[-1]
    yield start
    for s in started:
        s.stop()


def test_other_host_names_are_refused(served):
    s = served()
    for host in ("attacker.example", "attacker.example:80", f"evil.test:{s.port}", "127.0.0.1.nip.io", ""):
        code, headers, body = s.get("/api", host)
        assert code == 400, (host, code, body[:200])
        assert b"version" not in body
        assert all(h in headers for h in SECURITY), headers
    for host in (f"127.0.0.1:{s.port}", f"localhost:{s.port}", "LOCALHOST", f"[::1]:{s.port}"):
        code, headers, body = s.get("/api", host)
        assert code == 200 and b'"version"' in body, (host, code, body[:200])


def test_allowed_host_option_and_environment(served):
    s = served("--allowed-host", "dashboard.example.org", "--allowed-host", "*.proxy.test",
               env={"IOWEATHER_ALLOWED_HOSTS": "ignored.example"})  # an option given wins over the variable
    assert s.get("/api", "dashboard.example.org")[0] == 200
    assert s.get("/api", "a.proxy.test:443")[0] == 200
    assert s.get("/api", "ignored.example")[0] == 400
    assert s.get("/api", "attacker.example")[0] == 400
    assert s.get("/api", "localhost")[0] == 200
    e = served(env={"IOWEATHER_ALLOWED_HOSTS": "one.example two.example"})
    assert [e.get("/api", h)[0] for h in ("one.example", "two.example", "three.example")] == [200, 200, 400]


def test_bad_allowed_host_is_one_line(cli, home):
    r = cli("serve", "--port", "0", "--allowed-host", "a*b", home=home, timeout=30)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [("ioweather: error: --allowed-host 'a*b': give a host name, an address "
                                              "or a pattern like *.example.org")]


def test_tiny_adjust_is_a_bad_request(pages_server):
    assert_bad_request(pages_server, f"/api/factors?target={BIMODAL}&adjust=1e-320", "too small for floating point")
    assert_bad_request(pages_server, f"/api/factors?target={BIMODAL}&adjust=1e-310", "too small for floating point")


def test_tiny_adjust_on_the_command_line(cli, home, tmp_path):
    import numpy as np

    d = np.exp(np.random.default_rng(1).normal(0, 1, 300))
    f = tmp_path / "d.csv"
    f.write_text("duration_s\n" + "\n".join(map(repr, d.tolist())) + "\n")
    r = cli("factors", "density", str(f), "--adjust", "1e-320", home=home)
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "too small for floating point" in r.stderr
    assert cli("factors", "density", str(f), "--adjust", "1e-300", home=home).returncode == 0


def test_a_500_carries_the_security_headers(tmp_path, monkeypatch):
    def boom(ctx, params):
        raise RuntimeError("planted bug")

    page = Page("boom", "Boom", boom, "status.html", lambda ctx: True)
    monkeypatch.setattr(web_app, "load_pages", lambda: [page])
    with Server(web_app.create_app(Settings.resolve(tmp_path / "home"), warm=False)) as s:
        for path, accept in (("/api/boom", None), ("/boom", "text/html")):
            code, headers, body = s.get(path, accept)
            headers = {k.lower(): v for k, v in headers.items()}
            assert code == 500, (path, code)
            assert b"planted bug" not in body and b"Traceback" not in body
            assert headers["x-content-type-options"] == "nosniff", (path, headers)
            assert headers["referrer-policy"] == "no-referrer"
            assert "default-src 'self'" in headers["content-security-policy"]
        # and the other answers still carry them once (not twice)
        code, headers, _ = s.get("/api")
        assert code == 200 and headers["content-security-policy"].count("default-src") == 1
