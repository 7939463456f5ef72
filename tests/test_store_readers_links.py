"""Issue 41 leftovers: the telemetry readers follow no link they did not create, and `store check`
neither lists the files of a linked directory nor follows a planted `.tmp` link when it removes it.

Planted: a `fs=NAME` directory that is a link to another dataset, a day directory linked to a day of
that dataset, a data file that is a link to one of its files, and a `_rollup` directory linked to a
directory of bait rollups. Every reader must see the real rows alone, and nothing behind a link may
change (bytes and mtime)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from ioweather.cli import cli as main
from ioweather.config import Settings
from ioweather.store import telemetry_layout as layout

HOUR_AGO = time.time() - 3600


def _run(home: Path, *args: str):
    return CliRunner().invoke(main, ["--home", str(home), *args], catch_exceptions=False)


def _write(settings: Settings, fs: str, iso_day: str, value: float, writer: str = "collect-h") -> Path:
    """Ten minutes of one OST's read_bytes at 60 s, each interval `value` bytes."""
    t0 = int(pd.Timestamp(iso_day, tz="UTC").value)
    df = pd.DataFrame({"time_ns": np.arange(10, dtype=np.int64) * 60 * 10**9 + t0, "target": "OST0000",
                       "metric": "read_bytes", "value": value, "interval_s": 60.0})
    paths: list = []
    layout.write_rows(settings, fs, df, writer=writer, paths_out=paths)
    return paths[0]


def _snapshot(root: Path) -> dict:
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = Path(dirpath) / n
            out[str(p.relative_to(root))] = (p.read_bytes(), os.lstat(p).st_mtime_ns)
    return out


def _planted(tmp_path: Path):
    home, victim = tmp_path / "home", tmp_path / "victim"
    settings, vs = Settings(home=home), Settings(home=victim)
    theirs = [_write(vs, "v", "2020-03-0%d" % d, 7e9) for d in (1, 2, 3)]
    mine = [_write(settings, "real", "2020-03-01", 1e6), _write(settings, "real", "2020-03-03", 1e6)]
    tele = layout.telemetry_dir(settings)
    (tele / "fs=lnk").symlink_to(layout.fs_dir(vs, "v"))                     # a whole dataset
    (tele / "fs=real" / "date=2020-03-02").symlink_to(theirs[1].parent)       # a day
    (mine[1].parent / "collect-h-planted.parquet").symlink_to(theirs[2])     # a file
    rollups = mine[0].parent / "_rollup"                                      # a rollup directory
    for f in rollups.iterdir():
        f.unlink()
    rollups.rmdir()
    bait = tmp_path / "bait"
    bait.mkdir()
    os.link(layout.rollup.rollup_path(theirs[0]), bait / mine[0].name)       # a valid rollup of 7 GB intervals
    rollups.symlink_to(bait)
    for root in (victim, bait):
        for dirpath, dirs, names in os.walk(root):
            for n in dirs + names:
                os.utime(Path(dirpath) / n, (HOUR_AGO, HOUR_AGO), follow_symlinks=False)
    return home, settings, {"victim": (victim, _snapshot(victim)), "bait": (bait, _snapshot(bait))}


@pytest.mark.slow  # a store built by several commands, a server or a probe history: seconds
def test_readers_follow_no_planted_link(tmp_path):
    home, settings, victims = _planted(tmp_path)
    assert layout.list_fs(settings) == ["real"]
    files = layout.data_files(layout.fs_dir(settings, "real"))
    assert [f.parent.name for f in files] == ["date=2020-03-01", "date=2020-03-03"], files
    # the named-days path (a window of a few days) too
    since, until = (int(pd.Timestamp(x, tz="UTC").value) for x in ("2020-03-01", "2020-03-04"))
    assert layout.data_files(layout.fs_dir(settings, "real"), since, until) == files
    df = layout.read_frame(settings, "real")
    assert len(df) == 20 and (df["value"] == 1e6).all()
    # workload reads rollups where it can: the bait's would say 7 GB per interval
    r = _run(home, "workload", "--fs", "real", "--since", "2020-03-01T00:00:00Z", "--until", "2020-03-04T00:00:00Z",
             "--resample", "60s", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["read_bytes"] == 20e6 and doc["samples"] == 20, doc["read_bytes"]
    r = _run(home, "workload", "--fs", "lnk", "--json")
    assert r.exit_code != 0 and "lnk" in r.output
    for name, (root, before) in victims.items():
        assert _snapshot(root) == before, f"{name} changed"


@pytest.mark.slow  # a store built by several commands, a server or a probe history: seconds
def test_store_check_lists_nothing_behind_a_link_and_repair_removes_planted_tmp_links(tmp_path):
    """A run directory of the probe archive and a jobs part linked elsewhere, and `.tmp` links (to a
    file, to a directory) where the store keeps temporaries: check names each link once and lists no file
    behind one; --repair removes the `.tmp` links themselves (the store never makes one), not their targets."""
    from ioweather.store import jobs, open_store, probe

    home, settings, victims = _planted(tmp_path)
    store = open_store(settings)
    store.require(probe.COMPONENT)  # the probe archive's and the jobs' tables: their checks run
    store.require(jobs.COMPONENT)
    store.dispose()
    victim = victims["victim"][0]
    elsewhere = victim / "runs"
    elsewhere.mkdir()
    pd.DataFrame({"x": [1, 2]}).to_parquet(elsewhere / "part-0.parquet")
    probe_dir = settings.parquet_dir / "probe"
    probe_dir.mkdir(parents=True)
    (probe_dir / "run=999").symlink_to(elsewhere)
    jobs_dir = jobs.files_dir(settings.parquet_dir)
    jobs_dir.mkdir(parents=True)
    (jobs_dir / "files-0123.parquet").symlink_to(elsewhere / "part-0.parquet")
    day = layout.data_files(layout.fs_dir(settings, "real"))[0].parent
    target = victim / "precious.txt"
    target.write_text("not the store's")
    os.utime(target, (HOUR_AGO, HOUR_AGO))
    (day / ".collect-h-x.parquet.tmp").symlink_to(target)
    (settings.parquet_dir / "telemetry" / ".collect-h.intent.json.tmp").symlink_to(elsewhere)
    os.utime(elsewhere, (HOUR_AGO, HOUR_AGO))
    victims = {"victim": (victim, _snapshot(victim)), "bait": victims["bait"]}

    doc = json.loads(_run(home, "store", "check", "--json").stdout)
    behind = [p for p in doc["problems"] if p["path"] and str(victim) in p["path"]]
    assert behind == [], behind
    listed = [p["path"] for p in doc["problems"] if p["area"] in ("probe archive", "jobs")]
    assert listed == [], listed
    links = {Path(p["path"]).name for p in doc["problems"] if p["area"] == "links"}
    assert {"run=999", "files-0123.parquet"} <= links, links
    tmps = sorted(Path(p["path"]).name for p in doc["problems"] if p["area"] == "temporary files")
    assert tmps == [".collect-h-x.parquet.tmp", ".collect-h.intent.json.tmp"], doc["problems"]

    r = _run(home, "store", "check", "--repair", "--json")
    assert not os.path.lexists(day / ".collect-h-x.parquet.tmp")
    assert not os.path.lexists(settings.parquet_dir / "telemetry" / ".collect-h.intent.json.tmp")
    assert target.read_text() == "not the store's" and (elsewhere / "part-0.parquet").exists()
    for name, (root, before) in victims.items():
        assert _snapshot(root) == before, f"{name} changed"
    assert r.exit_code == 1  # the links that are not temporaries stay, for the admin to look at
