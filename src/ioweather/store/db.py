"""Opening the store: engines, pragmas, connection errors, schema upgrades."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import sqlite3
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from ioweather.config import Settings
from ioweather.errors import SchemaTooNew, StoreError, from_os_error
from ioweather.store.migrations import Component, schema_versions

#: How long a writer waits for another writer's lock before giving up (seconds).
BUSY_TIMEOUT_S = 30.0


def normalize_url(url: str) -> str:
    """Pick the drivers ioweather ships with for bare scheme names."""
    for bare, full in (("postgresql://", "postgresql+psycopg://"), ("postgres://", "postgresql+psycopg://"),
                       ("mysql://", "mysql+pymysql://"), ("mariadb://", "mysql+pymysql://")):
        if url.startswith(bare):
            return full + url[len(bare):]
    return url


def redact(url: str) -> str:
    """The URL with its password hidden, for messages."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparseable URL has no password to hide worth the trouble
        return re.sub(r":[^:@/]*@", ":***@", url)


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


class Store:
    """A connection pool to one database plus the schema bookkeeping.

    Use `store.connect()` for reads and `store.begin()` for writes (SQLAlchemy
    Core connections). Call `store.require(component)` before touching a
    component's tables: it creates or upgrades them.
    """

    def __init__(self, url: str, *, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.url = normalize_url(url)
        self.busy_timeout_s = busy_timeout_s
        self.is_sqlite = self.url.startswith("sqlite")
        try:
            self.engine = self._make_engine()
        except sa.exc.ArgumentError as e:
            raise StoreError(f"invalid database URL {redact(url)!r}: {e}") from None
        except ModuleNotFoundError as e:
            raise StoreError(f"no driver for database URL {redact(url)!r}: {e}") from None
        self._ready: set[str] = set()
        self._sqlite_path = make_url(self.url).database if self.is_sqlite else None
        #: Where this store keeps its Parquet archives (set by open_store from the home directory).
        self.parquet_dir = None

    # -- engine -------------------------------------------------------------
    def _make_engine(self) -> sa.Engine:
        if not self.is_sqlite:
            kwargs = {"pool_pre_ping": True}
            if self.url.startswith("postgresql"):
                kwargs["connect_args"] = {"connect_timeout": 10}
            elif self.url.startswith("mysql"):
                kwargs["connect_args"] = {"connect_timeout": 10}
            return sa.create_engine(self.url, **kwargs)

        path = make_url(self.url).database
        if path and path != ":memory:":
            _prepare_sqlite_dir(Path(path))
        engine = sa.create_engine(self.url, connect_args={"timeout": self.busy_timeout_s})
        busy_ms = int(self.busy_timeout_s * 1000)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):
            # Let SQLAlchemy, not pysqlite, decide when transactions begin (so
            # BEGIN IMMEDIATE below works), and set the pragmas every connection needs.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={busy_ms}")
            with _init_lock(path):
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            # Writers take the lock up front: a deferred transaction that upgrades
            # from read to write can fail at once with SQLITE_BUSY, ignoring busy_timeout.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write", True) else "BEGIN")

        return engine

    # -- connections --------------------------------------------------------
    def connect(self) -> sa.Connection:
        """A connection for reading (on SQLite, a deferred transaction that never blocks writers)."""
        # Connect errors surface here; errors of later statements are the caller's to wrap.
        try:
            return self.engine.connect().execution_options(write=False)
        except sa.exc.DBAPIError as e:
            raise self._error("connect to", e) from None

    def begin(self):
        """A write transaction (context manager yielding a connection)."""
        return _Begin(self)

    def _error(self, what: str, e: BaseException) -> StoreError:
        msg = _first_line(e)
        if "locked" in msg or "busy" in msg.lower():
            return StoreError(f"database {redact(self.url)} is locked by another writer (waited {self.busy_timeout_s:g} s)")
        return StoreError(f"cannot {what} database {redact(self.url)}: {msg}")

    # -- schema -------------------------------------------------------------
    def require(self, component: Component) -> None:
        """Create or upgrade `component`'s tables; refuse a database that is newer.

        Checks with a read first: a reader must not queue behind a writer (the probe
        daemon) just to learn that the schema is already current.
        """
        if component.name in self._ready:
            return
        if self._stored_version(component) != component.version:
            with _init_lock(self._sqlite_path), self.begin() as conn:
                schema_versions.create(conn, checkfirst=True)
                row = conn.execute(
                    sa.select(schema_versions.c.version).where(schema_versions.c.component == component.name)
                ).first()
                have = row[0] if row else 0
                self._refuse_newer(component, have)
                for version in range(have, component.version):
                    component.migrations[version](conn)
                if have != component.version:
                    values = {"version": component.version, "updated_ns": time.time_ns()}
                    if row:
                        conn.execute(schema_versions.update()
                                     .where(schema_versions.c.component == component.name).values(**values))
                    else:
                        conn.execute(schema_versions.insert().values(component=component.name, **values))
        self._ready.add(component.name)

    def _stored_version(self, component: Component) -> int | None:
        with self.connect() as conn:
            try:
                if not sa.inspect(conn).has_table("schema_versions"):
                    return None
                have = conn.execute(sa.select(schema_versions.c.version)
                                    .where(schema_versions.c.component == component.name)).scalar()
            except sa.exc.DBAPIError as e:
                raise self._error("read", e) from None
        self._refuse_newer(component, have or 0)
        return have

    def _refuse_newer(self, component: Component, have: int) -> None:
        if have > component.version:
            raise SchemaTooNew(
                f"database {redact(self.url)} has {component.name} schema v{have}, newer than this "
                f"ioweather (v{component.version}); upgrade ioweather to read it"
            )

    def versions(self) -> dict[str, int]:
        with self.connect() as conn:
            if not sa.inspect(conn).has_table("schema_versions"):
                return {}
            return dict(conn.execute(sa.select(schema_versions.c.component, schema_versions.c.version)).all())

    def dispose(self) -> None:
        self.engine.dispose()


