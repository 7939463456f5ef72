"""The Factors page over probe samples with a planted second mode: the same analysis as `ioweather
factors density --from-store --json`, the planted classes found, bad input, hidden without probe data."""

from __future__ import annotations

import json
from urllib.parse import quote, urlencode

import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.units import ns_to_iso
from ioweather.web.app import create_app
from ioweather.services.answers import factors as factors_service
from web_pages_data import (  # noqa: F401  (fixtures)
    BIMODAL, NASTY, PROBE_END_NS, SLOW_FACTOR, pages_home, pages_server)
from web_server import Server, api, assert_bad_request, assert_never_500, escaped_page
from web_synthetic import MEDIANS_S
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)



@pytest.fixture(scope="module")
def window(pages_server):
    """An absolute 6-hour window (ms-exact times, as the page prints them) ending where the samples end,
    the slow last 2 hours a third of it (a window ending "now" holds less of the data, the later the module runs)."""
    end = PROBE_END_NS[0]
    q = urlencode({"target": BIMODAL, "since": ns_to_iso(end - 6 * 3600 * 10**9), "until": ns_to_iso(end)})
    code, d = api(pages_server, f"/api/factors?{q}")
    assert code == 200
    return d["since"], d["until"]


def test_analysis_equals_the_cli(pages_server, pages_home, cli, window):
    since, until = window
    q = urlencode({"target": BIMODAL, "op": "data_read", "since": since, "until": until})
    code, web = api(pages_server, f"/api/factors?{q}")
    assert code == 200
    proc = cli("factors", "density", "--from-store", "--op", "data_read", "--target", BIMODAL, "--since", since,
               "--until", until, "--json", home=pages_home, check=True)
    assert web["analysis"] == json.loads(proc.stdout)
    # Options reach the analysis exactly as the command's flags do.
    q2 = urlencode({"target": BIMODAL, "op": "md_stat", "since": since, "until": until, "adjust": 1.5,
                    "significance": 0.05, "cutoff_fraction": 0.1, "split": "mean"})
    code, web = api(pages_server, f"/api/factors?{q2}")
    proc = cli("factors", "density", "--from-store", "--op", "md_stat", "--target", BIMODAL, "--since", since,
               "--until", until, "--adjust", "1.5", "--significance", "0.05", "--cutoff-fraction", "0.1",
               "--split", "mean", "--json", home=pages_home, check=True)
    assert web["analysis"] == json.loads(proc.stdout)


@pytest.mark.parametrize("op", ["data_read", "md_create"])
def test_the_planted_modes_are_the_classes(pages_server, window, op):
    since, until = window
    code, d = api(pages_server, "/api/factors?" + urlencode({"target": BIMODAL, "op": op, "since": since, "until": until}))
    a = d["analysis"]
    assert len(a["classes"]) == 3  # two factors and the outliers
    usual = MEDIANS_S[op]
    fast, slow = a["maxima_s"]
    # The synthetic durations have a daily cycle of up to exp(+-0.15) around the median.
    assert usual / 1.4 < fast < usual * 1.4 and usual * SLOW_FACTOR / 1.4 < slow < usual * SLOW_FACTOR * 1.4
    c1, c2 = a["classes"][0]["count"], a["classes"][1]["count"]
    n = a["n"]
    # The modes overlap a little (a daily cycle of exp(+-0.15) on each): the valley split puts a
    # percent or two of the fast mode's tail with the slow class, depending on the window's phase.
    assert c1 / n == pytest.approx(4 / 6, abs=0.025) and c2 / n == pytest.approx(2 / 6, abs=0.025)
    # The timeline carries every sample (few enough) with its class.
    t = d["timeline"]
    assert t["total"] == t["shown"] == n
    counts = {c["label"]: c["count"] for c in a["classes"]}
    assert {k: t["class"].count(k) for k in counts} == counts


