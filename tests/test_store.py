"""The store on real SQLite, PostgreSQL and MariaDB: schema versions, migrations, locking, errors."""

import sqlite3
import subprocess
import sys
import threading
import time

import pytest
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.errors import SchemaTooNew, StoreError
from ioweather.store import Component, open_store
from ioweather.store import probe as probe_store
from ioweather.store.db import Store
from ioweather.store.migrations import create_tables
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)


def _info(target="t1"):
    return probe_store.RunInfo(target=target, directory="/x", interval_s=1, block_bytes=1 << 20, file_bytes=1 << 30,
                               pool_files=10, small_bytes=3901, direct=False, fsync=False, seed=7, timeout_s=60,
                               file_exceeds_memory=False)


def _roundtrip(store: Store):
    run = probe_store.start_run(store, _info())
    rows = [(run, op, 10**18 + i * 10**9, 1000 + i, 1 << 20, "ok" if i % 7 else "error", 0 if i % 7 else 5)
            for i in range(50) for op in probe_store.OPS]
    probe_store.insert_samples(store, rows)
    s = probe_store.read_samples(store, "t1")
    assert len(s["op"]) == 300
    assert list(probe_store.OPS[i] for i in sorted(set(s["op"].tolist()))) == list(probe_store.OPS)
    assert (s["status"] == 1).sum() == 6 * 8
    win = probe_store.read_samples(store, "t1", since_ns=10**18 + 10 * 10**9, until_ns=10**18 + 20 * 10**9)
    assert len(win["op"]) == 60 and win["start_ns"].min() == 10**18 + 10 * 10**9
    assert probe_store.targets(store) == ["t1"]
    assert probe_store.read_samples(store, "nope")["op"].size == 0


def test_sqlite_default_is_wal_under_home(tmp_path):
    store = open_store(Settings.resolve(tmp_path / "h"))
    _roundtrip(store)
    path = tmp_path / "h" / "ioweather.sqlite"
    assert path.exists()
    assert (tmp_path / "h").stat().st_mode & 0o777 == 0o700
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.versions() == {"probe": probe_store.COMPONENT.version}


@pytest.mark.postgres
def test_postgresql_same_schema(pg_url):
    store = Store(pg_url)
    _roundtrip(store)
    assert store.versions()["probe"] == probe_store.COMPONENT.version
    store.dispose()


@pytest.mark.mariadb
def test_mariadb_same_schema(mariadb_url):
    store = Store(mariadb_url)
    _roundtrip(store)
    store.dispose()


def _demo_component(version: int) -> Component:
    """A component whose v2 adds a column: the shape every later schema change takes."""
    md1 = sa.MetaData()
    t1 = sa.Table("demo", md1, sa.Column("id", sa.Integer, primary_key=True), sa.Column("name", sa.String(20)))

    def add_unit(conn):
        conn.execute(sa.text("ALTER TABLE demo ADD COLUMN unit VARCHAR(10) DEFAULT 's'"))

    return Component("demo", [create_tables(t1), add_unit][:version])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_upgrades_in_place_and_refuses_newer(tmp_path, backend, request):
    url = f"sqlite:///{tmp_path}/m.sqlite" if backend == "sqlite" else request.getfixturevalue("pg_url")
    old = Store(url)
    old.require(_demo_component(1))
    with old.begin() as conn:
        conn.execute(sa.text("INSERT INTO demo (id, name) VALUES (1, 'kept')"))
    old.dispose()

    new = Store(url)
    new.require(_demo_component(2))
    with new.connect() as conn:
        assert conn.execute(sa.text("SELECT name, unit FROM demo")).all() == [("kept", "s")]
    assert new.versions()["demo"] == 2
    new.dispose()

    older_code = Store(url)
    with pytest.raises(SchemaTooNew, match="newer than this ioweather"):
        older_code.require(_demo_component(1))
    older_code.dispose()


def test_cli_reports_newer_schema_in_one_line(home, cli):
    store = open_store(Settings.resolve(home))
    store.require(probe_store.COMPONENT)
    with store.begin() as conn:
        conn.execute(sa.text("UPDATE schema_versions SET version = 99 WHERE component = 'probe'"))
    store.dispose()
    r = cli("probe", "stats", home=home)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert "probe schema v99, newer than this ioweather" in r.stderr


