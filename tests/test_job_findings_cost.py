"""Every finding's cost (docs/darshan.md, "Cost models"), recomputed here from the counters as PyDarshan
reads them, the verdict, the minimum volumes, and the wording that must follow the evidence."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from darshan_support import DATA_LOGS, LOGS, TESTDATA_LOGS, need_darshan_logs, pydarshan_example_logs  # noqa: F401

from ioweather.sources.darshan_log import read_log
from ioweather.stats.findings import Thresholds, job_findings, job_verdict
from ioweather.stats.job import characterize

IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"
E3SM = TESTDATA_LOGS / "e3sm_io_heatmap_only.darshan"
DLIO = DATA_LOGS / "dlio_logs" / "snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan"
GiB = 1 << 30


def _report(path, t=None):
    log = read_log(path)
    rep = characterize(log)
    f = job_findings(log, rep, t)
    return log, rep, {x["code"]: x for x in f}, job_verdict(f, rep, t)


def _pydarshan(path):
    """POSIX counters and fcounters (DataFrames), the Lustre records and the job, as PyDarshan reads them."""
    import darshan

    with darshan.DarshanReport(str(path), read_all=True) as r:
        px = r.records["POSIX"].to_df()
        lustre = [r.records["LUSTRE"][i] for i in range(len(r.records["LUSTRE"]))] if "LUSTRE" in r.records else []
        return px["counters"], px["fcounters"], lustre, dict(r.metadata["job"])


def _wall_scale(rep):
    """Our Clock.wall factor, from the report's own totals: the storage layer's slowest path / its cumulative time."""
    tot = rep["totals"]
    return rep["perf"]["fs_io_time_s"] / (tot["read_time_s"] + tot["write_time_s"] + tot["meta_time_s"])


def test_imbalanced_io_verdict_is_the_single_ost_single_writer_file():
    log, rep, f, v = _report(IMBALANCED)
    c, fc, lustre, job = _pydarshan(IMBALANCED)
    # the 98.6 GiB (moved) shared file: rank -1, one OST, its slowest rank moved all but a few KiB
    big = int(np.argmax((c["POSIX_BYTES_READ"] + c["POSIX_BYTES_WRITTEN"]).to_numpy()))
    assert c["rank"].iloc[big] == -1
    moved = int(c["POSIX_BYTES_READ"].iloc[big] + c["POSIX_BYTES_WRITTEN"].iloc[big])
    assert f"{moved / GiB:.1f}" == "98.6"
    assert c["POSIX_SLOWEST_RANK_BYTES"].iloc[big] >= 0.99 * moved
    osts = max(int(o) for rec in lustre for comp in rec["components"] for o in comp["ost_ids"]) + 1
    assert v["actions"][0] == "L01"
    assert v["text"].startswith(f"I/O is {100 * rep['perf']['io_fraction_of_runtime']:.1f} % of the run time; stripe the")
    assert "over" in v["text"] and "not 1" in v["text"] and "one rank" in v["text"] and "lfs setstripe -c" in v["text"]
    l01 = f["L01"]
    assert l01["evidence"]["fs_osts"] == osts and l01["evidence"]["stripe_count"] == 1
    assert l01["evidence"]["ranks_moving"] == 1 and l01["evidence"]["top_rank"] == int(c["POSIX_SLOWEST_RANK"].iloc[big])
    # expected cost: each Lustre file >= 1 GiB with stripe count * 4 < min(OSTs, ceil(size / 1 GiB)):
    # its slowest-rank time (shared) or slowest record time (per rank) * (1 - stripes / usable stripes)
    stripes = {np.uint64(rec["id"]): int(rec["components"][0]["counters"][1]) for rec in lustre}
    expected = 0.0
    ids = c["id"].to_numpy(np.uint64)
    for fid in np.unique(ids):
        if fid not in stripes:
            continue
        sel = ids == fid
        size = max(c["POSIX_MAX_BYTE_READ"][sel].max(), c["POSIX_MAX_BYTE_WRITTEN"][sel].max()) + 1
        usable = max(1, min(osts, math.ceil(size / GiB)))
        if size < GiB or stripes[fid] * 4 >= usable:
            continue
        shared = (c["rank"][sel] == -1).to_numpy()
        if shared.any():
            wall = float(fc["POSIX_F_SLOWEST_RANK_TIME"][sel].to_numpy()[shared][0])
        else:
            wall = float((fc["POSIX_F_READ_TIME"] + fc["POSIX_F_WRITE_TIME"] + fc["POSIX_F_META_TIME"])[sel].max())
        expected += wall * (1 - stripes[fid] / usable)
    assert l01["cost_s"] == pytest.approx(expected, rel=1e-9)
    # it is most of the job's storage-layer I/O time (the MPI-IO layer above adds time POSIX never saw)
    assert l01["cost_s"] > 0.75 * rep["perf"]["fs_io_time_s"]


def test_straggler_cost_is_slowest_rank_minus_mean():
    log, rep, f, _ = _report(IMBALANCED)
    c, fc, _, job = _pydarshan(IMBALANCED)
    shared = (c["rank"] == -1).to_numpy()
    tt = (fc["POSIX_F_READ_TIME"] + fc["POSIX_F_WRITE_TIME"] + fc["POSIX_F_META_TIME"]).to_numpy()[shared]
    slow = fc["POSIX_F_SLOWEST_RANK_TIME"].to_numpy()[shared]
    fast = fc["POSIX_F_FASTEST_RANK_TIME"].to_numpy()[shared]
    bad = np.abs(slow - fast) / np.where(tt > 0, tt, 1) > 0.15
    assert f["P19"]["cost_s"] == pytest.approx(np.clip(slow[bad] - tt[bad] / job["nprocs"], 0, None).sum(), rel=1e-9)
    # P18/P19 count the same time as L01: the verdict names the striping once, not three times
    assert set(f["L01"]["overlaps"]) >= {"P18", "P19"}
    assert job_verdict(list(f.values()), rep)["actions"].count("P19") == 0


def test_small_request_cost_on_e3sm():
    log, rep, f, _ = _report(E3SM)
    c, fc, _, _ = _pydarshan(E3SM)
    n = c["POSIX_READS"].sum()
    bins = {"0_100": 50, "100_1K": 562, "1K_10K": 5632, "10K_100K": 56320}
    n_small_below = sum(c[f"POSIX_SIZE_READ_{b}"].sum() for b in bins)
    assert f["P05"]["evidence"]["total"] == n
    n_small = f["P05"]["evidence"]["small"]
    # the 100K_1M bin minus exact-1-MiB requests: checked in test_darshan_metrics; its bytes at 576000 each
    b_small = sum(c[f"POSIX_SIZE_READ_{b}"].sum() * v for b, v in bins.items()) + (n_small - n_small_below) * 576000
    b_total = c["POSIX_BYTES_READ"].sum()
    t_read = fc["POSIX_F_READ_TIME"].sum()
    s_large = max((b_total - b_small) / (n - n_small), 1 << 20) if n > n_small and b_total > b_small else 1 << 20
    expected = t_read / n * max(0.0, n_small - b_small / s_large) * _wall_scale(rep)
    assert f["P05"]["cost_s"] == pytest.approx(expected, rel=1e-9)
    assert f["P05"]["cost_s"] > 0


def test_redundant_read_cost_on_dlio():
    log, rep, f, _ = _report(DLIO)
    c, fc, _, _ = _pydarshan(DLIO)
    b, m, t = c["POSIX_BYTES_READ"].to_numpy(float), c["POSIX_MAX_BYTE_READ"].to_numpy(float), fc["POSIX_F_READ_TIME"].to_numpy()
    extra = b - (m + 1)
    red = (b > 0) & (extra > 0) & (t > 0)
    expected = (extra[red] / b[red] * t[red]).sum() * _wall_scale(rep)
    assert f["P09"]["evidence"]["redundant_bytes"] == int(extra[extra > 0].sum())
    assert f["P09"]["cost_s"] == pytest.approx(expected, rel=1e-9) and expected > 1


def test_misaligned_file_cost_and_memory_not_costed():
    log, rep, f, _ = _report(IMBALANCED)
    c, fc, _, _ = _pydarshan(IMBALANCED)
    ops = c["POSIX_READS"].sum() + c["POSIX_WRITES"].sum()
    share = c["POSIX_FILE_NOT_ALIGNED"].sum() / ops
    size = (c["POSIX_BYTES_READ"].sum() + c["POSIX_BYTES_WRITTEN"].sum()) / ops
    unit = float(np.median(c["POSIX_FILE_ALIGNMENT"]))
    m = min(size, unit)
    expected = (fc["POSIX_F_READ_TIME"].sum() + fc["POSIX_F_WRITE_TIME"].sum()) * share * m / (size + m) * _wall_scale(rep)
    assert f["P08"]["cost_s"] == pytest.approx(expected, rel=1e-9)
    # "99 % misaligned in memory" is usually harmless: listed, not costed, ranked below everything costed
    assert f["P07"]["evidence"]["share"] > 0.9 and f["P07"]["cost_s"] == 0
    order = [x["code"] for x in job_findings(log, rep)]
    assert order.index("P07") > order.index("P08")


def test_metadata_cost_is_the_slowest_ranks_metadata_time():
    path = [p for p in pydarshan_example_logs() if p.name == "dxt.darshan"][0]
    log, rep, f, v = _report(path, Thresholds(metadata_time_rank_s=1))
    c, fc, _, job = _pydarshan(path)
    meta = fc["POSIX_F_META_TIME"].to_numpy()
    meta = np.where(meta < 0, 0.0, meta)  # the log's negative timers are excluded (a warning says so)
    assert f["P17"]["cost_s"] == pytest.approx(min(meta.sum(), rep["perf"]["io_time_s"]), rel=1e-9)
    assert any("POSIX_F_META_TIME excluded as implausible" in w for w in log.warnings)


def test_implausible_timer_is_excluded_with_a_warning():
    """example.darshan (PyDarshan): one STDIO record's write time is -2662 s (cannot be); it is not summed."""
    path = [p for p in pydarshan_example_logs() if p.name == "example.darshan"][0]
    import darshan

    with darshan.DarshanReport(str(path), read_all=True) as r:
        w = r.records["STDIO"].to_df()["fcounters"]["STDIO_F_WRITE_TIME"].to_numpy()
    log = read_log(path)
    rep = characterize(log)
    assert (w < 0).sum() == 1
    assert rep["interfaces"]["STDIO"]["write_time_s"] == pytest.approx(w[w >= 0].sum(), rel=1e-12)
    assert [x for x in log.warnings if "STDIO_F_WRITE_TIME" in x and "implausible" in x]
    raw = characterize(read_log(path, exclude_implausible_times=False))
    assert raw["interfaces"]["STDIO"]["write_time_s"] == pytest.approx(w.sum(), rel=1e-12)


