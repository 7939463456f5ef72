"""Dask for real (services/runtime/distributed.py): `jobs ingest --dask` on a LocalCluster of worker processes
and on dask_jobqueue's SLURMCluster over the real one-node Slurm (tests/slurm_cluster.py) stores
exactly what the local pool stores; a worker killed with SIGKILL mid-run costs a retry, never a
lost or doubled log; a task that kills every worker it runs on is recorded as crashed; bad
clusters are one line and leave no store."""

from __future__ import annotations

import faulthandler
import json
import os
import sqlite3
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from darshan_support import need_darshan_logs  # noqa: F401 (autouse fixture)
from dask_kill import kill_a_busy_worker

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (pip install -e '.[test]')")

from dask.distributed import Client, LocalCluster
from test_jobs_ingest import make_archive

#: Row ids, times of the ingest and the random names of Parquet parts differ between any two ingests.
VOLATILE = {"id", "ingested_ns", "failed_ns", "files_part"}


def stored(home) -> dict:
    """Everything an ingest leaves, read without ioweather: job rows by hash, failures by path, file rows."""
    con = sqlite3.connect(home / "ioweather.sqlite")
    con.row_factory = sqlite3.Row
    try:
        jobs = {r["log_hash"]: {k: v for k, v in dict(r).items() if k not in VOLATILE} for r in con.execute("SELECT * FROM darshan_jobs")}
        failed = {r["path"]: {k: v for k, v in dict(r).items() if k not in VOLATILE}
                  for r in con.execute("SELECT * FROM darshan_failed_logs")}
    finally:
        con.close()
    return {"jobs": jobs, "failed": failed, "files": sorted(file_rows(home), key=repr)}


def file_rows(home) -> list[tuple]:
    """Every per-file row in the Parquet parts, read part by part (a column all null in one part is typed null)."""
    rows = []
    for part in sorted((home / "parquet" / "jobs").glob("*.parquet")):
        t = pq.read_table(part)
        rows += zip(*(t.column(c).to_pylist() for c in sorted(t.column_names)))
    return rows


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("archive")
    make_archive(root, n_copies=60, broken=True)
    return root


@pytest.fixture(scope="module")
def local_result(archive, tmp_path_factory):
    """The reference: the same archive ingested by the local pool (2 processes)."""
    home = tmp_path_factory.mktemp("local-home")
    p = subprocess.run([sys.executable, "-m", "ioweather", "jobs", "ingest", str(archive), "--workers", "2", "--json"],
                       env={**os.environ, "IOWEATHER_HOME": str(home)}, capture_output=True, text=True, timeout=600,
                       check=False)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout), stored(home)


@pytest.fixture(scope="module")
def local_cluster():
    """Shared by the tests whose poison kills worker after worker: its nannies are kept (KEEP_NANNIES),
    as `--dask local:N` keeps its own."""
    import dask

    from ioweather.services.runtime.distributed import KEEP_NANNIES

    with dask.config.set(KEEP_NANNIES), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster


def _files_dir_exists(home) -> bool:
    return (home / "parquet" / "jobs").exists()


def test_local_cluster_stores_exactly_the_local_answer(cli, home, archive, local_result, local_cluster):
    r = cli("jobs", "ingest", str(archive), "--dask", local_cluster.scheduler_address, "--json", home=home)
    assert r.returncode == 0, r.stderr
    want_counts, want = local_result
    assert json.loads(r.stdout) == want_counts
    got = stored(home)
    assert want_counts["ingested"] == len(want["jobs"]) > 60 and want_counts["failed"] == len(want["failed"]) == 4
    assert got["jobs"] == want["jobs"]
    assert got["failed"] == want["failed"]
    assert got["files"] == want["files"]


