"""The probe tables read through `sqlite3` alone: what `slowdown --check` needs, without SQLAlchemy or numpy.

cron asks the check every minute; importing SQLAlchemy and numpy cost it more than its answer (issue 40).
These reads are the store's own (the tables of store/probe_tables.py, the piece format of
store/probe_pieces.py), on a read-only SQLite connection in one read transaction, so that the pieces, their
slices and the samples are one snapshot. Anything else (a server database, a probe schema of another
version) is `Unsupported`: the caller then takes the store's usual door.
"""

from __future__ import annotations

import sqlite3
import sys
import zlib
from array import array
from pathlib import Path

DAY_NS = 86_400 * 10**9
HOUR_NS = 3_600 * 10**9
#: The probe component's schema version these reads know (store/probe_tables.py COMPONENT; a test checks).
PROBE_VERSION = 6
OPS = ("data_write", "data_read", "md_create", "md_stat", "md_read", "md_delete")
STATUS_CODES = {"ok": 0, "error": 1, "timeout": 2}


class Unsupported(Exception):
    """This store cannot be read here: the caller uses the store's usual door."""


def _int_array(code: str, data: bytes) -> array:
    a = array(code)
    a.frombytes(data)
    if sys.byteorder != "little":  # stored little-endian
        a.byteswap()
    return a


def connect(path) -> sqlite3.Connection:
    """A read-only connection in a read transaction, on a store whose probe schema these reads know."""
    try:
        # As store/db.py's read-only engine: without a -wal (no writer attached) every committed page is in the
        # main file, read as immutable, so that no -wal or -shm is left behind; with one, mode=ro shares them.
        # as_uri() percent-encodes a '?' or '#' in the path, which would end a bare "file:" URI's path.
        query = "mode=ro" if Path(f"{path}-wal").exists() else "mode=ro&immutable=1"
        conn = sqlite3.connect(f"{Path(path).absolute().as_uri()}?{query}", uri=True, timeout=2.0,
                               isolation_level=None)
        conn.execute("BEGIN")
        row = conn.execute("SELECT version FROM schema_versions WHERE component = 'probe'").fetchone()
    except sqlite3.Error as e:
        raise Unsupported(str(e)) from None
    if row is None or row[0] != PROBE_VERSION:
        conn.close()
        raise Unsupported(f"probe schema version {row and row[0]}, not {PROBE_VERSION}")
    return conn


def active_targets(conn: sqlite3.Connection) -> list[str]:
    """store.probe.active_targets: every target but those retired since their last run started."""
    names = [r[0] for r in conn.execute("SELECT DISTINCT target FROM probe_runs ORDER BY target")]
    retired = {r[0] for r in conn.execute(
        "SELECT r.target FROM probe_retired r JOIN (SELECT target, max(started_ns) AS started FROM probe_runs "
        "GROUP BY target) l ON l.target = r.target WHERE r.retired_ns >= l.started")}
    return [t for t in names if t not in retired]


def runs(conn: sqlite3.Connection, target: str) -> list[dict]:
    """The target's runs, oldest first (the columns the check reads)."""
    cur = conn.execute("SELECT id, host, fs, interval_s, started_ns FROM probe_runs WHERE target = ? ORDER BY id",
                       (target,))
    return [dict(zip(("id", "host", "fs", "interval_s", "started_ns"), r)) for r in cur]


def last_sample_ns(conn: sqlite3.Connection, run_ids: list[int]) -> int | None:
    """store.probe_aggregates.last_sample_ns: the newest start in the database (one index lookup per run and op)."""
    best = None
    for rid in run_ids:
        for op in OPS:
            v = conn.execute("SELECT max(start_ns) FROM probe_samples WHERE run_id = ? AND op = ?", (rid, op)).fetchone()[0]
            if v is not None and (best is None or v > best):
                best = int(v)
    return best


def first_sample_ns(conn: sqlite3.Connection, run_ids: list[int]) -> int | None:
    """store.probe_aggregates.sample_range's first: the oldest start in the database or the archive's manifest."""
    best = None
    for rid in run_ids:
        for op in OPS:
            v = conn.execute("SELECT min(start_ns) FROM probe_samples WHERE run_id = ? AND op = ?", (rid, op)).fetchone()[0]
            if v is not None and (best is None or v < best):
                best = int(v)
    if run_ids:
        marks = ",".join("?" * len(run_ids))
        v = conn.execute(f"SELECT min(first_ns) FROM probe_archive WHERE run_id IN ({marks})", run_ids).fetchone()[0]
        if v is not None and (best is None or v < best):
            best = int(v)
    return best


def archived(conn: sqlite3.Connection, run_ids: list[int], lo: int, hi: int) -> bool:
    """Whether an archived day of these runs overlaps [lo, hi) (its samples are in Parquet, not here)."""
    if not run_ids:
        return False
    marks = ",".join("?" * len(run_ids))
    return conn.execute(f"SELECT 1 FROM probe_archive WHERE run_id IN ({marks}) AND day_ns < ? AND day_ns + ? > ? "
                        "LIMIT 1", (*run_ids, hi, DAY_NS, lo)).fetchone() is not None


def samples(conn: sqlite3.Connection, run_ids: list[int], lo: int, hi: int) -> list[tuple[int, int, int, int]]:
    """(op code, start, duration, status code) of the database's samples in [lo, hi); the caller checks first
    that no archived day overlaps the range."""
    out = []
    for rid in run_ids:
        for code, op in enumerate(OPS):
            for start, dur, st in conn.execute(
                    "SELECT start_ns, duration_ns, status FROM probe_samples WHERE run_id = ? AND op = ? "
                    "AND start_ns >= ? AND start_ns < ?", (rid, op, lo, hi)):
                out.append((code, start, dur, STATUS_CODES[st]))
    return out


def pieces(conn: sqlite3.Connection, target: str, keys: list[tuple[int, int]]) -> dict[tuple[int, int], dict]:
    """{(start, span): {op: piece}} of the stored pieces among `keys`: rowid, counts, first successful start,
    the histogram (array of N_BUCKETS counts) and whether it keeps start times."""
    if not keys:
        return {}
    wanted = set(keys)
    lo, hi = min(s for s, _ in keys), max(s for s, _ in keys)
    out: dict[tuple[int, int], dict] = {}
    for rowid, op, start, span, ok, first, hist, has_starts in conn.execute(
            "SELECT rowid, op, start_ns, span_ns, ok, first_ok_ns, hist, starts_ns IS NOT NULL FROM probe_pieces "
            "WHERE target = ? AND start_ns >= ? AND start_ns <= ?", (target, lo, hi)):
        if (start, span) in wanted:
            out.setdefault((start, span), {})[op] = {
                "rowid": rowid, "ok": int(ok), "first_ok_ns": int(first), "starts": bool(has_starts),
                "hist": _int_array("I", zlib.decompress(hist))}
    return out


def sorted_slice(conn: sqlite3.Connection, rowid: int, offset: int, length: int) -> array:
    """Values [offset, offset + length) of a piece's sorted durations (a blob read of just those bytes)."""
    with conn.blobopen("probe_pieces", "sorted_ns", rowid, readonly=True) as blob:
        blob.seek(offset * 8)
        return _int_array("q", blob.read(length * 8))


def sorted_with_starts(conn: sqlite3.Connection, rowid: int) -> tuple[array, array]:
    """An hour piece's whole sorted durations and their start times (in the same order)."""
    d, s = conn.execute("SELECT sorted_ns, starts_ns FROM probe_pieces WHERE rowid = ?", (rowid,)).fetchone()
    return _int_array("q", d), _int_array("q", s)
