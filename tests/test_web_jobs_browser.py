"""The Jobs page and the job page in Chromium, as a scientist reads them: the verdict first, findings
ranked by the time they cost, the Lustre striping, and no number in scientific notation anywhere on
the page (tables, Plotly axes and hover-free text alike)."""

from __future__ import annotations

import json
import re

import pytest

from browser import assert_renders_with_data, json_twin, visit
from darshan_support import TESTDATA_LOGS
from ioweather.units import format_seconds
from umami_planted import DARSHAN_VERDICT, PER_SAMPLE, plant_motif
from web_pages_data import pages_home, pages_server  # noqa: F401  (fixtures)
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

#: a number as Python or JavaScript write it in scientific notation (5.25e+05, 1e-05)
SCI = r"\d(?:\.\d+)?[eE][+-]?\d"
IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"

pytestmark = pytest.mark.browser


def _all_text(page) -> list[str]:
    """What a reader sees: the body's text and every SVG text (Plotly's tick labels, legends)."""
    return [page.inner_text("body")] + page.eval_on_selector_all("svg text", "els => els.map(e => e.textContent)")


def _api(server, path: str):
    """The JSON twin of dashboard page PATH, over HTTP (what json_twin fetches from inside a drawn page)."""
    code, _, body = server.get("/api" + path)
    assert code == 200, (path, code, body[:300])
    return json.loads(body)


def _no_sci(page) -> None:
    # a job's id is a hex hash ("...9e0..."): not a number
    texts = [re.sub(r"\b[0-9a-f]{16,64}\b", "#", t) for t in _all_text(page)]
    bad = [t for t in texts if re.search(SCI, t)]
    assert not bad, [re.search(SCI, t).group(0) for t in bad]


def test_jobs_page_has_each_jobs_verdict_and_no_scientific_notation(browser, pages_server):
    with visit(browser, pages_server.url + "/jobs?limit=1000") as v:
        twin = json_twin(v.page, "/jobs?limit=1000")
        heads = v.page.eval_on_selector_all("#job-list thead th", "els => els.map(e => e.textContent.trim())")
        assert heads[-2:] == ["verdict", "weather"]
        cells = v.page.eval_on_selector_all("#job-list tbody td.verdict-cell", "els => els.map(e => e.textContent.trim())")
        rows = twin["list"]["rows"]
        assert len(cells) == len(rows) == twin["list"]["total"]
        assert cells == [r["verdict"] or "re-ingest to see the verdict" for r in rows]
        assert all(r["verdict"] for r in rows)  # every job ingested by this version has one
        assert any(c.startswith("I/O is 94.0 % of the run time; stripe the 49.3 GiB file") for c in cells)
        _no_sci(v.page)
        assert v.errors == []


