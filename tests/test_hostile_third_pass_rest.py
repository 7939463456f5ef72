"""Issue 41, the rest: items 14, 15, 19 and 20.

14. a Darshan log whose region inflates far beyond its size (1.6 MB to 1.5 GiB of zeros) cost `job`
    5 GB and ingest accepted it;
15. a gzip capture, a `--thresholds` file and an `import slurm` input were read whole, uncapped;
19. `why --html` and `/job?id=` failed (jinja2 UndefinedError 'failed_over') on a store with OST
    fullness (`lfs df`) and no `lctl dl -t` listing;
20. `slowdown --check`'s usage errors exited 2 (Nagios: CRITICAL) instead of 3 (UNKNOWN), import time
    options read a bare `90` as 1970, a capture with no parameters asked for --at, a non-UTF-8
    executable name made a Darshan log unreadable, a malformed mount table made libdarshan-util read
    uninitialised memory.
"""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from ioweather.config import Settings

JOB_LOG = "imbalanced-io.darshan"       # /lus/theta-fs0, jobid 1452113755, started 1618435795
JOBID = "1452113755"


def _invoke(home, *args):
    from ioweather.cli import cli as main

    return CliRunner().invoke(main, ["--home", str(home), *args])


def _one_line(text: str, limit: int = 400) -> None:
    assert text.count("\n") == 1 and len(text) < limit and "Traceback" not in text, text[-800:]


# ----------------------------------------------------------------- 19. fullness without a failover listing

#: `lfs df` a minute and a half before the job: OST0001 93.5 % used, the fullest.
LFS_DF = """BEGIN 1618435700
UUID                   1K-blocks        Used   Available Use% Mounted on
theta-MDT0000_UUID  2255453580   115229304  2106024648   5% /lus/theta-fs0[MDT:0]
theta-OST0000_UUID 90767651352 65371112780 24440205704  73% /lus/theta-fs0[OST:0]
theta-OST0001_UUID 90767651352 84844166288  4966115416  94% /lus/theta-fs0[OST:1]
"""


@pytest.fixture(scope="module")
def fullness_only(tmp_path_factory, testdata):
    """A store holding one ingested log and an `lfs df` of its file system, and no `lctl dl -t`."""
    root = tmp_path_factory.mktemp("fullness")
    home = root / "home"
    r = _invoke(home, "jobs", "ingest", str(testdata / "darshan" / JOB_LOG), "--workers", "1")
    assert r.exit_code == 0, r.output
    (home / "fs-map").write_text("/lus/theta-fs0 theta\n")
    (root / "lfsdf.txt").write_text(LFS_DF)
    r = _invoke(home, "import", "lfsdf", str(root / "lfsdf.txt"), "--fs", "theta", "-q")
    assert r.exit_code == 0, r.output
    return home


@pytest.mark.slow
def test_why_html_with_fullness_and_no_failover_listing(fullness_only, tmp_path):
    out = tmp_path / "why.html"
    r = _invoke(fullness_only, "why", JOBID, "--html", str(out))
    assert r.exit_code == 0, (r.output, r.exception)
    html = out.read_text()
    used = 84844166288 / 90767651352 * 100
    assert f"fullest OST theta-OST0001 {used:.0f}%" in html and "failed over:" not in html
    r = _invoke(fullness_only, "why", JOBID, "--json")
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)["targets"]
    # docs/why.md: every key there, the listing's None
    assert t == {"fullest_ost": "theta-OST0001", "fullest_ost_pct": pytest.approx(used, rel=1e-12),
                 "failed_over": None, "lctl_at": None}


@pytest.mark.slow
def test_job_page_with_fullness_and_no_failover_listing(fullness_only):
    from starlette.testclient import TestClient

    from ioweather.web.app import create_app

    c = TestClient(create_app(Settings.resolve(fullness_only), warm=False), base_url="http://127.0.0.1")
    h = c.get("/api/jobs").json()["list"]["rows"][0]["id"]
    resp = c.get(f"/job?id={h}")
    assert resp.status_code == 200, resp.text[-2000:]
    assert "theta-OST0001" in resp.text and 'id="why-verdict"' in resp.text
    assert c.get(f"/api/job?id={h}").json()["why"]["targets"]["failed_over"] is None
