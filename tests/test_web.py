"""The dashboard over a store filled by a real probe run and synthetic long windows: numbers, escaping,
bad input, empty stores. The browser tests are in test_web_browser.py."""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
import time
from datetime import datetime

import numpy as np
import pytest

from ioweather.services.probe import run as probe_run
from ioweather.services.probe.run import run_probes
from ioweather.config import Settings
from ioweather.stats.downsample import downsample, minmax_indices, split_budget
from ioweather.stats.status import climate, climates, target_state
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.units import ns_to_iso
from ioweather.web.app import create_app
from web_server import (  # noqa: F401  (fixtures)
    NASTY, Server, api, assert_bad_request, assert_never_500, escaped_page, filled, server)
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)


# --------------------------------------------------------------------------- status numbers
def test_status_states_match_what_was_planted(server, filled):
    code, data = api(server, "/api/status")
    assert code == 200
    by = {t["target"]: t for t in data["targets"]}
    assert set(by) == {"scratch", "home-nfs", "archive", NASTY}
    # home-nfs: every op planted 25x slower for the last 30 minutes.
    assert by["home-nfs"]["state"] == "severely degraded"
    for o in by["home-nfs"]["ops"]:
        assert 15 < o["slowdown"] < 40, o
    # scratch: the episode ended 2 h ago; now every op is at its usual speed.
    assert by["scratch"]["state"] == "normal"
    assert all(0.5 < o["slowdown"] < 2 for o in by["scratch"]["ops"])
    # archive: nothing for 3 hours -> stale, never normal.
    assert by["archive"]["state"] == "stale"
    assert by["archive"]["last_sample_age_s"] > 3 * 3600 - 60
    # The real probe ran just before t0: its window and its baseline are the same samples, so its
    # slowdown would be 1 by construction; it is learning its baseline instead, with no slowdown.
    real = by[NASTY]
    assert real["state"] == "learning" and real["reason"].startswith("learning the baseline (")
    assert real["last_sample_age_s"] < 120
    assert [o["slowdown"] for o in real["ops"]] == [None] * 6
    assert data["overall"] == "severely degraded"


def test_status_climate_places_now_in_the_baseline_distribution(server):
    code, data = api(server, "/api/status?target=home-nfs")
    assert code == 200 and len(data["targets"]) == 1
    for o in data["targets"][0]["ops"]:
        c = o["climate"]
        # 2 days of 10-minute intervals, 3 of them inside the 25x episode: now is in the top 2 %.
        assert 280 <= c["n_intervals"] <= 290
        assert c["percentile_now"] >= 98
        assert 0.8 < c["median"] < 1.25


def test_history_matches_the_slowdown_command(server, filled, cli):
    """The cached rollups give the same numbers as `ioweather slowdown` computes from raw samples."""
    hour = 3600 * 10**9
    since_ns = (filled.t0_ns - 86400 * 10**9) // hour * hour
    since, until = ns_to_iso(since_ns), ns_to_iso(filled.t0_ns)
    code, web = api(server, f"/api/history?target=scratch&interval=1h&stat=p90&since={since}&until={until}")
    assert code == 200
    proc = cli("slowdown", "--target", "scratch", "--interval", "1h", "--stat", "p90", "--expected", "same",
               "--since", since, "--until", until, "--json", home=filled.home, check=True)
    ref = json.loads(proc.stdout)
    assert len(ref) > 100
    t = web["targets"][0]
    col = {s: i for i, s in enumerate(web["time"])}
    for r in ref:
        i = col[r["interval_start"]]
        got = t["slowdown"][web["ops"].index(r["op"])][i]
        assert got == r["slowdown"], r  # bit for bit: same rollups, same baseline p90 (like for like)
        assert t["count"][web["ops"].index(r["op"])][i] == r["count"]
    # The planted 5x episode is the worst of the day, on data ops only.
    assert {w["op"] for w in t["worst"][:2]} <= {"data_write", "data_read"}
    # p90 of a 5x episode against the baseline p90: 5 x the synthetic diurnal term (up to exp(0.15) = 1.16)
    # = up to 5.8, depending on the time of day the test runs.
    assert all(3 < w["slowdown"] < 5 * 1.162 * 1.05 for w in t["worst"][:2])


