"""Several probe targets in one process (issue 17 item 6), with real processes: each directory its own
target (run) in the store, a hung target (a real open(2) blocked on a FIFO) never delaying the others,
whose sample counts are exact (counted in the store by SQL), and a kill -9 mid-run losing nothing that
the process had said was stored."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ioweather.sources.probe import init_probe_dir
from waiting import wait_until
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

MiB = 1 << 20
HERE = Path(__file__).resolve().parent
STORED = re.compile(r"probe: (\S+): stored (\d+) samples")
STOPPED = re.compile(r"run (\d+): stopped after (\d+) periods, (\d+) samples stored")


def _dirs(root: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        d = root / f"fs{i}"
        init_probe_dir(d, MiB, 4, block=64 * 1024)
        out.append(d)
    return out


def _start(home: Path, dirs: list[Path], *args: str, hang: tuple[Path, Path] | None = None) -> subprocess.Popen:
    env = {**os.environ, "IOWEATHER_HOME": str(home), "COLUMNS": "250"}  # one log line per line
    env.pop("IOWEATHER_DB", None)
    head = [sys.executable, str(HERE / "many_probes.py"), str(hang[0]), str(hang[1])] if hang else \
        [sys.executable, "-m", "ioweather"]
    labels = [a for i, _ in enumerate(dirs) for a in ("--target", f"t{i}")]
    return subprocess.Popen([*head, "probe", "run", *map(str, dirs), *labels, "--block", "64k", *args],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _per_run(db: Path) -> dict[str, dict]:
    """Per target, straight from SQLite: rows, timeouts, errors, and the largest gap between two
    consecutive md_create starts (seconds)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = {t: {"rows": n, "timeouts": to, "errors": er} for t, n, to, er in con.execute(
            "SELECT r.target, count(*), sum(s.status = 'timeout'), sum(s.status = 'error') "
            "FROM probe_samples s JOIN probe_runs r ON r.id = s.run_id GROUP BY r.target")}
        for t, gap in con.execute(
                "SELECT target, max(d) FROM (SELECT r.target, s.start_ns - lag(s.start_ns) OVER "
                "(PARTITION BY s.run_id ORDER BY s.start_ns) AS d FROM probe_samples s JOIN probe_runs r "
                "ON r.id = s.run_id WHERE s.op = 'md_create') GROUP BY target"):
            out[t]["max_gap_s"] = (gap or 0) / 1e9
        out["_integrity"] = con.execute("PRAGMA integrity_check").fetchone()[0]
        return out
    finally:
        con.close()


def test_a_hung_target_does_not_delay_the_others(tmp_path):
    home = tmp_path / "home"
    dirs = _dirs(tmp_path, 4)
    fifo = tmp_path / "stuck"
    os.mkfifo(fifo, 0o600)
    interval, duration, periods = 0.5, 6.0, 12
    proc = _start(home, dirs, "--interval", f"{interval}s", "--duration", f"{duration}s", "--timeout", "3s",
                  hang=(fifo, dirs[2]))
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, err
    said = {int(m[1]): (int(m[2]), int(m[3])) for m in STOPPED.finditer(err)}
    assert len(said) == 4, err
    got = _per_run(home / "ioweather.sqlite")
    assert got.pop("_integrity") == "ok"
    for t in ("t0", "t1", "t3"):  # every period, all six operations, none late: exact counts
        assert got[t] == {"rows": 6 * periods, "timeouts": 0, "errors": 0, "max_gap_s": pytest.approx(interval, abs=0.25)}, \
            (t, got, err)
    # The hung one: four operations of its first period, then md_read's deadline (3 s), then nothing
    # new while the call stays stuck in the kernel; said, and stored as one timeout sample.
    assert got["t2"]["rows"] == 5 and got["t2"]["timeouts"] == 1, got
    assert "t2: md_read did not return within 3 s" in err
    # What each run said it stored is what the store holds.
    assert sorted(s for _, s in said.values()) == sorted(v["rows"] for v in got.values())


def _read_lines(stream, out: list) -> None:
    for line in stream:
        out.append((time.monotonic(), line))


