"""Issue 28 item 2 on the probe and telemetry side: each page's question is one service function
returning a dataclass (Status, History, Timeline, Factors, Servers, Metadata, Capacity, Talkers), and
`/api/<slug>` is that object's `to_json()`, key for key, for the same window. Where a command answers
the same question its `--json` (run as a user runs it, in its own process) carries the same numbers:
`slowdown --check` the Status states, `slowdown --expected same` the History cells, `probe stats` the
Timeline's interval rows (computed from the raw samples, where the page reads rollups), `factors density
--from-store` the Factors analysis. Talkers are checked against the job_stats bytes written."""

from __future__ import annotations

import json
import time
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.encoding import to_json
from ioweather.services.telemetry import fsview
from ioweather.services.answers.factors import Factors, probe_factors
from ioweather.services.probe.history import History, history
from ioweather.services.probe import light_check
from ioweather.services.probe.slowdown import CheckTarget, IntervalRow, SlowdownRow
from ioweather.services.probe.status import BaselineInfo, Climate, OpStatus, Sparkline, Status, TargetStatus, status
from ioweather.store import probe as probe_store
from ioweather.services.probe.timeline import Timeline, timeline
from ioweather.store import open_store
from ioweather.store.telemetry_layout import write_rows
from ioweather.web.app import create_app
from ioweather.web.context import WebConfig, WebContext
from shared_stores import copy_home, pytokio_telemetry
from web_server import Server, api
from web_synthetic import Episode, add_target

pytestmark = pytest.mark.slow  # a CLI process per comparison

H, MIN, DAY = 3600 * 10**9, 60 * 10**9, 86400 * 10**9
LMT_SINCE, LMT_UNTIL = "2018-01-27T23:00:00Z", "2018-01-28T01:00:00Z"
#: Bytes each job wrote in the job_stats rows of the `jobs` file system, over two 60 s intervals.
JOB_BYTES = {"1001": (3 << 20, 4 << 20), "dd.4242": (0, 3 << 20), "idle.7": (0, 0)}
#: home-nfs's probe period: it is stale 10 periods after its last sample, and the commands compared with
#: the dashboard (whose clock stands still) run on the real clock, minutes later on a loaded machine.
PERIOD_S = 30


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ns(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1e9)


