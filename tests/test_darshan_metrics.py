"""Per-job metrics and findings against references: PyDarshan's accumulator, Carns et al.'s Table I,
and independent recomputations from the raw counters."""

from __future__ import annotations

import json

import numpy as np
import pytest

from darshan_support import LOG_IDS, LOGS, TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)

from ioweather.errors import UserError
from ioweather.sources.darshan_log import read_log
from ioweather.services.jobs.darshan import load_thresholds
from ioweather.stats.findings import Thresholds, job_findings, small_requests
from ioweather.stats.job import (MiB, agg_perf_by_slowest, characterize, file_sharing, fs_records, mibps_per_node,
                                 node_count, subset)



@pytest.mark.parametrize("path", LOGS, ids=LOG_IDS)
def test_agg_perf_by_slowest_matches_pydarshan_accumulator(path):
    """Parity with darshan.backend.cffi_backend.accumulate_records(..., module, nprocs) (libdarshan-util's C code)."""
    import darshan
    from darshan.backend.cffi_backend import accumulate_records

    log = read_log(path, exclude_implausible_times=False)  # libdarshan-util sums the raw timers
    checked = 0
    with darshan.DarshanReport(str(path), read_all=True) as ref:
        nprocs = ref.metadata["job"]["nprocs"]
        for mod in ("POSIX", "MPI-IO", "STDIO"):
            if mod not in log.records or not len(log.records[mod]):
                continue
            want = accumulate_records(ref.records[mod].to_df(), mod, nprocs).derived_metrics
            got = agg_perf_by_slowest(log.records[mod].counters, log.records[mod].fcounters, mod, nprocs)
            assert got["total_bytes"] == want.total_bytes
            assert got["agg_perf_by_slowest"] == pytest.approx(want.agg_perf_by_slowest, rel=1e-9, abs=1e-12)
            assert got["agg_time_by_slowest"] == pytest.approx(want.agg_time_by_slowest, rel=1e-9, abs=1e-12)
            checked += 1
    rep = characterize(log)
    posix_ok = "POSIX" in log.records and len(log.records["POSIX"])
    assert (rep["perf"]["agg_perf_by_slowest_mibps"] is None) == (not posix_ok)
    if posix_ok:
        assert rep["interfaces"]["POSIX"]["agg_perf_by_slowest_mibps"] == rep["perf"]["agg_perf_by_slowest_mibps"]
    assert checked or not any(m in log.records for m in ("POSIX", "MPI-IO", "STDIO"))


@pytest.mark.parametrize("path", [p for p in LOGS if p.name in {
    "imbalanced-io.darshan", "e3sm_io_heatmap_only.darshan", "sample-badost.darshan", "example.darshan"}],
    ids=lambda p: p.name[:40])
def test_sharing_classes_match_the_accumulator_categories(path):
    """Unique / shared / partially shared POSIX files as libdarshan-util's category counters count them.

    (Files that every rank opened with its own record are compared separately below:
    the accumulator's classification of them varied between runs here.)
    """
    import darshan
    from darshan.backend.cffi_backend import accumulate_records

    log = read_log(path)
    fs = fs_records(log)
    posix_only = subset(fs, fs["module"] == "POSIX")
    per_file = file_sharing(posix_only, log.nprocs)
    def reference() -> tuple[int, ...]:
        # darshan_file_category: 0 all, 4 unique, 5 shared, 6 partially shared
        with darshan.DarshanReport(str(path), read_all=True) as ref:
            cat = accumulate_records(ref.records["POSIX"].to_df(), "POSIX", log.nprocs).derived_metrics.category_counters
            return tuple(int(cat[i].count) for i in (0, 4, 5, 6))

    # Once in a full-suite run (never in isolation, 250+ tries) the accumulator answered differently:
    # a reference that disagrees with itself cannot judge us, so that case is reported, not failed.
    first, second = reference(), reference()
    if first != second:
        pytest.skip(f"libdarshan-util's accumulator gave two answers for {path.name}: {first} then {second}")
    ours = (per_file.n, *((per_file["sharing"] == k).sum() for k in ("unique", "shared", "partially_shared")))
    assert tuple(int(x) for x in ours) == first


