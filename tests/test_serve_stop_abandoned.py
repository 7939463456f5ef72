"""A dashboard stopped while a request runs still writes what it keeps across a restart (issue 40).

`ioweather serve` waits services.runtime.server.GRACE_S for requests in flight, then abandons them; uvicorn
runs the app's lifespan shutdown only after every request has ended, so a stop during a long request (the
Report page's first answer at a center's size) skipped it: `probe-rollups.bin` and `probe-baselines.json`
were not written and the next start rebuilt a month of rollups. Here a real `ioweather serve` process is
sent SIGTERM while its /api/status answer is held (a hook in the process wraps the Status page's data so
that it sleeps after computing it), and the kept files must exist and load.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.services.probe.cache import ProbeCache
from ioweather.store import open_store
from ioweather.store import probe_rollups_file

from test_probe_rollups_kept import home  # noqa: F401  (fixture: two targets' days of samples)

pytestmark = pytest.mark.slow  # starts a server process

ROOT = Path(__file__).resolve().parents[1]

#: Runs `ioweather serve` with the Status page's data held `HOLD_S` after it is computed, a file marking when.
SERVE = """
import sys, time
from pathlib import Path
import ioweather.web.pages.status as page
marker, hold = Path(sys.argv[1]), float(sys.argv[2])
real = page.PAGE.data
def held(ctx, params):
    doc = real(ctx, params)
    marker.write_text("held")
    time.sleep(hold)
    return doc
object.__setattr__(page.PAGE, "data", held)
from ioweather.cli import main
sys.argv = ["ioweather", "serve", "--port", sys.argv[3], "-q"]
main()
"""
HOLD_S = 60


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(cond, what: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert proc.poll() is None, f"the server stopped before {what}"
        assert time.monotonic() < deadline, f"no {what} after {timeout_s} s"
        time.sleep(0.05)


def test_stop_during_a_request_writes_the_kept_caches(home, tmp_path):  # noqa: F811
    cache_dir = home / "cache"
    rollups, baselines = cache_dir / probe_rollups_file.NAME, cache_dir / "probe-baselines.json"
    marker, port = tmp_path / "held", _port()
    env = {**os.environ, "IOWEATHER_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(marker), str(HOLD_S), str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        answered: list = []
        client = threading.Thread(target=lambda: answered.append(_get(f"http://127.0.0.1:{port}/api/status")),
                                  daemon=True)
        _wait(lambda: _listening(port), "listening", proc)
        assert not rollups.exists() and not baselines.exists()
        client.start()
        _wait(marker.exists, "held request", proc)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=HOLD_S / 2)
        stopped_s = time.monotonic() - t
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "abandoned" in err, err  # the request was still running: the path of the bug, not the lifespan's
    assert stopped_s < HOLD_S / 2 and not any(answered)
    assert proc.returncode == 0, err
    # the kept files, whole and of this store: what a restarted server loads instead of rebuilding them
    cache = ProbeCache(open_store(Settings.resolve(home)), persist=True, keep_recent=True)
    kept = probe_rollups_file.load(rollups, cache._rows_key())
    assert set(kept) == {"scratch", "home"}, sorted(kept)
    doc = json.loads(baselines.read_text())
    assert doc and "scratch" in json.dumps(doc) and "home" in json.dumps(doc)
    assert not [p.name for p in cache_dir.iterdir() if p.name.endswith(".tmp")]


def _listening(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/static/favicon.svg", timeout=5).read()
        return True
    except OSError:
        return False


def _get(url: str):
    try:
        return urllib.request.urlopen(url, timeout=HOLD_S * 2).read()
    except OSError:
        return None
