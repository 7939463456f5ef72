"""The Darshan reader on every real log we have, and on every bad input the issue lists."""

from __future__ import annotations

import gzip
import os
import shutil

import numpy as np
import pytest

from darshan_support import (DATA_LOGS, LOG_IDS, LOGS, TESTDATA_LOGS, inflate_dxt,  # noqa: F401 (autouse)
                             need_darshan_logs, pydarshan_example_logs, rename_records)
from unprivileged import as_nobody, world_readable_tmp

from ioweather.sources.darshan_log import DarshanLogError, check_layout, read_log



@pytest.mark.parametrize("path", LOGS, ids=LOG_IDS)
def test_every_real_log_loads_like_pydarshan(path):
    """Same modules, records, ids and counters as PyDarshan's own DarshanReport."""
    import darshan

    log = read_log(path, exclude_implausible_times=False)  # raw, as PyDarshan gives them
    with darshan.DarshanReport(str(path), read_all=True) as ref:
        assert log.nprocs == ref.metadata["job"]["nprocs"]
        assert log.exe == ref.metadata["exe"]
        assert log.log_version == ref.metadata["job"]["log_ver"]
        for mod, rec in log.records.items():
            assert rec.counters["id"].dtype == np.uint64
            assert rec.partial == ref.modules[mod]["partial_flag"]
            if not len(rec):
                continue
            ref_df = ref.records[mod].to_df()
            # PyDarshan drops records without a name record; we keep them with name None
            named = np.array([n is not None for n in rec.names])
            assert named.sum() == len(ref_df["counters"])
            np.testing.assert_array_equal(rec.counters[named].to_numpy(np.int64)[:, 2:],
                                          ref_df["counters"].to_numpy(np.int64)[:, 2:])
            np.testing.assert_array_equal(rec.counters["id"].to_numpy()[named],
                                          ref_df["counters"]["id"].to_numpy(np.uint64))
            np.testing.assert_allclose(rec.fcounters[named].to_numpy(np.float64)[:, 2:],
                                       ref_df["fcounters"].to_numpy(np.float64)[:, 2:])
        for mod, seg in log.dxt.items():
            recs = ref.records[mod]
            assert len(seg) == sum(r["read_count"] + r["write_count"] for r in recs)
            ref_bytes = sum(s["length"] for r in recs for s in r["write_segments"])
            assert int(seg.length[seg.is_write].sum()) == ref_bytes


def test_pydarshan_example_logs_are_included():
    assert len(pydarshan_example_logs()) >= 8


LUSTRE_LOGS = [p for p in LOGS if "LUSTRE" in read_log(p, dxt=False, heatmaps=False).modules]


@pytest.mark.parametrize("path", LUSTRE_LOGS, ids=[f"{p.parent.name}/{p.name[:50]}" for p in LUSTRE_LOGS])
def test_lustre_layouts_read_like_pydarshan(path):
    """The Lustre table (record heads and first components decoded from bytes) against PyDarshan's own
    reading of each record through CFFI fields, on every real log with Lustre records."""
    from darshan.backend import cffi_backend as b

    got = read_log(path, dxt=False, heatmaps=False).lustre
    log = b.log_open(str(path))
    try:
        b.log_get_modules(log)
        want = []
        while (r := b.log_get_record(log, "LUSTRE", dtype="dict")) is not None:
            want.append(r)
    finally:
        b.log_close(log)
    assert len(got) == len(want) > 0
    for row, ref in zip(got.frame().itertuples(index=False), want):
        first = ref["components"][0] if ref["components"] else None
        assert (row.id, row.rank) == (ref["id"], ref["rank"])
        assert row.stripe_size == (first["counters"]["LUSTRE_COMP_STRIPE_SIZE"] if first else -1)
        assert row.stripe_count == (first["counters"]["LUSTRE_COMP_STRIPE_COUNT"] if first else 0)
        assert row.pool == (first["pool_name"] if first else "")
        assert row.ost_ids == (",".join(map(str, first["ost_ids"])) if first else "")


def test_record_ids_above_2_63_stay_unsigned():
    log = read_log(TESTDATA_LOGS / "imbalanced-io.darshan")
    ids = log.records["POSIX"].counters["id"].to_numpy()
    assert ids.dtype == np.uint64 and (ids > np.uint64(2**63)).any()
    assert all(n is not None for n in log.records["POSIX"].names)


