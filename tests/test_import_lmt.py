"""`import lmt`: real LMT databases (SQLite copies and the same data loaded into MariaDB), checked
against direct SQL over the counters and against pytokio's own conversion of the same data."""

from __future__ import annotations

import json
import shutil
import sqlite3

import h5py
import numpy as np
import pandas as pd
import pytest

from ioweather.services.telemetry.imports import import_one
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.store import telemetry_layout as layout

SNX = "lmt/snx11025_2018-01-28.sqlite3"
RESET = "lmt/lmtdb-reset.sqlite3"
LA = "America/Los_Angeles"


def do_import(settings, source, fs="snx", tz=LA, **kw):
    return import_one(settings, "lmt", str(source), fs, tz=tz, since_ns=kw.get("since_ns"),
                      until_ns=kw.get("until_ns"), interval=None, cumulative=False)


def sql_deltas(db: str, column: str) -> pd.DataFrame:
    """Per OST, straight from the database: sum of the increases between consecutive LMT timestamps,
    and the number of consecutive pairs that exist with a non-decreasing counter."""
    q = f"""
    WITH g AS (SELECT TS_ID, ROW_NUMBER() OVER (ORDER BY TS_ID) AS i FROM TIMESTAMP_INFO),
         d AS (SELECT o.OST_ID, g.i, o.{column} AS c FROM OST_DATA o JOIN g USING (TS_ID))
    SELECT n.OST_NAME AS target, SUM(CASE WHEN b.c >= a.c THEN b.c - a.c END) AS total,
           SUM(CASE WHEN b.c >= a.c THEN 1 ELSE 0 END) AS valid, SUM(CASE WHEN b.c < a.c THEN 1 ELSE 0 END) AS back
    FROM d a JOIN d b ON b.OST_ID = a.OST_ID AND b.i = a.i + 1 JOIN OST_INFO n ON n.OST_ID = a.OST_ID
    GROUP BY n.OST_NAME"""
    with sqlite3.connect(db) as c:
        out = pd.read_sql_query(q, c).set_index("target")
        n_ts = c.execute("SELECT COUNT(*) FROM TIMESTAMP_INFO").fetchone()[0]
    out["intervals"] = n_ts - 1
    return out


@pytest.mark.parametrize("db", [SNX, RESET])
@pytest.mark.parametrize("column,metric", [("READ_BYTES", "read_bytes"), ("WRITE_BYTES", "write_bytes")])
def test_totals_equal_direct_sql_sum_of_counter_deltas(testdata, home, db, column, metric):
    settings = Settings(home=home)
    summary = do_import(settings, testdata / db)
    ref = sql_deltas(str(testdata / db), column)
    df = layout.read_frame(settings, "snx", f"metric = '{metric}'")
    ours = df.groupby("target").agg(total=("value", "sum"), valid=("value", "count"), rows=("value", "size"))
    for target, r in ref.iterrows():
        assert ours.loc[target, "total"] == r.total, target
        assert ours.loc[target, "valid"] == r.valid, target          # every existing pair gives an amount
        assert ours.loc[target, "rows"] == r.intervals, target       # and every interval has a row
    assert not (df.value < 0).any()
    assert summary.missing_values >= int((ref.intervals - ref.valid).sum())


def test_reset_database_gap_and_restart_are_missing_never_negative(testdata, home):
    settings = Settings(home=home)
    do_import(settings, testdata / RESET)
    with sqlite3.connect(testdata / RESET) as c:
        ts = dict(c.execute("SELECT TS_ID, TIMESTAMP FROM TIMESTAMP_INFO").fetchall())
        before, after = c.execute(
            "SELECT a.READ_BYTES, b.READ_BYTES FROM OST_DATA a, OST_DATA b WHERE a.TS_ID = 16486106 AND b.TS_ID = 16486146"
        ).fetchone()
    assert after < before  # the server restarted during the gap: its counters began again at 0
    t = lambda ts_id: pd.Timestamp(ts[ts_id]).tz_localize(LA).tz_convert("UTC").value  # noqa: E731
    df = layout.read_frame(settings, "snx", "metric = 'read_bytes'").set_index("time_ns")["value"]
    gap = df.loc[t(16486106):t(16486145)]
    assert len(gap) == 40 and gap.isna().all()                    # 106 -> 146: 40 missing intervals
    assert df.loc[t(16486146)] == 0                                # after the restart: counted again
    assert df.loc[t(16486160)] == 62537728                         # 0 -> 62537728
    assert not (df < 0).any()


