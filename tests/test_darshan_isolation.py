"""Never a crash of the Darshan reader (issue 27 item 1, issue 32 items 1, 2, 4, 8).

Real logs, real processes: byte-mutated and byte-swapped public logs fed to `ioweather job`,
logs whose job region says nprocs = 2**40, `jobs ingest` over a directory holding a log that kills
libdarshan-util, a good log and a name that is not UTF-8, a file replaced by a link between the scan
and the open, a 10 GiB sparse file.

The fuzz run is repeatable: its seed is printed and fixed in CI. A longer run by hand:

    IOWEATHER_DARSHAN_MUTANTS=400 IOWEATHER_FUZZ_SEED=$RANDOM .venv/bin/python -m pytest -q \
        tests/test_darshan_isolation.py -k fuzz -s
"""

from __future__ import annotations

import json
import os
import random
import signal
import struct
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from darshan_support import TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse)
from inprocess import run_cli as run_in_process

from ioweather.isolation import ChildDied, call_isolated
from ioweather.sources.darshan_log import (HASHED_TRAILER_BYTES, MAX_COUNTER, READER_DIED, DarshanLogError, ModuleRecords, bound_ranks,
                                          check_layout, content_hash, exclude_implausible,
                                          exclude_implausible_counters, read_log)

MAGIC = 6567223
SEED = int(os.environ.get("IOWEATHER_FUZZ_SEED", "20261126"))
MUTANTS = int(os.environ.get("IOWEATHER_DARSHAN_MUTANTS", "24"))
IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"
PPC64 = TESTDATA_LOGS / "mpi-io-test-ppc64-3.1.8.darshan"
SMALL = sorted(p for p in TESTDATA_LOGS.glob("*.darshan") if p.stat().st_size < 100_000) if TESTDATA_LOGS.is_dir() else []


# -- helpers: real logs, changed the way damage changes them ------------------------------------------

