"""`ioweather store check` on a database that is not one, and the .tmp litter of a killed import
(issue 32 items 3 and 10): one problem line, exit 1, never a sqlite3 traceback; --repair removes
the temporary files an import killed with SIGKILL leaves under the rollup directories."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def good_db(tmp_path_factory) -> bytes:
    """The bytes of a real store's database (made by a real process: this one holds no connection)."""
    home = tmp_path_factory.mktemp("good")
    run_cli("jobs", "list", "--json", home=home, check=True)
    return (home / "ioweather.sqlite").read_bytes()


def _csv(p: Path, rows: int = 2) -> Path:
    p.write_text("time,target,metric,value,interval_s\n" + "".join(
        f"2024-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z,OST{i % 7:04d},read_bytes,{i},1\n"
        for i in range(rows)))
    return p


DAMAGE = {
    "damaged header": lambda good: b"garbage garbage!" + good[16:],
    "truncated": lambda good: good[: len(good) // 3],
    "garbage": lambda good: os.urandom(50_000),
    "shorter than a header": lambda good: good[:50],
}
SAYS = {"damaged header": "not an SQLite database, or its header is damaged",
        "truncated": "damaged (database disk image is malformed",
        "garbage": "not an SQLite database", "shorter than a header": "truncated (50 bytes"}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_store_check_on_a_file_that_is_no_database(tmp_path, good_db, damage):
    home = tmp_path / "home"
    home.mkdir()
    (home / "ioweather.sqlite").write_bytes(DAMAGE[damage](good_db))
    r = run_cli("store", "check", home=home)
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr == "", r.stderr
    problems = [x for x in r.stdout.splitlines() if x.startswith("problem:")]
    assert len(problems) == 1 and SAYS[damage] in problems[0], r.stdout
    j = run_cli("store", "check", "--json", home=home)
    doc = json.loads(j.stdout)
    assert j.returncode == 1 and not doc["ok"] and doc["sqlite"]["integrity"] == "damaged"
    assert [p["area"] for p in doc["problems"]] == ["sqlite"]


def test_disk_full_is_not_damage(monkeypatch):
    """A full disk makes SQLite fail with "disk I/O error" too: an admin must not "repair" a healthy store."""
    import os
    import sqlite3
    import types

    from ioweather.store import check

    # the one disk-full rule (store.db.is_disk_full) asks the file system for its free blocks
    monkeypatch.setattr(os, "statvfs", lambda path: types.SimpleNamespace(f_bavail=0))
    e = sqlite3.OperationalError("disk I/O error")
    assert check._sqlite_state(e, "/x") == "disk full"
    assert "not damaged" in check._sqlite_problem(e, "/x", "cannot read the database")
    monkeypatch.setattr(os, "statvfs", lambda path: types.SimpleNamespace(f_bavail=1))
    assert check._sqlite_state(e, "/x") == "damaged"
    assert check._sqlite_state(sqlite3.OperationalError("database or disk is full"), "/x") == "disk full"


def test_repair_removes_the_tmp_files_of_an_import_killed_by_sigkill(tmp_path):
    """Kill -9 a re-import while it writes, then `store check --repair`: no .tmp left anywhere,
    and the litter the kill could leave in every rollup directory is counted."""
    home = tmp_path / "home"
    run_cli("import", "csv", "--fs", "x", str(_csv(tmp_path / "t.csv")), home=home, check=True)
    big = _csv(tmp_path / "t.csv", rows=200_000)  # same source: a re-import
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "import", "csv", "--fs", "x", str(big)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: any(home.rglob("*.tmp")), 60, "the re-import writing a file", every=0.005, proc=proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    base = home / "parquet" / "telemetry" / "fs=x"
    day = next(base.glob("date=*"))
    writer = next(p.stem for p in (base / "_imports").glob("*.json"))
    # what the kill leaves when it lands while each rollup level is written (the timing decides which)
    planted = [day / d / f".{writer}-deadbeef-000000000000.parquet.tmp"
               for d in ("_targets", "_targets_900s", "_targets_3600s", "_rollup", ".")]
    for p in planted:
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"PAR1 half written")
    r = run_cli("store", "check", home=home)
    assert r.returncode == 1 and all(str(p.resolve()) in r.stdout or str(p) in r.stdout for p in planted), r.stdout
    r = run_cli("store", "check", "--repair", home=home)
    assert r.returncode == 0, r.stdout + r.stderr
    assert list(base.rglob("*.tmp")) == [], list(base.rglob("*.tmp"))
    assert "temporary files removed" in r.stdout and "ok after repair" in r.stdout, r.stdout
    assert run_cli("store", "check", home=home).returncode == 0
