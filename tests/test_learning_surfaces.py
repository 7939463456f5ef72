"""Issue 28 item 4: every surface that judges a slowdown says "learning" while a target's baseline learns,
as `slowdown --json`, the Status card, /metrics and `slowdown --check` do, and judges a learned target
as before.

Two targets end now (the CLI judges "now" by its own clock): `young`, whose samples start 1 h ago, with
its md ops 4x slower from 25 to 20 minutes ago (judged, that would be "severely degraded"); `old`, 30 days
every 2 minutes, its data ops 5x slower from 3 h to 2 h ago."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.web.app import create_app
from ioweather.web.context import WebConfig, WebContext
from web_server import Server, api
from web_synthetic import Episode, add_target
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

MIN, H, DAY = 60 * 10**9, 3600 * 10**9, 86400 * 10**9
STEP = 10 * MIN
MD = ("md_create", "md_stat", "md_read", "md_delete")


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ns(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1e9)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("learning") / "home"
    t0 = time.time_ns() // 10**9 * 10**9
    store = open_store(Settings.resolve(home))
    add_target(store, "young", t0 - H, t0, period_s=2, seed=4, error_rate=0, timeout_rate=0,
               episodes=[Episode(t0 - 25 * MIN, t0 - 20 * MIN, 4.0, MD)])
    add_target(store, "old", t0 - 30 * DAY, t0, period_s=120, seed=5, error_rate=0, timeout_rate=0,
               episodes=[Episode(t0 - 3 * H, t0 - 2 * H, 5.0, ("data_write", "data_read"))])
    store.dispose()
    return home, t0


@pytest.fixture(scope="module")
def server(home):
    path, t0 = home
    ctx = WebContext(Settings.resolve(path), WebConfig())
    ctx.cache.clock = lambda: t0  # the page's "now" is the data's end
    with Server(create_app(ctx.settings, ctx=ctx)) as s:
        yield s


def _window(t0: int, span: int) -> tuple[int, int]:
    """Whole 10-minute intervals (the command has no partial ones) of the last `span` ns."""
    return -(-(t0 - span) // STEP) * STEP, t0 // STEP * STEP


def _slowdown_rows(cli, home, target: str, since: int, until: int) -> list[dict]:
    return json.loads(cli("slowdown", "--target", target, "--interval", "10m", "--stat", "median", "--expected",
                          "same", "--since", _iso(since), "--until", _iso(until), "--json", home=home,
                          check=True).stdout)


def _history(server, target: str, since: int, until: int) -> dict:
    code, doc = api(server, f"/api/history?target={target}&since={_iso(since)}&until={_iso(until)}&interval=10m")
    assert code == 200, doc
    return doc


def test_young_target_is_learning_cell_for_cell_on_history_and_slowdown(server, home, cli):
    path, t0 = home
    since, until = _window(t0, H)
    rows = _slowdown_rows(cli, path, "young", since, until)
    assert rows and {r["state"] for r in rows} == {"learning"} and {r["slowdown"] for r in rows} == {None}
    doc = _history(server, "young", since, until)
    (h,) = doc["targets"]
    assert h["learning"] == dict.fromkeys(doc["ops"], True)
    assert h["learning_reason"].startswith("learning the baseline (1 h of 30 d; slowdowns from 24 h")
    column = {_ns(t): c for c, t in enumerate(doc["time"])}
    # Every interval the command judges "learning" has its samples on the page and no slowdown.
    for r in rows:
        o, c = doc["ops"].index(r["op"]), column[_ns(r["interval_start"])]
        assert h["count"][o][c] == r["count"] > 0
        assert h["slowdown"][o][c] is None
    assert sum(map(sum, h["count"])) == sum(r["count"] for r in rows)
    assert [v for row in h["slowdown"] for v in row if v is not None] == []
    assert h["worst"] == []  # nothing judged, so nothing listed as slow (or as normal)
    # The Status card and the monitoring plugin say the same of the same target.
    code, st = api(server, "/api/status")
    assert {t["target"]: t["state"] for t in st["targets"]}["young"] == "learning"
    check = cli("slowdown", "--check", "--target", "young", home=path)
    assert check.returncode == 3 and "young learning the baseline" in check.stdout


def test_learned_target_is_judged_as_before(server, home, cli):
    path, t0 = home
    since, until = _window(t0, 6 * H)
    doc = _history(server, "old", since, until)
    (h,) = doc["targets"]
    assert h["learning"] == dict.fromkeys(doc["ops"], False) and h["learning_reason"] is None
    # The command's baseline is the 30 days before --until, the page's those before now: the same samples
    # but the last minutes, so the same states and slowdowns within a few percent.
    rows = _slowdown_rows(cli, path, "old", since, until)
    column = {_ns(t): c for c, t in enumerate(doc["time"])}
    assert len(rows) == 6 * (until - since) // STEP
    for r in rows:
        o, c = doc["ops"].index(r["op"]), column[_ns(r["interval_start"])]
        assert r["state"] != "learning"
        assert h["slowdown"][o][c] == pytest.approx(r["slowdown"], rel=0.05)
    # the episode 3 h to 2 h ago, degraded on both surfaces
    state = {(r["op"], _ns(r["interval_start"])): r["state"] for r in rows}
    assert [w["state"] for w in h["worst"]] == [state[w["op"], _ns(w["interval_start"])] for w in h["worst"]]
    worst = h["worst"][0]
    assert worst["op"] in ("data_read", "data_write") and worst["state"] == "degraded" and worst["slowdown"] > 3
    assert t0 - 4 * H < _ns(worst["interval_start"]) < t0 - 2 * H


@pytest.mark.browser
@pytest.mark.slow
def test_history_page_draws_learning_cells_grey_and_labelled(browser, server, home, artifacts_dir):
    from browser import assert_renders_with_data, json_twin, visit

    path = "/history?target=young&since=1h&interval=10m"
    with visit(browser, server.url + path) as v:
        assert_renders_with_data(v, artifacts_dir, "history-learning")
        p = v.page
        section = p.locator("section.history").inner_text()
        assert "learning the baseline (1 h of 30 d" in section
        assert "Nothing is slow" not in section and "normal" not in section
        assert p.locator("[data-testid=nothing-slow]").count() == 0
        assert "learning the baseline" in p.locator("#history-legend").inner_text()
        drawn = p.evaluate("""() => { const el = document.getElementById('heatmap-0');
          return {traces: el.data.map(d => ({meta: d.meta || null, z: d.z || null})),
                  labels: (el.layout.annotations || []).map(a => a.text)}; }""")
        (twin,) = json_twin(p, path)["targets"]
    judged, learning = drawn["traces"][0], next(t for t in drawn["traces"] if t["meta"] == "learning")
    assert all(v is None for row in judged["z"] for v in row)  # no colour of the slowdown scale
    # every interval with samples of every op is grey, and only those
    assert learning["z"] == [[1 if n else None for n in row] for row in twin["count"]]
    assert sum(map(sum, twin["count"])) > 0
    assert drawn["labels"].count("learning the baseline") == 6

    with visit(browser, server.url + "/history?target=old&since=6h&interval=10m") as v:
        section = v.page.locator("section.history").inner_text()
        assert "learning" not in section and "degraded" in section
        assert "learning" not in v.page.locator("#history-legend").inner_text()
        metas = v.page.evaluate("document.getElementById('heatmap-0').data.map(d => d.meta || null)")
        assert "learning" not in metas


@pytest.mark.browser
@pytest.mark.slow
def test_timeline_and_status_card_say_learning(browser, server, artifacts_dir):
    from browser import assert_renders_with_data, json_twin, visit

    path = "/timeline?target=young&since=1h&interval=10m"
    with visit(browser, server.url + path) as v:
        assert_renders_with_data(v, artifacts_dir, "timeline-learning")
        twin = json_twin(v.page, path)
        assert twin["learning"] == dict.fromkeys(twin["expected_s"], True)
        assert twin["intervals"] and {r["slowdown"] for r in twin["intervals"]} == {None}
        assert "learning the baseline (1 h of 30 d" in v.page.locator("[data-testid=learning]").inner_text()
        notes = v.page.evaluate("document.getElementById('timeline').layout.annotations.map(a => a.text)")
        assert "every op: learning the baseline, not judged" in notes
    with visit(browser, server.url + "/status") as v:
        cards = v.page.evaluate("""() => Array.from(document.querySelectorAll('[id^=spark-]')).map(el =>
          el.data.map(d => ({name: d.name, color: d.line.color})))""")
        twin = json_twin(v.page, "/status")
    by_target = {t["target"]: c for t, c in zip(twin["targets"], cards)}
    assert {d["name"] for d in by_target["young"]} == {o["op"] + " (learning)" for o in twin["targets"][0]["ops"]}
    assert {d["color"] for d in by_target["young"]} == {"#9e9e9e"}
    assert not [d for d in by_target["old"] if "learning" in d["name"] or d["color"] == "#9e9e9e"]
