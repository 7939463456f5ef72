"""Headless Chromium (Debian's, through Playwright) for the tests of pages and HTML reports.

`launch` starts one browser context (conftest's module-scoped `browser` fixture uses it);
`visit` opens a page and records everything a user would see go wrong on it (console
errors, uncaught exceptions, failed requests, alert/confirm dialogs) so that a test can
assert `v.errors == []`.

Waiting: always with `playwright.sync_api.expect`, which polls from Playwright's injected
script. `page.wait_for_function` eval()s its predicate, which our Content-Security-Policy
(script-src 'self', no unsafe-eval) rightly refuses: it failed CI.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 1000}

# Per plot: how many points it carries, and how many marks Plotly actually drew in the SVG.
PLOT_PROBE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(el => ({
  id: el.id,
  points: el.data.reduce((n, t) => n + (t.z ? t.z.flat().filter(v => v !== null).length
                                            : (t.q1 || t.y || []).filter(v => v !== null).length), 0),
  marks: el.querySelectorAll('.point, path.box, .hm image, .js-line').length,
}))"""


@contextlib.contextmanager
def launch(chromium_path: str):
    """One browser context: plotly.min.js is fetched and compiled once per context, as for a user."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        context = b.new_context(viewport=VIEWPORT)
        try:
            yield context
        finally:
            context.close()
            b.close()


@dataclass
class Visit:
    page: object                     # playwright.sync_api.Page
    response: object                 # the navigation's Response (None for some file:// pages)
    errors: list[str] = field(default_factory=list)    # console errors, page errors, failed requests, dialogs
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    #: (status, URL) of every response of 400 or more, the page's own fetches too: an HTTP error is no
    #: "requestfailed" (only a network failure is), and a console line does not say which request it was
    bad_statuses: list[tuple[int, str]] = field(default_factory=list)


@contextlib.contextmanager
def visit(context, url: str, *, plots_ready: bool = True) -> Iterator[Visit]:
    """Open `url` in a new page of `context`, closed afterwards.

    With `plots_ready` (the dashboard's pages) it waits until the page's script has set
    body[data-plots-ready=1], i.e. every plot is drawn; static reports need no wait.
    """
    from playwright.sync_api import expect

    page = context.new_page()
    v = Visit(page, None)
    page.on("console", lambda m: v.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: v.errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: v.errors.append(f"request failed: {r.url}"))
    page.on("request", lambda r: v.requests.append(r.url))
    page.on("response", lambda r: v.bad_statuses.append((r.status, r.url)) if r.status >= 400 else None)
    page.on("dialog", lambda d: (v.errors.append(f"dialog {d.type}: {d.message}"), d.dismiss()))
    try:
        v.response = page.goto(url)
        if plots_ready:
            expect(page.locator("body")).to_have_attribute("data-plots-ready", "1", timeout=30_000)
        yield v
    finally:
        page.close()


def screenshot(page, artifacts_dir: Path, name: str) -> None:
    """The whole page as test-artifacts/NAME.png, for a person to look at after the run."""
    page.screenshot(path=str(artifacts_dir / f"{name}.png"), full_page=True)


def assert_plots_drawn(page) -> None:
    """Every Plotly plot on the page carries data and drew marks for it (not empty axes)."""
    plots = page.evaluate(PLOT_PROBE)
    assert plots, "no plot on the page"
    for p in plots:
        assert p["points"] > 0 and p["marks"] > 0, p


def assert_no_script_ran(page) -> None:
    """The NASTY labels of the test data set window.__xss if any of them is run as HTML."""
    assert page.evaluate("window.__xss") is None


def assert_renders_with_data(v: Visit, artifacts_dir: Path, name: str) -> None:
    """The page answered 200, drew every plot with data, ran no injected script and logged no error;
    a screenshot is saved as test-artifacts/NAME.png whatever the outcome."""
    screenshot(v.page, artifacts_dir, name)
    assert v.response.status == 200
    assert_plots_drawn(v.page)
    assert_no_script_ran(v.page)
    assert v.errors == []


def json_twin(page, path: str):
    """The JSON twin of dashboard page PATH (/api + PATH), fetched by the page itself."""
    return json.loads(page.evaluate(f"fetch({json.dumps('/api' + path)}).then(r => r.text())"))
