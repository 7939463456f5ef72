"""Content snapshots (fsstats): JSON files and labelled rows in the store.

A snapshot is one JSON document (`stats.fsstats.snapshot_document`). It is saved
whole (so `fsstats diff` and the HTML report can be redone from it) in
`fsstats_snapshots.document`; its totals, first-level directories and owners are
also written as columns and rows so growth can be queried in SQL directly.
A label names a series (say `scratch-weekly`); it resolves to the newest snapshot
carrying it.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from ioweather.encoding import to_json
from ioweather.errors import UserError
from ioweather.files import read_regular_text, write_atomic
from ioweather.stats.fsstats import SNAPSHOT_FORMAT
from ioweather.store.db import Store
from ioweather.store.migrations import Component, create_tables
from ioweather.units import parse_time, to_ns

_LONGTEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql")  # MariaDB's TEXT stops at 64 KiB

metadata = sa.MetaData()

fsstats_snapshots = sa.Table(
    "fsstats_snapshots", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("label", sa.String(255), nullable=False),
    sa.Column("root", sa.Text, nullable=False),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("snapshot_ns", sa.BigInteger, nullable=False),
    sa.Column("stored_ns", sa.BigInteger, nullable=False),
    sa.Column("files", sa.BigInteger, nullable=False),
    sa.Column("dirs", sa.BigInteger, nullable=False),
    sa.Column("symlinks", sa.BigInteger, nullable=False),
    sa.Column("other", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("capacity_bytes", sa.BigInteger, nullable=False),
    sa.Column("errors", sa.BigInteger, nullable=False),
    sa.Column("document", _LONGTEXT, nullable=False),
)
sa.Index("fsstats_snapshots_label", fsstats_snapshots.c.label, fsstats_snapshots.c.snapshot_ns)

fsstats_top_dirs = sa.Table(
    "fsstats_top_dirs", metadata,
    sa.Column("snapshot_id", sa.Integer, sa.ForeignKey("fsstats_snapshots.id", ondelete="CASCADE"), nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("files", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("capacity_bytes", sa.BigInteger, nullable=False),
    sa.Column("dirs", sa.BigInteger, nullable=False),
    sa.Column("newest_mtime", sa.String(40), nullable=True),
)
sa.Index("fsstats_top_dirs_snapshot", fsstats_top_dirs.c.snapshot_id)

fsstats_owners = sa.Table(
    "fsstats_owners", metadata,
    sa.Column("snapshot_id", sa.Integer, sa.ForeignKey("fsstats_snapshots.id", ondelete="CASCADE"), nullable=False),
    sa.Column("uid", sa.BigInteger, nullable=False),
    sa.Column("user", sa.String(255), nullable=True),
    sa.Column("files", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("capacity_bytes", sa.BigInteger, nullable=False),
)
sa.Index("fsstats_owners_snapshot", fsstats_owners.c.snapshot_id)

COMPONENT = Component("fsstats", [create_tables(fsstats_snapshots, fsstats_top_dirs, fsstats_owners)])


def _snapshot_ns(doc: dict) -> int:
    return to_ns(parse_time(doc["snapshot_time"]))


def check_document(doc, source: str) -> dict:
    """`doc` if it is a snapshot this version can read, else a UserError naming `source`."""
    if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise UserError(f"{source} is not an ioweather fsstats snapshot (format {got!r}, expected {SNAPSHOT_FORMAT!r})")
    for key in ("root", "snapshot_time", *TOTALS, "histograms", "top_dirs", "owners"):
        if key not in doc:
            raise UserError(f"{source}: snapshot lacks {key!r}")
    # A hand-edited file: every value `fsstats diff`, the report and the store use is checked here, so
    # that a wrong one is a line naming it rather than a TypeError deep in the arithmetic.
    _expect(source, "root", doc["root"], str)
    _expect(source, "histograms", doc["histograms"], dict)
    _check_time(source, doc["snapshot_time"])
    for key in TOTALS:
        _check_count(source, key, doc[key])
    for key, name, name_type in (("top_dirs", "name", str), ("owners", "uid", int)):
        rows = _expect(source, key, doc[key], list)
        for i, row in enumerate(rows):
            where = f"{key}[{i}]"
            _expect(source, where, row, dict)
            if name not in row:
                raise UserError(f"{source}: snapshot {where} lacks {name!r}")
            _expect(source, f"{where}.{name}", row[name], name_type)
            for m in ROW_COUNTS:
                if row.get(m) is not None:
                    _check_count(source, f"{where}.{m}", row[m])
            if key == "owners" and row.get("user") is not None:
                _expect(source, f"{where}.user", row["user"], str)
    return doc


#: The totals of a snapshot, and the counts of each of its directory and owner rows.
TOTALS = ("files", "bytes", "capacity_bytes", "dirs", "symlinks", "other")
ROW_COUNTS = ("files", "bytes", "capacity_bytes", "dirs")
_TYPE_NAMES = {str: "a string", dict: "an object", list: "a list", int: "an integer"}


def _expect(source: str, key: str, value, kind: type):
    # bool is an int to Python, never to a person editing JSON.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise UserError(f"{source}: snapshot {key} must be {_TYPE_NAMES[kind]}, not {json.dumps(value)[:40]}")
    return value


def _check_count(source: str, key: str, value) -> None:
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63):
        raise UserError(f"{source}: snapshot {key} must be a whole number from 0 to 2^63-1, "
                        f"not {json.dumps(value)[:40]}")


def _check_time(source: str, value) -> None:
    _expect(source, "snapshot_time", value, str)
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))  # as stats.fsstats.growth reads it
        parse_time(value)  # and in the years the store keeps
    except (UserError, ValueError, OverflowError):
        raise UserError(f"{source}: snapshot snapshot_time {value[:40]!r} is not an ISO 8601 time") from None


# ---------------------------------------------------------------- files

def write_file(path: str | os.PathLike, doc: dict) -> None:
    """Write the snapshot JSON atomically (a crash never leaves half a file behind)."""
    write_atomic(path, to_json(doc) + "\n", what="write snapshot")


def read_file(path: str | os.PathLike) -> dict:
    try:
        text = read_regular_text(path, what="read snapshot")
    except UnicodeDecodeError:
        raise UserError(f"{path} is not a JSON snapshot (not UTF-8 text)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(f"{path} is not a JSON snapshot: {e.msg} at line {e.lineno}") from None
    except RecursionError:
        raise UserError(f"{path} is not a JSON snapshot: nested too deeply") from None
    return check_document(doc, str(path))


# ---------------------------------------------------------------- store

def save(store: Store, doc: dict, label: str) -> int:
    """Store `doc` under `label`; returns the new snapshot id."""
    label = label.strip()
    if not label:
        raise UserError("--label must not be empty")
    if len(label) > 255:
        raise UserError("--label is longer than 255 characters")
    store.require(COMPONENT)
    values = {"label": label, "root": doc["root"], "host": doc.get("host") or "", "snapshot_ns": _snapshot_ns(doc),
              "stored_ns": time.time_ns(), "document": to_json(doc),
              **{k: doc[k] for k in ("files", "dirs", "symlinks", "other", "bytes", "capacity_bytes", "errors")}}
    with store.begin() as conn:
        sid = conn.execute(fsstats_snapshots.insert().values(**values)).inserted_primary_key[0]
        tops = [{"snapshot_id": sid, **{k: d[k] for k in ("name", "files", "bytes", "capacity_bytes", "dirs",
                                                          "newest_mtime")}} for d in doc["top_dirs"]]
        if tops:
            conn.execute(fsstats_top_dirs.insert(), tops)
        owners = [{"snapshot_id": sid, **{k: o[k] for k in ("uid", "user", "files", "bytes", "capacity_bytes")}}
                  for o in doc["owners"]]
        if owners:
            conn.execute(fsstats_owners.insert(), owners)
    return sid


def load(store: Store, label: str) -> dict | None:
    """The newest snapshot stored under `label`, or None."""
    store.require(COMPONENT)
    q = (sa.select(fsstats_snapshots.c.id, fsstats_snapshots.c.document)
         .where(fsstats_snapshots.c.label == label)
         .order_by(fsstats_snapshots.c.snapshot_ns.desc(), fsstats_snapshots.c.id.desc()).limit(1))
    with store.connect() as conn:
        row = conn.execute(q).first()
    if row is None:
        return None
    return check_document(json.loads(row.document), f"stored snapshot {label!r} (id {row.id})")


def load_id(store: Store, snapshot_id: int) -> tuple[str, dict] | None:
    """(label, document) of the snapshot with this id (as `fsstats list` prints it), or None."""
    store.require(COMPONENT)
    q = sa.select(fsstats_snapshots.c.label, fsstats_snapshots.c.document).where(fsstats_snapshots.c.id == snapshot_id)
    with store.connect() as conn:
        row = conn.execute(q).first()
    if row is None:
        return None
    return row.label, check_document(json.loads(row.document), f"stored snapshot id {snapshot_id}")


def newest_id(store: Store, label: str) -> int | None:
    """The id of the newest snapshot stored under `label` (the one `load` returns)."""
    store.require(COMPONENT)
    c = fsstats_snapshots.c
    q = sa.select(c.id).where(c.label == label).order_by(c.snapshot_ns.desc(), c.id.desc()).limit(1)
    with store.connect() as conn:
        return conn.execute(q).scalar()


def listing(store: Store) -> list[dict]:
    """Every stored snapshot's label, time and totals, oldest first."""
    store.require(COMPONENT)
    c = fsstats_snapshots.c
    q = sa.select(c.id, c.label, c.root, c.host, c.snapshot_ns, c.files, c.dirs, c.bytes, c.capacity_bytes,
                  c.errors).order_by(c.snapshot_ns, c.id)
    with store.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(q)]
