"""The one place that reads and writes ioweather's relational data.

SQLite (WAL) under IOWEATHER_HOME by default, PostgreSQL or MariaDB by URL, one
schema through SQLAlchemy Core. Each feature owns a *component* of the schema
(its tables and their migrations, see `migrations.py`), so features evolve
their tables independently and an older database is upgraded in place.

`Store`, `open_store` and `Component` are loaded at their first use: `store.probe_light`, the sqlite3-only
reads of `slowdown --check`, is a module of this package, and importing it must not load SQLAlchemy.
"""

__all__ = ["Store", "open_store", "Component"]


def __getattr__(name: str):
    if name in ("Store", "open_store"):
        # lazy: sqlalchemy via store.db: kept off store.probe_light, which `slowdown --check` reads with sqlite3
        from ioweather.store import db

        return getattr(db, name)
    if name == "Component":
        # lazy: sqlalchemy via store.migrations: kept off store.probe_light, as above
        from ioweather.store.migrations import Component

        return Component
    raise AttributeError(f"module 'ioweather.store' has no attribute {name!r}")