def test_parity_with_pytokio_hdf5_of_the_same_data(testdata, shared_data, home):
    settings = Settings(home=home)
    do_import(settings, testdata / SNX)
    ours = layout.read_frame(settings, "snx")
    f = h5py.File(shared_data / "tokio/snx11025_2018-01-28.hdf5", "r")

    def ref(path):
        ds = f[path]
        cols = [c.decode() for c in ds.attrs["columns"]]
        ts = f[path.rsplit("/", 1)[0] + "/timestamps"][:] * 1_000_000_000
        return pd.DataFrame(ds[:], index=ts, columns=cols)

    def mine(metric):
        return ours[ours.metric == metric].pivot(index="time_ns", columns="target", values="value")

    for path, metric in (("datatargets/readbytes", "read_bytes"), ("datatargets/writebytes", "write_bytes")):
        r, m = ref(path), mine(metric)
        assert list(r.index) == list(m.index)                      # same UTC, left-aligned timestamps
        assert (m[r.columns].to_numpy() == r.to_numpy()).all()      # same bytes per OST per interval
    r, m = ref("mdtargets/opens"), mine("md_open")
    assert (m["snx11025-MDT0000"].to_numpy() == r["snx11025n003"].to_numpy()).all()
    r, m = ref("dataservers/cpuload"), mine("cpu_pct")
    assert np.allclose(m.loc[r.index, r.columns].to_numpy(), r.to_numpy())
    used, total = ref("fullness/bytes"), ref("fullness/bytestotal")
    cap, free = mine("capacity_bytes"), mine("free_bytes")
    assert (cap.loc[total.index, total.columns].to_numpy() == total.to_numpy() * 1024).all()
    assert (free.loc[total.index, total.columns].to_numpy() == (total - used).to_numpy() * 1024).all()


def test_reimport_replaces_and_bad_databases_leave_nothing(testdata, home, tmp_path):
    settings = Settings(home=home)
    first = do_import(settings, testdata / SNX)
    second = do_import(settings, testdata / SNX)
    assert second.replaced_files == first.files and second.rows == first.rows
    assert len(layout.read_frame(settings, "snx")) == first.rows

    broken = tmp_path / "broken.sqlite3"
    shutil.copy(testdata / SNX, broken)
    with sqlite3.connect(broken) as c:
        c.execute("DROP TABLE OST_DATA")
    with pytest.raises(UserError, match="not an LMT database: missing table"):
        do_import(settings, broken, fs="other")
    notdb = tmp_path / "notes.txt"
    notdb.write_text("hello")
    with pytest.raises(UserError, match="not an SQLite database"):
        do_import(settings, notdb, fs="other")
    with pytest.raises(UserError, match="unknown time zone"):
        do_import(settings, testdata / SNX, fs="other", tz="Mars/Olympus")
    with pytest.raises(UserError, match="in the given time range"):
        do_import(settings, testdata / SNX, fs="other", since_ns=2_000_000_000 * 10**9)
    assert layout.list_fs(settings) == ["snx"]


def test_since_until_and_the_cli(cli, testdata, home):
    p = cli("import", "lmt", str(testdata / SNX), str(testdata / "lmt/none.sqlite3"), "--fs", "snx",
            "--timezone", LA, "--since", "2018-01-28T08:01:00Z", "--until", "2018-01-28T08:02:00Z", "--json", home=home)
    assert p.returncode == 2                                           # one of the two sources failed
    assert p.stderr.count("ioweather: error:") == 1 and "none.sqlite3" in p.stderr
    out = json.loads(p.stdout)
    ok = out["sources"][0]
    assert ok["start"] == "2018-01-28T08:01:00.000Z" and ok["end"] == "2018-01-28T08:02:00.000Z"
    assert ok["metrics"]["read_bytes"] == 24 * 12                      # 08:01:00 .. 08:01:55, 24 OSTs
    assert "error" in out["sources"][1]


LMT_DDL = [  # LMT's create_schema-1.1.sql, the tables an import reads
    "CREATE TABLE FILESYSTEM_INFO (FILESYSTEM_ID integer not null auto_increment, FILESYSTEM_NAME varchar(128) not null,"
    " FILESYSTEM_MOUNT_NAME varchar(64) not null, SCHEMA_VERSION float not null, primary key (FILESYSTEM_ID))",
    "CREATE TABLE OSS_INFO (OSS_ID integer not null auto_increment, FILESYSTEM_ID integer not null,"
    " HOSTNAME varchar(128) not null, FAILOVERHOST varchar(128), primary key (OSS_ID))",
    "CREATE TABLE OST_INFO (OST_ID integer not null auto_increment, OSS_ID integer not null, OST_NAME varchar(128) not null,"
    " HOSTNAME varchar(128) not null, OFFLINE boolean, DEVICE_NAME varchar(128), primary key (OST_ID))",
    "CREATE TABLE MDS_INFO (MDS_ID integer not null auto_increment, FILESYSTEM_ID integer not null,"
    " MDS_NAME varchar(128) not null, HOSTNAME varchar(128) not null, DEVICE_NAME varchar(128), primary key (MDS_ID))",
    "CREATE TABLE OPERATION_INFO (OPERATION_ID integer not null auto_increment, OPERATION_NAME varchar(64) not null unique,"
    " UNITS varchar(16) not null, primary key (OPERATION_ID))",
    "CREATE TABLE TIMESTAMP_INFO (TS_ID int unsigned not null auto_increment, TIMESTAMP datetime not null,"
    " primary key (TS_ID), key (TIMESTAMP))",
    "CREATE TABLE OST_DATA (OST_ID integer not null, TS_ID int unsigned not null, READ_BYTES bigint, WRITE_BYTES bigint,"
    " PCT_CPU float, KBYTES_FREE bigint, KBYTES_USED bigint, INODES_FREE bigint, INODES_USED bigint,"
    " primary key (OST_ID, TS_ID), index (TS_ID))",
    "CREATE TABLE OSS_DATA (OSS_ID integer not null, TS_ID int unsigned not null, PCT_CPU float, PCT_MEMORY float,"
    " primary key (OSS_ID, TS_ID), index (TS_ID))",
    "CREATE TABLE MDS_DATA (MDS_ID integer not null, TS_ID int unsigned not null, PCT_CPU float, KBYTES_FREE bigint,"
    " KBYTES_USED bigint, INODES_FREE bigint, INODES_USED bigint, primary key (MDS_ID, TS_ID), index (TS_ID))",
    "CREATE TABLE MDS_OPS_DATA (MDS_ID integer not null, TS_ID int unsigned not null, OPERATION_ID integer not null,"
    " SAMPLES bigint, SUM bigint, SUMSQUARES bigint, index (TS_ID))",
]


