"""The Jobs page and the job page in Chromium, as a scientist reads them: the verdict first, findings
ranked by the time they cost, the Lustre striping, and no number in scientific notation anywhere on
the page (tables, Plotly axes and hover-free text alike)."""

from __future__ import annotations

import json
import re

import pytest

from browser import json_twin, visit
from darshan_support import TESTDATA_LOGS
from ioweather.units import format_seconds
from web_pages_data import pages_home, pages_server  # noqa: F401  (fixtures)

#: a number as Python or JavaScript write it in scientific notation (5.25e+05, 1e-05)
SCI = r"\d(?:\.\d+)?[eE][+-]?\d"
IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"

pytestmark = pytest.mark.browser


def _all_text(page) -> list[str]:
    """What a reader sees: the body's text and every SVG text (Plotly's tick labels, legends)."""
    return [page.inner_text("body")] + page.eval_on_selector_all("svg text", "els => els.map(e => e.textContent)")


def _no_sci(page) -> None:
    # a job's id is a hex hash ("...9e0..."): not a number
    texts = [re.sub(r"\b[0-9a-f]{16,64}\b", "#", t) for t in _all_text(page)]
    bad = [t for t in texts if re.search(SCI, t)]
    assert not bad, [re.search(SCI, t).group(0) for t in bad]


def test_jobs_page_has_each_jobs_verdict_and_no_scientific_notation(browser, pages_server):
    with visit(browser, pages_server.url + "/jobs?limit=1000") as v:
        twin = json_twin(v.page, "/jobs?limit=1000")
        heads = v.page.eval_on_selector_all("#job-list thead th", "els => els.map(e => e.textContent.trim())")
        assert heads[-1] == "verdict"
        cells = v.page.eval_on_selector_all("#job-list tbody td.verdict-cell", "els => els.map(e => e.textContent.trim())")
        rows = twin["list"]["rows"]
        assert len(cells) == len(rows) == twin["list"]["total"]
        assert cells == [r["verdict"] or "re-ingest to see the verdict" for r in rows]
        assert all(r["verdict"] for r in rows)  # every job ingested by this version has one
        assert any(c.startswith("I/O is 49.4 % of the run time; stripe the 49.3 GiB file") for c in cells)
        _no_sci(v.page)
        assert v.errors == []


def test_job_page_opens_with_the_verdict_and_ranks_findings_by_cost(browser, pages_server, cli, tmp_path):
    rep = json.loads(cli("job", str(IMBALANCED), "--json", home=tmp_path, check=True).stdout)
    with visit(browser, pages_server.url + "/jobs?limit=1000") as v:
        jobs = json_twin(v.page, "/jobs?limit=1000")
    job_id = next(r["id"] for r in jobs["list"]["rows"] if r["nprocs"] == 496)
    path = f"/job?id={job_id[:16]}"
    with visit(browser, pages_server.url + path) as v:
        page = v.page
        twin = json_twin(page, path)
        # first after the title: the verdict, before every table
        first = page.evaluate("""() => { const h = document.querySelector('main h1') || document.querySelector('h1');
            let e = h.nextElementSibling; while (e && e.tagName === 'P' && e.classList.contains('more')) e = e.nextElementSibling;
            return e && e.id; }""")
        assert first == "job-verdict"
        assert page.inner_text("#job-verdict") == "Verdict: " + rep["verdict"]
        assert rep["verdict"].startswith("I/O is 49.4 % of the run time; stripe the 49.3 GiB file")
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
