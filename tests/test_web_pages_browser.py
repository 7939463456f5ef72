"""The Jobs, Workload, Contents and Factors pages in headless Chromium (Debian's, through Playwright): plots
drawn with data, no console errors, text equal to the JSON twin, no script injected by a label; screenshots."""

from __future__ import annotations

import contextlib
from urllib.parse import quote

import pytest

from browser import assert_no_script_ran, assert_renders_with_data, json_twin, visit
from web_pages_data import NASTY, NASTY_NAME, nasty_hash, pages_home, pages_server  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = [
    ("jobs", "/jobs"),
    ("jobs-by-level", "/jobs?sort=level&limit=5"),
    ("job-nasty", "/job?id=" + nasty_hash()[:16]),
    ("workload", "/workload?fs=syn"),
    ("workload-csv", "/workload?fs=csv-fs&resample=5m&min_amplitude=512MiB/s"),
    ("contents", "/contents"),
    ("contents-growth", f"/contents?label={quote(NASTY)}&compare=v1"),
    ("factors", "/factors?target=bimodal&since=6h"),
    ("factors-nasty-md-stat", f"/factors?target={quote(NASTY)}&op=md_stat&since=2h"),
]


#: Pages of PAGES a later test reads again: drawn once (seconds each) and kept open for the module.
KEPT = {"job-nasty", "workload", "contents-growth"}


@pytest.fixture(scope="module")
def drawn(browser, pages_server):
    """drawn(path): the Visit of PATH, drawn on the first call and kept open until the module ends."""
    with contextlib.ExitStack() as stack:
        pages = {}

        def get(path: str):
            if path not in pages:
                pages[path] = stack.enter_context(visit(browser, pages_server.url + path))
            return pages[path]

        yield get


@pytest.mark.parametrize("name,path", PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_with_data(browser, pages_server, drawn, artifacts_dir, name, path):
    with contextlib.nullcontext(drawn(path)) if name in KEPT else visit(browser, pages_server.url + path) as v:
        assert_renders_with_data(v, artifacts_dir, f"web-{name}")


def test_job_list_text_equals_jsonjson_twin(browser, pages_server):
    with visit(browser, pages_server.url + "/jobs?sort=runtime&limit=20") as v:
        page = v.page
        twin = json_twin(page, "/jobs?sort=runtime&limit=20")
        cells = page.evaluate("""() => Array.from(document.querySelectorAll('#job-list tbody tr')).map(tr =>
            ({href: tr.querySelector('a').getAttribute('href'), exe: tr.querySelector('td.exe').textContent}))""")
        rows = twin["list"]["rows"]
        assert [c["href"] for c in cells] == [f"/job?id={r['id'][:16]}" for r in rows]
        assert [c["exe"] for c in cells] == [r["exe"] or "(anonymized)" for r in rows]
        assert any(NASTY in c["exe"] for c in cells)  # shown as text, exactly
        # Clicking a point of the scatter opens that job's page.
        n = len(twin["plot"]["id"])
        assert page.evaluate("document.getElementById('jobs-scatter').data.reduce((n, t) => n + t.x.length, 0)") <= n
        assert v.errors == []


def test_job_page_shows_the_nasty_names_as_text(drawn):
    path = "/job?id=" + nasty_hash()[:16]
    v = drawn(path)
    page = v.page
    twin = json_twin(page, path)
    assert page.inner_text("#job-exe") == twin["job"]["exe"] == NASTY + " --input " + NASTY
    names = page.evaluate("Array.from(document.querySelectorAll('#top-files tbody td.path')).map(td => td.textContent)")
    assert names == [f["name"] for f in twin["top_files"]]
    level = page.inner_text("#job-level")  # "✖ HIGH findings", "▲ WARN findings" or "no HIGH or WARN finding"
    assert level.split(" ", 1)[1].startswith(twin["level"]) if twin["level"] else level.startswith("no ")
    assert_no_script_ran(page)
    assert v.errors == []


def test_workload_text_equals_jsonjson_twin(drawn):
    v = drawn("/workload?fs=syn")
    page = v.page
    twin = json_twin(page, "/workload?fs=syn")
    r = twin["result"]
    assert page.inner_text("#event-count").startswith(f"{len(r['events'])} rising")
    rows = page.evaluate("Array.from(document.querySelectorAll('#idle-table tbody tr')).map(tr => tr.children[1].textContent)")
    assert rows == [str(i["count"]) for i in r["idle_periods"]]
    # The signal plot carries every interval, and the events are shaded on it.
    n = page.evaluate("document.getElementById('workload-signal').data[0].x.length")
    shapes = page.evaluate("document.getElementById('workload-signal').layout.shapes.length")
    assert n == twin["series"]["shown"] and shapes == len(r["events"]) > 0
    assert v.errors == []


def test_contents_text_equals_jsonjson_twin(drawn):
    path = f"/contents?label={quote(NASTY)}&compare=v1"
    v = drawn(path)
    page = v.page
    twin = json_twin(page, path)
    assert page.inner_text("#snapshot-label") == NASTY  # the label, as text
    names = page.evaluate("Array.from(document.querySelectorAll('#project-table tbody td.path')).map(td => td.textContent)")
    assert names == [p["name"] for p in twin["projects"]] and NASTY_NAME in names
    # The growth plot shows the directory names as text too (through Plotly).
    ticks = page.evaluate("Array.from(document.querySelectorAll('#contents-diff .ytick text')).map(t => t.textContent)")
    changed = [r["name"] for r in twin["diff"]["top_dirs"] if r["bytes_change"]]
    assert sorted(ticks) == sorted(changed) and NASTY_NAME in ticks
    assert_no_script_ran(page)
    assert v.errors == []


def test_factors_text_equals_jsonjson_twin(browser, pages_server):
    path = "/factors?target=bimodal&since=6h&op=data_write"
    with visit(browser, pages_server.url + path) as v:
        page = v.page
        twin = json_twin(page, path.replace("since=6h", "since=" + quote(page.input_value("input[name=since]")))
                     .replace("&op", "&until=" + quote(page.input_value("input[name=until]")) + "&op"))
        rows = page.evaluate("Array.from(document.querySelectorAll('#class-table tbody tr')).map(tr => tr.children[3].textContent)")
        assert rows == [f"{c['count']:,}" for c in twin["analysis"]["classes"]]
        # One trace per non-empty class, as many points as the timeline carries.
        n = page.evaluate("document.getElementById('factors-timeline').data.reduce((n, t) => n + t.x.length, 0)")
        assert n == twin["timeline"]["shown"]
        shapes = page.evaluate("document.getElementById('factors-density').layout.shapes.length")
        a = twin["analysis"]
        assert shapes == len(a["maxima_s"]) + len(a["splits_s"]) + (a["cutoff_s"] is not None)
        assert v.errors == []