def test_kill_9_mid_run_loses_nothing_committed(tmp_path):
    """Each 'stored N samples' line is said after its transaction committed: after kill -9 the store
    holds at least what was said, per target, intact; a restart probes the same directories at once
    (the kernel dropped the locks)."""
    home = tmp_path / "home"
    dirs = _dirs(tmp_path, 3)
    proc = _start(home, dirs, "--interval", "0.2s")
    lines: list = []
    reader = threading.Thread(target=_read_lines, args=(proc.stderr, lines), daemon=True)
    reader.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a flush of every target said (the next comes 5 s later)
        said = [STORED.search(line) for _, line in lines]
        counts = {t: sum(1 for m in said if m and m[1] == t) for t in ("t0", "t1", "t2")}
        if min(counts.values()) >= 1:
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail(f"no flush of every target within 60 s: {lines}")
    time.sleep(2.3)  # mid-way between two flushes
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    reader.join(timeout=10)
    committed: dict[str, int] = {}
    for _, line in lines:
        m = STORED.search(line)
        if m:
            committed[m[1]] = committed.get(m[1], 0) + int(m[2])
    got = _per_run(home / "ioweather.sqlite")
    assert got.pop("_integrity") == "ok"
    for t in ("t0", "t1", "t2"):
        # all that was said is there; what was not said yet was either stored or lost whole (a transaction)
        assert got[t]["rows"] >= committed[t] and got[t]["rows"] % 6 == 0, (t, got, committed)
    before = {t: v["rows"] for t, v in got.items()}
    again = _start(home, dirs, "--interval", "0.2s", "--duration", "1s", "-q")
    _, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    con = sqlite3.connect(f"file:{home / 'ioweather.sqlite'}?mode=ro", uri=True)
    try:
        old = dict(con.execute("SELECT r.target, count(*) FROM probe_samples s JOIN probe_runs r ON r.id = s.run_id "
                               "WHERE r.id <= 3 GROUP BY r.target"))
        runs = con.execute("SELECT count(*) FROM probe_runs").fetchone()[0]
    finally:
        con.close()
    assert old == before and runs == 6


@pytest.mark.parametrize("args, message", [
    (["{d0}", "{d1}", "--target", "a"], "1 --target labels for 2 directories"),
    (["{d0}", "{d0}", "--target", "a", "--target", "b"], "is given twice"),
    (["{d0}", "{d1}"], "would both be target"),        # one file system, the default HOST:MOUNTPOINT label
    (["{d0}", "{d1}", "--target", "a", "--target", "a"], "would both be target 'a'"),
])
def test_bad_target_lists_are_one_line(tmp_path, cli, args, message):
    home = tmp_path / "home"
    d0, d1 = _dirs(tmp_path, 2)
    r = cli("probe", "run", *[a.format(d0=d0, d1=d1) for a in args], "--duration", "1s", home=home)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (home / "ioweather.sqlite").exists() or not _per_run(home / "ioweather.sqlite").keys() - {"_integrity"}


def test_a_directory_another_probe_holds_refuses_the_whole_start(tmp_path, cli):
    home = tmp_path / "home"
    d0, d1 = _dirs(tmp_path, 2)
    first = _start(home, [d1], "--interval", "0.2s", "--duration", "20s", "-q")
    try:
        lock = d1 / "probe.lock"  # the holder writes its pid there once it has the lock
        wait_until(lambda: lock.exists() and lock.read_text().split()[:1] == [str(first.pid)], 60,
                   f"the first probe to lock {d1}", proc=first)
        r = cli("probe", "run", str(d0), str(d1), "--target", "a", "--target", "b", "--duration", "1s", home=home)
        assert r.returncode == 2 and "is already being probed" in r.stderr, r.stderr
        # d0 was let go again: a probe of it alone starts
        r = cli("probe", "run", str(d0), "--target", "a", "--duration", "0.5s", "-q", home=home)
        assert r.returncode == 0, r.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=30)


def test_watch_probes_several_directories_one_hung(tmp_path):
    """`watch` with three directories, the second hung: the dashboard answers, the other two targets
    keep their grid, and a stop stores everything (real process, real signal, counts by SQL)."""
    from test_watch import get_json, stop, url_from

    home = tmp_path / "home"
    dirs = _dirs(tmp_path, 3)
    fifo = tmp_path / "stuck"
    os.mkfifo(fifo, 0o600)
    env = {**os.environ, "IOWEATHER_HOME": str(home), "COLUMNS": "250"}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, str(HERE / "many_probes.py"), str(fifo), str(dirs[1]), "watch",
                             *map(str, dirs), "--target", "w0", "--target", "w1", "--target", "w2", "--port", "0",
                             "--interval", "0.25s", "--timeout", "2s", "--block", "64k", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = url_from(proc)

    def stored(*targets) -> int:
        try:
            return min(_per_run(home / "ioweather.sqlite").get(t, {}).get("rows", 0) for t in targets)
        except sqlite3.OperationalError:  # no database or no table yet
            return 0

    try:
        wait_until(lambda: stored("w0", "w2") >= 6 * 12, 60, "12 periods of w0 and w2 stored", every=0.5, proc=proc)
        assert get_json(url + "api/status") is not None
    finally:  # a failed wait must not leave watch running
        code, err = stop(proc, signal.SIGTERM)
    assert code == 0, err
    got = _per_run(home / "ioweather.sqlite")
    assert got.pop("_integrity") == "ok"
    for t in ("w0", "w2"):
        assert got[t]["rows"] >= 6 * 12 and got[t]["rows"] % 6 == 0 and got[t]["timeouts"] == 0, (t, got, err)
        assert got[t]["max_gap_s"] < 0.25 + 0.5, (t, got)
    assert got["w1"]["timeouts"] == 1 and got["w1"]["rows"] == 5, got
