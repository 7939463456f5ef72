"""Issue 32 items 7, 9, 11 and 12 for scheduler imports, as real `ioweather import` processes.

Before: an empty NNodes with `nid[0-99999999]` expanded the list (5.3 GB in 60 s), `a[0-9999]b[0-9999]`
7.3 GB; NNodes 99999999999999999999 and End 9999-12-31 ended in `OverflowError`; a 10 MB user name was
stored whole; a FIFO given as FILE blocked the import forever.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli as run_process
from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)

HEADER = "JobID|Cluster|User|Account|JobName|Partition|Start|End|Elapsed|NNodes|NCPUS|NodeList|State|ExitCode"
#: A bound no expansion of these lists fits in (10^8 names are several GB) but the import does.
AS_LIMIT = 2 << 30


def _line(jobid: str, **f) -> str:
    v = {"cluster": "c", "user": "u", "account": "a", "name": "n", "partition": "p", "start": "2026-11-20T10:00:00",
         "end": "2026-11-20T11:00:00", "elapsed": "01:00:00", "nnodes": "2", "ncpus": "64", "nodelist": "nid[01-02]",
         "state": "COMPLETED", "exit": "0:0", **f}
    return "|".join([jobid, v["cluster"], v["user"], v["account"], v["name"], v["partition"], v["start"], v["end"],
                     v["elapsed"], v["nnodes"], v["ncpus"], v["nodelist"], v["state"], v["exit"]])


def _stored(home: Path) -> dict[str, dict]:
    con = sqlite3.connect(home / "ioweather.sqlite")
    con.row_factory = sqlite3.Row
    try:
        return {r["jobid"]: dict(r) for r in con.execute("SELECT * FROM sched_jobs")}
    finally:
        con.close()


def _bounded_import(home: Path, path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """`ioweather import slurm PATH --json` with its address space limited to AS_LIMIT."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    env = {**os.environ, "IOWEATHER_HOME": str(home), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("IOWEATHER_DB", None)
    return subprocess.run([sys.executable, "-m", "ioweather", "import", "slurm", str(path), "--timezone", "UTC",
                           "--json"], capture_output=True, text=True, env=env, timeout=timeout, preexec_fn=limit)


def test_huge_node_ranges_are_counted_not_expanded(tmp_path, home):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join([HEADER, _line("1", nnodes="", nodelist="nid[0-99999999]"),
                            _line("2", nnodes="", nodelist="a[0-9999]b[0-9999]"),
                            _line("3", nnodes="", nodelist="a[0-99999]b[0-99999]c[0-99999]"),
                            _line("4")]) + "\n")
    p = _bounded_import(home, f)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "MemoryError" not in p.stderr
    jobs = _stored(home)
    assert jobs["1"]["nnodes"] == 10**8 and jobs["2"]["nnodes"] == 10**8 and jobs["4"]["nnodes"] == 2
    assert jobs["1"]["nodelist"] == "nid[0-99999999]"  # stored as sacct gave it
    assert "3" not in jobs  # 10^15 nodes: no NNodes column holds that; said as a bad line
    out = json.loads(p.stdout)
    assert any("1 bad lines skipped" in n and "1,000,000,000,000,000 nodes" in n for n in out["notes"]), out["notes"]


def test_pytokio_json_node_list_text_is_capped_and_said(tmp_path, home):
    f = tmp_path / "cache.slurm"
    f.write_text(json.dumps({"7": {"jobidraw": "7", "start": "2026-11-20T10:00:00", "end": "2026-11-20T11:00:00",
                                   "nodelist": "nid[0-99999999]"},
                             "8": {"jobidraw": "8", "start": "2026-11-20T10:00:00", "end": "2026-11-20T11:00:00",
                                   "nodelist": "nid[3-4,1]"}}))
    p = _bounded_import(home, f)
    assert p.returncode == 0, p.stderr
    jobs = _stored(home)
    assert (jobs["7"]["nnodes"], jobs["7"]["nodelist"]) == (10**8, "nid[0-99999999]")
    assert (jobs["8"]["nnodes"], jobs["8"]["nodelist"]) == (3, "nid[1,3-4]")  # small lists still compacted
    notes = json.loads(p.stdout)["notes"]
    assert any("values capped" in n and "100,000,000 nodes" in n and "not expanded" in n for n in notes), notes


