"""The one place that reads and writes ioweather's relational data.

SQLite (WAL) under IOWEATHER_HOME by default, PostgreSQL or MariaDB by URL, one
schema through SQLAlchemy Core. Each feature owns a *component* of the schema
(its tables and their migrations, see `migrations.py`), so features evolve
their tables independently and an older database is upgraded in place.
"""

from ioweather.store.db import Store, open_store
from ioweather.store.migrations import Component

__all__ = ["Store", "open_store", "Component"]
