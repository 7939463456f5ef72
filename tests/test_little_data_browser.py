"""issue 30: no page wider than its window at 1,280 px (/jobs was 1,914 px wide and its navigation
stopped at 680 px), and no scientific notation on any page. Every page the dashboard lists (/api) is
loaded in headless Chromium at 1,280 x 800 on the store of tests/web_pages_data.py (real Darshan logs,
telemetry, snapshots, probe samples); pages without data in it show their hint, which must fit too."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from browser import screenshot, visit
from web_pages_data import nasty_hash, pages_home, pages_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTH = 1280
SCIENTIFIC = re.compile(r"\d[eE][+-]\d")
#: Pages that need a parameter to show their data in this store.
EXTRA = {"job": "?id=" + nasty_hash()[:16], "workload": "?fs=syn", "factors": "?target=bimodal&since=6h"}


def _paths(server) -> list[str]:
    with urllib.request.urlopen(server.url + "/api") as r:
        index = json.load(r)
    slugs = [p["slug"] for p in index["pages"]]
    assert {"jobs", "status", "workload"} <= set(slugs)
    return [f"/{s}{EXTRA.get(s, '')}" for s in slugs]


@pytest.fixture(scope="module")
def narrow(chromium_path):
    from playwright.sync_api import sync_playwright

    from browser import CHROMIUM_ARGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        context = b.new_context(viewport={"width": WIDTH, "height": 800})
        try:
            yield context
        finally:
            context.close()
            b.close()


def test_no_page_is_wider_than_its_window(narrow, pages_server, artifacts_dir):
    wide, sci = {}, {}
    for path in _paths(pages_server):
        # drawn: every plot, and the change tables of timeline and history (fetched after the load)
        with visit(narrow, pages_server.url + path) as v:
            name = "width-" + path.strip("/").split("?")[0]
            screenshot(v.page, artifacts_dir, name)
            w = v.page.evaluate("document.documentElement.scrollWidth")
            # the header's dark band (the navigation) is as wide as the window: it stopped at 680 px
            # of a 1,914 px page, and links that do not fit must wrap inside it, not spill out
            header, links = v.page.evaluate("""() => { const h = document.querySelector('header.top');
                return [h.getBoundingClientRect().right,
                        Math.max(...Array.from(h.querySelectorAll('a')).map(a => a.getBoundingClientRect().right))]; }""")
            if w > WIDTH or header < w or links > header:
                wide[path] = {"scrollWidth": w, "header_right": header, "links_right": links}
            found = SCIENTIFIC.findall(v.page.inner_text("body"))
            if found:
                sci[path] = found[:5]
    assert wide == {}, wide
    assert sci == {}, sci