def test_writer_waits_for_a_lock_held_for_seconds(tmp_path):
    url = f"sqlite:///{tmp_path}/l.sqlite"
    store = Store(url)
    run = probe_store.start_run(store, _info())
    holder = sqlite3.connect(tmp_path / "l.sqlite", isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(1.5, lambda: holder.execute("COMMIT")).start()
    t0 = time.monotonic()
    probe_store.insert_samples(store, [(run, "md_stat", 1, 1, 0, "ok", 0)])
    assert time.monotonic() - t0 >= 1.0  # it waited for the other writer instead of failing
    assert len(probe_store.read_samples(store, "t1")["op"]) == 1
    holder.close()


def test_lock_held_too_long_is_a_clear_error(tmp_path):
    url = f"sqlite:///{tmp_path}/l.sqlite"
    store = Store(url, busy_timeout_s=0.5)
    run = probe_store.start_run(store, _info())
    holder = sqlite3.connect(tmp_path / "l.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match="locked by another writer"):
        probe_store.insert_samples(store, [(run, "md_stat", 1, 1, 0, "ok", 0)])
    holder.execute("ROLLBACK")
    probe_store.insert_samples(store, [(run, "md_stat", 1, 1, 0, "ok", 0)])  # nothing was corrupted


def test_reader_not_blocked_by_writer(tmp_path):
    """WAL: a CLI reading while the daemon holds a write transaction gets the committed data at once."""
    store = Store(f"sqlite:///{tmp_path}/r.sqlite")
    run = probe_store.start_run(store, _info())
    probe_store.insert_samples(store, [(run, "md_stat", 1, 1, 0, "ok", 0)])
    holder = sqlite3.connect(tmp_path / "r.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO probe_samples VALUES (1, 'md_stat', 2, 1, 0, 'ok', 0)")
    t0 = time.monotonic()
    assert len(probe_store.read_samples(Store(f"sqlite:///{tmp_path}/r.sqlite"), "t1")["op"]) == 1
    assert time.monotonic() - t0 < 5
    holder.execute("COMMIT")


@pytest.mark.parametrize("url,needle", [
    ("postgresql://postgres:wrongpw@127.0.0.1:1/nodb", "cannot connect to database postgresql+psycopg://postgres:***@127.0.0.1:1/nodb"),
    ("postgresql://nobody@no-such-host.invalid/x", "cannot connect to database"),
    ("oracle+nodriver://x/y", "database URL"),
])
def test_bad_db_urls_are_one_line_errors(home, cli, url, needle):
    r = cli("--db", url, "probe", "stats", home=home, timeout=60)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert "wrongpw" not in r.stderr  # never print a password
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr


@pytest.mark.postgres
def test_wrong_password_on_real_server(pg_url, home, cli):
    """The local server trusts local users; a role that does not exist is refused by the real server."""
    bad = pg_url.replace("postgresql://postgres@", "postgresql://no_such_role:secret@")
    r = cli("--db", bad, "probe", "stats", home=home)
    assert r.returncode == 2 and "cannot connect to database" in r.stderr and "secret" not in r.stderr


def test_not_an_sqlite_file_and_unwritable_home(tmp_path, cli):
    h = tmp_path / "h"
    h.mkdir()
    (h / "ioweather.sqlite").write_bytes(b"this is not a database at all")
    r = cli("probe", "stats", home=h)
    assert r.returncode == 2 and "is not an SQLite database" in r.stderr
    f = tmp_path / "file"
    f.write_text("x")
    r = cli("probe", "stats", home=f / "sub")
    assert r.returncode == 2 and "cannot create store directory" in r.stderr


def test_empty_store_says_so(home, cli):
    r = cli("probe", "stats", home=home)
    assert r.returncode == 0 and "no probe samples" in r.stderr
    r = cli("probe", "stats", "--json", home=home)
    assert r.returncode == 0 and r.stdout.strip() == "[]"
    r = cli("slowdown", "--target", "nope", home=home)
    assert r.returncode == 2 and "no probe samples for target 'nope'" in r.stderr


def test_archive_moves_completed_days_and_reads_identically(tmp_path):
    from ioweather.store.probe_archive import archive_completed_days

    settings = Settings.resolve(tmp_path / "h")
    store = open_store(settings)
    run = probe_store.start_run(store, _info())
    day = 86_400 * 10**9
    now = 1_763_800_000 * 10**9
    today0 = now // day * day
    starts = [today0 - 3 * day + i * 3_600 * 10**9 for i in range(24 * 3 + 5)]  # 3 full days + 5 h of today
    rows = [(run, op, s + k, 1000 + i * 7 + k, 4096, "ok" if i % 11 else "timeout", 0)
            for i, s in enumerate(starts) for k, op in enumerate(probe_store.OPS)]
    probe_store.insert_samples(store, rows)
    before = probe_store.read_samples(store, "t1")
    window_before = probe_store.read_samples(store, "t1", since_ns=today0 - 2 * day + 5, until_ns=today0 + 3600 * 10**9)

    moved = archive_completed_days(store, keep_days=1, now_ns=now)
    assert moved == 2 * 24 * 6  # the two days that ended before yesterday; yesterday and today stay
    files = sorted((settings.parquet_dir / "probe" / f"run={run}").glob("*.parquet"))
    assert len(files) == 2
    with store.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM probe_samples")).scalar() == len(rows) - moved
    after = probe_store.read_samples(store, "t1")
    for k in before:
        assert (before[k] == after[k]).all(), k
    window_after = probe_store.read_samples(store, "t1", since_ns=today0 - 2 * day + 5, until_ns=today0 + 3600 * 10**9)
    for k in window_before:
        assert (window_before[k] == window_after[k]).all(), k
    assert archive_completed_days(store, keep_days=1, now_ns=now) == 0  # idempotent


def test_archive_cli_refuses_server_databases(home, cli, pg_url):
    r = cli("--db", pg_url, "probe", "archive", home=home)
    assert r.returncode == 2 and "embedded SQLite store only" in r.stderr


def test_sample_range_spans_archived_days(tmp_path):
    from ioweather.store.probe_aggregates import sample_range
    from ioweather.store.probe_archive import archive_completed_days

    store = open_store(Settings.resolve(tmp_path / "h"))
    run = probe_store.start_run(store, _info())
    day = 86_400 * 10**9
    now = 1_763_800_000 * 10**9
    first, last = now - 4 * day + 123, now - 10
    probe_store.insert_samples(store, [(run, "md_stat", first, 5, 0, "ok", 0), (run, "md_stat", last, 5, 0, "ok", 0)])
    assert sample_range(store, "t1") == (first, last)
    assert archive_completed_days(store, now_ns=now) == 1
    assert sample_range(store, "t1") == (first, last)


def test_many_processes_start_on_a_fresh_store_at_once(tmp_path):
    """Daemons started together on a new SQLite file: WAL switch and table creation must not race."""
    script = (
        "import sys\n"
        "from ioweather.config import Settings\n"
        "from ioweather.store import open_store, probe as ps\n"
        "store = open_store(Settings.resolve(sys.argv[1]))\n"
        "info = ps.RunInfo(target=sys.argv[2], directory='/x', interval_s=1, block_bytes=1, file_bytes=1,"
        " pool_files=1, small_bytes=1, direct=False, fsync=False, seed=0, timeout_s=1, file_exceeds_memory=False)\n"
        "r = ps.start_run(store, info)\n"
        "ps.insert_samples(store, [(r, 'md_stat', i, 1, 0, 'ok', 0) for i in range(500)])\n")
    home = tmp_path / "h"
    procs = [subprocess.Popen([sys.executable, "-c", script, str(home), f"t{k}"], stderr=subprocess.PIPE, text=True)
             for k in range(6)]
    errors = [p.stderr.read() for p in procs if p.wait(timeout=120) != 0]
    assert not errors, errors
    con = sqlite3.connect(home / "ioweather.sqlite")
    assert con.execute("SELECT count(*) FROM probe_samples").fetchone()[0] == 6 * 500
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
