"""`import iostat|tts|csv`: real iostat output, a sysstat 11 variant, pytokio HDF5 files, the long CSV,
and the bad inputs the issue lists (unparseable times, duplicates, disorder, time zones)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import datetime, timezone

import h5py
import numpy as np
import pandas as pd
import pytest

from ioweather.services.telemetry.imports import import_one
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.sources.telemetry.iostat_json import parse_iostat_json, parse_timestamp
from ioweather.store import telemetry_layout as layout

S = 1_000_000_000


def imp(settings, kind, source, fs="t", tz=None, interval=None, cumulative=False):
    return import_one(settings, kind, str(source), fs, tz=tz, since_ns=None, until_ns=None, interval=interval,
                      cumulative=cumulative)


# -- iostat ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real_iostat(tmp_path_factory):
    """Two runs of the real sysstat iostat at once: ISO timestamps and the C locale's."""
    if not shutil.which("iostat"):
        pytest.skip("sysstat's iostat is not installed")
    d = tmp_path_factory.mktemp("iostat")
    runs = {}
    for name, env in (("iso", {"S_TIME_FORMAT": "ISO"}), ("c", {"LC_ALL": "C", "S_TIME_FORMAT": ""})):
        runs[name] = subprocess.Popen(["iostat", "-x", "-t", "-o", "JSON", "1", "3"], stdout=subprocess.PIPE,
                                      text=True, env={**os.environ, **env})
    out = {}
    for name, proc in runs.items():
        text, _ = proc.communicate(timeout=30)
        (d / f"{name}.json").write_text(text)
        out[name] = d / f"{name}.json"
    return out


def test_real_iostat_amounts_are_rate_times_interval(real_iostat, tmp_path):
    settings = Settings(home=tmp_path / "h")
    doc = json.loads(real_iostat["iso"].read_text())["sysstat"]["hosts"][0]
    reports = doc["statistics"]
    summary = imp(settings, "iostat", real_iostat["iso"])
    df = layout.read_frame(settings, "t")
    devices = {d["disk_device"] for d in reports[1]["disk"]}
    assert summary.rows == (len(reports) - 1) * (len(devices) * 5 + 1)   # the since-boot report is skipped
    node = doc["nodename"]
    for prev, rep in zip(reports, reports[1:]):
        t0 = datetime.fromisoformat(prev["timestamp"]).astimezone(timezone.utc)
        t1 = datetime.fromisoformat(rep["timestamp"]).astimezone(timezone.utc)
        dt = (t1 - t0).total_seconds()
        at = df[df.time_ns == int(t0.timestamp()) * S].set_index(["target", "metric"])["value"]
        for disk in rep["disk"]:
            tgt = f"{node}:{disk['disk_device']}"
            assert at[(tgt, "read_bytes")] == pytest.approx(disk["rkB/s"] * 1024 * dt)
            assert at[(tgt, "write_ops")] == pytest.approx(disk["w/s"] * dt)
            assert at[(tgt, "busy_s")] == pytest.approx(disk["util"] / 100 * dt)
        assert at[(node, "cpu_pct")] == pytest.approx(100 - rep["avg-cpu"]["idle"])
    # the C locale's month/day/year timestamps land on the same day and minute as the ISO ones
    c_first = json.loads(real_iostat["c"].read_text())["sysstat"]["hosts"][0]["statistics"][0]["timestamp"]
    t_c, _ = parse_timestamp(c_first, "UTC")
    t_iso, _ = parse_timestamp(reports[0]["timestamp"])
    assert abs(t_c - t_iso) < 60 * S


