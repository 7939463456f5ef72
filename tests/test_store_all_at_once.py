"""Issue 41, "Done when" 2: every cleaner and writer at once on one hostile store.

One home holds an imported CSV history, one damaged Parquet file in an old day, an old live day for
the retention to remove, and a symbolic link at every path the store writes or deletes under, each
leading to a victim outside the store (files and directories with known bytes and mtimes). Then real
`watch` (probe + dashboard, its retention at start) and `collect` (its retention at start, its state
files) run while `store prune --older-than` and `probe retire --purge` run; `store check` and
`--repair` follow. Counted: nothing outside the store changed, the imported rows left are exactly
those the prune was not asked to remove, the damaged file was set aside and never deleted.
"""

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
from ports import free_port
from test_store_cleaners import DAY, _age, _csv, _day_ns, _live, _run, _samples_by_run
from waiting import wait_until
from web_synthetic import add_target

from ioweather.config import Settings
from ioweather.sources.telemetry.base import short_hostname
from ioweather.sources.telemetry.synthetic import make_tree
from ioweather.store import open_store
from ioweather.store import telemetry_layout as layout
from ioweather.store.probe_archive import archive_completed_days

pytestmark = [pytest.mark.slow]  # two daemons, a dozen commands: 10-40 s on a loaded machine


def _tree_state(root: Path) -> dict:
    """{relative path: bytes and mtime of a file, the target of a link, or None for a directory}: the whole
    listing under `root`, links not followed, so a file or directory added anywhere shows too."""
    out: dict = {}
    for dirpath, dirs, names in os.walk(root):
        for n in dirs + names:
            p = Path(dirpath) / n
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", p.stat().st_mtime_ns)
            else:
                out[rel] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def _imported_times(settings: Settings, fs: str) -> np.ndarray:
    """Every stored row time of dataset `fs`, read file by file with pyarrow from a walk that follows no
    link (independent of the store's own readers); rollups and markers are not data."""
    base = layout.fs_dir(settings, fs)
    got = []
    for dirpath, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith("_") and not (Path(dirpath) / d).is_symlink()]
        for n in names:
            p = Path(dirpath) / n
            if n.endswith(".parquet") and not p.is_symlink():
                got.append(pq.read_table(p, columns=["time_ns"]).column("time_ns").to_numpy())
    return np.sort(np.concatenate(got)) if got else np.array([], dtype=np.int64)


def _no_traceback(err: str, who: str) -> None:
    assert "Traceback" not in err and "Error:" not in err.replace("StoreError", ""), f"{who}: {err[-2000:]}"


