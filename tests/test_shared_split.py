"""The rank split of shared files (issue 39, job diff on the rank-imbalance-shared pair): Darshan reduces a file
every rank opened to one record (rank −1) holding its fastest and slowest ranks (bytes, time) and the variance of
every rank's bytes and time. `job` reports that split per module, `job diff` counts its change of bytes as a moved
counter, and R01 reads it for a shared file rank 0 alone wrote.

References: the planted truth of the lab's runs (rank 0 writes 1024 x 4 MiB, the others 128 each; the fix 352
each: the pair as it was in 4 MiB writes), and PyDarshan's own reading of the counters (`DarshanReport.records[...].to_df()`)."""

from __future__ import annotations

import math
from pathlib import Path

import darshan
import numpy as np
import pytest

from ioweather.services.answers.job_diff import SPLIT_MOVED, DiffSide, diff_reports
from ioweather.services.jobs.darshan import job_answer

LAB = Path(__file__).parent / "data" / "lab"
PAIRS = LAB / "pairs"
#: the rank-imbalance-shared pair as it was in 4 MiB writes (the catalogue's since writes 64 KiB, preallocated)
BAD, FIXED = LAB / "rank-imbalance-shared-4m.darshan", LAB / "fixed-rank-imbalance-shared-4m.darshan"
SHARED = Path(__file__).resolve().parents[2] / "shared"
#: public logs whose shared records include standard streams (<STDOUT>, <STDERR>; skew-autobench's anonymized)
#: and STDIO data files, and one with only a stream shared
STREAMS = [SHARED / "data/tokio/sample-badost.darshan", SHARED / "testdata/darshan/darshan-apmpi-2nodes-64mpi.darshan",
           SHARED / "data/darshan/skew_io/skew-autobench-ior.darshan", SHARED / "testdata/darshan/e3sm_io_heatmap_only.darshan"]
PUBLIC = [SHARED / "data/darshan/imbalanced_io/imbalanced-io.darshan",
          SHARED / "testdata/darshan/e3sm_io_heatmap_only.darshan",
          SHARED / "data/darshan/skew_io/skew-autobench-ior.darshan",
          SHARED / "data/tokio/sample.darshan"]
M4 = 4 << 20
PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}


def _stream(name: str) -> bool:
    """A standard stream as PyDarshan tells one (an independent reading of `stream_mask`): Darshan's <STDIN>,
    <STDOUT>, <STDERR>, or in an anonymized log a name of digits (darshan.experimental.plots.
    data_access_by_filesystem: "this is probably an anonymized STD.. stream")."""
    return name.startswith("<") or name.isdigit()


def _split(rep, module):
    return next(s for s in rep.perf.imbalance.shared if s.module == module)


def _side(log: Path):
    rep = job_answer(str(log))[0]
    return DiffSide(ident=log.stem, path=str(log), io_time_s=rep.perf.io_time_s, runtime_s=rep.job.runtime_s or 0.0,
                    nprocs=rep.job.nprocs or 1, exe=rep.job.exe, verdict=rep.verdict), rep


def test_the_planted_imbalance_of_a_shared_file_is_reported_from_darshans_rank_counters():
    rep = job_answer(str(BAD))[0]
    # before: no own file, so the per-rank imbalance read "- / - over 0 ranks" and nothing else
    assert rep.perf.imbalance.ranks_with_io == 0 and rep.perf.imbalance.bytes is None
    sp = _split(rep, "POSIX")
    assert sp.files == 1 and sp.file.endswith("rank-imbalance-shared/data")
    # the planted split: rank 0 1024 requests of 4 MiB, the others 128 each
    assert (sp.slowest_rank, sp.slowest_bytes) == (0, 1024 * M4)
    assert sp.fastest_rank in (1, 2, 3) and sp.fastest_bytes == 128 * M4
    assert sp.bytes == pytest.approx((1024 - 128) / 1024)
    assert sp.slowest_time_s > sp.fastest_time_s > 0 and sp.time == pytest.approx(1 - sp.fastest_time_s / sp.slowest_time_s)
    per_rank = np.array([1024, 128, 128, 128]) * M4
    assert sp.bytes_cv == pytest.approx(per_rank.std() / per_rank.mean(), rel=1e-9)   # 1.10
    # the fix: 352 requests a rank
    fx = _split(job_answer(str(FIXED))[0], "POSIX")
    assert fx.slowest_bytes == fx.fastest_bytes == 352 * M4 and fx.bytes == 0.0 and fx.bytes_cv == 0.0


