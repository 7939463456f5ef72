"""Every query parameter of every dashboard page, fuzzed (issue 19, "keep it fixed"): hostile values
(float limits, impossible times, overflowing durations, markup, traversal, control characters, any
text) are a 200, a 400 or a 404 with a one-line JSON error, never a 500, within a deadline.

The pages and their parameters come from the running dashboard (tests/web_server.py
page_parameters), so a new page is fuzzed as soon as it is registered. Short in CI:
IOWEATHER_FUZZ_EXAMPLES requests (default 60); the long run (docs/architecture.md, "Test data and checks"):

    IOWEATHER_FUZZ_EXAMPLES=3000 IOWEATHER_FUZZ_RANDOM=1 .venv/bin/python -m pytest tests/test_fuzz_web.py -q
"""

from __future__ import annotations

import os

import pytest

from web_pages_data import BIMODAL, pages_home, pages_server  # noqa: F401  (fixtures)
from web_server import api, fuzz_pages, page_parameters

EXAMPLES = int(os.environ.get("IOWEATHER_FUZZ_EXAMPLES", "60"))

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def params(pages_server):
    return page_parameters(pages_server)


def test_every_page_is_fuzzed(params):
    expected = {"status", "timeline", "history", "factors", "jobs", "job", "workload", "contents", "servers",
                "metadata", "capacity", "talkers", "bench", "report", "timeline/changes", "history/changes"}
    assert expected <= {p.removeprefix("/api/") for p in params}, sorted(params)
    assert params["/api/timeline/changes"] == params["/api/timeline"]
    assert params["/api/history/changes"] == params["/api/history"]
    assert params["/api/factors"] == ["target", "op", "since", "until", "adjust", "significance", "cutoff_fraction",
                                      "split"]


def test_hostile_parameters_never_500(pages_server, params):
    fuzz_pages(pages_server, params, examples=EXAMPLES, base={"/api/factors": {"target": BIMODAL}})


@pytest.mark.parametrize("value", ["1e-320", "1e-310"])
def test_underflowing_adjust_was_a_500(pages_server, value):
    code, body = api(pages_server, f"/api/factors?target={BIMODAL}&adjust={value}")
    assert code == 400 and "too small" in body["error"]
