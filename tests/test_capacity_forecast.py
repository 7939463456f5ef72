"""When is the disk full (issue 28): one forecast on `report --json`, the Report page and the Capacity
page, whatever window each shows, checked against numpy's polyfit of the planted gauges.

The gauges are as a collector writes them: each data target read every 10 minutes at its own offset,
with noise, one target missing readings; a metadata target that never counts."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.web.app import create_app
from web_server import Server, api

DAY = 86_400 * 10**9
UNTIL = syn.T0 + syn.DAYS * DAY
STEP = 600 * 10**9
TIB = float(1 << 40)
# capacity, used at the start, growth (bytes/s), reading offset within its 10 minutes (s)
OSTS = {"syn-OST0000": (100 * TIB, 60 * TIB, 2e6, 13), "syn-OST0001": (100 * TIB, 85 * TIB, 1e6, 170),
        "syn-OST0002": (50 * TIB, 10 * TIB, 5e5, 333), "syn-OST0003": (100 * TIB, 70 * TIB, 4e6, 599)}
RESERVE = 0.05
NOISE = 50e9  # bytes: a day's growth of the slowest target is 43 GB, so a short fit would wander
ISO = "%Y-%m-%dT%H:%M:%SZ"


def _iso(ns: int) -> str:
    return pd.Timestamp(ns, tz="UTC").strftime(ISO)


def _gauges() -> pd.DataFrame:
    rng = np.random.default_rng(28)
    start = UNTIL - 10 * DAY
    parts = []
    for k, (target, (cap, used0, rate, offset)) in enumerate(OSTS.items()):
        t = np.arange(start, UNTIL, STEP, dtype=np.int64) + offset * 10**9
        t = t[t < UNTIL]
        if k == 2:
            t = t[np.arange(t.size) % 7 != 3]  # a target that misses readings
        used = used0 + rate * (t - start) / 1e9 + rng.normal(0, NOISE, t.size)
        for metric, v in (("capacity_bytes", np.full(t.size, cap)), ("free_bytes", cap - used),
                          ("avail_bytes", cap - used - RESERVE * cap)):
            parts.append(pd.DataFrame({"time_ns": t, "target": target, "metric": metric, "value": v,
                                       "interval_s": STEP / 1e9}))
    t = np.arange(start, UNTIL, STEP, dtype=np.int64)
    parts.append(pd.DataFrame({"time_ns": t, "target": "syn-MDT0000", "metric": "free_bytes",
                               "value": np.linspace(1e12, 1e9, t.size), "interval_s": STEP / 1e9}))
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from ioweather.store.telemetry_layout import write_rows

    home = tmp_path_factory.mktemp("cap") / "home"
    settings = Settings.resolve(home)
    write_rows(settings, "syn", syn.frame())  # bytes moved, which the report's events part needs
    write_rows(settings, "syn", _gauges())
    return home


@pytest.fixture(scope="module")
def server(home):
    with Server(create_app(Settings.resolve(home))) as s:
        yield s


def _reference() -> dict:
    """polyfit of each target's used bytes over the 7 days before the last reading, its last avail."""
    g = _gauges()
    end = g.loc[g["metric"] == "free_bytes", "time_ns"].max()
    g = g[(g["time_ns"] >= end - 7 * DAY) & (g["time_ns"] <= end)]
    out = {}
    for target in OSTS:
        w = g[g["target"] == target].pivot(index="time_ns", columns="metric", values="value").sort_index()
        slope = np.polyfit(w.index.to_numpy() / 1e9, (w["capacity_bytes"] - w["free_bytes"]).to_numpy(), 1)[0]
        out[target] = (slope, float(w["avail_bytes"].iloc[-1]))
    return out


def _capacity(server, since_ns: int) -> dict:
    code, d = api(server, f"/api/capacity?fs=syn&since={_iso(since_ns)}&until={_iso(UNTIL)}")
    assert code == 200, d
    return d


def _days(d: dict) -> dict:
    return {t["target"]: t["days_until_full"] for t in d["targets"] if "-OST" in t["target"]}


def test_forecast_against_polyfit(server):
    d = _capacity(server, UNTIL - 30 * DAY)
    ref = _reference()
    got = {t["target"]: t for t in d["targets"]}
    for target, (slope, room) in ref.items():
        assert got[target]["growth_bps"] == pytest.approx(slope, rel=1e-6)
        assert got[target]["days_until_full"] == pytest.approx(room / slope / 86400, rel=1e-6)
    f = d["fs_fullness"]
    growth = sum(s for s, _ in ref.values())
    assert f["growth_bps"] == pytest.approx(growth, rel=1e-6)
    assert f["days_until_full"] == pytest.approx(sum(r for _, r in ref.values()) / growth / 86400, rel=1e-6)
    assert got["syn-MDT0000"]["days_until_full"] is None  # an MDT's space is not where data goes


def test_same_forecast_whatever_the_window(server):
    docs = [_capacity(server, UNTIL - days * DAY) for days in (1, 2, 7, 30)]
    assert {json.dumps(_days(d), sort_keys=True) for d in docs} == {json.dumps(_days(docs[0]), sort_keys=True)}
    assert len({d["fs_fullness"]["days_until_full"] for d in docs}) == 1
    assert None not in _days(docs[0]).values()


def test_file_system_between_its_targets(server):
    d = _capacity(server, UNTIL - 7 * DAY)
    days = _days(d).values()
    assert min(days) <= d["fs_fullness"]["days_until_full"] <= max(days)


def test_report_json_report_page_and_capacity_page_agree(server, home, cli):
    since = UNTIL - 7 * DAY
    r = cli("report", "--fs", "syn", "--since", _iso(since), "--until", _iso(UNTIL), "--json", home=home, check=True)
    cli_doc = json.loads(r.stdout)["fullness"]
    code, page = api(server, f"/api/report?fs=syn&since={_iso(since)}&until={_iso(UNTIL)}")
    assert code == 200
    page_doc = page["report"]["fullness"]
    cap = _capacity(server, UNTIL - 30 * DAY)  # the Capacity page's default month: the same forecast
    assert cli_doc == page_doc
    assert cli_doc["days_until_full"] == cap["fs_fullness"]["days_until_full"]
    cap_days = _days(cap)
    assert [(t["target"], t["days_until_full"]) for t in cli_doc["fullest"]] == [
        (t["target"], cap_days[t["target"]]) for t in cli_doc["fullest"]]
    # and the pages print them alike: each fullest target's days in the Report page's table and the Capacity page's
    _, _, html = server.get(f"/report?fs=syn&since={_iso(since)}&until={_iso(UNTIL)}")
    report_rows = dict(re.findall(r'<td class="t">([^<]+)</td><td>[^<]*</td>\s*<td>([^<]+)</td>', html.decode()))
    _, _, html = server.get(f"/capacity?fs=syn&since={_iso(UNTIL - 30 * DAY)}&until={_iso(UNTIL)}")
    cap_rows = dict(re.findall(r'<td class="target-name">([^<]+)</td>(?:<td>[^<]*</td>\s*){3}<td>([^<]+)</td>',
                               html.decode()))
    assert report_rows and all(cap_rows[t] == v and v != "–" for t, v in report_rows.items()), (report_rows, cap_rows)
