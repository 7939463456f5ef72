"""The advisor's new findings and context rules (issue 27 items 2, 3, 5), each on a counter set built by
hand (tests/advisor_support.py) so that the numbers they must produce follow from the counters alone."""

from __future__ import annotations

import numpy as np
import pytest

from advisor_support import GiB, MiB, make_log, mpiio, posix, records

from ioweather.stats.findings import Thresholds, job_findings, job_verdict
from ioweather.stats.findings import _setstripe_target as setstripe_target
from ioweather.stats.job import characterize, library_mask


def _run(log, t=None):
    ch = characterize(log)
    f = job_findings(log, ch, t)
    return ch, {x["code"]: x for x in f}, job_verdict(f, ch, t)


def shared_mpiio_job(*, name="/lus/scratch/run/out.dat", mounts=None, mpiio_s=100.0, posix_s=40.0,
                     write_size=16 * MiB, nprocs=64, nbytes=10 * GiB, runtime_s=1000.0):
    """N:1 collective writes: one shared (rank -1) MPI-IO record over one shared POSIX record."""
    n_mpi = nbytes // write_size
    m = mpiio(7, -1, name=name, bytes_written=nbytes, coll_writes=n_mpi, write_time=mpiio_s * nprocs,
              slowest=mpiio_s)
    p = posix(7, -1, name=name, bytes_written=nbytes, writes=nbytes // (16 * MiB), write_time=posix_s * nprocs,
              slowest=posix_s)
    return make_log({"POSIX": records("POSIX", [p]), "MPI-IO": records("MPI-IO", [m])}, nprocs=nprocs,
                    runtime_s=runtime_s, mounts=mounts)


# -- item 2: time at the top layer

def test_io_time_is_the_mpiio_layers_slowest_rank_and_says_so():
    ch, _, _ = _run(shared_mpiio_job())
    perf = ch["perf"]
    assert perf["io_time_s"] == pytest.approx(100.0)          # MPI-IO slowest rank, not POSIX's 40 s
    assert perf["io_time_layer"] == "MPI-IO"
    assert perf["layers"]["MPI-IO"]["io_time_s"] == pytest.approx(100.0)
    assert perf["layers"]["POSIX"]["io_time_s"] == pytest.approx(40.0)
    assert perf["fs_io_time_s"] == pytest.approx(40.0)
    assert perf["io_fraction_of_runtime"] == pytest.approx(0.1)


def test_each_file_is_timed_at_its_own_top_layer():
    """An MPI-IO data file and a POSIX-only log file of the same rank: their times add on that rank."""
    m = mpiio(1, 0, name="/lus/scratch/d", bytes_written=GiB, coll_writes=64, write_time=30.0)
    p = [posix(1, 0, name="/lus/scratch/d", bytes_written=GiB, writes=64, write_time=10.0),
         posix(2, 0, name="/lus/scratch/log.txt", bytes_written=MiB, writes=100, write_time=5.0),
         posix(3, 1, name="/lus/scratch/log1.txt", bytes_written=MiB, writes=100, write_time=1.0)]
    log = make_log({"POSIX": records("POSIX", p), "MPI-IO": records("MPI-IO", [m])}, nprocs=2)
    perf = characterize(log)["perf"]
    assert perf["io_time_s"] == pytest.approx(35.0)           # rank 0: 30 (MPI-IO) + 5 (POSIX), not 10 + 5
    assert perf["slowest_rank"] == 0
    assert perf["io_time_by_layer_s"] == pytest.approx({"MPI-IO": 30.0, "POSIX": 5.0})
    assert perf["io_time_layer"] == "MPI-IO"