@pytest.mark.parametrize("name", ["hdf5_file_opens_only.darshan",
                                  "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"])
def test_file_opened_by_every_rank_separately_is_shared(name):
    """No rank -1 record, but one record per rank for every rank: N:1 access (the issue's rule,
    distinct ranks per record id against nprocs)."""
    path = [p for p in LOGS if p.name == name][0]
    log = read_log(path)
    fs = fs_records(log)
    posix_only = subset(fs, fs["module"] == "POSIX")
    per_file = file_sharing(posix_only, log.nprocs)
    ids, ranks = posix_only["id"], posix_only["rank"]
    expect = {int(i): ("shared" if (ranks[ids == i] < 0).any() or len(np.unique(ranks[ids == i])) == log.nprocs
                       else "partially_shared" if len(np.unique(ranks[ids == i])) > 1 else "unique")
              for i in np.unique(ids)}
    got = dict(zip((int(i) for i in per_file["id"]), per_file["sharing"]))
    assert got == expect
    assert sum(1 for v in got.values() if v == "shared") >= 2


def test_single_process_rank_minus_one_is_unique():
    """A 1-process job marks every record rank -1; those files are not 'shared'."""
    log = read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan")
    rep = characterize(log)
    assert rep["sharing"]["shared"] == 0 and rep["sharing"]["unique"] == rep["totals"]["files"]


# --- Carns et al. MiB/s/CN ------------------------------------------------------------------

TABLE_I = [  # (example, actual MiB/s, estimated MiB/s, MiB/s/CN) from seed 002, Table I
    ("IOR N-1 write", 4021.01, 4026.91, 3.93),
    ("IOR N-1 read", 6050.73, 6067.70, 5.93),
    ("IOR N-N write", 3957.88, 4050.39, 3.96),
    ("IOR N-N read", 5877.41, 5883.73, 5.75),
]


@pytest.mark.parametrize("name,actual,estimated,per_cn", TABLE_I, ids=[r[0] for r in TABLE_I])
def test_mibps_per_cn_reproduces_table_i(name, actual, estimated, per_cn):
    """4096 IOR processes on Intrepid (4 cores per compute node): the per-node column of Table I,
    and the paper's claim that the estimate is within 3 % of IOR's own figure."""
    nnodes, src = node_count(None, 4096, 4)
    assert (nnodes, src) == (1024, "cores_per_node")
    assert round(mibps_per_node(estimated, nnodes), 2) == pytest.approx(per_cn, abs=0.005)
    assert abs(estimated - actual) / actual < 0.03


def test_mibps_on_ior_shared_file_log_is_bytes_over_slowest_rank_time():
    """IOR N-1 (one shared file, 16 ranks): the estimate is the file's bytes over Darshan's slowest-rank
    time, recomputed here from the raw POSIX counters of the shared record."""
    path = [p for p in LOGS if p.name.startswith("snyder_ior-POSIX")][0]
    log = read_log(path)
    c, f = log.records["POSIX"].counters, log.records["POSIX"].fcounters
    shared = (c["rank"] == -1).to_numpy()
    b = float((c["POSIX_BYTES_READ"] + c["POSIX_BYTES_WRITTEN"])[shared].sum())
    t = float(f["POSIX_F_SLOWEST_RANK_TIME"][shared].sum())
    rep = characterize(log, cores_per_node=4)
    # STDIO's <STDOUT> record (rank 0) adds a few bytes and microseconds to the whole-job figure
    assert rep["perf"]["mibps"] == pytest.approx(b / MiB / t, rel=0.03)
    assert rep["job"]["nnodes"] == 4 and rep["perf"]["mibps_per_node"] == pytest.approx(rep["perf"]["mibps"] / 4)


def test_node_count_unknown_gives_a_reason():
    rep = characterize(read_log(TESTDATA_LOGS / "imbalanced-io.darshan"))
    assert rep["job"]["nnodes"] is None and rep["perf"]["mibps_per_node"] is None
    assert "--cores-per-node" in rep["perf"]["mibps_per_node_reason"]


