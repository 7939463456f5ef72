"""The probe on real file systems: the six ops, safety, bad input, hung and killed processes."""

import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ioweather.errors import UserError
from ioweather.services.probe.run import ProbeDaemon
from ioweather.sources.probe import DATA_NAME, POOL_NAME, ProbeOptions, init_probe_dir, mount_point
from ioweather.store.probe import OPS
from probe_hang import hang_md_read, waiting_on
from unprivileged import as_nobody, world_readable_tmp
from waiting import wait_until
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

MiB = 1 << 20
ROOT = os.geteuid() == 0


def _plant_in_pool(d: Path, make) -> Path:
    """Replace the pool file the probe reads next (the oldest) by whatever make(path) creates there."""
    path = d / POOL_NAME / sorted(os.listdir(d / POOL_NAME))[0]
    os.unlink(path)
    make(path)
    return path


def _probe_dir_and_fifo(d: Path) -> tuple[Path, Path]:
    """(a probe directory, a FIFO beside it) for probe_hang.py: md_read blocks for real in open(2) of the
    FIFO, like a stuck mount, until someone opens its other end."""
    init_probe_dir(d, MiB, 3, block=64 * 1024)
    fifo = d.parent / "stuck"
    os.mkfifo(fifo, 0o600)
    return d, fifo


def _probe(path, sink, **kw):
    opts = ProbeOptions(**{"interval_s": 0.05, "block": 64 * 1024, "timeout_s": 5, "flush_s": 0.05, **kw})
    return ProbeDaemon(path, opts, sink=sink.extend)


def test_cli_probe_minute_in_miniature(tmp_path, home, cli):
    d = tmp_path / "p"
    r = cli("probe", "init", str(d), "--file-size", "8MiB", "--pool", "16", "--json", home=home, check=True)
    info = json.loads(r.stdout)
    assert info["file_bytes"] == 8 * MiB and info["pool_files"] == 16 and info["file_exceeds_memory"] is False
    assert (d / DATA_NAME).stat().st_size == 8 * MiB
    assert len(os.listdir(d / POOL_NAME)) == 16
    assert (d.stat().st_mode & 0o777, (d / DATA_NAME).stat().st_mode & 0o777, (d / POOL_NAME).stat().st_mode & 0o777) \
        == (0o700, 0o600, 0o700)
    cli("probe", "run", str(d), "--duration", "3", "--interval", "0.25", "--block", "64k", "--target", "scratch",
        "--seed", "42", "-q", home=home, check=True)
    stats = json.loads(cli("probe", "stats", "--json", "--interval", "1h", home=home, check=True).stdout)
    assert {r["op"] for r in stats} == set(OPS)
    for r in stats:
        assert r["target"] == "scratch" and r["errors"] == 0 and r["timeouts"] == 0
        assert r["count"] >= 8, r
        assert 0 < r["min_s"] <= r["q1_s"] <= r["median_s"] <= r["q3_s"] <= r["p90_s"] <= r["p99_s"] <= r["max_s"] < 1
        assert r["interval_start"].endswith("Z")
    sd = json.loads(cli("slowdown", "--json", "--interval", "1h", home=home, check=True).stdout)
    assert {r["op"] for r in sd} == set(OPS)
    for r in sd:
        assert set(r) >= {"target", "op", "interval_start", "count", "stat", "value_s", "expected_s", "slowdown",
                          "state"}
        # 3 s of samples: the baseline is learning, so nothing is judged (issue 30)
        assert r["state"] == "learning" and r["slowdown"] is None and 0 < r["value_s"] < 1
    # the pool kept its size and the data file did not grow: disk use is bounded
    assert len(os.listdir(d / POOL_NAME)) == 16 and (d / DATA_NAME).stat().st_size == 8 * MiB
    human = cli("slowdown", "--interval", "1h", home=home, check=True)
    assert "md_stat" in human.stdout and "learning" in human.stdout and "normal" not in human.stdout


def test_period_is_fixed_start_to_start(tmp_path):
    init_probe_dir(tmp_path / "p", 2 * MiB, 8, block=64 * 1024)
    rows = []
    p = _probe(tmp_path / "p", rows, interval_s=0.2, duration_s=1.5)
    p.run(install_signals=False)
    starts = sorted(r[1] for r in rows if r[0] == "data_write")
    gaps = [(b - a) / 1e9 for a, b in zip(starts, starts[1:])]
    # start to start on the 0.2 s grid: a period the probe could not start on time is skipped and counted
    # missed (never started late), so a gap is a whole number of periods and the skipped ones are the missed
    periods = [round(g / 0.2) for g in gaps]
    assert all(k >= 1 and abs(g - 0.2 * k) < 0.05 for g, k in zip(gaps, periods)), gaps
    assert sum(k - 1 for k in periods) <= p.missed_periods, (gaps, p.missed_periods)
    assert 6 <= len(starts) + p.missed_periods <= 8, (len(starts), p.missed_periods)
    ops_of_first_period = [r[0] for r in sorted(rows, key=lambda r: r[1])[:6]]
    assert ops_of_first_period == list(OPS)  # one after another, in the documented order