def test_local_spec_starts_its_own_cluster(cli, home, archive, local_result):
    r = cli("jobs", "ingest", str(archive), "--dask", "local:2", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == local_result[0]
    assert stored(home)["jobs"] == local_result[1]["jobs"]


def test_killed_worker_costs_a_retry_not_a_log(cli, home, tmp_path, local_result):
    """kill -9 of a worker process while it holds tasks: the scheduler re-runs them, every log is stored once."""
    root = tmp_path / "many"
    make_archive(root, n_copies=120, broken=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as watcher:
        t, killed = kill_a_busy_worker(watcher, min_tasks=2, poll_s=0.05)
        r = cli("jobs", "ingest", str(root), "--dask", cluster.scheduler_address, "--json", home=home)
        t.join()
        assert killed and killed["tasks"] >= 1, "the worker was never seen holding a task"
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        got = stored(home)
        # an independent count: distinct contents among the files written
        logs = [p for p in root.rglob("*.darshan")]
        distinct = {p.read_bytes() for p in logs}
        assert out["ingested"] == len(got["jobs"]) == len(distinct) and out["failed"] == 0 and not got["failed"]
        assert out["duplicates"] == len(logs) - len(distinct)
        con = sqlite3.connect(home / "ioweather.sqlite")
        try:
            paths = [r[0] for r in con.execute("SELECT path FROM darshan_jobs")]
        finally:
            con.close()
        assert len(paths) == len(set(paths))
        # each log's file rows once: a retried task must not have written its rows twice
        keys = [(r[0], r[1], r[2]) for r in _file_keys(home)]
        assert len(keys) == len(set(keys))
        assert {k[0] for k in keys} <= got["jobs"].keys()
        assert {h for h, j in got["jobs"].items() if j["files"]} <= {k[0] for k in keys}


def _file_keys(home):
    for part in (home / "parquet" / "jobs").glob("*.parquet"):
        t = pq.read_table(part, columns=["log_hash", "module", "record_id"])
        yield from zip(*(t.column(c).to_pylist() for c in ("log_hash", "module", "record_id")))


def _abort_on_poison(item):
    if item == "poison":
        faulthandler.disable()
        os.abort()  # what libdarshan-util does on some damaged logs: the worker process dies
    return item.upper()


def test_task_that_kills_its_workers_is_reported_as_crashed(local_cluster):
    import cloudpickle

    from ioweather.services.runtime.distributed import map_unordered

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers do not have tests/ on their path
    items = [f"log{i}" for i in range(30)] + ["poison"] + [f"log{i}" for i in range(30, 50)]
    results, crashed = {}, {}
    with Client(local_cluster) as client:
        map_unordered(client, _abort_on_poison, items, results.__setitem__, crashed.__setitem__,
                      crash_reason="crashed")
    assert crashed == {"poison": "crashed"}
    assert results == {i: i.upper() for i in items if i != "poison"}


def test_poison_inside_a_batch_is_the_only_crash(local_cluster):
    """A task of 8 items, one of which kills its worker: that item alone is reported crashed, the
    other 7 (and every other task's items) are delivered, each exactly once."""
    import cloudpickle

    from ioweather.services.runtime.distributed import map_unordered

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    items = [f"log{i}" for i in range(13)] + ["poison"] + [f"log{i}" for i in range(13, 40)]
    delivered, crashed = [], []
    with Client(local_cluster) as client:
        map_unordered(client, _abort_on_poison, items, lambda item, res: delivered.append((item, res)),
                      lambda item, why: crashed.append(item), per_task=8)
    assert crashed == ["poison"]
    assert sorted(delivered) == sorted((i, i.upper()) for i in items if i != "poison")


def _abort_on_poison_shared(item, suffix):
    return _abort_on_poison(item) + suffix


def _abort_once(item, marker):
    if item == "die" and not os.path.exists(marker):
        open(marker, "w").close()
        faulthandler.disable()
        os.abort()
    return item.upper()


def test_shared_kwargs_lost_with_their_only_worker_cost_a_retry(tmp_path):
    """One worker holds the only replica of the scattered kwargs (as the Active Memory Manager leaves a
    broadcast within 2 s): its death makes the scheduler forget every task needing them ("already
    forgotten"). They are submitted again with the kwargs scattered again; each item delivered once."""
    import cloudpickle

    from ioweather.services.runtime.distributed import connect, map_unordered

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    marker = tmp_path / "died"
    items = [f"log{i}" for i in range(6)] + ["die"] + [f"log{i}" for i in range(6, 12)]
    delivered, crashed = [], []
    with connect("local:1") as client:
        map_unordered(client, _abort_once, items, lambda item, res: delivered.append((item, res)),
                      lambda item, why: crashed.append(item), kwargs={"marker": str(marker)}, shared=("marker",))
    assert marker.exists() and not crashed
    assert sorted(delivered) == sorted((i, i.upper()) for i in items)


def test_poison_losing_the_shared_kwargs_each_time_is_a_crash_not_a_loop():
    """On one worker a log that kills it loses the scattered kwargs at each death: its task is forgotten
    (a new key each time), never KilledWorker. Submitted again only as often as allowed-failures lets a
    task be killed (1 here), then run alone as often and handed to on_crash; the rest delivered once."""
    import cloudpickle
    import dask

    from ioweather.services.runtime.distributed import connect, map_unordered

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    items = [f"log{i}" for i in range(6)] + ["poison"] + [f"log{i}" for i in range(6, 10)]
    delivered, crashed = [], []
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), connect("local:1") as client:
        map_unordered(client, _abort_on_poison_shared, items, lambda item, res: delivered.append((item, res)),
                      lambda item, why: crashed.append(item), kwargs={"suffix": "!"}, shared=("suffix",))
    assert crashed == ["poison"]
    assert sorted(delivered) == sorted((i, i.upper() + "!") for i in items if i != "poison")


def test_batch_size_follows_the_work_measured_on_the_workers():
    from ioweather.services.runtime import distributed as D

    assert D.batch_size(None) == 1  # nothing measured yet: one item
    assert D.batch_size(D.TASK_SECONDS / 7.5) == 7  # ~0.5 s of work, rounded down
    assert D.batch_size(D.TASK_SECONDS * 3) == 1  # a slow item still goes
    assert D.batch_size(1e-6) == D.MAX_PER_TASK and D.batch_size(0.0) == D.MAX_PER_TASK
    assert D.batch_size(1e-6, cap=5) == 5
    sizer = D._Sizer("auto")
    assert not sizer.measured and sizer.next() == 1
    sizer.record(0.0, 0)  # a worker's first call (its imports) is not a measure
    assert not sizer.measured and sizer.next() == 1
    for _ in range(5):
        sizer.record(0.1, 2)  # 50 ms an item
    sizer.record(30.0, 1)  # one huge log does not steer the median
    assert sizer.next() == 10
    assert D._Sizer(8).next() == 8 and D._Sizer(8).measured
    for bad in (0, -1, "many", 1.5):
        with pytest.raises(ValueError):
            D._Sizer(bad)


def test_a_workers_first_call_is_not_timed():
    from ioweather import __version__
    from ioweather.services.runtime.distributed import _task

    def twice(x):
        return 2 * x

    assert _task(twice, [1], __version__, {}) == ([2], 0.0, 0)
    out, spent, timed = _task(twice, [1, 2, 3], __version__, {})
    assert out == [2, 4, 6] and timed == 3 and spent >= 0


def test_clusters_we_start_run_without_the_stack_profiler():
    from ioweather.services.runtime.distributed import _NO_PROFILER_ENV, connect

    with connect("local:1") as client:
        assert not any(client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks).values())
    # a Slurm worker is a fresh Python started by sbatch: told by its job script's environment
    import dask

    name, value = _NO_PROFILER_ENV.removeprefix("export ").split("=")
    assert dask.config.collect_env({name: value}) == {"distributed": {"worker": {"profile": {"enabled": False}}}}


