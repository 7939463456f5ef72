"""The lab's runs plant what they say: cheap cases run under the real Darshan runtime, and the log's
counters checked against what the program was told to do (independent of the advisor; docs/lab.md).

Skipped, with the reason, where mpicc or the lab's Darshan build is absent (`ioweather lab build`).
About 30-40 s on this machine (the last test runs two of the catalogue's cases and scores them).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ioweather.errors import UserError
from ioweather.services.lab.catalogue import Case
from ioweather.services.lab.run import read_index, run_cases
from ioweather.services.lab.toolchain import find

pytestmark = pytest.mark.slow

darshan = pytest.importorskip("darshan")


@pytest.fixture(autouse=True)
def _no_settle(monkeypatch):
    """These tests check counters, not times: no pause before each case (run.SETTLE_S)."""
    monkeypatch.setenv("IOWEATHER_LAB_SETTLE_S", "0")


@pytest.fixture(scope="module")
def tools():
    try:
        return find()
    except UserError as e:
        pytest.skip(f"no lab toolchain: {e}")


def _counters(log: str, module: str = "POSIX"):
    report = darshan.DarshanReport(log, read_all=True)
    assert report.metadata["job"]["log_ver"] == "3.41"
    if module not in report.records:
        return None
    return report.records[module].to_df()["counters"]


def _run(tools, tmp_path, case: Case):
    run = run_cases([case], tools, tmp_path, tmp_path / "logs")
    (done,) = run.cases
    assert done.status == "ok", done.reason
    assert read_index(tmp_path / "logs").cases[0].logs == done.logs
    return done


def test_fsync_per_write_is_counted_once_per_write(tools, tmp_path):
    n = 60
    done = _run(tools, tmp_path, Case("t-fsync", "", ("sync-per-write", "small-writes"),
                                      ("lab_posix", "-o", "{dir}/f", "-w", str(n), "-s", "4096", "-y", "1")))
    c = _counters(done.logs[0])
    assert sorted(c["rank"]) == [0, 1]
    assert list(c["POSIX_FSYNCS"]) == [n, n]
    assert list(c["POSIX_FDSYNCS"]) == [0, 0]
    assert list(c["POSIX_WRITES"]) == [n, n]
    assert list(c["POSIX_SIZE_WRITE_1K_10K"]) == [n, n]
    assert list(c["POSIX_BYTES_WRITTEN"]) == [n * 4096] * 2


def test_evict_drops_the_file_from_the_page_cache_before_its_reads(tools, tmp_path):
    """lab_posix -e (random-small-reads): after its writes the file is written back and dropped from the page
    cache, so its buffered reads come from the device. fincore (util-linux, not the program) counts the file's
    resident bytes after a run that writes 16 MiB and reads one 4 KiB block back: all of it without -e, at
    most the block and the kernel's first readahead with it."""
    fincore = shutil.which("fincore")
    if fincore is None:
        pytest.skip("no fincore (util-linux)")

    def resident(name: str, *extra: str) -> int:
        path = tmp_path / name
        subprocess.run([tools.programs["lab_posix_nompi"], "-o", str(path), "-k", "0", "-w", "16", "-s", str(1 << 20),
                        "-r", "1", "-z", "4096", *extra], check=True, timeout=60)
        out = subprocess.run([fincore, "--bytes", "--noheadings", "--output", "RES", f"{path}.0"], check=True,
                             capture_output=True, text=True, timeout=60).stdout
        return int(out.split()[0])

    if resident("kept") != 16 << 20:
        pytest.skip(f"{tmp_path}: the written file is not all in the page cache (tmpfs, or memory pressure)")
    assert 4096 <= resident("evicted", "-e") <= 1 << 20


def test_odirect_small_writes_keep_their_size(tools, tmp_path):
    """IOR's 4 KiB O_DIRECT writes reach POSIX as 4 KiB writes (no page cache merged them), file per process."""
    done = _run(tools, tmp_path, Case("t-odirect", "", ("small-writes",),
                                      ("ior", "-a", "POSIX", "-F", "--posix.odirect", "-t", "4k", "-b", "1m", "-w",
                                       "-k", "-o", "{dir}/ior.dat")))
    c = _counters(done.logs[0])
    data = c[c["POSIX_BYTES_WRITTEN"] > 0]
    assert len(data) == 2  # one file per rank
    assert list(data["POSIX_WRITES"]) == [256, 256]
    assert list(data["POSIX_ACCESS1_ACCESS"]) == [4096, 4096]
    assert list(data["POSIX_ACCESS1_COUNT"]) == [256, 256]
    assert list(data["POSIX_FILE_NOT_ALIGNED"]) == [0, 0]


