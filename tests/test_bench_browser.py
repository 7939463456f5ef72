"""The Benchmarks page in headless Chromium over runs of the real fio: the summary table and both charts
show what a direct SQL read of the store says, nothing goes to the console, a motif named to break HTML
and JavaScript is shown as text, and a click on a run opens that run."""

from __future__ import annotations

import shutil
import time
from urllib.parse import quote

import pytest

from bench_data import NASTY, make_bench_home, sql_series
from browser import assert_renders_with_data, json_twin, screenshot, visit
from ioweather.units import format_bytes, format_seconds
from web_server import Server, frozen_app

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (scripts/install-system-deps.sh)")]


@pytest.fixture(scope="module")
def bench_home(tmp_path_factory):
    return make_bench_home(tmp_path_factory.mktemp("bench-browser"))


@pytest.fixture(scope="module")
def srv(bench_home):
    with Server(frozen_app(bench_home, time.time_ns())) as s:
        yield s


def expected_cells(key, runs) -> list[str]:
    durs = [r[2] for r in runs]
    bws = [r[3] for r in runs]
    mean, best = sum(durs) / len(durs), max(bws)
    return [key[0], key[1], key[2], f"{len(runs):,}", format_seconds(min(durs)), format_seconds(mean),
            f"{mean / min(durs):.2f}×", f"{format_bytes(best)}/s", f"{100 * bws[-1] / best:.1f}%", "no"]


def test_table_and_charts_show_the_stored_runs(browser, srv, bench_home, artifacts_dir):
    series = sql_series(bench_home)
    assert {k[0] for k in series} == {"fpp-write", "fpp-read", NASTY}
    assert [len(v) for k, v in sorted(series.items())] == [2, 3, 3]  # NASTY ("<") sorts first
    for key in sorted(series):
        path = f"/bench?motif={quote(key[0])}&direction={key[1]}&fs={key[2]}"
        with visit(browser, srv.url + path) as v:
            name = key[0] if key[0] != NASTY else "nasty"
            assert_renders_with_data(v, artifacts_dir, f"bench-{name}-{key[1]}")
            p = v.page
            rows = p.locator("#bench-summary tbody tr")
            cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count())]
            assert cells == [expected_cells(k, series[k]) for k in sorted(series)]
            assert p.locator("#bench-summary tr.chosen td").first.inner_text() == key[0]
            assert p.locator("#bench-series").inner_text() == f"{key[0]} · {key[1]} · {key[2]}"

            runs = series[key]
            hist = p.evaluate("() => { const el = document.getElementById('bench-histogram');"
                              " return {y: el.data[0].y, x0: el.layout.shapes[0].x0}; }")
            assert sum(hist["y"]) == len(runs) and hist["x0"] == min(r[2] for r in runs)
            frac = p.evaluate("() => { const d = document.getElementById('bench-fraction').data[0];"
                              " return {x: d.x, y: d.y, ids: d.customdata}; }")
            best = max(r[3] for r in runs)
            assert frac["y"] == pytest.approx([r[3] / best for r in runs], rel=1e-12)
            assert frac["ids"] == [r[1] for r in runs]
            assert p.locator("#bench-run").inner_text() == runs[-1][1]  # the newest run by default
            counts = json_twin(p, path)["histogram"]["counts"]
            # runs of one duration are one labelled point (issue 30), else the bars are the counts
            assert hist["y"] == (counts if sum(c > 0 for c in counts) > 1 else [sum(counts)])
            assert v.errors == []


def test_a_hostile_motif_name_is_text(browser, srv, artifacts_dir):
    with visit(browser, srv.url + f"/bench?motif={quote(NASTY)}&direction=write&fs=scratch") as v:
        p = v.page
        screenshot(p, artifacts_dir, "bench-hostile")
        assert p.evaluate("window.__xss") is None
        assert p.locator("img[src=x]").count() == 0
        assert p.locator("#bench-series").inner_text().startswith(NASTY)
        link = p.locator("#bench-summary a", has_text="window.__xss=1")
        assert link.inner_text() == NASTY
        link.click()  # its own link, with the name in the query string, opens the same series
        p.wait_for_load_state()
        assert p.locator("#bench-series").inner_text().startswith(NASTY)
        assert p.evaluate("window.__xss") is None
        assert v.errors == []


def test_a_click_on_a_run_opens_it(browser, srv, bench_home):
    runs = sql_series(bench_home)[("fpp-write", "write", "scratch")]
    with visit(browser, srv.url + "/bench?motif=fpp-write&direction=write&fs=scratch") as v:
        p = v.page
        box = p.locator("#bench-fraction .point").first.bounding_box()
        p.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        p.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        p.wait_for_url("**run=*")
        assert p.locator("#bench-run").inner_text() == runs[0][1]  # the first point: the oldest run
        assert v.errors == []
