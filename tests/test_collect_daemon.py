"""The collect loop in-process: amounts from changing counters, targets that vanish and come back,
restarts, and sources that fail or hang while the others go on."""

from __future__ import annotations

import shutil
import threading

import numpy as np
import pandas as pd
import pytest

from ioweather.sources.telemetry.base import Sample, Source, SourceError
from ioweather.services.telemetry.collector import Collector
from ioweather.sources.telemetry.lustre import Lustre
from ioweather.sources.telemetry.synthetic import advance, make_tree, write_ost

S = 1_000_000_000
T0 = 1_700_000_000 * S
MIB = 1048576


def rows(c: Collector, fs: str) -> pd.DataFrame:
    return c.pending_frame(fs)


def test_amounts_per_interval_from_a_changing_tree(tmp_path):
    names = make_tree(tmp_path, 4, fs="synth")
    c = Collector([Lustre(tmp_path, host="oss")], 5.0, "oss")
    for step in range(4):
        advance(tmp_path, names, step)
        c.tick(T0 + step * 5 * S)
    df = rows(c, "synth")
    w = df[df.metric == "write_bytes"].pivot(index="time_ns", columns="target", values="value")
    assert list(w.index) == [T0, T0 + 5 * S, T0 + 10 * S]           # 4 readings, 3 intervals
    for i in range(4):
        assert (w[f"synth-OST{i:04x}"] == 2 * i * MIB).all()        # advance(): 2*i MiB per tick
    md = df[(df.metric == "md_open")]
    assert (md.value == 10).all() and len(md) == 3
    cap = df[df.metric == "capacity_bytes"]
    assert len(cap) == 4 * 4 and (cap.interval_s == 5.0).all()      # gauges: one per reading
    assert (df.interval_s[df.metric == "write_bytes"] == 5.0).all()
    assert not (df.value < 0).any()


def test_target_vanishing_returning_and_restarting(tmp_path):
    names = make_tree(tmp_path, 3, fs="synth")
    c = Collector([Lustre(tmp_path, host="oss")], 5.0, "oss")
    advance(tmp_path, names, 1)
    c.tick(T0)
    # OST0001 unmounted for two ticks (device gone), the others go on
    shutil.rmtree(tmp_path / "proc/fs/lustre/obdfilter/synth-OST0001")
    shutil.rmtree(tmp_path / "sys/fs/lustre/obdfilter/synth-OST0001")
    for step in (2, 3):
        advance(tmp_path, [n for n in names if n != "synth-OST0001"], step)
        c.tick(T0 + (step - 1) * 5 * S)
    advance(tmp_path, names, 4)                                       # back, counters kept growing
    c.tick(T0 + 15 * S)
    # OST0002 restarts: its counters begin again from a small value
    write_ost(tmp_path, "synth-OST0002", 0, 3 * MIB)
    c.tick(T0 + 20 * S)
    write_ost(tmp_path, "synth-OST0002", 0, 7 * MIB)
    c.tick(T0 + 25 * S)
    df = rows(c, "synth")
    w = df[df.metric == "write_bytes"].pivot(index="time_ns", columns="target", values="value")
    ost1 = w["synth-OST0001"]
    assert ost1.loc[[T0, T0 + 5 * S, T0 + 10 * S]].isna().all()     # the 15 s away: 3 missing intervals
    assert ost1.loc[T0 + 15 * S] == 0                                 # advance(4) then no change
    ost2 = w["synth-OST0002"]
    assert (ost2.loc[[T0, T0 + 5 * S, T0 + 10 * S]] == 4 * MIB).all()  # never stopped
    assert np.isnan(ost2.loc[T0 + 15 * S])                            # went backwards: missing
    assert ost2.loc[T0 + 20 * S] == 4 * MIB                           # 3 MiB -> 7 MiB
    assert not (df.value < 0).any()


class Boom(Source):
    name = "boom"

    def collect(self):
        raise SourceError("boom: device unplugged")


class Hang(Source):
    name = "hang"

    def __init__(self, release: threading.Event):
        super().__init__("/", host="h")
        self.release = release

    def collect(self):
        self.release.wait(30)  # a read stuck in the kernel
        return [Sample("h:stuck", "read_bytes", 1)]


