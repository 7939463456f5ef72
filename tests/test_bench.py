"""Regression benchmarks: statistics against seed 004's Table 2, real fio runs on tiny sizes, bad input
(fio missing, failing, killed, non-JSON; interrupted runs; full and read-only file systems; two runs at
once; another fio version's JSON; tokio-abc rows with NaNs), summary/check and the umami join."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import run_cli as run_process
from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from ioweather.stats import bench as sb

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (scripts/install-system-deps.sh)")
TINY = ["--size", "256KiB", "--tasks", "2", "--md-files", "8"]


def db_count(home: Path, sql: str) -> int:
    with sqlite3.connect(home / "ioweather.sqlite") as c:
        return c.execute(sql).fetchone()[0]


def db_rows(home: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(home / "ioweather.sqlite") as c:
        return c.execute(sql).fetchall()


# ----------------------------------------------------------------------------- statistics

def test_table2_ratios_from_its_own_optimum_and_average_rows():
    # seed 004 Table 2: /scratch read, write; /scratch2 read, write
    optimum = [80, 55, 80, 55]
    average = [141, 118, 111, 91]
    paper_ratio = [1.76, 2.15, 1.39, 1.65]
    got = [round(sb.contention(a, o), 2) for a, o in zip(average, optimum)]
    assert got == paper_ratio


def test_table2_through_summarize():
    # runs whose min and mean are Table 2's rows: {optimum, 2*average - optimum} has that min and mean
    recs = []
    for fs, direction, o, a in [("scratch", "read", 80, 141), ("scratch", "write", 55, 118),
                                ("scratch2", "read", 80, 111), ("scratch2", "write", 55, 91)]:
        for i, d in enumerate([o, 2 * a - o]):
            recs.append({"motif": "ior", "direction": direction, "fs": fs, "start_ns": i, "duration_s": float(d),
                         "bw_bps": 100.0 / d})
    rows = {(r["fs"], r["direction"]): r for r in sb.summarize(pd.DataFrame(recs))}
    assert [round(rows[k]["contention"], 2) for k in [("scratch", "read"), ("scratch", "write"),
                                                      ("scratch2", "read"), ("scratch2", "write")]] == [1.76, 2.15, 1.39, 1.65]
    assert rows[("scratch", "read")]["optimum_s"] == 80 and rows[("scratch", "read")]["mean_s"] == 141


def test_summarize_against_direct_numpy():
    rng = np.random.default_rng(4)
    n = 300
    df = pd.DataFrame({"motif": rng.choice(["a", "b"], n), "direction": rng.choice(["read", "write"], n),
                       "fs": "x", "start_ns": rng.permutation(n), "duration_s": rng.gamma(3, 2, n) + 1})
    df["bw_bps"] = 1e9 / df["duration_s"]
    for r in sb.summarize(df, k=2, threshold=0.5):
        g = df[(df.motif == r["motif"]) & (df.direction == r["direction"])].sort_values("start_ns")
        assert r["runs"] == len(g)
        assert r["optimum_s"] == pytest.approx(g.duration_s.min())
        assert r["mean_s"] == pytest.approx(g.duration_s.mean())
        assert r["contention"] == pytest.approx(g.duration_s.mean() / g.duration_s.min())
        last = g.iloc[-1]
        assert r["last_fraction_of_peak"] == pytest.approx(last.bw_bps / g.bw_bps.max())
        assert r["last_standing"] == pytest.approx((g.bw_bps <= last.bw_bps).mean())
        tail = (g.bw_bps / g.bw_bps.max()).to_numpy()[-2:]
        assert r["regression"] == bool((tail < 0.5).all())


def test_regression_flag_and_states():
    assert sb.regression([1, 0.4, 0.3, 0.2], 3, 0.5)
    assert not sb.regression([1, 0.6, 0.3, 0.2], 3, 0.5)
    assert not sb.regression([0.1, 0.1], 3, 0.5)  # fewer than k runs: no trend yet
    assert sb.check_state([1, 0.2, 0.1, 0.2], 3, 0.5, 0.25) == "CRITICAL"
    assert sb.check_state([1, 0.4, 0.1, 0.2], 3, 0.5, 0.25) == "WARNING"
    assert sb.check_state([1, 0.4, 0.6, 0.2], 3, 0.5, 0.25) == "OK"
    h = sb.histogram([3, 1, 2, 2, 9])
    assert sum(h["counts"]) == 5 and h["optimum_s"] == 1 and len(h["edges_s"]) == 101


# ----------------------------------------------------------------------------- real fio runs

@needs_fio
def test_run_stores_runs_with_fio_json_and_leaves_nothing(tmp_path, home):
    d = tmp_path / "d"
    d.mkdir()
    p = run_cli("bench", "run", "fpp-write", "metadata", "--dir", str(d), *TINY, "--fs", "scratch", "--json", home=home)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert [r["motif"] for r in out["runs"]] == ["fpp-write", "metadata"]
    assert db_count(home, "select count(*) from bench_runs") == 2
    assert sorted(db_rows(home, "select direction from bench_results")) == [("create",), ("delete",), ("stat",), ("write",)]
    (nbytes, bw, dur), = db_rows(home, "select bytes, bw_bps, duration_s from bench_results where direction='write'")
    assert nbytes == 2 * 256 * 1024  # fio wrote exactly tasks x size
    [(files,)] = db_rows(home, "select bytes from bench_results where direction='create'")
    assert files == 2 * 8 * 4096  # fio's filecreate counts filesize per file created
    for (name, version) in db_rows(home, "select json_file, tool_version from bench_runs"):
        doc = json.loads((home / "parquet" / "bench" / name).read_text())
        assert doc["fio version"] == version
    assert sorted(os.listdir(d)) == [".ioweather-bench.lock"]  # work directory removed

    s = run_cli("bench", "summary", "--json", home=home)
    rows = json.loads(s.stdout)
    w = next(r for r in rows if r["direction"] == "write")
    assert {"motif", "direction", "fs", "runs", "optimum_s", "mean_s", "contention",
            "last_fraction_of_peak"} <= set(w)
    assert (w["motif"], w["fs"], w["runs"], w["optimum_s"], w["contention"]) == ("fpp-write", "scratch", 1, dur, 1.0)
    html = tmp_path / "t2.html"
    assert run_cli("bench", "summary", "--html", str(html), home=home).returncode == 0
    assert "<th class=\"row\">ratio</th>" in html.read_text()

    rid = out["runs"][0]["run_id"]
    u = run_cli("umami", f"bench:{rid}", "--json", home=home)
    assert u.returncode == 0, u.stderr
    doc = json.loads(u.stdout)
    assert doc["job"] == f"bench:{rid}" and doc["motif"].startswith("bench fpp-write") and doc["source"] == "bench"
    assert doc["verdict"].startswith("no data")  # no telemetry for "scratch"
    assert db_count(home, f"select count(*) from job_weather where job_key = 'bench:{rid}'") == 1


def _fake_fio(tmp_path: Path, body: str) -> dict:
    b = tmp_path / "bin"
    b.mkdir(exist_ok=True)
    f = b / "fio"
    f.write_text(f"#!/bin/sh\nif [ \"$1\" = --version ]; then echo fio-9.99; exit 0; fi\n{body}\n")
    f.chmod(0o755)
    return {"PATH": f"{b}:/usr/bin:/bin"}


@pytest.mark.parametrize("body, message", [
    ("echo 'fio: pid=1, err=28/file:io_u.c:1845, func=io_u error, error=No space left on device' >&2; exit 1",
     "fio failed (exit 1): fio: pid=1, err=28"),
    ("echo 'this is not json'", "is not fio's JSON output"),
    ("kill -9 $$", "fio was killed by signal SIGKILL"),
])
def test_fio_failing_killed_or_not_json_is_one_line_and_nothing_stored(tmp_path, home, body, message):
    d = tmp_path / "d"
    d.mkdir()
    p = run_cli("bench", "run", "fpp-write", "--dir", str(d), *TINY, home=home, env=_fake_fio(tmp_path, body))
    assert p.returncode == 2
    err = p.stderr.strip().splitlines()
    assert len(err) == 2 and err[0] == "running fpp-write ..." and message in err[1], p.stderr
    assert "Traceback" not in p.stderr
    assert not (home / "ioweather.sqlite").exists() or db_count(home, "select count(*) from bench_runs") == 0
    assert not (d / ".ioweather-bench").exists()


def test_fio_missing(tmp_path, home):
    d = tmp_path / "d"
    d.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run_cli("bench", "run", "--dir", str(d), home=home, env={"PATH": str(empty)})
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "fio is not installed" in p.stderr


@needs_fio
def test_runner_and_summary_load_neither_pandas_nor_pyarrow(tmp_path, home):
    """The runner runs on compute nodes beside the job it measures: pandas with pyarrow was most of its
    155 MiB. Its modules (service, store, fio source) and the summary must not import them."""
    d = tmp_path / "d"
    d.mkdir()
    code = f"""
