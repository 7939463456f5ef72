"""Issue 41 items 1, 4-7 and issue 38 item 3: the store's own cleaners.

Every cleaner (`store prune`, the daemons' retention, `probe retire --purge`, `store check --repair`,
compaction) walks the store with files.StoreTree: a link planted where it deletes is skipped and
said in one line, whatever lies behind it stays byte for byte (and its mtime). After every
operation the store is one `store check` calls whole; what it cannot read is set aside, never
deleted; retention bounds what the daemons record live and never removes imported history unless
`--older-than` names an age, judging rows by their own times.

In-process (click's CliRunner) except where the point is a process: a daemon's retention, a
purge racing a running probe.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from ioweather.cli import cli as main
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import telemetry_layout as layout
from waiting import wait_until
from web_synthetic import add_target

DAY = 86_400 * 10**9
HOUR_AGO = time.time() - 3600


def _run(home: Path, *args: str):
    return CliRunner().invoke(main, ["--home", str(home), *args], catch_exceptions=False)


def _day_ns(iso: str) -> int:
    return int(pd.Timestamp(iso, tz="UTC").value)


def _live(settings: Settings, fs: str, iso_day: str, writer: str = "collect-h", n: int = 4) -> Path:
    """A file as `collect` writes it: `n` rows of one day, one target, read_bytes."""
    t0 = _day_ns(iso_day)
    df = pd.DataFrame({"time_ns": np.arange(n, dtype=np.int64) * 60 * 10**9 + t0, "target": "OST0000",
                       "metric": "read_bytes", "value": np.arange(1.0, n + 1), "interval_s": 60.0})
    paths: list = []
    layout.write_rows(settings, fs, df, writer=writer, paths_out=paths)
    return paths[0]


def _snapshot(root: Path) -> dict:
    """{relative path: (bytes, mtime_ns)} of every file under `root` (links not followed)."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            out[str(p.relative_to(root))] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def _age(root: Path) -> None:
    """Everything an hour old (without following links): before issue 41 prune left files written in the last
    10 minutes alone, so a planted victim must be older for the old code to reach it."""
    for dirpath, dirs, names in os.walk(root):
        for n in dirs + names:
            os.utime(Path(dirpath) / n, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)


def _plant(tmp_path: Path):
    """A store with one real old day to prune and a link at each place prune deletes under; the victims
    live in a directory outside the store that looks like store data."""
    home, victim = tmp_path / "home", tmp_path / "victim"
    settings, vs = Settings(home=home), Settings(home=victim)
    keep = [_live(vs, "v", "2000-01-01"), _live(vs, "v", "2000-01-02"), _live(vs, "v", "2000-01-03")]
    tele = layout.telemetry_dir(settings)
    old = [_live(settings, "real", "2000-01-04"), _live(settings, "real", "2000-01-05")]
    # 1. a whole fs=NAME directory that is a link
    tele.mkdir(parents=True, exist_ok=True)
    (tele / "fs=lnk").symlink_to(layout.fs_dir(vs, "v"))
    # 2. a day directory that is a link
    (tele / "fs=real" / "date=2000-01-02").symlink_to(keep[1].parent)
    # 3. a link in place of a data file
    d3 = tele / "fs=real" / "date=2000-01-03"
    d3.mkdir()
    (d3 / "collect-h-planted.parquet").symlink_to(keep[2])
    # 4. a link in place of a rollup directory, to a directory holding a file of the same name as the data file
    rollups = old[0].parent / "_rollup"
    for f in rollups.iterdir():
        f.unlink()
    rollups.rmdir()
    bait = tmp_path / "bait"
    bait.mkdir()
    (bait / old[0].name).write_bytes(b"not the store's")
    rollups.symlink_to(bait)
    _age(home)
    _age(victim)
    _age(bait)
    return home, settings, old, {"victim": (victim, _snapshot(victim)), "bait": (bait, _snapshot(bait))}


def _untouched(victims: dict) -> None:
    for name, (root, before) in victims.items():
        assert _snapshot(root) == before, f"{name} changed"