def test_hdf5_layer_counts_only_for_files_its_datasets_name():
    h5d = {"id": 11, "rank": 0, "name": "/lus/scratch/f.h5:/d", "H5D_BYTES_WRITTEN": GiB, "H5D_WRITES": 1,
           "H5D_F_WRITE_TIME": 50.0, "H5D_F_META_TIME": 0.0, "H5D_F_READ_TIME": 0.0}
    h5f = [{"id": 1, "rank": 0, "name": "/lus/scratch/f.h5", "H5F_OPENS": 1, "H5F_F_META_TIME": 2.0},
           # a file HDF5 opened without dataset I/O: its MPI-IO/POSIX time stands
           {"id": 2, "rank": 0, "name": "/lus/scratch/g.h5", "H5F_OPENS": 1, "H5F_F_META_TIME": 0.5}]
    m = [mpiio(1, 0, name="/lus/scratch/f.h5", bytes_written=GiB, indep_writes=1, write_time=45.0),
         mpiio(2, 0, name="/lus/scratch/g.h5", write_time=3.0)]
    p = [posix(1, 0, name="/lus/scratch/f.h5", bytes_written=GiB, writes=1, write_time=40.0),
         posix(2, 0, name="/lus/scratch/g.h5", meta_time=1.0)]
    log = make_log({"POSIX": records("POSIX", p), "MPI-IO": records("MPI-IO", m),
                    "H5F": records("H5F", h5f), "H5D": records("H5D", [h5d], file_rec_ids=[1])}, nprocs=1)
    perf = characterize(log)["perf"]
    assert perf["io_time_by_layer_s"] == pytest.approx({"HDF5": 52.0, "MPI-IO": 3.0})
    assert perf["io_time_s"] == pytest.approx(55.0)


def test_dfs_job_reports_its_bytes_and_dfs_time():
    dfs = {"id": 5, "rank": -1, "name": "/dfs/run/out", "DFS_BYTES_WRITTEN": 4 * GiB, "DFS_BYTES_READ": GiB,
           "DFS_WRITES": 256, "DFS_READS": 64, "DFS_OPENS": 16, "DFS_F_WRITE_TIME": 80.0, "DFS_F_READ_TIME": 16.0,
           "DFS_F_META_TIME": 0.0, "DFS_F_SLOWEST_RANK_TIME": 7.0}
    daos = {"id": 9, "rank": 0, "name": None, "DAOS_BYTES_WRITTEN": 4 * GiB, "DAOS_BYTES_READ": GiB,
            "DAOS_F_WRITE_TIME": 70.0, "DAOS_F_READ_TIME": 10.0, "DAOS_F_META_TIME": 0.0,
            "DAOS_F_SLOWEST_RANK_TIME": 0.0}
    log = make_log({"DFS": records("DFS", [dfs]), "DAOS": records("DAOS", [daos])}, nprocs=16, runtime_s=100.0)
    ch, f, _ = _run(log)
    assert ch["totals"]["bytes_written"] == 4 * GiB and ch["totals"]["bytes_read"] == GiB
    assert ch["perf"]["io_time_layer"] == "DFS"
    assert ch["perf"]["io_time_s"] == pytest.approx(7.0)     # DAOS is under DFS: not added
    assert "T00" not in f


# -- item 3: MPI-IO overhead, read-modify-write, NFS

def test_mpiio_overhead_costs_the_top_layer_minus_the_layer_below():
    ch, f, v = _run(shared_mpiio_job())
    m08 = f["M08"]
    assert m08["evidence"]["overhead_s"] == pytest.approx(60.0)
    assert m08["evidence"]["mpiio_time_s"] == pytest.approx(100.0) and m08["evidence"]["posix_time_s"] == pytest.approx(40.0)
    # 16 MiB collective writes: two-phase I/O adds only a copy: turn it off
    assert "romio_cb_write=disable" in m08["fix"] and "cb_nodes" not in m08["fix"]
    assert "M10" not in f