def mutate(src: Path, rng: random.Random) -> bytes:
    """`src` with 1-8 bytes set to random values (what a bad disk, a bad copy or a fuzzer does)."""
    b = bytearray(src.read_bytes())
    for _ in range(rng.randint(1, 8)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def byte_swapped(src: Path) -> bytes:
    """`src` whose header and job region are rewritten in the other byte order and whose records are
    left as written: libdarshan-util swaps every record value as it reads, so the counters, ranks,
    sizes and timers are garbage while the log opens (what a reader of the wrong byte order sees)."""
    b = bytearray(src.read_bytes())
    version = b[:8].split(b"\0")[0].decode()
    e = "<" if struct.unpack_from("<q", b, 8)[0] == MAGIC else ">"
    o = ">" if e == "<" else "<"
    name_at, mods_at, nmods = (32, 48, 64) if version >= "3.41" else (24, 40, 16)
    header = mods_at + 20 * nmods  # the maps, then one uint32 version per module
    struct.pack_into(o + "q", b, 8, MAGIC)
    struct.pack_into(o + "I", b, 20, struct.unpack_from(e + "I", b, 20)[0])  # partial flag
    maps = [name_at] + [mods_at + 16 * i for i in range(nmods)]
    for at in maps:
        struct.pack_into(o + "QQ", b, at, *struct.unpack_from(e + "QQ", b, at))
    for at in range(mods_at + 16 * nmods, header, 4):
        struct.pack_into(o + "I", b, at, struct.unpack_from(e + "I", b, at)[0])
    name_off = struct.unpack_from(o + "Q", b, name_at)[0]
    raw = bytearray(zlib.decompress(bytes(b[header:name_off])))
    for i in range(7 if version >= "3.41" else 5):  # uid, times, nprocs, jobid: right once swapped
        struct.pack_into(o + "q", raw, 8 * i, struct.unpack_from(e + "q", raw, 8 * i)[0])
    job = zlib.compress(bytes(raw))
    delta = len(job) - (name_off - header)
    for at in maps:
        off, ln = struct.unpack_from(o + "QQ", b, at)
        if ln or at == name_at:
            struct.pack_into(o + "Q", b, at, off + delta)
    return bytes(b[:header]) + job + bytes(b[name_off:])


def rewrite_job(src: Path, dst: Path, **fields: int) -> Path:
    """Copy `src` with fields of its (zlib) job region replaced, e.g. nprocs=2**40; the regions after
    it are moved by the change in compressed length."""
    b = bytearray(src.read_bytes())
    version = b[:8].split(b"\0")[0].decode()
    e = "<" if struct.unpack_from("<q", b, 8)[0] == MAGIC else ">"
    v41 = version >= "3.41"
    name_at, mods_at, nmods = (32, 48, 64) if v41 else (24, 40, 16)
    header = mods_at + 16 * nmods + 4 * nmods  # the maps, then one uint32 version per module
    name_off = struct.unpack_from(e + "Q", b, name_at)[0]
    raw = bytearray(zlib.decompress(bytes(b[header:name_off])))
    names = (("uid", "start_time_sec", "start_time_nsec", "end_time_sec", "end_time_nsec", "nprocs", "jobid") if v41
             else ("uid", "start_time_sec", "end_time_sec", "nprocs", "jobid"))
    for k, v in fields.items():
        struct.pack_into(e + "q", raw, 8 * names.index(k), v)
    job = zlib.compress(bytes(raw))
    delta = len(job) - (name_off - header)
    for at in [name_at] + [mods_at + 16 * i for i in range(nmods)]:
        off, ln = struct.unpack_from(e + "QQ", b, at)
        if ln or at == name_at:
            struct.pack_into(e + "Q", b, at, off + delta)
    dst.write_bytes(bytes(b[:header]) + job + bytes(b[name_off:]))
    return dst


def _reader_dies(path: Path) -> bool:
    try:
        call_isolated(read_log, str(path))
    except ChildDied:
        return True
    except DarshanLogError:
        pass
    return False


@pytest.fixture(scope="module")
def crashing_log(tmp_path_factory) -> Path:
    """A mutant of a public log that kills libdarshan-util (found from a fixed seed)."""
    d = tmp_path_factory.mktemp("crash")
    rng = random.Random(SEED)
    for i in range(300):
        p = d / f"mutant{i}.darshan"
        p.write_bytes(mutate(rng.choice(SMALL), rng))
        if _reader_dies(p):
            return p
        p.unlink()
    pytest.fail(f"no mutant of seed {SEED} kills the reader in 300 tries: libdarshan-util became robust?")


# -- the reader, in process ---------------------------------------------------------------------------

def test_isolated_call_gives_back_results_exceptions_and_deaths():
    assert call_isolated(sum, [1, 2, 3]) == 6
    with pytest.raises(DarshanLogError, match="nope"):
        call_isolated(_raise, DarshanLogError("nope"))
    with pytest.raises(ChildDied) as e:
        call_isolated(os.abort)
    assert e.value.signum == signal.SIGABRT


def _raise(e):
    raise e


def test_big_endian_log_counters_are_writable_and_implausible_timers_excluded():
    """ppc64 logs ended in "assignment destination is read-only" when a timer had to be excluded."""
    log = read_log(PPC64, exclude_implausible_times=False)
    posix = log.records["POSIX"]
    assert posix.counter_values.flags.writeable and posix.fcounter_values.flags.writeable
    assert log.nprocs == 4 and int(posix.counters["POSIX_BYTES_READ"].sum()) == 64 << 20  # as darshan-parser says
    # a denormal timer (a byte-swapped double) is implausible: set to 0 in place, no ValueError
    j = posix.fcounter_names.index("POSIX_F_READ_TIME")
    posix.fcounter_values[0, j] = 5e-324
    warnings_ = exclude_implausible(log.records, runtime_s=log.runtime_s, nprocs=log.nprocs)
    assert len(warnings_) == 1 and posix.fcounter_values[0, j] == 0


def _records(ranks, counters: dict[str, list[int]] | None = None) -> ModuleRecords:
    counters = counters or {"POSIX_BYTES_READ": [1] * len(ranks)}
    n = len(ranks)
    return ModuleRecords(module="POSIX", version=4, partial=False, ids=np.arange(n, dtype=np.uint64),
                         ranks=np.array(ranks, dtype=np.int64), counter_names=list(counters),
                         fcounter_names=["POSIX_F_READ_TIME"],
                         counter_values=np.array(list(counters.values()), dtype=np.int64).T.copy(),
                         fcounter_values=np.zeros((n, 1)), names=np.array([f"f{i}" for i in range(n)], dtype=object))


@pytest.mark.parametrize("nprocs,expect", [(2**40, 8), (-7, 8), (0, 8), (16, 16)])
def test_impossible_process_counts_and_ranks_are_bounded(nprocs, expect):
    recs = {"POSIX": _records([-1, 0, 7, 2**40, -5])}
    n, warns = bound_ranks(recs, nprocs)
    assert n == expect and list(recs["POSIX"].ranks) == [-1, 0, 7]
    assert any("outside" in w for w in warns)
    assert (nprocs == 16) != any("process count" in w for w in warns)


def test_garbage_counters_are_excluded_but_ids_strides_and_ranks_kept():
    recs = {"POSIX": _records([0, 0], {"POSIX_BYTES_READ": [2**62, 10], "POSIX_READS": [-9, 3],
                                       "POSIX_STRIDE1_STRIDE": [-4096, 8], "POSIX_RENAMED_FROM": [-(2**62), 0],
                                       "POSIX_FASTEST_RANK": [-1, 0]})}
    warns = exclude_implausible_counters(recs)
    c = recs["POSIX"].counters
    assert list(c["POSIX_BYTES_READ"]) == [0, 10] and list(c["POSIX_READS"]) == [0, 3]
    assert list(c["POSIX_STRIDE1_STRIDE"]) == [-4096, 8] and list(c["POSIX_RENAMED_FROM"]) == [-(2**62), 0]
    assert list(c["POSIX_FASTEST_RANK"]) == [-1, 0]
    assert len(warns) == 2 and MAX_COUNTER < 2**62


@pytest.mark.parametrize("fields", [{"nprocs": 2**40}, {"nprocs": -7}])
def test_log_with_garbage_nprocs_is_read_and_characterized_without_numpy_warnings(tmp_path, fields):
    """np.bincount(minlength=nprocs) said "array is too big" for nprocs = 2**40."""
    from ioweather.stats.findings import job_findings, job_verdict
    from ioweather.stats.job import characterize

    p = rewrite_job(IMBALANCED, tmp_path / "x.darshan", **fields)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning (overflow) would reach the user's terminal
        log = read_log(p)
        rep = characterize(log)
        job_verdict(job_findings(log, rep), rep)
    assert log.nprocs == 496 and any("process count" in w for w in log.warnings)
    assert rep["job"]["nprocs"] == 496


def _report_with_warnings_as_errors(path: str) -> tuple[int, int]:
    """(nprocs, warnings in the report) of `job`'s report of `path`, any Python warning an error."""
    from ioweather.services.jobs.darshan_child import _make

    warnings.simplefilter("error")
    rep, _ = _make(path, None, None, "x")
    return rep.job.nprocs, len(rep.warnings)


@pytest.mark.parametrize("src", SMALL, ids=[p.name[:40] for p in SMALL])
def test_byte_swapped_records_are_bounded_without_a_traceback_or_a_warning(tmp_path, src):
    """Garbage counters, ranks and timers (records read in the wrong byte order) give a report with
    warnings, or one reason, or a dead reader; never a numpy warning ("overflow") or an exception."""
    p = tmp_path / "swapped.darshan"
    p.write_bytes(byte_swapped(src))
    try:
        nprocs, n_warnings = call_isolated(_report_with_warnings_as_errors, str(p))
    except (DarshanLogError, ChildDied):
        return
    assert 1 <= nprocs <= 2**23


def test_impossible_job_times_are_unknown_not_an_overflow(tmp_path):
    p = rewrite_job(IMBALANCED, tmp_path / "t.darshan", start_time_sec=200_000_000_000, end_time_sec=200_000_000_010)
    log = read_log(p)
    assert log.start_time_s == 0 and log.runtime_s == 0 and any("times" in w for w in log.warnings)
    # beyond what PyDarshan can turn into a date (year 36812): one reason, not an OSError
    p = rewrite_job(IMBALANCED, tmp_path / "u.darshan", start_time_sec=2**40)
    with pytest.raises(DarshanLogError, match="job region"):
        read_log(p)


def test_sparse_file_is_refused_before_hashing_and_only_the_log_is_hashed(tmp_path, monkeypatch):
    """`truncate -s 10G x.darshan` was hashed whole (20 s) before its header was looked at."""
    import ioweather.sources.darshan_log as dl

    sparse = tmp_path / "x.darshan"
    with open(sparse, "wb") as f:
        f.truncate(10 << 30)
    read = []
    real_pread = os.pread
    monkeypatch.setattr(dl.os, "pread", lambda fd, n, at: read.append(n) or real_pread(fd, n, at))
    with pytest.raises(DarshanLogError, match="not a Darshan log"):
        content_hash(sparse)
    assert sum(read) == 0
    # a real log's bytes, then 10 GiB of holes: the log and 1 MiB of the rest are read, not 10 GiB
    padded = tmp_path / "padded.darshan"
    padded.write_bytes(IMBALANCED.read_bytes())
    with open(padded, "r+b") as f:
        f.truncate(10 << 30)
    assert content_hash(padded) != content_hash(IMBALANCED)
    assert sum(read) == 2 * IMBALANCED.stat().st_size + HASHED_TRAILER_BYTES
    # real logs end with their last region: their hash is that of the whole file, as it always was
    assert check_layout(IMBALANCED).end == IMBALANCED.stat().st_size
    import hashlib

    assert content_hash(IMBALANCED) == hashlib.sha256(IMBALANCED.read_bytes()).hexdigest()


# -- `ioweather job`, a real process --------------------------------------------------------------------

def _one_line_or_ok(r) -> str | None:
    """None when `r` is what a user may see from `job`, else what is wrong."""
    if r.returncode < 0:
        return f"killed by {signal.Signals(-r.returncode).name}"
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    if "Traceback" in r.stderr or "Warning" in r.stderr:
        return f"traceback or warning: {r.stderr[-400:]}"
    if r.returncode == 0:
        return None if json.loads(r.stdout) else "empty JSON"
    if r.returncode != 1 or len(lines) != 1 or not lines[0].startswith("ioweather: error: "):
        return f"exit {r.returncode} with {len(lines)} lines: {r.stderr[-400:]}"
    return None


def test_fuzz_job_never_dies_of_a_mutated_or_byte_swapped_log(tmp_path, cli):
    print(f"\nDarshan mutants: seed {SEED}, {MUTANTS} mutants (IOWEATHER_FUZZ_SEED, IOWEATHER_DARSHAN_MUTANTS)")
    rng = random.Random(SEED)
    cases = []
    for i in range(MUTANTS):
        src = rng.choice(SMALL)
        p = tmp_path / f"m{i}.darshan"
        p.write_bytes(mutate(src, rng))
        cases.append((f"mutant {i} of {src.name}", p))
    for src in (PPC64, TESTDATA_LOGS / "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan",
                TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan"):
        p = tmp_path / f"swapped-{src.name}"
        p.write_bytes(byte_swapped(src))
        cases.append((f"byte-swapped {src.name}", p))
    # The mutants in this process (the reader dies in its forked child, as it does under a process of its
    # own: 98 s -> 14 s at load 15); the byte-swapped logs in real processes, two at a time (the machine's
    # cores), for the exit status and stderr as a user gets them.
    results = [run_in_process("job", "--json", str(p)) for _, p in cases[:MUTANTS]]
    with ThreadPoolExecutor(2) as pool:
        results += pool.map(lambda c: cli("job", "--json", str(c[1]), timeout=120), cases[MUTANTS:])
    bad = [f"{what}: {why}" for (what, _), r in zip(cases, results) if (why := _one_line_or_ok(r))]
    # what the report's child prints goes to this process's captured stderr, in the child's memory, so a
    # warning there is looked for as in the byte-swapped test above: the report again, any warning an error
    for what, p in cases[:MUTANTS]:
        try:
            call_isolated(_report_with_warnings_as_errors, str(p))
        except (DarshanLogError, ChildDied):
            pass
        except Exception as e:  # noqa: BLE001  (a warning made an error, or anything else a user would see)
            bad.append(f"{what}: {type(e).__name__}: {e}")
    assert not bad, "\n".join(bad)
    died = sum(READER_DIED in r.stderr for r in results)
    print(f"{sum(r.returncode == 0 for r in results)} read, {died} killed their reader, "
          f"{sum(r.returncode == 1 for r in results) - died} refused with a reason")


def test_job_on_a_log_that_kills_the_reader_is_one_line(crashing_log, cli):
    r = cli("job", str(crashing_log), timeout=120)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr.strip() == f"ioweather: error: cannot read {crashing_log}: {READER_DIED}"


def test_job_on_a_name_that_is_not_utf8(tmp_path, cli):
    d = tmp_path.as_posix().encode()
    log = os.fsdecode(d + b"/\xff.darshan")
    Path(log).write_bytes(IMBALANCED.read_bytes())
    out = os.fsdecode(d + b"/\xfe.html")
    r = cli("job", log, "--html", out, timeout=120)
    assert r.returncode == 0 and "\\xfe.html" in r.stderr, r.stderr
    assert "\\xff.darshan" in Path(out).read_text()
    missing = os.fsdecode(d + b"/\xfd.darshan")
    r = cli("job", missing, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "\\xfd.darshan" in r.stderr, r.stderr


# -- `jobs ingest` --------------------------------------------------------------------------------------

@pytest.fixture
def mixed_dir(tmp_path, crashing_log) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "good.darshan").write_bytes(IMBALANCED.read_bytes())
    (d / "crash.darshan").write_bytes(crashing_log.read_bytes())
    Path(os.fsdecode(os.fsencode(d) + b"/\xff.darshan")).write_bytes(PPC64.read_bytes())
    (d / "garbage.darshan").write_bytes(b"\x00garbage" * 100)
    return d


def _stored(home) -> tuple[list[dict], list[dict]]:
    """The store's jobs and failed logs, as `jobs list` and `jobs failed` answer (in this process: the
    ingest above, where a dying reader is the point, ran in its own)."""
    jobs = json.loads(run_in_process("jobs", "list", "--json", home=home, check=True).stdout)
    failed = json.loads(run_in_process("jobs", "failed", "--json", home=home, check=True).stdout)
    return jobs, failed


@pytest.mark.parametrize("workers", ["2", "1"])
def test_ingest_stores_good_logs_beside_one_that_kills_the_reader(mixed_dir, cli, home, workers):
    r = cli("jobs", "ingest", str(mixed_dir), "--json", "--workers", workers, home=home, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    counts = json.loads(r.stdout)
    assert (counts["ingested"], counts["failed"]) == (2, 2), counts
    jobs, failed = _stored(home)
    assert len(jobs) == 2
    reasons = {Path(f["path"]).name: f["reason"] for f in failed}
    assert reasons["crash.darshan"] == READER_DIED and "not a Darshan log" in reasons["garbage.darshan"]
    show = run_in_process("jobs", "show", "1959700", "--json", home=home, check=True)  # the ppc64 log under its \xff name
    assert "\\\\xff.darshan" in show.stdout or "\\xff.darshan" in json.loads(show.stdout).get("path", show.stdout)
    # the non-UTF-8 name is known by its bytes: a second run opens nothing
    again = json.loads(cli("jobs", "ingest", str(mixed_dir), "--json", home=home, check=True, timeout=300).stdout)
    assert again["skipped"] == 4 and again["ingested"] == again["failed"] == 0, again


def test_ingest_of_one_log_that_kills_the_reader(crashing_log, cli, home):
    """One log was read in the ingest's own process: its crash ended the run, with nothing recorded."""
    r = cli("jobs", "ingest", str(crashing_log), "--json", home=home, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["failed"] == 1
    assert _stored(home)[1][0]["reason"] == READER_DIED


# -- links swapped in between the scan and the open (issue 32 item 4) ------------------------------------

@pytest.fixture
def tree(tmp_path) -> tuple[Path, Path]:
    root = tmp_path / "logs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.darshan").write_bytes(IMBALANCED.read_bytes())
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.darshan").write_bytes(PPC64.read_bytes())
    return root, outside


def _scan_then_swap(root: Path, follow: bool, swap) -> dict:
    from ioweather.services.jobs.ingest import Scan, extract, find_logs

    scan = Scan.of([str(root)], follow)
    listed = list(find_logs([str(root)], follow_symlinks=follow))
    assert len(listed) == 1
    swap()
    kind, row, *_ = extract(listed[0], frozenset(), None, scan=scan)
    return {"kind": kind, **row}


@pytest.mark.parametrize("follow", [False, True])
def test_log_replaced_by_a_link_after_the_scan_is_not_read(tree, follow):
    root, outside = tree
    a = root / "sub" / "a.darshan"

    def swap():
        a.unlink()
        a.symlink_to(outside / "secret.darshan")
    got = _scan_then_swap(root, follow, swap)
    assert got["kind"] == "failed" and got["size_bytes"] in (0, len(str(outside / "secret.darshan"))), got
    assert ("symlink" in got["reason"]) if not follow else ("outside the scanned directory" in got["reason"]), got


@pytest.mark.parametrize("follow", [False, True])
def test_directory_replaced_by_a_link_after_the_scan_is_not_left_through(tree, follow):
    root, outside = tree
    (outside / "a.darshan").write_bytes(PPC64.read_bytes())

    def swap():
        (root / "sub" / "a.darshan").unlink()
        (root / "sub").rmdir()
        (root / "sub").symlink_to(outside)
    got = _scan_then_swap(root, follow, swap)
    assert got["kind"] == "failed" and "outside the scanned directory" in got["reason"], got


def test_follow_symlinks_never_reaches_proc(tree, cli, home):
    root, _ = tree
    (root / "kmsg.darshan").symlink_to("/proc/self/status")
    (root / "zero.darshan").symlink_to("/dev/zero")
    r = cli("jobs", "ingest", str(root), "--follow-symlinks", "--json", "--workers", "1", home=home, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["failed"] == 2
    reasons = sorted(f["reason"] for f in _stored(home)[1])
    assert "pseudo-file system" in reasons[0] or "character device" in reasons[0], reasons
    assert all(any(w in x for w in ("pseudo-file system", "kernel interface", "device", "outside")) for x in reasons), reasons


def test_ingest_of_a_10_gib_sparse_file(tmp_path, cli, home):
    d = tmp_path / "sparse"
    d.mkdir()
    with open(d / "x.darshan", "wb") as f:
        f.truncate(10 << 30)
    r = cli("jobs", "ingest", str(d), "--json", home=home, timeout=120)
    assert r.returncode == 0 and json.loads(r.stdout)["failed"] == 1, r.stderr
    assert "bad magic number" in _stored(home)[1][0]["reason"]


@pytest.mark.parametrize("args", [("import", "csv", "--fs", "x", "{dir}/b\udcff.csv"), ("umami", "\udcff")])
def test_other_commands_refuse_a_name_that_is_not_utf8_in_one_line(tmp_path, cli, home, args):
    """`import csv $'b\\xff.csv'` and `umami $'\\xff'` ended in a UnicodeEncodeError traceback."""
    (tmp_path / os.fsdecode(b"b\xff.csv")).write_text("time,target,metric,value,interval_s\n"
                                                      "2024-01-01T00:00:00Z,OST0000,read_bytes,1,60\n")
    r = cli(*[a.replace("{dir}", str(tmp_path)) for a in args], home=home, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "not valid UTF-8" in lines[0] and "\\xff" in lines[0], r.stderr