@pytest.mark.parametrize("log", [BAD, *PUBLIC], ids=lambda p: p.name)
def test_the_split_is_darshans_counters_as_pydarshan_reads_them(log):
    if not log.is_file():
        pytest.skip(f"{log} not present")
    rep = job_answer(str(log))[0]
    with darshan.DarshanReport(str(log), read_all=True) as ref:
        nprocs = ref.metadata["job"]["nprocs"]
        checked = 0
        for sp in rep.perf.imbalance.shared:
            p = PREFIX[sp.module]
            df = ref.records[sp.module].to_df()
            c, f = df["counters"], df["fcounters"]
            sh = (c["rank"] < 0).to_numpy()
            names = ref.name_records
            keep = sh & ~np.array([_stream(names.get(i, "")) for i in c["id"]])
            rc, rf = c[keep].reset_index(drop=True), f[keep].reset_index(drop=True)
            # the bytes' spread is read at the layer the ranks called: a file with a shared MPI-IO record
            # above its POSIX (or STDIO) one is split by ROMIO's aggregators there, not by the code
            above = set()
            if sp.module != "MPI-IO" and "MPI-IO" in ref.records:
                m = ref.records["MPI-IO"].to_df()["counters"]
                above = set(m["id"][(m["rank"] < 0).to_numpy()])
            top = ~rc["id"].isin(above).to_numpy()
            assert sp.files == len(rc)
            # the worst file: the largest slowest − fastest rank time
            gap = (rf[f"{p}_F_SLOWEST_RANK_TIME"] - rf[f"{p}_F_FASTEST_RANK_TIME"]).to_numpy()
            w = int(np.argmax(gap))
            assert names[rc["id"][w]] == sp.file
            assert (sp.slowest_rank, sp.slowest_bytes, sp.fastest_rank, sp.fastest_bytes) == (
                rc[f"{p}_SLOWEST_RANK"][w], rc[f"{p}_SLOWEST_RANK_BYTES"][w],
                rc[f"{p}_FASTEST_RANK"][w], rc[f"{p}_FASTEST_RANK_BYTES"][w])
            assert sp.slowest_time_s == rf[f"{p}_F_SLOWEST_RANK_TIME"][w]
            assert sp.fastest_time_s == rf[f"{p}_F_FASTEST_RANK_TIME"][w]
            b = (rc[f"{p}_BYTES_READ"] + rc[f"{p}_BYTES_WRITTEN"]).to_numpy(float)[top]
            sd = np.sqrt(rf[f"{p}_F_VARIANCE_RANK_BYTES"].to_numpy())[top]
            want = sd.sum() / (b.sum() / nprocs) if b.sum() > 0 else None
            if want is None:
                assert sp.bytes_cv is None
            else:
                assert sp.bytes_cv == pytest.approx(want, rel=1e-9)
            checked += 1
    assert checked >= 1


def test_the_console_says_how_far_apart_the_shared_files_ranks_were(capsys):
    from ioweather.views.job_console import print_job

    print_job(job_answer(str(BAD))[0])
    out = capsys.readouterr().out
    assert "over 0 ranks" not in out
    assert "slowest rank 0 4.0 GiB" in out and "87.5% /" in out


def test_job_diff_counts_the_rebalanced_shared_file_as_a_moved_counter():
    (sb, rb), (sa, ra) = _side(BAD), _side(FIXED)
    d = diff_reports(sb, rb, sa, ra)
    moved = [c for c in d.causes if c.kind == "counter"]
    # the job's totals are the same (5.5 GiB, 1408 writes, 4 opens): only the split moved
    assert [c.code for c in moved] == ["perf.imbalance.shared.POSIX.bytes_cv"]
    assert moved[0].before == pytest.approx(1.1023, abs=1e-4) and moved[0].after == 0.0
    assert "4.0 GiB" in moved[0].message and "1.4 GiB" in moved[0].message
    assert not d.same_code