def test_turning_buffering_off_is_credited_only_with_the_copy_it_removes():
    """ROMIO allgathers the ranks' offsets in every collective call whatever romio_cb_write says: the hint
    removes the copy of each byte into an aggregator's buffer and out (at no less than CB_COPY_RATE), not the
    ranks' waiting. 10 GiB, aggregators unknown (one): 2 × 10 GiB at 1 GiB/s = 20 s of the 60 s above POSIX;
    with 60 s of exchange possible (30 GiB), the whole 60 s."""
    from ioweather.stats.findings import CB_COPY_RATE

    _, f, _ = _run(shared_mpiio_job())
    m08 = f["M08"]
    assert CB_COPY_RATE == 2**30 and m08["cost_s"] == pytest.approx(2 * 10 * GiB / CB_COPY_RATE)
    assert "no hint recovers" in m08["message"] and "waiting" in m08["message"]
    _, f, v = _run(shared_mpiio_job(nbytes=30 * GiB))
    assert f["M08"]["cost_s"] == pytest.approx(60.0) and f["M08"]["level"] == "HIGH" and v["actions"][0] == "M08"


def test_small_collective_writes_get_no_hint_ROMIO_already_applies():
    """Small writes already collective: collective buffering is on, with ROMIO's own aggregators and
    16 MiB buffer; naming those values again recovers nothing (issue 39), so no hint and no fix: the
    lever is the file layout and the size of the calls."""
    ch, f, _ = _run(shared_mpiio_job(write_size=256 * 1024))
    m08 = f["M08"]
    assert "fix" not in m08 and "enable" not in m08["action"] and "cb_nodes" not in m08["action"]
    assert "lay the file out" in m08["action"] and "no hint recovers" in m08["message"]


def test_collective_calls_too_small_to_gain_are_m11_not_m08():
    """2 ranks, 4 KiB collective writes: each call of the job moves 8 KiB across both ranks, which no
    merging makes a large request. M11, costed as MPI-IO's time above POSIX times (1 − 8 KiB / 1 MiB);
    lever: fewer, larger calls. The same bytes in 16 MiB calls stay M08."""
    _, f, v = _run(shared_mpiio_job(write_size=4096, nprocs=2, nbytes=64 * MiB, runtime_s=120.0))
    m11 = f["M11"]
    assert "M08" not in f and m11["evidence"]["bytes_per_call"] == 8192 and m11["evidence"]["ranks"] == 2
    assert m11["evidence"]["collective_calls"] == 64 * MiB // 4096 / 2
    assert m11["cost_s"] == pytest.approx(60.0 * (1 - 8192 / MiB))
    assert "fewer, larger collective calls" in m11["action"] and "fix" not in m11 and v["actions"][0] == "M11"
    _, f, _ = _run(shared_mpiio_job(nprocs=2, nbytes=64 * MiB, runtime_s=120.0))
    assert "M11" not in f and "M08" in f


def test_no_mpiio_overhead_when_mpiio_time_is_the_posix_time():
    _, f, _ = _run(shared_mpiio_job(mpiio_s=42.0, posix_s=40.0))
    assert "M08" not in f


def test_shared_mpiio_on_nfs_says_write_to_the_parallel_file_system():
    log = shared_mpiio_job(name="/home/u/run/out.dat", mounts=[("/home", "nfs4"), ("/lus/scratch", "lustre")])
    _, f, v = _run(log)
    assert "M08" not in f
    m10 = f["M10"]
    assert m10["cost_s"] == pytest.approx(60.0) and m10["level"] == "HIGH"
    assert "shared-file MPI-IO on NFS" in m10["message"] and "parallel file system" in m10["message"]
    assert "parallel file system" in v["text"]


def test_a_collectively_written_files_straggler_is_an_aggregator_not_an_imbalance():
    """One rank moved all of a shared file's bytes, but MPI-IO wrote it collectively: that rank is the
    aggregator ROMIO chose; the advice is more aggregators, not "balance the ranks"."""
    log = shared_mpiio_job()
    p = log.records["POSIX"]
    extra = {"POSIX_SLOWEST_RANK": 0, "POSIX_SLOWEST_RANK_BYTES": 10 * GiB, "POSIX_FASTEST_RANK": 1,
             "POSIX_FASTEST_RANK_BYTES": 0, "POSIX_F_FASTEST_RANK_TIME": 0.0}
    row = {"id": 7, "rank": -1, "name": p.names[0], **dict(zip(p.counter_names, p.counter_values[0])),
           **dict(zip(p.fcounter_names, p.fcounter_values[0])), **extra}
    log.records["POSIX"] = records("POSIX", [row])
    _, f, _ = _run(log)
    assert "more aggregators" in f["P18"]["action"] and "balance" not in f["P18"]["action"]


