"""Change points on the dashboard: a level shift planted in stored probe samples shows as a mark at
its time on the Probe timeline and on the Slowdown history (Chromium: the marker is drawn where the
time axis puts the planted time, and its tooltip says when, which op, the level before → after),
and the pages' change JSON (/api/timeline/changes, /api/history/changes) carries it, with the levels
checked against the raw samples (SQL + pandas). The pages themselves answer without the change-point
libraries: the marks are fetched once the page is drawn.
"""

from __future__ import annotations

import json
import shlex
import time
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.store import open_store
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)
from web_synthetic import Episode, add_target

STEP = 600 * 10**9
DAY = 86400 * 10**9
FACTOR = 3.0


def iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """Ten days of 1-minute samples of two targets; scratch's data_read is 3× slower from SHIFT on
    (a 10-minute boundary in the afternoon, not midnight); home has no change."""
    home = tmp_path_factory.mktemp("chweb") / "home"
    t0 = (time.time_ns() // STEP) * STEP
    shift = (t0 - 3 * DAY) // DAY * DAY + 14 * 3_600 * 10**9 + 40 * 60 * 10**9
    store = open_store(Settings.resolve(home))
    add_target(store, "scratch", t0 - 10 * DAY, t0, period_s=60, seed=5,
               episodes=[Episode(shift, t0 + DAY, FACTOR, ("data_read",))])
    add_target(store, "home", t0 - 10 * DAY, t0, period_s=60, seed=6)
    store.dispose()
    return home, t0, shift


@pytest.fixture(scope="module")
def server(planted):
    """The clock stopped at the data's end: a 10-minute boundary passing between the page and a second
    request would move the window the marks are looked for in."""
    from web_server import Server, frozen_app

    with Server(frozen_app(planted[0], planted[1])) as s:
        yield s


def reference_level(home, target: str, op: str, lo_ns: int, hi_ns: int) -> float:
    """Geometric mean over [lo, hi) of the 10-minute medians of successful samples, from the rows."""
    store = open_store(Settings.resolve(home))
    q = sa.text("SELECT s.start_ns, s.duration_ns FROM probe_samples s JOIN probe_runs r ON r.id = s.run_id "
                "WHERE r.target = :t AND s.op = :op AND s.status = 'ok' AND s.start_ns >= :lo AND s.start_ns < :hi")
    try:
        with store.connect() as conn:
            df = pd.DataFrame(conn.execute(q, {"t": target, "op": op, "lo": lo_ns, "hi": hi_ns}).fetchall(),
                              columns=["start_ns", "duration_ns"])
    finally:
        store.dispose()
    med = (df["duration_ns"] / 1e9).groupby(df["start_ns"] // STEP).median()
    return float(np.exp(np.log(med).mean()))


def test_timeline_json_carries_the_planted_change(planted, server):
    from web_server import api

    home, t0, shift = planted
    code, ch = api(server, f"/api/timeline/changes?target=scratch&since={iso(shift - 2 * 3600 * 10**9)}"
                           f"&until={iso(shift + 2 * 3600 * 10**9)}&interval=10m")
    assert code == 200, ch
    assert [(p["op"], p["time"]) for p in ch["points"]] == [("data_read", iso(shift))]
    p = ch["points"][0]
    lo, hi = pd.Timestamp(ch["since"]).value, pd.Timestamp(ch["until"]).value
    # the search ends at the last settled interval: the one that ended more than the lag (90 s) before now (t0)
    assert ch["until_settled"] and hi == t0 - STEP
    assert p["level_before"] == pytest.approx(reference_level(home, "scratch", "data_read", lo, shift), rel=1e-9)
    assert p["level_after"] == pytest.approx(reference_level(home, "scratch", "data_read", shift, hi), rel=1e-9)
    assert p["factor"] == pytest.approx(FACTOR, rel=0.05)
    assert ch["command"].startswith("ioweather changes --kind probe --target scratch --since ")
    # a window that does not hold the change shows no mark
    code, ch = api(server, f"/api/timeline/changes?target=scratch&since={iso(shift - 6 * 3600 * 10**9)}"
                           f"&until={iso(shift - 3600 * 10**9)}&interval=10m")
    assert code == 200 and ch["points"] == []
    # the page's own parameters are checked as the page checks them
    code, doc = api(server, "/api/timeline/changes?target=scratch&since=2h&bogus=1")
    assert code == 400 and "bogus" in doc["error"]


def test_history_json_marks_only_the_target_that_changed(planted, server, cli):
    """CLI = API: the `ioweather changes` line /api/history/changes gives, run, finds the marks of the page's
    window with the same levels (its search ends at the last settled interval, so it does whenever it is run)."""
    from web_server import api

    home, t0, shift = planted
    since = t0 - 7 * DAY
    code, doc = api(server, f"/api/history/changes?since={iso(since)}&until={iso(t0)}&interval=1h")
    assert code == 200, doc
    assert [(p["target"], p["op"], p["time"]) for p in doc["points"]] == [("scratch", "data_read", iso(shift))]
    assert doc["until_settled"] and doc["until"] == iso(t0 - STEP)
    words = shlex.split(doc["command"])
    assert words[:2] == ["ioweather", "changes"]
    run = json.loads(cli(*words[1:], "--json", home=home, check=True).stdout)
    assert (run["since"], run["until"]) == (doc["since"], doc["until"])
    found = [(c["series"], c["time"], c["level_before"], c["level_after"], c["factor"]) for c in run["changes"]
             if since - STEP < pd.Timestamp(c["time"]).value < t0]
    assert found == [(p["series"], p["time"], p["level_before"], p["level_after"], p["factor"]) for p in doc["points"]]
    code, doc = api(server, f"/api/history/changes?target=home&since={iso(t0 - 7 * DAY)}&until={iso(t0)}")
    assert code == 200 and doc["points"] == [] and "--target home" in doc["command"]


def test_pages_answer_without_the_change_point_libraries(planted, tmp_path):
    """A fresh server process answers the timeline and history pages (HTML and JSON) without importing
    ruptures or scipy; the first /api/<page>/changes imports them and finds the change."""
    import subprocess
    import sys
    import textwrap

    home, t0, shift = planted
    script = textwrap.dedent(f"""
        import json, sys
        from starlette.testclient import TestClient
        from ioweather.config import Settings
        from ioweather.web.app import create_app
        c = TestClient(create_app(Settings.resolve({str(home)!r}), warm=False), base_url="http://127.0.0.1")
        codes = [c.get(u).status_code for u in ("/timeline?target=scratch", "/api/timeline?target=scratch&since=24h",
                                                "/history", "/api/history?since=30d")]
        before = sorted(m for m in ("ruptures", "scipy") if m in sys.modules)
        ch = c.get("/api/history/changes?since={iso(t0 - 7 * DAY)}&until={iso(t0)}").json()
        after = sorted(m for m in ("ruptures", "scipy") if m in sys.modules)
        print(json.dumps({{"codes": codes, "before": before, "after": after,
                          "points": [(p["target"], p["time"]) for p in ch["points"]]}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    assert doc["codes"] == [200, 200, 200, 200]
    assert doc["before"] == [] and doc["after"] == ["ruptures", "scipy"]
    assert doc["points"] == [["scratch", iso(shift)]]


def _marker(page, plot_id: str) -> dict:
    """The drawn change marker of a plot: its centre on screen and the time the x axis gives there."""
    return page.evaluate("""(id) => {
      const el = document.getElementById(id);
      el.scrollIntoView({block: 'center'});  // the mouse hovers what is on screen
      const traces = el._fullData.filter(t => t.meta === 'change');
      const pts = traces.flatMap(t => Array.from(el.querySelectorAll('.trace' + t.uid + ' .point')));
      if (pts.length !== 1) { return {count: pts.length}; }
      const r = pts[0].getBoundingClientRect(), box = el.querySelector('.nsewdrag').getBoundingClientRect();
      const xa = el._fullLayout.xaxis;
      return {count: 1, x: r.left + r.width / 2, y: r.top + r.height / 2,
              time_ms: xa.p2l(r.left + r.width / 2 - box.left),
              ms_per_px: (xa.r2l(xa.range[1]) - xa.r2l(xa.range[0])) / xa._length};
    }""", plot_id)


def _hover(page, plot_id: str) -> str:
    """The tooltip of the plot's change marker, hovered through Plotly (the mouse picks the closest
    point: a median or p99 line passing by the marker can win, whatever the marker says)."""
    from playwright.sync_api import expect

    page.evaluate("""(id) => {
      const el = document.getElementById(id);
      const i = el._fullData.findIndex(t => t.meta === 'change');
      const t = el._fullData[i];
      Plotly.Fx.hover(el, [{curveNumber: i, pointNumber: 0}], 'x' + (t.yaxis || 'y'));
    }""", plot_id)
    label = page.locator(f"#{plot_id} .hoverlayer .hovertext").first
    expect(label).to_be_visible(timeout=10_000)
    return label.text_content()


def _near(m: dict, want_ns: int) -> bool:
    """The marker's centre is within 2 pixels of the time wanted (a pixel is ~10 s on a 4-hour axis)."""
    return abs(m["time_ms"] * 1e6 - want_ns) <= 2 * m["ms_per_px"] * 1e6


@pytest.mark.browser
def test_timeline_marks_the_change_in_chromium(planted, server, browser, artifacts_dir):
    from browser import screenshot, visit

    _, _, shift = planted
    url = (f"{server.url}/timeline?target=scratch&since={iso(shift - 2 * 3600 * 10**9)}"
           f"&until={iso(shift + 2 * 3600 * 10**9)}&interval=10m")
    with visit(browser, url) as v:
        screenshot(v.page, artifacts_dir, "timeline-change-mark")
        m = _marker(v.page, "timeline")
        assert m["count"] == 1, m
        assert _near(m, shift), (m, iso(shift))
        text = _hover(v.page, "timeline")
        row = v.page.locator("#change-marks tbody tr").all_inner_texts()
        scope = v.page.locator("#change-scope").inner_text()
        assert v.errors == []
    assert "data_read" in text and "level change" in text and iso(shift)[:16] in text and "→" in text
    assert "×3.0" in text or "×2.9" in text
    # the table, filled by the page's script, formats as the server's templates do (units.format_seconds)
    from web_server import api

    from ioweather.units import format_seconds

    _, ch = api(server, url.replace(server.url + "/timeline?", "/api/timeline/changes?"))
    p = ch["points"][0]
    assert len(row) == 1
    assert row[0].split("\t") == [iso(shift), "data_read", format_seconds(p["level_before"]),
                                   format_seconds(p["level_after"]), f"{p['factor']:.2f}×"]
    assert ch["command"] in scope and ch["since"] in scope


@pytest.mark.browser
def test_history_marks_the_change_in_chromium(planted, server, browser, artifacts_dir):
    from browser import screenshot, visit

    _, t0, shift = planted
    with visit(browser, f"{server.url}/history?since={iso(t0 - 7 * DAY)}&until={iso(t0)}&interval=1h") as v:
        screenshot(v.page, artifacts_dir, "history-change-mark")
        names = v.page.locator("section.history h2").all_inner_texts()
        marks = {name: _marker(v.page, f"heatmap-{i}") for i, name in enumerate(names)}
        text = _hover(v.page, f"heatmap-{names.index('scratch')}")
        scope = v.page.locator("#change-scope").inner_text()
        assert v.errors == []
    # the page says where the search ended and prints the line that finds the same marks (CLI = API = page)
    from web_server import api

    _, ch = api(server, f"/api/history/changes?since={iso(t0 - 7 * DAY)}&until={iso(t0)}&interval=1h")
    assert f"to {iso(t0 - STEP)} (the end of the last complete 10-minute interval;" in scope, scope
    assert ch["command"] in scope and ch["until"] == iso(t0 - STEP)
    assert marks["home"]["count"] == 0
    assert marks["scratch"]["count"] == 1 and _near(marks["scratch"], shift)
    assert text.startswith("data_read") and "→" in text and iso(shift)[:16] in text


@pytest.mark.browser
def test_the_table_is_filled_when_plotly_does_not_load(planted, server, browser):
    """The change table comes from the page's script, not from Plotly: with plotly.min.js failing to
    load, the history page still lists the planted change and reports itself ready."""
    from browser import visit

    _, t0, shift = planted
    browser.route("**/plotly.min.js*", lambda route: route.abort())
    try:
        with visit(browser, f"{server.url}/history?since={iso(t0 - 7 * DAY)}&until={iso(t0)}&interval=1h") as v:
            rows = v.page.locator("#change-marks tbody tr").all_inner_texts()
            errors = v.errors
    finally:
        browser.unroute("**/plotly.min.js*")
    assert len(rows) == 1 and rows[0].split("\t")[:3] == [iso(shift), "scratch", "data_read"], rows
    # the blocked script's own two lines: its failed request and the console's "Failed to load resource"
    assert [e for e in errors if "plotly.min.js" not in e and "net::ERR_FAILED" not in e] == []


@pytest.mark.browser
def test_a_failed_marks_request_says_so_in_the_table(planted, server, browser):
    """A proxy answering the marks' request with an HTML error page: the plot is still drawn, the table
    says in one line that the changes could not be looked for, with the status, and the page is ready."""
    from browser import visit

    _, _, shift = planted
    pattern = "**/api/timeline/changes*"
    browser.route(pattern, lambda route: route.fulfill(status=502, content_type="text/html",
                                                       body="<html><body>Bad Gateway</body></html>"))
    try:
        url = (f"{server.url}/timeline?target=scratch&since={iso(shift - 2 * 3600 * 10**9)}"
               f"&until={iso(shift + 2 * 3600 * 10**9)}&interval=10m")
        with visit(browser, url) as v:
            rows = v.page.locator("#change-marks tbody tr").all_inner_texts()
            drawn = v.page.evaluate("document.getElementById('timeline').data.length")
            errors = v.errors
    finally:
        browser.unroute(pattern)
    assert rows == ["could not look for level changes: 502 Bad Gateway"], rows
    assert drawn > 0
    assert [e for e in errors if "502" not in e] == []  # the console's own line about the failed resource
