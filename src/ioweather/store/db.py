"""Opening the store: engines, pragmas, connection errors, schema upgrades."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import sqlite3
import sys
import threading
import time
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from ioweather.config import Settings
from ioweather.errors import SchemaTooNew, StoreDamaged, StoreError, from_os_error
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

    def __init__(self, url: str, *, busy_timeout_s: float = BUSY_TIMEOUT_S, read_only: bool = False):
        self.url = normalize_url(url)
        self.busy_timeout_s = busy_timeout_s
        self.is_sqlite = self.url.startswith("sqlite")
        #: A monitoring check's handle (`slowdown --check`): SQLite opens the file with mode=ro, schemas are
        #: never created or upgraded, caches of the store (probe pieces) are computed but not written.
        self.read_only = read_only
        try:
            self._sqlite_path = make_url(self.url).database if self.is_sqlite else None
            self._engine_key = self.url + ("#read-only" if read_only else "")
            self.engine = _shared_engine(self._engine_key, self._make_engine)
        except sa.exc.ArgumentError as e:
            raise StoreError(f"invalid database URL {redact(url)!r}: {e}") from None
        except ModuleNotFoundError as e:
            raise StoreError(f"no driver for database URL {redact(url)!r}: {e}") from None
        self._disposed = False
        self._ready: set[str] = set()
        #: Where this store keeps its Parquet archives (set by open_store from the home directory).
        self.parquet_dir = None

    # -- engine -------------------------------------------------------------
    def _make_engine(self) -> sa.Engine:
        if not self.is_sqlite:
            kwargs = {"pool_pre_ping": True}
            if self.url.startswith("postgresql"):
                kwargs["connect_args"] = {"connect_timeout": 10}
                if self.read_only:  # the server refuses any write of this handle, not only our code
                    kwargs["connect_args"]["options"] = "-c default_transaction_read_only=on"
            elif self.url.startswith("mysql"):
                kwargs["connect_args"] = {"connect_timeout": 10}
            return sa.create_engine(self.url, **kwargs)

        path = self._sqlite_path
        if self.read_only and path and path != ":memory:":
            return self._make_read_only_engine(path)
        if path and path != ":memory:":
            _prepare_sqlite_dir(Path(path))
            _guard_sqlite_files(path)
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
                if cur.execute("PRAGMA page_count").fetchone()[0] == 0:
                    # Only a new database can choose it (an older one by VACUUM), and on an existing one the
                    # pragma writes: it failed every connection on a full disk. Its pointer maps let SQLite
                    # reach a slice of a long blob (a probe piece's sorted day, 700 KiB) without reading every
                    # overflow page before it, 12x faster for the baseline's slices (docs/probe-pieces.md).
                    cur.execute("PRAGMA auto_vacuum=INCREMENTAL")
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            # Writers take the lock up front: a deferred transaction that upgrades
            # from read to write can fail at once with SQLITE_BUSY, ignoring busy_timeout.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write", True) else "BEGIN")

        return engine

    def _make_read_only_engine(self, path: str) -> sa.Engine:
        if not Path(path).exists():
            raise StoreError(f"no store at {path}")
        _guard_sqlite_files(path)
        # mode=ro on a WAL database whose -wal and -shm are absent (no writer attached) creates them, and
        # a read-only connection cannot remove them again: `slowdown --check`, documented as never
        # changing a store, left both behind (issue 41 item 7). Without a -wal every committed page is in
        # the main file, so it is read as immutable (no locks, no -shm); a writer starting meanwhile
        # writes to a new -wal, which this snapshot does not need. With a -wal a writer is attached and
        # both files exist already: mode=ro shares them.
        query = "mode=ro" if os.path.exists(f"{path}-wal") else "mode=ro&immutable=1"
        engine = sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(
            f"{Path(path).absolute().as_uri()}?{query}", uri=True, timeout=self.busy_timeout_s,
            check_same_thread=False))
        busy_ms = int(self.busy_timeout_s * 1000)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn, _record):
            dbapi_conn.isolation_level = None
            dbapi_conn.execute(f"PRAGMA busy_timeout={busy_ms}")

        @event.listens_for(engine, "begin")
        def _on_begin(conn):
            conn.exec_driver_sql("BEGIN")

        return engine

    # -- connections --------------------------------------------------------
    def connect(self) -> "_Read":
        """`with store.connect() as conn:` a connection for reading (on SQLite, a deferred
        transaction that never blocks writers).

        Every failure inside the block that comes from the store — SQLAlchemy's, the raw
        driver cursors' (sqlite3, psycopg), and Arrow's on the Parquet archives — leaves it as
        one StoreError line, StoreDamaged when the files are damaged.
        """
        return _Read(self)

    def begin(self):
        """A write transaction (context manager yielding a connection)."""
        return _Begin(self)

    def _error(self, what: str, e: BaseException) -> StoreError:
        return store_error(self.url, what, e, busy_timeout_s=self.busy_timeout_s)

    # -- schema -------------------------------------------------------------
    def require(self, component: Component) -> None:
        """Create or upgrade `component`'s tables; refuse a database that is newer.

        Checks with a read first: a reader must not queue behind a writer (the probe
        daemon) just to learn that the schema is already current.
        """
        if component.name in self._ready:
            return
        have = self._stored_version(component)
        if have != component.version and self.read_only:
            raise StoreError(f"the store {redact(self.url)} has no {component.name} schema v{component.version} "
                             f"(it has {'none' if have is None else f'v{have}'}); any other ioweather command "
                             "creates or upgrades it")
        if have != component.version:
            with _init_lock(self._sqlite_path), self.begin() as conn, _server_schema_lock(conn):
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

    def has(self, component: Component) -> bool:
        """Whether `component`'s tables exist (in any version), without creating them."""
        return component.name in self._ready or self._stored_version(component) is not None

    def versions(self) -> dict[str, int]:
        with self.connect() as conn:
            if not sa.inspect(conn).has_table("schema_versions"):
                return {}
            return dict(conn.execute(sa.select(schema_versions.c.component, schema_versions.c.version)).all())

    def dispose(self) -> None:
        """Release this handle; the engine closes when the process's last handle on the database goes."""
        if not self._disposed:
            self._disposed = True
            _release_engine(self._engine_key)


