"""`ioweather store check [--repair] [--json]` on a real store: healthy, then with each problem planted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.store import telemetry_layout as layout
from ioweather.store.probe_archive import archive_completed_days
from ioweather.store.telemetry_imports import ImportRun
from ioweather.store.telemetry_rollup import rollup_path

DAY = 86_400 * 10**9
NOW = 1_763_800_000 * 10**9


def make_store(home, url=None) -> Settings:
    """Probe samples (two days archived to Parquet, the rest in the database) and two imports of telemetry."""
    settings = Settings(home=home, db_url=url)
    store = open_store(settings)
    run = probe_store.start_run(store, probe_store.RunInfo(
        target="t1", directory="/x", interval_s=1, block_bytes=1 << 20, file_bytes=1 << 30, pool_files=10,
        small_bytes=3901, direct=False, fsync=False, seed=7, timeout_s=60, file_exceeds_memory=False))
    today0 = NOW // DAY * DAY
    starts = [today0 - 3 * DAY + i * 60 * 10**9 for i in range(3 * 1440)]
    probe_store.insert_samples(store, [(run, op, s + k, 1000 + k, 4096, "ok", 0)
                                       for s in starts for k, op in enumerate(probe_store.OPS)])
    if store.is_sqlite:
        assert archive_completed_days(store, keep_days=1, now_ns=NOW) == 2 * 1440 * 6
        raw = store.engine.raw_connection()  # everything into the main file, no free pages: damage hits data
        raw.driver_connection.execute("VACUUM")
        assert raw.driver_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
        raw.close()
    store.dispose()
    t = today0 - 3 * DAY + np.arange(3 * 288, dtype=np.int64) * 300 * 10**9
    for writer in ("csv-aaaa", "csv-bbbb"):
        r = ImportRun(settings, "scratch", writer)
        r.write(pd.DataFrame({"time_ns": t, "target": writer, "metric": "read_bytes", "value": 1.0, "interval_s": 300.0}))
        r.commit()
    return settings


def check(home, *args, url=None):
    p = run_cli("store", "check", "--json", *args, home=home, env={"IOWEATHER_DB": url} if url else None)
    assert "Traceback" not in p.stderr, p.stderr
    return p.returncode, json.loads(p.stdout)


def problems(report) -> list[tuple]:
    return sorted((p["area"], os.path.basename(p["path"] or ""), p["repairable"], p["repaired"]) for p in report["problems"])


@pytest.fixture
def store_home(tmp_path):
    home = tmp_path / "home"
    make_store(home)
    return home


def test_a_healthy_store_passes(store_home):
    code, r = check(store_home)
    assert code == 0 and r["ok"] and r["problems"] == []
    assert r["sqlite"]["integrity"] == "ok" and r["sqlite"]["wal_checkpoint"]["busy"] is False
    assert r["sqlite"]["auto_vacuum"] == "incremental"  # store/db.py turns it on in every new store
    assert {v["component"]: v["version"] for v in r["schema_versions"]} == {"probe": probe_store.COMPONENT.version}
    assert r["files"] == {"probe_archive": 2, "jobs": 0, "telemetry": 6}
    p = run_cli("store", "check", home=store_home)
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == "ok"


def test_a_store_from_before_auto_vacuum_is_told_how_to_convert(store_home):
    """A store created before incremental auto-vacuum (made here by turning it off) is healthy, with a
    note; the command docs/probe-pieces.md gives converts it and keeps every row."""
    import sqlite3

    db = Settings(home=store_home).sqlite_path
    with sqlite3.connect(db, isolation_level=None) as c:
        c.execute("PRAGMA auto_vacuum=NONE")
        c.execute("VACUUM")
        rows = c.execute("SELECT count(*), sum(duration_ns) FROM probe_samples").fetchone()
    c.close()
    code, r = check(store_home)
    assert code == 0 and r["ok"] and r["sqlite"]["auto_vacuum"] == "none"
    p = run_cli("store", "check", home=store_home)
    assert p.returncode == 0 and "auto-vacuum none" in p.stdout and "docs/probe-pieces.md" in p.stdout
    doc = (__import__("pathlib").Path(__file__).parents[1] / "docs" / "probe-pieces.md").read_text()
    assert "'PRAGMA auto_vacuum=INCREMENTAL; VACUUM;'" in doc
    with sqlite3.connect(db, isolation_level=None) as c:
        c.executescript("PRAGMA auto_vacuum=INCREMENTAL; VACUUM;")
        assert c.execute("SELECT count(*), sum(duration_ns) FROM probe_samples").fetchone() == rows
    c.close()
    code, r = check(store_home)
    assert code == 0 and r["sqlite"]["auto_vacuum"] == "incremental" and r["sqlite"]["integrity"] == "ok"


def test_each_planted_problem_is_one_line_and_repair_fixes_only_the_lossless(store_home):
    s = Settings(home=store_home)
    probe_files = sorted((s.parquet_dir / "probe").rglob("*.parquet"))
    removed, corrupted = probe_files
    removed.unlink()
    with open(corrupted, "r+b") as f:  # a Parquet file, not the database: open() is fine here
        f.truncate(os.path.getsize(corrupted) // 2)
    base = layout.fs_dir(s, "scratch")
    data = layout.data_files(base)
    stray = data[0].parent / ".csv-aaaa-1234abcd-000000000000.parquet.tmp"
    stray.write_bytes(b"half a file")
    os.utime(stray, (time.time() - 7200,) * 2)  # long stopped, not a write under way
    dup = data[1].parent / "copied-by-hand.parquet"
    shutil.copyfile(data[1], dup)
    rollup_gone = rollup_path(data[2])
    rollup_gone.unlink()
    code, r = check(store_home)
    assert code == 1 and not r["ok"]
    found = problems(r)
    assert found == sorted([
        ("probe archive", removed.name, False, False),
        ("probe archive", corrupted.name, False, False),
        ("telemetry scratch", stray.name, True, False),                # a killed import's temporary file
        ("telemetry scratch", dup.name, False, False),                 # a duplicate: counted twice, kept
        ("telemetry scratch", "copied-by-hand.parquet", True, False),  # ... and its rollup is missing
        ("telemetry scratch", rollup_gone.name, True, False),
    ]), found
    lines = run_cli("store", "check", home=store_home).stdout.splitlines()
    for p in r["problems"]:  # the human form: one line per problem, with its reason
        assert sum(1 for ln in lines if p["path"] in ln and p["problem"] in ln) == 1, (p, lines)
    assert "missing" in next(p["problem"] for p in r["problems"] if p["path"] == str(removed))
    assert "unreadable Parquet" in next(p["problem"] for p in r["problems"] if p["path"] == str(corrupted))
    assert "duplicate of" in next(p["problem"] for p in r["problems"] if p["path"] == str(dup))

    code, r = check(store_home, "--repair")
    assert code == 1 and r["repaired"] == 3
    assert [p for p in problems(r) if not p[3]] == sorted([("probe archive", removed.name, False, False),
                                                           ("probe archive", corrupted.name, False, False),
                                                           ("telemetry scratch", dup.name, False, False)])
    assert not stray.exists() and rollup_gone.exists() and dup.exists() and corrupted.exists()
    code, r = check(store_home)
    assert code == 1 and [p[:2] for p in problems(r)] == sorted([("probe archive", removed.name),
                                                                  ("probe archive", corrupted.name),
                                                                  ("telemetry scratch", dup.name)])


def test_garbage_in_the_middle_of_the_database_is_reported(store_home):
    s = Settings(home=store_home)
    size = os.path.getsize(s.sqlite_path)
    # Written by a process that holds no SQLite connection (ours would lose its POSIX locks).
    subprocess.run([sys.executable, "-c", "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); "
                    "os.pwrite(fd, os.urandom(3 * 4096), int(sys.argv[2])); os.close(fd)",
                    str(s.sqlite_path), str(size // 2 // 4096 * 4096)], check=True)
    code, r = check(store_home)
    assert code == 1 and r["sqlite"]["integrity"] == "damaged"
    assert r["problems"] and all(p["area"] in ("sqlite", "database") and not p["repairable"] for p in r["problems"])
    code, r = check(store_home, "--repair")
    assert code == 1 and r["repaired"] == 0


def test_leftovers_of_a_killed_import_are_reported_and_repaired(store_home):
    s = Settings(home=store_home)
    base = layout.fs_dir(s, "scratch")
    before = {p.name for p in layout.data_files(base)}
    r = ImportRun(s, "scratch", "csv-aaaa")  # a re-import that dies before its switch
    r.write(pd.DataFrame({"time_ns": [NOW - 2 * DAY], "target": "x", "metric": "read_bytes", "value": 5.0,
                          "interval_s": 300.0}))
    r.finish()
    os.close(r._lock)  # as the kernel does for a killed process
    r._lock = None
    code, rep = check(store_home)
    assert code == 1 and [(p["area"], p["repairable"]) for p in rep["problems"]] == [("telemetry scratch", True)]
    assert "interrupted import" in rep["problems"][0]["problem"]
    code, rep = check(store_home, "--repair")
    assert code == 0 and rep["repaired"] == 1
    assert {p.name for p in base.glob("date=*/*.parquet")} == before == {p.name for p in layout.data_files(base)}


def test_a_postgresql_store_is_checked_without_the_sqlite_checks(tmp_path, pg_url):
    home = tmp_path / "home"
    make_store(home, pg_url)
    code, r = check(home, url=pg_url)
    assert code == 0 and r["sqlite"] is None and r["files"]["telemetry"] == 6
    assert {v["component"] for v in r["schema_versions"]} == {"probe"}
    with sa.create_engine(pg_url.replace("postgresql://", "postgresql+psycopg://")).begin() as conn:
        conn.exec_driver_sql("UPDATE schema_versions SET version = 99 WHERE component = 'probe'")
    code, r = check(home, url=pg_url)
    assert code == 1 and [p["area"] for p in r["problems"]] == ["schema"]
    assert "newer than this ioweather" in r["problems"][0]["problem"]
