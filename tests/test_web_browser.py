"""Every page in headless Chromium (Debian's, through Playwright): plots drawn with data, no console
errors, state text equal to the JSON twin, no script injected by a target name; screenshots saved."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from browser import assert_no_script_ran, assert_renders_with_data, json_twin, screenshot, visit
from web_server import NASTY, filled, server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # ~5 s a page on this shared 2-core machine

PAGES = [
    ("status", "/status"),
    ("timeline", "/timeline?target=home-nfs&since=6h"),
    ("timeline-day", "/timeline?target=home-nfs&since=24h"),
    ("timeline-nasty", "/timeline?target=" + quote(NASTY)),
    ("history", "/history"),
    ("history-scratch-10m", "/history?target=scratch&since=2d&interval=10m"),
]


@pytest.mark.parametrize("name,path", PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_with_data(browser, server, artifacts_dir, name, path):
    with visit(browser, server.url + path) as v:
        assert_renders_with_data(v, artifacts_dir, f"web-{name}")


def test_bad_request_page(browser, server, artifacts_dir):
    with visit(browser, server.url + "/timeline?since=garbage") as v:
        screenshot(v.page, artifacts_dir, "web-bad-request")
        assert v.response.status == 400
        assert "malformed time" in v.page.inner_text(".error-message")
        assert_no_script_ran(v.page)
        assert [e for e in v.errors if "400" not in e] == []  # the browser logs the 400 itself


def test_status_text_equals_json_twin(browser, server):
    with visit(browser, server.url + "/status") as v:
        page = v.page
        twin = json_twin(page, "/status")
        cards = page.evaluate("""() => Array.from(document.querySelectorAll('article.card')).map(c => ({
            target: c.querySelector('.target-name').textContent,
            state: c.querySelector('[data-testid=state]').textContent}))""")
        assert [c["target"] for c in cards] == [t["target"] for t in twin["targets"]]
        assert NASTY in [c["target"] for c in cards]  # the name is shown as text, exactly
        for c, t in zip(cards, twin["targets"]):
            # "learning" reads "learning the baseline (N h of 30 d)" on the card
            assert c["state"].split(" ", 1)[1].startswith(t["state"])
        assert page.inner_text("#overall-state").split(" ", 1)[1] == twin["overall"]
        assert v.errors == []


def test_timeline_zoom_fetches_the_window_again(browser, server, artifacts_dir):
    with visit(browser, server.url + "/timeline?target=home-nfs&since=6h&points=2000") as v:
        page = v.page
        before = page.inner_text("#summary")
        assert "downsampled" in before
        # Zoom to the last 20 minutes as a user dragging on the plot would (a relayout event).
        with page.expect_response(lambda r: "/api/timeline" in r.url) as info:
            page.evaluate("""() => { const el = document.getElementById('timeline');
                const x1 = el.layout.xaxis.range[1]; const t1 = new Date(x1).getTime();
                return Plotly.relayout(el, {'xaxis.range[0]': t1 - 20 * 60 * 1000, 'xaxis.range[1]': t1}); }""")
        assert info.value.status == 200
        expect(page.locator("#summary")).not_to_contain_text("downsampled")
        after = page.inner_text("#summary")
        shown, total = (int(x) for x in after.split(" samples")[0].split(" of "))
        assert shown == total and 0 < total < 2000  # 20 minutes at full resolution
        assert "since=" in page.url
        screenshot(page, artifacts_dir, "web-timeline-zoomed")
        assert v.errors == []


def test_day_timeline_draws_each_intervals_extremes_then_zooms_to_samples(browser, server, artifacts_dir):
    """Over 6 h the plot is 10-minute intervals, a bar from the fastest to the slowest sample around the
    median; zooming to 20 minutes fetches the samples themselves."""
    with visit(browser, server.url + "/timeline?target=home-nfs&since=24h") as v:
        page = v.page
        twin = json_twin(page, "/timeline?target=home-nfs&since=24h")
        assert twin["resolution"] == "10 min"
        assert "10 min intervals" in page.inner_text("#summary")
        bars = page.evaluate("""() => document.getElementById('timeline').data.filter(t => t.error_y)
            .map(t => ({name: t.name, n: t.x.length, top: Math.max(...t.y.map((y, i) => y + t.error_y.array[i]))}))""")
        for b in bars:
            s = twin["samples"][b["name"]]
            assert b["n"] == len(s["time"]) > 100 and b["top"] == pytest.approx(max(s["max_s"]), rel=1e-9)
        assert len(bars) == 6
        with page.expect_response(lambda r: "/api/timeline" in r.url) as info:
            page.evaluate("""() => { const el = document.getElementById('timeline');
                const t1 = new Date(el.layout.xaxis.range[1]).getTime();
                return Plotly.relayout(el, {'xaxis.range[0]': t1 - 20 * 60 * 1000, 'xaxis.range[1]': t1}); }""")
        assert info.value.status == 200
        expect(page.locator("#summary")).not_to_contain_text("intervals")
        shown, total = (int(x) for x in page.inner_text("#summary").split(" samples")[0].split(" of "))
        assert shown == total > 0
        screenshot(page, artifacts_dir, "web-timeline-day-zoomed")
        assert v.errors == []
