"""The Servers, Metadata, Capacity and Talkers pages in headless Chromium: every plot drawn with data, no
console error, no script injected by a hostile job id (shown as text), clicking a heatmap row opens
that target's series."""

from __future__ import annotations

import pytest

from browser import assert_renders_with_data, json_twin, visit
from test_web_fsview import WINDOW, home, server  # noqa: F401  (fixtures)
from web_pages_data import NASTY

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = [
    ("servers", f"/servers?fs=snx11025&{WINDOW}"),
    ("servers-target", f"/servers?fs=snx11025&{WINDOW}&sort=peak&target=snx11025-OST0003"),
    ("metadata", f"/metadata?fs=snx11025&{WINDOW}"),
    ("capacity", "/capacity?fs=snx11035&since=2017-03-01T00:00:00Z&until=2017-03-22T00:00:00Z"),
    ("talkers", "/talkers?fs=lustrefs&since=1d"),
]


@pytest.mark.parametrize("name,path", PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_with_data(browser, server, artifacts_dir, name, path):
    with visit(browser, server.url + path) as v:
        assert_renders_with_data(v, artifacts_dir, f"web-fsview-{name}")


def test_hostile_job_id_shown_as_text(browser, server):
    with visit(browser, server.url + "/talkers?fs=lustrefs&since=1d") as v:
        jobs = v.page.evaluate("() => Array.from(document.querySelectorAll('#by-bytes td.job')).map(td => td.textContent)")
        twin = json_twin(v.page, "/talkers?fs=lustrefs&since=1d")
        assert jobs == [r["job"] for r in twin["by_bytes"]] and NASTY in jobs
        bars = v.page.evaluate("() => document.getElementById('talkers-bytes').data[0].y")
        assert any("&lt;script&gt;" in y for y in bars)  # lib.text: Plotly shows the characters, runs nothing
        assert v.errors == []


def test_heatmap_row_click_opens_the_target(browser, server):
    with visit(browser, server.url + f"/servers?fs=snx11025&{WINDOW}&sort=name") as v:
        v.page.evaluate("""() => { const el = document.getElementById('servers-heat-read');
            el.emit('plotly_click', {points: [{pointIndex: [2, 0]}]}); }""")
        v.page.wait_for_url("**target=snx11025-OST0002**")
        from playwright.sync_api import expect
        expect(v.page.locator("#target-name")).to_have_text("snx11025-OST0002")