def test_job_page_opens_with_the_verdict_and_ranks_findings_by_cost(browser, pages_server, cli, tmp_path):
    rep = json.loads(cli("job", str(IMBALANCED), "--json", home=tmp_path, check=True).stdout)
    jobs = _api(pages_server, "/jobs?limit=1000")  # only to find the job: no page to draw
    job_id = next(r["id"] for r in jobs["list"]["rows"] if r["nprocs"] == 496)
    path = f"/job?id={job_id[:16]}"
    with visit(browser, pages_server.url + path) as v:
        page = v.page
        twin = json_twin(page, path)
        # first after the title: `why`'s verdict and budget (docs/why.md), then the code's verdict, before the tables
        first = page.evaluate("""() => { const h = document.querySelector('main h1') || document.querySelector('h1');
            let e = h.nextElementSibling; while (e && e.tagName === 'P' && e.classList.contains('more')) e = e.nextElementSibling;
            return e && e.id; }""")
        assert first == "why"
        assert page.inner_text("#why-verdict") == "My code or the system? " + twin["why"]["verdict"]
        assert page.inner_text("#job-verdict") == "Your code (its Darshan log): " + rep["verdict"]
        assert rep["verdict"].startswith("I/O is 94.0 % of the run time; stripe the 49.3 GiB file")
        # findings: the CLI's HIGH/WARN findings in the CLI's order, costs shown and descending
        rows = page.eval_on_selector_all("#job-findings tbody tr", """els => els.map(tr =>
            Array.from(tr.querySelectorAll('td')).map(td => td.textContent.trim()))""")
        want = [f for f in rep["findings"] if f["level"] in ("HIGH", "WARN")]
        assert [r[1] for r in rows] == [f["code"] for f in want]
        assert [r[1] for r in rows] == [f["code"] for f in twin["findings"]]
        costs = [f["cost_s"] for f in twin["findings"]]
        assert costs == sorted(costs, reverse=True) and costs[0] > 0
        for r, f in zip(rows, want):
            if f["cost_s"]:
                assert r[3] == f"{format_seconds(f['cost_s'])} ({100 * f['cost_share']:.1f}%)"
            else:
                assert r[3] == "–"
        assert rows[0][1] == "L01" and "lfs setstripe" in rows[0][2]
        # the File systems table shows the Lustre striping as the CLI does
        lustre = page.eval_on_selector_all("table.mounts tbody td.lustre", "els => els.map(e => e.textContent.trim())")
        assert lustre[0] == "stripe count 1 × 1.0 MiB, 12 OSTs used"
        _no_sci(page)
        assert v.errors == []


#: An executable name that breaks HTML if the motif is not escaped (no '/' or space: it is the motif's exe).
HOSTILE_EXE = """<img_src=x_onerror="window.__xss=5">'q'&"x"""
#: 12 earlier jobs whose competitor takes k/8 of their share (coverage factor 8/(8+k)) and whose performance
#: follows it; the last one shares with a competitor writing twice its bytes (coverage factor 1/3).
HISTORY_K = list(range(12))


