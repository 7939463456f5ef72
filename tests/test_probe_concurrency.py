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
from ioweather.services.probe.run import ProbeDaemon
from ioweather.sources.probe import LOCK_NAME, POOL_NAME, ProbeOptions, init_probe_dir
from ioweather.store import Store
from ioweather.store import probe as probe_store
from waiting import wait_until

MiB = 1 << 20
INTERVAL = 0.2
#: How long another writer holds the store: longer than the probe's flush period (ProbeOptions.flush_s, 5 s),
#: so that at least one flush waits on the lock while the periods go on (it was 15 s: 7 s more of the same).
LOCK_S = 8


def _env(home: Path) -> dict:
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    return env


def _daemon(d: Path, home: Path, *extra: str, db: str | None = None, interval: float = 0.1) -> subprocess.Popen:
    db_args = ["--db", db] if db else []
    return subprocess.Popen([sys.executable, "-m", "ioweather", *db_args, "probe", "run", str(d), "--interval",
                             str(interval), "--block", "64k", *extra], env=_env(home),
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


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
        wait_until(lambda: db.exists() and _sqlite_count(db) >= 30, 60, "the first probe stores samples")
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
    wait_until(lambda: (d / LOCK_NAME).exists() and (d / LOCK_NAME).read_text().strip(), 60, "the lock is taken")
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


# ------------------------------------------------------------------ item 11: a locked store
def _check_every_period_once(starts_by_op: dict[str, list[int]], lock_window: tuple[float, float], stderr: str):
    """Every period stored once with its six ops, no gap of more than a few intervals, the lock inside."""
    writes = starts_by_op["data_write"]
    assert len(writes) == len(set(writes))
    assert {op: len(v) for op, v in starts_by_op.items()} == {op: len(writes) for op in starts_by_op}
    assert len(starts_by_op) == 6
    first, last = writes[0] / 1e9, writes[-1] / 1e9
    assert first < lock_window[0] and last > lock_window[1], "the run spans the lock"
    gaps = [(b - a) / 1e9 for a, b in zip(writes, writes[1:])]
    assert max(gaps) < 5 * INTERVAL, f"a gap of {max(gaps):.2f} s in the stored periods"
    m = re.search(r"stopped after (\d+) periods, (\d+) samples stored", stderr)
    assert m, stderr
    periods, samples = int(m.group(1)), int(m.group(2))
    assert periods == len(writes) and samples == 6 * len(writes), (periods, samples, len(writes))
    # Periods follow the clock: the stored count matches the elapsed time (a few missed at most).
    expected = (last - first) / INTERVAL + 1
    assert expected - 5 <= len(writes) <= expected + 0.5, (len(writes), expected)


def _lock_sqlite(db: Path, hold_s: float) -> subprocess.Popen:
    code = ("import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('BEGIN IMMEDIATE'); print(time.time(), flush=True)\n"
            f"time.sleep({hold_s}); c.execute('COMMIT'); print(time.time(), flush=True)\n")
    return subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True)


def _lock_postgres(url: str, hold_s: float) -> subprocess.Popen:
    code = ("import psycopg, sys, time\n"
            "c = psycopg.connect(sys.argv[1])\n"
            "c.execute('LOCK TABLE probe_samples IN EXCLUSIVE MODE'); print(time.time(), flush=True)\n"
            f"time.sleep({hold_s}); c.commit(); print(time.time(), flush=True)\n")
    return subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE, text=True)


def _probe_through_a_lock(d: Path, home: Path, count, locker, db: str | None = None) -> tuple[tuple[float, float], str]:
    proc = _daemon(d, home, db=db, interval=INTERVAL)
    try:
        wait_until(lambda: count() >= 60, 60, "the probe stores samples")
        lock = locker()
        start = float(lock.stdout.readline())
        end = float(lock.stdout.readline())
        assert lock.wait(30) == 0
        # the flush of what the lock held back, then one of periods started after it: the run spans the lock
        for which in ("the held-back", "a later"):
            stored = count()
            wait_until(lambda: count() > stored, 60, f"{which} flush after the lock", every=0.1, proc=proc)
    finally:
        code, err = _stop(proc)
    assert code == 0 and "Traceback" not in err, err
    return (start, end), err


def test_sqlite_store_locked_by_another_writer_loses_no_period(tmp_path, home):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 8, block=64 * 1024)
    db = home / "ioweather.sqlite"
    window, err = _probe_through_a_lock(d, home, lambda: db.exists() and _sqlite_count(db),
                                        lambda: _lock_sqlite(db, LOCK_S))
    assert window[1] - window[0] >= LOCK_S
    con = sqlite3.connect(db)
    starts: dict[str, list[int]] = {}
    for op, start in con.execute("SELECT op, start_ns FROM probe_samples WHERE status = 'ok' ORDER BY start_ns"):
        starts.setdefault(op, []).append(start)
    assert con.execute("SELECT count(*) FROM probe_samples WHERE status != 'ok'").fetchone()[0] == 0
    con.close()
    _check_every_period_once(starts, window, err)