@pytest.mark.slow  # 2-10 s here (load 15 on 2 cores): Parquet files with rollups, several commands
def test_prune_never_follows_a_link_and_says_what_it_skipped(tmp_path):
    home, settings, old, victims = _plant(tmp_path)
    r = _run(home, "store", "prune", "--older-than", "1d", "--kind", "telemetry", "--yes", "--json")
    _untouched(victims)
    [k] = json.loads(r.stdout)["kinds"]
    assert k["files"] == 2 and k["rows"] == 8  # exactly the two real old files
    assert not any(p.exists() for p in old)
    reasons = sorted((Path(s["path"]).name, s["reason"]) for s in k["skipped"])
    assert reasons == [("_rollup", "a symbolic link"), ("collect-h-planted.parquet", "a symbolic link"),
                       ("date=2000-01-02", "a symbolic link"), ("fs=lnk", "a symbolic link")]
    assert r.exit_code == 1  # something was left that the admin must look at
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("store prune: skipped 4 paths (not removed): ")
    # the dry run counts the same, and reaches nothing either
    dry = _run(home, "store", "prune", "--older-than", "1d", "--kind", "telemetry", "--json")
    assert json.loads(dry.stdout)["kinds"][0]["files"] == 0
    _untouched(victims)


@pytest.mark.slow  # 2-10 s here (load 15 on 2 cores): Parquet files with rollups, several commands
def test_check_repair_and_compaction_never_follow_a_link(tmp_path):
    from ioweather.store.telemetry_compact import compact_finished_days

    home, settings, old, victims = _plant(tmp_path)
    old[0].unlink()  # its rollup directory is the planted link: "rollup of a data file that is gone" there
    r = _run(home, "store", "check", "--repair", "--json")
    _untouched(victims)
    doc = json.loads(r.stdout)
    links = sorted(Path(p["path"]).name for p in doc["problems"] if p["area"] == "links")
    assert links == ["_rollup", "collect-h-planted.parquet", "date=2000-01-02", "fs=lnk"]
    assert r.exit_code == 1 and not doc["ok"]
    # collect's compaction of its finished days, on a store whose day and fs directories are links
    made = compact_finished_days(layout.fs_dir(settings, "real"), "collect-h", time.time_ns(), 0)
    made += compact_finished_days(layout.telemetry_dir(settings) / "fs=lnk", "collect-h", time.time_ns(), 0)
    assert all(layout.telemetry_dir(settings) in p.parents and "date=2000-01-02" not in str(p) for p in made)
    _untouched(victims)


def _linked_run_archive(tmp_path: Path):
    """A store whose target `t` has two archived days (2-4 days old) and its run's archive directory
    replaced by a link to where the files now are, outside the store: (home, run id, run dir, victim)."""
    from ioweather.store.probe_archive import archive_completed_days

    home = tmp_path / "home"
    store = open_store(Settings(home=home))
    now = time.time_ns()
    run_id = add_target(store, "t", now - 4 * DAY, now - 2 * DAY, period_s=600, seed=1)
    assert archive_completed_days(store, keep_days=1) > 0
    store.dispose()
    run_dir = home / "parquet" / "probe" / f"run={run_id}"
    victim = tmp_path / "victim"
    run_dir.rename(victim)
    run_dir.symlink_to(victim)
    _age(victim)
    return home, run_id, run_dir, victim


def test_purge_never_follows_a_link_in_the_probe_archive(tmp_path):
    home, _, run_dir, victim = _linked_run_archive(tmp_path)
    before = _snapshot(victim)
    r = _run(home, "probe", "retire", "t", "--purge", "--yes", "--json")
    assert _snapshot(victim) == before
    doc = json.loads(r.stdout)
    assert doc["files"] == 0 and doc["runs"] == 1 and before
    assert doc["skipped"] == [{"path": str(run_dir), "reason": "a symbolic link"}]
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "skipped 1 path (not removed)" in r.stderr and "a symbolic link" in r.stderr