SYSSTAT11 = {"sysstat": {"hosts": [{"nodename": "oss7", "sysname": "Linux", "release": "3.10.0", "machine": "x86_64",
    "number-of-cpus": 16, "date": "01/28/2018", "statistics": [
        {"timestamp": "01/28/2018 08:59:50 AM", "avg-cpu": {"user": 1.0, "nice": 0.0, "system": 1.0, "iowait": 0.0,
                                                            "steal": 0.0, "idle": 98.0},
         "disk": [{"disk_device": "sdb", "rrqm": 0.0, "wrqm": 0.0, "r": 9.0, "w": 9.0, "rkB": 99.0, "wkB": 99.0,
                   "avgrq-sz": 8.0, "avgqu-sz": 0.0, "await": 1.0, "r_await": 1.0, "w_await": 1.0, "svctm": 1.0,
                   "util": 9.0}]},
        {"timestamp": "01/28/2018 09:00:00 AM", "avg-cpu": {"user": 20.0, "nice": 0.0, "system": 5.0, "iowait": 5.0,
                                                            "steal": 0.0, "idle": 70.0},
         "disk": [{"disk_device": "sdb", "rrqm": 0.0, "wrqm": 1.0, "r": 100.0, "w": 50.0, "rkB": 4096.0,
                   "wkB": 2048.0, "avgrq-sz": 64.0, "avgqu-sz": 1.5, "await": 3.0, "r_await": 2.0, "w_await": 5.0,
                   "svctm": 1.0, "util": 40.0}]},
        {"timestamp": "01/28/2018 01:00:10 PM", "avg-cpu": {"user": 1.0, "nice": 0.0, "system": 1.0, "iowait": 0.0,
                                                            "steal": 0.0, "idle": 98.0},
         "disk": [{"disk_device": "sdb", "r": 1.0, "w": 2.0, "rkB": 8.0, "wkB": 16.0, "util": 1.0}]}]}]}}


def test_sysstat_11_keys_12_hour_clock_and_time_zone():
    long = parse_iostat_json(json.dumps(SYSSTAT11), "Europe/Paris")
    df = long.frame.set_index(["time_ns", "target", "metric"])["value"]
    t = int(datetime(2018, 1, 28, 8, 0, 0, tzinfo=timezone.utc).timestamp()) * S   # 09:00 in Paris = 08:00 UTC
    assert df[(t - 10 * S, "oss7:sdb", "read_bytes")] == 4096 * 1024 * 10           # rkB (per second) x 10 s
    assert df[(t - 10 * S, "oss7:sdb", "write_ops")] == 50 * 10
    assert df[(t - 10 * S, "oss7:sdb", "busy_s")] == pytest.approx(4.0)
    assert df[(t - 10 * S, "oss7", "cpu_pct")] == 30.0
    assert df[(t, "oss7:sdb", "read_ops")] == 1.0 * 4 * 3600 + 10                    # 09:00:00 AM -> 01:00:10 PM
    assert any("Europe/Paris" in n for n in long.notes)


def test_iostat_variants_and_bad_input(tmp_path):
    mb = json.loads(json.dumps(SYSSTAT11))
    for rep in mb["sysstat"]["hosts"][0]["statistics"]:
        rep["timestamp"] = rep["timestamp"].replace("01/28/2018", "28/01/18")        # a day-first locale
        for d in rep["disk"]:
            d["rMB/s"] = d.pop("rkB") / 1024
    df = parse_iostat_json(json.dumps(mb)).frame
    assert df[df.metric == "read_bytes"].value.iloc[0] == 4096 * 1024 * 10
    assert pd.Timestamp(df.time_ns.min(), tz="UTC").month == 1
    settings = Settings(home=tmp_path / "h")
    bad = tmp_path / "bad.json"
    for content, reason in (("iostat: not json", "not iostat JSON"),
                            (json.dumps({"sysstat": {"hosts": [{"nodename": "x", "statistics": [{"disk": []}]}]}}),
                             "no timestamps: run iostat with -t"),
                            (json.dumps({"sysstat": {"hosts": [{"nodename": "x", "statistics": [
                                SYSSTAT11["sysstat"]["hosts"][0]["statistics"][0]]}]}}), "only one report"),
                            (json.dumps({"sysstat": {"hosts": [{"nodename": "x", "statistics": [
                                {"timestamp": "2018-01-28T08:00:00+0000", "disk": [{"disk_device": "a", "foo": 1}]},
                                {"timestamp": "2018-01-28T08:00:01+0000", "disk": [{"disk_device": "a", "foo": 1}]}]}]}}),
                             "unknown device keys")):
        bad.write_text(content)
        with pytest.raises(UserError, match=reason):
            imp(settings, "iostat", bad)
    assert layout.list_fs(settings) == []


# -- pytokio TTS -----------------------------------------------------------------------------------

