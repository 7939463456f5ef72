"""`probe archive` on a full disk: one line, no rows lost, and it finishes once there is room.

Before: a pyarrow OSError traceback (the rows stayed, but the command crashed).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path

from ioweather.config import Settings
from ioweather.store import open_store

sys.path.insert(0, str(Path(__file__).parent))
from web_synthetic import add_target  # noqa: E402
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

DAY = 86400 * 10**9


def _rows(db: Path) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        live = con.execute("SELECT count(*) FROM probe_samples").fetchone()[0]
        archived = con.execute("SELECT coalesce(sum(rows), 0) FROM probe_archive").fetchone()[0]
        return live + archived
    finally:
        con.close()


def _fill(path: Path) -> None:
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        except OSError:
            pass


def test_archive_on_a_full_disk(tmpfs, cli):
    home = tmpfs("home", "size=24m")
    t0 = time.time_ns()
    store = open_store(Settings.resolve(home))
    add_target(store, "scratch", t0 - 3 * DAY, t0, period_s=10, seed=1)
    store.dispose()
    db = home / "ioweather.sqlite"
    cli("probe", "stats", home=home, check=True)  # checkpoint the WAL while there is room
    before = _rows(db)
    _fill(home / "filler")
    r = cli("probe", "archive", "--keep-days", "0", home=home)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "disk full" in r.stderr and "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr
    assert not [p for p in home.rglob("*.tmp")]
    os.remove(home / "filler")
    assert _rows(db) == before
    r = cli("probe", "archive", "--keep-days", "0", home=home)
    assert r.returncode == 0, r.stderr
    assert _rows(db) == before
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    today = (t0 // DAY) * DAY  # --keep-days 0 keeps today's rows in the database
    assert con.execute("SELECT count(*) FROM probe_samples WHERE start_ns < ?", (today,)).fetchone()[0] == 0
    assert con.execute("SELECT sum(rows) FROM probe_archive").fetchone()[0] > 0
    con.close()