def _rmw_job(switches: int, written: float = 3 * GiB, reads: int = 5000):
    """Collective writes of 1 GiB that POSIX turns into 3 GiB written and 5,000 zero-byte reads."""
    m = mpiio(3, -1, name="/lus/scratch/out.nc", bytes_written=GiB, coll_writes=1024, write_time=64 * 20.0,
              slowest=20.0)
    p = posix(3, -1, name="/lus/scratch/out.nc", bytes_written=int(written), writes=3072, write_time=64 * 12.0,
              reads=reads, bytes_read=0, read_time=64 * 6.0, slowest=18.0, POSIX_RW_SWITCHES=switches,
              POSIX_SIZE_READ_0_100=reads)
    return make_log({"POSIX": records("POSIX", [p]), "MPI-IO": records("MPI-IO", [m])}, nprocs=64, runtime_s=100.0)


def test_read_modify_write_found_and_costed():
    ch, f, v = _run(_rmw_job(switches=9000))
    m09 = f["M09"]
    assert m09["evidence"]["extra_reads"] == 5000 and m09["evidence"]["posix_over_mpiio_bytes"] == pytest.approx(3.0)
    # every read was not asked for (6 s per rank of 18), and 2 of 3 GiB written are extra (12 s × 2/3):
    # (6 × 64 + 12 × 64 × 2/3) cumulative seconds on the POSIX clock (18 s slowest path of 18 × 64 cumulative);
    # and the holes' share (2 of the 3 GiB POSIX wrote) of the 2 s MPI-IO spends above POSIX (20 s - 18 s)
    assert m09["cost_s"] == pytest.approx(6.0 + 8.0 + 2.0 * 2 / 3)
    assert m09["evidence"]["mpiio_overhead_s"] == pytest.approx(2.0 * 2 / 3)
    assert "romio_ds_write=disable" in m09["fix"] and "cb_buffer_size" in m09["message"]
    assert m09["level"] == "HIGH"


def test_holes_written_back_are_read_modify_write_below_twice_the_bytes():
    """Two-phase over a file half holes (the lab's collective-rmw): POSIX writes 1.99× the MPI-IO bytes
    (the last hole is never written) and makes 128 reads that return nothing: no 2× and under 1,000 tiny
    reads, but the holes written back are evidence that only read-modify-write leaves."""
    _, f, _ = _run(_rmw_job(switches=255, written=1.99 * GiB, reads=128))
    m09 = f["M09"]
    assert m09["evidence"]["bytes_written_back"] == pytest.approx(0.99 * GiB, rel=1e-6)
    assert m09["evidence"]["posix_over_mpiio_bytes"] < 2
    # a header rewritten by MPI-IO's own small writes is not read-modify-write: under 10 % more bytes
    _, f, _ = _run(_rmw_job(switches=255, written=1.05 * GiB, reads=128))
    assert "M09" not in f


def test_no_read_modify_write_without_interleaving():
    _, f, _ = _run(_rmw_job(switches=3))
    assert "M09" not in f