def test_tts_sample_rates_become_bytes_per_step(testdata, tmp_path):
    settings = Settings(home=tmp_path / "h")
    path = testdata / "pytokio/sample_tokiots.hdf5"
    summary = imp(settings, "tts", path)
    df = layout.read_frame(settings, "t")
    with h5py.File(path, "r") as f:
        ts = f["datatargets/timestamps"][:]
        step = ts[1] - ts[0]
        for name, metric in (("readrates", "read_bytes"), ("writerates", "write_bytes")):
            ds = f[f"datatargets/{name}"]
            ref = pd.DataFrame(ds[:], index=ts * S, columns=[c.decode() for c in ds.attrs["columns"]])
            mine = df[df.metric == metric].pivot(index="time_ns", columns="target", values="value")[ref.columns]
            never_filled = (ref.to_numpy() == 0) & np.signbit(ref.to_numpy())
            assert (np.isnan(mine.to_numpy()) == (never_filled | np.isnan(ref.to_numpy()))).all()
            ok = ~np.isnan(mine.to_numpy())
            assert np.allclose(mine.to_numpy()[ok], ref.to_numpy()[ok] * step)
    assert summary.rows == 2 * ref.size and (df.interval_s == step).all()


def test_tts_written_here_with_missing_values_and_groups(tmp_path):
    path = tmp_path / "small.hdf5"
    with h5py.File(path, "w") as f:
        for g in ("datatargets", "mdtargets", "fullness", "weird"):
            f.create_dataset(f"{g}/timestamps", data=np.array([1000, 1005, 1010]))
        f.create_dataset("datatargets/readbytes", data=np.array([[1.0, -0.0], [2.0, 0.0], [np.nan, 4.0]]))
        f["datatargets/readbytes"].attrs["columns"] = [b"fs-OST0000", b"fs-OST0001"]
        f.create_dataset("mdtargets/opens", data=np.array([[5.0], [6.0], [7.0]]))
        f["mdtargets/opens"].attrs["columns"] = [b"mds1"]
        f.create_dataset("fullness/bytes", data=np.full((3, 1), 10.0))
        f.create_dataset("fullness/bytestotal", data=np.full((3, 1), 30.0))
        for n in ("bytes", "bytestotal"):
            f[f"fullness/{n}"].attrs["columns"] = [b"fs-OST0000"]
        f.create_dataset("weird/thing", data=np.zeros((3, 1)))
    settings = Settings(home=tmp_path / "h")
    summary = imp(settings, "tts", path)
    df = layout.read_frame(settings, "t").set_index(["time_ns", "target", "metric"])["value"]
    assert df[(1000 * S, "fs-OST0000", "read_bytes")] == 1.0
    assert np.isnan(df[(1000 * S, "fs-OST0001", "read_bytes")])       # -0.0: never filled
    assert df[(1005 * S, "fs-OST0001", "read_bytes")] == 0.0           # +0.0: nothing moved
    assert np.isnan(df[(1010 * S, "fs-OST0000", "read_bytes")])
    assert df[(1005 * S, "mds1", "md_open")] == 6.0
    assert df[(1000 * S, "fs-OST0000", "free_bytes")] == 20 * 1024
    assert df[(1000 * S, "fs-OST0000", "capacity_bytes")] == 30 * 1024
    assert any("weird/thing" in n for n in summary.notes)


def test_tts_and_lmt_imports_of_the_same_five_minutes_agree(testdata, shared_data, tmp_path):
    settings = Settings(home=tmp_path / "h")
    imp(settings, "tts", shared_data / "tokio/snx11025_2018-01-28.hdf5", fs="tts")
    imp(settings, "lmt", testdata / "lmt/snx11025_2018-01-28.sqlite3", fs="lmt", tz="America/Los_Angeles")
    for metric in ("read_bytes", "write_bytes"):
        a = layout.read_frame(settings, "tts", f"metric = '{metric}'")
        b = layout.read_frame(settings, "lmt", f"metric = '{metric}'")
        pd.testing.assert_frame_equal(a, b)


def test_tts_bad_files(tmp_path):
    settings = Settings(home=tmp_path / "h")
    (tmp_path / "x.hdf5").write_text("not hdf5")
    with pytest.raises(UserError, match="not an HDF5 file"):
        imp(settings, "tts", tmp_path / "x.hdf5")
    with h5py.File(tmp_path / "empty.hdf5", "w") as f:
        f.create_dataset("a/b", data=[1, 2])
    with pytest.raises(UserError, match="not a TOKIO time series"):
        imp(settings, "tts", tmp_path / "empty.hdf5")
    with pytest.raises(UserError, match="not found"):
        imp(settings, "tts", tmp_path / "missing.hdf5")


