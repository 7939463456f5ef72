"""The probe when processes share its directory or its store: one probe per directory, and a store
locked by another writer never stops the measuring (real processes, real locks)."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ioweather.errors import UserError
from ioweather.sources.probe import LOCK_NAME, POOL_NAME, Probe, ProbeOptions, init_probe_dir
from ioweather.store import Store
from ioweather.store import probe as probe_store

MiB = 1 << 20
INTERVAL = 0.2


def _env(home: Path) -> dict:
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    return env


def _daemon(d: Path, home: Path, *extra: str, db: str | None = None, interval: float = 0.1) -> subprocess.Popen:
    db_args = ["--db", db] if db else []
    return subprocess.Popen([sys.executable, "-m", "ioweather", *db_args, "probe", "run", str(d), "--interval",
                             str(interval), "--block", "64k", *extra], env=_env(home),
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _wait_for(pred, timeout=60) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.1)
    return False


def _sqlite_count(db: Path, sql: str = "SELECT count(*) FROM probe_samples") -> int:
    con = sqlite3.connect(db, timeout=60)
    try:
        return con.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _stop(proc: subprocess.Popen, timeout: float = 60) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("the probe did not stop on SIGTERM")
    return proc.returncode, err


# ------------------------------------------------------------------ item 10: one probe per directory
def test_second_probe_and_watch_on_one_directory_are_refused(tmp_path, home, cli):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 8, block=64 * 1024)
    first = _daemon(d, home, "-q")
    db = home / "ioweather.sqlite"
    try:
        assert _wait_for(lambda: db.exists() and _sqlite_count(db) >= 30), "the first probe stores samples"
        t0 = time.monotonic()
        r = cli("probe", "run", str(d), "--duration", "30", "--interval", "0.1", "--block", "64k", home=home, timeout=60)
        assert r.returncode == 2 and time.monotonic() - t0 < 25, (r.returncode, r.stderr)  # refused, not run
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert str(d) in r.stderr and f"pid {first.pid}" in r.stderr, r.stderr
        w = cli("watch", str(d), "--port", "0", "--interval", "0.1", home=home, timeout=60)
        assert w.returncode == 2 and w.stderr.count("\n") == 2, w.stderr  # "using the existing ...", then the refusal
        assert f"{d} is already being probed by pid {first.pid}" in w.stderr.splitlines()[-1], w.stderr
        assert "dashboard at" not in w.stdout  # refused before serving anything
    finally:
        code, err = _stop(first)
    assert code == 0, err
    # Only the first probe worked the pool: no EEXIST/ENOENT failures, and the pool kept its size.
    assert _sqlite_count(db, "SELECT count(*) FROM probe_samples WHERE status != 'ok'") == 0
    assert _sqlite_count(db, "SELECT count(*) FROM probe_runs") == 1
    assert len(os.listdir(d / POOL_NAME)) == 8
    # The lock goes with its holder: the directory can be probed again at once.
    cli("probe", "run", str(d), "--duration", "0.5", "--interval", "0.1", "--block", "64k", "-q", home=home, check=True)


def test_lock_is_released_when_the_holder_is_killed(tmp_path, home, cli):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 4, block=64 * 1024)
    first = _daemon(d, home, "-q")
    assert _wait_for(lambda: (d / LOCK_NAME).exists() and (d / LOCK_NAME).read_text().strip()), "the lock is taken"
    assert (d / LOCK_NAME).read_text().split() == [str(first.pid), socket.gethostname()]
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    cli("probe", "run", str(d), "--duration", "0.5", "--interval", "0.1", "--block", "64k", "-q", home=home, check=True)


def test_symlink_planted_at_the_lock_file_is_refused(tmp_path, home, cli):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 2, block=64 * 1024)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, d / LOCK_NAME)
    r = cli("probe", "run", str(d), "--duration", "1", home=home)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"cannot open {d / LOCK_NAME}: it is a symlink" in r.stderr, r.stderr
    assert victim.read_text() == "precious"
