"""Property-based fuzzing of every `ioweather import` kind (issue 19, "keep it fixed"): whatever the
bytes of a SOURCE, the import ends in rows or in one UserError, within a deadline, and a failed
import leaves no file behind.

Each target builds inputs near the real format (so that the fuzzer gets past the first line) and
mixes in garbage. Short in CI: IOWEATHER_FUZZ_EXAMPLES examples per target (default 15). The long
run (docs/telemetry.md):

    IOWEATHER_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/test_fuzz_importers.py -q
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from datetime import timedelta
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.telemetry.imports import import_one

EXAMPLES = int(os.environ.get("IOWEATHER_FUZZ_EXAMPLES", "15"))
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=20), derandomize=not os.environ.get(
    "IOWEATHER_FUZZ_RANDOM"), suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

pytestmark = pytest.mark.timeout(600)


def _check(kind: str, write, **kw) -> None:
    """Import what `write(dir)` made: rows, or a UserError that left no file in the store."""
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        source = write(d)
        home = d / "home"
        try:
            summary = import_one(Settings(home=home), kind, str(source), "f", **kw)
        except UserError as e:
            assert "\n" not in str(e)
            left = [p for p in home.rglob("*") if p.is_file() and p.suffix in (".parquet", ".tmp")]
            assert left == [], f"a failed import left {left}"
            return
        assert summary.rows > 0
        _check_stored(home)


def _check_stored(home: Path) -> None:
    """What an import stored: no infinite value, no interval outside what a sample can cover (issue 32:
    `interval_s=1e-320` was stored and broke `workload` for good)."""
    from ioweather.services.telemetry.ingest import MAX_INTERVAL_S, MIN_INTERVAL_S
    from ioweather.store import telemetry_layout as layout

    frame = layout.read_frame(Settings(home=home), "f")
    value, iv = frame["value"].to_numpy(np.float64), frame["interval_s"].to_numpy(np.float64)
    assert not np.isinf(value).any(), frame[np.isinf(value)]
    ok = np.isnan(iv) | ((iv >= MIN_INTERVAL_S) & (iv <= MAX_INTERVAL_S))
    assert ok.all(), frame[~ok]


def _text_file(name: str, text: str):
    def write(d: Path) -> Path:
        (d / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        return d / name
    return write


junk = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)
numberish = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-10**30, 10**30).map(str),
                      st.sampled_from(["", "nan", "inf", "-inf", "1e309", "-0", "0x10", "1,5",
                                       # ±huge, subnormal (tiny), overflowing an int64 (issue 32 item 11)
                                       "1e308", "-1e308", "1.7976931348623157e308", "1e-320", "-1e-320", "4.9e-324",
                                       "99999999999999999999", "-9223372036854775809"]), junk)
timeish = st.one_of(
    st.datetimes().map(lambda t: t.isoformat()), st.datetimes().map(lambda t: t.strftime("%m/%d/%y %H:%M:%S")),
    st.sampled_from(["0001-01-01", "9999-12-31T23:59:59Z", "13/13/26 99:99:99", "02/30/26 00:00:00", "1e30", "-5"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr), junk)


# -- CSV -----------------------------------------------------------------------------------------

@FUZZ
@given(rows=st.lists(st.tuples(timeish, junk, junk, numberish, numberish), max_size=8),
       header=st.sampled_from(["time,target,metric,value", "time,target,metric,value,interval_s", "a,b"]),
       cumulative=st.booleans(), tz=st.sampled_from([None, "Europe/Paris"]))
def test_fuzz_csv(rows, header, cumulative, tz):
    text = header + "\n" + "".join(",".join(r[: header.count(",") + 1]) + "\n" for r in rows)
    _check("csv", _text_file("x.csv", text), interval=60.0, cumulative=cumulative, tz=tz)


# -- iostat JSON ---------------------------------------------------------------------------------

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(), junk)
disk = st.one_of(st.dictionaries(st.sampled_from(["disk_device", "r/s", "w/s", "rkB/s", "wkB/s", "util", "r", "rMB"]),
                                 st.one_of(json_leaf, numberish), max_size=6), json_leaf)
report = st.one_of(st.fixed_dictionaries({"timestamp": timeish, "disk": st.one_of(st.lists(disk, max_size=3), json_leaf)},
                                         optional={"avg-cpu": st.one_of(st.fixed_dictionaries({"idle": json_leaf}),
                                                                        json_leaf)}), json_leaf)
host = st.one_of(st.fixed_dictionaries({"nodename": json_leaf, "statistics": st.one_of(st.lists(report, max_size=4),
                                                                                        json_leaf)}), json_leaf)


@FUZZ
@given(hosts=st.one_of(st.lists(host, max_size=3), json_leaf), raw=st.one_of(st.none(), junk))
def test_fuzz_iostat(hosts, raw):
    text = raw if raw is not None else json.dumps({"sysstat": {"hosts": hosts}})
    _check("iostat", _text_file("x.json", text))


# -- TTS / HDF5 ----------------------------------------------------------------------------------

@FUZZ
@given(times=st.lists(st.one_of(st.integers(-10**19 + 1, 10**19 - 1), st.floats()), min_size=0, max_size=6),
       cols=st.integers(0, 3), names=st.lists(junk.map(lambda s: s.replace("\x00", "")), max_size=4), group=st.sampled_from(["datatargets", "mdtargets",
                                                                                       "fullness", "x"]),
       dataset=st.sampled_from(["readbytes", "readrates", "opens", "bytes", "cpuload", "timestamps"]),
       flips=st.lists(st.tuples(st.integers(0, 20_000), st.binary(min_size=1, max_size=8)), max_size=3),
       fill=st.one_of(st.just(1.0), st.floats(), st.sampled_from([1e308, -1e308, 5e-324, -5e-324])))
def test_fuzz_tts(times, cols, names, group, dataset, flips, fill):
    def write(d: Path) -> Path:
        path = d / "x.h5"
        with h5py.File(path, "w") as f:
            g = f.create_group(group)
            g.create_dataset("timestamps", data=np.asarray(times, dtype=np.float64))
            if dataset != "timestamps":
                ds = g.create_dataset(dataset, data=np.full((len(times), cols), fill))
                if names:
                    ds.attrs["columns"] = [n.encode("utf-8", "surrogateescape") for n in names]
                if group == "fullness":
                    g.create_dataset("bytestotal", data=np.ones((len(times), cols)))
        data = bytearray(path.read_bytes())
        for off, b in flips:  # damage: bytes overwritten anywhere in the file
            off %= len(data)
            data[off:off + len(b)] = b
        path.write_bytes(bytes(data))
        return path
    _check("tts", write)


# -- mmperfmon, lfs df, lctl dl -t: text archives -------------------------------------------------

@FUZZ
@given(legend=st.lists(st.tuples(junk, st.sampled_from(["GPFSNSDDisk", "CPU", "Memory", "x"]),
                                 st.sampled_from(["gpfs_nsdds_bytes_read", "cpu_user", "mem_total", "y"])), max_size=3),
       rows=st.lists(st.lists(st.one_of(numberish, timeish), max_size=5), max_size=5), tz=st.sampled_from(["UTC", "Asia/Tokyo"]))
def test_fuzz_mmperfmon(legend, rows, tz):
    text = "Legend:\n" + "".join(f" {i + 1}:\t{h}|{s}|dev|{m}\n" for i, (h, s, m) in enumerate(legend))
    text += "Row Timestamp " + " ".join(m for _, _, m in legend) + "\n"
    text += "".join(f"{i + 1} " + " ".join(r) + "\n" for i, r in enumerate(rows))
    _check("mmperfmon", _text_file("x.txt", text), tz=tz)


lfs_line = st.one_of(
    st.tuples(st.sampled_from(["snx-OST0000_UUID", "snx-MDT0000_UUID", "x"]), numberish, numberish, numberish,
              st.sampled_from(["5%", "x%", "101%"]), st.sampled_from(["/mnt/snx[OST:0]", "/mnt/snx[MDT:0]", ""]))
    .map(" ".join),
    st.tuples(st.just("BEGIN"), numberish).map(" ".join), junk)


@FUZZ
@given(lines=st.lists(lfs_line, max_size=8), at=st.one_of(st.none(), st.integers(-10**20, 10**20)))
def test_fuzz_lfsdf(lines, at):
    _check("lfsdf", _text_file("df.txt", "\n".join(lines) + "\n"), at_ns=at)


lctl_line = st.one_of(
    st.tuples(numberish, st.sampled_from(["UP", "ST", "IN", "x"]), st.sampled_from(["osc", "mdc", "lov"]),
              st.sampled_from(["snx-OST0014-osc-ffff885f81a64000", "snx-MDT0000-mdc-ffff", "x"]), junk, numberish,
              st.sampled_from(["10.100.101.25@o2ib2", "x@tcp", ""])).map(" ".join),
    st.tuples(st.just("BEGIN"), numberish).map(" ".join), junk)


@FUZZ
@given(lines=st.lists(lctl_line, max_size=8), at=st.one_of(st.none(), st.integers(-10**20, 10**20)))
def test_fuzz_lctl(lines, at):
    _check("lctl", _text_file("dl.txt", "\n".join(lines) + "\n"), at_ns=at)


# -- LMT rows (an SQLite copy with whatever the columns hold: SQLite keeps any type) ---------------

anyvalue = st.one_of(st.none(), st.integers(-2**63, 2**63 - 1), st.floats(), junk, st.binary(max_size=8))


@FUZZ
@given(stamps=st.lists(st.tuples(anyvalue, st.one_of(timeish, anyvalue)), max_size=5),
       osts=st.lists(st.tuples(anyvalue, anyvalue), max_size=3),
       data=st.lists(st.tuples(*[anyvalue] * 8), max_size=8))
def test_fuzz_lmt(stamps, osts, data):
    def write(d: Path) -> Path:
        path = d / "lmt.sqlite3"
        db = sqlite3.connect(path)
        db.executescript("CREATE TABLE TIMESTAMP_INFO (TS_ID, TIMESTAMP); CREATE TABLE OST_INFO (OST_ID, OST_NAME);"
                         "CREATE TABLE OST_DATA (OST_ID, TS_ID, READ_BYTES, WRITE_BYTES, KBYTES_FREE, KBYTES_USED,"
                         " INODES_FREE, INODES_USED);")
        db.executemany("INSERT INTO TIMESTAMP_INFO VALUES (?, ?)", stamps)
        db.executemany("INSERT INTO OST_INFO VALUES (?, ?)", osts)
        db.executemany("INSERT INTO OST_DATA VALUES (?, ?, ?, ?, ?, ?, ?, ?)", data)
        db.commit()
        db.close()
        return path
    _check("lmt", write)
