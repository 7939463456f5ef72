"""collect's failure policy, the probe's (services/runtime/daemon.py): writes happen off the sampling thread,
a refused flush keeps its rows and is retried, a stop waits a bounded time for the last write.

In-process runs of services.telemetry.collect.run_collect on a synthetic Lustre tree; the store is slowed or
made to refuse by wrapping the real Parquet writer (a full disk with real ENOSPC is
tests/test_telemetry_failures.py). The reference is pyarrow's read of every file written.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow.parquet as pq
import pytest

from ioweather.config import Settings
from ioweather.errors import StoreError
from ioweather.services.telemetry import collect
from ioweather.sources.telemetry.synthetic import make_tree
from ioweather.store import telemetry_layout as layout


def _run(home, root, logs, **kw):
    opts = dict(interval=0.2, source_names="lustre", root=str(root), fs="k", duration=2.0, flush_s=0.2, timeout=None,
                install_signals=False, say=logs.append)
    return collect.run_collect(Settings(home=home), **{**opts, **kw})


def _stored(home):
    base = layout.fs_dir(Settings(home=home), "k")
    files = layout.data_files(base)
    return pq.read_table([str(f) for f in files]).to_pandas() if files else None


def _intervals_whole(df, names, step_ns):
    w = df[df.metric == "write_bytes"]
    for name in names:
        t = np.sort(w.loc[w.target == name, "time_ns"].to_numpy())
        assert t.size and (np.diff(t) == step_ns).all(), (name, np.unique(np.diff(t)))


def test_a_slow_store_delays_no_tick(tmp_path, monkeypatch):
    """Each write takes 1 s, five intervals: the sampling goes on during every write (on the
    sampling thread none would happen then), and every interval is stored once."""
    names = make_tree(tmp_path / "tree", 2, fs="k", n_mdts=0)
    real_write, real_tick = layout.write_rows, collect.Collector.tick
    writes, ticks = [], []

    def slow(*a, **kw):
        t0 = time.monotonic()
        time.sleep(1.0)
        writes.append((t0, time.monotonic()))
        return real_write(*a, **kw)

    def tick(self, t_ns=None):
        ticks.append(time.monotonic())
        return real_tick(self, t_ns)

    monkeypatch.setattr(layout, "write_rows", slow)
    monkeypatch.setattr(collect.Collector, "tick", tick)
    logs: list[str] = []
    s = _run(tmp_path / "home", tmp_path / "tree", logs, duration=3.0)
    # Writes still running when the sampling stopped (the final flush, under load also the one
    # before it) cannot overlap ticks; every write that ended while ticks went on must have.
    during = [sum(a < t < b for t in ticks) for a, b in writes if b < ticks[-1]]
    assert during and min(during) >= 2, (during, writes, ticks)
    df = _stored(tmp_path / "home")
    assert s.rows_written == len(df) and not df.duplicated(["target", "metric", "time_ns"]).any()
    _intervals_whole(df, [n for n in names if "-OST" in n], 200_000_000)
    assert not [m for m in logs if "could not store" in m]


def test_a_refused_flush_is_retried_and_the_stop_waits_for_the_store(tmp_path, monkeypatch):
    """The store refuses every write until after the stop: the stop retries, then everything is
    stored once; the outage is said once (not at every retry) and so is its end."""
    names = make_tree(tmp_path / "tree", 2, fs="k", n_mdts=0)
    real = layout.write_rows
    broken = threading.Event()
    broken.set()
    refused = []

    def flaky(settings, fs, df, **kw):
        if broken.is_set():
            refused.append(len(df))
            raise StoreError(f"cannot write {layout.fs_dir(settings, fs)}/x.parquet: disk full (no space left on device)")
        return real(settings, fs, df, **kw)

    monkeypatch.setattr(layout, "write_rows", flaky)
    threading.Timer(3.0, broken.clear).start()  # the run ends after 1.5 s: space comes back during the stop
    logs: list[str] = []
    t0 = time.monotonic()
    # a loaded machine (CI) once took over the default 0.16 s to read the tree: a read cut at the deadline
    # stores no interval, which is collect's policy (tests/test_telemetry_failures.py), not this test's point
    s = _run(tmp_path / "home", tmp_path / "tree", logs, duration=1.5, timeout=1.0)
    assert time.monotonic() - t0 >= 3.0 and len(refused) >= 3
    df = _stored(tmp_path / "home")
    assert s.rows_written == len(df) and s.rows_dropped == 0
    assert not df.duplicated(["target", "metric", "time_ns"]).any()
    _intervals_whole(df, [n for n in names if "-OST" in n], 200_000_000)
    n = len(df[(df.metric == "write_bytes")].time_ns.unique())
    (src,) = s.sources
    assert src.ok + src.failed + src.timeouts + src.skipped == s.ticks  # each tick reads the tree or says why not
    assert n == src.ok - 1  # every read after the first is one interval stored, none lost to the refused flushes
    failed = [m for m in logs if "could not store" in m]
    assert len(failed) == 1 and failed[0].startswith("collect: ") and "still collecting, will retry" in failed[0]
    assert sum("the store took" in m for m in logs) == 1
    tdir = layout.telemetry_dir(Settings(home=tmp_path / "home"))
    assert not list(tdir.glob(".collect-*.intent.json")) and list(tdir.glob(".collect-*.state.json"))


def test_a_store_that_never_comes_back_fails_the_stop_in_one_line(tmp_path, monkeypatch):
    make_tree(tmp_path / "tree", 2, fs="k", n_mdts=0)

    def refuse(settings, fs, df, **kw):
        raise StoreError("cannot write x.parquet: disk full (no space left on device)")

    monkeypatch.setattr(layout, "write_rows", refuse)
    monkeypatch.setattr(collect, "FINAL_FLUSH_S", 1.0)
    logs: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(StoreError, match=r"^\d+ readings were not stored: the store did not take them within 1 s "
                                         r"of the stop \(cannot write x.parquet: disk full"):
        _run(tmp_path / "home", tmp_path / "tree", logs, duration=1.0)
    assert time.monotonic() - t0 < 10
    assert _stored(tmp_path / "home") is None
    tdir = layout.telemetry_dir(Settings(home=tmp_path / "home"))
    assert not list(tdir.glob(".collect-*.intent.json"))