@pytest.fixture(scope="module")
def home(tmp_path_factory, testdata) -> tuple[Path, int]:
    """Probe samples ending now (the CLI judges "now" by its own clock): scratch, 30 days every 60 s with
    its data ops 5x slower in the hour that ended 2 h before the last full hour; home-nfs, 2 days every PERIOD_S, 25x slower for the last
    30 minutes. Telemetry: the LMT database, pytokio's lfs df and lctl dl -t, and job_stats rows."""
    home = copy_home(pytokio_telemetry(tmp_path_factory), tmp_path_factory.mktemp("typed") / "home")
    # after the imports, which take a while on a loaded machine: the probe data end now
    t0 = time.time_ns() // 10**9 * 10**9
    settings = Settings.resolve(home)
    store = open_store(settings)
    add_target(store, "scratch", t0 - 30 * DAY, t0, period_s=60, seed=1,
               # on hour boundaries: an hourly cell half inside the episode has a median anywhere from 1x to 5x
               episodes=[Episode(t0 // H * H - 3 * H, t0 // H * H - 2 * H, 5.0, ("data_write", "data_read"))])
    add_target(store, "home-nfs", t0 - 2 * DAY, t0, period_s=PERIOD_S, seed=2,
               episodes=[Episode(t0 - 30 * MIN, t0, 25.0)], error_rate=5e-3, timeout_rate=0)
    store.dispose()
    rows = [(t0 - (2 - i) * MIN, f"jobs-OST0000/{job}", "job_write_bytes", float(b[i]), 60.0)
            for job, b in JOB_BYTES.items() for i in range(2)]
    write_rows(settings, "jobs", pd.DataFrame(rows, columns=["time_ns", "target", "metric", "value", "interval_s"]))
    return home, t0


@pytest.fixture(scope="module")
def ctx(home) -> WebContext:
    """The dashboard's context with its clock stopped at the data's end: the tests call the services on it."""
    path, t0 = home
    c = WebContext(Settings.resolve(path), WebConfig())
    c.cache.clock = lambda: t0
    return c


@pytest.fixture(scope="module")
def server(ctx):
    with Server(create_app(ctx.settings, ctx=ctx)) as s:
        yield s


def _same_answer(server, path: str, answer, cls) -> dict:
    """`answer` is a `cls` and `path`'s JSON is its to_json(), declaring no key the dataclass does not."""
    assert type(answer) is cls
    code, doc = api(server, path)
    assert code == 200, doc
    doc.pop("span", None)  # the telemetry pages' hint: the window shown and the data's span (issue 38)
    assert list(doc) == [f.name for f in fields(cls)]
    assert doc == json.loads(to_json(answer.to_json()))
    return doc


def test_status(server, ctx, home, cli):
    cfg = ctx.config
    answer = status(ctx.cache, ctx.cache.targets(), warn=cfg.warn, crit=cfg.crit, baseline_s=cfg.baseline_s)
    doc = _same_answer(server, "/api/status", answer, Status)
    states = {t["target"]: t["state"] for t in doc["targets"]}
    assert states == {"scratch": "normal", "home-nfs": "severely degraded"}
    assert doc["overall"] == "severely degraded"
    # typed to the leaves: each card, op, climate, baseline and sparkline is its dataclass's fields, key for key
    assert list(doc["thresholds"]) == ["warn", "crit"]
    for card, typed in zip(doc["targets"], answer.targets):
        assert type(typed) is TargetStatus and list(card) == [f.name for f in fields(TargetStatus)]
        assert list(card["baseline"]) == [f.name for f in fields(BaselineInfo)]
        assert list(card["sparkline"]) == [f.name for f in fields(Sparkline)]
        for op in card["ops"]:
            assert list(op) == [f.name for f in fields(OpStatus)] and list(op["climate"]) == [f.name for f in fields(Climate)]
    # the monitoring plugin judges each target as its card does (its clock runs on: states, not values)
    for target, state in states.items():
        r = cli("slowdown", "--check", "--json", "--target", target, home=home[0])
        check = json.loads(r.stdout)
        assert [t["state"] for t in check["targets"]] == [state]
        assert [list(t) for t in check["targets"]] == [[f.name for f in fields(CheckTarget)]]
        assert check["exit_code"] == r.returncode == {"normal": 0, "severely degraded": 2}[state]
    # at the card's instant, the plugin's light path (sqlite3, no numpy) says what each card says, bit for bit
    _, t0 = home
    _, _, light = light_check.run_check(ctx.settings, None, answer.window_s, "median", cfg.baseline_s, cfg.warn,
                                        cfg.crit, now_ns=t0)
    assert [(c.target, c.state, c.reason, c.worst) for c in light] == \
        [(t.target, t.state, t.reason, t.worst()) for t in answer.targets]


def test_status_without_data(tmp_path):
    c = WebContext(Settings.resolve(tmp_path / "empty"), WebConfig())
    with Server(create_app(c.settings, ctx=c)) as s:
        code, doc = api(s, "/api/status")
    assert code == 200 and list(doc) == [f.name for f in fields(Status)]
    assert doc["targets"] == [] and doc["overall"] == "unknown" and doc["message"].startswith("No probe data")


def test_history_cells_are_the_slowdown_commands(server, ctx, home, cli):
    _, t0 = home
    since, until = -(-(t0 - DAY) // H) * H, t0 // H * H  # whole hours: the command has no partial ones
    answer = history(ctx.cache, ctx.cache.targets(), "scratch", since, until, 3600, "median", ctx.config.warn,
                     ctx.config.crit)
    doc = _same_answer(server, f"/api/history?target=scratch&since={_iso(since)}&until={_iso(until)}&interval=1h",
                       answer, History)
    (h,) = doc["targets"]
    assert [f.name for f in fields(type(answer.targets[0]))] == list(h)
    # the page's baseline is the 30 days before now, the command's those before --until unless it is given
    rows = json.loads(cli("slowdown", "--target", "scratch", "--interval", "1h", "--stat", "median", "--expected",
                          "same", "--since", _iso(since), "--until", _iso(until), "--baseline-from",
                          _iso(t0 - 30 * DAY), "--baseline-until", _iso(t0), "--json", home=home[0],
                          check=True).stdout)
    column = {_ns(t): c for c, t in enumerate(doc["time"])}
    assert len(rows) == 6 * (until - since) // H
    assert all(list(r) == [f.name for f in fields(SlowdownRow)] for r in rows)
    for r in rows:
        o, c = doc["ops"].index(r["op"]), column[_ns(r["interval_start"])]
        assert h["count"][o][c] == r["count"]
        assert h["slowdown"][o][c] == pytest.approx(r["slowdown"], rel=1e-9)
    # the episode 3 h to 2 h ago: 5x on the data ops, in the worst cells
    worst = h["worst"][0]
    assert worst["op"] in ("data_read", "data_write") and worst["slowdown"] > 3
    assert t0 - 4 * H < _ns(worst["interval_start"]) < t0 - 2 * H


@pytest.mark.parametrize("hours, interval", [(2, "10m"), (12, "1h")], ids=["raw", "rollups"])
def test_timeline_intervals_are_probe_stats(server, ctx, home, cli, hours, interval):
    _, t0 = home
    since, until = t0 - hours * H, t0
    interval_s = {"10m": 600.0, "1h": 3600.0}[interval]
    answer = timeline(ctx.cache, ctx.cache.targets(), "home-nfs", since, until, interval_s, "median", 20_000,
                      ctx.config.warn, ctx.config.crit)
    doc = _same_answer(server, f"/api/timeline?target=home-nfs&since={_iso(since)}&until={_iso(until)}"
                               f"&interval={interval}", answer, Timeline)
    assert doc["resolution"] == ("raw" if hours <= 6 else "10 min")
    rows = json.loads(cli("probe", "stats", "--target", "home-nfs", "--interval", interval, "--since", _iso(since),
                          "--until", _iso(until), "--json", home=home[0], check=True).stdout)
    assert all(list(r) == [f.name for f in fields(IntervalRow)] for r in rows)
    want = {(r["op"], _ns(r["interval_start"])): r for r in rows}
    got = {(r["op"], _ns(r["interval_start"])): r for r in doc["intervals"]}
    step = int(interval_s * 1e9)
    columns = -(-(until - since // step * step) // step)  # the partial first and last intervals too
    assert got.keys() == want.keys()
    # the partial last interval has no sample when now fell within a probe period of its start: both leave it out
    assert len(got) in (6 * columns, 6 * (columns - 1))
    for k, r in got.items():
        for c in ("count", "errors", "timeouts"):
            assert r[c] == want[k][c], (k, c)
        for c in ("median_s", "p90_s", "p99_s", "max_s"):
            # an interval without a successful sample (the partial one ending now) has no duration: None on both
            assert r[c] == (None if want[k][c] is None else pytest.approx(want[k][c], rel=1e-9)), (k, c)
    # the statistics start on a whole interval (as probe stats'); the drawn totals are the window asked for:
    # they differ by exactly the samples between the whole interval's start and `since`
    before = probe_store.read_samples(ctx.store, "home-nfs", since_ns=since // step * step, until_ns=since)
    early_fails = int((before["status"] != 0).sum())
    assert doc["samples_total"] + len(before["op"]) == sum(r["count"] + r["errors"] + r["timeouts"] for r in rows)
    assert doc["failures_total"] + early_fails == sum(r["errors"] + r["timeouts"] for r in rows) > 0


def test_factors_analysis_is_the_commands(server, ctx, home, cli):
    _, t0 = home
    since, until = t0 - 6 * H, t0
    kw = {"adjust": 2.0, "significance": 0.03, "cutoff_fraction": 0.05, "split": "minimum"}
    answer = probe_factors(ctx.store, ctx.cache.targets(), "home-nfs", "md_stat", since, until, kw)
    doc = _same_answer(server, f"/api/factors?target=home-nfs&op=md_stat&since={_iso(since)}&until={_iso(until)}",
                       answer, Factors)
    want = json.loads(cli("factors", "density", "--from-store", "--target", "home-nfs", "--op", "md_stat", "--since",
                          _iso(since), "--until", _iso(until), "--json", home=home[0], check=True).stdout)
    assert doc["analysis"] == want
    assert doc["timeline"]["total"] == want["n"] == 6 * 3600 // PERIOD_S - doc["excluded"]


def test_servers_and_metadata(server, ctx):
    s, u = _ns(LMT_SINCE), _ns(LMT_UNTIL)
    q = f"fs=snx11025&since={quote(LMT_SINCE)}&until={quote(LMT_UNTIL)}"
    doc = _same_answer(server, f"/api/servers?{q}", fsview.servers(ctx.settings, "snx11025", s, u), fsview.Servers)
    assert len(doc["targets"]) == 24 and doc["series"] is None
    one = doc["targets"][0]["target"]
    d = _same_answer(server, f"/api/servers?{q}&target={one}",
                     fsview.servers(ctx.settings, "snx11025", s, u, target=one), fsview.Servers)
    assert d["series"]["read_bytes"] == pytest.approx(doc["targets"][0]["read_bytes"], rel=1e-12)
    _same_answer(server, f"/api/metadata?{q}", fsview.metadata(ctx.settings, "snx11025", s, u), fsview.Metadata)


def test_capacity(server, ctx):
    code, doc = api(server, "/api/capacity?fs=snx11035")
    assert code == 200
    answer = fsview.capacity(ctx.settings, "snx11035", _ns(doc["since"]), _ns(doc["until"]))
    doc = _same_answer(server, "/api/capacity?fs=snx11035", answer, fsview.Capacity)
    assert doc["fs_all"] == ["jobs", "snx11025", "snx11035"]
    assert doc["fullest"] and doc["fs_fullness"]["fullness"]


def test_talkers_are_the_job_stats_written(server, ctx, home):
    _, t0 = home
    since, until = t0 - H, t0
    answer = fsview.talkers(ctx.settings, "jobs", since, until, fsview.job_links(ctx.settings))
    doc = _same_answer(server, f"/api/talkers?fs=jobs&since={_iso(since)}&until={_iso(until)}", answer,
                       fsview.Talkers)
    moved = {j: float(sum(b)) for j, b in JOB_BYTES.items() if sum(b)}
    assert {r["job"]: r["bytes"] for r in doc["by_bytes"]} == moved
    assert doc["jobs"] == len(JOB_BYTES) and doc["jobs_moving_bytes"] == len(moved)
    # "now" is the last 5 minutes: both intervals
    assert [r["job"] for r in doc["now_by_bytes"]] == ["1001", "dd.4242"]