def test_timeline_keeps_every_extreme_and_counts_everything(server, filled):
    code, data = api(server, "/api/timeline?target=home-nfs&since=6h&interval=1h&points=2000")
    assert code == 200
    store = open_store(Settings.resolve(filled.home))
    hour = 3600 * 10**9
    # the samples drawn and counted are the window's; the interval statistics have the first hour whole
    first = (filled.t0_ns - 6 * hour) // hour * hour
    raw = probe_store.read_samples(store, "home-nfs", since_ns=filled.t0_ns - 6 * hour, until_ns=filled.t0_ns)
    assert data["samples_total"] == len(raw["op"]) == 6 * 720 * 6
    assert data["downsampled"] and data["samples_shown"] <= 2000
    shown = sum(len(s["time"]) for s in data["samples"].values()) + len(data["failures"]["time"])
    assert shown == data["samples_shown"]
    for code_, op in enumerate(probe_store.OPS):
        ok = (raw["op"] == code_) & (raw["status"] == 0)
        d = raw["duration_ns"][ok] / 1e9
        got = data["samples"][op]["duration_s"]
        assert max(got) == d.max() and min(got) == d.min()  # the extremes are never dropped
    fails = int((raw["status"] != 0).sum())
    assert fails > 0 and data["failures_total"] == fails and len(data["failures"]["time"]) == fails  # few: all shown
    # Interval statistics: one row per op and clock hour the window touches, median from raw samples.
    raw = probe_store.read_samples(store, "home-nfs", since_ns=first, until_ns=filled.t0_ns)
    rows = [r for r in data["intervals"] if r["op"] == "md_stat"]
    assert len(rows) == -((first - filled.t0_ns) // hour)
    # every clock hour the window touches, from the window's samples only (the first hour begins before
    # the window; the last holds none when t0 has just entered it)
    md_stat = probe_store.OPS.index("md_stat")
    for row in rows:
        start = int(datetime.fromisoformat(row["interval_start"].replace("Z", "+00:00")).timestamp() * 1e9)
        sel = (raw["op"] == md_stat) & (raw["status"] == 0) & (raw["start_ns"] >= start) & (raw["start_ns"] < start + hour)
        if sel.any():
            assert row["median_s"] == pytest.approx(np.median(raw["duration_ns"][sel] / 1e9), rel=1e-12), row
        else:
            assert row["median_s"] is None, row
    store.dispose()


def _ns(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1e9)


@pytest.mark.parametrize("window", ["since=24h", "since={t0_79321}&until={t0_11237}"])  # the second unaligned, in the past
def test_long_timeline_is_built_from_10_minute_rollups_and_counts_every_sample(server, filled, window):
    """Over 6 h: each 10-minute interval's fastest, median and slowest sample per op (from the cache's
    rollups, the partial first and last intervals from samples), counts equal to the samples of the window."""
    s = 10**9
    window = window.format(t0_79321=ns_to_iso(filled.t0_ns - 79321 * s), t0_11237=ns_to_iso(filled.t0_ns - 11237 * s))
    code, data = api(server, "/api/timeline?target=home-nfs&interval=1m&" + window)
    assert code == 200, data
    assert data["resolution"] == "10 min" and data["resolution_s"] == 600
    assert data["interval_s"] == 600  # 1-minute intervals would need every sample
    since, until = _ns(data["since"]), _ns(data["until"])
    assert until - since > 6 * 3600 * 10**9 and since % (600 * 10**9) and until % (600 * 10**9)
    store = open_store(Settings.resolve(filled.home))
    raw = probe_store.read_samples(store, "home-nfs", since_ns=since, until_ns=until)
    store.dispose()
    fails = raw["status"] != 0
    assert data["samples_total"] == len(raw["op"]) > 6 * 3600 // 5 * 6
    assert data["failures_total"] == int(fails.sum()) > 0
    assert sum(data["failures"]["errors"]) + sum(data["failures"]["timeouts"]) == data["failures_total"]
    step = 600 * s
    for code_, op in enumerate(probe_store.OPS):
        got = data["samples"][op]
        ok = (raw["op"] == code_) & ~fails
        assert max(got["max_s"]) == raw["duration_ns"][ok].max() / 1e9  # the extremes are never dropped
        assert min(got["min_s"]) == raw["duration_ns"][ok].min() / 1e9
        assert sum(got["count"]) == int(ok.sum())
        for i, t in enumerate(got["time"]):
            lo = max(_ns(t) // step * step, since)
            sel = ok & (raw["start_ns"] >= lo) & (raw["start_ns"] < min(lo // step * step + step, until))
            d = raw["duration_ns"][sel] / 1e9
            assert (got["count"][i], got["min_s"][i], got["max_s"][i]) == (len(d), d.min(), d.max()), (op, t)
            # a quantile of one sample is none (stats/grouped.quantile_sorted): a window that ends a few seconds
            # into an interval holds one sample of an op there, about one run in a hundred
            want = None if len(d) < 2 else pytest.approx(np.median(d), rel=1e-12)
            assert got["median_s"][i] == want, (op, t, len(d))
    # The interval rows below the plot count the same samples, their first interval whole (as probe stats'):
    # the samples between its start and `since` besides
    store = open_store(Settings.resolve(filled.home))
    before = probe_store.read_samples(store, "home-nfs", since_ns=since // step * step, until_ns=since)
    store.dispose()
    assert sum(r["count"] + r["errors"] + r["timeouts"] for r in data["intervals"]) == len(raw["op"]) + len(before["op"])
    code, html = server.get("/timeline?target=home-nfs&" + window)[:2]
    assert code == 200


def test_read_samples_is_by_op_code_from_one_archived_day(tmp_path):
    """A window inside one archived day is one Parquet file, whose rows are by op name: still sorted by op code."""
    from ioweather.store.probe_archive import archive_completed_days
    from web_synthetic import add_target

    store = open_store(Settings.resolve(tmp_path / "home"))
    day = 86400 * 10**9
    now = (time.time_ns() // day) * day + 3600 * 10**9
    add_target(store, "t", now - 3 * day, now - 2 * day, period_s=60, seed=5)
    assert archive_completed_days(store, keep_days=1, now_ns=now) > 0
    s = probe_store.read_samples(store, "t", since_ns=now - 3 * day + 3600 * 10**9, until_ns=now - 2 * day)
    assert sorted(set(s["op"].tolist())) == list(range(len(probe_store.OPS)))
    key = np.lexsort((s["start_ns"], s["op"]))
    assert (key == np.arange(len(key))).all()
    store.dispose()


def test_the_dashboard_starts_without_pandas_pyarrow_or_scipy():
    """Every page module is imported at start: those three (~150 MB of the server's memory) only when a
    page that needs them is asked for."""
    import subprocess
    import sys

    code = ("import sys; from ioweather.web.app import create_app; from ioweather.web.pages import load_pages; "
            "n = len(load_pages()); print(n, sorted(m for m in ('pandas', 'pyarrow', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    from ioweather.web.pages import PAGE_MODULES

    assert int(out[0]) == len(PAGE_MODULES) and out[1].strip() == "[]"


def test_the_navigation_asks_for_jobs_without_pandas(tmp_path):
    """Every page's navigation asks whether the store holds jobs: on a store without telemetry (nothing preloads
    pandas there) the first page after a start imported pandas and pyarrow for that count (~0.3 s, issue 40)."""
    import subprocess
    import sys

    home = tmp_path / "home"
    open_store(Settings.resolve(home)).dispose()
    code = ("import sys; from ioweather.config import Settings; from ioweather.web.context import WebContext; "
            "from ioweather.web.pages.jobs_common import has_jobs; "
            f"print(has_jobs(WebContext(Settings.resolve({str(home)!r}))), "
            "sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False []"


# --------------------------------------------------------------------------- escaping
def _strings(o) -> set[str]:
    if isinstance(o, str):
        return {o}
    items = o.values() if isinstance(o, dict) else o if isinstance(o, list) else []
    return set().union(*(_strings(v) for v in items)) if items else set()


@pytest.mark.parametrize("path", ["/status", "/timeline?target=%s", "/history", "/history?target=%s"])
def test_labels_from_data_are_escaped(server, path):
    from urllib.parse import quote

    html, data = escaped_page(server, path.replace("%s", quote(NASTY)))
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html  # shown as text
    assert NASTY in _strings(data)  # the embedded JSON twin holds the exact name


def test_security_headers(server):
    code, headers, _ = server.get("/status")
    h = {k.lower(): v for k, v in headers.items()}
    assert "script-src 'self'" in h["content-security-policy"]
    assert h["x-content-type-options"] == "nosniff"
    assert float(h["server-timing"].split("dur=")[1]) >= 0


# --------------------------------------------------------------------------- bad input
BAD = [
    ("/api/timeline?since=garbage", "malformed time"),
    ("/api/timeline?since=2h&until=yesterday", "malformed time"),
    ("/api/timeline?since=now-1h&until=now-2h", "must be before"),
    ("/api/timeline?since=3d", "at most 1d"),
    ("/api/timeline?since=1999-12-31T00:00Z&until=2000-01-01T01:00Z", "before 2000"),
    ("/api/timeline?until=now%2B3d", "in the future"),
    ("/api/timeline?since=99999999999999999999d", "longer than 100 years"),
    ("/api/timeline?target=nope", "unknown target"),
    ("/api/timeline?interval=7m", "interval must be one of"),
    ("/api/timeline?interval=-5m", "malformed duration"),
    ("/api/timeline?stat=average", "stat must be one of"),
    ("/api/timeline?points=5", "between 100 and 20000"),
    ("/api/timeline?points=1e9", "whole number"),
    ("/api/timeline?target=scratch&target=archive", "given 2 times"),
    ("/api/timeline?path=/etc/passwd", "unknown parameter 'path'"),
    ("/api/timeline?since=" + "9" * 400, "longer than"),
    ("/api/history?interval=2h", "interval must be one of"),
    ("/api/history?since=200d", "at most 92d"),
    ("/api/history?since=60d&interval=10m", "at most 5000"),
    ("/api/history?target=%3Cscript%3E", "unknown target"),
    ("/api/status?target=nope", "unknown target"),
    ("/api/status?window=1h", "unknown parameter"),
]


@pytest.mark.parametrize("path,message", BAD)
def test_bad_parameters_are_400_with_a_message(server, path, message):
    assert_bad_request(server, path, message)


def test_random_parameters_never_500(server):
    """Fuzz every parameter of every page with hostile strings: 200 or 400, never a server error."""
    names = ["since", "until", "interval", "stat", "points", "target"]
    assert_never_500(server, {"/api/timeline": names, "/api/history": names, "/api/status": names},
                     list("0123456789-:TZ.+ hmsdw<>'\"&%/\\") + ["now", "1h", "30d", "2026-11-22", "\x00", "é", "∞"],
                     tries=150, seed=7)


def test_unknown_url_is_404_not_500(server):
    assert server.get("/api/nothing")[0] == 404
    assert server.get("/etc/passwd")[0] == 404
    assert server.get("/static/../../pyproject.toml")[0] == 404


# --------------------------------------------------------------------------- empty stores
def test_missing_store_shows_a_helpful_page_and_creates_nothing(tmp_path):
    home = tmp_path / "nohome"
    with Server(create_app(Settings.resolve(home))) as s:
        code, _, body = s.get("/status")
        assert code == 200 and "ioweather watch" in body.decode() and "no ioweather store" in body.decode()
        code, data = api(s, "/api/status")
        assert code == 200 and data["targets"] == [] and "ioweather watch" in data["message"]
        code, _, body = s.get("/timeline")
        assert code == 404 and "ioweather probe run" in body.decode()
        assert s.get("/api/history")[0] == 404
        code, _, body = s.get("/metrics")
        assert code == 200 and b"ioweather_store_up 0.0" in body
        idx = api(s, "/api")[1]
        avail = {p["slug"]: p["available"] for p in idx["pages"]}
        assert avail.pop("status") is True and {"timeline", "history"} <= set(avail) and not any(avail.values())
        for slug in avail:  # every other page answers 404 with a hint, and creates nothing either
            code, data = api(s, f"/api/{slug}")
            assert code in (400, 404) and data["error"], slug
        # Pages without data are hidden from the navigation.
        nav = re.search(r"<nav>(.*?)</nav>", s.get("/status")[2].decode(), re.S).group(1)
        assert "/status" in nav and "/timeline" not in nav
    assert not home.exists()


def test_store_without_probe_data(tmp_path):
    settings = Settings.resolve(tmp_path / "home")
    open_store(settings).require(probe_store.COMPONENT)  # tables exist, no rows
    with Server(create_app(settings)) as s:
        code, data = api(s, "/api/status")
        assert code == 200 and "no probe samples yet" in data["message"]
        assert s.get("/timeline")[0] == 404


# --------------------------------------------------------------------------- live probe
def test_reading_while_a_live_probe_writes_does_not_block_it(tmp_path, capsys, monkeypatch):
    """Hammer every page while a real probe stores samples every 0.1 s: no write waits for the reader."""
    from inprocess import run_cli

    home, d = tmp_path / "home", tmp_path / "probe"
    run_cli("probe", "init", str(d), "--file-size", "2MiB", "--pool", "5", home=home, check=True)
    settings = Settings.resolve(home)
    writes: list[float] = []
    insert = probe_store.insert_samples

    def timed_insert(store, rows):
        t = time.perf_counter()
        insert(store, rows)
        writes.append(time.perf_counter() - t)

    monkeypatch.setattr(probe_store, "insert_samples", timed_insert)
    periods: list[tuple[int, int]] = []  # (probed, missed) of the probe, as it closes
    close = probe_run.ProbeDaemon.close

    def counted_close(self):
        periods.append((self.periods, self.missed_periods))
        close(self)

    monkeypatch.setattr(probe_run.ProbeDaemon, "close", counted_close)
    stop = threading.Event()
    th = threading.Thread(target=run_probes, args=(settings, [d]), kwargs=dict(
        interval=0.1, duration=6.0, targets=["live"], block=1 << 20, direct=False, fsync=False, timeout=10.0,
        seed=1, quiet=False, stop_event=stop, install_signals=False))
    th.start()
    t_start = time.monotonic()
    codes = []
    with Server(create_app(settings)) as s:
        while th.is_alive() and time.monotonic() - t_start < 20:
            for path in ("/api/status", "/api/timeline?target=live&since=5m", "/metrics", "/api/history?since=1d"):
                codes.append(s.get(path)[0])
    th.join(timeout=30)
    assert codes and all(c in (200, 404) for c in codes) and codes.count(200) > len(codes) // 2
    assert "could not store" not in capsys.readouterr().err
    # A writer blocked by readers would wait for the lock (up to the 30 s busy timeout): every write
    # of the probe's batches stayed fast while the pages read.
    assert len(writes) >= 2 and max(writes) < 1.0, writes  # the 5 s flush and the last one
    # Every period of the 6 s at 10 Hz was probed or counted missed (a machine at load 20 misses some:
    # how many is the machine's, not the code's), and every probed period is stored, each op once.
    (probed, missed), = periods
    assert probed >= 2 and probed + missed >= 60, periods
    n = probe_store.read_samples(open_store(settings), "live")
    assert np.bincount(n["op"], minlength=6).tolist() == [probed] * 6, (periods, np.bincount(n["op"]))


# --------------------------------------------------------------------------- pure functions
def test_minmax_downsampling_matches_brute_force():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 1000, 50_000))
    y = rng.lognormal(0, 1, len(t))
    idx = minmax_indices(t, y, 100, 0, 1000)
    b = np.minimum((t / 10).astype(int), 99)
    expect = set()
    for k in range(100):
        sel = np.flatnonzero(b == k)
        expect |= {int(sel[np.argmin(y[sel])]), int(sel[np.argmax(y[sel])])}
    assert set(idx.tolist()) == expect
    assert np.all(np.diff(idx) > 0)
    assert len(downsample(t, y, 2000)) <= 2000
    assert len(downsample(t[:10], y[:10], 2000)) == 10


def test_split_budget_gives_short_series_all_their_points():
    assert split_budget([10, 100_000, 50], 1000) == [10, 470, 50] or sum(split_budget([10, 100_000, 50], 1000)) <= 1000
    assert split_budget([10, 100_000, 50], 1000) == [10, 940, 50]
    assert split_budget([0, 0], 100) == [0, 0]
    assert sum(split_budget([5000] * 7, 20_000)) <= 20_000


def test_state_rules():
    ops = [{"op": "md_stat", "slowdown": 1.1, "timeouts": 0}, {"op": "data_read", "slowdown": 3.0, "timeouts": 0}]
    assert target_state(ops, 5, 60) == ("degraded", "worst: data_read 3.00× usual")
    assert target_state(ops, 500, 60)[0] == "stale"  # a stopped probe is never normal
    assert target_state([{"op": "md_stat", "slowdown": 0.9, "timeouts": 2}], 5, 60)[0] == "degraded"
    assert target_state([{"op": "md_stat", "slowdown": None, "timeouts": 0}], 5, 60)[0] == "unknown"
    assert target_state([{"op": "md_stat", "slowdown": 10.0, "timeouts": 0}], 5, 60)[0] == "severely degraded"
    assert target_state([{"op": "md_stat", "slowdown": 5.0, "timeouts": 0}], 5, 60, warn=6, crit=20)[0] == "normal"
    assert target_state([], None, 60)[0] == "unknown"


def test_median_of_durations_is_baseline_medians_bit_for_bit():
    from ioweather.stats.probe import baseline_medians
    from ioweather.stats.status import median_of_durations

    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 10, 1001, 100_000):
        d = (rng.lognormal(-9, 1, n) * 1e9).astype(np.int64) + 1
        ref = baseline_medians(np.zeros(n, np.int8), d, np.zeros(n, np.int8), 1)[0]
        assert median_of_durations(d.copy()) == ref  # exact, not approx
    assert np.isnan(median_of_durations(np.empty(0, np.int64)))


def test_climates_are_numpys_quantiles_bit_for_bit():
    # a Status card's six climates in one pass replicate np.quantile's default method: the same floats
    rng = np.random.default_rng(7)
    for _ in range(300):
        arrs = [rng.lognormal(0, rng.uniform(0.1, 2), int(rng.choice([0, 5, 6, 7, 100, 431, 4320]))) for _ in range(6)]
        arrs = [np.round(v, 1) if rng.random() < 0.3 else v for v in arrs]  # ties
        arrs = [np.sort(v) if rng.random() < 0.4 else v for v in arrs]  # in order, as the probe cache's values come
        for v in arrs:
            if len(v) and rng.random() < 0.2:
                v[rng.integers(0, len(v))] = np.nan
        current = [float(rng.lognormal()) for _ in arrs]
        for v, now, got in zip(arrs, current, climates(arrs, current)):
            finite = np.sort(v[np.isfinite(v)])
            assert got["n_intervals"] == len(finite)
            if len(finite) < 6:
                assert got["median"] is None and got["percentile_now"] is None
                continue
            assert [got[k] for k in ("p01", "q1", "median", "q3", "p99")] == \
                np.quantile(finite, (0.01, 0.25, 0.5, 0.75, 0.99)).tolist()
            assert got["percentile_now"] == 100.0 * np.sum(finite <= now) / len(finite)


def test_climate_percentile():
    c = climate(np.arange(1, 101, dtype=float), 50.0)
    assert c["percentile_now"] == 50.0 and c["median"] == 50.5 and c["n_intervals"] == 100
    assert climate(np.arange(5.0), 2.0)["q1"] is None and climate(np.arange(5.0), 2.0)["percentile_now"] is None


def test_status_with_fs_shows_the_targets_that_probe_it(server, filled):
    """issue 38: /status?fs=NAME answered 400 ("unknown parameter 'fs'"). It shows the cards of the targets
    whose runs recorded NAME (the real probe's file system; the synthetic ones recorded none), the same
    cards as without it, and says which; an unknown NAME is refused with the known ones listed."""
    store = open_store(Settings.resolve(filled.home))
    try:
        recorded = {t: r["fs"] for t, r in probe_store.latest_runs(store).items()}
    finally:
        store.dispose()
    fs = recorded[NASTY]
    assert fs and [t for t, f in recorded.items() if f == fs] == [NASTY], recorded
    by = {t["target"]: t for t in api(server, "/api/status")[1]["targets"]}
    code, d = api(server, "/api/status?fs=" + urllib.parse.quote(fs))
    assert code == 200 and d["fs"] == fs and d["targets"] == [by[NASTY]]
    assert d["fs_note"] == f"1 of 4 probe targets probe {fs}; the others probe ?.", d["fs_note"]
    code, _, html = server.get("/status?fs=" + urllib.parse.quote(fs))
    assert code == 200 and html.decode().count('<article class="card') == 1 and 'id="status-fs"' in html.decode()
    assert_bad_request(server, "/api/status?fs=nosuch", f"unknown file system 'nosuch'; known: {fs}")


def test_probes_on_follows_the_fs_map_written_since():
    """A probe whose run recorded an older name is on the file system the fs-map now names its directory by;
    a directory beside the prefix (/lus/x2) is not under it."""
    from ioweather.services.runtime.fs_names import probes_on

    dirs = {"a": {"/lus/x/probe"}, "b": {"/lus/x2/probe"}, "c": {"/home/u"}}
    recorded = {"a": "x", "b": "x2", "c": "theta"}
    assert probes_on(["a", "b", "c"], dirs, recorded, [], "theta", [("/lus/x", "theta")]) == ["a", "c"]
    assert probes_on(["a", "b", "c"], dirs, recorded, ["/lus/x"], None) == ["a"]
