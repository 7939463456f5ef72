"""Issue 19 items 1, 6 and 10 for every importer: a FIFO or a directory as SOURCE, damaged and
impossible input, impossible values. Each case ends in one error line (the other sources of the
same command still imported) or in missing values counted in the notes, never in a traceback or
a hang. Each of these failed before the fix (hang, traceback or a stored inf / 0 / 0.0)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from conftest import run_cli
from inprocess import run_cli as run_in_process  # where the answer is the point (tests/inprocess.py)

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.telemetry.imports import import_one
from ioweather.sources.telemetry import tts
from ioweather.sources.telemetry.importers import importer
from ioweather.store import telemetry_layout as layout

KINDS = ("csv", "iostat", "tts", "lmt", "mmperfmon", "lfsdf", "lctl", "lctl-params")
GOOD_CSV = "time,target,metric,value,interval_s\n2024-03-01T10:00:00Z,a,read_bytes,5,60\n"


def _imp(tmp_path, kind, source, **kw):
    return import_one(Settings(home=tmp_path / "h"), kind, str(source), "t", **kw)


def _stored(tmp_path):
    return layout.read_frame(Settings(home=tmp_path / "h"), "t")


def _iostat(reports, disk=None) -> str:
    stats = [{"timestamp": ts, "disk": [disk or {"disk_device": "sda", "r/s": 1.0, "w/s": 2.0, "rkB/s": 4.0,
                                                  "wkB/s": 8.0, "util": 10.0}]} for ts in reports]
    return json.dumps({"sysstat": {"hosts": [{"nodename": "n", "statistics": stats}]}})


# -- item 1: a FIFO is refused at once, for every kind ----------------------------------------------

@pytest.mark.timeout(60)  # before the fix each kind blocked in open() forever
@pytest.mark.parametrize("kind", KINDS)
def test_fifo_source_is_refused_not_waited_on(kind, tmp_path):
    fifo = tmp_path / f"in.{kind}"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="FIFO"):
        _imp(tmp_path, kind, fifo)
    assert layout.list_fs(Settings(home=tmp_path / "h")) == []


def test_fifo_among_sources_one_line_and_the_others_imported(tmp_path):
    fifo, good = tmp_path / "fifo.csv", tmp_path / "good.csv"
    os.mkfifo(fifo)
    good.write_text(GOOD_CSV)
    p = run_cli("import", "csv", str(fifo), str(good), "--fs", "t", "--json", home=tmp_path / "h", timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert [line for line in p.stderr.splitlines() if line.startswith("ioweather:")] == [
        f"ioweather: error: cannot read CSV file {fifo}: it is a FIFO (named pipe), not a regular file"]
    doc = json.loads(p.stdout)
    assert doc["failed"] == 1 and doc["rows"] == 1 and len(_stored(tmp_path)) == 1


# -- item 6: directories, damaged and impossible input ----------------------------------------------

@pytest.mark.parametrize("kind", ("csv", "iostat", "tts", "lmt"))
def test_directory_as_a_file_source_is_one_line(kind, tmp_path):
    d = tmp_path / "adir"
    d.mkdir()
    with pytest.raises(UserError, match="it is a directory"):
        _imp(tmp_path, kind, d)


def test_iostat_directory_through_the_cli(tmp_path):
    p = run_in_process("import", "iostat", str(tmp_path), "--fs", "t", home=tmp_path / "h")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().endswith("it is a directory, not a regular file")


@pytest.mark.parametrize("when", ["0001-01-01", "0001-01-01T00:00:00Z", "9999-12-31 10:00:00", "1e30", "-5"])
@pytest.mark.parametrize("tz", [None, "Europe/Paris"])
def test_csv_time_out_of_range_is_a_user_error(when, tz, tmp_path):
    src = tmp_path / "t.csv"
    src.write_text(f"time,target,metric,value\n{when},a,read_bytes,1\n")
    with pytest.raises(UserError, match="line 2: unparseable time"):
        _imp(tmp_path, "csv", src, tz=tz, interval=60)


@pytest.mark.parametrize("stamp", ["13/13/26 99:99:99", "02/30/26 10:00:00", "01/01/0001 00:00:00",
                                   "0001-01-01T00:00:00", "0001-01-01T00:00:00+0100", "9999-12-31T23:59:59+0000"])
def test_iostat_impossible_timestamps(stamp, tmp_path):
    src = tmp_path / "i.json"
    src.write_text(_iostat([stamp, stamp]))
    with pytest.raises(UserError, match="iostat timestamp"):
        _imp(tmp_path, "iostat", src)


@pytest.mark.parametrize("doc", [
    {"sysstat": {"hosts": "x"}},
    {"sysstat": {"hosts": ["x"]}},
    {"sysstat": {"hosts": [{"nodename": "n", "statistics": "x"}]}},
    {"sysstat": {"hosts": [{"nodename": "n", "statistics": [{"timestamp": f"2024-01-01T00:00:0{i}+0000",
                                                             "disk": [None]} for i in (0, 1)]}]}},
    {"sysstat": {"hosts": [{"nodename": "n", "statistics": [{"timestamp": f"2024-01-01T00:00:0{i}+0000",
                                                             "disk": "sda"} for i in (0, 1)]}]}},
])
def test_iostat_wrong_types(doc, tmp_path):
    src = tmp_path / "i.json"
    src.write_text(json.dumps(doc))
    with pytest.raises(UserError, match="not iostat JSON output"):
        _imp(tmp_path, "iostat", src)


def test_iostat_non_numeric_idle_is_missing_not_a_crash(tmp_path):
    src = tmp_path / "i.json"
    reports = json.loads(_iostat(["2024-01-01T00:00:00+0000", "2024-01-01T00:00:10+0000"]))
    for rep in reports["sysstat"]["hosts"][0]["statistics"]:
        rep["avg-cpu"] = {"idle": "x"}
    src.write_text(json.dumps(reports))
    summary = _imp(tmp_path, "iostat", src)
    cpu = _stored(tmp_path).query("metric == 'cpu_pct'")
    assert len(cpu) == 1 and cpu["value"].isna().all()
    assert "1 impossible rates (negative, infinite or not a number): stored as missing" in summary.notes


def _tts(path, **kw):
    with h5py.File(path, "w", **kw) as f:
        g = f.create_group("datatargets")
        g.create_dataset("timestamps", data=np.arange(1517126400, 1517126400 + 50 * 5, 5, dtype=np.int64))
        for name in ("readbytes", "writebytes"):
            ds = g.create_dataset(name, data=np.arange(100, dtype=np.float64).reshape(50, 2))
            ds.attrs["columns"] = [b"snx-OST0000", b"snx-OST0001"]


def _damaged_tts(tmp_path):
    """The file _tts writes with 8 bytes of one object header overwritten: h5py raises RuntimeError,
    OSError or KeyError on reading it (found by overwriting every 8-byte block of the file)."""
    good = tmp_path / "good.h5"
    _tts(good)
    data = bytearray(good.read_bytes())
    out = []
    for off in range(0, len(data), 8):
        d = bytearray(data)
        d[off:off + 8] = b"\xff" * 8
        out.append(d)
    return good, out


def _tts_reading(path) -> bytes:
    """What import_one takes from the TTS file at PATH, read as it reads it (the importer's total, chunks,
    notes and bad lines), pickled: the rest of the import is a function of it. A damaged file's UserError
    comes through."""
    imp = importer("tts")(str(path), tz=None, since_ns=None, until_ns=None, fs="t")
    with imp:
        total = imp.total()
        chunks = list(imp.chunks(lambda n: None))
    return pickle.dumps((total, chunks, imp.notes, imp.bad_lines))


def test_damaged_tts_is_one_line_for_every_8_byte_corruption(tmp_path):
    """Every corruption is read by the importer, and each different reading (or reader's error) is then
    imported through the store once, from the corruption read fastest: 931 of the 1328 read as the good
    file does, and a full import costs 0.2 s where a reading costs 2 ms (the four at offsets 4696-4984 took
    9-11 s and 4 GiB each in h5py before their error; refused in ~1 ms since: see _NAME_LENGTHS)."""
    good, variants = _damaged_tts(tmp_path)
    bad = tmp_path / "bad.h5"
    readings: dict[bytes, list[tuple[float, int]]] = {}  # a reading -> (seconds, variant) of each read so
    for i, data in enumerate(variants):
        bad.write_bytes(bytes(data))
        t0 = time.perf_counter()
        try:
            reading = _tts_reading(bad)
        except UserError as e:
            reading = str(e).encode()
        readings.setdefault(reading, []).append((time.perf_counter() - t0, i))
    outcomes = {"ok": 0, "error": 0}
    for read in readings.values():
        bad.write_bytes(bytes(variants[min(read)[1]]))
        try:
            _imp(tmp_path, "tts", bad)
            outcomes["ok"] += len(read)
        except UserError:
            outcomes["error"] += len(read)
    # measured: 88 of the 1328 corruptions are errors (before the fix 66 of them were tracebacks:
    # RuntimeError, OSError, KeyError, ValueError), the rest change only numbers
    assert outcomes["error"] > 50 and outcomes["ok"] + outcomes["error"] == len(variants)
    print(f"{len(variants)} corruptions, {len(readings)} readings imported: {outcomes}")
    assert len(readings) < len(variants) / 3, "no two readings alike: each corruption is imported again (slow)"


# The four corruptions that overwrite the byte length of one `columns` name (the 4-byte length of each of the
# two names of readbytes, then of writebytes): h5py allocated 4 GiB for each name, 9-11 s, before its error.
_NAME_LENGTHS = (4696, 4712, 4968, 4984)
_BOUNDED_READS = """
import json, resource, sys, time
from ioweather.errors import UserError
from ioweather.sources.telemetry.importers import importer
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
out = []
for path in sys.argv[1:]:
    t0 = time.perf_counter()
    try:
        with importer("tts")(path, tz=None, since_ns=None, until_ns=None, fs="t") as imp:
            imp.total()
            list(imp.chunks(lambda n: None))
        out.append(["read", time.perf_counter() - t0])
    except UserError as e:
        out.append([str(e), time.perf_counter() - t0])
# VmHWM, not RUSAGE_SELF: Linux's ru_maxrss keeps the forked pytest worker's size across exec (829 MiB in
# the full suite); the readers' forked children (isolation) are this small process's copies
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
peak = max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"reads": out, "peak_kib": peak}))
"""


def test_damaged_tts_name_lengths_are_refused_before_they_are_allocated(tmp_path):
    """Each of the four is refused in one line naming the file and the attribute (one name claims 2**32-1
    bytes, the other its 11), in a process whose address space is capped at 1 GiB (so the old reader
    failed here at once, with HDF5's "memory allocation failed", instead of slowly taking 4 GiB) and whose
    peak resident memory stays far below the cap."""
    good, variants = _damaged_tts(tmp_path)
    data = good.read_bytes()
    paths = []
    for off in _NAME_LENGTHS:
        assert data[off:off + 4] == (11).to_bytes(4, "little"), "not the length of 'snx-OST0000': the layout moved"
        paths.append(tmp_path / f"len{off}.h5")
        paths[-1].write_bytes(bytes(variants[off // 8]))
    p = subprocess.run([sys.executable, "-c", _BOUNDED_READS, *map(str, paths)], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    for path, (message, _), dataset in zip(paths, doc["reads"], ["readbytes"] * 2 + ["writebytes"] * 2):
        assert message == (f"{path}: damaged: the 'columns' attribute of /datatargets/{dataset} claims "
                           f"{2**32 - 1 + 11} bytes of names, more than its {len(data)} bytes hold"), message
    print(f"peak {doc['peak_kib'] >> 10} MiB, seconds {[round(t, 3) for _, t in doc['reads']]}")
    assert doc["peak_kib"] < 512 << 10


def test_tts_dataset_larger_than_its_file_can_hold_is_refused_before_it_is_read(tmp_path):
    """A chunked, deflated dataset whose dimensions say 50 x 10**7 float64 (4 GB, never written: its chunks
    read as the fill value) in a file of kilobytes: more than deflate's 1032:1 inflates it to."""
    src = tmp_path / "wide.h5"
    _tts(src)
    with h5py.File(src, "a") as f:
        g = f["datatargets"]
        del g["readbytes"]
        g.create_dataset("readbytes", shape=(50, 10**7), dtype=np.float64, chunks=(50, 1000), compression="gzip")
    with pytest.raises(UserError) as e:
        _tts_reading(src)
    assert str(e.value) == (f"{src}: damaged: /datatargets/readbytes claims 50 x 10000000 values of 8 bytes, "
                            f"more than its {src.stat().st_size} bytes hold even inflated 1032 times")


def test_tts_with_version_2_headers_or_a_user_block_reads_as_the_default_one(tmp_path):
    """HDF5's version-2 object headers (libver="latest") are not parsed for the names' lengths: the names
    are read in the capped child instead, and come out the same. A user block moves every address; names of
    a fixed size claim nothing beyond the header."""
    plain, v2 = tmp_path / "plain.h5", tmp_path / "v2.h5"
    _tts(plain)
    _tts(v2, libver="latest")
    with h5py.File(v2, "r") as f, open(v2, "rb") as raw:
        ds = f["datatargets/readbytes"]
        assert h5py.h5o.get_info(ds.id).hdr.version == 2
        assert tts._claimed_name_bytes(raw.fileno(), ds) is None
    assert _tts_reading(v2) == _tts_reading(plain)
    with_block = tmp_path / "userblock.h5"  # 512 bytes before the superblock: every address is after them
    _tts(with_block, userblock_size=512)
    with h5py.File(with_block, "r") as f, open(with_block, "rb") as raw:
        assert tts._claimed_name_bytes(raw.fileno(), f["datatargets/readbytes"]) == 2 * len("snx-OST0000")
    assert _tts_reading(with_block) == _tts_reading(plain)
    fixed = tmp_path / "fixed.h5"  # pytokio's own files name their columns in 16-byte strings, in the header
    _tts(fixed)
    with h5py.File(fixed, "a") as f:
        for name in ("readbytes", "writebytes"):
            f["datatargets"][name].attrs["columns"] = np.array([b"snx-OST0000", b"snx-OST0001"], dtype="S16")
    with h5py.File(fixed, "r") as f, open(fixed, "rb") as raw:
        assert tts._claimed_name_bytes(raw.fileno(), f["datatargets/readbytes"]) == 0
    assert _tts_reading(fixed) == _tts_reading(plain)


def test_damaged_tts_does_not_abort_the_other_sources(tmp_path):
    good, variants = _damaged_tts(tmp_path)
    bad = tmp_path / "bad.h5"
    bad.write_bytes(bytes(variants[120 // 8]))  # 8 bytes at offset 120: RuntimeError in h5py before the fix
    p = run_cli("import", "tts", str(bad), str(good), "--fs", "t", "--json", home=tmp_path / "h")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    errors = [line for line in p.stderr.splitlines() if line.startswith("ioweather: error:")]
    assert len(errors) == 1 and str(bad) in errors[0]
    doc = json.loads(p.stdout)
    assert doc["failed"] == 1 and doc["rows"] == 2 * 2 * 50 == len(_stored(tmp_path))


def test_tts_timestamps_that_no_time_can_hold_are_skipped(tmp_path):
    src = tmp_path / "t.h5"
    with h5py.File(src, "w") as f:
        g = f.create_group("datatargets")
        g.create_dataset("timestamps", data=np.array([1517126400, 1517126405, 10**15, 1517126415], dtype=np.int64))
        ds = g.create_dataset("readbytes", data=np.ones((4, 1)))
        ds.attrs["columns"] = [b"ost0"]
    summary = _imp(tmp_path, "tts", src)
    stored = _stored(tmp_path)
    assert summary.rows == 3 == len(stored) and stored["time_ns"].max() == 1517126415 * 10**9
    assert any("1 rows with impossible timestamps" in n for n in summary.notes)


# -- item 10: impossible values become missing, counted in the notes ---------------------------------

def test_csv_infinite_values_are_missing(tmp_path):
    src = tmp_path / "v.csv"
    src.write_text("time,target,metric,value,interval_s\n" + "".join(
        f"2024-03-01T10:0{i}:00Z,a,read_bytes,{v},60\n" for i, v in enumerate(["inf", "1e309", "7", "Infinity"])))
    summary = _imp(tmp_path, "csv", src)
    stored = _stored(tmp_path).sort_values("time_ns")
    assert stored["value"].isna().tolist() == [True, True, False, True] and stored["value"].iloc[2] == 7
    assert "3 infinite values (inf, or too large for a number) stored as missing" in summary.notes
    assert summary.missing_values == 3


def test_csv_impossible_intervals_are_missing(tmp_path):
    src = tmp_path / "v.csv"
    src.write_text("time,target,metric,value,interval_s\n2024-03-01T10:00:00Z,a,read_bytes,5,0\n"
                   "2024-03-01T10:01:00Z,a,read_bytes,6,-3\n2024-03-01T10:02:00Z,a,read_bytes,7,60\n")
    summary = _imp(tmp_path, "csv", src)
    stored = _stored(tmp_path).sort_values("time_ns")
    assert stored["value"].isna().tolist() == [True, True, False]
    assert not (stored["interval_s"] <= 0).any()
    assert ("2 rows with an impossible interval (zero, negative, infinite, under a microsecond or over ten years): "
            "stored as missing") in summary.notes


def test_iostat_negative_rate_is_missing_not_zero(tmp_path):
    src = tmp_path / "i.json"
    src.write_text(_iostat(["2024-01-01T00:00:00+0000", "2024-01-01T00:00:10+0000"],
                           {"disk_device": "sda", "r/s": -4.0, "w/s": 2.0}))
    summary = _imp(tmp_path, "iostat", src)
    stored = _stored(tmp_path).set_index("metric")["value"]
    assert np.isnan(stored["read_ops"]) and stored["write_ops"] == 20.0
    assert "1 impossible rates (negative, infinite or not a number): stored as missing" in summary.notes


def test_import_help_lists_every_registered_kind():
    from ioweather.sources.telemetry.importers import kinds

    p = subprocess.run([sys.executable, "-m", "ioweather", "import", "--help"], capture_output=True, text=True,
                       timeout=120, check=True)
    listed = [line.split()[0] for line in p.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == [*kinds(), "job-features"] and set(KINDS) | {"slurm", "nersc-jobsdb"} == set(kinds())


def test_directory_import_does_not_follow_symlinks_inside(tmp_path, testdata):
    """`import mmperfmon DIR`: a link planted in the directory (to a file or a directory) is not read."""
    src = testdata / "pytokio" / "mmperfmon.2019-05-15-micro.tgz"
    d = tmp_path / "archives"
    d.mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    import shutil

    shutil.copy(src, secret / "other.tgz")
    (d / "linked.tgz").symlink_to(secret / "other.tgz")
    (d / "linkdir").symlink_to(secret)
    home = tmp_path / "home"
    r = run_in_process("import", "mmperfmon", str(d), "--fs", "g", home=home)
    assert r.returncode == 2 and "empty directory" in r.stderr and "symlinks" in r.stderr, r.stderr
    shutil.copy(src, d / "real.tgz")
    r = run_in_process("import", "mmperfmon", str(d), "--fs", "g", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert "other.tgz" not in r.stdout and "linked" not in r.stdout
