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
#: the process's DuckDB databases, one per thread count, and the process they were opened in
_shared: dict[int, object] = {}
_pid: list[int] = [0]
_inherited: list = []


def connect_duckdb(threads: int | None = None, shared: bool = True):
    """Every DuckDB connection of the store. Without its progress bar: DuckDB draws one on stdout for any
    query over 2 s (a loaded machine, a reader held up by an import), and it broke the `--json` of
    `workload`, `events` and the dashboard's readers (a CI run's JSONDecodeError).

    A connection (`cursor()`, about 1 ms) to the process's one in-memory database of that thread count:
    opening a database takes 30–120 ms, and `why` read the telemetry through four. Each read (each
    thread) still has its own connection, and its temporary tables and registered tables are its own;
    the thread count is the database's, so a count has its own database. `shared=False`: a database of
    its own, for a reader that sets database-wide options (memory_limit, preserve_insertion_order). A
    forked child opens its own (DuckDB's threads do not survive a fork)."""
    import duckdb

    if not shared:
        return _configured(duckdb.connect(), threads)
    key = int(threads or 0)
    with _lock:
        if _pid[0] != os.getpid():
            # never closed nor freed here: a database's teardown in a forked child crashes (its threads
            # are the parent's)
            _inherited.extend(_shared.values())
            _shared.clear()
            _pid[0] = os.getpid()
        db = _shared.get(key)
        if db is None:
            db = _shared[key] = _configured(duckdb.connect(), threads)
        con = db.cursor()
    con.execute("SET enable_progress_bar = false")  # a session option: each connection's own
    return con


def _configured(con, threads: int | None):
    con.execute("SET enable_progress_bar = false")  # session options: connect(config=) refuses them
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con