def test_watch_collect_prune_and_purge_at_once_change_nothing_outside_and_lose_nothing(tmp_path):
    seed = int(os.environ.get("IOWEATHER_ALL_AT_ONCE_SEED", random.randrange(2**32)))
    print(f"seed={seed} (IOWEATHER_ALL_AT_ONCE_SEED={seed} repeats this run)")
    rng = random.Random(seed)
    home, outside = tmp_path / "home", tmp_path / "outside"
    settings = Settings(home=home)
    env = {**os.environ, "IOWEATHER_HOME": str(home), "IOWEATHER_RETAIN_PROBE": "7d",
           "IOWEATHER_RETAIN_TELEMETRY": "30d"}
    env.pop("IOWEATHER_DB", None)

    # --- what the store holds before the daemons start
    now_s = int(time.time())
    old_years = rng.sample([2019, 2020, 2021, 2022], 2)
    times = [_day_ns(f"{y}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}") // 10**9 + h * 3600
             for y in old_years for h in range(rng.randint(2, 6))]
    times += [now_s - (d * 86400 + rng.randint(0, 3600)) for d in range(2, 2 + rng.randint(3, 8))]  # recent
    _csv(tmp_path / "hist.csv", times)
    r = _run(home, "import", "csv", str(tmp_path / "hist.csv"), "--fs", "imp")
    assert r.exit_code == 0, r.stderr
    sent = np.sort(np.repeat(np.array(times, dtype=np.int64) * 10**9, 2))  # two targets per time
    assert np.array_equal(_imported_times(settings, "imp"), sent)
    damaged = _live(settings, "old", "2000-01-01")
    damaged_bytes = damaged.read_bytes()[:40] + b"\0" * 200
    damaged.write_bytes(damaged_bytes)
    old_live = _live(settings, "old", "2000-01-02")  # collect's retention (30 d) removes it at start
    store = open_store(settings)
    now = time.time_ns()
    gone_run = add_target(store, "gone", now - 4 * DAY, now - 2 * DAY, period_s=600, seed=seed % 1000)
    assert archive_completed_days(store, keep_days=1) > 0
    store.dispose()

    # --- the victims, outside the store: a store-shaped tree and one plain file
    vs = Settings(home=outside / "v-home")
    keep = [_live(vs, "v", f"2000-01-0{i}") for i in (1, 2, 3)]
    plain = outside / "precious.txt"
    plain.write_bytes(b"precious, outside the store\n")
    bait = outside / "bait"
    bait.mkdir()
    (bait / old_live.name).write_bytes(b"not the store's")
    run_victim = outside / "run-archive"
    (home / "parquet" / "probe" / f"run={gone_run}").rename(run_victim)

    # --- a link at every place the store writes or deletes under
    tele = layout.telemetry_dir(settings)
    host = short_hostname()
    (tele / "fs=lnk").symlink_to(layout.fs_dir(vs, "v"))                                # a whole dataset
    (tele / "fs=imp" / "date=2000-01-03").symlink_to(keep[1].parent)                    # a day directory
    (tele / "fs=old" / "date=2000-01-04").mkdir()
    (tele / "fs=old" / "date=2000-01-04" / "collect-h-planted.parquet").symlink_to(keep[2])  # a data file
    rollup = old_live.parent / "_rollup"                                                # a rollup directory
    for f in rollup.iterdir():
        f.unlink()
    rollup.rmdir()
    rollup.symlink_to(bait)
    for name in (f".collect-{host}.intent.json.tmp", f".collect-{host}.state.json.tmp",
                 f".collect-{host}.state.json"):                                        # the collector's state
        (tele / name).symlink_to(plain)
    markers = sorted((tele / "fs=imp" / "_imports").glob("*.json"))
    assert markers
    for m in markers:                                                                   # the import marker's temporary
        m.with_name(f".{m.name}.tmp").symlink_to(plain)
    (home / "parquet" / "probe" / f"run={gone_run}").symlink_to(run_victim)             # a purged run's archive
    _age(home)
    _age(outside)
    before = _tree_state(outside)

    # --- the daemons, and the cleaners while they run
    make_tree(tmp_path / "tree", 2, fs="k", n_mdts=0)
    watch = subprocess.Popen([sys.executable, "-m", "ioweather", "watch", str(tmp_path / "probe"),
                              "--port", str(free_port()), "--file-size", "8MiB", "--pool", "10",
                              "--interval", "0.2s", "--target", "live"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    collect = subprocess.Popen([sys.executable, "-m", "ioweather", "collect", "--proc-root", str(tmp_path / "tree"),
                                "--sources", "lustre", "--fs", "k", "--interval", "0.2s", "--flush", "0.5s"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    procs = {"watch": watch, "collect": collect}
    try:
        assert re.search(r"http://\S+/", watch.stdout.readline())
        wait_until(lambda: not old_live.exists(), 30, "collect's retention at its start", every=0.2, proc=collect)
        wait_until(lambda: layout.fs_dir(settings, "k").exists() and layout.data_files(layout.fs_dir(settings, "k")),
                   30, "collect's first flush", every=0.2, proc=collect)
        wait_until(lambda: any(n for n, _ in _samples_by_run(home).values()), 30, "the probe's first flush",
                   every=0.3, proc=watch)
        prune = _run(home, "store", "prune", "--older-than", "365d", "--kind", "telemetry", "--yes", "--json")
        purge = _run(home, "probe", "retire", "gone", "--purge", "--yes", "--json")
        live_before = _samples_by_run(home)
        wait_until(lambda: sum(n for n, _ in _samples_by_run(home).values()) > sum(n for n, _ in live_before.values()),
                   30, "a flush of the live probe after the purge", every=0.3, proc=watch)
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        codes = {k: p.wait(timeout=60) for k, p in procs.items()}
        errs = {k: p.stderr.read() for k, p in procs.items()}
    assert codes == {"watch": 0, "collect": 0}, errs
    for k, err in errs.items():
        _no_traceback(err, k)
    assert _tree_state(outside) == before

    # prune: exactly the imported rows older than a year went, the links were said and skipped
    assert prune.exit_code == 1 and len(prune.stderr.strip().splitlines()) == 1, prune.stderr
    [k] = json.loads(prune.stdout)["kinds"]
    cutoff = pd.Timestamp(k["cutoff"]).value
    left = _imported_times(settings, "imp")
    assert np.array_equal(left, sent[sent >= cutoff]) and len(left) < len(sent) and len(left)
    assert k["rows"] == int((sent < cutoff).sum()), k
    skipped = {Path(s["path"]).name for s in k["skipped"]}
    assert {"fs=lnk", "date=2000-01-03", "collect-h-planted.parquet", damaged.name} <= skipped, k
    # the old live day went at collect's start, its planted rollup link left and said (even unasked with -q)
    assert "_rollup (a symbolic link)" in errs["collect"] and "skipped" in errs["collect"], errs["collect"]
    # purge: the run's rows went, its archive link was skipped, the live probe kept storing
    doc = json.loads(purge.stdout)
    assert purge.exit_code == 1 and doc["runs"] == 1 and doc["files"] == 0, purge.stdout + purge.stderr
    assert doc["skipped"] == [{"path": str(home / "parquet" / "probe" / f"run={gone_run}"),
                               "reason": "a symbolic link"}]
    assert gone_run not in _samples_by_run(home) and all(ok for _, ok in _samples_by_run(home).values())
    # the damaged file: reported, never deleted, set aside by --repair
    assert damaged.exists()
    check = _run(home, "store", "check", "--json")
    problems = json.loads(check.stdout)["problems"]
    assert check.exit_code == 1 and any(p["path"] == str(damaged) for p in problems), check.stdout
    links = sorted(Path(p["path"]).name for p in problems if p["area"] == "links")
    assert {"fs=lnk", "date=2000-01-03", "collect-h-planted.parquet", "_rollup", f"run={gone_run}"} <= set(links), links
    repair = _run(home, "store", "check", "--repair", "--json")
    _no_traceback(repair.stderr, "store check --repair")
    assert _tree_state(outside) == before
    q = home / "parquet" / "quarantine"
    assert not damaged.exists() and (q / damaged.relative_to(home / "parquet")).read_bytes() == damaged_bytes
    assert np.array_equal(_imported_times(settings, "imp"), sent[sent >= cutoff])


def test_repair_makes_nothing_through_a_link_at_the_quarantine(tmp_path):
    """The one writable path the combined test above leaves out: where --repair sets damaged files aside.
    (It made its directories with Path.mkdir(parents=True), which followed a link there: StoreTree.makedirs.)"""
    home, outside = tmp_path / "home", tmp_path / "outside"
    damaged = _live(Settings(home=home), "old", "2000-01-01")
    damaged.write_bytes(damaged.read_bytes()[:40] + b"\0" * 200)
    outside.mkdir()
    (home / "parquet" / "quarantine").symlink_to(outside)
    _age(home)
    _age(outside)
    before = _tree_state(outside)
    check = _run(home, "store", "check", "--json")
    links = [p["path"] for p in json.loads(check.stdout)["problems"] if p["area"] == "links"]
    repair = _run(home, "store", "check", "--repair", "--json")
    assert _tree_state(outside) == before, _tree_state(outside)
    assert links == [str(home / "parquet" / "quarantine")]
    assert damaged.exists() and repair.exit_code == 1
