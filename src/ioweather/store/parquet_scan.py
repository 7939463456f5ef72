"""DuckDB over listed Parquet files: the connection and the table expression of every telemetry read.

Apart from telemetry_layout (which re-exports both) so that the side files it writes with each data
file (telemetry_rollup, telemetry_target_rollups) use them without importing the layout back.
"""

from __future__ import annotations

import os
import threading


def files_scan(paths) -> str:
    """A DuckDB table expression over an explicit list of Parquet files."""
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{quoted}], hive_partitioning = false, union_by_name = true)"


_lock = threading.Lock()
#: the process's DuckDB databases, one per thread count and options, and the process they were opened in
_shared: dict[tuple, object] = {}
_pid: list[int] = [0]
_inherited: list = []


def connect_duckdb(threads: int | None = None, shared: bool = True, options: dict | None = None):
    """Every DuckDB connection of the store. Without its progress bar: DuckDB draws one on stdout for any
    query over 2 s (a loaded machine, a reader held up by an import), and it broke the `--json` of
    `workload`, `events` and the dashboard's readers (a CI run's JSONDecodeError).

    A connection (`cursor()`, about 1 ms) to the process's one in-memory database of that thread count
    and `options` (database-wide settings, e.g. memory_limit, set once when it opens): opening a
    database takes 30–120 ms, and `why` read the telemetry through four. Each read (each thread) still
    has its own connection, and its temporary tables and registered tables are its own; DuckDB caches
    no local file's contents by default (cache_local_files, parquet_metadata_cache), so a file
    rewritten in place is read anew. `shared=False`: a database of its own. A forked child opens its
    own (DuckDB's threads do not survive a fork). Whoever sets a database-wide option on a shared
    connection changes it for every reader: name it in `options` instead."""
    import duckdb

    if not shared:
        return _configured(duckdb.connect(), threads, options)
    key = (int(threads or 0), tuple(sorted((options or {}).items())))
    with _lock:
        if _pid[0] != os.getpid():
            # never closed nor freed here: a database's teardown in a forked child crashes (its threads
            # are the parent's)
            _inherited.extend(_shared.values())
            _shared.clear()
            _pid[0] = os.getpid()
        db = _shared.get(key)
        if db is None:
            db = _shared[key] = _configured(duckdb.connect(), threads, options)
        con = db.cursor()
    con.execute("SET enable_progress_bar = false")  # a session option: each connection's own
    return con


def _configured(con, threads: int | None, options: dict | None):
    con.execute("SET enable_progress_bar = false")  # session options: connect(config=) refuses them
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    for name, value in (options or {}).items():
        con.execute(f"SET {name} = '{value}'")
    return con
