"""issue 30: jobs that moved 0 B are not top talkers. The fixtures of test_web_fsview.py: a real `collect`
of the shared lustre-procfs tree whose OST0000 job_stats grow by JOB_ADD mid-run; every other job of the
tree stays where it was, so it moved nothing in the window (before: listed as talkers with 0 B)."""

from __future__ import annotations

import pytest

from test_web_fsview import JOB_ADD, home, server  # noqa: F401 (fixtures: one collect run)
from web_server import api, escaped_page

pytestmark = pytest.mark.slow  # a collect run of 8 s


def test_zero_byte_jobs_are_not_talkers(server):
    code, d = api(server, "/api/talkers?fs=lustrefs&since=1d")
    assert code == 200
    assert {r["job"] for r in d["by_bytes"]} == set(JOB_ADD)
    assert d["jobs_moving_bytes"] == len(JOB_ADD) < d["jobs"]  # the idle ones are counted, not listed
    for key, lists in (("bytes", ("by_bytes", "now_by_bytes")), ("ops", ("by_ops", "now_by_ops"))):
        for name in lists:
            assert all(r[key] > 0 for r in d[name]), (name, [r for r in d[name] if not r[key] > 0][:3])
    assert all(u["bytes"] > 0 or u["ops"] > 0 for u in d["users"])
    html, _ = escaped_page(server, "/talkers?fs=lustrefs&since=1d")
    assert f"{d['jobs']} jobs in Lustre job_stats, {len(JOB_ADD)} of them moved bytes" in html
