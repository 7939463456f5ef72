"""Reference values read straight from an LMT SQLite database, independent of ioweather's importer."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def lmt_deltas(db: Path, sql: str) -> dict:
    """{name: sum of the non-negative deltas of a cumulative counter}; `sql` yields (name, delta) rows."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute(sql).fetchall()
    finally:
        con.close()
    out: dict = {}
    for name, d in rows:
        if d is not None and d >= 0:
            out[name] = out.get(name, 0) + d
    return out
