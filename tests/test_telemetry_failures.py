"""Telemetry writes that fail or are stopped half way: a full disk under `import` and `collect`
(a real tmpfs), and a re-import killed with -9 or -TERM at a random moment (a real process)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from ioweather.config import Settings
from ioweather.sources.telemetry.synthetic import make_tree, write_ost
from ioweather.store import telemetry_layout as layout

MIB = 1048576
T0 = 1_709_251_200  # 2024-03-01 00:00:00 UTC


def write_csv(path: Path, days: int, targets: int, step_s: int = 60, seed: int = 1) -> dict:
    """A long CSV of whole-number byte amounts; returns its totals (the reference)."""
    rng = np.random.default_rng(seed)
    t = T0 + np.arange(days * 86_400 // step_s, dtype=np.int64) * step_s
    frames, totals = [], {"read_bytes": 0, "write_bytes": 0}
    for metric in totals:
        for i in range(targets):
            v = rng.integers(0, 10 * MIB, t.size)
            totals[metric] += int(v.sum())
            frames.append(pd.DataFrame({"time": t, "target": f"fs-OST{i:04x}", "metric": metric, "value": v}))
    pd.concat(frames).to_csv(path, index=False)
    return totals


def fill(disk: Path) -> Path:
    """Take every free byte of a tmpfs (the last partial page too)."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        for chunk in (1 << 16, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass
    return filler


def all_files(home: Path) -> set[str]:
    """Every data, rollup and temporary file under the telemetry directory, relative to it (not the
    imports' markers and locks: a source's first import leaves its lock file and an empty marker)."""
    d = home / "parquet" / "telemetry"
    return {str(p.relative_to(d)) for p in d.rglob("*") if p.is_file() and "_imports" not in p.parts}


def stored_totals(home: Path, fs: str) -> dict:
    """Byte totals read back with pyarrow from the files a reader counts (independent of workload)."""
    files = layout.data_files(layout.fs_dir(Settings(home=home), fs))
    df = pq.read_table([str(f) for f in files]).to_pandas()
    return {m: int(df.loc[df.metric == m, "value"].sum()) for m in ("read_bytes", "write_bytes")}


def one_line_error(stderr: str, pattern: str) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1 and re.fullmatch(pattern, lines[0]), stderr


def test_import_on_a_full_disk_fails_in_one_line_and_leaves_nothing(tmpfs, tmp_path):
    disk = tmpfs("store", "size=2m")
    home = disk / "home"
    src, other = tmp_path / "a.csv", tmp_path / "b.csv"
    totals = write_csv(src, days=2, targets=2, step_s=300)
    other_totals = write_csv(other, days=2, targets=2, step_s=300, seed=2)
    run_cli("import", "csv", str(src), "--fs", "x", home=home, check=True)
    before = all_files(home)
    assert stored_totals(home, "x") == totals
    filler = fill(disk)
    for source in (src, other):  # a re-import (replacing) and a first import
        p = run_cli("import", "csv", str(source), "--fs", "x", home=home)
        assert p.returncode == 2
        one_line_error(p.stderr, r"ioweather: error: cannot write \S+/fs=x/date=2024-03-0\d/csv-\S+\.parquet: "
                                 r"disk full \(no space left on device\)")
        assert all_files(home) == before  # no temporary file, no part of the failed import
        assert stored_totals(home, "x") == totals
    filler.unlink()
    run_cli("import", "csv", str(other), "--fs", "x", home=home, check=True)
    assert stored_totals(home, "x") == {m: totals[m] + other_totals[m] for m in totals}


def test_collect_on_a_full_disk_keeps_its_readings_and_stores_each_once(tmpfs, tmp_path):
    """The daemon goes on sampling while its disk is full, says so in one line per failed flush, and
    once space is back every interval is stored exactly once: the stored amounts add up to the
    counters' final values (the independent reference), with no interval missing or twice."""
    disk = tmpfs("store", "size=2m")
    home, root = disk / "home", tmp_path / "tree"
    names = make_tree(root, 2, fs="synth", n_mdts=0)
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    err = open(tmp_path / "stderr", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "collect", "--proc-root", str(root), "--sources",
                             "lustre", "--interval", "0.5s", "--flush", "1s", "--json", "-q"],
                            stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    base = home / "parquet" / "telemetry" / "fs=synth"

    def wait_for(cond, what, timeout=30):
        t_end = time.monotonic() + timeout
        while not cond():
            assert proc.poll() is None, f"collect exited while waiting for {what}: {Path(err.name).read_text()}"
            assert time.monotonic() < t_end, f"no {what} within {timeout} s: {Path(err.name).read_text()}"
            time.sleep(0.05)

    step = 0

    def advance():
        nonlocal step
        step += 1
        for i, name in enumerate(names):
            write_ost(root, name, 0, step * (i + 1) * MIB)

    try:
        wait_for(lambda: list(base.glob("date=*/*.parquet")), "first flush")  # the baseline reading is 0
        first = set(base.glob("date=*/*.parquet"))
        advance()
        filler = fill(disk)
        # the first failed flush is said (then once a minute); two more flushes fail while the counters move
        wait_for(lambda: "disk full" in Path(err.name).read_text(), "failed flush")
        for _ in range(13):
            advance()
            wait_for(lambda: True, "")  # collect is still running
            time.sleep(0.2)  # the pace under test: the counters move while the flushes fail
        assert set(base.glob("date=*/*.parquet")) == first
        assert not [p for p in disk.rglob("*.tmp")]
        filler.unlink()
        wait_for(lambda: set(base.glob("date=*/*.parquet")) - first, "flush after space came back")
        flushed = len(list(base.glob("date=*/*.parquet")))
        advance()
        # two flushes (1 s apart, each of the ticks since the last) after the change: a tick read the final counters
        wait_for(lambda: len(list(base.glob("date=*/*.parquet"))) >= flushed + 2, "two flushes of the final counters")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err.seek(0)
    log = err.read()
    assert proc.returncode == 0, log
    assert "Traceback" not in log
    for line in log.splitlines():
        assert re.fullmatch(r"collect: (could not store \d+ readings \(cannot write \S+\.(parquet|json): disk full "
                            r"\(no space left on device\)\); still collecting, will retry|cannot save collector state \S+: "
                            r"disk full \(no space left on device\)|the store took \d+ waiting readings after \d+ s)",
                            line), line
    summary = json.loads(out)
    df = pq.read_table([str(f) for f in layout.data_files(base)]).to_pandas()
    assert summary["rows_written"] == len(df)
    w = df[df.metric == "write_bytes"]
    for i, name in enumerate(names):
        t = np.sort(w.loc[w.target == name, "time_ns"].to_numpy())
        assert (np.diff(t) == 500_000_000).all()                    # every interval, none twice
        if summary["missed_ticks"] == 0:
            assert len(t) == summary["ticks"] - 1
        v = w.loc[w.target == name, "value"]
        if not v.isna().any():                                      # no tick was missed on a busy machine
            assert v.sum() == step * (i + 1) * MIB