class _Begin:
    """`with store.begin() as conn:` with one-line errors instead of driver tracebacks.

    Connecting and beginning are separate steps so that an unreachable server or a
    refused login reads "cannot connect", and a lock or a failed write "cannot write".
    """

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self) -> sa.Connection:
        try:
            self._conn = self.store.engine.connect()
        except sa.exc.DBAPIError as e:
            raise self.store._error("connect to", e) from None
        try:
            self._tx = self._conn.begin()
        except sa.exc.DBAPIError as e:
            self._conn.close()
            raise self.store._error("write to", e) from None
        return self._conn

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self._tx.commit()
            else:
                self._tx.rollback()
        except sa.exc.DBAPIError as e:
            raise self.store._error("write to", e) from None
        finally:
            self._conn.close()
        if isinstance(exc, sa.exc.DBAPIError):
            raise self.store._error("write to", exc) from None
        return False


@contextlib.contextmanager
def _init_lock(path: str | None):
    """Serialize the one-time steps on a new SQLite file across processes.

    Two daemons starting together on a fresh database both switch it to WAL and create
    tables; SQLite cannot always wait its way through that race (a lock upgrade can fail at
    once), so those steps take an advisory lock on a file beside the database.
    """
    if not path or path == ":memory:":
        yield
        return
    fd = os.open(f"{path}.init-lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _prepare_sqlite_dir(path: Path) -> None:
    """Create the home directory (0700) and check we can write there, with a clear message."""
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:
        raise from_os_error(parent, e, "create store directory", cls=StoreError) from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreError(f"store directory {parent} is not writable")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreError(f"store database {path} is not readable and writable by this user")
    if path.exists():
        try:
            with open(path, "rb") as f:
                head = f.read(16)
        except OSError as e:
            raise from_os_error(path, e, "read store database", cls=StoreError) from None
        if head and head != b"SQLite format 3\x00":
            raise StoreError(f"{path} is not an SQLite database")


def open_store(settings: Settings) -> Store:
    """The store `settings` point at (SQLite under the home unless a URL is given)."""
    store = Store(settings.url())
    store.parquet_dir = settings.parquet_dir
    return store


def sqlite_version() -> str:
    return sqlite3.sqlite_version
