"""Every page in headless Chromium (Debian's, through Playwright): plots drawn with data, no console
errors, state text equal to the JSON twin, no script injected by a target name; screenshots saved."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from conftest import CHROMIUM_ARGS
from web_server import NASTY, filled, server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow]  # ~5 s a page on this shared 2-core machine

PAGES = [
    ("status", "/status"),
    ("timeline", "/timeline?target=home-nfs&since=6h"),
    ("timeline-nasty", "/timeline?target=" + quote(NASTY)),
    ("history", "/history"),
    ("history-scratch-10m", "/history?target=scratch&since=2d&interval=10m"),
    ("bad-request", "/timeline?since=garbage"),
]

# Per plot: how many points it carries, and how many marks Plotly actually drew in the SVG.
PLOT_PROBE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => ({
  id: el.id,
  points: el.data.reduce((n, t) => n + (t.z ? t.z.flat().filter(v => v !== null).length
                                            : (t.q1 || t.y || []).filter(v => v !== null).length), 0),
  marks: el.querySelectorAll('.point, path.box, .hm image, .js-line').length,
}))"""


@pytest.fixture(scope="module")
def browser(chromium_path):
    """One browser context for the module: plotly.min.js is fetched and compiled once, as for a user."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        context = b.new_context(viewport={"width": 1400, "height": 1000})
        yield context
        context.close()
        b.close()


def open_page(browser, url, errors):
    page = browser.new_page()
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: errors.append(f"request failed: {r.url}"))
    resp = page.goto(url)
    # Playwright's expect polls from its injected script; wait_for_function would eval() the predicate,
    # which our Content-Security-Policy (script-src 'self', no unsafe-eval) rightly refuses.
    expect(page.locator("body")).to_have_attribute("data-plots-ready", "1", timeout=30_000)
    return page, resp


@pytest.mark.parametrize("name,path", PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_with_data(browser, server, artifacts_dir, name, path):
    errors: list[str] = []
    page, resp = open_page(browser, server.url + path, errors)
    try:
        page.screenshot(path=str(artifacts_dir / f"web-{name}.png"), full_page=True)
        if name == "bad-request":
            assert resp.status == 400
            assert "malformed time" in page.inner_text(".error-message")
            errors = [e for e in errors if "400" not in e]  # the browser logs the 400 itself
        else:
            assert resp.status == 200
            plots = page.evaluate(PLOT_PROBE)
            assert plots, "no plot on the page"
            for p in plots:
                assert p["points"] > 0 and p["marks"] > 0, p  # drawn with data, not empty axes
        assert page.evaluate("window.__xss") is None
        assert errors == []
    finally:
        page.close()


def test_status_text_equals_json_twin(browser, server):
    errors: list[str] = []
    page, _ = open_page(browser, server.url + "/status", errors)
    try:
        twin = json.loads(page.evaluate("fetch('/api/status').then(r => r.text())"))
        cards = page.evaluate("""() => Array.from(document.querySelectorAll('article.card')).map(c => ({
            target: c.querySelector('.target-name').textContent,
            state: c.querySelector('[data-testid=state]').textContent}))""")
        assert [c["target"] for c in cards] == [t["target"] for t in twin["targets"]]
        assert NASTY in [c["target"] for c in cards]  # the name is shown as text, exactly
        for c, t in zip(cards, twin["targets"]):
            assert c["state"].split(" ", 1)[1] == t["state"]
        assert page.inner_text("#overall-state").split(" ", 1)[1] == twin["overall"]
        assert errors == []
    finally:
        page.close()


def test_timeline_zoom_fetches_the_window_again(browser, server, artifacts_dir):
    errors: list[str] = []
    page, _ = open_page(browser, server.url + "/timeline?target=home-nfs&since=6h&points=2000", errors)
    try:
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
        page.screenshot(path=str(artifacts_dir / "web-timeline-zoomed.png"), full_page=True)
        assert errors == []
    finally:
        page.close()