# -- long CSV --------------------------------------------------------------------------------------

def test_csv_times_zones_disorder_duplicates(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(
        "time,target,metric,value\n"
        "2024-03-01T10:00:10Z,ost1,read_bytes,30\n"        # out of order
        "2024-03-01T10:00:00Z,ost1,read_bytes,10\n"
        "2024-03-01T12:00:05+02:00,ost1,read_bytes,20\n"   # = 10:00:05Z
        "1709287200,ost2,read_bytes,5\n"                    # = 10:00:00Z in unix seconds
        "1709287205.0,ost2,read_bytes,\n"                   # empty: missing
        "2024-03-01 05:00:10,ost2,read_bytes,7\n"           # naive: America/New_York (EST, UTC-5) = 10:00:10Z
        "2024-03-01T10:00:10Z,ost1,read_bytes,33\n"         # duplicate of the first row: the last wins
        "2024-03-01T10:00:15Z,ost2,read_bytes,-4\n")        # impossible amount
    settings = Settings(home=tmp_path / "h")
    summary = imp(settings, "csv", p, tz="America/New_York")
    df = layout.read_frame(settings, "t")
    t0 = int(datetime(2024, 3, 1, 10, tzinfo=timezone.utc).timestamp()) * S
    got = df.set_index(["target", "time_ns"])["value"]
    assert got[("ost1", t0)] == 10 and got[("ost1", t0 + 5 * S)] == 20 and got[("ost1", t0 + 10 * S)] == 33
    assert got[("ost2", t0)] == 5 and np.isnan(got[("ost2", t0 + 5 * S)]) and got[("ost2", t0 + 10 * S)] == 7
    assert np.isnan(got[("ost2", t0 + 15 * S)])
    assert (df.interval_s == 5.0).all()                      # each series' spacing
    notes = " ".join(summary.notes)
    assert "sorted" in notes and "1 duplicate" in notes and "1 negative" in notes


def test_csv_cumulative_counters_reset_and_interval_column(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("time,target,metric,value,interval_s\n"
                 + "".join(f"{100 + 10 * i},sda,write_bytes,{v},10\n" for i, v in enumerate([0, 50, 80, 20, 60]))
                 + "160,sda,write_bytes,90,10\n")            # 60 s after the previous: a gap
    settings = Settings(home=tmp_path / "h")
    imp(settings, "csv", p, cumulative=True)
    v = layout.read_frame(settings, "t")["value"].tolist()
    assert v[:2] == [50, 30] and np.isnan(v[2]) and v[3] == 40   # 80 -> 20: restarted
    assert len(v) == 4 + 2 and all(np.isnan(v[4:]))               # 140 -> 160 at 10 s: 2 missing intervals


def test_csv_bad_files_fail_whole_and_alone(cli, home, tmp_path):
    good, bad, cols, dst = (tmp_path / n for n in ("good.csv", "bad.csv", "cols.csv", "dst.csv"))
    good.write_text("time,target,metric,value\n0,a,read_bytes,1\n5,a,read_bytes,2\n")
    bad.write_text("time,target,metric,value\n0,a,read_bytes,1\nyesterday,a,read_bytes,2\n")
    cols.write_text("when,what,value\n0,a,1\n")
    dst.write_text("time,target,metric,value,interval_s\n2023-11-05 01:30:00,a,read_bytes,1,60\n")
    p = cli("import", "csv", str(bad), str(good), str(cols), "--fs", "x", "--json", home=home)
    assert p.returncode == 2
    assert "bad.csv line 3: unparseable time 'yesterday'" in p.stderr
    assert "missing column(s) time, target, metric" in p.stderr
    out = json.loads(p.stdout)
    assert out["rows"] == 2 and out["failed"] == 2
    df = layout.read_frame(Settings(home=home), "x")
    assert df.value.tolist() == [1.0, 2.0]                   # the good file only, nothing of the bad one
    # 01:30 happened twice that night in New York; a lone reading takes the first (EDT, UTC-4)
    settings = Settings(home=tmp_path / "h2")
    imp(settings, "csv", dst, tz="America/New_York")
    t = layout.read_frame(settings, "t").time_ns.iloc[0]
    assert pd.Timestamp(t, tz="UTC") == pd.Timestamp("2023-11-05T05:30:00Z")
