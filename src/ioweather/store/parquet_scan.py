"""DuckDB over listed Parquet files: the connection and the table expression of every telemetry read.

Apart from telemetry_layout (which re-exports both) so that the side files it writes with each data
file (telemetry_rollup, telemetry_target_rollups) use them without importing the layout back.
"""

from __future__ import annotations


def files_scan(paths) -> str:
    """A DuckDB table expression over an explicit list of Parquet files."""
    quoted = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    return f"read_parquet([{quoted}], hive_partitioning = false, union_by_name = true)"


def connect_duckdb(threads: int | None = None):
    """Every DuckDB connection of the store. Without its progress bar: DuckDB draws one on stdout for any
    query over 2 s (a loaded machine, a reader held up by an import), and it broke the `--json` of
    `workload`, `events` and the dashboard's readers (a CI run's JSONDecodeError)."""
    # lazy: duckdb (~0.1 s): only a scan needs it; the layout's writers import this module
    import duckdb

    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")  # session options: connect(config=) refuses them
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return con