def test_records_without_a_name_are_kept(tmp_path):
    """PyDarshan drops records whose id has no name record; we keep them (name None) and say so."""
    import darshan

    src = DATA_LOGS / "release_logs" / "mpi-io-test-x86_64-3.2.1.darshan"
    dst = tmp_path / "unnamed.darshan"
    rename_records(src, dst, {"/tmp/test/mpi-io-test.tmp.dat": None})
    log = read_log(dst)
    assert list(log.records["POSIX"].names) == [None]
    assert log.records["POSIX"].counters["POSIX_BYTES_WRITTEN"].sum() > 0
    assert any("no name record" in w for w in log.warnings)
    with darshan.DarshanReport(str(dst), read_all=True) as ref:
        assert len(ref.records["POSIX"]) == 0


@pytest.mark.parametrize("path", LOGS, ids=LOG_IDS)
def test_name_records_read_like_pydarshan(path):
    """The name records (read as one array, decoded as one text) are PyDarshan's `log_get_name_records`: the
    same ids, names and order."""
    from darshan.backend import cffi_backend as b

    from ioweather.sources.darshan_log import _name_records

    ours, ref = b.log_open(str(path)), b.log_open(str(path))
    try:
        got, want = _name_records(b, ours), b.log_get_name_records(ref)
    finally:
        b.log_close(ours)
        b.log_close(ref)
    assert list(got.items()) == list(want.items())