def test_mpiio_contiguous_blocks_reach_posix_as_called_and_o_direct_is_applied(tools, tmp_path):
    """lab_mpiio -C -d (mpiio-independent-small's program): each rank's independent 8 KiB calls reach POSIX as
    8 KiB writes in its own block of the shared file, and the file is opened O_DIRECT (the program's own open,
    ahead of Darshan's wrapper): a request of 1000 bytes, which O_DIRECT refuses (EINVAL), moves nothing with
    -d and all its bytes without it."""
    done = _run(tools, tmp_path, Case("t-mpiio-direct", "", ("small-writes",),
                                      ("lab_mpiio", "-o", "{dir}/data", "-C", "-d", "-b", "8192", "-n", "64")))
    m, p = _counters(done.logs[0], "MPI-IO"), _counters(done.logs[0])
    assert int(m["MPIIO_INDEP_WRITES"].sum()) == 128 and int(m["MPIIO_BYTES_WRITTEN"].sum()) == 128 * 8192
    assert int(p["POSIX_WRITES"].sum()) == 128 and int(p["POSIX_BYTES_WRITTEN"].sum()) == 128 * 8192
    assert int(p["POSIX_MAX_BYTE_WRITTEN"].max()) == 128 * 8192 - 1   # two blocks, nothing else
    assert int(p["POSIX_CONSEC_WRITES"].sum()) >= 126                  # each rank's calls follow each other
    for flags, moved in ((("-d",), 0), ((), 2 * 4 * 1000)):
        where = tmp_path / f"odd{len(flags)}"
        where.mkdir()
        done = _run(tools, where, Case(f"t-mpiio-odd{len(flags)}", "", (),
                                          ("lab_mpiio", "-o", "{dir}/data", "-C", *flags, "-b", "1000", "-n", "4")))
        assert int(_counters(done.logs[0])["POSIX_BYTES_WRITTEN"].sum()) == moved, flags


def test_one_rank_does_all_the_io_while_the_others_wait(tools, tmp_path):
    done = _run(tools, tmp_path, Case("t-one-rank", "", ("one-rank-io",),
                                      ("lab_posix", "-o", "{dir}/f", "-O", "-w", "8", "-s", str(1 << 20), "-d")))
    c = _counters(done.logs[0])
    assert list(c["rank"]) == [0]
    assert int(c["POSIX_BYTES_WRITTEN"].iloc[0]) == 8 << 20
    assert (int(c["POSIX_ACCESS1_ACCESS"].iloc[0]), int(c["POSIX_ACCESS1_COUNT"].iloc[0])) == (1 << 20, 8)


def test_stdio_lines_are_flushed_and_synced_each(tools, tmp_path):
    n = 40
    done = _run(tools, tmp_path, Case("t-stdio", "", ("stdio-heavy", "sync-per-write"),
                                      ("lab_posix", "-o", "{dir}/f", "-t", "-w", str(n), "-s", "100", "-y", "1")))
    c = _counters(done.logs[0], "STDIO")
    assert list(c["STDIO_WRITES"]) == [n, n]
    assert list(c["STDIO_FLUSHES"]) == [n, n]
    assert list(c["STDIO_BYTES_WRITTEN"]) == [n * 100] * 2
    # fsync(fileno(f)): Darshan's fileno() wrapper hands the stream's descriptor to the POSIX module
    p = _counters(done.logs[0])
    assert list(p["POSIX_FSYNCS"]) == [n, n]
    assert list(p["POSIX_FILENOS"]) == [n, n]


def test_non_mpi_processes_write_one_log_each(tools, tmp_path):
    """Data-loader style: separate processes, one Darshan log each, every read the planted 4 KiB."""
    done = _run(tools, tmp_path, Case("t-loader", "", ("small-reads",),
                                      ("lab_posix_nompi", "-o", "{dir}/shard", "-w", "1", "-s", str(1 << 20),
                                       "-r", "64", "-z", "4096", "-X", "-d"), procs=2, mpi=False))
    assert len(done.logs) == 2
    for log in done.logs:
        report = darshan.DarshanReport(log, read_all=True)
        assert report.metadata["job"]["nprocs"] == 1
        c = report.records["POSIX"].to_df()["counters"]
        assert list(c["POSIX_READS"]) == [64]
        assert list(c["POSIX_SIZE_READ_1K_10K"]) == [64]