#: SQLite's own words for a damaged file; any of them means `ioweather store check` is the next step.
_DAMAGE_WORDS = ("file is not a database", "malformed", "disk i/o error", "database corrupt",
                 "decompression failed", "magic bytes not found", "couldn't deserialize thrift",
                 "failed to open local file", "no such file or directory", "unexpected end of stream",
                 "corrupt", "invalid parquet", "parquet file size is 0",
                 # a table its component's schema version says exists: dropped or lost with a WAL
                 "no such table", "undefinedtable", "doesn't exist")


def is_disk_full(url: str, exc: BaseException) -> bool:
    """Whether `exc` is a full disk: said so (SQLite's "database or disk is full", ENOSPC), or SQLite's
    "disk I/O error" while the file system holding the SQLite database has no free block."""
    text = _first_line(exc).lower()
    if "disk is full" in text or "no space left" in text or getattr(exc, "errno", None) == errno.ENOSPC:
        return True
    if "disk i/o error" not in text:
        return False
    try:
        database = make_url(url).database if url.startswith("sqlite") else None
        return bool(database) and os.statvfs(os.path.dirname(os.path.abspath(database))).f_bavail == 0
    except (OSError, ValueError, sa.exc.ArgumentError):
        return False


def is_damage(exc: BaseException) -> bool:
    """Whether `exc` says the store's files are damaged (rather than locked, missing or refused)."""
    return any(w in _first_line(exc).lower() for w in _DAMAGE_WORDS)


def store_error(url: str, what: str, exc: BaseException, *, busy_timeout_s: float = BUSY_TIMEOUT_S) -> StoreError:
    """The one-line StoreError for a driver or Arrow failure while WHAT-ing the store at `url`."""
    msg = _first_line(exc)
    if "locked" in msg or "busy" in msg.lower():
        return StoreError(f"database {redact(url)} is locked by another writer (waited {busy_timeout_s:g} s)")
    if is_disk_full(url, exc):
        # not StoreDamaged: SQLite says "disk I/O error" when a WAL write hits a full disk, and an
        # admin told "damaged" might "repair" a healthy store
        return StoreError(f"cannot {what} the store {redact(url)}: the disk is full ({msg}); the store is not "
                          f"damaged: free space and run the command again")
    if "file is not a database" in msg:
        return StoreDamaged(f"cannot {what} the store {redact(url)}: it is not an SQLite database (or its header is "
                            f"damaged); run `ioweather store check`")
    if is_damage(exc):
        return StoreDamaged(f"cannot {what} the store {redact(url)}: it is damaged ({msg}); "
                            f"run `ioweather store check` to see what and what can be repaired")
    return StoreError(f"cannot {what} database {redact(url)}: {msg}")


# -- one engine per database per process ------------------------------------
#
# SQLite's locks are POSIX advisory locks, which belong to the process and the inode: when any
# descriptor of the process on the database file is closed, every lock the process holds on it is
# dropped, including those of its other connections. Another process then believes it is the last
# user, checkpoints and deletes the WAL that this process still writes into (SQLite's "How To
# Corrupt An SQLite Database File", §2.2). Two engines in one process are safe only as long as
# SQLite alone opens the file; sharing one engine per database and refusing any Python-level open of
# the database files (below) makes that the rule rather than a convention.
_ENGINES: dict[str, list] = {}  # url -> [engine, handles]
_ENGINES_LOCK = threading.Lock()
_GUARDED: set[str] = set()      # absolute paths of live SQLite databases and their -wal/-shm/-journal


