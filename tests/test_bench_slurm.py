"""`ioweather bench submit` on the real one-node Slurm cluster of the tests (tests/slurm_cluster.py):
the batch job runs the motifs on the compute node and stores its runs when it ends."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3

import pytest

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")


def test_submit_runs_the_motifs_as_a_batch_job(slurm_cluster, tmp_path, home):
    d = tmp_path / "scratch"
    d.mkdir()
    p = run_cli("bench", "submit", "fpp-write", "metadata", "--dir", str(d), "--size", "256KiB", "--tasks", "1",
                "--md-files", "8", "--fs", "scratch", "--json", home=home, env=slurm_cluster.env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    states = slurm_cluster.wait_for_sacct([out["jobid"]], states={"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"},
                                          timeout=120)
    log = open(out["output"]).read() if os.path.exists(out["output"]) else "no output file"
    assert states[out["jobid"]] == "COMPLETED", log
    with sqlite3.connect(home / "ioweather.sqlite") as c:
        rows = c.execute("select motif, fs, hosts from bench_runs order by motif").fetchall()
    assert [(m, fs) for m, fs, _ in rows] == [("fpp-write", "scratch"), ("metadata", "scratch")]
    assert all(h == slurm_cluster.node for _, _, h in rows)  # SLURM_JOB_NODELIST of the batch job
    assert sorted(p.name for p in d.iterdir()) == [".ioweather-bench.lock"]


def test_submit_without_sbatch_is_one_line(tmp_path, home):
    d = tmp_path / "scratch"
    d.mkdir()
    p = run_cli("bench", "submit", "--dir", str(d), home=home, env={"PATH": "/nonexistent"})
    assert p.returncode == 2 and p.stderr.strip() == \
        "ioweather: error: sbatch is not on PATH: `bench submit` needs Slurm's client commands"
