"""`jobs ingest` when processes share a store, are killed, or name the same logs differently.

Real processes throughout: two ingests at once into one store, kill -9 / SIGTERM of an ingest
with workers (its children found by scanning /proc), the same logs by relative and absolute path.
Every check counts against an independent reference: a direct SQL query and the Parquet parts
read with pyarrow (what a DuckDB query over `parquet/jobs/*.parquet` sees).
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from darshan_support import need_darshan_logs  # noqa: F401 (autouse fixture)
from test_jobs_ingest import make_archive

from ioweather.config import Settings


def _env(home, db=None) -> dict:
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    if db:
        env["IOWEATHER_DB"] = db
    return env


def _start(home, *args, db=None, cwd=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ioweather", "jobs", "ingest", *args], env=_env(home, db), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def store_state(home, db=None) -> dict:
    """What the store holds, read directly: SQL rows, their distinct hashes, and the Parquet parts' rows."""
    settings = Settings(home=Path(home), db_url=db)
    engine = sa.create_engine(settings.url())
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT log_hash, files, path FROM darshan_jobs")).all()
            distinct = conn.execute(sa.text("SELECT count(DISTINCT log_hash) FROM darshan_jobs")).scalar_one()
    finally:
        engine.dispose()
    parts = sorted(glob.glob(str(settings.parquet_dir / "jobs" / "*.parquet")))
    table = pa.concat_tables([pq.read_table(p) for p in parts]) if parts else None
    keys = table.group_by(["log_hash", "module", "record_id"]).aggregate([]).num_rows if table else 0
    return {"sql_rows": len(rows), "sql_distinct": distinct, "with_files": {h for h, f, _ in rows if f},
            "all_hashes": {h for h, _, _ in rows}, "paths": [p for _, _, p in rows],
            "parquet_rows": table.num_rows if table else 0, "parquet_keys": keys,
            "parquet_hashes": set(table.column("log_hash").to_pylist()) if table else set()}


def assert_consistent(state: dict, expected_jobs: int | None = None) -> None:
    """One SQL row per log, and exactly one Parquet row per (log, module, record) of exactly the stored logs."""
    assert state["sql_rows"] == state["sql_distinct"]
    if expected_jobs is not None:
        assert state["sql_rows"] == expected_jobs
    assert state["parquet_rows"] == state["parquet_keys"], "a file row is stored twice"
    assert state["parquet_hashes"] == state["with_files"], "Parquet rows of unstored logs, or stored logs without rows"


# --- item 4: two ingests into one store at once ------------------------------------------------------

