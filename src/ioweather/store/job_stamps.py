"""How the store knows a log file without reading it: the hash of its path and its stat stamp. A module of its
own, without SQLAlchemy: `jobs ingest`'s light path (services/jobs/ingest_scan.py) compares them with sqlite3
alone (issue 40)."""

from __future__ import annotations

import hashlib
import os


def path_hash(path: str) -> str:
    return hashlib.sha256(os.fsencode(path)).hexdigest()


def _signed(n: int) -> int:
    """An unsigned 64-bit number (st_dev, st_ino) as the signed one of the same bits, for a BigInteger column."""
    return n - (1 << 64) if n >= 1 << 63 else n


def file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """(st_dev, st_ino, size, mtime_ns) of a stat, as `seen_files` stores them: a file whose stamp is
    unchanged since it was read is the same file with the same bytes (a rewrite moves mtime, a copy put
    in its place is another inode)."""
    return _signed(st.st_dev), _signed(st.st_ino), st.st_size, st.st_mtime_ns