@pytest.mark.slow  # a probe run of 2 s in this process
@pytest.mark.parametrize("how", ["store prune", "probe run"])
def test_probe_retention_never_follows_a_link_in_the_probe_archive(tmp_path, monkeypatch, how):
    """Issue 41 item 1, the probe's kind: `store prune --kind probe` and the hourly retention inside
    `probe run` (`watch` runs the same daemon) delete archived probe files once their rows go; with the
    run's archive directory a link, the rows go and the files behind the link stay, said in one line."""
    home, run_id, run_dir, victim = _linked_run_archive(tmp_path)
    before = _snapshot(victim)
    assert before and _archived_rows(home, run_id) > 0
    if how == "store prune":
        r = _run(home, "store", "prune", "--older-than", "1d", "--kind", "probe", "--yes", "--json")
        assert _snapshot(victim) == before
        [k] = json.loads(r.stdout)["kinds"]
        assert k["rows"] > 0 and k["skipped"] == [{"path": str(run_dir), "reason": "a symbolic link"}], k
        assert r.exit_code == 1
        said = r.stderr.strip().splitlines()
    else:
        monkeypatch.setenv("IOWEATHER_RETAIN_PROBE", "1d")
        assert _run(home, "probe", "init", str(tmp_path / "probe"), "--file-size", "2MiB", "--pool", "4").exit_code == 0
        r = _run(home, "probe", "run", str(tmp_path / "probe"), "--duration", "2s", "--interval", "0.5",
                 "--block", "64k", "--target", "live")
        assert r.exit_code == 0, r.stderr
        said = [line for line in r.stderr.splitlines() if "skipped" in line]
    assert _snapshot(victim) == before
    assert _archived_rows(home, run_id) == 0  # its archived days went from the manifest all the same
    assert len(said) == 1 and "skipped 1 path (not removed)" in said[0], said
    assert f"run={run_id} (a symbolic link)" in said[0], said


def _csv(path: Path, times_s: list[float]) -> int:
    with open(path, "w") as f:
        f.write("time,target,metric,value,interval_s\n")
        for t in times_s:
            for target in ("OST0000", "OST0001"):
                f.write(f"{t},{target},read_bytes,1000,60\n")
    return 2 * len(times_s)


def _stored_times(settings: Settings, fs: str) -> np.ndarray:
    files = layout.data_files(layout.fs_dir(settings, fs))
    return np.concatenate([pq.read_table(f, columns=["time_ns"]).column("time_ns").to_numpy() for f in files]) \
        if files else np.array([], dtype=np.int64)


