"""Issue 32 items 11 and 12 for telemetry and the store, as real processes on real files and a real
full disk (tmpfs).

Before: a CSV row with `interval_s=1e-320` was imported and then `workload`, `/api/workload` and
`/report` failed for good (OverflowError); `/servers?until=<first sample>` answered 500 ("cannot
reshape array of size 0"); `report --fs X` over data older than 7 days said "--since must be before
--until" when neither was given; a store on a full disk was "damaged (disk I/O error)" and `jobs
ingest` on a full disk ended in a pyarrow OSError traceback.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import TESTDATA, run_cli

T0 = datetime(2026, 10, 1, tzinfo=timezone.utc)  # well over 7 days before any run of this test


def _csv(path: Path, minutes: int = 180, extra: str = "") -> Path:
    rows = ["time,target,metric,value,interval_s"]
    for i in range(minutes):
        t = (T0 + timedelta(minutes=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows += [f"{t},ost{i % 3},read_bytes,{1000 + i},60", f"{t},ost{i % 3},write_bytes,{500 + i},60"]
    path.write_text("\n".join(rows) + "\n" + extra)
    return path


def _one_line(p, *fragments) -> None:
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.strip().count("\n") == 0 and "Traceback" not in p.stderr, p.stderr
    for f in fragments:
        assert f in p.stderr, (f, p.stderr)


@pytest.fixture
def telemetry_home(tmp_path) -> Path:
    home = tmp_path / "home"
    tiny = (T0 + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    src = _csv(tmp_path / "t.csv", extra=f"{tiny},ost0,read_bytes,5,1e-320\n")
    p = run_cli("import", "csv", str(src), "--fs", "x", "--json", home=home)
    assert p.returncode == 0, p.stderr
    [source] = json.loads(p.stdout)["sources"]
    assert any(n.startswith("1 rows with an impossible interval") for n in source["notes"]), source["notes"]
    return home


def test_a_subnormal_interval_is_missing_and_workload_works(telemetry_home):
    p = run_cli("workload", "--fs", "x", "--json", home=telemetry_home)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["sample_interval_s"] == 60


def test_report_over_old_data_needs_no_window(telemetry_home):
    p = run_cli("report", "--fs", "x", "--json", home=telemetry_home)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    end = datetime.fromisoformat(doc["end"].replace("Z", "+00:00"))
    assert T0 < end <= T0 + timedelta(hours=4)  # the data's end, not now


def test_servers_until_the_first_sample_is_not_a_500(telemetry_home):
    from web_server import Server

    from ioweather.config import Settings
    from ioweather.web.app import create_app

    with Server(create_app(Settings.resolve(telemetry_home), warm=False)) as s:
        first = T0.strftime("%Y-%m-%dT%H:%M:%SZ")
        status, _, body = s.get(f"/api/servers?fs=x&until={first}")
        assert status == 200, body[:300]
        assert json.loads(body)["targets"] == []
        status, _, body = s.get("/api/workload?fs=x")
        assert status == 200, body[:300]


# -- a real full disk --------------------------------------------------------------------------

def _fill(d: Path) -> None:
    """Write zeros into `d` until its file system has no free block (unbuffered: no write is left
    for a close to fail on)."""
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


def _sacct(path: Path, n: int) -> Path:
    head = "JobID|Cluster|User|Account|JobName|Partition|Start|End|Elapsed|NNodes|NCPUS|NodeList|State|ExitCode"
    path.write_text("\n".join([head] + [f"{i}|c|u{i}|a|n{i}|p|2026-11-20T10:00:00|2026-11-20T11:00:00|01:00:00|2|64|"
                                        f"nid[01-02]|COMPLETED|0:0" for i in range(1, n + 1)]) + "\n")
    return path


def test_a_full_disk_is_said_as_full_never_damaged(tmp_path, tmpfs):
    disk = tmpfs("disk", "size=3m")
    home = disk / "home"
    run_cli("import", "slurm", str(_sacct(tmp_path / "small.txt", 10)), "--timezone", "UTC", home=home, check=True)
    _fill(disk)
    p = run_cli("import", "slurm", str(_sacct(tmp_path / "big.txt", 20000)), "--timezone", "UTC", home=home)
    _one_line(p, "the disk is full", "not damaged")
    # the shared-memory index SQLite rebuilds at the next open (gone after a reboot of a tmpfs):
    # creating it on the full disk is SQLite's "disk I/O error", which was reported as damage
    Path(f"{home}/ioweather.sqlite-shm").unlink(missing_ok=True)
    for args in (["bench", "summary"], ["import", "slurm", str(tmp_path / "small.txt"), "--timezone", "UTC"]):
        p = run_cli(*args, home=home)
        assert p.returncode != 0 and "it is damaged" not in p.stderr and "store check" not in p.stderr, p.stderr
        assert "the disk is full" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_jobs_ingest_on_a_full_disk_is_one_line(tmp_path, tmpfs):
    logs = sorted((TESTDATA / "darshan").glob("*.darshan"))
    if not logs:
        pytest.skip("no shared Darshan logs")
    d = tmp_path / "logs"
    d.mkdir()
    shutil.copy(logs[0], d / logs[0].name)
    disk = tmpfs("disk", "size=3m")
    home = disk / "home"
    run_cli("jobs", "ingest", str(d), "--workers", "1", home=home, timeout=300, check=True)  # the store is made
    for log in logs[1:]:
        shutil.copy(log, d / log.name)
    _fill(disk)
    p = run_cli("jobs", "ingest", str(d), "--workers", "1", home=home, timeout=300)
    assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
    assert "disk full" in p.stderr or "the disk is full" in p.stderr, p.stderr
    assert not [n for n in os.listdir(home / "parquet" / "jobs") if n.endswith(".tmp")]
