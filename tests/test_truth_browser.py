"""Issue 28 in headless Chromium: what a page draws is what its /api twin says.

The history heatmap draws each interval from its start to its end (it used to centre each cell on
its start, half an interval early)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from browser import assert_renders_with_data, json_twin, visit
from first_hour_data import HOUR, MINUTE, T0_NS, TARGET, first_hour
from web_server import Server, frozen_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
T = quote(TARGET)

# Plotly's own numbers for what it drew: the cells' edges (calcdata, one more than the columns) and the
# x-axis range it chose, both in ms since the epoch.
DRAWN = """() => { const el = document.getElementById('heatmap-0'); const ax = el._fullLayout.xaxis;
  return {edges: Array.from(el.calcdata[0][0].x), range: ax.range.map(v => ax.r2l(v))}; }"""


@pytest.fixture(scope="module")
def hour(tmp_path_factory):
    home = tmp_path_factory.mktemp("hour") / "home"
    # `--baseline 1h`: the hour is a learned baseline of that window, so the page judges its cells
    with Server(frozen_app(home, first_hour(home), baseline_s=3600.0)) as s:
        yield s


def test_history_cells_span_their_interval(browser, hour, artifacts_dir):
    path = f"/history?target={T}&since=1h&interval=10m"
    with visit(browser, hour.url + path) as v:
        assert_renders_with_data(v, artifacts_dir, "history-cells")
        twin = json_twin(v.page, path)
        drawn = v.page.evaluate(DRAWN)
    starts = [_ms(t) for t in twin["time"]]
    step = twin["interval_s"] * 1000
    assert step == 600_000 and len(starts) == 6
    assert drawn["edges"] == starts + [starts[-1] + step]
    # The window is 11:00-12:00 and has data throughout: the axis is that hour, not 10:55-11:55.
    assert drawn["range"] == [(T0_NS - HOUR) // 10**6, T0_NS // 10**6]
    # md ops were 4x slower from 11:35 to 11:40: the worst cell is the one drawn from 11:30 to 11:40.
    worst = twin["targets"][0]["worst"][0]
    c = starts.index(_ms(worst["interval_start"]))
    assert worst["op"].startswith("md_") and worst["slowdown"] > 2
    assert drawn["edges"][c] == (T0_NS - 30 * MINUTE) // 10**6
    assert drawn["edges"][c + 1] == (T0_NS - 20 * MINUTE) // 10**6


def _ms(iso: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
