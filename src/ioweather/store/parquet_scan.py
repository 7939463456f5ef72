"""DuckDB over listed Parquet files: the connection and the table expression of every telemetry read.

Apart from telemetry_layout (which re-exports both) so that the side files it writes with each data
file (telemetry_rollup, telemetry_target_rollups) use them without importing the layout back.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar


def files_scan(paths) -> str:
    """A DuckDB table expression over an explicit list of Parquet files."""
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{quoted}], hive_partitioning = false, union_by_name = true)"


#: the DuckDB databases of the answer being computed (`one_database`), by (thread count, options),
#: with the process that opened them; None outside one: each connection its own database
_answer_dbs: ContextVar[dict | None] = ContextVar("ioweather_duckdb_databases", default=None)


@contextmanager
def one_database():
    """Every `connect_duckdb` of this thread inside shares one database per thread count and options,
    closed at the end. Opening a database takes 30–120 ms and `why` read the telemetry through four;
    a connection (`cursor()`) takes ~1 ms. Only for one answer: a database kept for a process keeps
    the memory of its largest query (a 30M-row aggregate: ~1 GB resident after five queries, 67 MB with
    a database per read), which a long-lived dashboard must not. Threads started inside do not share
    it (a context variable), so each of the dashboard's threads reads as before."""
    dbs: dict = {"pid": os.getpid()}
    token = _answer_dbs.set(dbs)
    try:
        yield
    finally:
        _answer_dbs.reset(token)
        for key, db in dbs.items():
            if key != "pid":
                db.close()


def connect_duckdb(threads: int | None = None, options: dict | None = None):
    """Every DuckDB connection of the store. Without its progress bar: DuckDB draws one on stdout for any
    query over 2 s (a loaded machine, a reader held up by an import), and it broke the `--json` of
    `workload`, `events` and the dashboard's readers (a CI run's JSONDecodeError). No statement runs with
    it on either: in a process DuckDB's Python client takes for interactive (its __main__ has no file:
    `python -c`, a REPL, Jupyter) the connection `duckdb.connect()` returns has the bar on, and the
    `SET enable_progress_bar = false` run on it was itself drawn when held up past 2 s (a reader stopped
    by SIGSTOP during an import: "\r100% ▕██…▏\n" among its JSON lines). So the store reads through a
    cursor of that connection, which DuckDB opens with the bar off, and runs nothing on the connection
    itself. `options`: settings of the whole database (memory_limit...), set when it opens.

    Inside `one_database`, a connection to that answer's database: each read still has its own
    connection, temporary and registered tables, and DuckDB caches no local file's contents by default
    (cache_local_files, parquet_metadata_cache), so a file rewritten in place is read anew. A forked
    child opens its own (a database's threads do not survive a fork)."""
    # lazy: duckdb (~0.1 s): only a scan needs it; the layout's writers import this module
    import duckdb

    dbs = _answer_dbs.get()
    if dbs is None or dbs["pid"] != os.getpid():
        return _configured(duckdb.connect().cursor(), threads, options)
    key = (int(threads or 0), tuple(sorted((options or {}).items())))
    if key not in dbs:
        dbs[key] = _configured(duckdb.connect().cursor(), threads, options)
    return dbs[key].cursor()


def _configured(con, threads: int | None, options: dict | None):
    """`con` (a cursor: the bar off from its start) with the database's settings; connect(config=) refuses
    the bar's, which are each connection's own."""
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    for name, value in (options or {}).items():
        con.execute(f"SET {name} = '{value}'")
    return con
