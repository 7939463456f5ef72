"""`workload --dask` on a real `distributed.LocalCluster` of worker processes: the same document as
the local scan on the same store (rollups, rows, a range cutting days, a resample that does not
divide a day), a worker killed with SIGKILL while it holds days still gives the complete document,
a day that kills every worker stops the command with one line, never a partial workload."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (pip install -e '.[test]')")

from dask.distributed import Client, LocalCluster  # noqa: E402
from dask_kill import kill_a_busy_worker  # noqa: E402

import workload_synthetic as syn  # noqa: E402
from ioweather.config import Settings  # noqa: E402
from ioweather.store.telemetry_layout import write_rows  # noqa: E402
from test_workload_cli import run_json  # noqa: E402


def _bench_generate():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_workload.py"
    spec = importlib.util.spec_from_file_location("bench_workload", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    home = tmp_path_factory.mktemp("wl") / "home"
    settings = Settings.resolve(home)
    df = syn.frame()
    write_rows(settings, "syn", df)
    # a second import of the first day's last hour from another writer: two files in one day directory
    late = df[df["time_ns"] >= syn.T0 + 23 * 3600 * 10**9]
    late = late[late["time_ns"] < syn.T0 + 86_400 * 10**9].assign(target=lambda d: d["target"] + "-b")
    write_rows(settings, "syn", late, writer="collect")
    return home, df


CASES = [
    (),
    ("--no-rollups",),
    ("--since", "2024-03-01T13:17:05Z", "--until", "2024-03-02T09:00Z"),  # two days cut: rows beside rollups
    ("--resample", "37s"),  # a bin across midnight: daily sums from each day, merged
    ("--resample", "5s", "--acf-max-lag", "1h"),
]


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a) or "default")
def test_dask_gives_the_local_document(synthetic, cluster, args):
    home, df = synthetic
    local = run_json("workload", "--fs", "syn", *args, home=home)
    remote = run_json("workload", "--fs", "syn", *args, "--dask", cluster.scheduler_address, home=home)
    assert remote == local
    if not args:
        # and both are the truth: an independent sum of the rows
        valid = df[df["value"].notna() & (df["value"] >= 0)]
        late = valid[(valid["time_ns"] >= syn.T0 + 23 * 3600 * 10**9) & (valid["time_ns"] < syn.T0 + 86_400 * 10**9)]
        assert remote["read_bytes"] == valid.loc[valid["metric"] == "read_bytes", "value"].sum() + \
            late.loc[late["metric"] == "read_bytes", "value"].sum()
        assert remote["targets"] == 2 * syn.TARGETS


def test_local_spec_starts_its_own_cluster(synthetic):
    home, _ = synthetic
    assert run_json("workload", "--fs", "syn", "--dask", "local:2", home=home) == \
        run_json("workload", "--fs", "syn", home=home)


@pytest.fixture(scope="module")
def many_days(tmp_path_factory):
    """12 days x 40 targets of 5-second samples (16.6 M rows) as the benchmark writes them."""
    home = tmp_path_factory.mktemp("wl-many") / "home"
    fs_path = home / "parquet" / "telemetry" / "fs=big"
    _bench_generate()(fs_path, 20_000, 12, 40)
    return home


def test_killed_worker_costs_a_retry_not_a_day(many_days):
    """kill -9 of a worker process holding day scans: the scheduler runs them again elsewhere and
    the document equals the local one (no day lost, none counted twice)."""
    args = ("workload", "--fs", "big", "--no-rollups", "--acf-max-lag", "1h")
    local = run_json(*args, home=many_days)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as watcher:
        t, killed = kill_a_busy_worker(watcher)
        remote = run_json(*args, "--dask", c.scheduler_address, home=many_days)
        t.join()
    assert killed and killed["tasks"] >= 1, "no worker was seen holding a day"
    assert remote == local
    assert remote["observations"] == 12 * 17280 * 40 * 2  # every row of every day (two metrics), once


def _abort_on_day(part, **kw):
    if part[0].endswith("-02"):
        import faulthandler

        faulthandler.disable()
        os.abort()
    return part[0]


def test_day_that_kills_every_worker_is_an_error_not_a_gap(cluster):
    import cloudpickle

    from ioweather.errors import UserError
    from ioweather.services.telemetry.workload import _map_days

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    parts = [(f"date=2024-03-{d:02d}", [], []) for d in range(1, 5)]
    with Client(cluster) as client:
        assert _map_days(client, _abort_on_day, [p for p in parts if p[0] != "date=2024-03-02"], {}) == \
            ["date=2024-03-01", "date=2024-03-03", "date=2024-03-04"]
        with pytest.raises(UserError, match=r"date=2024-03-02 killed every Dask worker it ran on; nothing was reported"):
            _map_days(client, _abort_on_day, parts, {})


def test_unreachable_scheduler_is_one_line(synthetic):
    from test_distributed import run_refused

    home, _ = synthetic
    r = run_refused("workload", "--fs", "syn", "--dask", "tcp://127.0.0.1:9", "--json", home=home)
    assert r.returncode != 0 and r.stdout == ""
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "cannot connect to the Dask scheduler at tcp://127.0.0.1:9" in lines[0], r.stderr


def test_unknown_fs_is_refused_before_any_cluster(synthetic, cli):
    home, _ = synthetic
    t = time.monotonic()
    r = cli("workload", "--fs", "nope", "--dask", "local:2", home=home)
    assert r.returncode != 0 and "no telemetry for file system 'nope'" in r.stderr
    assert time.monotonic() - t < 30