def test_a_name_record_that_is_not_utf8_fails_as_in_pydarshan(tmp_path):
    """A name record that is not UTF-8 among valid ones: PyDarshan's own error (its strict decoding of that
    name), not one about the names read as a whole."""
    from darshan.backend import cffi_backend as b

    src = TESTDATA_LOGS / "imbalanced-io.darshan"
    names = sorted({n for r in read_log(src).records.values() for n in r.names if n})
    assert len(names) > 3
    dst = tmp_path / "latin1.darshan"
    bad = names[len(names) // 2]
    rename_records(src, dst, {bad: bad.encode() + b"/caf\xe9"})
    ref = b.log_open(str(dst))
    try:
        with pytest.raises(UnicodeDecodeError) as want:
            b.log_get_name_records(ref)
    finally:
        b.log_close(ref)
    with pytest.raises(UnicodeDecodeError) as got:
        read_log(dst)
    assert str(got.value) == str(want.value) and got.value.object == want.value.object
    assert got.value.object == bad.encode() + b"/caf\xe9"


def test_partial_posix_module_is_reported():
    """imbalanced-io.darshan: Darshan ran out of POSIX record memory (partial_flag set)."""
    log = read_log(TESTDATA_LOGS / "imbalanced-io.darshan")
    assert log.partial_modules == ["POSIX"]
    assert log.records["POSIX"].partial and not log.records["MPI-IO"].partial


def test_minus_one_counters_are_listed_as_not_monitored():
    """Format 3.00 logs lack counters added later; libdarshan-util fills them with -1."""
    log = read_log(TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan")
    nm = log.records["POSIX"].not_monitored
    assert {"POSIX_FILENOS", "POSIX_DUPS", "POSIX_F_CLOSE_START_TIMESTAMP"} <= set(nm)
    assert (log.records["POSIX"].counters["POSIX_FILENOS"] == -1).all()
    assert "POSIX_BYTES_READ" not in nm


def test_anonymized_exe_is_kept_as_given():
    log = read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan")
    assert log.exe.isdigit()  # the anonymizer replaced the command line by a hash
    assert log.nprocs == 1


def test_dxt_segments_are_columnar_and_capped():
    log = read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan")
    seg = log.dxt["DXT_POSIX"]
    assert seg.offset.dtype == np.int64 and seg.start_time.dtype == np.float64
    assert len(seg) == 17652 and not seg.truncated
    assert (seg.end_time >= seg.start_time).all()
    capped = read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan", dxt_max_segments=1000)
    assert capped.dxt["DXT_POSIX"].truncated and len(capped.dxt["DXT_POSIX"]) <= 1000
    assert read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan", dxt=False).dxt == {}


def test_dxt_memory_is_bounded_per_segment(tmp_path):
    """A DXT-heavy log (a real trace repeated 20 times, 353k segments): the reader allocates at most
    ~100 bytes per segment at its peak (32 B kept + a transient copy + record id/rank/kind)."""
    import tracemalloc

    big = tmp_path / "dxt_x20.darshan"
    inflate_dxt(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan", big, 20)
    read_log(big, dxt=False)  # warm imports and caches outside the measurement
    tracemalloc.start()
    log = read_log(big)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = len(log.dxt["DXT_POSIX"])
    assert n == 20 * 17652
    assert peak < 100 * n + 4 * 2**20


def test_big_endian_log_reads():
    log = read_log(TESTDATA_LOGS / "mpi-io-test-ppc64-3.1.8.darshan")
    assert log.records["POSIX"].counters["POSIX_BYTES_WRITTEN"].sum() > 0


# --- bad inputs ---------------------------------------------------------------------------

def test_truncated_log_is_refused(tmp_path):
    src = (TESTDATA_LOGS / "imbalanced-io.darshan").read_bytes()
    bad = tmp_path / "half.darshan"
    bad.write_bytes(src[: len(src) // 2])
    with pytest.raises(DarshanLogError, match="truncated Darshan log"):
        read_log(bad)


@pytest.mark.parametrize("cut", [10, 200, 1000, 5000])
def test_logs_cut_anywhere_are_refused(tmp_path, cut):
    src = (TESTDATA_LOGS / "e3sm_io_heatmap_only.darshan").read_bytes()
    bad = tmp_path / "cut.darshan"
    bad.write_bytes(src[:cut])
    with pytest.raises(DarshanLogError, match="truncated"):
        read_log(bad)


def test_zero_byte_file(tmp_path):
    bad = tmp_path / "empty.darshan"
    bad.write_bytes(b"")
    with pytest.raises(DarshanLogError, match="empty file"):
        read_log(bad)


def test_random_bytes(tmp_path):
    bad = tmp_path / "noise.darshan"
    bad.write_bytes(np.random.default_rng(1).bytes(4096))
    with pytest.raises(DarshanLogError, match="not a Darshan log"):
        read_log(bad)


def test_darshan_2_log_is_refused_clearly(tmp_path):
    """Darshan 2.x logs are gzip files whose first bytes are the version string."""
    bad = tmp_path / "old.darshan.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"2.06\0\0\0\0" + b"\0" * 4088)
    with pytest.raises(DarshanLogError, match=r"format 2\.x\) is not readable"):
        read_log(bad)


def test_corrupt_module_region_is_an_error_not_an_empty_module(tmp_path):
    src = bytearray((TESTDATA_LOGS / "imbalanced-io.darshan").read_bytes())
    layout = check_layout(TESTDATA_LOGS / "imbalanced-io.darshan")
    what, off, ln = next(r for r in layout.regions if r[0] == "module 1")  # POSIX
    src[off + 10: off + 400] = bytes(390)
    bad = tmp_path / "flipped.darshan"
    bad.write_bytes(bytes(src))
    with pytest.raises(DarshanLogError, match="corrupt Darshan log: cannot read POSIX"):
        read_log(bad)


def test_path_with_spaces_and_unicode(tmp_path):
    d = tmp_path / "my logs" / "jöb résumé ✓"
    d.mkdir(parents=True)
    p = d / "run 1 ü.darshan"
    shutil.copy(TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan", p)
    assert read_log(p).nprocs == 4


def test_directory_is_not_a_log(tmp_path):
    with pytest.raises(DarshanLogError, match="directory"):
        read_log(tmp_path)


def test_unreadable_file():
    def attempt() -> str:
        try:
            read_log(p)
        except DarshanLogError as e:
            return str(e)
        return "no error"

    with world_readable_tmp("ioweather-darshan-") as base:
        p = base / "locked.darshan"
        shutil.copy(TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan", p)
        os.chmod(p, 0)
        msg = as_nobody(attempt) if os.geteuid() == 0 else attempt()  # permission bits do not stop root
    assert msg == f"cannot read {p}: permission denied"  # README: `cannot ACTION PATH: REASON`