import sys
from ioweather.config import Settings
from ioweather.services.bench import runs as svc
from ioweather.store import open_store
store = open_store(Settings.resolve({str(home)!r}))
out = svc.run(store, ["fpp-write", "metadata"], {str(d)!r}, size=262144, tasks=1, md_files=8)
rows = svc.summary(store)
print(len(out.runs), len(rows), sorted(m for m in ("pandas", "pyarrow", "scipy") if m in sys.modules))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["2", "4", "[]"]  # 2 runs; write, create, stat, delete; nothing heavy loaded


@needs_fio
def test_two_runs_at_once_refused(tmp_path, home):
    d = tmp_path / "d"
    d.mkdir()
    fd = os.open(d / ".ioweather-bench.lock", os.O_RDWR | os.O_CREAT)
    os.write(fd, b"4242\n")
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        # a lock is held per process: the refused run must be another one
        p = run_process("bench", "run", "fpp-write", "--dir", str(d), *TINY, home=home)
    finally:
        os.close(fd)
    assert p.returncode == 2 and "another ioweather bench run (pid 4242)" in p.stderr
    assert p.stderr.count("\n") == 1


def _start(args, home):
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    env.pop("IOWEATHER_DB", None)
    return subprocess.Popen([sys.executable, "-m", "ioweather", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _fio_pids(work: Path) -> list[int]:
    """Live processes whose command line names `work` (fio and any process it forked)."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and str(work) in (d / "cmdline").read_bytes().decode(errors="replace") \
                    and (d / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(int(d.name))
        except OSError:
            continue
    return out


def _wait_for_files(work: Path, timeout=30):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if work.is_dir() and any(work.iterdir()):
            return
        time.sleep(0.02)
    raise AssertionError("fio never started writing")


@needs_fio
def test_kill9_mid_run_stores_nothing_and_next_run_cleans(tmp_path, home):
    d = tmp_path / "d"
    d.mkdir()
    # slow enough to be caught in the act: 4 KiB random writes with a rate limit
    p = _start(["bench", "run", "rand4k-write", "--dir", str(d), "--size", "64MiB", "--tasks", "1"], home)
    work = d / ".ioweather-bench"
    _wait_for_files(work)
    fios = _fio_pids(work)
    assert fios, "fio is not running"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(30)
    # fio dies with its parent (PR_SET_PDEATHSIG), its jobs too (threads of it): nothing keeps writing
    deadline = time.monotonic() + 10
    while _fio_pids(work) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _fio_pids(work), "fio outlived a kill -9 of ioweather"
    assert work.is_dir() and any(work.iterdir())  # the leftover a crash leaves
    assert not (home / "ioweather.sqlite").exists() or db_count(home, "select count(*) from bench_runs") == 0
    leftover = sum(len(f) for _, _, f in os.walk(work))
    q = run_cli("bench", "run", "fpp-write", "--dir", str(d), *TINY, "--json", home=home)
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout)["leftovers_removed"] == leftover + 1  # its files and the directory
    assert not work.exists()
    assert db_count(home, "select count(*) from bench_runs") == 1


@needs_fio
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_interrupt_removes_files_and_stores_nothing(tmp_path, home, sig, code):
    d = tmp_path / "d"
    d.mkdir()
    p = _start(["bench", "run", "rand4k-write", "--dir", str(d), "--size", "64MiB", "--tasks", "1"], home)
    _wait_for_files(d / ".ioweather-bench")
    os.kill(p.pid, sig)
    _, err = p.communicate(timeout=30)
    assert p.returncode == code, err
    assert "Traceback" not in err and "interrupted" in err
    assert sorted(os.listdir(d)) == [".ioweather-bench.lock"]
    assert not (home / "ioweather.sqlite").exists() or db_count(home, "select count(*) from bench_runs") == 0


@needs_fio
def test_full_and_read_only_file_systems(tmpfs, home):
    full = tmpfs("full", "size=1m")
    (full / "filler").write_bytes(b"x" * 900_000)
    p = run_cli("bench", "run", "fpp-write", "--dir", str(full), "--size", "256KiB", "--tasks", "2", home=home)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "motif fpp-write needs 512.0 KiB" in p.stderr and "more than 50%" in p.stderr
    assert sorted(os.listdir(full)) == [".ioweather-bench.lock", "filler"]
    ro = tmpfs("ro", "ro,size=1m")
    p = run_cli("bench", "run", "--dir", str(ro), home=home)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "read-only file system" in p.stderr, p.stderr


# ----------------------------------------------------------------------------- imports

def _old_fio_json() -> dict:
    """A fio 2.x-style document (bw in KiB/s, io_kbytes, clat in µs) with fields no fio of ours writes."""
    side = {"io_kbytes": 2048, "bw": 1024, "iops": 256.0, "runtime": 2000, "total_ios": 512,
            "clat": {"min": 1, "max": 90, "percentile": {"50.000000": 12, "95.000000": 40, "99.000000": 80}},
            "a_future_field": {"nested": [1, 2]}}
    zero = {"io_kbytes": 0, "bw": 0, "iops": 0, "runtime": 0, "total_ios": 0}
    return {"fio version": "fio-2.2.10", "timestamp": 1500000000, "unknown_top": "x",
            "jobs": [{"jobname": "seqwrite", "groupid": 0, "error": 0, "read": zero, "write": side, "trim": zero,
                      "job options": {"rw": "write"}, "sync": {"new": 1}}]}


def test_import_fio_json_of_another_version(tmp_path, home):
    f = tmp_path / "old.json"
    f.write_text("fio: a note fio prints first\n" + json.dumps(_old_fio_json()))
    p = run_cli("bench", "import", str(f), "--fs", "lustre1", "--json", home=home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["runs"] == 1
    [(motif, fs, version, start, end)] = db_rows(home, "select motif, fs, tool_version, start_ns, end_ns from bench_runs")
    assert (motif, fs, version) == ("seqwrite", "lustre1", "fio-2.2.10")
    assert end == 1500000000 * 10**9 and start == end - 2 * 10**9
    [(d, nbytes, bw, dur, p50, p99)] = db_rows(home, "select direction, bytes, bw_bps, duration_s, lat_p50_s, lat_p99_s "
                                                     "from bench_results")
    assert (d, nbytes, bw, dur) == ("write", 2048 * 1024, 1024 * 1024.0, 2.0)
    assert p50 == pytest.approx(12e-6) and p99 == pytest.approx(80e-6)
    again = run_cli("bench", "import", str(f), "--fs", "lustre1", home=home)
    assert again.returncode == 0 and db_count(home, "select count(*) from bench_runs") == 1  # replaced, not doubled


@pytest.mark.parametrize("text, message", [("not json at all", "is not fio's JSON output"),
                                           ('{"fio version": "x"}', "is not fio's JSON output")])
def test_import_bad_fio_json(tmp_path, home, text, message):
    f = tmp_path / "bad.json"
    f.write_text(text)
    p = run_cli("bench", "import", str(f), home=home)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1


def test_import_tokio_abc_with_nans(testdata, tmp_path, home):
    src = testdata / "tokio-abc" / "edison-summaries_2017-02-14-2018-02-15.csv.gz"
    if not src.is_file():
        pytest.skip(f"{src} absent")
    df = pd.read_csv(src, low_memory=False).head(400)
    df.loc[df.index[:7], "darshan_agg_perf_by_slowest_posix"] = np.nan
    df.loc[df.index[7:12], "_datetime_start"] = np.nan
    small = tmp_path / "edison-summaries_nan.csv"
    df.to_csv(small, index=False)
    p = run_cli("bench", "import", str(small), "--json", home=home)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    # independent count: rows with a performance and a window, one run per (job, benchmark)
    ok = df["darshan_agg_perf_by_slowest_posix"].notna() & df["_datetime_start"].notna() & \
        df["_datetime_end"].notna() & (df["_datetime_end"] > df["_datetime_start"])
    assert out["runs"] == db_count(home, "select count(*) from bench_runs")
    assert out["skipped_rows"] == 400 - out["runs"]
    write = df["darshan_biggest_write_api_bytes"] > df["darshan_biggest_read_api_bytes"]
    keys = pd.DataFrame({"job": df["_jobid"], "app": df["darshan_app"].map(os.path.basename), "write": write})[ok]
    assert out["runs"] == len(keys.drop_duplicates()) and 0 < out["runs"] <= 400 - 12
    s = json.loads(run_cli("bench", "summary", "--json", home=home).stdout)
    assert sum(r["runs"] for r in s) == out["runs"]
    assert all(r["fs"] for r in s) and {r["direction"] for r in s} <= {"read", "write"}


# ----------------------------------------------------------------------------- check

def test_check_nagios_codes(tmp_path, home):
    from ioweather.config import Settings
    from ioweather.store import bench as bstore
    from ioweather.store import open_store

    store = open_store(Settings.resolve(home))

    def runs(motif, bws):
        return [{"run_id": f"{motif}-{i}", "motif": motif, "fs": "s", "source": "fio", "start_ns": i * 10**9,
                 "end_ns": i * 10**9 + 10**9, "params": {},
                 "results": [{"direction": "write", "duration_s": 100 / b, "bw_bps": float(b)}]}
                for i, b in enumerate(bws)]

    assert run_cli("bench", "check", home=home).returncode == 3
    bstore.put_runs(store, runs("ok", [100, 90, 95, 99]))
    p = run_cli("bench", "check", "--warn", "0.5", "--crit", "0.25", home=home)
    assert p.returncode == 0 and p.stdout.startswith("IOWEATHER BENCH OK") and "'ok/write/s'=0.990;0.5;0.25;0;1" in p.stdout
    bstore.put_runs(store, runs("slow", [100, 40, 30, 45]))
    p = run_cli("bench", "check", "--warn", "0.5", "--crit", "0.25", home=home)
    assert p.returncode == 1 and "slow/write/s last 3 runs below 0.5 of peak" in p.stdout
    bstore.put_runs(store, runs("broken", [100, 20, 10, 5]))
    p = run_cli("bench", "check", "--warn", "0.5", "--crit", "0.25", "--json", home=home)
    doc = json.loads(p.stdout)
    assert p.returncode == 2 and doc["status"] == "CRITICAL"
    assert {s["motif"]: s["state"] for s in doc["series"]} == {"ok": "OK", "slow": "WARNING", "broken": "CRITICAL"}
    bad = run_cli("bench", "check", "--warn", "0.2", "--crit", "0.5", home=home)
    assert bad.returncode == 2 and "need 0 < --crit < --warn" in bad.stderr
