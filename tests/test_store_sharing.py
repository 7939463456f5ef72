"""Several processes share one SQLite store: nobody may drop another's locks or its write-ahead log.

The bug these tests hold fixed: `watch` (probe thread + dashboard, two stores in one process)
plus any second command made the watch process write into a deleted `ioweather.sqlite-wal`,
because the store opened and closed the database file with Python's open() while the process
held SQLite connections to it; the close dropped every POSIX lock the process had on the file.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ioweather.errors import StoreDamaged, StoreError
from ioweather.store.db import Store
from ports import free_port

pytestmark = pytest.mark.slow


def _count(db: Path, sql: str = "SELECT count(*) FROM probe_samples") -> int:
    # A fresh process's view, as another ioweather command would have.
    out = subprocess.run([sys.executable, "-c",
                          f"import sqlite3; print(sqlite3.connect({str(db)!r}).execute({sql!r}).fetchone()[0])"],
                         capture_output=True, text=True, timeout=60, check=True)
    return int(out.stdout)


def _deleted_store_files(pid: int, home: Path) -> list[str]:
    fds = Path(f"/proc/{pid}/fd")
    out = []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(home)) and target.endswith("(deleted)"):
            out.append(target)
    return out


def test_one_engine_per_database_per_process(tmp_path):
    url = f"sqlite:///{tmp_path}/s.sqlite"
    a, b = Store(url), Store(url)
    try:
        assert a.engine is b.engine
    finally:
        a.dispose()
        b.dispose()


def test_python_open_of_live_database_files_is_refused(tmp_path):
    db = tmp_path / "s.sqlite"
    store = Store(f"sqlite:///{db}")
    store.versions()  # creates the file and its WAL
    for name in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        with pytest.raises(StoreError, match="refusing to open"):
            open(name, "rb")
        with pytest.raises(StoreError, match="refusing to open"):
            os.open(name, os.O_RDONLY)
    # The probe still sees its own writes: the guard refused before any descriptor existed.
    with store.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.dispose()
    with open(db, "rb") as f:  # no live engine: the file is just a file again
        assert f.read(16) == b"SQLite format 3\x00"
    # a read-only handle (`slowdown --check`) guards the same files while it lives, and frees them too
    ro = Store(f"sqlite:///{db}", read_only=True)
    with ro.connect() as conn:  # no -wal: opened immutable (no -wal/-shm made), whose journal_mode says 'delete'
        assert conn.exec_driver_sql("PRAGMA page_count").scalar() > 0
    with pytest.raises(StoreError, match="refusing to open"):
        open(db, "rb")
    ro.dispose()
    with open(db, "rb") as f:
        head = f.read(20)
    assert head[:16] == b"SQLite format 3\x00" and head[18:20] == b"\x02\x02"  # still WAL (read/write versions 2)
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()


def test_watch_with_other_commands_keeps_its_log_and_every_table(tmp_path, cli):
    """The reproduction of the issue: `make watch`, then `probe stats` and `jobs summary` beside it, then stop."""
    home = tmp_path / "home"
    db = home / "ioweather.sqlite"
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    watch = subprocess.Popen([sys.executable, "-m", "ioweather", "watch", str(tmp_path / "probe"), "--port",
                              str(free_port()), "--file-size", "4MiB", "--interval", "0.2s"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not db.exists() or _count(db, "SELECT count(*) FROM sqlite_master WHERE name='probe_samples'") == 0 \
                or _count(db) == 0:
            assert watch.poll() is None, watch.stdout.read()
            assert time.monotonic() < deadline, "watch stored no sample in 60 s"
            time.sleep(0.5)
        for args in (("probe", "stats", "--interval", "1m"), ("slowdown",), ("jobs", "summary"),
                     ("fsstats", str(tmp_path / "probe"), "--label", "p")):
            r = cli(*args, home=home)
            assert r.returncode in (0, 1), r.stderr
        tables_seen = {r for r in _tables(db)}
        assert {"darshan_jobs", "probe_samples"} <= tables_seen
        seen = later = _count(db)
        deadline = time.monotonic() + 20  # the probe stores every 5 s; another process must see the new rows
        while later <= seen and time.monotonic() < deadline:
            time.sleep(1)
            later = _count(db)
        assert later > seen, f"no new sample visible to other processes in 20 s ({seen} -> {later})"
        assert _deleted_store_files(watch.pid, home) == []
    finally:
        watch.send_signal(signal.SIGINT)
        try:
            watch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait()
    # After the stop, nothing another command created was erased and every sample seen is still there.
    assert tables_seen <= set(_tables(db))
    assert _count(db) >= later
    ok = subprocess.run([sys.executable, "-c", f"import sqlite3; print(sqlite3.connect({str(db)!r})"
                         ".execute('PRAGMA integrity_check').fetchone()[0])"], capture_output=True, text=True)
    assert ok.stdout.strip() == "ok"


def _tables(db: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", f"import sqlite3; print('\\n'.join(r[0] for r in sqlite3.connect("
                          f"{str(db)!r}).execute(\"SELECT name FROM sqlite_master WHERE type='table'\")))"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split()


def _garble(path: Path, offset: int, length: int = 4096) -> None:
    """Overwrite bytes in the middle of a file from another process (this one may hold the store open)."""
    subprocess.run([sys.executable, "-c", f"import os; fd = os.open({str(path)!r}, os.O_WRONLY); "
                    f"os.pwrite(fd, b'\\xde\\xad' * {length // 2}, {offset}); os.close(fd)"], check=True)


def test_damaged_database_is_one_line_naming_store_check(tmp_path, cli):
    home = tmp_path / "home"
    db = home / "ioweather.sqlite"
    cli("probe", "init", str(tmp_path / "probe"), "--file-size", "4MiB", "--pool", "10", home=home, check=True)
    cli("probe", "run", str(tmp_path / "probe"), "--duration", "2s", "--interval", "0.2s", home=home, check=True)
    cli("probe", "stats", home=home, check=True)
    size = db.stat().st_size
    _garble(db, size // 2, min(8192, size // 2))
    _garble(db, 0, 100)  # the header too: SQLite must say the file is no database
    for args in (("probe", "stats"), ("slowdown",), ("jobs", "summary")):
        r = cli(*args, home=home)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
        assert "ioweather store check" in r.stderr, r.stderr


def test_damaged_store_error_class(tmp_path):
    db = tmp_path / "s.sqlite"
    db.write_bytes(b"not a database, just text " * 200)
    store = Store(f"sqlite:///{db}")
    try:
        with pytest.raises(StoreDamaged, match="not an SQLite database"):
            store.versions()
    finally:
        store.dispose()


@pytest.mark.postgres
def test_commands_creating_the_schema_at_once_on_postgresql(pg_url, tmp_path):
    """Four processes open a fresh PostgreSQL store at the same moment: each creates or finds every table."""
    code = ("import sys; from ioweather.store.db import Store; from ioweather.store import jobs, probe; "
            "s = Store(sys.argv[1]); s.require(probe.COMPONENT); s.require(jobs.COMPONENT); print('ok')")
    procs = [subprocess.Popen([sys.executable, "-c", code, pg_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert [o[0].strip() for o in outs] == ["ok"] * 4