class Buggy(Source):
    name = "buggy"

    def collect(self):
        return [Sample("h:x", "read_bytes", 1 // 0)]


def test_failing_and_hanging_sources_are_skipped_while_the_others_go_on(tmp_path):
    names = make_tree(tmp_path, 2, fs="synth")
    release = threading.Event()
    log: list[str] = []
    c = Collector([Boom("/"), Hang(release), Buggy("/"), Lustre(tmp_path, host="oss")], 5.0, "oss",
                  timeout_s=0.3, log=log.append)
    try:
        for step in range(3):
            advance(tmp_path, names, step)
            c.tick(T0 + step * 5 * S)
        st = {k: v.as_dict() for k, v in c.runner.status.items()}
        assert st["lustre"]["ok"] == 3
        assert st["boom"]["failed"] == 3 and "unplugged" in st["boom"]["last_error"]
        assert st["buggy"]["failed"] == 3 and "ZeroDivisionError" in st["buggy"]["last_error"]
        assert st["hang"]["timeouts"] == 1 and st["hang"]["skipped"] == 2
        assert sum("boom" in m for m in log) == 1       # the same error is logged once, not every tick
        df = rows(c, "synth")
        assert len(df[df.metric == "write_bytes"]) == 2 * 2
    finally:
        release.set()
    c.tick(T0 + 15 * S)                                  # the stuck call returned: it is called again
    assert c.runner.status["hang"].ok >= 1 or c.runner.status["hang"].timeouts == 1


def test_flush_writes_one_file_per_dataset_and_day(tmp_path):
    from ioweather.config import Settings
    from ioweather.store import telemetry_layout as layout

    settings = Settings(home=tmp_path / "home")
    names = make_tree(tmp_path / "tree", 2, fs="synth")
    c = Collector([Lustre(tmp_path / "tree", host="oss")], 5.0, "oss")
    day_end = (T0 // (86400 * S) + 1) * 86400 * S
    for step in range(4):                                  # ticks straddle midnight UTC
        advance(tmp_path / "tree", names, step)
        c.tick(day_end - 10 * S + step * 5 * S)
    n = c.flush(lambda fs, frame: layout.write_rows(settings, fs, frame, writer="collect-test"))
    assert n == c.rows_written > 0 and not c.pending
    files = layout.writer_files(settings, "synth", "collect-test")
    assert len(files) == 2 and len({f.parent.name for f in files}) == 2
    df = layout.read_frame(settings, "synth", "metric = 'write_bytes'")
    assert len(df) == 2 * 3 and (df.groupby("target").value.sum() == [0, 3 * 2 * MIB]).all()


@pytest.mark.parametrize("interval", [5.0])
def test_fs_option_forces_one_dataset(tmp_path, interval):
    names = make_tree(tmp_path, 1, fs="synth")
    c = Collector([Lustre(tmp_path, host="oss")], interval, "scratch", fs_forced=True)
    advance(tmp_path, names, 1)
    c.tick(T0)
    assert set(c.pending) == {"scratch"}


def test_restart_continues_from_saved_readings(tmp_path):
    names = make_tree(tmp_path / "tree", 2, fs="synth")
    state = tmp_path / "state.json"
    a = Collector([Lustre(tmp_path / "tree", host="oss")], 5.0, "oss")
    for step in range(2):
        advance(tmp_path / "tree", names, step)
        a.tick(T0 + step * 5 * S)
    a.save_state(state)
    b = Collector([Lustre(tmp_path / "tree", host="oss")], 5.0, "oss")     # the daemon restarted
    assert b.load_state(state) == len(a.prev)
    advance(tmp_path / "tree", names, 2)
    b.tick(T0 + 10 * S)                                                     # a quick restart: nothing lost
    advance(tmp_path / "tree", names, 3)
    b.tick(T0 + 30 * S)                                                     # then a 20 s outage
    w = rows(b, "synth").query("metric == 'write_bytes' and target == 'synth-OST0001'").set_index("time_ns").value
    assert w.loc[T0 + 5 * S] == 2 * MIB
    assert w.loc[[T0 + 10 * S, T0 + 15 * S, T0 + 20 * S, T0 + 25 * S]].isna().all()
    c = Collector([Lustre(tmp_path / "tree", host="oss")], 10.0, "oss")    # another interval: start afresh
    assert c.load_state(state) == 0


def test_a_store_that_cannot_be_written_keeps_the_newest_rows_within_the_bound(tmp_path):
    """While every flush fails (a full disk), the queue stays within max_pending_rows: the oldest
    ticks' rows go, counted; the flush that finally works stores the newest ones, each once."""
    names = make_tree(tmp_path, 2, fs="synth")
    c = Collector([Lustre(tmp_path, host="oss")], 5.0, "oss", max_pending_rows=100)

    def full(fs, frame):
        raise OSError(28, "No space left on device")

    per_tick = []
    for step in range(12):
        advance(tmp_path, names, step)
        per_tick.append(c.tick(T0 + step * 5 * S))
        with pytest.raises(OSError):
            c.flush(full)
        assert c.pending_rows <= 100
    assert c.rows_dropped + c.pending_rows == sum(per_tick)
    assert c.rows_dropped >= sum(per_tick) - 100 and c.rows_dropped > 0
    stored = {}
    assert c.flush(lambda fs, frame: stored.setdefault(fs, frame).shape[0]) == sum(per_tick) - c.rows_dropped
    kept = pd.concat(stored.values())
    assert not kept.duplicated(["target", "metric", "time_ns"]).any()
    # the newest ticks are the ones kept: every kept row is later than every dropped one
    assert kept.time_ns.min() >= T0 + 5 * S * (12 - len(kept.time_ns.unique()) - 1)
    assert c.pending_rows == 0 and c.rows_written == len(kept)
