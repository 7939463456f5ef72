"""The probe's directory after a full disk, an interrupted init and a planted FIFO (issue 19, items
11-13): a real full tmpfs, real signals to a real `probe init` process (the other commands run in this one,
tests/inprocess.py); counts checked against the store and the directory itself."""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ioweather.sources.probe import (
    DATA_NAME,
    INIT_CHUNK,
    META_NAME,
    POOL_NAME,
    SMALL_FILE_BYTES,
    init_probe_dir,
)
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)
from inprocess import run_cli as in_process_run

MiB = 1 << 20


def _run(d: Path, home: Path, *extra: str) -> subprocess.CompletedProcess:
    # a bounded run (--duration) whose samples are the answer: in this process (tests/inprocess.py)
    return in_process_run("probe", "run", str(d), "--interval", "0.05", "--block", "64k", "-q", *extra, home=home)


def _per_op(home: Path, target: str) -> dict[tuple[str, str, int], int]:
    """(op, status, errno) -> count of `target`'s samples, straight from the SQLite file."""
    con = sqlite3.connect(home / "ioweather.sqlite")
    try:
        return {(op, st, err): n for op, st, err, n in con.execute(
            "SELECT op, status, errno, count(*) FROM probe_samples JOIN probe_runs ON probe_runs.id = run_id "
            "WHERE target = ? GROUP BY op, status, errno", (target,))}
    finally:
        con.close()


def _fill(fs: Path) -> Path:
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _pool(d: Path) -> list[os.stat_result]:
    return [os.lstat(d / POOL_NAME / n) for n in sorted(os.listdir(d / POOL_NAME))]


# ------------------------------------------------------------------ item 11: a full disk during probe run
def test_full_disk_during_run_leaves_no_orphans_and_a_restart_reads_no_false_errors(tmpfs, tmp_path):
    fs, home = tmpfs("full", "size=4m"), tmp_path / "home"
    d = fs / "p"
    init_probe_dir(d, MiB, 20, block=64 * 1024)
    filler = _fill(fs)
    r = _run(d, home, "--duration", "2", "--target", "full")
    assert r.returncode == 0, r.stderr
    full = _per_op(home, "full")
    assert full.get(("md_create", "error", errno.ENOSPC), 0) >= 10  # the disk really was full
    # Every failed create's leftover is gone: the pool never outgrows --pool.
    assert len(_pool(d)) <= 20, len(_pool(d))
    os.unlink(filler)
    r = _run(d, home, "--duration", "1", "--target", "after")
    assert r.returncode == 0, r.stderr
    after = _per_op(home, "after")
    reads = sum(n for (op, _, _), n in after.items() if op == "md_read")
    assert reads >= 10 and after.get(("md_read", "ok", 0)) == reads, after  # no false EIO from short files
    pool = _pool(d)
    assert len(pool) == 20 and all(s.st_size == SMALL_FILE_BYTES for s in pool)


def test_short_pool_files_left_by_an_older_run_are_replaced_at_start(tmp_path):
    home, d = tmp_path / "home", tmp_path / "p"
    init_probe_dir(d, MiB, 6, block=64 * 1024)
    names = sorted(os.listdir(d / POOL_NAME))
    for n, size in zip(names[:3], (0, 100, SMALL_FILE_BYTES - 1)):  # what a full disk left behind
        os.truncate(d / POOL_NAME / n, size)
    for k in range(4):  # and more files than --pool
        (d / POOL_NAME / f"f{10**6 + k:012d}").write_bytes(b"x" * SMALL_FILE_BYTES)
    r = _run(d, home, "--duration", "1", "--target", "t")
    assert r.returncode == 0, r.stderr
    per = _per_op(home, "t")
    reads = sum(n for (op, _, _), n in per.items() if op == "md_read")
    assert reads >= 10 and per.get(("md_read", "ok", 0)) == reads, per
    pool = _pool(d)
    assert len(pool) == 6 and all(s.st_size == SMALL_FILE_BYTES for s in pool)