def test_a_balanced_shared_file_read_by_two_darshan_versions_is_the_same_split():
    """The same mpi-io-test (4 ranks, a balanced shared file) under Darshan 3.4.7 and 3.5.0: the split did not
    move, although the timings did; and sample.darshan's even MPI-IO split keeps Darshan's float residue
    (standard deviation 26 bytes of 1 GiB a rank) far under the bar."""
    rel = SHARED / "data/darshan/release_logs"
    a, b = rel / "mpi-io-test-x86_64-3.4.7.darshan", rel / "mpi-io-test-x86_64-3.5.0.darshan"
    if not a.is_file() or not b.is_file():
        pytest.skip("release logs not present")
    (sb, rb), (sa, ra) = _side(a), _side(b)
    assert {s.module for s in rb.perf.imbalance.shared} == {"POSIX", "MPI-IO"}
    d = diff_reports(sb, rb, sa, ra)
    assert not [c for c in d.causes if c.code.startswith("perf.imbalance.shared")]
    sample = SHARED / "data/tokio/sample.darshan"
    if sample.is_file():
        cv = _split(job_answer(str(sample))[0], "MPI-IO").bytes_cv
        assert 0 < cv < 1e-6 < SPLIT_MOVED


def test_one_rank_writing_all_of_a_shared_file_is_r01_with_the_one_device_bound():
    """Every rank opens one file and rank 0 alone writes 1 GiB to it (planted.c one-rank-shared, 4 ranks,
    O_DIRECT): Darshan reduces it to a shared record, which R01 left out before (it asked for no shared bytes)."""
    log = LAB / "one-rank-shared.darshan"
    rep = job_answer(str(log))[0]
    sp = _split(rep, "POSIX")
    assert (sp.slowest_rank, sp.slowest_bytes, sp.fastest_bytes) == (0, 256 * M4, 0)
    r01 = next(f for f in rep.findings if f.code == "R01")
    assert r01.evidence["rank0_bytes"] == 256 * M4 and r01.evidence["one_device"]
    # on one node's disk rank 0's 4 MiB stream already has the device: the spread saves about nothing
    assert r01.evidence["rank0_time_s"] == pytest.approx(sp.slowest_time_s, rel=1e-9)
    assert r01.cost_s <= 0.1 * rep.perf.io_time_s
    assert "nothing worth changing" in rep.verdict
    assert math.isfinite(r01.cost_s)


def test_the_posix_split_under_an_mpiio_record_is_not_the_codes():
    """mpi-io-test writes one shared file through MPI-IO; its POSIX record below is split by ROMIO's aggregators
    (hints and stripes choose them), so its bytes' spread is left out (None) and job diff cannot count it as
    "the code changed"; the MPI-IO one is kept."""
    log = SHARED / "data/darshan/release_logs/mpi-io-test-x86_64-3.5.0.darshan"
    if not log.is_file():
        pytest.skip("release logs not present")
    rep = job_answer(str(log))[0]
    posix, mpiio = _split(rep, "POSIX"), _split(rep, "MPI-IO")
    assert posix.files >= 1 and posix.bytes_cv is None
    assert mpiio.bytes_cv is not None


def test_r01_is_not_raised_where_rank_0_wrote_most_but_not_all_of_a_shared_file():
    """The rank-imbalance-shared bad run: rank 0 1024 requests, the others 128 each: an imbalance (P18's), not
    rank-0-only I/O."""
    rep = job_answer(str(BAD))[0]
    assert "R01" not in {f.code for f in rep.findings}


def test_an_mpiio_record_that_moved_nothing_does_not_hand_rank_0_the_posix_bytes(monkeypatch):
    """A file opened through MPI-IO and written through POSIX: its MPI-IO shared record moved 0 bytes, so
    "rank 0's bytes >= the file's" holds for it trivially (0 >= 0). The POSIX record must decide: on the
    imbalanced bad run it says the other ranks wrote too, so R01's shared part is unknown (None)."""
    from ioweather.sources.darshan_log import read_log
    from ioweather.stats import findings, job

    log = read_log(BAD, dxt=False, heatmaps=False)
    real = job.shared_rank_rows(log)
    assert real.n == 1 and real["module"][0] == "POSIX"

    def with_empty_mpiio(lg):
        rows = job.shared_rank_rows(lg)
        out = job.Cols({k: np.concatenate([v, v[:1]]) for k, v in rows.items()})
        out.n = rows.n + 1
        out["module"][-1] = "MPI-IO"
        for k in ("bytes", "time", "slowest_bytes", "slowest_time", "fastest_bytes", "fastest_time"):
            out[k][-1] = 0
        out["slowest_rank"][-1] = 0
        out["top"][:] = [False, True]
        return out

    monkeypatch.setattr(findings, "shared_rank_rows", with_empty_mpiio)
    assert findings._rank0_shared(log) is None