@pytest.mark.parametrize("name", ["laytonjb_test1", "treddy_runtime_heatmap_inactive_ranks", "darshan-apmpi-2nodes",
                                  "snyder_python3_id3116902-2110482"])
def test_trivial_jobs_have_nothing_worth_changing(name):
    """Hello-world jobs (151 B to 491 KiB moved): no HIGH or WARN finding, and the verdict says so."""
    path = [p for p in LOGS if p.name.startswith(name)][0]
    log, rep, f, v = _report(path)
    moved = rep["totals"]["bytes_read"] + rep["totals"]["bytes_written"]
    assert moved < 1 << 20
    assert [x for x in f.values() if x["level"] in ("HIGH", "WARN")] == []
    assert v["text"].endswith("nothing worth changing") and v["actions"] == []
    # with the minimums at 0 the old findings come back: the minimums are what silences them
    loud = job_findings(log, rep, Thresholds(min_bytes=0, min_operations=0, min_files=0))
    assert len([x for x in loud if x["level"] in ("HIGH", "WARN")]) >= len([x for x in f.values()
                                                                             if x["level"] in ("HIGH", "WARN")])


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name[:40])
def test_sequential_wording_follows_the_evidence(path):
    log = read_log(path)
    for x in job_findings(log, characterize(log)):
        if x["code"] not in ("P11", "P12", "P13", "P14"):
            continue
        share = x["evidence"]["share"]
        m = re.search(r"(\d+)%", x["message"])
        shown = int(m.group(1))
        if "not sequential" in x["message"]:
            assert shown == round(100 * share)
        else:
            assert "are sequential" in x["message"] and shown == round(100 * (1 - share)) and share <= 0.2
        assert "lower offset" not in x["message"] and "mostly sequential (0" not in x["message"]


def test_partial_stdio_reads_are_not_called_sequential():
    """partial_data_stdio: 0 % of the POSIX reads are sequential, but there are few: OK, and it says why."""
    path = DATA_LOGS / "partial_data_stdio" / "partial_data_stdio.darshan"
    _, _, f, _ = _report(path)
    assert f["P12"]["evidence"]["share"] == 1.0
    assert "100% of the reads are not sequential, but only" in f["P12"]["message"]


def test_every_finding_is_costed_or_says_why():
    for path in LOGS:
        log = read_log(path)
        for x in job_findings(log, characterize(log)):
            assert x["cost_model"]
            if x["cost_s"] == 0 and x["level"] in ("HIGH", "WARN") and x["code"] not in ("S01",):
                assert x["cost_model"].startswith(("not costed", "design note", "small-requests", "straggler",
                                                   "misaligned", "redundant", "random", "metadata", "striping",
                                                   "rank0"))