# ------------------------------------------------------------------ item 12: an interrupted probe init
def _init(d: Path, home: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    return subprocess.Popen([sys.executable, "-m", "ioweather", "probe", "init", str(d), *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _state(pid: int) -> str:
    """The process state letter of `pid` in /proc (T: stopped)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_init_resumes(tmp_path, cli, sig):
    home, d = tmp_path / "home", tmp_path / "p"
    size = 512 * MiB
    proc = _init(d, home, "--file-size", "512MiB", "--pool", "5")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ((d / DATA_NAME).exists() and (d / DATA_NAME).stat().st_size > 0):
        time.sleep(0.005)
    # Frozen before the signal: on a loaded machine init could otherwise write the whole file (and
    # take the SIGINT during its fsync) between the check above and the signal. Stopped, the file
    # grows by at most the chunk being written and the next one before the interrupt is raised.
    proc.send_signal(signal.SIGSTOP)
    while proc.poll() is None and _state(proc.pid) != "T":
        time.sleep(0.001)
    seen = (d / DATA_NAME).stat().st_size
    assert 0 < seen < size - 2 * INIT_CHUNK, seen
    proc.send_signal(sig)
    proc.send_signal(signal.SIGCONT)
    proc.communicate(timeout=60)
    partial = (d / DATA_NAME).stat().st_size
    assert 0 < partial < size and not (d / META_NAME).exists(), partial  # interrupted for real, mid-file
    r = cli("probe", "init", str(d), "--file-size", "512MiB", "--pool", "5", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert (d / DATA_NAME).stat().st_size == size and (d / META_NAME).exists()
    pool = _pool(d)
    assert len(pool) == 5 and all(s.st_size == SMALL_FILE_BYTES for s in pool)
    r = _run(d, home, "--duration", "0.5", "--target", "resumed")
    assert r.returncode == 0, r.stderr
    assert all(st == "ok" for (_, st, _) in _per_op(home, "resumed")), _per_op(home, "resumed")


def test_init_on_a_full_disk_leaves_nothing_behind(tmpfs, cli, tmp_path):
    """Few inodes: the data file fits, the pool does not; the disk check (bytes) cannot see it coming."""
    fs = tmpfs("inodes", "size=16m,nr_inodes=8")
    d = fs / "p"
    r = cli("probe", "init", str(d), "--file-size", "4MiB", "--pool", "20", home=tmp_path / "home")
    assert r.returncode == 2 and "disk full" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not d.exists(), sorted(str(p) for p in d.rglob("*"))
    r = cli("probe", "init", str(d), "--file-size", "4MiB", "--pool", "2", home=tmp_path / "home")
    assert r.returncode == 0, r.stderr
    assert (d / DATA_NAME).stat().st_size == 4 * MiB and len(_pool(d)) == 2


def test_refused_init_leaves_no_empty_directory(tmpfs, cli, tmp_path):
    small = tmpfs("small", "size=4m")
    r = cli("probe", "init", str(small / "p"), "--file-size", "16MiB", "--pool", "2", home=tmp_path / "home")
    assert r.returncode == 2 and "not enough space" in r.stderr
    assert not (small / "p").exists()
    # a directory that was there before stays
    (small / "q").mkdir(mode=0o700)
    r = cli("probe", "init", str(small / "q"), "--file-size", "16MiB", "--pool", "2", home=tmp_path / "home")
    assert r.returncode == 2 and (small / "q").is_dir()


# ------------------------------------------------------------------ issue 20 item 3: fresh content per write
def test_every_data_write_writes_fresh_content(tmp_path):
    """Blocks written by the probe (offsets replayed from the recorded seed) all differ from each other and
    from what init wrote there; init's own blocks differ too (no repeated pattern to deduplicate)."""
    import hashlib

    import numpy as np

    from ioweather.services.probe.run import ProbeDaemon
    from ioweather.sources.probe import ProbeOptions

    d, block = tmp_path / "p", 64 * 1024
    init_probe_dir(d, 16 * MiB, 4, block=block)
    data = (d / DATA_NAME).read_bytes()
    before = [hashlib.sha256(data[i:i + block]).digest() for i in range(0, len(data), block)]
    assert len(set(before)) == len(before)  # init: no two blocks alike
    p = ProbeDaemon(d, ProbeOptions(interval_s=0.02, duration_s=1.0, block=block, seed=7, flush_s=0.1), sink=list)
    try:
        p.run(install_signals=False)
    finally:
        p.close()
    rng, nblocks = np.random.default_rng(7), len(before)
    written = {int(rng.integers(0, nblocks, size=2)[0]) for _ in range(p.periods)}
    data = (d / DATA_NAME).read_bytes()
    after = {k: hashlib.sha256(data[k * block:(k + 1) * block]).digest() for k in written}
    assert p.periods >= 10 and len(written) >= 5
    assert len(set(after.values())) == len(written)  # each written block holds its own content
    assert all(after[k] != before[k] for k in written)


def test_init_says_sizes_in_human_units(tmpfs, cli, tmp_path):
    small = tmpfs("small", "size=4m")
    r = cli("probe", "init", str(small / "p"), "--file-size", "16MiB", "--pool", "2", home=tmp_path / "home")
    assert r.returncode == 2
    assert r.stderr == f"ioweather: error: not enough space in {small / 'p'}: need 16.0 MiB, 4.0 MiB free\n"


def test_default_target_is_host_and_mount_point(tmp_path, cli):
    import json
    import socket

    from ioweather.sources.probe import mount_point

    home, d = tmp_path / "home", tmp_path / "p"
    init_probe_dir(d, MiB, 2, block=64 * 1024)
    r = _run(d, home, "--duration", "0.3")
    assert r.returncode == 0, r.stderr
    rows = json.loads(cli("probe", "stats", "--json", home=home, check=True).stdout)
    assert {row["target"] for row in rows} == {f"{socket.gethostname()}:{mount_point(d)}"}


def test_watch_takes_the_probe_options(tmp_path, cli):
    r = cli("watch", "--help")
    for option in ("--direct", "--timeout", "--block", "--fsync", "--quiet"):
        assert option in r.stdout
    r = cli("watch", str(tmp_path / "p"), "--port", "0", "--block", "1GiB", "--file-size", "8MiB", home=tmp_path / "h")
    assert r.returncode == 2 and "--block" in r.stderr and not (tmp_path / "p").exists()