def test_default_target_is_the_mount_point(tmp_path, tmpfs):
    m = tmpfs("mnt")
    assert mount_point(m / "a" / "b") == str(m)


@pytest.mark.parametrize("bad,msg", [(["--interval", "fast"], "malformed duration"),
                                     (["--timeout", "-1s"], "malformed duration"),
                                     (["--block", "1Q"], "unknown size unit")])
def test_malformed_options(tmp_path, home, cli, bad, msg):
    init_probe_dir(tmp_path / "p", MiB, 2, block=MiB)
    r = cli("probe", "run", str(tmp_path / "p"), *bad, home=home)
    assert r.returncode == 2 and msg in r.stderr and r.stderr.count("\n") == 1


def test_run_on_missing_or_uninitialised_dir(tmp_path, home, cli):
    r = cli("probe", "run", str(tmp_path / "nope"), home=home)
    assert r.returncode == 2 and "does not exist" in r.stderr and "probe init" in r.stderr
    (tmp_path / "empty").mkdir(mode=0o700)
    r = cli("probe", "run", str(tmp_path / "empty"), home=home)
    assert r.returncode == 2 and "not a probe directory" in r.stderr
    r = cli("probe", "init", str(tmp_path / "nope" / "deeper"), home=home)
    assert r.returncode == 2 and "cannot create probe directory" in r.stderr


def test_symlink_planted_at_data_file_is_refused(tmp_path, home, cli):
    d = tmp_path / "p"
    d.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    os.symlink(victim, d / DATA_NAME)
    r = cli("probe", "init", str(d), "--file-size", "1MiB", "--pool", "2", home=home)
    assert r.returncode == 2 and "already exists" in r.stderr
    assert victim.read_bytes() == b"precious"
    # and at run time, after a valid init, a swapped-in symlink is never followed
    d2 = tmp_path / "p2"
    init_probe_dir(d2, MiB, 2, block=MiB)
    os.unlink(d2 / DATA_NAME)
    os.symlink(victim, d2 / DATA_NAME)
    r = cli("probe", "run", str(d2), "--duration", "1", home=home)
    assert r.returncode == 2 and "symlink" in r.stderr
    assert victim.read_bytes() == b"precious"


def test_probe_dir_itself_a_symlink_is_refused(tmp_path, home, cli):
    init_probe_dir(tmp_path / "real", MiB, 2, block=MiB)
    os.symlink(tmp_path / "real", tmp_path / "link")
    r = cli("probe", "run", str(tmp_path / "link"), "--duration", "1", home=home)
    assert r.returncode == 2 and "symlink" in r.stderr


def test_symlink_planted_in_pool_becomes_error_sample_not_followed(tmp_path):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 3, block=64 * 1024)
    victim = tmp_path / "victim"
    victim.write_bytes(b"x" * 3901)
    _plant_in_pool(d, lambda path: os.symlink(victim, path))
    rows = []
    p = _probe(d, rows, duration_s=0.3)
    p.run(install_signals=False)
    md_read = [r for r in rows if r[0] == "md_read"]
    assert md_read[0][4] == "error" and md_read[0][5] == errno.ELOOP
    assert all(r[4] == "ok" for r in md_read[1:])
    assert victim.exists() and victim.read_bytes() == b"x" * 3901  # unlink removed the link, not the target
    assert not any(os.path.islink(d / POOL_NAME / n) for n in os.listdir(d / POOL_NAME))