def test_each_process_of_a_case_runs_at_the_labs_priority_in_its_own_session(tools, tmp_path):
    """MPICH starts each rank in a session of its own, so the autogroup scheduler shares the cores between it
    and every other session whatever its nice; `lab run` sets each process's autogroup nice (run.AUTOGROUP_NICE)
    where the kernel allows it, and counts the CPU the case's processes used."""
    import os

    from ioweather.services.lab.run import AUTOGROUP_NICE, _priority

    probe = tmp_path / "autogroup"
    if not Path("/proc/self/autogroup").is_file() or os.geteuid() != 0:
        pytest.skip("no autogroup scheduler, or not allowed to raise a priority (not root)")
    for mpi, program in ((True, "lab_posix"), (False, "lab_posix_nompi")):
        where = tmp_path / program
        where.mkdir()
        done = _run(tools, where, Case(f"t-prio-{program}", "", (), (program, "-o", "{dir}/f", "-w", "2", "-s", "4096"),
                                       procs=2, mpi=mpi))
        assert done.cpu_s is not None and done.cpu_s > 0
        assert "/proc/self/autogroup" in done.command
        # each process led its session, and says the nice it ran at
        assert (done.autogroup_nice, done.autogroup_applied) == ([AUTOGROUP_NICE] * 2, True), done.autogroup_note
    # what the wrapper does, seen from the process it starts (mpiexec gives each rank a session; Popen's
    # start_new_session the non-MPI processes)
    import subprocess
    out = subprocess.run([tools.mpiexec, "-n", "2", *_priority(tmp_path / "report"), "sh", "-c",
                          f"cat /proc/self/autogroup >> {probe}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    groups = probe.read_text().split("\n")[:2]
    assert all(g.endswith(f"nice {AUTOGROUP_NICE}") for g in groups), groups
    assert len({g.split()[0] for g in groups}) == 2   # a session, and an autogroup, each


def test_relative_directories_mean_where_the_command_was_run(tools, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    run = run_cases([Case("t-rel", "", (), ("lab_posix", "-o", "{dir}/f", "-w", "2", "-s", "4096"))], tools,
                    Path("d"), Path("logs"))
    (done,) = run.cases
    assert done.status == "ok", done.reason
    assert done.logs == [str(tmp_path / "logs" / "t-rel" / "t-rel.darshan")]
    assert Path(done.logs[0]).is_file()


def test_the_advisor_on_a_control_and_on_small_collective_calls(tools, tmp_path):
    """Two of the catalogue's cases as they are, scored as `lab score` scores them: the large collective
    control raises nothing at WARN or HIGH (whatever the machine's load adds to its collective calls: the
    buffering hint is credited only with the copy it removes). The 131,072 collective calls of 32 B a rank on
    2 ranks are planted as the counters say (64 B per call across the ranks, read back with PyDarshan); the
    advisor names them M11 HIGH with that evidence, and raises nothing else at WARN or HIGH. Each call's
    exchange costs ~20-45 us here (3.5-5.8 s in all at load 2-5, docs/validation.md "Small collective calls
    made to cost"): above the 1 s bar even at the ~12 us a 4 KiB call took on the idle machine."""
    from ioweather.services.jobs.darshan import job_answer
    from ioweather.services.lab.catalogue import select

    run = run_cases(select(["ctl-mpiio-collective-large", "mpiio-collective-small"]), tools, tmp_path, tmp_path / "logs")
    ctl, small = run.cases
    assert (ctl.name, small.name) == ("ctl-mpiio-collective-large", "mpiio-collective-small")
    assert ctl.status == small.status == "ok", (ctl.reason, small.reason)
    rep = job_answer(ctl.logs[0])[0].raw()
    assert [f["code"] for f in rep["findings"] if f["level"] in ("HIGH", "WARN")] == [], rep["verdict"]
    assert "nothing worth changing" in rep["verdict"]
    c = _counters(small.logs[0], "MPI-IO")
    calls, nbytes = int(c["MPIIO_COLL_WRITES"].sum()), int(c["MPIIO_BYTES_WRITTEN"].sum())
    assert calls == 2 * 131072 and nbytes // (calls // 2) == 64  # each rank's call is one of the job's calls
    rep = job_answer(small.logs[0])[0].raw()
    alarms = [f["code"] for f in rep["findings"] if f["level"] in ("HIGH", "WARN")]
    assert alarms == ["M11"], rep["verdict"]
    (m11,) = [f for f in rep["findings"] if f["code"] == "M11"]
    assert m11["level"] == "HIGH" and m11["evidence"]["bytes_per_call"] == 64 and m11["evidence"]["ranks"] == 2
    assert m11["evidence"]["collective_calls"] == 131072
    assert "M08" not in [f["code"] for f in rep["findings"]]


@pytest.mark.parametrize("other", ["-O", "-t", "-f"])
def test_preallocation_is_refused_where_it_cannot_apply(tools, tmp_path, other):
    """-P's barrier is every rank's: with -O the idle ranks would leave rank 0 waiting at its last barrier (a
    hang under mpiexec); -t and -f write nothing it could preallocate. Refused before any I/O, one line."""
    extra = [other, "4"] if other == "-f" else [other]
    done = subprocess.run([tools.programs["lab_posix_nompi"], "-o", str(tmp_path / "p"), "-w", "2", "-s", "4096",
                           "-P", *extra], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == "lab_posix: -P cannot go with -O, -t or -f"
    assert not list(tmp_path.iterdir())