@pytest.fixture(scope="module")
def first_import(tmp_path_factory):
    """A store with one import of a CSV that takes several seconds to import (691,200 rows, 30 days)."""
    d = tmp_path_factory.mktemp("reimport")
    src = d / "big.csv"
    totals = write_csv(src, days=30, targets=8)
    run_cli("import", "csv", str(src), "--fs", "big", home=d / "home", check=True, timeout=300)
    base = layout.fs_dir(Settings(home=d / "home"), "big")
    return src, d / "home", totals, {p.name for p in layout.data_files(base)}


def workload_totals(home: Path) -> dict:
    p = run_cli("workload", "--fs", "big", "--json", home=home, check=True, timeout=300)
    r = json.loads(p.stdout)
    return {"read_bytes": r["read_bytes"], "write_bytes": r["write_bytes"]}


@pytest.mark.parametrize("sig,when", [(signal.SIGKILL, "writing"), (signal.SIGKILL, "any"),
                                      (signal.SIGTERM, "writing"), (signal.SIGTERM, "any")])
def test_a_reimport_killed_at_a_random_moment_counts_the_data_once(first_import, tmp_path, sig, when):
    """`import csv big.csv --fs big` again, killed at a random moment (anywhere, or while it writes
    its files): readers count the old import or the new one, never both, and `workload` totals are
    exactly the CSV's. SIGTERM rolls back at once; after kill -9 the leftovers are recognized and
    removed without touching what counts."""
    import shutil

    src, home0, totals, old = first_import
    home = tmp_path / "home"
    shutil.copytree(home0, home)
    base = layout.fs_dir(Settings(home=home), "big")
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "import", "csv", str(src), "--fs", "big"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        if when == "any":
            time.sleep(rng.uniform(0.5, 6.0))  # an uninterrupted re-import takes ~6 s here
        else:
            while not [p for p in base.glob("date=*/*") if p.is_file() and p.name.lstrip(".").split(".")[0] not in
                       {n.split(".")[0] for n in old}]:
                assert proc.poll() is None and time.monotonic() - t0 < 120, "the re-import wrote no file"
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 1.0))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    note = f"seed {seed}, killed after {time.monotonic() - t0:.2f} s, exit {proc.returncode}: {err[-600:]}"
    assert "Traceback" not in err, note
    visible = {p.name for p in layout.data_files(base)}
    runs = {n.split("-")[2] for n in visible}
    assert visible == old or (len(runs) == 1 and not visible & old and len(visible) == len(old)), note
    assert workload_totals(home) == totals, note
    assert stored_totals_big(home) == totals, note
    on_disk = {p.name for p in base.glob("date=*/*.parquet")}
    if sig == signal.SIGTERM:
        assert proc.returncode in (0, 130, -signal.SIGTERM), note
        assert on_disk == visible, note                                      # rolled back (or done) at once
    else:
        from ioweather.store.telemetry_imports import leftovers

        left = leftovers(base)
        assert {p.name for p in left if p.suffix == ".parquet"} == on_disk - visible, note
        p = run_cli("store", "check", "--repair", "--json", home=home)
        assert p.returncode == 0 and json.loads(p.stdout)["repaired"] == len(left), p.stdout + p.stderr
        assert {p.name for p in base.glob("date=*/*.parquet")} == visible, note
        assert workload_totals(home) == totals, note
    assert not list(base.rglob("*.tmp")), note
    assert {p.name for p in base.glob("date=*/_rollup/*.parquet")} <= visible, note


def stored_totals_big(home: Path) -> dict:
    return stored_totals(home, "big")
