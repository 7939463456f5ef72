"""Issue 38 item 4, the Jobs page's side: a job whose only stored weather is on a file system the one
resolver does not name for it (an earlier `umami --fs`) showed that weather's verdict in the Jobs list,
while its job page and `why` named another file system (or none). The list shows the verdict of the
resolver's file system, or none."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

JOB_LOG = "darshan/imbalanced-io.darshan"  # job 1452113755, on /lus/theta-fs0


def invoke(home, *args: str, code: int = 0):
    from click.testing import CliRunner

    from ioweather.cli import cli

    r = CliRunner().invoke(cli, ["--home", str(home), *args], catch_exceptions=False)
    assert r.exit_code == code, (args, r.exit_code, r.output)
    return r


def _csv(path, start):
    """`arch`: an hour at 60 s around the job's start, one OST."""
    t0 = int(start.timestamp()) - 1800
    lines = ["time,target,metric,value"] + [f"{t0 + 60 * m},arch-OST0000,read_bytes,{(m + 1) * 1_000_000}"
                                            for m in range(60)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def home(tmp_path, testdata, monkeypatch):
    monkeypatch.delenv("IOWEATHER_FS_MAP", raising=False)
    home = tmp_path / "home"
    invoke(home, "jobs", "ingest", str(testdata / JOB_LOG), "--workers", "1", "-q")
    listed = json.loads(invoke(home, "jobs", "list", "--json").output)[0]
    start = datetime.fromisoformat(listed["start"].replace("Z", "+00:00")).astimezone(timezone.utc)
    invoke(home, "import", "csv", str(_csv(tmp_path / "arch.csv", start)), "--fs", "arch", "--interval", "60s", "-q")
    return home


@pytest.mark.slow  # a store built by several commands, a server or a probe history: seconds
def test_a_single_stored_weather_on_another_fs_is_not_the_jobs_verdict(home, monkeypatch):
    from starlette.testclient import TestClient

    from web_server import frozen_app

    umami = json.loads(invoke(home, "umami", "1452113755", "--fs", "arch", "--json").output)
    assert umami["fs"] == "arch"  # its one stored weather row

    def page_and_why():
        with TestClient(frozen_app(home, time.time_ns()), base_url="http://127.0.0.1") as client:
            row = client.get("/api/jobs").json()["list"]["rows"][0]
            job = client.get(f"/api/job?id={row['id'][:12]}").json()
        return row["weather_verdict"], job["why"]["fs"], json.loads(invoke(home, "why", "1452113755", "--json").output)

    # no fs-map: /lus/theta-fs0 maps to no dataset; the job page and `why` name none, and so does the list
    verdict, page_fs, why = page_and_why()
    assert page_fs is None and why["fs"] is None
    assert verdict is None, verdict
    # an fs-map naming arch: the list shows arch's verdict, as the job page and `why` name arch
    monkeypatch.setenv("IOWEATHER_FS_MAP", "/lus/theta-fs0=arch")
    verdict, page_fs, why = page_and_why()
    assert page_fs == why["fs"] == "arch" and verdict is not None, (verdict, page_fs, why["fs"])
