"""A damaged store gives one line naming `ioweather store check`, in every command and page.

Three damages seen by users: an archived probe Parquet file removed, one corrupted, and garbage
in the middle of the SQLite file; plus a table that its component's schema says exists but does
not. Before, these surfaced as tracebacks (sqlite3.DatabaseError, FileNotFoundError, "ZSTD
decompression failed") from the CLI and bare 500s from the pages, while /metrics said the store
was up: the raw-cursor and pyarrow read paths bypassed the store's error wrapping.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from ports import free_port  # noqa: E402
from web_synthetic import add_target  # noqa: E402
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

pytestmark = pytest.mark.slow
DAY = 86400 * 10**9
PAGES = ("/status", "/timeline?target=scratch&since=1d", "/history?target=scratch&since=3d&interval=1h")


def _store_with_archive(home: Path, cli) -> list[Path]:
    t0 = time.time_ns()
    store = open_store(Settings.resolve(home))
    add_target(store, "scratch", t0 - 3 * DAY, t0, period_s=120, seed=1)
    store.dispose()
    r = cli("probe", "archive", "--keep-days", "0", "--json", home=home, check=True)
    files = sorted((home / "parquet").rglob("*.parquet"))
    assert files, r.stdout
    return files


def _one_line_store_check(r) -> None:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    assert "ioweather store check" in r.stderr, r.stderr


class _Serve:
    def __init__(self, home: Path):
        self.port = free_port()
        env = dict(os.environ, IOWEATHER_HOME=str(home))
        env.pop("IOWEATHER_DB", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", str(self.port)],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api", timeout=5)
                return
            except OSError:
                assert self.proc.poll() is None, self.proc.stdout.read()
                assert time.monotonic() < deadline, "serve did not answer in 60 s"
                time.sleep(0.3)

    def get(self, path: str, accept: str = "text/html") -> tuple[int, str]:
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers={"accept": accept})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _assert_pages_report_damage(home: Path) -> None:
    srv = _Serve(home)
    try:
        for path in PAGES:
            status, body = srv.get(path)
            assert status == 503, (path, status, body[:300])
            assert "ioweather store check" in body, (path, body[:500])
            api = "/api" + path
            status, body = srv.get(api, accept="application/json")
            assert status == 503, (api, status)
            assert "store check" in json.loads(body)["error"]
        status, body = srv.get("/metrics")
        assert status == 200 and "ioweather_store_up 0.0" in body, body[-400:]
    finally:
        srv.close()


@pytest.mark.parametrize("damage", ["removed", "corrupted"])
def test_damaged_probe_archive(tmp_path, cli, damage):
    home = tmp_path / "home"
    files = _store_with_archive(home, cli)
    victim = files[len(files) // 2]
    if damage == "removed":
        victim.unlink()
    else:
        data = bytearray(victim.read_bytes())
        mid = len(data) // 2
        data[mid:mid + 64] = b"\xff" * 64
        victim.write_bytes(bytes(data[:-8]) + b"garbage!")
    for args in (("probe", "stats", "--target", "scratch", "--since", "3d"),
                 ("slowdown", "--target", "scratch", "--baseline", "3d", "--since", "3d")):
        _one_line_store_check(cli(*args, home=home))
    _assert_pages_report_damage(home)


def test_garbage_in_the_middle_of_the_database(tmp_path, cli):
    home = tmp_path / "home"
    t0 = time.time_ns()
    store = open_store(Settings.resolve(home))
    add_target(store, "scratch", t0 - DAY, t0, period_s=5, seed=1)
    store.dispose()
    db = home / "ioweather.sqlite"
    cli("probe", "stats", home=home, check=True)  # checkpointed: every row is in the main file now
    size = db.stat().st_size
    with open(db, "r+b") as f:  # no store is open in this process any more
        for off in range(size // 4, size - 4096, size // 8):
            f.seek(off)
            f.write(os.urandom(4096))
    for args in (("probe", "stats", "--target", "scratch", "--since", "1d"),
                 ("slowdown", "--target", "scratch", "--baseline", "1d")):
        _one_line_store_check(cli(*args, home=home))
    _assert_pages_report_damage(home)


def test_missing_table_gives_the_error_page(tmp_path, cli):
    home = tmp_path / "home"
    cli("jobs", "summary", home=home)  # creates the jobs tables
    import sqlite3

    con = sqlite3.connect(home / "ioweather.sqlite")
    con.execute("DROP TABLE darshan_jobs")
    con.commit()
    con.close()
    _one_line_store_check(cli("jobs", "summary", home=home))
    srv = _Serve(home)
    try:
        status, body = srv.get("/jobs")
        assert status == 503 and "ioweather store check" in body, (status, body[:300])
        status, body = srv.get("/api/jobs", accept="application/json")
        assert status == 503 and "darshan_jobs" in json.loads(body)["error"]
    finally:
        srv.close()
