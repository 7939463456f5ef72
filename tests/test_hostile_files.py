"""FIFOs, devices and symlinks where ioweather expects a log or writes a report.

Before: `mkfifo logs/fifo.darshan` or `ln -s /dev/zero logs/z.darshan` made `jobs ingest logs`
never return (the content hash read without checking the file type); `ln -s /etc/shadow
logs/x.darshan` made a root ingest read it and `jobs failed` show its size; `--html` through a
symlink overwrote the link's target.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import DATA, TESTDATA

LOG = TESTDATA / "darshan" / "mpi-io-test-x86_64-3.0.0.darshan"


@pytest.fixture
def logs(tmp_path) -> Path:
    if not LOG.exists():
        pytest.skip(f"shared test data not found at {LOG}")
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copy(LOG, d / "real.darshan")
    os.mkfifo(d / "fifo.darshan")
    os.symlink("/dev/zero", d / "zero.darshan")
    secret = tmp_path / "secret"
    secret.write_text("root:$6$not-for-you:19000:0:99999:7:::\n" * 10)
    secret.chmod(0o600)
    os.symlink(secret, d / "shadow.darshan")
    os.mkdir(d / "sub")
    os.symlink(tmp_path / "elsewhere", d / "sub" / "loop")  # a directory link: not walked either
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(LOG, tmp_path / "elsewhere" / "outside.darshan")
    return d


def test_ingest_never_hangs_and_never_follows_links(tmp_path, logs, cli):
    home = tmp_path / "home"
    r = cli("jobs", "ingest", str(logs), "--json", "--workers", "1", home=home, timeout=120)
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)
    assert counts["ingested"] == 1 and counts["failed"] == 1, counts  # the real log; the FIFO is a failure
    assert counts["symlinks_skipped"] == 3, counts  # zero, shadow, sub/loop
    failed = json.loads(cli("jobs", "failed", "--json", home=home, check=True).stdout)
    assert [Path(f["path"]).name for f in failed] == ["fifo.darshan"]
    assert "FIFO" in failed[0]["reason"], failed
    text = cli("jobs", "failed", "--json", home=home).stdout + cli("jobs", "summary", "--json", home=home).stdout
    assert "shadow" not in text and "secret" not in text and "outside" not in text


def test_ingest_follows_links_when_asked(tmp_path, logs, cli):
    home = tmp_path / "home"
    (logs / "zero.darshan").unlink()
    r = cli("jobs", "ingest", str(logs), "--json", "--workers", "1", "--follow-symlinks", home=home, timeout=120)
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)
    # the secret is read (the admin asked) and fails as not a Darshan log; sub/loop/outside.darshan is
    # refused: a followed link must not leave the scanned tree (issue 32 item 4)
    assert counts["symlinks_skipped"] == 0 and counts["failed"] == 3, counts
    failed = json.loads(cli("jobs", "failed", "--json", home=home, check=True).stdout)
    assert any("outside the scanned directory" in f["reason"] for f in failed), failed


@pytest.mark.parametrize("name", ["fifo.darshan", "zero.darshan"])
def test_job_on_a_fifo_or_device_is_one_line(logs, cli, name):
    r = cli("job", str(logs / name), timeout=60)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert ("FIFO" in r.stderr) if name.startswith("fifo") else ("character device" in r.stderr), r.stderr


def test_html_output_never_follows_a_symlink(tmp_path, logs, cli):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "report.html"
    os.symlink(victim, out)
    r = cli("job", str(logs / "real.darshan"), "--html", str(out), timeout=120)
    assert r.returncode == 2 and "symlink" in r.stderr, r.stderr
    assert victim.read_text() == "precious" and out.is_symlink()
    out.unlink()
    r = cli("job", str(logs / "real.darshan"), "--html", str(out), timeout=120)
    assert r.returncode == 0 and out.read_text().startswith("<!") and not out.is_symlink(), r.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