def _two_at_once(home, archive, db=None) -> list[dict]:
    procs = [_start(home, str(archive), "--workers", "1", "--json", db=db) for _ in range(2)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    return outs


def _check_two_at_once(outs, state, good):
    assert_consistent(state, good)
    # every log was stored by exactly one of them; the other says it found it already there
    assert outs[0]["ingested"] + outs[1]["ingested"] == good
    for o in outs:
        assert o["ingested"] + o["duplicates"] + o["skipped"] == good, o


def test_two_ingests_at_once_store_each_log_once(home, tmp_path):
    good, _ = make_archive(tmp_path / "a", n_copies=400, broken=False)
    outs = _two_at_once(home, tmp_path / "a")
    _check_two_at_once(outs, store_state(home), good)


@pytest.mark.postgres
def test_two_ingests_at_once_on_postgresql(home, tmp_path, pg_url):
    good, _ = make_archive(tmp_path / "a", n_copies=200, broken=False)
    # The schema first: two processes creating it at once on PostgreSQL collide in CREATE TABLE
    # (store/db.py's `require` serializes that on SQLite only), a separate problem from this one.
    from ioweather.store import jobs as js
    from ioweather.store import open_store

    open_store(Settings(home=Path(home), db_url=pg_url)).require(js.COMPONENT)
    outs = _two_at_once(home, tmp_path / "a", db=pg_url)
    _check_two_at_once(outs, store_state(home, pg_url), good)


def test_the_lock_file_is_not_followed_through_a_symlink(cli, home, tmp_path):
    """The lock is our own file in the Parquet directory, never reached through a link someone planted."""
    make_archive(tmp_path / "a", broken=False)
    jobs_dir = Settings(home=Path(home)).parquet_dir / "jobs"
    jobs_dir.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (jobs_dir / ".ingest.lock").symlink_to(victim)
    r = cli("jobs", "ingest", str(tmp_path / "a"), "--workers", "1", home=home)
    assert r.returncode == 2 and "symlink" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert victim.read_text() == "keep me"


# --- item 5: workers die with their parent; SIGTERM cleans up like Ctrl-C --------------------------

def descendants(pid: int) -> set[int]:
    """Every process below `pid`, from /proc/<pid>/task/*/children."""
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for f in glob.glob(f"/proc/{p}/task/*/children"):
            try:
                kids = {int(k) for k in Path(f).read_text().split()}
            except OSError:
                continue
            todo += list(kids - out)
            out |= kids
    return out


def alive(pid: int) -> bool:
    """Running, i.e. neither gone nor a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _jobs_in_store(home) -> int:
    try:
        return store_state(home)["sql_rows"]
    except Exception:  # the database is not created yet
        return 0


def _start_busy_ingest(home, tmp_path, n_copies=1500):
    good, _ = make_archive(tmp_path / "k", n_copies=n_copies, broken=False)
    proc = _start(home, str(tmp_path / "k"), "--workers", "2", "--json")
    deadline = time.time() + 120
    kids: set[int] = set()
    while time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
        kids = descendants(proc.pid)
        if len(kids) >= 2 and _jobs_in_store(home) > 0:
            break
    assert proc.poll() is None and len(kids) >= 2, "the ingest ended before it could be killed: give it more logs"
    return proc, kids, good


def _wait_gone(pids, timeout=5.0) -> set[int]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        left = {p for p in pids if alive(p)}
        if not left:
            return left
        time.sleep(0.1)
    return {p for p in pids if alive(p)}


def test_kill_9_of_ingest_takes_its_workers_along(home, tmp_path):
    # killed at its first commit (256 logs or 2 s); the re-run below reads the rest: 600 copies, not 1,500
    proc, kids, good = _start_busy_ingest(home, tmp_path, n_copies=600)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)  # not communicate(): orphaned workers would hold its pipes open
        assert _wait_gone(kids) == set(), "workers outlived their killed parent"
        proc.communicate(timeout=30)
    finally:
        for k in kids:
            if alive(k):
                os.kill(k, signal.SIGKILL)
    # what was committed stays; a re-run completes the store exactly
    r = subprocess.run([sys.executable, "-m", "ioweather", "jobs", "ingest", str(tmp_path / "k"), "--workers", "2",
                        "--json"], env=_env(home), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert_consistent(store_state(home), good)


def test_sigterm_of_ingest_stops_cleanly(home, tmp_path):
    proc, kids, good = _start_busy_ingest(home, tmp_path)
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        assert _wait_gone(kids) == set(), "workers outlived their terminated parent"
        out, err = proc.communicate(timeout=30)
    finally:
        for k in kids:
            if alive(k):
                os.kill(k, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert out == "" and len(err.strip().splitlines()) == 1 and "SIGTERM" in err and "Traceback" not in err, err
    state = store_state(home)
    assert 0 < state["sql_rows"] < good
    assert_consistent(state)  # nothing half-written: no Parquet rows without their job rows
    assert f"{state['sql_rows']} logs stored" in err


# --- item 7: stable identities for logs ------------------------------------------------------------

def test_relative_then_absolute_path_reads_nothing_again(cli, home, tmp_path):
    good, bad = make_archive(tmp_path / "a", n_copies=10)
    first = _start(home, "a", "--workers", "1", "--json", cwd=tmp_path)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert json.loads(out)["ingested"] == good
    state = store_state(home)
    assert state["paths"] and all(os.path.isabs(p) and os.path.normpath(p) == p for p in state["paths"])
    failed = json.loads(cli("jobs", "failed", "--json", home=home, check=True).stdout)
    assert len(failed) == len(bad) and all(f["path"].startswith(str(tmp_path / "a") + "/") for f in failed)
    again = json.loads(cli("jobs", "ingest", str(tmp_path / "a"), "--json", home=home, check=True).stdout)
    assert again == {"ingested": 0, "refreshed": 0, "failed": 0, "duplicates": 0, "skipped": good + len(bad),
                     "symlinks_skipped": 0, "found": good + len(bad)}
    # the same directory named another way (a "..", a "."): still the same paths
    other = f"{tmp_path}/a/../a/./"
    assert json.loads(cli("jobs", "ingest", other, "--json", home=home, check=True).stdout) == again


def test_a_store_with_relative_paths_is_normalised_without_rereading(cli, home, tmp_path):
    """Rows written by an older ioweather hold paths relative to where it ran: the content hash decides."""
    good, _ = make_archive(tmp_path / "a", n_copies=10, broken=False)
    cli("jobs", "ingest", str(tmp_path / "a"), "--workers", "1", home=home, check=True)
    from ioweather.store.jobs import path_hash

    engine = sa.create_engine(Settings(home=Path(home)).url())
    with engine.begin() as conn:
        for log_hash, path in conn.execute(sa.text("SELECT log_hash, path FROM darshan_jobs")).all():
            rel = os.path.relpath(path, tmp_path)
            conn.execute(sa.text("UPDATE darshan_jobs SET path = :p, path_hash = :h WHERE log_hash = :l"),
                         {"p": rel, "h": path_hash(rel), "l": log_hash})
        conn.execute(sa.text("DELETE FROM darshan_seen_files"))  # the older ioweather had no record of files
    engine.dispose()
    assert not any(os.path.isabs(p) for p in store_state(home)["paths"])
    r = json.loads(cli("jobs", "ingest", str(tmp_path / "a"), "--json", home=home, check=True).stdout)
    assert r["ingested"] == 0 and r["duplicates"] == good and r["skipped"] == 0  # hashed, not parsed
    state = store_state(home)
    assert sorted(state["paths"]) == sorted(str(p) for p in (tmp_path / "a").rglob("*.darshan"))
    assert_consistent(state, good)
    r = json.loads(cli("jobs", "ingest", str(tmp_path / "a"), "--json", home=home, check=True).stdout)
    assert r["skipped"] == good and r["duplicates"] == 0  # now known by path: not even hashed