def load_into_mariadb(url: str, sqlite_path) -> None:
    import pymysql

    db = url.rsplit("/", 1)[1]
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", database=db, autocommit=True)
    src = sqlite3.connect(sqlite_path)
    try:
        with conn.cursor() as cur:
            for ddl in LMT_DDL:
                cur.execute(ddl)
                table = ddl.split()[2]
                cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
                rows = src.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
                if rows:
                    marks = ", ".join(["%s"] * len(cols))
                    cur.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({marks})", rows)
    finally:
        src.close()
        conn.close()


@pytest.mark.mariadb
@pytest.mark.parametrize("db", [SNX, RESET])
def test_mysql_path_gives_the_same_rows_as_the_sqlite_copy(testdata, tmp_path, mariadb_url, db):
    load_into_mariadb(mariadb_url, testdata / db)
    a, b, c = (Settings(home=tmp_path / n) for n in ("sqlite", "mysql", "mysql_server_zone"))
    do_import(a, testdata / db)
    do_import(b, mariadb_url)
    fa, fb = layout.read_frame(a, "snx"), layout.read_frame(b, "snx")
    pd.testing.assert_frame_equal(fa, fb)
    # without --timezone the MySQL server's own zone converts (UTC on this machine)
    do_import(c, mariadb_url, tz=None)
    fc = layout.read_frame(c, "snx")
    shift = (fc.time_ns.min() - fa.time_ns.min()) / 3.6e12
    assert shift in (-7.0, -8.0)  # Los Angeles is 7 or 8 hours behind UTC


@pytest.mark.mariadb
def test_mysql_wrong_credentials_and_missing_database(mariadb_url, home):
    settings = Settings(home=home)
    base = mariadb_url.rsplit("/", 1)[0]
    with pytest.raises(UserError, match="Access denied") as e:
        do_import(settings, base.replace("root@", "lmt_reader:secret@") + "/" + mariadb_url.rsplit("/", 1)[1])
    assert "secret" not in str(e.value)                                # never echo a password
    with pytest.raises(UserError, match="not an LMT database"):
        do_import(settings, mariadb_url)                               # an empty database
    with pytest.raises(UserError, match="Unknown database"):
        do_import(settings, base + "/no_such_lmt_db")
    assert layout.list_fs(settings) == []


def test_a_counter_no_int64_holds_is_missing_and_noted_never_wrapped(testdata, home, tmp_path):
    """A BIGINT UNSIGNED above 2^63 - 1 (SQLite keeps it as REAL) is no byte count LMT wrote: the
    two intervals around it are missing, everything else equals the untouched database's import."""
    db = tmp_path / "big.sqlite3"
    shutil.copy(testdata / SNX, db)
    with sqlite3.connect(db) as c:
        ost, ts_id = c.execute("SELECT OST_ID, TS_ID FROM OST_DATA ORDER BY TS_ID LIMIT 1 OFFSET 500").fetchone()
        c.execute("UPDATE OST_DATA SET READ_BYTES = ? WHERE OST_ID = ? AND TS_ID = ?", (float(2 ** 64 - 1), ost, ts_id))
        name = c.execute("SELECT OST_NAME FROM OST_INFO WHERE OST_ID = ?", (ost,)).fetchone()[0]
    clean, big = Settings(home=home / "clean"), Settings(home=home / "big")
    do_import(clean, testdata / SNX)
    summary = do_import(big, db)
    assert any("no 64-bit integer holds" in n and n.startswith("1 ") for n in summary.notes)
    a = layout.read_frame(clean, "snx", "metric = 'read_bytes'").set_index(["target", "time_ns"])["value"]
    b = layout.read_frame(big, "snx", "metric = 'read_bytes'").set_index(["target", "time_ns"])["value"]
    assert b.index.equals(a.index) and (b.dropna() >= 0).all() and b.max() <= a.max()
    changed = ~((a == b) | (a.isna() & b.isna()))
    assert changed.sum() == 2 and set(changed[changed].index.get_level_values(0)) == {name}
    assert b[changed].isna().all()
