"""Issue 32 items 6, 11 and 12 for benchmarks: fio's JSON with values fio never writes, two jobs of one
name, deep nesting, and `bench run --dir A:B`.

Before: io_bytes 1e300 and job_start 1e30 ended in `OverflowError` (SQLite INTEGER), deep nesting in
`RecursionError`, two jobs of one name (numjobs=2 without group_reporting) in "UNIQUE constraint
failed", a zero runtime or negative io_bytes was "imported 1 runs" that `bench summary` never showed,
and fio split `--directory=/x/A:B/...` at the colon, writing outside the work directory.
Every document here starts from the real fio's output.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory) -> dict:
    """The real fio's JSON of `--numjobs=2` without group_reporting: two jobs named "job"."""
    d = tmp_path_factory.mktemp("fio")
    out = d / "two.json"
    subprocess.run(["fio", "--name=job", "--numjobs=2", f"--directory={d}", "--rw=write", "--bs=64k", "--size=256k",
                    "--output-format=json", f"--output={out}"], check=True, timeout=120, capture_output=True)
    return json.loads(out.read_text())


def _rows(home: Path, sql: str) -> list[tuple]:
    db = home / "ioweather.sqlite"
    if not db.exists():
        return []
    with sqlite3.connect(db) as c:
        try:
            return c.execute(sql).fetchall()
        except sqlite3.OperationalError:  # no bench tables: nothing was ever stored
            return []


def test_two_jobs_of_one_name_are_two_runs(tmp_path, home, two_jobs):
    assert [j["jobname"] for j in two_jobs["jobs"]] == ["job", "job"]
    f = tmp_path / "two.json"
    f.write_text(json.dumps(two_jobs))
    p = run_cli("bench", "import", str(f), "--json", home=home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["runs"] == 2
    assert len(_rows(home, "select run_id from bench_runs")) == 2
    [summary] = json.loads(run_cli("bench", "summary", "--json", home=home, check=True).stdout)
    assert summary["runs"] == 2
    again = run_cli("bench", "import", str(f), home=home)  # the same ids again: replaced, not doubled
    assert again.returncode == 0 and len(_rows(home, "select run_id from bench_runs")) == 2


def _one_job(doc: dict, **edits) -> dict:
    d = copy.deepcopy(doc)
    d["jobs"] = d["jobs"][:1]
    job = d["jobs"][0]
    for key, value in edits.items():
        if key in ("io_bytes", "runtime"):
            job["write"][key] = value
        elif key == "timestamp_ms":
            d[key] = value
        else:
            job[key] = value
    return d


@pytest.mark.parametrize("edits, reason", [
    ({"io_bytes": 1e300}, "io_bytes 1e+300 is not a byte count"),
    ({"io_bytes": -4096}, "io_bytes -4096 is not a byte count"),
    ({"runtime": 0}, "runtime 0 ms"),
    ({"runtime": -3}, "runtime -3 ms"),
    ({"job_start": 1e30}, "job_start 1e+30 ms is not a time"),
    ({"job_start": -1e18}, "job_start -1e+18 ms is not a time"),
    ({"timestamp_ms": 1e30}, "timestamp 1e+30 ms is not a time"),
])
def test_values_fio_never_writes_are_refused_with_the_reason(tmp_path, home, two_jobs, edits, reason):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_one_job(two_jobs, **edits)))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_one_job(two_jobs)))
    p = run_cli("bench", "import", str(bad), str(good), "--json", home=home)
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1 and reason in p.stderr, p.stderr
    out = json.loads(p.stdout)
    assert out["runs"] == 1 and [f["path"] for f in out["failed"]] == [str(bad)]  # the batch went on
    [(nbytes, dur)] = _rows(home, "select bytes, duration_s from bench_results")
    assert nbytes == 256 * 1024 and dur > 0  # only the good file's run


@pytest.mark.parametrize("depth", [100_000])
def test_deeply_nested_json_is_one_line(tmp_path, home, depth):
    f = tmp_path / "deep.json"
    f.write_text('{"jobs": ' + "[" * depth + "]" * depth + "}")
    p = run_cli("bench", "import", str(f), home=home)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not fio's JSON output" in p.stderr, p.stderr


def test_bench_run_in_a_directory_with_a_colon_stays_inside(tmp_path, home):
    """fio splits --directory at ':': `/x/A:B/.ioweather-bench` was the two directories `/x/A` and
    `B/.ioweather-bench` (relative to fio's working directory)."""
    root = tmp_path / "A:B"
    root.mkdir()
    (tmp_path / "A").mkdir()  # where the unescaped first half points: must stay empty
    p = run_cli("bench", "run", "fpp-write", "--dir", str(root), "--size", "256KiB", "--tasks", "2", "--fs", "t",
                "--json", home=home, timeout=300)
    assert p.returncode == 0, p.stderr
    [run] = json.loads(p.stdout)["runs"]
    [write] = [r for r in run["results"] if r["direction"] == "write"]
    assert write["bytes"] == 2 * 256 * 1024
    assert os.listdir(tmp_path / "A") == []
    assert sorted(os.listdir(root)) == [".ioweather-bench.lock"]  # the work directory was used and removed
    leftovers = [str(p) for p in tmp_path.rglob("*") if p.is_file() and "home" not in p.parts
                 and p.name != ".ioweather-bench.lock"]
    assert leftovers == []


def test_a_backslash_before_a_colon_is_refused(tmp_path, home):
    root = tmp_path / "x\\:y"
    root.mkdir()
    p = run_cli("bench", "run", "fpp-write", "--dir", str(root), "--size", "256KiB", "--json", home=home)
    assert os.listdir(root) == []
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "ambiguous" in p.stderr, p.stderr
