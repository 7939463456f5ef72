"""`bench summary` from the aggregates the store keeps per series (bench_groups, refreshed on write) against
the whole history summarized in memory (`stats.bench.summarize`, checked itself against numpy and seed
004's Table 2 in test_bench.py): random histories with ties, NaN and missing bandwidths, zero durations,
runs replaced into another series; on SQLite, PostgreSQL and MariaDB; and a v1 database upgraded."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.services.bench import runs as svc
from ioweather.stats import bench as sb
from ioweather.store import bench as bstore
from ioweather.store import open_store

S = 10**9
COLS = ["motif", "direction", "fs", "start_ns", "duration_s", "bw_bps"]


def history(seed: int, n: int) -> list[dict]:
    """`n` runs over 3 motifs x 2 file systems; metadata runs carry three directions. Some start at the
    same second (ties broken by run id), some have no or a NaN bandwidth, some a zero duration."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        motif = str(rng.choice(["fpp-write", "fpp-read", "metadata"]))
        dirs = ["create", "stat", "delete"] if motif == "metadata" else [motif.split("-")[1]]
        start = int(rng.integers(0, n // 3)) * 3600 * S  # ~3 runs per start time: ties
        res = []
        for d in dirs:
            dur = float(rng.gamma(2.0, 3.0)) if rng.random() > 0.03 else 0.0
            bw = float(1e9 / max(dur, 0.1) * rng.uniform(0.5, 1.0))
            u = rng.random()
            res.append({"direction": d, "bytes": 10**9, "duration_s": dur,
                        "bw_bps": None if u < 0.03 else float("nan") if u < 0.05 else bw})
        runs.append({"run_id": f"r{i:05d}", "motif": motif, "fs": str(rng.choice(["scratch", "home"])),
                     "source": "fio", "start_ns": start, "end_ns": start + 10 * S, "params": {}, "results": res})
    return runs


def _summary(store, *args, **kwargs) -> list[dict]:
    """The service's rows as their JSON, to compare with the reference's dicts."""
    return [r.to_json() for r in svc.summary(store, *args, **kwargs)]


def reference(store, last: int, threshold: float) -> list[dict]:
    df = bstore.results_frame(store, columns=COLS)
    rows = sb.summarize(df, k=last, threshold=threshold)
    for r in rows:
        r.pop("last_start_ns")
    return rows


def assert_same(got: list[dict], want: list[dict]) -> None:
    assert [(r["motif"], r["direction"], r["fs"]) for r in got] == [(r["motif"], r["direction"], r["fs"]) for r in want]
    for g, w in zip(got, want):
        for k, v in w.items():
            if isinstance(v, float):
                assert g[k] == pytest.approx(v, rel=1e-9), (k, g, w)
            elif isinstance(v, list):
                assert len(g[k]) == len(v) and all(a == b if b is None else a == pytest.approx(b, rel=1e-12)
                                                   for a, b in zip(g[k], v)), (k, g, w)
            else:
                assert g[k] == v, (k, g, w)


def check_store(store) -> None:
    runs = history(7, 600)
    bstore.put_runs(store, runs[:400])
    bstore.put_runs(store, runs[400:])
    # replaced: the same ids in another series (other fs and motif) and with other numbers
    moved = [{**r, "fs": "work", "motif": "fpp-write",
              "results": [{"direction": "write", "duration_s": 2.0 + i, "bw_bps": 5e8 / (i + 1)}]}
             for i, r in enumerate(runs[:30])]
    bstore.put_runs(store, moved)
    for last, threshold in ((1, 0.5), (3, 0.9), (50, 0.99)):
        assert_same(_summary(store, last=last, threshold=threshold), reference(store, last, threshold))
    got = _summary(store, motif="fpp-write", fs="work")
    assert [r["runs"] for r in got] == [30]
    # a series left by all its runs is gone from the summary
    bstore.put_runs(store, [{**r, "fs": "home"} for r in moved])
    assert not [r for r in _summary(store) if r["fs"] == "work"]
    assert_same(_summary(store), reference(store, 3, 0.5))


def test_summary_from_aggregates_equals_the_whole_history_sqlite(home):
    check_store(open_store(Settings.resolve(home)))


def test_summary_from_aggregates_equals_the_whole_history_postgresql(home, pg_url):
    store = open_store(Settings.resolve(home, pg_url))
    try:
        check_store(store)
    finally:
        store.dispose()


def test_summary_from_aggregates_equals_the_whole_history_mariadb(home, mariadb_url):
    store = open_store(Settings.resolve(home, mariadb_url))
    try:
        check_store(store)
    finally:
        store.dispose()


def test_nan_is_stored_as_missing_and_a_non_finite_duration_refused(home):
    store = open_store(Settings.resolve(home))
    run = {"run_id": "a", "motif": "m", "fs": "f", "source": "fio", "start_ns": 0, "end_ns": S, "params": {},
           "results": [{"direction": "write", "duration_s": 1.0, "bw_bps": float("inf"), "iops": float("nan")}]}
    bstore.put_runs(store, [run])
    with sqlite3.connect(home / "ioweather.sqlite") as c:
        assert c.execute("select bw_bps, iops from bench_results").fetchall() == [(None, None)]
    [row] = _summary(store)
    assert row["best_bps"] is None and row["last_fraction_of_peak"] is None and row["last_standing"] is None
    from ioweather.errors import UserError

    bad = {**run, "run_id": "b", "results": [{"direction": "write", "duration_s": float("nan")}]}
    with pytest.raises(UserError, match="no finite duration"):
        bstore.put_runs(store, [bad])
    assert _summary(store)[0]["runs"] == 1  # nothing of the refused batch stored


def v1_tables(md: sa.MetaData) -> tuple[sa.Table, sa.Table]:
    """bench_runs and bench_results as schema v1 created them (sa.Float; no motif, fs, start in results)."""
    runs = bstore.bench_runs.to_metadata(md)
    results = sa.Table("bench_results", md,
                       sa.Column("run_id", sa.String(160), primary_key=True),
                       sa.Column("direction", sa.String(32), primary_key=True),
                       sa.Column("bytes", sa.BigInteger), sa.Column("duration_s", sa.Float, nullable=False),
                       *(sa.Column(c, sa.Float) for c in ("bw_bps", "iops", "lat_p50_s", "lat_p95_s", "lat_p99_s")))
    return runs, results


@pytest.mark.parametrize("db", ["sqlite", "postgresql", "mariadb"])
def test_a_v1_database_is_upgraded(home, request, db):
    """A store written by the first bench schema (results without motif, fs, start; no bench_groups;
    4-byte FLOATs on MariaDB; NaN bandwidths kept as NaN on PostgreSQL) gets the columns, the indexes,
    the aggregates, doubles and NULLs, and summarizes as the whole history does."""
    home.mkdir(parents=True)
    url = {"sqlite": None, "postgresql": "pg_url", "mariadb": "mariadb_url"}[db]
    url = url and request.getfixturevalue(url)
    engine = sa.create_engine(f"sqlite:///{home / 'ioweather.sqlite'}" if url is None else
                              url.replace("mysql://", "mysql+pymysql://", 1).replace("postgresql://", "postgresql+psycopg://", 1))
    keep = (lambda v: v) if db == "postgresql" else bstore._clean  # MariaDB refuses NaN; SQLite makes it NULL
    v1_runs, v1_results = v1_tables(sa.MetaData())
    runs = history(3, 200)
    with engine.begin() as conn:
        v1_runs.create(conn)
        v1_results.create(conn)
        conn.execute(sa.text("create table schema_versions (component varchar(64) primary key, version integer "
                             "not null, updated_ns bigint not null)"))
        conn.execute(sa.text("insert into schema_versions values ('bench', 1, 0)"))
        conn.execute(v1_runs.insert(), [{**{c.name: r.get(c.name) for c in v1_runs.columns}, "params": "{}",
                                         "stored_ns": 0} for r in runs])
        conn.execute(v1_results.insert(), [{"run_id": r["run_id"], **{c: keep(x.get(c)) for c in bstore.RESULT_COLUMNS}}
                                           for r in runs for x in r["results"]])
        if db == "postgresql":
            assert conn.execute(sa.text("select count(*) from bench_results where bw_bps = 'NaN'::float8")).scalar() > 0
        before = conn.execute(sa.text("select count(*) from bench_results")).scalar()

    store = open_store(Settings.resolve(home, url))
    try:
        rows = _summary(store)
        assert store.versions()["bench"] == bstore.COMPONENT.version
        assert_same(rows, reference(store, 3, 0.5))
        precise = 1.2345678901234567
        bstore.put_runs(store, [{"run_id": "new", "motif": "m", "fs": "f", "source": "fio", "start_ns": 0,
                                 "end_ns": S, "params": {},
                                 "results": [{"direction": "write", "duration_s": precise, "bw_bps": 1e9 / precise}]}])
        assert _summary(store, motif="m")[0]["optimum_s"] == precise  # double precision now
    finally:
        store.dispose()
    with engine.connect() as conn:
        q = lambda sql: conn.execute(sa.text(sql)).scalar()  # noqa: E731
        assert q("select count(*) from bench_results where motif is null or fs is null or start_ns is null") == 0
        assert q("select count(*) from bench_results") == before + 1
        names = {ix["name"] for ix in sa.inspect(conn).get_indexes("bench_results")}
        assert {"bench_results_series", "bench_results_series_bw"} <= names
        if db == "sqlite":
            plan = " ".join(str(r) for r in conn.execute(sa.text(
                "explain query plan select start_ns from bench_results where motif='fpp-read' and direction='read' "
                "and fs='home' order by start_ns desc, run_id desc limit 3")))
            assert "bench_results_series" in plan and "TEMP B-TREE" not in plan  # an index range, no sort
    engine.dispose()


def concurrent_writers(store, writers: int = 3, each: int = 15) -> None:
    """`writers` threads store runs of one series at once (runs on several nodes of one file system, as
    Slurm starts them); afterwards the series' aggregates count every run."""
    import threading

    errors = []

    def write(w):
        try:
            for i in range(each):
                start = (i * writers + w) * S
                bstore.put_runs(store, [{"run_id": f"w{w}-{i}", "motif": "fpp-write", "fs": "scratch", "source": "fio",
                                         "start_ns": start, "end_ns": start + S, "params": {},
                                         "results": [{"direction": "write", "duration_s": 1.0 + w + i / 100,
                                                      "bw_bps": 1e9 / (1.0 + w + i / 100)}]}])
        except Exception as e:  # reported below: a writer that failed must fail the test
            errors.append(repr(e))

    store.require(bstore.COMPONENT)
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    [row] = _summary(store)
    assert row["runs"] == writers * each
    assert_same([row], reference(store, 3, 0.5))


def test_concurrent_writers_of_one_series_sqlite(home):
    concurrent_writers(open_store(Settings.resolve(home)))


def test_concurrent_writers_of_one_series_postgresql(home, pg_url):
    store = open_store(Settings.resolve(home, pg_url))
    try:
        concurrent_writers(store)
    finally:
        store.dispose()


def test_concurrent_writers_of_one_series_mariadb(home, mariadb_url):
    store = open_store(Settings.resolve(home, mariadb_url))
    try:
        concurrent_writers(store)
    finally:
        store.dispose()
