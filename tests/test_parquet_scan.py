"""store/parquet_scan.connect_duckdb inside one_database: one DuckDB database per thread count and
options for one answer, a connection per read (issue 40: each read opened its own database, 30–120 ms
apiece). What sharing must not change: a file rewritten in place is read anew, a connection's
temporary tables are its own, other threads and a forked child do not use it, and it is closed at
the end (a database kept for a process keeps the memory of its largest query)."""

from __future__ import annotations

import os
import threading

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ioweather.store import parquet_scan as ps


def _write(path, values):
    pq.write_table(pa.table({"v": values}), path)


def _db_of(con) -> str:
    # a table of the main schema is the database's: seen by every connection to it
    return con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'mark'").fetchone()[0]


def test_one_answer_shares_a_database_and_reads_a_rewritten_file_anew(tmp_path):
    f = tmp_path / "a.parquet"
    _write(f, [1, 2, 3])
    with ps.one_database():
        a, b = ps.connect_duckdb(threads=1), ps.connect_duckdb(threads=1)
        assert a.execute(f"SELECT sum(v) FROM {ps.files_scan([f])}").fetchone() == (6,)
        _write(f, [10, 20])  # same path, new contents: nothing cached across reads
        assert b.execute(f"SELECT sum(v) FROM {ps.files_scan([f])}").fetchone() == (30,)
        a.execute("CREATE TABLE mark AS SELECT 1 AS x")
        a.execute("CREATE TEMP TABLE mine AS SELECT 1 AS x")
        assert _db_of(b) == 1  # one database
        assert b.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'mine'").fetchone() == (0,)
        assert b.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
        other = ps.connect_duckdb()  # another thread count: another database
        limited = ps.connect_duckdb(threads=1, options={"memory_limit": "123MB"})
        assert _db_of(other) == 0 and _db_of(limited) == 0
        assert limited.execute("SELECT current_setting('memory_limit')").fetchone() == ("117.3 MiB",)
        assert a.execute("SELECT current_setting('memory_limit')").fetchone() != ("117.3 MiB",)
        seen = []
        t = threading.Thread(target=lambda: seen.append(_db_of(ps.connect_duckdb(threads=1))))
        t.start()
        t.join()
        assert seen == [0]  # a thread started inside reads through its own database
    with pytest.raises(duckdb.ConnectionException):
        a.execute("SELECT 1")  # closed with the answer
    outside = ps.connect_duckdb(threads=1)
    assert _db_of(outside) == 0 and outside.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)


def test_a_forked_child_opens_its_own_database(tmp_path):
    f = tmp_path / "a.parquet"
    _write(f, [1, 2, 3])
    with ps.one_database():
        ps.connect_duckdb().execute("CREATE TABLE mark AS SELECT 1 AS x")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: not the parent's database, and the read works
            ok = 0
            try:
                con = ps.connect_duckdb()
                ok = int(_db_of(con) == 0 and con.execute(f"SELECT sum(v) FROM {ps.files_scan([f])}").fetchone() == (6,))
            finally:
                os.write(w, str(ok).encode())
                os._exit(0)
        os.close(w)
        answer = os.read(r, 16)
        os.waitpid(pid, 0)
        os.close(r)
        assert answer == b"1"
        assert _db_of(ps.connect_duckdb()) == 1
