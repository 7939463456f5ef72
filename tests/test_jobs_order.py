"""`jobs summary` does not depend on the order the logs were stored (store/jobs.py::load_jobs orders).

Found by the JSON contract: ingesting the 14 shared logs in reverse order changed
projects[0].meta_time_share_mean in the last digit (float sums depend on their order).
"""

from __future__ import annotations

import json
import shutil

from conftest import run_cli
from darshan_support import TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)


def _summary(tmp_path, name: str, logs: list) -> dict:
    home = tmp_path / name
    # one worker, files named in this order: rows are stored in exactly this order
    run_cli("jobs", "ingest", *map(str, logs), "--workers", "1", "--json", home=home, timeout=300, check=True)
    out = run_cli("jobs", "summary", "--json", "--min-procs", "0", "--min-bytes", "0", home=home, check=True)
    return json.loads(out.stdout)


def test_summary_is_the_same_whatever_the_ingest_order(tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    for p in sorted(TESTDATA_LOGS.glob("*.darshan")):
        shutil.copy(p, archive / p.name)
    logs = sorted(archive.glob("*.darshan"))
    forward = _summary(tmp_path, "forward", logs)
    backward = _summary(tmp_path, "backward", logs[::-1])
    assert forward["jobs"] == len(logs)
    assert json.dumps(forward) == json.dumps(backward)  # bit for bit, floats included