def test_node_count_from_dxt_hostnames():
    rep = characterize(read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan"))
    assert rep["job"]["nnodes"] == 1 and rep["perf"]["mibps_per_node"] == pytest.approx(rep["perf"]["mibps"])


def test_io_fraction_capped_when_timers_exceed_runtime():
    """dxt.darshan (PyDarshan example): cumulative timers add up to more than the run."""
    from darshan_support import pydarshan_example_logs

    rep = characterize(read_log([p for p in pydarshan_example_logs() if p.name == "dxt.darshan"][0]))
    assert rep["perf"]["io_fraction_of_runtime"] == 1.0 and rep["perf"]["io_time_exceeds_runtime"]


# --- findings -------------------------------------------------------------------------------

def _codes(findings):
    return {f["code"]: f for f in findings}


def test_small_requests_exclude_exactly_one_mib():
    """imbalanced-io.darshan's shared file is read and written in 1 MiB blocks (~10^5 of them):
    Darshan's 100K_1M bin holds them, so Drishti calls them small; we do not."""
    log = read_log(TESTDATA_LOGS / "imbalanced-io.darshan")
    c = log.records["POSIX"].counters
    shared = c[(c["rank"] == -1).to_numpy()]
    assert (shared["POSIX_ACCESS1_ACCESS"] == MiB).all() and shared["POSIX_ACCESS1_COUNT"].sum() > 100000
    drishti = int(sum(shared[f"POSIX_SIZE_READ_{b}"].sum() for b in ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")))
    small, total, _ = small_requests(shared, "POSIX", "READ", MiB)
    assert drishti > 50000 and total == int(shared["POSIX_READS"].sum())
    # the bin also holds a few thousand genuinely smaller requests (ACCESS2..4), read or written
    assert drishti - small > 45000 and small < 0.05 * total
    # requests strictly below 1 MiB still count: the whole job has ~16k of them in smaller bins
    small_all, _, _ = small_requests(c, "POSIX", "READ", MiB)
    below = int(sum(c[f"POSIX_SIZE_READ_{b}"].sum() for b in ("0_100", "100_1K", "1K_10K", "10K_100K")))
    assert below <= small_all < below + 0.01 * int(c["POSIX_READS"].sum())


def test_redundant_reads_test_what_they_say():
    """P09: a file read for more bytes than its size (max offset + 1), recomputed here per record."""
    log = read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan")
    c = log.records["POSIX"].counters
    redundant = c["POSIX_BYTES_READ"] > c["POSIX_MAX_BYTE_READ"] + 1
    rep = characterize(log)
    f = _codes(job_findings(log, rep, Thresholds(min_bytes=0)))  # 1.8 MB again: below the default minimum
    assert f["P09"]["evidence"]["files"] == int(redundant.sum()) > 0
    assert "P09" not in _codes(job_findings(log, rep))
    # Drishti's inverted test (max offset > bytes) would flag other files
    assert int((c["POSIX_MAX_BYTE_READ"] > c["POSIX_BYTES_READ"]).sum()) != int(redundant.sum())


def test_metadata_time_is_per_rank():
    log = read_log(TESTDATA_LOGS / "imbalanced-io.darshan")
    rep = characterize(log)
    low = Thresholds(metadata_time_rank_s=0.05)
    f = _codes(job_findings(log, rep, low))
    c, fc = log.records["POSIX"].counters, log.records["POSIX"].fcounters
    own = c["rank"].to_numpy() >= 0
    per_rank = np.bincount(c["rank"].to_numpy()[own], weights=fc["POSIX_F_META_TIME"].to_numpy()[own], minlength=496)
    per_rank += fc["POSIX_F_META_TIME"].to_numpy()[~own].sum() / 496
    assert f["P17"]["evidence"]["ranks"] == int((per_rank > 0.05).sum()) > 0
    assert f["P17"]["evidence"]["max_meta_time_s"] == pytest.approx(per_rank.max())
    assert "P17" not in _codes(job_findings(log, rep))  # 30 s default: no rank is that slow


def test_findings_on_imbalanced_io():
    log = read_log(TESTDATA_LOGS / "imbalanced-io.darshan")
    f = _codes(job_findings(log, characterize(log)))
    assert f["P18"]["level"] == "HIGH"  # straggler by bytes on the shared file
    assert f["P07"]["evidence"]["share"] > 0.9
    assert "M02" not in f  # it does use collective MPI-IO
    for x in f.values():
        assert {"code", "level", "message", "evidence", "threshold", "cost_s", "cost_share",
                "cost_share_of_runtime", "cost_model"} <= set(x)
        assert x["level"] in ("HIGH", "WARN", "INFO", "OK")


def test_low_io_share_says_no_action_needed():
    from ioweather.stats.findings import job_verdict

    log = read_log(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan")
    rep = characterize(log)
    f = job_findings(log, rep)
    assert _codes(f)["T01"]["level"] == "OK"
    frac = rep["perf"]["io_fraction_of_runtime"]
    assert frac < 0.05
    assert job_verdict(f, rep)["text"] == f"I/O is {100 * frac:.1f} % of the run time: nothing worth changing"


def test_rank0_only_io_and_no_mpiio():
    """sample-badost: 2048 ranks each writing their own file through POSIX; no MPI-IO."""
    path = [p for p in LOGS if p.name == "sample-badost.darshan"][0]
    log = read_log(path)
    f = _codes(job_findings(log, characterize(log)))
    assert "M01" in f and "R01" not in f


def test_thresholds_from_toml_and_json(tmp_path):
    t = tmp_path / "t.toml"
    t.write_text("[thresholds]\nsmall_requests = 0.5\nmetadata_time_rank_s = 5\n")
    th = load_thresholds(t)
    assert th.small_requests == 0.5 and th.metadata_time_rank_s == 5.0 and th.stragglers == 0.15
    j = tmp_path / "t.json"
    j.write_text(json.dumps({"stragglers": 0.5}))
    assert load_thresholds(j).stragglers == 0.5
    bad = tmp_path / "bad.toml"
    bad.write_text("smal_requests = 1\n")
    with pytest.raises(UserError, match="unknown threshold"):
        load_thresholds(bad)
    bad.write_text("small_requests = -1\n")
    with pytest.raises(UserError, match="non-negative"):
        load_thresholds(bad)
    bad.write_text("not [toml")
    with pytest.raises(UserError, match="not valid TOML"):
        load_thresholds(bad)


def test_stragglers_threshold_changes_the_outcome():
    log = read_log(TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan")
    rep = characterize(log)
    assert "P19" in _codes(job_findings(log, rep))
    assert "P19" not in _codes(job_findings(log, rep, Thresholds(stragglers=0.9)))


def test_stored_codes_are_described_most_severe_first():
    from ioweather.stats.findings import FINDINGS, describe_codes, highest_level

    got = describe_codes(["F01", "X99", "P05", "M06"])
    assert [(g["code"], g["level"]) for g in got] == [("P05", "HIGH"), ("F01", "WARN"), ("M06", "WARN"), ("X99", None)]
    assert [g["what"] for g in got[:3]] == [FINDINGS[c][1] for c in ("P05", "F01", "M06")]
    assert highest_level(["F01", "M06"]) == "WARN" and highest_level(["M06", "P05"]) == "HIGH"
    assert highest_level([]) is None
    assert highest_level(["X99"]) == "WARN"  # a newer version's code: only actionable codes are stored


@pytest.mark.parametrize("path", LOGS, ids=LOG_IDS)
def test_findings_come_most_expensive_first(path):
    from ioweather.stats.findings import LEVELS

    log = read_log(path)
    rep = characterize(log)
    f = job_findings(log, rep)
    keys = [(-x["cost_s"], LEVELS.index(x["level"]), x["code"]) for x in f]
    assert keys == sorted(keys)
    io = rep["perf"]["io_time_s"]
    for x in f:
        assert 0 <= x["cost_s"] <= io
        assert x["cost_share"] == (pytest.approx(x["cost_s"] / io) if io > 0 else 0.0)
