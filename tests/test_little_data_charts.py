"""issue 30: little data drawn honestly, in headless Chromium. A store as a new user has it after a first
try: ONE benchmark run of the real fio (the histogram drew seven ticks all reading "340ms" and 0.2, 0.4, ...
runs), ONE `lfs df` snapshot (one dot on a 30-day axis), and telemetry in which nothing moved (a colour bar
0.0/0.0/0.0 and a -1…1 rate axis). On every page: an axis's tick labels are all different, a count axis
has whole numbers only, and no rate axis goes below 0."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

from browser import screenshot, visit
from ioweather.config import Settings
from ioweather.units import format_seconds

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (scripts/install-system-deps.sh)")]

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z
DF = f"""BEGIN {T0}
UUID                   1K-blocks        Used   Available Use% Mounted on
one-OST0000_UUID       1000000      250000      750000  25% /one[OST:0]
one-OST0001_UUID       1000000      650000      350000  65% /one[OST:1]
"""

# Every axis of every plot: its rendered tick labels, and the range Plotly settled on.
AXES = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(el =>
  Object.keys(el._fullLayout).filter(k => /^[xy]axis\\d*$/.test(k)).map(k => {
    const a = el._fullLayout[k];
    const ticks = Array.from(el.querySelectorAll('.' + a._id + 'tick text')).map(t => t.textContent);
    return {plot: el.id, axis: k, type: a.type, range: a.range, ticks: ticks};
  }))"""


@pytest.fixture(scope="module")
def little_home(tmp_path_factory):
    from conftest import run_cli
    from ioweather.services.bench import runs as svc
    from ioweather.store import open_store

    base = tmp_path_factory.mktemp("little")
    home, work = base / "home", base / "dir"
    work.mkdir()
    store = open_store(Settings.resolve(home))
    svc.run(store, ["fpp-write"], work, size=256 * 1024, tasks=1, fs="scratch")
    store.dispose()
    (base / "df.txt").write_text(DF)
    run_cli("import", "lfsdf", str(base / "df.txt"), "--fs", "one", home=home, check=True)
    lines = ["time,target,metric,value"] + [f"{T0 + 60 * m},still-OST000{k},{metric},0" for m in range(60)
                                            for k in range(2) for metric in ("read_bytes", "write_bytes")]
    lines += [f"{T0 + 60 * m},still-MDT0000,md_open,0" for m in range(60)]
    (base / "still.csv").write_text("\n".join(lines) + "\n")
    run_cli("import", "csv", str(base / "still.csv"), "--fs", "still", "--interval", "60s", home=home, check=True)
    return home


@pytest.fixture(scope="module")
def srv(little_home):
    from web_server import Server, frozen_app

    with Server(frozen_app(little_home, time.time_ns())) as s:
        yield s


WINDOW = f"since={T0 - 600}&until={T0 + 4200}"
PAGES = [("bench", "/bench"), ("capacity", f"/capacity?fs=one&since={T0 - 86400}&until={T0 + 3600}"),
         ("servers", f"/servers?fs=still&{WINDOW}"),
         ("servers-target", f"/servers?fs=still&{WINDOW}&target=still-OST0000"),
         ("metadata", f"/metadata?fs=still&{WINDOW}")]


def axes_of(browser, url, artifacts_dir, name):
    with visit(browser, url) as v:
        screenshot(v.page, artifacts_dir, f"little-{name}")
        assert v.response.status == 200 and v.errors == []
        return v.page.evaluate(AXES), v.page


@pytest.mark.parametrize("name,path", PAGES, ids=[p[0] for p in PAGES])
def test_ticks_are_distinct_and_rates_never_negative(browser, srv, artifacts_dir, name, path):
    axes, _ = axes_of(browser, srv.url + path, artifacts_dir, name)
    assert axes
    for a in axes:
        shown = [t for t in a["ticks"] if t]
        assert len(shown) == len(set(shown)), a  # before: ["340ms"] * 7 on the bench histogram
        if a["type"] == "linear" and a["axis"].startswith("y"):
            assert a["range"][0] >= 0, a         # before: -1…1 MiB/s with no traffic


def test_one_run_is_a_labelled_point_on_whole_runs(browser, srv, artifacts_dir):
    with visit(browser, srv.url + "/bench") as v:
        screenshot(v.page, artifacts_dir, "little-bench-histogram")
        h = v.page.evaluate("""() => { const el = document.getElementById('bench-histogram');
            return {x: el.data[0].x, y: el.data[0].y, text: el.data[0].text, xr: el._fullLayout.xaxis.range,
                    yticks: Array.from(el.querySelectorAll('.ytick text')).map(t => t.textContent),
                    drawn: Array.from(el.querySelectorAll('.textpoint text')).map(t => t.textContent)}; }""")
        twin = v.page.evaluate("fetch('/api/bench').then(r => r.json())")
    d = twin["histogram"]["edges_s"][0]
    assert h["x"] == [d] and h["y"] == [1]
    assert h["drawn"] == [f"{format_seconds(d)} (one run)"]
    assert h["xr"][0] <= 0 and h["xr"][1] >= 1.5 * d  # the axis reaches well beyond the one value
    assert all(re.fullmatch(r"\d+", t) for t in h["yticks"]), h["yticks"]  # whole runs


def test_one_snapshot_is_a_labelled_point_on_its_own_hours(browser, srv, artifacts_dir):
    with visit(browser, srv.url + PAGES[1][1]) as v:
        c = v.page.evaluate("""() => { const el = document.getElementById('capacity-fullness');
            const r = el._fullLayout.xaxis.range.map(t => Date.parse(t.replace(' ', 'T') + 'Z'));
            return {span_h: (r[1] - r[0]) / 3600e3,
                    drawn: Array.from(el.querySelectorAll('.textpoint text')).map(t => t.textContent)}; }""")
    assert c["span_h"] <= 2.01  # before: 30 days around one point
    assert c["drawn"] == ["file system 45.0% used"]


def test_no_traffic_shows_no_scale(browser, srv, artifacts_dir):
    with visit(browser, srv.url + PAGES[2][1]) as v:
        bars = v.page.evaluate("() => document.querySelectorAll('#servers-heat-read .colorbar').length")
        notes = v.page.evaluate("() => Array.from(document.querySelectorAll('#servers-heat-read .annotation-text'))"
                                ".map(t => t.textContent)")
    assert bars == 0 and notes == ["no read traffic in this window"]  # before: a scale 0.0 / 0.0 / 0.0
    with visit(browser, srv.url + PAGES[4][1]) as v:
        screenshot(v.page, artifacts_dir, "little-metadata")
        notes = v.page.evaluate("() => Array.from(document.querySelectorAll('#md-rates .annotation-text'))"
                                ".map(t => t.textContent)")
        y = v.page.evaluate("() => document.getElementById('md-rates')._fullLayout.yaxis.range")
    assert notes == ["no metadata operations in this window"] and y == [0, 1]  # before: -1…1 operations/s