def test_long_windows_are_downsampled_keeping_extremes(pages_server, monkeypatch):
    monkeypatch.setattr(factors_service, "MAX_POINTS", 500)
    code, d = api(pages_server, f"/api/factors?target={BIMODAL}&since=1d&op=md_read")
    t, a = d["timeline"], d["analysis"]
    assert t["downsampled"] and t["shown"] <= 500 and t["total"] == a["n"]
    lo = min(c["lo_s"] for c in a["classes"] if c["lo_s"] is not None)
    assert min(t["duration_s"]) == lo  # the fastest operation is the first class's lower end
    top = max(c["hi_s"] or 0 for c in a["classes"])
    assert max(t["duration_s"]) <= top + 1e-12


def test_target_name_is_escaped(pages_server):
    html, data = escaped_page(pages_server, "/factors?target=" + quote(NASTY) + "&since=2h")
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert data["target"] == NASTY


BAD = [
    ("/api/factors?target=nope", "unknown target"),
    ("/api/factors?op=md_open", "op must be one of"),
    ("/api/factors?adjust=0", "above 0"),
    ("/api/factors?adjust=abc", "must be a number"),
    ("/api/factors?adjust=nan", "above 0"),
    ("/api/factors?significance=2", "at most 1"),
    ("/api/factors?cutoff_fraction=1", "at most 0.99"),
    ("/api/factors?split=max", "split must be one of"),
    ("/api/factors?since=8d", "at most 7d"),
    ("/api/factors?since=garbage", "malformed time"),
    (f"/api/factors?target={BIMODAL}&since=2020-01-01T00:00Z&until=2020-01-02T00:00Z", "no successful data_read"),
    ("/api/factors?file=/etc/passwd", "unknown parameter 'file'"),
]


@pytest.mark.parametrize("path,message", BAD)
def test_bad_parameters_are_400_with_a_message(pages_server, path, message):
    assert_bad_request(pages_server, path, message)


def test_random_parameters_never_500(pages_server):
    assert_never_500(pages_server,
                     {"/api/factors": ["op", "since", "until", "adjust", "significance", "cutoff_fraction", "split"]},
                     list("0123456789-.eE+:TZ hmsd<>'\"&%") + ["nan", "inf", "now", "1h", "data_read", "mean", "\x00"],
                     tries=60, seed=3, max_len=10, base={"target": BIMODAL})


def test_hidden_without_probe_samples(tmp_path):
    settings = Settings.resolve(tmp_path / "home")
    store = open_store(settings)
    store.require(probe_store.COMPONENT)  # tables, no samples
    with Server(create_app(settings, warm=False)) as s:
        assert {p["slug"]: p["available"] for p in api(s, "/api")[1]["pages"]}["factors"] is False
        code, d = api(s, "/api/factors")
        assert code == 404 and "probe" in d["error"]
        assert 'href="/factors"' not in s.get("/status")[2].decode()
    store.dispose()


def test_failed_samples_are_left_out_and_counted(tmp_path):
    """Errors and timeouts are not durations of the I/O path: the page and the command drop them alike."""
    from web_server import frozen_app
    from web_synthetic import add_target

    from ioweather.services.probe.samples import load_probe_durations

    h = 3600 * 10**9
    t0 = (1_700_000_000 * 10**9 // h) * h
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home))
    add_target(store, "flaky", t0 - h, t0, period_s=1, seed=11, error_rate=0.05, timeout_rate=0.01)
    s = probe_store.read_samples(store, "flaky", since_ns=t0 - h, until_ns=t0, ops=["data_write"])
    failed = int((s["status"] != 0).sum())  # the store's own statuses, counted here
    assert 100 < failed < len(s["status"]) // 5
    with Server(frozen_app(home, t0)) as srv:
        code, d = api(srv, "/api/factors?" + urlencode({"target": "flaky", "op": "data_write", "since": "1h"}))
    assert code == 200 and d["excluded"] == failed
    assert d["analysis"]["n"] == len(s["status"]) - failed
    _, df = load_probe_durations(store, "data_write", "flaky", t0 - h, t0)
    assert len(df) == d["analysis"]["n"] and df["duration_s"].max() < 60  # no 60 s timeout among them
    store.dispose()