def test_expand_and_count_agree_with_slurm_order():
    from ioweather.sources.scheduler import NodeListTooLong, count_nodes, expand_nodelist

    text = "nid[00001-00003,00010],login1,a[1-2]b[7,9]c"
    names = expand_nodelist(text)
    assert names == ["nid00001", "nid00002", "nid00003", "nid00010", "login1", "a1b7c", "a1b9c", "a2b7c", "a2b9c"]
    assert count_nodes(text) == len(names)
    with pytest.raises(NodeListTooLong):
        expand_nodelist("a[0-9999]b[0-9999]")
    assert count_nodes("a[" + ",".join(["1"] * 5000) + "]" * 1) == 5000


@pytest.mark.parametrize("field, value, reason", [
    ("nnodes", "99999999999999999999", "out of range"),
    ("ncpus", "1e400", "not a number"),
    ("end", "9999-12-31T23:59:59", "not between 1970 and 2262"),
    ("start", "0001-01-01T00:00:00", "not between 1970 and 2262"),
])
def test_values_beyond_the_columns_are_bad_lines(tmp_path, home, field, value, reason):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join([HEADER, _line("1", **{field: value}), _line("2")]) + "\n")
    p = run_cli("import", "slurm", str(f), "--timezone", "UTC", "--json", home=home)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert list(_stored(home)) == ["2"]
    notes = json.loads(p.stdout)["notes"]
    assert any("1 bad lines skipped (first: line 2:" in n and reason in n for n in notes), notes


def test_a_10_mb_user_name_is_capped_and_said(tmp_path, home):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join([HEADER, _line("1", user="x" * 10_000_000, name="j" * 5000), _line("2")]) + "\n")
    p = run_cli("import", "slurm", str(f), "--timezone", "UTC", "--json", home=home)
    assert p.returncode == 0, p.stderr
    jobs = _stored(home)
    assert jobs["1"]["user"] == "x" * 256 and jobs["1"]["name"] == "j" * 1024 and jobs["2"]["user"] == "u"
    notes = json.loads(p.stdout)["notes"]
    assert any("2 values capped (first: line 2: user of 10,000,000 characters cut to 256)" in n for n in notes), notes
    assert len(p.stdout) < 10_000  # the notes do not repeat the value


def test_a_300_character_job_id_is_refused(tmp_path, home):
    f = tmp_path / "sacct.txt"
    f.write_text("\n".join([HEADER, _line("9" * 300), _line("2")]) + "\n")
    p = run_cli("import", "slurm", str(f), "--timezone", "UTC", "--json", home=home)
    assert p.returncode == 0, p.stderr
    assert list(_stored(home)) == ["2"]
    assert any("job id of 300 characters" in n for n in json.loads(p.stdout)["notes"])


def test_deeply_nested_pytokio_json_is_one_line(tmp_path, home):
    f = tmp_path / "deep.slurm"
    f.write_text('{"1": ' + "[" * 100_000 + "]" * 100_000 + "}")
    p = run_cli("import", "slurm", str(f), "--timezone", "UTC", home=home)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "nested too deeply" in p.stderr, p.stderr


@pytest.mark.parametrize("kind", ["slurm", "nersc-jobsdb"])
def test_a_fifo_or_a_kernel_file_is_refused_at_once(tmp_path, home, kind):
    fifo = tmp_path / "jobs.fifo"
    os.mkfifo(fifo)
    extra = ["--timezone", "UTC"] if kind == "slurm" else []
    # a FIFO nobody writes would hang a reader that opened it: a process, so the timeout can end it
    p = run_process("import", kind, str(fifo), *extra, home=home, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "FIFO" in p.stderr, p.stderr
    p = run_process("import", kind, "/proc/kmsg", *extra, home=home, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "kernel interface on /proc" in p.stderr, p.stderr
