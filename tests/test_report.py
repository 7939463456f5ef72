"""`ioweather report`: the week's page renders in Chromium with its links; the dashboard's Workload
events lead to their row of culprit jobs on the Report page."""

from __future__ import annotations

import json

import pytest

from test_events import CULPRIT, run, with_jobs, synthetic  # noqa: F401  (module fixtures)

WINDOW = ["--since", "2024-03-01T00:00:00Z", "--until", "2024-03-03T00:00:00Z"]


def test_report_json_parts(with_jobs):  # noqa: F811
    home, _, events = with_jobs
    code, out, err = run("report", "--fs", "syn", *WINDOW, "--json", home=home)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["events"]["events"] == events
    assert doc["slowdown"] is None and doc["bench"] is None and doc["fullness"] is None  # no probes, runs, capacity
    assert set(doc["links"]) == {"slowdown", "changes", "events", "bench", "fullness"}
    assert doc["changes"]["available"] in (True, False)
    if not doc["changes"]["available"]:
        assert doc["changes"]["reason"] == "change points: not available"


@pytest.mark.browser
def test_report_renders_in_chromium_with_links(with_jobs, tmp_path, browser):  # noqa: F811
    from browser import visit

    home, _, _ = with_jobs
    out = tmp_path / "week.html"
    code, _, err = run("report", "--fs", "syn", *WINDOW, "--html", str(out), "--dashboard-url", "http://dash:8050",
                       home=home)
    assert code == 0, err
    with visit(browser, out.as_uri(), plots_ready=False) as v:
        details = v.page.eval_on_selector_all("a.detail", "as => as.map(a => a.href)")
        anchors = v.page.eval_on_selector_all("#contents a", "as => as.map(a => a.getAttribute('href'))")
        for a in anchors:
            assert v.page.locator(a).count() == 1
        first = v.page.locator("#events tbody tr").first.inner_text()
        assert v.errors == []
    assert len(details) == 5 and all(d.startswith("http://dash:8050/") for d in details)
    assert "7001" in first and "overlap" in first
    assert all(u.startswith(("file:", "data:")) for u in v.requests), v.requests


@pytest.mark.browser
def test_workload_event_links_to_its_culprits(with_jobs, browser):  # noqa: F811
    from browser import visit
    from web_server import Server

    from ioweather.config import Settings
    from ioweather.web.app import create_app

    home, _, _ = with_jobs
    with Server(create_app(Settings.resolve(home))) as s:
        url = f"{s.url}/workload?fs=syn&since=2024-03-01T00:00:00Z&until=2024-03-03T00:00:00Z"
        with visit(browser, url) as v:
            v.page.locator("#event-table tbody tr a").first.click()
            v.page.wait_for_url("**/report?**")
            row = v.page.locator("tr:target")
            assert row.count() == 1
            assert "7001" in row.inner_text()
            assert v.errors == []
