"""Issue 20, item 12: the server log has timestamps and uvicorn's standard access log (none when quiet),
and `serve --help` lists every page of the registry."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from ioweather.web.pages import load_pages
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

SERVE = textwrap.dedent("""
    import sys, threading, urllib.request
    from ioweather.services.runtime.server import bind, run_server

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                m = await receive()
                await send({"type": m["type"] + ".complete"})
                if m["type"] == "lifespan.shutdown":
                    return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    stop = threading.Event()

    def client():
        import time
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status?x=1", timeout=5).read()
                break
            except OSError:
                time.sleep(0.05)
        stop.set()

    threading.Thread(target=client, daemon=True).start()
    run_server(app, sock, stop, print, quiet=sys.argv[1] == "quiet")
""")

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d{4} "


@pytest.mark.parametrize("mode", ["loud", "quiet"])
def test_access_log_with_timestamps_unless_quiet(mode):
    proc = subprocess.run([sys.executable, "-c", SERVE, mode], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    access = [line for line in proc.stdout.splitlines() if "GET /status" in line]
    if mode == "quiet":
        assert access == [] and proc.stderr == ""
        return
    assert len(access) == 1, proc.stdout
    assert re.fullmatch(STAMP + r'INFO: +127\.0\.0\.1:\d+ - "GET /status\?x=1 HTTP/1\.1" 200 OK', access[0]), access[0]
    started = [line for line in proc.stderr.splitlines() if "Application startup complete" in line]
    assert len(started) == 1 and re.match(STAMP + "INFO:", started[0]), proc.stderr


def test_serve_help_lists_every_page(cli):
    out = cli("serve", "--help", check=True).stdout
    listed = re.findall(r"^  /(\w+) ", out, re.M)
    assert listed == [p.slug for p in load_pages() if p.in_nav]
    assert len(listed) >= 8