@pytest.fixture(scope="module")
def umami_server(tmp_path_factory):
    from ioweather.config import Settings
    from ioweather.store import open_store
    from ioweather.web.app import create_app
    from web_server import Server

    home = tmp_path_factory.mktemp("umami") / "home"
    settings = Settings.resolve(home)
    store = open_store(settings)
    competitors = [PER_SAMPLE * k // 8 for k in HISTORY_K] + [2 * PER_SAMPLE]
    perfs = [400.0 * 8 / (8 + k) for k in HISTORY_K] + [400.0 / 3]
    hashes = plant_motif(settings, store, competitors, perfs, exe=f"/apps/{HOSTILE_EXE} -w")
    store.dispose()
    with Server(create_app(settings, warm=False)) as s:
        s.home, s.hashes = home, hashes
        yield s


def _weather_cells(page) -> dict[str, str]:
    ids = page.eval_on_selector_all("#job-list tbody tr td:first-child a", "els => els.map(e => e.getAttribute('href'))")
    cells = page.eval_on_selector_all("#job-list tbody td.weather-cell", "els => els.map(e => e.textContent.trim())")
    return {i.split("=")[1]: c for i, c in zip(ids, cells)}


def test_job_page_climate_vs_weather_panel(browser, umami_server, cli, artifacts_dir):
    last = umami_server.hashes[-1]
    with visit(browser, umami_server.url + "/jobs?limit=1000") as v:
        before = _weather_cells(v.page)
        assert len(before) == 13 and set(before.values()) == {"open the job to compute it"}  # nothing computed yet
    # the CLI in its own process on the same store: the reference for the verdict and the numbers
    ref = json.loads(cli("umami", last[:16], "--json", home=umami_server.home, check=True).stdout)
    assert ref["verdict"] == ("the system: bandwidth contention (coverage factor bw 0.33, bottom quartile, "
                              "r = 1.00 with performance)")
    path = f"/job?id={last[:16]}"
    with visit(browser, umami_server.url + path) as v:
        page = v.page
        assert_renders_with_data(v, artifacts_dir, "job-umami")
        twin = json_twin(page, path)["umami"]
        assert twin["available"] and twin["verdict"] == ref["verdict"] and twin["history_jobs"] == 12
        # the two verdicts, each saying whose it is, the Darshan one first
        order = page.eval_on_selector_all("p.verdict", "els => els.map(e => e.id)")
        assert order[:2] == ["job-verdict", "weather-verdict"]
        assert page.inner_text("#weather-verdict") == "The system (file-system weather): " + ref["verdict"]
        assert page.inner_text("#job-verdict") == "Your code (its Darshan log): " + DARSHAN_VERDICT
        # hostile executable: shown as text in the motif, nothing ran
        assert page.inner_text("#umami-meta .motif") == f"{HOSTILE_EXE} / 2 nodes / write / scratch"
        assert page.evaluate("window.__xss") is None
        # the table: the planted coverage factor, its quartile, r and p without an exponent
        rows = page.eval_on_selector_all("#umami-metrics tbody tr", """els => els.map(tr =>
            Array.from(tr.querySelectorAll('td')).map(td => td.textContent.trim()))""")
        by = {r[0]: r for r in rows}
        assert [r[0] for r in rows] == [m["label"] for m in ref["metrics"]]
        cf = by["coverage_factor_bw"]
        assert cf[1:5] == [f"{1 / 3:.3f}", "bottom quartile", "1.00", "< 0.0001"]
        assert by["probe_slowdown"][1] == "no data"
        # one series and one box per metric with a history; the job's value dashed in its quartile colour
        plots = page.evaluate("""() => Array.from(document.querySelectorAll('#umami-panel .js-plotly-plot')).map(el =>
            ({id: el.id, n: (el.data[0].y || el.data[0].q1).length, shapes: el.layout.shapes || []}))""")
        with_history = [i for i, m in enumerate(ref["metrics"]) if m["box"]["n"]]
        assert sorted(p["id"] for p in plots) == sorted([f"umami-s{i}" for i in with_history]
                                                        + [f"umami-b{i}" for i in with_history])
        i = next(i for i, m in enumerate(ref["metrics"]) if m["metric"] == "coverage_factor_bw")
        series = next(p for p in plots if p["id"] == f"umami-s{i}")
        assert series["n"] == 12
        (line,) = series["shapes"]
        assert line["y0"] == pytest.approx(1 / 3) and line["line"] == {"dash": "dash", "width": 2, "color": "#d62728"}
        _no_sci(page)
    with visit(browser, umami_server.url + "/jobs?limit=1000") as v:
        after = _weather_cells(v.page)
        twin = {r["id"][:16]: r["weather_verdict"] for r in json_twin(v.page, "/jobs?limit=1000")["list"]["rows"]}
    # opening one job ran the incremental step of its motif: every job of the motif has its verdict
    # stored and shown now (issue 13: `jobs ingest` runs the same step, so a list never waits for a click)
    assert after[last[:16]] == twin[last[:16]] == ref["verdict"]
    assert after == twin and "open the job to compute it" not in after.values()


def test_job_page_without_telemetry_says_why(browser, pages_server):
    """The real logs' windows (2017-2020) have no telemetry in the pages' store: no panel, a reason, no plot."""
    job_id = _api(pages_server, "/jobs?limit=1")["list"]["rows"][0]["id"]
    with visit(browser, pages_server.url + f"/job?id={job_id[:16]}") as v:
        twin = json_twin(v.page, f"/job?id={job_id[:16]}")["umami"]
        assert twin["available"] is False and twin["reason"]
        assert v.page.inner_text("#weather-verdict") == ("The system (file-system weather): no weather verdict: "
                                                         + twin["reason"])
        assert v.page.locator("#umami-panel .js-plotly-plot").count() == 0
        assert v.errors == []
