"""Versioned schema, one version number per component.

A component is a named set of tables with an ordered list of migrations:
migration i upgrades the component from version i to i+1, so the current
version is len(migrations). Versions live in the `schema_versions` table.

Rules for migrations (they run on databases written by older releases):
- never edit a released migration; append a new one;
- write each with SQLAlchemy Core DDL (or `op`-free plain SQL valid on SQLite,
  PostgreSQL and MariaDB) against the table *as it was* at that version.

A database whose version of a component is newer than this code knows is
refused with `SchemaTooNew` instead of being misread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import sqlalchemy as sa

# The bookkeeping table lives in its own MetaData: it exists before any component.
_meta = sa.MetaData()
schema_versions = sa.Table(
    "schema_versions",
    _meta,
    sa.Column("component", sa.String(64), primary_key=True),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("updated_ns", sa.BigInteger, nullable=False),
)

Migration = Callable[[sa.Connection], None]


@dataclass
class Component:
    """A feature's tables and the migrations that build them."""

    name: str
    migrations: list[Migration] = field(default_factory=list)

    @property
    def version(self) -> int:
        return len(self.migrations)


def create_tables(*tables: sa.Table) -> Migration:
    """A migration that creates `tables` (and their indexes) as defined now.

    Use it only for a component's tables at the version they were introduced.
    """

    def migrate(conn: sa.Connection) -> None:
        for t in tables:
            t.create(conn, checkfirst=True)

    return migrate
