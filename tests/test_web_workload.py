"""The Workload page over the workload tests' synthetic file system (known truth) and a CSV import:
the same numbers as `ioweather workload --json`, plot series, bad input, hidden without telemetry."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from urllib.parse import quote

import numpy as np
import pytest

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.web.app import create_app
from ioweather.web.pages import workload as workload_page
from web_pages_data import (  # noqa: F401  (fixtures)
    CSV_BURST_MIN, CSV_FS, CSV_T0, csv_telemetry, pages_home, pages_server)
from web_server import Server, api, assert_bad_request, assert_never_500
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)



def test_defaults_equal_the_cli(pages_server, pages_home, cli):
    code, web = api(pages_server, "/api/workload?fs=syn")
    assert code == 200 and web["fs_all"] == sorted([CSV_FS, "syn"])
    # Two days of data: the page's default window (7 days back from the end of the data) covers it all.
    proc = cli("workload", "--fs", "syn", "--json", home=pages_home, check=True)
    assert web["result"] == json.loads(proc.stdout)
    assert [(i["bin"], i["count"], i["minutes"]) for i in web["result"]["idle_periods"]] == \
        [(b, c, float(m)) for b, c, m in syn.EXPECTED_IDLE]


def test_window_and_options_equal_the_cli(pages_server, pages_home, cli):
    since, until = "2023-11-14T23:00:00Z", "2023-11-15T03:00:00Z"
    q = f"fs={CSV_FS}&since={since}&until={until}&resample=5m&smooth=20m&min_amplitude=512MiB/s"
    code, web = api(pages_server, f"/api/workload?{quote(q, safe='=&')}")
    assert code == 200
    proc = cli("workload", "--fs", CSV_FS, "--since", since, "--until", until, "--resample", "5m", "--smooth", "20m",
               "--min-amplitude", "512MiB/s", "--json", home=pages_home, check=True)
    assert web["result"] == json.loads(proc.stdout)
    # The one planted burst is the one event, at its planted time.
    (ev,) = web["result"]["events"]
    burst_start = datetime.fromtimestamp(CSV_T0 + 60 * CSV_BURST_MIN, timezone.utc)
    peak = datetime.fromisoformat(ev["peak_time"].replace("Z", "+00:00"))
    assert 0 <= (peak - burst_start).total_seconds() < 20 * 60
    assert ev["peak_bps"] == pytest.approx(3 * (1 << 30), rel=1e-3)


def test_series_and_daily_rates(pages_server):
    code, d = api(pages_server, "/api/workload?fs=syn")
    r, s = d["result"], d["series"]
    assert s["points"] == r["samples"] + r["missing_samples"] == s["shown"] and not s["downsampled"]
    total = np.array([np.nan if v is None else v for v in s["total_bps"]])
    assert np.nanmax(total) == r["peak_total_bps"]
    assert np.isnan(total).sum() == r["missing_samples"] == 1  # the missing minute is a gap, not a zero
    assert s["time"][0] == r["start"] and len(s["time"]) == r["samples"] + r["missing_samples"]
    # Daily mean rate = the day's bytes / its observed seconds (day 1 lost one minute).
    day1 = r["daily"][0]
    assert d["daily_rates"]["date"][:2] == ["2024-03-01", "2024-03-02"]
    assert d["daily_rates"]["read_bps"][0] == pytest.approx(day1["read_bytes"] / ((1440 - 1) * 60), rel=1e-12)
    assert d["daily_rates"]["write_bps"][1] == pytest.approx(r["daily"][1]["write_bytes"] / (1440 * 60), rel=1e-12)


def test_long_series_are_downsampled_keeping_extremes_and_gaps(pages_server, monkeypatch):
    monkeypatch.setattr(workload_page, "MAX_POINTS", 400)
    code, d = api(pages_server, "/api/workload?fs=syn&smooth=11m")  # another key: computed again
    s, r = d["series"], d["result"]
    assert s["downsampled"] and s["shown"] <= 400 and s["points"] == 2880
    total = [v for v in s["total_bps"] if v is not None]
    assert max(total) == r["peak_total_bps"]
    assert None in s["total_bps"]  # the missing minute is still a gap


BAD = [
    ("/api/workload?fs=nope", "unknown file system"),
    ("/api/workload?fs=" + quote("../../etc"), "unknown file system"),
    ("/api/workload?resample=0s", "resample must be positive"),
    ("/api/workload?resample=1000d", "resample must be positive and at most 92d"),
    ("/api/workload?resample=soon", "resample: "),
    ("/api/workload?fs=csv-fs&resample=5s&smooth=1m", "--resample 5s is shorter than the sampling interval (60 s)"),
    ("/api/workload?smooth=0s", "smooth must be positive"),
    ("/api/workload?smooth=2d", "smooth must be positive and at most 1d"),
    ("/api/workload?min_amplitude=fast", "must be a rate"),
    ("/api/workload?min_amplitude=0", "positive rate"),
    ("/api/workload?since=200d", "at most 92d"),
    ("/api/workload?since=garbage", "malformed time"),
    ("/api/workload?since=2020-01-01T00:00Z&until=2020-01-02T00:00Z", "no read/write telemetry"),
    ("/api/workload?until=2024-03-01T00:00Z&since=2024-03-02T00:00Z", "must be before"),
    ("/api/workload?path=/etc", "unknown parameter 'path'"),
]


@pytest.mark.parametrize("path,message", BAD)
def test_bad_parameters_are_400_with_a_message(pages_server, path, message):
    assert_bad_request(pages_server, path, message)


def test_too_many_intervals_is_400_with_a_message(pages_server, monkeypatch):
    """The window is cut to the time the data covers (2 days of syn) before the intervals are counted, so a
    92-day window at 1 s makes 2 days of intervals: past a lowered limit, one message says how many."""
    monkeypatch.setattr(workload_page, "MAX_INTERVALS", 1000)
    assert_bad_request(pages_server, "/api/workload?fs=syn&since=92d&resample=1s", "intervals; the page computes at most 1,000")


def test_random_parameters_never_500(pages_server):
    assert_never_500(pages_server, {"/api/workload": ["fs", "since", "until", "resample", "smooth", "min_amplitude"]},
                     list("0123456789-:TZ.+ hmsdGiBM/<>'\"&%") + ["now", "1h", "syn", "2024-03-01", "\x00", "é"],
                     tries=60, seed=5, codes=(200, 400, 404), base={"fs": "syn"})


def test_hidden_without_telemetry(tmp_path):
    with Server(create_app(Settings.resolve(tmp_path / "home"), warm=False)) as s:
        assert {p["slug"]: p["available"] for p in api(s, "/api")[1]["pages"]}["workload"] is False
        code, d = api(s, "/api/workload")
        assert code == 404 and "ioweather import" in d["error"]
        assert 'href="/workload"' not in s.get("/status")[2].decode()
    assert not (tmp_path / "home").exists()


def test_new_telemetry_shows_without_restart(tmp_path, cli):
    home = tmp_path / "home"
    csv_telemetry(tmp_path / "a.csv", minutes=120, burst_min=30)
    cli("import", "csv", str(tmp_path / "a.csv"), "--fs", "one", "--interval", "60s", home=home, check=True)
    with Server(create_app(Settings.resolve(home), warm=False)) as s:
        assert 'href="/workload"' in s.get("/status")[2].decode()
        before = api(s, "/api/workload")[1]["result"]
        assert before["samples"] == 120 and len(before["events"]) == 1
        csv_telemetry(tmp_path / "b.csv", minutes=180, burst_min=150)  # same start, one more hour, a later burst
        cli("import", "csv", str(tmp_path / "b.csv"), "--fs", "one", "--interval", "60s", home=home, check=True)
        after = api(s, "/api/workload")[1]["result"]
        assert after["samples"] == 180 and after["read_bytes"] > before["read_bytes"]
