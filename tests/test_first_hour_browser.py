"""Issue 20 in headless Chromium: what a new admin sees a minute after `make watch` starts and an hour
later (items 1, 6, 7, 8, 9): the baseline is learning, /metrics has every series at zero, the timeline
starts at the first sample with SI-prefixed seconds, the history has a no-data colour and says it is
learning, the sparkline has a legend and no mode bar over the threshold labels."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from browser import assert_renders_with_data, json_twin, visit
from first_hour_data import TARGET, first_hour, first_minute
from web_server import Server, frozen_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]
T = quote(TARGET)


@pytest.fixture(scope="module")
def minute(tmp_path_factory):
    home = tmp_path_factory.mktemp("minute") / "home"
    with Server(frozen_app(home, first_minute(home))) as s:
        yield s


@pytest.fixture(scope="module")
def hour(tmp_path_factory):
    home = tmp_path_factory.mktemp("hour") / "home"
    with Server(frozen_app(home, first_hour(home))) as s:
        yield s


@pytest.mark.parametrize("when", ["minute", "hour"])
def test_status_says_learning_the_baseline(browser, request, artifacts_dir, when):
    srv = request.getfixturevalue(when)
    with visit(browser, srv.url + "/status") as v:
        assert_renders_with_data(v, artifacts_dir, f"first-{when}-status")
        state = v.page.locator("[data-testid=state]").inner_text()
        assert state == {"minute": "… learning the baseline (1 min of 30 d)",
                         "hour": "… learning the baseline (1 h of 30 d)"}[when]  # the badge words it as the text does
        twin = json_twin(v.page, "/status")
        assert [o["slowdown"] for o in twin["targets"][0]["ops"]] == [None] * 6
        assert v.page.locator("table.ops tbody td:nth-child(5)").all_inner_texts() == ["–"] * 6


def test_sparkline_has_a_legend_and_no_mode_bar_over_the_threshold_labels(browser, hour):
    with visit(browser, hour.url + "/status") as v:
        p = v.page
        legend = p.locator("#spark-0 .legend .legendtext").all_text_contents()
        # an hour of history: every op's baseline learns, and the legend says so (issue 28 item 4)
        assert legend == [op + " (learning)" for op in ("data_write", "data_read", "md_create", "md_stat",
                                                         "md_read", "md_delete")]
        for plot in ("#spark-0", "#climate-0"):
            p.hover(plot)
            assert p.locator(f"{plot} .modebar").count() == 0, plot
            assert "severe 10×" in p.locator(f"{plot} .annotation-text").all_text_contents()


def test_metrics_right_after_start_has_every_series_at_zero(browser, minute):
    with visit(browser, minute.url + "/metrics", plots_ready=False) as v:
        text = v.page.locator("body").inner_text()
    counts = re.findall(r'^ioweather_probe_duration_seconds_count\{op="(\w+)",target="[^"]+"\} (\S+)$', text, re.M)
    assert sorted(counts) == sorted((op, "0.0") for op in
                                    ("data_write", "data_read", "md_create", "md_stat", "md_read", "md_delete"))
    assert len(re.findall(r"^ioweather_probe_timeouts_total\{.*\} 0\.0$", text, re.M)) == 6
    assert "ioweather_slowdown_ratio{" not in text  # learning: no slowdown exported
    assert len(re.findall(r"^ioweather_baseline_learning\{.*\} 1\.0$", text, re.M)) == 6


def test_timeline_starts_at_the_first_sample_with_si_seconds(browser, minute, artifacts_dir):
    with visit(browser, minute.url + f"/timeline?target={T}") as v:
        assert_renders_with_data(v, artifacts_dir, "first-minute-timeline")
        twin = json_twin(v.page, f"/timeline?target={T}")
        first = min(v.page.evaluate("(t) => Math.min(...t.map(Date.parse))", twin["samples"][op]["time"])
                    for op in twin["samples"])
        assert first > v.page.evaluate("(s) => Date.parse(s)", twin["since"]) + 3500 * 1000  # 1 min of an hour
        layout_x0 = v.page.evaluate("""() => { const x = document.getElementById('timeline').layout.xaxis.range[0];
                                              return typeof x === 'number' ? x : Date.parse(x.replace(' ', 'T') + 'Z'); }""")
        assert layout_x0 == first
        # No interval line starts before the first sample.
        xs = v.page.evaluate("""() => document.getElementById('timeline').data.filter(t => t.yaxis !== 'y')
                                   .flatMap(t => t.x)""")
        assert xs and min(xs) >= first
        ticks = v.page.locator("#timeline .ytick text").all_text_contents()
        assert ticks and all(re.fullmatch(r"\d+(\.\d+)?[munµμ]?s|\d+×", t) for t in ticks), ticks
        assert "1ms" in ticks and not [t for t in ticks if t.startswith("0.")]


def test_history_has_a_no_data_colour_a_legend_and_says_learning(browser, hour, artifacts_dir):
    with visit(browser, hour.url + f"/history?target={T}") as v:
        assert_renders_with_data(v, artifacts_dir, "first-hour-history")
        p = v.page
        bg = p.evaluate("document.getElementById('heatmap-0').layout.plot_bgcolor")
        scale = p.evaluate("document.getElementById('heatmap-0').data[0].colorscale.map(c => c[1])")
        assert bg == "#bdbdbd" and bg not in scale and "#f7f7f7" not in scale
        assert "no data" in p.locator("#history-legend").inner_text()
        twin = json_twin(p, f"/history?target={T}")
        # An hour of history judges nothing (issue 28 item 4): it said "Nothing is slow" of a 1x by construction.
        assert twin["targets"][0]["worst"] == []
        assert p.locator("[data-testid=nothing-slow]").count() == 0
        assert p.locator("[data-testid=learning]").inner_text().endswith("intervals are drawn grey and not judged.")
        # The axis starts at the first interval with data, not a week of grey before it.
        x0 = p.evaluate("document.getElementById('heatmap-0').layout.xaxis.range[0]")
        assert p.evaluate("(x) => typeof x === 'number' ? x : Date.parse(x.replace(' ', 'T') + 'Z')", x0) > \
            p.evaluate("(s) => Date.parse(s)", twin["since"]) + 6 * 86400 * 1000


def test_history_with_a_slow_interval_shows_no_nothing_is_slow(browser, server_slow):
    with visit(browser, server_slow.url + f"/history?target={T}&interval=10m&since=2h") as v:
        assert v.page.locator("[data-testid=nothing-slow]").count() == 0
        assert "severely degraded" in v.page.locator("table.intervals").inner_text()


@pytest.fixture(scope="module")
def server_slow(tmp_path_factory):
    from ioweather.config import Settings
    from ioweather.store import open_store
    from first_hour_data import HOUR, MINUTE, T0_NS
    from web_synthetic import Episode, add_target

    home = tmp_path_factory.mktemp("slow") / "home"
    store = open_store(Settings.resolve(home))
    add_target(store, TARGET, T0_NS - 2 * HOUR, T0_NS, period_s=5, seed=3, error_rate=0, timeout_rate=0,
               episodes=[Episode(T0_NS - 30 * MINUTE, T0_NS - 10 * MINUTE, 20.0)])
    store.dispose()
    # `--baseline 2h`: two hours of samples are a learned baseline of that window, so the page judges them
    with Server(frozen_app(home, T0_NS, baseline_s=2 * 3600.0)) as s:
        yield s