@pytest.mark.slow  # 2-10 s here (load 15 on 2 cores): Parquet files with rollups, several commands
def test_prune_older_than_cuts_rows_by_their_own_times_and_keeps_the_store_whole(tmp_path):
    """Issue 38 item 3 and issue 41 item 4: a CSV spanning 2020-2026 is cut to the rows after the cutoff,
    inside the file of the cutoff's day too, counted exactly; the marker follows, store check says ok."""
    home = tmp_path / "home"
    settings = Settings(home=home)
    cut_s = int(time.time()) - 365 * 86400
    times = [_day_ns(f"{y}-03-01") // 10**9 + h * 3600 for y in (2020, 2021, 2023) for h in range(3)]
    times += [cut_s - 600, cut_s - 300, cut_s + 300, cut_s + 600]  # the cutoff's day: both sides
    times += [_day_ns("2026-01-15") // 10**9 + h * 3600 for h in range(5)]
    _csv(tmp_path / "span.csv", times)
    r = _run(home, "import", "csv", str(tmp_path / "span.csv"), "--fs", "mix")
    assert r.exit_code == 0, r.stderr
    said = r.stdout
    _age(home)  # the old code judged files by when they were written; rows have their own times
    r = _run(home, "store", "prune", "--older-than", "365d", "--kind", "telemetry", "--yes", "--json")
    assert r.exit_code == 0, r.stderr
    [k] = json.loads(r.stdout)["kinds"]
    cutoff = pd.Timestamp(k["cutoff"]).value
    sent = np.repeat(np.array(times, dtype=np.int64) * 10**9, 2)
    left = _stored_times(settings, "mix")
    assert k["rows"] == int((sent < cutoff).sum()) == len(sent) - len(left)  # counted exactly, against a recount
    assert sorted(left) == sorted(sent[sent >= cutoff])
    check = _run(home, "store", "check", "--json")
    assert check.exit_code == 0 and json.loads(check.stdout)["ok"], check.stdout
    assert "imported history is kept until `ioweather store prune --older-than AGE` removes it" in said


def test_check_repairs_a_marker_listing_a_missing_file(tmp_path):
    home = tmp_path / "home"
    _csv(tmp_path / "a.csv", [_day_ns("2024-05-01") / 1e9, _day_ns("2024-05-02") / 1e9])
    assert _run(home, "import", "csv", str(tmp_path / "a.csv"), "--fs", "x").exit_code == 0
    gone = layout.data_files(layout.fs_dir(Settings(home=home), "x"))[0]
    layout.remove_files([gone])  # as a prune of before issue 41 left it
    r = _run(home, "store", "check", "--repair", "--json")
    assert r.exit_code == 0, r.stdout
    [p] = json.loads(r.stdout)["problems"]
    assert p["path"] == str(gone) and "missing: the import marker of csv-" in p["problem"] and p["repaired"]
    assert _run(home, "store", "check").exit_code == 0


@pytest.mark.slow  # 2-10 s here (load 15 on 2 cores): Parquet files with rollups, several commands
def test_a_damaged_file_is_skipped_by_prune_and_readers_and_set_aside_by_repair(tmp_path):
    """Issue 41 item 5: one damaged Parquet file in an old day, one truncated in a recent one."""
    from ioweather.services.runtime import retention

    home = tmp_path / "home"
    settings = Settings(home=home)
    damaged = _live(settings, "x", "2000-01-01")
    kept_old = _live(settings, "x", "2000-01-02")
    damaged.write_bytes(damaged.read_bytes()[:40] + b"\0" * 200)
    day = (time.time_ns() // DAY - 1) * DAY
    recent = [_live(settings, "x", str(pd.Timestamp(day, unit="ns").date()), n=n) for n in (40, 41)]
    truncated = _live(settings, "x", str(pd.Timestamp(day, unit="ns").date()), writer="collect-g", n=40)
    truncated.write_bytes(truncated.read_bytes()[:300])
    _age(home)
    # the daemons' retention: the damaged file is said, the other old day still goes
    said = []
    [k] = retention.prune(None, settings, {"telemetry": 400 * 86400.0}, log=said.append).kinds
    assert not kept_old.exists() and damaged.exists() and k.rows == 4 and k.files == 1
    said = [line for line in said if "skipped" in line]
    assert len(said) == 1 and "unreadable Parquet" in said[0] and "skipped 1 path" in said[0]
    # readers: one note naming what they left out of their window (the 2000 file is outside it), the rest of the data
    r = _run(home, "workload", "--fs", "x", "--since", "3d", "--resample", "60s", "--json")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.count("\n") == 1 and "skipped 1 unreadable telemetry file" in r.stderr and truncated.name in r.stderr
    r = _run(home, "events", "--fs", "x", "--since", "3d", "--json")
    assert r.exit_code == 0 and "skipped 1 unreadable telemetry file" in r.stderr and truncated.name in r.stderr
    # store check finds both, --repair sets them aside (never deletes them), then all is well
    r = _run(home, "store", "check", "--repair", "--json")
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and doc["repaired"] >= 2, r.stdout
    q = home / "parquet" / "quarantine"
    assert sorted(p.name for p in q.rglob("*.parquet")) == sorted([damaged.name, truncated.name])
    assert not damaged.exists() and not truncated.exists()
    assert _run(home, "store", "check").exit_code == 0
    assert all(p.exists() for p in recent)


def test_store_check_reports_and_repairs_samples_without_a_run(tmp_path):
    home = tmp_path / "home"
    store = open_store(Settings(home=home))
    now = time.time_ns()
    run_id = add_target(store, "t", now - 3600 * 10**9, now, period_s=60, seed=1)
    with store.begin() as conn:  # what a purge racing a running probe left before issue 41
        conn.execute(sa.text("DELETE FROM probe_runs WHERE id = :i"), {"i": run_id})
    store.dispose()
    r = _run(home, "store", "check", "--json")
    assert r.exit_code == 1
    [p] = [p for p in json.loads(r.stdout)["problems"] if p["area"] == "probe samples"]
    assert f"360 samples of run {run_id}, which no longer exists" in p["problem"] and p["repairable"]
    assert _run(home, "store", "check", "--repair").exit_code == 0
    assert _run(home, "store", "check").exit_code == 0


def test_slowdown_check_adds_no_wal_or_shm_to_an_existing_store(tmp_path):
    home = tmp_path / "home"
    store = open_store(Settings(home=home))
    now = time.time_ns()
    add_target(store, "t", now - 3600 * 10**9, now, period_s=60, seed=1)
    store.dispose()
    before = sorted(p.name for p in home.iterdir())
    assert not any(n.endswith(("-wal", "-shm")) for n in before)
    r = _run(home, "slowdown", "--check")
    assert r.exit_code == 3 and "IOWEATHER UNKNOWN - t learning the baseline" in r.stdout
    assert sorted(p.name for p in home.iterdir()) == before


def _archived_rows(home: Path, run_id: int) -> int:
    """The samples of `run_id` the probe archive's manifest lists (in Parquet files, out of probe_samples)."""
    store = open_store(Settings(home=home))
    with store.connect() as conn:
        n = conn.execute(sa.text("SELECT coalesce(sum(rows), 0) FROM probe_archive WHERE run_id = :r"),
                         {"r": run_id}).scalar()
    store.dispose()
    return int(n)


def _samples_by_run(home: Path) -> dict:
    store = open_store(Settings(home=home))
    with store.connect() as conn:
        if not sa.inspect(conn).has_table("probe_samples"):
            store.dispose()
            return {}
        rows = conn.execute(sa.text("SELECT run_id, count(*) FROM probe_samples GROUP BY run_id")).all()
        runs = {r[0] for r in conn.execute(sa.text("SELECT id FROM probe_runs"))}
    store.dispose()
    return {rid: (n, rid in runs) for rid, n in rows}


@pytest.mark.slow
def test_purge_while_the_probe_writes_leaves_no_sample_without_its_run(tmp_path):
    """Issue 41 item 6, with a real `probe run` process flushing every 5 s meanwhile."""
    home, d = tmp_path / "home", tmp_path / "probe"
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "ioweather", "probe", "init", str(d), "--file-size", "2MiB", "--pool", "4"],
                   env=env, check=True, capture_output=True)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "probe", "run", str(d), "--interval", "0.1",
                             "--block", "64k", "--target", "t"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_until(lambda: (home / "ioweather.sqlite").exists() and _samples_by_run(home), 60,
                   "the probe's first flush", every=0.3, proc=proc)
        r = _run(home, "probe", "retire", "t", "--purge", "--yes", "--json")
        assert r.exit_code == 0 and json.loads(r.stdout)["runs"] == 1, r.stderr
        time.sleep(11)  # two more flushes of the running probe (every 5 s)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    err = proc.stderr.read()
    assert _samples_by_run(home) == {}, err  # not one sample outlived its run
    assert "was deleted (its target purged)" in err and err.count("was deleted") == 1
    assert _run(home, "store", "check").exit_code == 0


@pytest.mark.slow
def test_collect_retention_keeps_imported_history_and_follows_no_link(tmp_path, testdata):
    """Issue 38 item 3 and issue 41 item 1 with a real `collect -q`: its retention at start removes an old
    live day, keeps a 2018 LMT import whole, skips a planted day link and a planted fs=NAME link (one line
    on stderr)."""
    home = tmp_path / "home"
    settings = Settings(home=home)
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    p = subprocess.run([sys.executable, "-m", "ioweather", "import", "lmt",
                        str(testdata / "lmt" / "snx11025_2018-01-28.sqlite3"), "--fs", "snx11025"],
                       env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    said = p.stdout
    imported = np.sort(_stored_times(settings, "snx11025"))
    assert len(imported) and imported.max() < _day_ns("2019-01-01")
    old_live = _live(settings, "snx11025", "2000-01-01")
    victim = Settings(home=tmp_path / "victim")
    bait = _live(victim, "v", "2000-01-02")
    _live(victim, "v", "2000-01-03")
    # in a file system listed after the imported one: the old code stopped at the link (rmtree refuses one)
    layout.fs_dir(settings, "zz").mkdir()
    (layout.fs_dir(settings, "zz") / "date=2000-01-02").symlink_to(bait.parent)
    # a whole dataset that is a link (listed first): the old code rmtree()d the real day directories behind it
    layout.fs_dir(settings, "lnk").symlink_to(layout.fs_dir(victim, "v"))
    _age(home)
    _age(tmp_path / "victim")
    before = _snapshot(tmp_path / "victim")
    p = subprocess.run([sys.executable, "-m", "ioweather", "collect", "--proc-root", str(testdata / "lustre-procfs"),
                        "--sources", "lustre", "--interval", "0.5s", "--duration", "3s", "-q"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert _snapshot(tmp_path / "victim") == before
    assert not old_live.exists()  # the retention ran
    left = np.sort(_stored_times(settings, "snx11025"))
    in_2018 = (left >= _day_ns("2018-01-01")) & (left < _day_ns("2019-01-01"))
    assert np.array_equal(left[in_2018], imported)  # the 2018 history, whole
    # the retention's line only: on a loaded machine the collector may also say a source was "skipped until
    # it returns" (its 0.4 s timeout), which is not what this test is about
    lines = [ln for ln in p.stderr.splitlines() if "skipped" in ln and "until it returns" not in ln]
    assert len(lines) == 1 and "skipped 2 paths (not removed)" in lines[0], lines
    assert "date=2000-01-02 (a symbolic link)" in lines[0] and "fs=lnk (a symbolic link)" in lines[0], lines
    assert "imported history is kept until" in said


@pytest.mark.slow  # a real tmpfs mount and two commands
def test_prune_and_check_never_cross_a_mount_point(tmp_path, tmpfs):
    """A file system mounted where the store keeps a day (a bind or tmpfs mount by anyone who can): its files
    are someone else's; prune and repair leave the mount whole and say so."""
    home = tmp_path / "home"
    settings = Settings(home=home)
    real = _live(settings, "real", "2000-01-04")
    day = layout.fs_dir(settings, "real") / "date=2000-01-07"
    mounted = tmpfs(str(day.relative_to(tmp_path)))
    bait = _live(Settings(home=tmp_path / "victim"), "v", "2000-01-07")
    (mounted / bait.name).write_bytes(bait.read_bytes())
    _age(home)
    before = _snapshot(mounted)
    r = _run(home, "store", "prune", "--older-than", "1d", "--kind", "telemetry", "--yes", "--json")
    assert _snapshot(mounted) == before
    [k] = json.loads(r.stdout)["kinds"]
    assert k["files"] == 1 and not real.exists()
    assert k["skipped"] == [{"path": str(day), "reason": "a mount point"}] and r.exit_code == 1
    r = _run(home, "store", "check", "--repair", "--json")
    assert [p["path"] for p in json.loads(r.stdout)["problems"]] == [str(day)] and _snapshot(mounted) == before


@pytest.mark.slow  # collect for 3 s in this process
def test_collect_hourly_retention_keeps_imported_history(tmp_path, testdata, monkeypatch):
    """Issue 38 item 3, the hourly pass: `collect` enforces the default retention (400 days) at start and then
    every RETENTION_EVERY_S (an hour; 0.5 s here). An old live day written after the start's pass is removed
    by a later one, so the hourly passes ran and enforce; the 2018 LMT import stays whole through all of them."""
    from ioweather.services.runtime import daemon, retention

    home = tmp_path / "home"
    settings = Settings(home=home)
    monkeypatch.delenv("IOWEATHER_RETAIN_TELEMETRY", raising=False)
    r = _run(home, "import", "lmt", str(testdata / "lmt" / "snx11025_2018-01-28.sqlite3"), "--fs", "snx11025", "-q")
    assert r.exit_code == 0, r.output
    imported = np.sort(_stored_times(settings, "snx11025"))
    assert len(imported) == 12_689 and imported.max() < _day_ns("2019-01-01")
    first_old = _live(settings, "snx11025", "2000-01-01")
    _age(home)
    passes, late = [], []
    real = retention.prune

    def counted(*args, **kwargs):
        out = real(*args, **kwargs)
        passes.append(out)
        if len(passes) == 1:  # after the start's pass: only a later one can remove this
            late.append(_live(settings, "snx11025", "2000-01-05"))
            os.utime(late[0], (HOUR_AGO, HOUR_AGO))
        return out

    monkeypatch.setattr(daemon, "RETENTION_EVERY_S", 0.5)
    monkeypatch.setattr(retention, "prune", counted)
    r = _run(home, "collect", "--proc-root", str(testdata / "lustre-procfs"), "--sources", "lustre",
             "--interval", "0.5s", "--duration", "3s", "-q")
    assert r.exit_code == 0, r.output
    assert len(passes) >= 2, passes
    assert not first_old.exists() and late and not late[0].exists()  # the start's pass and a later one removed
    left = np.sort(_stored_times(settings, "snx11025"))
    in_2018 = (left >= _day_ns("2018-01-01")) & (left < _day_ns("2019-01-01"))
    assert np.array_equal(left[in_2018], imported)  # every imported 2018 row, after every pass
    assert [k.rows for p in passes for k in p.kinds] == [4, 4] + [0] * (len(passes) - 2)