def test_pool_file_removed_by_someone_else_is_recreated(tmp_path):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 6, block=64 * 1024)
    rows = []
    p = _probe(d, rows, duration_s=60)
    t = threading.Thread(target=p.run, kwargs={"install_signals": False})
    t.start()
    wait_until(lambda: len(rows) > 0, 30, "the first samples")  # running
    for name in sorted(os.listdir(d / POOL_NAME))[:3]:
        try:
            os.unlink(d / POOL_NAME / name)
        except FileNotFoundError:
            pass

    def noticed_and_replaced():
        seen = list(rows)
        last = max((i for i, r in enumerate(seen) if r[4] == "error" and r[5] == errno.ENOENT), default=None)
        return (last is not None and any(r[4] == "ok" for r in seen[last + 1:])
                and len(os.listdir(d / POOL_NAME)) == 6)

    wait_until(noticed_and_replaced, 30, "the planted file noticed and replaced")
    p.stop()
    t.join(10)
    assert not t.is_alive()
    assert len(os.listdir(d / POOL_NAME)) == 6
    enoent = [r for r in rows if r[4] == "error" and r[5] == errno.ENOENT]
    assert enoent, "the vanished files were noticed"
    assert rows[-1][4] == "ok" or rows[-2][4] == "ok"  # and the probe kept going


def test_dir_owned_by_another_user_is_refused(tmp_path, home, cli):
    if not ROOT:
        pytest.skip("needs root to chown a directory to another user")
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 2, block=MiB)
    os.chown(d, 65534, 65534)
    r = cli("probe", "run", str(d), "--duration", "1", home=home)
    assert r.returncode == 2 and "owned by uid 65534" in r.stderr


def test_read_only_mount(tmpfs, home, cli):
    ro = tmpfs("ro", "ro,size=1m")
    r = cli("probe", "init", str(ro / "p"), "--file-size", "1MiB", "--pool", "2", home=home)
    assert r.returncode == 2 and "read-only file system" in r.stderr and r.stderr.count("\n") == 1


def test_disk_full_at_init(tmpfs, home, cli):
    small = tmpfs("small", "size=4m")
    r = cli("probe", "init", str(small / "p"), "--file-size", "16MiB", "--pool", "2", home=home)
    assert r.returncode == 2 and "not enough space" in r.stderr
    assert not (small / "p" / DATA_NAME).exists()


def test_disk_full_during_init_removes_partial_file(tmpfs, monkeypatch):
    small = tmpfs("small", "size=4m")

    class Plenty:  # make the up-front check pass so the real ENOSPC path is exercised
        f_bavail, f_frsize = 1 << 40, 1

    monkeypatch.setattr(os, "fstatvfs", lambda fd: Plenty)
    with pytest.raises(UserError, match=r"cannot write .*/p/data: disk full \(no space left on device\); removed the partial file"):
        init_probe_dir(small / "p", 16 * MiB, 2, block=MiB)
    assert not (small / "p" / DATA_NAME).exists()


def test_disk_full_during_run_gives_error_samples_and_keeps_going(tmpfs):
    fs = tmpfs("full", "size=4m")
    d = fs / "p"
    init_probe_dir(d, MiB, 4, block=64 * 1024)
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT)  # fill the file system to the last block
    with pytest.raises(OSError) as e:
        while True:
            os.write(fd, b"\0" * 4096)
    os.close(fd)
    assert e.value.errno == errno.ENOSPC
    rows = []
    p = _probe(d, rows, duration_s=0.5)
    p.run(install_signals=False)
    creates = [r for r in rows if r[0] == "md_create"]
    assert creates and any(r[4] == "error" and r[5] == errno.ENOSPC for r in creates)
    data = [r for r in rows if r[0] in ("data_read", "data_write")]
    assert len(data) >= 10 and all(r[4] == "ok" for r in data)  # the data file is preallocated: still probed


def test_hung_operation_times_out_and_blocks_further_ops(tmp_path):
    d, fifo = _probe_dir_and_fifo(tmp_path / "p")
    rows = []
    p = _probe(d, rows, timeout_s=0.3, duration_s=60)
    hang_md_read(p, fifo)
    t = threading.Thread(target=p.run, kwargs={"install_signals": False})
    t.start()
    wait_until(lambda: any(r[4] == "timeout" for r in rows), 30, "the hung md_read to time out")
    time.sleep(1.0)  # the time under test: ops that piled up behind the hung call would show in it
    during = list(rows)
    timeouts = [r for r in during if r[4] == "timeout"]
    assert [r[0] for r in timeouts] == ["md_read"]  # exactly one timeout: nothing piled up behind it
    assert timeouts[0][2] >= 0.3e9
    assert not any(r[1] > timeouts[0][1] for r in during if r[4] != "timeout")  # no op started since
    fd = os.open(fifo, os.O_WRONLY)  # unblock the hung open
    os.close(fd)
    wait_until(lambda: {r[0] for r in rows if r[1] > timeouts[0][1] and r[4] == "ok"} >= {"data_write", "data_read",
               "md_stat"}, 30, "probing to resume after the hung call returned")
    p.stop()
    t.join(10)
    assert not t.is_alive()
    after = [r for r in rows if r[1] > timeouts[0][1] and r[4] == "ok"]
    assert {r[0] for r in after} >= {"data_write", "data_read", "md_stat"}, "probing resumed after the hung call returned"


