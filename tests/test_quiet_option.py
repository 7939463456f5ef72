"""Issue 20, item 4: `-q` on `jobs ingest`, every `import` sub-command and `serve`: silence on success,
problems still on stderr, --json still printed, and nothing stored differently."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request

import pytest

from ioweather.config import Settings
from ioweather.sources.telemetry.importers import kinds
from ioweather.store import telemetry_layout as layout

CSV = "time,target,metric,value\n" + "".join(f"{t},sda,read_bytes,{t * 3}\n" for t in range(0, 50, 5))


def _count(home, table: str) -> int:
    con = sqlite3.connect(home / "ioweather.sqlite")
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("kind", [*kinds(), "slurm", "nersc-jobsdb", "job-features"])
def test_every_import_subcommand_takes_q(cli, kind):
    out = cli("import", kind, "--help", check=True).stdout
    assert re.search(r"^\s+-q, --quiet\s", out, re.M), out


def test_import_csv_quiet_prints_nothing_and_stores_the_same(cli, home, tmp_path):
    src = tmp_path / "t.csv"
    src.write_text(CSV)
    loud = cli("import", "csv", str(src), "--fs", "loud", home=home, check=True)
    assert "imported into file system" in loud.stdout
    quiet = cli("import", "csv", str(src), "--fs", "quiet", "-q", home=home, check=True)
    assert quiet.stdout == "" and quiet.stderr == ""
    for fs in ("loud", "quiet"):
        assert len(layout.read_frame(Settings(home=home), fs)) == 10
    again = json.loads(cli("import", "csv", str(src), "--fs", "quiet", "-q", "--json", home=home, check=True).stdout)
    assert again["rows"] == 10


def test_import_quiet_still_reports_a_failure(cli, home, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,target,metric,value\nyesterday,a,read_bytes,1\n")
    p = cli("import", "csv", str(bad), "--fs", "x", "-q", home=home)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1 and "bad.csv" in p.stderr and "Traceback" not in p.stderr


def test_import_slurm_quiet(cli, home, testdata):
    path = testdata / "pytokio" / "sample.slurm"
    ref = json.loads(cli("import", "slurm", str(path), "--timezone", "America/Los_Angeles", "--json",
                         home=home, check=True).stdout)
    quiet_home = home.parent / "quiet"
    p = cli("import", "slurm", str(path), "--timezone", "America/Los_Angeles", "-q", home=quiet_home, check=True)
    # notes about the data (what was skipped) are not progress: -q keeps them
    assert p.stdout == "" and p.stderr.splitlines() == [f"import: {n}" for n in ref["notes"]]
    assert _count(quiet_home, "sched_jobs") == _count(home, "sched_jobs") == ref["jobs"] > 0


def test_jobs_ingest_quiet(cli, home, testdata):
    logs = sorted((testdata / "darshan").glob("*.darshan"))[:3]
    assert logs
    p = cli("jobs", "ingest", *map(str, logs), "--workers", "1", "-q", home=home, check=True)
    assert p.stdout == "", p.stdout
    ok = _count(home, "darshan_jobs")
    assert ok + _count(home, "darshan_failed_logs") == len(logs)
    # a log that fails still says so with -q (the hint line), and --json still prints its document
    broken = home.parent / "broken.darshan"
    broken.write_bytes(b"not a darshan log")
    p = cli("jobs", "ingest", str(broken), "-q", home=home, check=True)
    assert p.stdout == "" and "ioweather jobs failed" in p.stderr
    doc = json.loads(cli("jobs", "ingest", *map(str, logs), "-q", "--json", home=home, check=True).stdout)
    assert doc["skipped"] == len(logs)


def _serve_one_request(home, *flags: str) -> str:
    """Start a real `serve`, GET /metrics once, stop it with Ctrl-C; its whole log."""
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", "0", *flags], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline()
        url = re.search(r"dashboard at (\S+)", first).group(1)
        # no wait needed: uvicorn logs the access line at the response's start, before the body read here
        urllib.request.urlopen(url + "metrics", timeout=30).read()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    return first + out + err


def test_serve_quiet_has_no_access_log(home):
    assert '"GET /metrics HTTP/1.1" 200' in _serve_one_request(home)
    log = _serve_one_request(home, "-q")
    assert "GET /metrics" not in log and "INFO" not in log, log