def _shared_engine(url: str, make) -> sa.Engine:
    with _ENGINES_LOCK:
        entry = _ENGINES.get(url)
        if entry is None:
            entry = _ENGINES[url] = [make(), 0]
        entry[1] += 1
        return entry[0]


def _release_engine(url: str) -> None:
    with _ENGINES_LOCK:
        entry = _ENGINES.get(url)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _ENGINES[url]
        # a read-only handle's key ends in #read-only (Store.__init__): its guard is on the file's own path
        path = make_url(url.removesuffix("#read-only")).database if url.startswith("sqlite") else None
    entry[0].dispose()
    if path and path != ":memory:":
        _GUARDED.difference_update(_sqlite_files(path))


def _sqlite_files(path: str) -> set[str]:
    base = os.path.abspath(path)
    return {base, base + "-wal", base + "-shm", base + "-journal"}


def _guard_sqlite_files(path: str) -> None:
    """Refuse, from now until the engine is released, any Python-level open of the database's files."""
    _install_open_guard()
    _GUARDED.update(_sqlite_files(path))


_guard_installed = False


def _install_open_guard() -> None:
    global _guard_installed
    if _guard_installed:
        return
    _guard_installed = True

    def guard(event: str, args: tuple) -> None:
        # Audit hooks see every builtins.open/os.open/io.open; SQLite's own opens happen in C
        # and raise no "open" event, so only a Python-level open of the files trips this.
        if event != "open" or not _GUARDED:
            return
        target = args[0]
        if isinstance(target, int):
            return
        try:
            name = os.path.abspath(os.fsdecode(target))
        except (TypeError, ValueError):
            return
        if name in _GUARDED:
            raise StoreError(
                f"refusing to open {name} outside SQLite while this process has the store open: closing it would "
                f"drop SQLite's locks and let another process delete the write-ahead log (an ioweather bug)")

    sys.addaudithook(guard)


def _is_store_failure(exc: BaseException) -> bool:
    """Whether `exc`, raised while reading, is the store's (database driver, Arrow) rather than a bug."""
    if isinstance(exc, (sa.exc.DBAPIError, sqlite3.Error)):
        return True
    # Inside a read block the only files opened are the store's own (the Parquet archives).
    return isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("psycopg", "pymysql", "pyarrow")


class _Read:
    """`with store.connect() as conn:` — see Store.connect."""

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self) -> sa.Connection:
        try:
            self._conn = self.store.engine.connect().execution_options(write=False)
        except sa.exc.DBAPIError as e:
            raise self.store._error("connect to", e) from None
        return self._conn

    def __exit__(self, exc_type, exc, tb):
        try:
            self._conn.close()
        except sa.exc.DBAPIError:
            pass  # the block's own error, if any, says more; a failed close loses nothing
        if exc is not None and not isinstance(exc, StoreError) and _is_store_failure(exc):
            if isinstance(exc, FileNotFoundError):
                raise StoreDamaged(f"cannot read the store: an archived file is missing ({exc.filename or _first_line(exc)}); "
                                   f"run `ioweather store check`") from None
            raise self.store._error("read", exc) from None
        return False


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


#: One advisory-lock key for schema changes on a database server (any constant; "iowx" in ASCII).
_SCHEMA_LOCK_KEY = 0x696F7778


@contextlib.contextmanager
def _server_schema_lock(conn: sa.Connection):
    """Serialize schema creation across processes on PostgreSQL and MariaDB, as _init_lock does on SQLite.

    Two commands starting on a fresh database both run CREATE TABLE IF NOT EXISTS; PostgreSQL
    then fails one with a duplicate key in pg_type, which the check-first cannot prevent.
    """
    dialect = conn.dialect.name
    if dialect == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK_KEY})")  # released at commit
        yield
    elif dialect in ("mysql", "mariadb"):
        conn.exec_driver_sql(f"SELECT GET_LOCK('ioweather_schema', {int(BUSY_TIMEOUT_S)})")
        try:
            yield
        finally:
            conn.exec_driver_sql("SELECT RELEASE_LOCK('ioweather_schema')")
    else:
        yield


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
    # The file's header is checked by SQLite itself on the first statement ("file is not a
    # database", see store_error): reading it here with open() would drop this process's
    # POSIX locks on the database when the file is closed (see _guard_sqlite_files).


def open_store(settings: Settings, *, read_only: bool = False) -> Store:
    """The store `settings` point at (SQLite under the home unless a URL is given); `read_only` never
    creates, upgrades or writes it (a missing SQLite file is a StoreError "no store at PATH")."""
    store = Store(settings.url(), read_only=read_only)
    store.parquet_dir = settings.parquet_dir
    return store


def sqlite_version() -> str:
    return sqlite3.sqlite_version
