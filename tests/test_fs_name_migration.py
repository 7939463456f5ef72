"""The store's migration to one name per file system (issue 28 item 4), on stores written by the previous
schemas (probe v4: runs without a file system; bench v2: runs on a node's root filed under `root`), on
SQLite, PostgreSQL and MariaDB: what an upgraded store shows (docs/store.md)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.services.bench import runs as bench_svc
from ioweather.services.probe.targets import list_targets
from ioweather.store import bench as bstore
from ioweather.store import open_store
from ioweather.store import probe as probe_store

S = 10**9
DBS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres),
       pytest.param("mariadb", marks=pytest.mark.mariadb)]


def _url(request, db: str) -> str | None:
    return None if db == "sqlite" else request.getfixturevalue({"postgresql": "pg_url", "mariadb": "mariadb_url"}[db])


def _engine(home, url):
    return sa.create_engine(f"sqlite:///{home / 'ioweather.sqlite'}" if url is None else
                            url.replace("mysql://", "mysql+pymysql://", 1).replace("postgresql://", "postgresql+psycopg://", 1))


def _versions_table(conn, **versions):
    conn.execute(sa.text("create table schema_versions (component varchar(64) primary key, version integer "
                         "not null, updated_ns bigint not null)"))
    for name, v in versions.items():
        conn.execute(sa.text(f"insert into schema_versions values ('{name}', {v}, 0)"))


def _run(target: str, host: str, directory: str) -> dict:
    return {"target": target, "host": host, "directory": directory, "started_ns": 1, "interval_s": 1.0,
            "block_bytes": 1, "file_bytes": 1, "pool_files": 1, "small_bytes": 1, "direct": False, "fsync": False,
            "seed": 0, "timeout_s": 60.0, "file_exceeds_memory": False, "pid": 1, "version": "0"}


@pytest.mark.parametrize("db", DBS)
def test_a_probe_v4_store_gets_file_system_names(home, request, db):
    """Default labels HOST:MOUNT of the run's own host are named from their mount (`/`: the host's disk);
    a label the user chose names no mount and stays unnamed until the target runs again, when the run
    records its name."""
    home.mkdir(parents=True)
    url = _url(request, db)
    engine = _engine(home, url)
    md = sa.MetaData()
    # probe_runs as v4 created it (every column but fs); the other tables are unchanged since
    v4 = [sa.Table("probe_runs", md, *(sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
                                       for c in probe_store.probe_runs.columns if c.name != "fs"))]
    v4 += [t.to_metadata(md) for t in (probe_store.probe_samples, probe_store.probe_archive, probe_store.probe_pieces,
                                       probe_store.probe_retired)]
    with engine.begin() as conn:
        for t in v4:
            t.create(conn)
        _versions_table(conn, probe=4)
        conn.execute(v4[0].insert(), [_run("node1.site.org:/", "node1.site.org", "/home/u/probe"),
                                      _run("node1.site.org:/lus/scratch", "node1.site.org", "/lus/scratch/u/p"),
                                      _run("node1.site.org:/lus/scratch", "node1.site.org", "/lus/scratch/u/p"),
                                      _run("scratch", "node2", "/lus/scratch/v/p"),
                                      _run("node9:/gpfs", "node2", "/gpfs/p")])  # another host's label
    store = open_store(Settings.resolve(home, url))
    try:
        fs = {r.target: r.fs for r in list_targets(store).rows}
        assert store.versions()["probe"] == probe_store.COMPONENT.version == 6
        assert fs == {"node1.site.org:/": "node1", "node1.site.org:/lus/scratch": "scratch", "scratch": None,
                      "node9:/gpfs": None}
        info = probe_store.RunInfo(target="scratch", directory="/lus/scratch/v/p", interval_s=1, block_bytes=1,
                                   file_bytes=1, pool_files=1, small_bytes=1, direct=False, fsync=False, seed=0,
                                   timeout_s=60, file_exceeds_memory=False, host="node2", fs="lscratch")
        probe_store.start_run(store, info)
        assert {r.target: r.fs for r in list_targets(store).rows}["scratch"] == "lscratch"  # its newest run's
    finally:
        store.dispose()
    engine.dispose()


@pytest.mark.parametrize("db", DBS)
def test_a_bench_v2_store_renames_root(home, request, db):
    """`bench run` on a node's `/` filed its runs under `root`: they move to the host's short name, results
    and series aggregates with them; a run over a node list and an imported result named `root` stay."""
    home.mkdir(parents=True)
    url = _url(request, db)

    def run(i, fs, hosts, source="fio", motif="fpp-write", bw=1e9):
        return {"run_id": f"r{i}", "motif": motif, "fs": fs, "source": source, "hosts": hosts, "start_ns": i * S,
                "end_ns": i * S + S, "params": {}, "results": [{"direction": "write", "duration_s": 1e9 / bw,
                                                                 "bw_bps": bw}]}

    runs = [run(1, "root", "node1.site.org"), run(2, "root", "node1.site.org", bw=2e9),
            run(3, "root", "nid[001-002]"), run(4, "root", "node1", source="fio-import"),
            run(5, "node1", "node1", bw=4e9), run(6, "root", "node1.site.org", motif="metadata")]
    store = open_store(Settings.resolve(home, url))
    bstore.put_runs(store, runs)
    store.dispose()
    engine = _engine(home, url)
    with engine.begin() as conn:  # the tables are v2's (v3 changes rows only): the store as v2 left it
        conn.execute(sa.text("update schema_versions set version = 2 where component = 'bench'"))
    store = open_store(Settings.resolve(home, url))
    try:
        groups = {(g.motif, g.fs): g for g in bench_svc.summary(store)}
        assert store.versions()["bench"] == bstore.COMPONENT.version == 3
        with store.connect() as conn:
            by_run = dict(conn.execute(sa.select(bstore.bench_runs.c.run_id, bstore.bench_runs.c.fs)).all())
            results = dict(conn.execute(sa.select(bstore.bench_results.c.run_id, bstore.bench_results.c.fs)).all())
        assert by_run == {"r1": "node1", "r2": "node1", "r3": "root", "r4": "root", "r5": "node1", "r6": "node1"}
        assert results == by_run
        assert set(groups) == {("fpp-write", "node1"), ("fpp-write", "root"), ("metadata", "node1")}
        assert groups[("fpp-write", "node1")].runs == 3  # r1, r2 joined the run filed under node1
        assert groups[("fpp-write", "node1")].best_bps == 4e9
        assert groups[("fpp-write", "root")].runs == 2
    finally:
        store.dispose()
    engine.dispose()