#: Dask retries a refused connection until the client's timeout runs out (CONNECT_TIMEOUT_S, 15 s): the
#: command runs with 1 s, its code and its answer otherwise the same, to be refused in a second, not fifteen.
_SHORT_CONNECT = ("import sys\nimport ioweather.services.runtime.distributed as d\nd.CONNECT_TIMEOUT_S = 1\n"
                  "from ioweather.cli import main\nsys.argv[0] = 'ioweather'\nmain()\n")


def run_refused(*args: str, home) -> subprocess.CompletedProcess:
    """`python -m ioweather ARGS` in a process, a scheduler given by address given up on after 1 s."""
    from conftest import cli_env

    return subprocess.run([sys.executable, "-c", _SHORT_CONNECT, *args], capture_output=True, text=True,
                          env=cli_env(home, None), timeout=120)


def test_unreachable_scheduler_is_one_line_and_no_store(home, archive):
    r = run_refused("jobs", "ingest", str(archive / "real"), "--dask", "tcp://127.0.0.1:9", home=home)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot connect to the Dask scheduler at tcp://127.0.0.1:9" in lines[0], r.stderr
    assert not (home / "ioweather.sqlite").exists() and not _files_dir_exists(home)


@pytest.mark.parametrize("spec, words", [("slurm:cores=x", "cores must be a whole number"),
                                         ("slurm:color=blue", "unknown option 'color=blue'"),
                                         ("local:0", "positive number"), ("nowhere", "expected a scheduler address")])
