"""store/parquet_scan.connect_duckdb: one DuckDB database per process, thread count and options, a connection
per read (issue 40: each read opened its own database, 30–120 ms apiece). What sharing must not
change: a file rewritten in place is read anew, a connection's temporary tables are its own, threads
read at once, a forked child does not use its parent's database."""

from __future__ import annotations

import os
import threading

import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.store import parquet_scan as ps


def _write(path, values):
    pq.write_table(pa.table({"v": values}), path)


def test_connections_share_one_database_per_thread_count_and_read_a_rewritten_file_anew(tmp_path):
    f = tmp_path / "a.parquet"
    _write(f, [1, 2, 3])
    a, b = ps.connect_duckdb(threads=1), ps.connect_duckdb(threads=1)
    try:
        assert a.execute(f"SELECT sum(v) FROM {ps.files_scan([f])}").fetchone() == (6,)
        _write(f, [10, 20])  # same path, new contents: nothing cached across reads
        assert b.execute(f"SELECT sum(v) FROM {ps.files_scan([f])}").fetchone() == (30,)
        # one database: a table of its main schema is seen by both connections; temporary ones are not
        a.execute("CREATE TEMP TABLE mine AS SELECT 1 AS x")
        assert b.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'mine'").fetchone() == (0,)
        assert a.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'mine'").fetchone() == (1,)
        assert a.execute("SELECT current_setting('threads')").fetchone() == (1,)
        assert b.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    finally:
        a.close()
        b.close()
    one = ps._shared[(1, ())]
    c = ps.connect_duckdb(threads=1)
    c.close()
    assert ps._shared[(1, ())] is one  # closing a connection leaves the database open for the next read
    # database-wide options are a database's own: a reader that names them gets that database
    limited = ps.connect_duckdb(threads=1, options={"memory_limit": "123MB"})
    plain = ps.connect_duckdb(threads=1)
    try:
        assert limited.execute("SELECT current_setting('memory_limit')").fetchone() == ("117.3 MiB",)
        assert plain.execute("SELECT current_setting('memory_limit')").fetchone() != ("117.3 MiB",)
    finally:
        limited.close()
        plain.close()


def test_threads_read_at_once_each_with_its_connection(tmp_path):
    files = []
    for k in range(4):
        files.append(tmp_path / f"{k}.parquet")
        _write(files[-1], list(range(k * 1000, (k + 1) * 1000)))
    got, errors = {}, []

    def read(k):
        try:
            for _ in range(20):
                con = ps.connect_duckdb()
                try:
                    got[k] = con.execute(f"SELECT sum(v) FROM {ps.files_scan([files[k]])}").fetchone()[0]
                finally:
                    con.close()
        except Exception as e:  # noqa: BLE001 (reported below, with the thread's file)
            errors.append((k, e))

    ts = [threading.Thread(target=read, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    assert got == {k: sum(range(k * 1000, (k + 1) * 1000)) for k in range(4)}


def test_a_forked_child_opens_its_own_database(tmp_path):
    f = tmp_path / "a.parquet"
    _write(f, [1, 2, 3])
    ps.connect_duckdb().close()
    parent = ps._shared[(0, ())]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a fresh database, and the read works
        ok = 0
        try:
            con = ps.connect_duckdb()
            ok = int(ps._shared[(0, ())] is not parent and
                     con.execute(f"SELECT sum(v) FROM {ps.files_scan([f])}").fetchone() == (6,))
        finally:
            os.write(w, str(ok).encode())
            os._exit(0)
    os.close(w)
    answer = os.read(r, 16)
    os.waitpid(pid, 0)
    os.close(r)
    assert answer == b"1"
    assert ps._shared[(0, ())] is parent
