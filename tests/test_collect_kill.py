"""`collect` killed with -9 in the middle of a flush stores no row twice (issue 11, soak finding 1).

A flush writes Parquet files and then records the counters' readings those rows end at. A kill
between the two used to leave the old readings: the restarted collector measured its first interval
from them and stored NaN rows for times already stored with values. Real processes: the test watches
for a flush's new file, freezes the collector (SIGSTOP) before its state file is newer than that
file, kills it (-9), restarts it, and counts. The reference is pyarrow's read of every data file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from ioweather.config import Settings
from ioweather.sources.telemetry.base import short_hostname
from ioweather.sources.telemetry.synthetic import make_tree
from ioweather.store import telemetry_layout as layout

INTERVAL_S = 0.2


def _collect(home: Path, root: Path, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "IOWEATHER_DB"}
    return subprocess.Popen([sys.executable, "-m", "ioweather", "--home", str(home), "collect", "--proc-root",
                             str(root), "--sources", "lustre", "--interval", f"{INTERVAL_S}s", "--flush",
                             f"{INTERVAL_S}s", "--fs", "k", "--json", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)


def _files(base: Path) -> dict[Path, int]:
    out = {}
    for d in base.glob("date=*"):
        for e in os.scandir(d):
            if e.name.endswith(".parquet"):
                try:
                    out[Path(e.path)] = e.stat().st_mtime_ns
                except FileNotFoundError:
                    pass
    return out


def _kill_in_flush(proc: subprocess.Popen, base: Path, state: Path, timeout_s: float = 60) -> bool:
    """Freeze `proc` right after a flush's data file appears; kill it. True when the state file was
    then older than that file (the kill landed between the two), False when the flush got through.
    Only after this life's first flush saved the state: the restart then has readings to resume from."""
    started_ns = time.time_ns()
    t_end = time.monotonic() + timeout_s
    while not (state.exists() and state.stat().st_mtime_ns > started_ns):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < t_end, f"no flush within {timeout_s} s"
        time.sleep(0.01)
    seen = set(_files(base))
    while time.monotonic() < t_end:
        assert proc.poll() is None, proc.stderr.read().decode()
        new = {p: m for p, m in _files(base).items() if p not in seen}
        if new:
            os.killpg(proc.pid, signal.SIGSTOP)
            try:
                state_ns = state.stat().st_mtime_ns
            except FileNotFoundError:
                state_ns = 0
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return state_ns < max(new.values())
    raise AssertionError(f"no flush within {timeout_s} s")


@pytest.mark.timeout(600)
def test_collect_killed_during_flushes_stores_no_row_twice(tmp_path):
    root, home = tmp_path / "tree", tmp_path / "home"
    names = make_tree(root, 3, fs="k")
    base = layout.fs_dir(Settings(home=home), "k")
    state = layout.telemetry_dir(Settings(home=home)) / f".collect-{short_hostname()}.state.json"
    caught, kills = 0, 0
    while caught < 3 and kills < 40:  # until three kills landed between a flush's file and its state
        proc = _collect(home, root)
        caught += _kill_in_flush(proc, base, state)
        kills += 1
    assert caught >= 3, f"only {caught} of {kills} kills landed inside a flush"
    last = _collect(home, root, "--duration", "2s")
    out, err = last.communicate(timeout=120)
    assert last.returncode == 0, err.decode()
    df = pq.read_table([str(f) for f in layout.data_files(base)]).to_pandas()
    dup = df[df.duplicated(["target", "metric", "time_ns"], keep=False)].sort_values(["target", "metric", "time_ns"])
    assert dup.empty, f"{len(dup)} rows stored twice after {kills} kills ({caught} inside a flush):\n{dup.head(12)}"
    # what a kill lost is stored as missing intervals, never absent: each counter's grid is whole
    for name in names:
        for metric in ("read_bytes", "write_bytes", "md_open"):
            t = np.sort(df.loc[(df.target == name) & (df.metric == metric), "time_ns"].to_numpy())
            if t.size:
                assert (np.diff(t) == int(INTERVAL_S * 1e9)).all(), (name, metric, np.unique(np.diff(t)))
    assert not list(base.rglob("*.tmp"))