def _chart_reference(log: Path) -> tuple[np.ndarray, np.ndarray, set, float]:
    """The per-rank chart's bytes and seconds from PyDarshan's DataFrames alone: each rank's own POSIX and STDIO
    records that are not a standard stream (`_stream`), plus each shared one that is not a stream, split by its
    rank counters (slowest and fastest ranks their own, the rest evenly over the others); also the shared records
    split and the bytes of the streams left out (own and shared)."""
    with darshan.DarshanReport(str(log), read_all=True) as ref:
        nprocs = ref.metadata["job"]["nprocs"]
        names = ref.name_records
        by, tm = np.zeros(nprocs), np.zeros(nprocs)
        split, streams = set(), 0.0
        for mod, p in (("POSIX", "POSIX"), ("STDIO", "STDIO")):
            if mod not in ref.records:
                continue
            df = ref.records[mod].to_df()
            c, f = df["counters"], df["fcounters"]
            b = (c[f"{p}_BYTES_READ"] + c[f"{p}_BYTES_WRITTEN"]).to_numpy(float)
            t = (f[f"{p}_F_READ_TIME"] + f[f"{p}_F_WRITE_TIME"] + f[f"{p}_F_META_TIME"]).to_numpy(float)
            rank = c["rank"].to_numpy()
            stream = np.array([_stream(names.get(i, "")) for i in c["id"]], bool)
            streams += float(b[(rank >= 0) & stream].sum())
            # a rank's own standard streams are not its I/O either (perf.imbalance leaves them out too)
            own = (rank >= 0) & ~stream
            by += np.bincount(rank[own], weights=b[own], minlength=nprocs)[:nprocs]
            tm += np.bincount(rank[own], weights=t[own], minlength=nprocs)[:nprocs]
            for i in np.flatnonzero(rank < 0):
                if stream[i]:
                    streams += b[i]
                    continue
                split.add((mod, int(c["id"].iloc[i])))
                named = {}
                for who in ("SLOWEST", "FASTEST"):
                    named.setdefault(int(c[f"{p}_{who}_RANK"].iloc[i]),
                                     (float(c[f"{p}_{who}_RANK_BYTES"].iloc[i]), float(f[f"{p}_F_{who}_RANK_TIME"].iloc[i])))
                others = np.ones(nprocs, bool)
                for r, (rb, rt) in named.items():
                    by[r] += rb
                    tm[r] += rt
                    others[r] = False
                by[others] += max(b[i] - sum(v[0] for v in named.values()), 0) / others.sum()
                tm[others] += max(t[i] - sum(v[1] for v in named.values()), 0) / others.sum()
    return by, tm, split, streams


@pytest.mark.parametrize("log", [LAB / "one-rank-shared.darshan", BAD, *STREAMS,
                                 LAB / "ctl-fpp-odirect-4m-stdout.darshan"], ids=lambda p: p.name)
def test_the_per_rank_chart_reads_the_shared_files_by_the_one_rule(log):
    """`job --html`'s per-rank chart, R01 and the report's split read the shared records by one rule
    (`shared_rank_rows`): the chart is PyDarshan's counters split as `_chart_reference` does, STDIO's shared data
    files included (the chart left them out before), standard streams left out as the report leaves them, the
    ranks' own ones too (the chart counted rank 0's own <STDOUT> before)."""
    if not log.is_file():
        pytest.skip(f"{log} not present")
    from ioweather.sources.darshan_log import read_log
    from ioweather.stats.job import per_rank_with_shared, shared_rank_rows

    lg = read_log(log, dxt=False, heatmaps=False)
    pr, how = per_rank_with_shared(lg)
    by, tm, split, streams = _chart_reference(log)
    assert len(pr) == len(by)
    np.testing.assert_allclose(pr["bytes"].to_numpy(), by, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(pr["time"].to_numpy(), tm, rtol=1e-9, atol=1e-9)
    rows = shared_rank_rows(lg)
    # the chart's shared files are the report's at the storage layer: one rule
    assert split == {(m, int(i)) for m, i in zip(rows["module"], rows["id"]) if m in ("POSIX", "STDIO")}
    assert {s.module for s in job_answer(str(log))[0].perf.imbalance.shared} == set(rows["module"])
    assert ("no shared files" in how) == (not split)
    if log in STREAMS or "stdout" in log.name:
        # the logs hold standard streams, whose bytes the chart leaves out
        assert streams > 0