def test_bad_dask_values(cli, home, archive, spec, words):
    r = cli("jobs", "ingest", str(archive / "real"), "--dask", spec, home=home)
    assert r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (home / "ioweather.sqlite").exists()


def _worker_with_preload(scheduler: str, tmp_path, code: str) -> subprocess.Popen:
    pre = tmp_path / "preload_skew.py"
    pre.write_text(code)
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nthreads", "1",
                             "--no-nanny", "--preload", str(pre)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("code, words", [
    # a worker whose Python has no ioweather (simulated: the import is blocked in the worker process)
    ("import sys\nsys.modules['ioweather'] = None\n", "cannot import ioweather"),
    # a worker with an older ioweather (simulated: its version string changed in the worker process)
    ("import ioweather\nioweather.__version__ = '0.0.9'\n", "runs ioweather 0.0.9, this is"),
])
def test_worker_without_this_ioweather_is_named(cli, home, archive, tmp_path, code, words):
    with LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cluster, Client(cluster) as c:
        worker = _worker_with_preload(cluster.scheduler_address, tmp_path, code)
        try:
            c.wait_for_workers(1, timeout=60)
            r = cli("jobs", "ingest", str(archive / "real"), "--dask", cluster.scheduler_address, home=home)
        finally:
            worker.kill()
            worker.wait()
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "install" in lines[0], r.stderr
    assert not (home / "ioweather.sqlite").exists()


# -- the real one-node Slurm ---------------------------------------------------------------------

def test_slurm_cluster_stores_exactly_the_local_answer(cli, home, archive, local_result, slurm_cluster, tmp_path):
    spec = (f"slurm:jobs=2,cores=1,memory=1GB,queue=debug,account=ioweather,walltime=00:10:00,"
            f"log_directory={tmp_path / 'dask-logs'}")
    r = cli("jobs", "ingest", str(archive), "--dask", spec, "--json", home=home, env=slurm_cluster.env)
    assert r.returncode == 0, r.stderr
    want_counts, want = local_result
    assert json.loads(r.stdout) == want_counts
    got = stored(home)
    assert got["jobs"] == want["jobs"] and got["failed"] == want["failed"] and got["files"] == want["files"]
    # the workers were Slurm jobs: sacct lists them, under the account asked for
    # (slurmctld hands job records to slurmdbd asynchronously: on a busy machine they arrive seconds later)
    deadline = time.monotonic() + 60
    while True:
        out = slurm_cluster.run("sacct", "--parsable2", "--noheader", "-X", "--allusers",
                                "--format=JobName,Account,State", "--name=dask-worker").stdout
        rows = [line.split("|") for line in out.splitlines()]
        if len(rows) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(rows) >= 2 and all(r[1] == "ioweather" for r in rows), out


def test_slurm_refusing_the_job_is_one_line(cli, home, archive, slurm_cluster):
    r = cli("jobs", "ingest", str(archive / "real"), "--dask", "slurm:queue=nope,walltime=00:05:00", home=home,
            env=slurm_cluster.env)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ioweather: error: Slurm refused the Dask worker job: "), r.stderr
    assert "invalid partition" in lines[0].lower()
    assert not (home / "ioweather.sqlite").exists()