def _runs(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM probe_runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _count(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT count(*) FROM probe_samples").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def _start_daemon(d: Path, home: Path, *extra, hang_on: Path | None = None):
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    cmd = [sys.executable, str(Path(__file__).with_name("probe_hang.py")), str(hang_on)] if hang_on else \
        [sys.executable, "-m", "ioweather"]
    return subprocess.Popen([*cmd, "probe", "run", str(d), "--interval", "0.1", "--block", "64k", "-q", *extra],
                            env=env, stderr=subprocess.PIPE, text=True)


def test_sigterm_during_hung_op_exits_cleanly_and_flushes(tmp_path, home):
    d, fifo = _probe_dir_and_fifo(tmp_path / "p")
    proc = _start_daemon(d, home, "--timeout", "60s", hang_on=fifo)
    # The run is recorded after the signal handlers are in place (a loaded machine takes seconds to get
    # there: a SIGTERM before would kill the interpreter); then the first period hangs in md_read.
    try:
        wait_until(lambda: _runs(home / "ioweather.sqlite") >= 1, 60, "the run recorded", proc=proc)
        wait_until(waiting_on(fifo).exists, 60, "md_read to block on the FIFO", proc=proc)
    except AssertionError:
        proc.kill()  # hung on the FIFO, it would outlive the test
        proc.wait()
        raise
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 0, proc.stderr.read()
    assert _count(home / "ioweather.sqlite") >= 3  # data_write, data_read, md_create, md_stat of the first period


def test_kill_9_keeps_every_committed_sample(tmp_path, home):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 4, block=64 * 1024)
    proc = _start_daemon(d, home)
    db = home / "ioweather.sqlite"
    wait_until(lambda: db.exists() and _count(db) >= 60, 30, "the daemon to commit 60 samples", proc=proc)
    seen = _count(db)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM probe_samples").fetchone()[0] >= seen
    con.close()
    # and the probe directory is usable again right away
    proc = _start_daemon(d, home, "--duration", "1")
    assert proc.wait(timeout=30) == 0, proc.stderr.read()


def test_two_probes_one_store(tmp_path, home, cli):
    for name in ("a", "b"):
        init_probe_dir(tmp_path / name, MiB, 3, block=64 * 1024)
    procs = [_start_daemon(tmp_path / name, home, "--target", f"fs-{name}", "--duration", "3") for name in ("a", "b")]
    for p in procs:
        assert p.wait(timeout=60) == 0, p.stderr.read()
    rows = json.loads(cli("probe", "stats", "--json", "--interval", "1h", home=home, check=True).stdout)
    assert {r["target"] for r in rows} == {"fs-a", "fs-b"}
    assert all(r["count"] >= 10 for r in rows)


@pytest.mark.postgres
def test_probe_end_to_end_on_postgresql(tmp_path, home, cli, pg_url):
    d = tmp_path / "p"
    init_probe_dir(d, MiB, 4, block=64 * 1024)
    cli("--db", pg_url, "probe", "run", str(d), "--duration", "2", "--interval", "0.2", "--block", "64k",
        "--target", "pg-scratch", "-q", home=home, check=True)
    rows = json.loads(cli("--db", pg_url, "probe", "stats", "--json", "--interval", "1h", home=home, check=True).stdout)
    assert {r["op"] for r in rows} == set(OPS) and {r["target"] for r in rows} == {"pg-scratch"}
    sd = json.loads(cli("--db", pg_url, "slowdown", "--json", "--interval", "1h", home=home, check=True).stdout)
    assert {r["op"] for r in sd} == set(OPS) and all(r["state"] == "learning" and r["value_s"] > 0 for r in sd)
    assert not (home / "ioweather.sqlite").exists()  # nothing went to the embedded default


def test_unwritable_dir_as_unprivileged_user():
    """Permission bits do not stop root, so the check runs in a child that drops to uid 65534."""
    def attempt() -> str:
        try:
            init_probe_dir(base / "locked" / "p", MiB, 2, block=MiB)
        except UserError as e:
            return str(e)
        return "no error"

    with world_readable_tmp("ioweather-perm-") as base:
        (base / "locked").mkdir(mode=0o755)  # root-owned: others may enter, not write
        msg = as_nobody(attempt)
    assert msg == f"cannot create probe directory {base}/locked/p: permission denied", msg