def _ranks_job(times, nbytes):
    p = [posix(10 + r, r, name=f"/lus/scratch/out.{r}", bytes_written=b, writes=max(b // MiB, 1), write_time=t)
         for r, (t, b) in enumerate(zip(times, nbytes))]
    return make_log({"POSIX": records("POSIX", p), "MPI-IO": records("MPI-IO", [])}, nprocs=len(times), runtime_s=200.0)


def test_slow_rank_with_balanced_bytes_is_a_slow_target_not_an_imbalance():
    _, f, v = _run(_ranks_job([10.0, 10.0, 10.0, 40.0], [GiB] * 4))
    b01 = f["B01"]
    assert "B02" not in f
    assert b01["cost_s"] == pytest.approx(40.0 - 17.5)
    assert b01["evidence"]["slowest_rank"] == 3
    assert "slow target" in b01["message"] and "rather than rebalancing" in b01["message"]
    assert "balance the bytes" not in v["text"]


def test_a_slow_target_is_named_from_the_slow_ranks_lustre_records():
    from ioweather.sources.darshan_log import LustreLayouts

    log = _ranks_job([10.0, 10.0, 10.0, 40.0], [GiB] * 4)
    log.lustre = LustreLayouts(id=np.arange(10, 14, dtype=np.uint64), rank=np.arange(4),
                               stripe_size=np.full(4, MiB), stripe_count=np.ones(4, int),
                               pool=np.array([""] * 4, object), ost_ids=np.array(["3", "4", "5", "17"], object))
    _, f, _ = _run(log)
    assert f["B01"]["evidence"]["osts"] == "17" and "OST(s) 17" in f["B01"]["message"]


def test_slow_rank_with_more_bytes_is_an_imbalance():
    _, f, v = _run(_ranks_job([10.0, 10.0, 10.0, 40.0], [GiB, GiB, GiB, 4 * GiB]))
    assert "B01" not in f
    assert f["B02"]["action"].startswith("balance the bytes across ranks")


# -- item 5: context

def test_one_process_gets_no_collective_advice():
    m = mpiio(1, -1, name="/lus/scratch/x", bytes_written=GiB, indep_writes=200_000, write_time=50.0)
    p = posix(1, -1, name="/lus/scratch/x", bytes_written=GiB, writes=200_000, write_time=50.0)
    _, f, v = _run(make_log({"POSIX": records("POSIX", [p]), "MPI-IO": records("MPI-IO", [m])}, nprocs=1,
                            runtime_s=100.0))
    assert "M03" not in f and "P16" not in f
    assert "collective" not in f["P06"]["message"] and "collective" not in v["text"]


def test_interpreter_files_are_not_data_files():
    py = [posix(1000 + i, -1, name=f"/home/u/env/lib/python3.11/site-packages/pkg/m{i}.cpython-311.pyc",
                bytes_read=4096, reads=1, read_time=0.001, meta_time=0.01) for i in range(371)]
    data = [posix(1, -1, name="/lus/scratch/in.dat", bytes_read=GiB, reads=1024, read_time=5.0)]
    _, f, _ = _run(make_log({"POSIX": records("POSIX", py + data)}, nprocs=1, runtime_s=60.0))
    assert "F01" not in f
    assert library_mask(["/usr/lib64/libc.so.6", "/opt/cray/x.so", "/home/u/a.py", "/x/__pycache__/a.cpython-311.pyc",
                         "<STDOUT>", "/lus/scratch/run/out.h5", "/home/u/data/model.bin"]).tolist() == \
        [True, True, True, True, True, False, False]


def test_setstripe_names_the_files_directory_never_a_mount_root():
    mounts = [("/lus/theta-fs0", "lustre")]
    assert setstripe_target(["/lus/theta-fs0/proj/run1/a", "/lus/theta-fs0/proj/run1/b"], mounts) == \
        "/lus/theta-fs0/proj/run1"
    # a file directly under the mount root: the file itself (setstripe creates it with the layout)
    assert setstripe_target(["/lus/theta-fs0/3981085427"], mounts) == "/lus/theta-fs0/3981085427"


def test_partial_log_says_so_in_the_verdict():
    p = posix(1, -1, name="/lus/scratch/x", bytes_written=GiB, writes=1024, write_time=1.0)
    ch, _, v = _run(make_log({"POSIX": records("POSIX", [p])}, nprocs=1, partial=("POSIX",)))
    assert "partial log: POSIX" in v["text"]