@pytest.mark.postgres
def test_postgresql_table_locked_by_another_session_loses_no_period(tmp_path, home, pg_url):
    import psycopg

    d = tmp_path / "p"
    init_probe_dir(d, MiB, 8, block=64 * 1024)

    def count() -> int:
        with psycopg.connect(pg_url) as c:
            try:
                return c.execute("SELECT count(*) FROM probe_samples").fetchone()[0]
            except psycopg.errors.UndefinedTable:
                return 0

    window, err = _probe_through_a_lock(d, home, count, lambda: _lock_postgres(pg_url, LOCK_S), db=pg_url)
    starts: dict[str, list[int]] = {}
    with psycopg.connect(pg_url) as c:
        for op, start in c.execute("SELECT op, start_ns FROM probe_samples WHERE status = 'ok' ORDER BY start_ns"):
            starts.setdefault(op, []).append(start)
        assert c.execute("SELECT count(*) FROM probe_samples WHERE status != 'ok'").fetchone()[0] == 0
    _check_every_period_once(starts, window, err)


def test_sigterm_while_the_store_is_locked_stores_everything_once_it_is_free(tmp_path, home):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 8, block=64 * 1024)
    db = home / "ioweather.sqlite"
    proc = _daemon(d, home, interval=INTERVAL)
    try:
        wait_until(lambda: db.exists() and _sqlite_count(db) >= 60, 60, "the probe stores samples")
        lock = _lock_sqlite(db, 8)
        float(lock.stdout.readline())
        time.sleep(2)  # the time under test: periods pile up in the buffer while the store is locked
        t0 = time.monotonic()
        code, err = _stop(proc)  # the final flush waits for the lock (bounded by FINAL_FLUSH_S)
        took = time.monotonic() - t0
        assert lock.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0 and "Traceback" not in err, err
    assert 4 < took < 30, took  # it waited for the lock, not for the busy timeout to run out
    m = re.search(r"stopped after (\d+) periods, (\d+) samples stored", err)
    assert m, err
    con = sqlite3.connect(db)
    per_op = dict(con.execute("SELECT op, count(*) FROM probe_samples GROUP BY op").fetchall())
    con.close()
    assert per_op == {op: int(m.group(1)) for op in probe_store.OPS} and int(m.group(2)) == 6 * int(m.group(1))


def test_full_buffer_drops_the_oldest_counts_and_says_so(tmp_path):
    """A store locked longer than the buffer lasts: the oldest waiting samples go, and exactly those."""
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 4, block=64 * 1024)
    db = tmp_path / "s.sqlite"
    store = Store(f"sqlite:///{db}", busy_timeout_s=0.3)
    run_id = probe_store.start_run(store, probe_store.RunInfo("t", str(d), 0.05, 65536, MiB, 4, 3901, False,
                                                              False, 1, 5.0, False))
    logs: list[str] = []
    opts = ProbeOptions(interval_s=0.05, block=64 * 1024, flush_s=0.1, buffer_rows=60, seed=1)
    p = ProbeDaemon(d, opts, sink=lambda rows: probe_store.insert_samples(store, [(run_id, *r) for r in rows]),
              log=logs.append)
    t = threading.Thread(target=p.run, kwargs={"install_signals": False})
    t.start()
    try:
        wait_until(lambda: _sqlite_count(db) >= 60, 60, "60 samples stored")
        lock = _lock_sqlite(db, 4)  # 4 s at 20 periods/s: 480 samples against a buffer of 60
        float(lock.stdout.readline())
        assert lock.wait(30) == 0
        held = _sqlite_count(db)
        wait_until(lambda: _sqlite_count(db) > held, 60, "a flush after the lock")
    finally:
        p.stop()
        t.join(60)
    assert not t.is_alive()
    stored = _sqlite_count(db)
    assert stored == p.samples and p.dropped_samples > 0
    assert stored + p.dropped_samples == 6 * p.periods  # every sample either stored or counted as dropped
    assert any("buffer full (60 samples waiting" in m for m in logs), logs
    assert any(f"{p.dropped_samples} samples were dropped meanwhile" in m for m in logs), logs
    # The dropped ones are the oldest of the outage: one hole of exactly that many periods, then contiguous.
    con = sqlite3.connect(db)
    writes = [r[0] for r in con.execute("SELECT start_ns FROM probe_samples WHERE op = 'data_write' ORDER BY 1")]
    con.close()
    gaps = sorted(((b - a) / 1e9 for a, b in zip(writes, writes[1:])), reverse=True)
    assert gaps[0] > 2 and gaps[1] < 5 * 0.05, gaps[:3]
    assert round(gaps[0] / 0.05) - 1 == pytest.approx(p.dropped_samples / 6 + p.missed_periods, abs=p.missed_periods + 2)
