"""`/metrics`: counted right (against numpy on the raw samples), valid for promtool, scraped by a real
Prometheus server, advanced incrementally as samples arrive."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.services.answers.metrics import BUCKETS_S, ProbeMetrics
from ioweather.services.probe.cache import ProbeCache
from web_server import NASTY, Server, filled, frozen_app, server  # noqa: F401  (fixtures)
from ports import free_port
from waiting import wait_until
from web_synthetic import Episode, add_target

ROOT = Path(__file__).resolve().parents[1]


def scrape(server) -> str:
    code, headers, body = server.get("/metrics")
    assert code == 200 and headers["content-type"].startswith("text/plain")
    return body.decode()


def samples_of(text: str) -> dict:
    """{(name, frozenset(labels)): value} through prometheus_client's own parser (not ours)."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


@pytest.fixture(scope="module")
def full_exposition(filled) -> str:
    """/metrics of an exporter that counts every stored sample (count_since 0), 100 s after t0."""
    store = open_store(Settings.resolve(filled.home))
    now = filled.t0_ns + 100 * 10**9  # late enough that the real probe's samples have settled too
    cache = ProbeCache(store, clock=lambda: now)
    for t in cache.targets():
        cache.baseline(t)  # so that the slowdown gauges are there too
    text = ProbeMetrics(cache, count_since_ns=0).exposition().decode()
    store.dispose()
    return text


def test_histogram_and_counters_equal_a_recount_of_the_raw_samples(filled, full_exposition):
    """Every bucket, count, sum and counter, for every target and op, against numpy on the raw samples."""
    store = open_store(Settings.resolve(filled.home))
    got = samples_of(full_exposition)
    buckets = {(dict(k[1])["target"], dict(k[1])["op"], float(dict(k[1])["le"])): v
               for k, v in got.items() if k[0] == "ioweather_probe_duration_seconds_bucket"}
    checked = 0
    for target in ("scratch", "home-nfs", "archive", NASTY):
        s = probe_store.read_samples(store, target)
        for code, op in enumerate(probe_store.OPS):
            sel = s["op"] == code
            ok = sel & (s["status"] == 0)
            d = s["duration_ns"][ok] / 1e9
            lab = frozenset({"target": target, "op": op}.items())
            for b in BUCKETS_S:
                assert buckets[(target, op, b)] == np.count_nonzero(d <= b), (target, op, b)
            assert buckets[(target, op, float("inf"))] == len(d) == got[("ioweather_probe_duration_seconds_count", lab)]
            assert got[("ioweather_probe_duration_seconds_sum", lab)] == pytest.approx(d.sum(), rel=1e-12)
            assert got[("ioweather_probe_errors_total", lab)] == np.count_nonzero(sel & (s["status"] == 1))
            assert got[("ioweather_probe_timeouts_total", lab)] == np.count_nonzero(sel & (s["status"] == 2))
            checked += 1
    assert checked == 24
    store.dispose()


def test_gauges_agree_with_the_status_page(server, filled):
    status = json.loads(server.get("/api/status")[2])  # waits for the baselines; a scrape never does
    got = samples_of(scrape(server))
    for t in status["targets"]:
        for o in t["ops"]:
            key = ("ioweather_slowdown_ratio", frozenset({"target": t["target"], "op": o["op"], "stat": "median",
                                                          "expected": "median"}.items()))
            if o["slowdown"] is None:
                assert key not in got
            else:
                assert got[key] == pytest.approx(o["slowdown"], rel=1e-12)
            exp = ("ioweather_probe_expected_seconds", frozenset({"target": t["target"], "op": o["op"]}.items()))
            assert got[exp] == pytest.approx(o["expected_s"], rel=1e-12)
        last = got[("ioweather_probe_last_sample_timestamp_seconds", frozenset({"target": t["target"]}.items()))]
        assert filled.t0_ns / 1e9 - last == pytest.approx(t["last_sample_age_s"], abs=1e-3)
    assert got[("ioweather_store_up", frozenset())] == 1


def test_promtool_accepts_the_exposition(full_exposition):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed (Debian package 'prometheus')")
    text = full_exposition
    assert "ioweather_probe_duration_seconds_bucket{" in text and "ioweather_slowdown_ratio{" in text
    assert 'target="<script>window.__xss=1</script><img src=x onerror=\\"window.__xss=2\\"> \'q\' & \\"lustre\\\\"' in text
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_counts_advance_incrementally_as_samples_arrive(tmp_path):
    """A second scrape adds the new samples (here from a new run whose samples start before the last
    scrape, as a restarted probe's would), and equals a from-scratch count."""
    settings = Settings.resolve(tmp_path / "home")
    store = open_store(settings)
    now = [time.time_ns()]
    add_target(store, "t", now[0] - 3600 * 10**9, now[0] - 600 * 10**9, period_s=2, seed=5)
    cache = ProbeCache(store, clock=lambda: now[0])
    m = ProbeMetrics(cache, count_since_ns=now[0] - 3000 * 10**9)
    first = samples_of(m.exposition().decode())
    add_target(store, "t", now[0] - 600 * 10**9, now[0], period_s=2, seed=6)
    now[0] += 120 * 10**9
    second = samples_of(m.exposition().decode())
    fresh = samples_of(ProbeMetrics(ProbeCache(store, clock=lambda: now[0]),
                                    count_since_ns=now[0] - 3120 * 10**9).exposition().decode())
    counts = {k: v for k, v in second.items() if k[0].startswith("ioweather_probe_duration_seconds_")}
    assert counts == {k: v for k, v in fresh.items() if k[0].startswith("ioweather_probe_duration_seconds_")}
    key = ("ioweather_probe_duration_seconds_count", frozenset({"target": "t", "op": "md_stat"}.items()))
    assert first[key] == 1200 and second[key] == 1500  # 40 min, then 50 min, of one sample every 2 s
    # A new exporter starts at zero, with every (target, op) series present from the first scrape.
    zero = samples_of(ProbeMetrics(cache).exposition().decode())
    assert sorted(v for k, v in zero.items() if k[0] == "ioweather_probe_duration_seconds_count") == [0] * 6
    store.dispose()


def test_scrape_does_not_wait_for_a_baseline(tmp_path):
    store = open_store(Settings.resolve(tmp_path / "home"))
    now = time.time_ns()
    add_target(store, "t", now - 3600 * 10**9, now, period_s=5, seed=5)
    cache = ProbeCache(store, clock=lambda: now)
    assert cache.baseline("t", wait=False) is None  # not computed yet: started in the background
    deadline = time.monotonic() + 30
    while cache.baseline("t", wait=False) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cache.baseline("t", wait=False).samples.sum() > 4000
    store.dispose()


def test_the_alert_rules_fire_for_a_degraded_target_and_not_for_a_learning_one(tmp_path):
    """`promtool test rules` on the rules of docs/deployment.md, fed the gauges /metrics exports for a learned
    target 12x slower (both slowdown alerts, after their `for:`), a target just as slow whose baseline is still
    learning (no slowdown series, so no alert) and a probe that stopped (ProbeSilent)."""
    import yaml

    from test_monitoring_install import DEPLOYMENT, _code_blocks

    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed (Debian package 'prometheus')")
    store = open_store(Settings.resolve(tmp_path / "home"))
    t0 = (time.time_ns() // 10**9) * 10**9
    slow = [Episode(t0 - 20 * 60 * 10**9, t0, 12.0)]
    add_target(store, "slow", t0 - 25 * 3600 * 10**9, t0, period_s=5, seed=13, episodes=slow)
    add_target(store, "young", t0 - 2 * 3600 * 10**9, t0, period_s=5, seed=14, episodes=slow)
    cache = ProbeCache(store, clock=lambda: t0)
    for t in cache.targets():
        cache.baseline(t)
    got = samples_of(ProbeMetrics(cache, count_since_ns=t0).exposition().decode())
    store.dispose()
    learning = {dict(k[1])["target"]: v for k, v in got.items() if k[0] == "ioweather_baseline_learning"}
    assert learning == {"slow": 0.0, "young": 1.0}
    ratios = {k: v for k, v in got.items() if k[0] == "ioweather_slowdown_ratio"}
    assert {dict(k[1])["target"] for k in ratios} == {"slow"}  # nothing to alert on while learning
    worst = max(v for k, v in ratios.items() if dict(k[1])["stat"] == "median")
    assert 8 < worst < 20, worst  # planted: 12x

    def series(name, labels):
        return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels)) + "}"

    # Every exported gauge, held for 30 minutes; the newest-sample timestamps follow promtool's clock
    # (which starts at 0), except for a probe that stopped at 0.
    inputs = [{"series": series(k[0], k[1]), "values": f"{v!r}x30"} for k, v in got.items()
              if k[0] in ("ioweather_slowdown_ratio", "ioweather_baseline_learning")]
    inputs += [{"series": series("ioweather_probe_last_sample_timestamp_seconds", {("target", t)}),
                "values": "0+60x30"} for t in ("slow", "young")]
    inputs.append({"series": 'ioweather_probe_last_sample_timestamp_seconds{target="stopped"}', "values": "0x30"})
    summary = f"slow: median {worst:.1f}x slower than usual"
    fired = {"FileSystemSlow": [{"exp_labels": {"severity": "warning", "target": "slow"},
                                 "exp_annotations": {"summary": summary}}],
             "FileSystemVerySlow": [{"exp_labels": {"severity": "critical", "target": "slow"},
                                     "exp_annotations": {"summary": summary}}],
             "ProbeSilent": [{"exp_labels": {"severity": "warning", "target": "stopped"},
                              "exp_annotations": {"summary": "no probe sample of stopped for 10 minutes"}}]}
    checks = [{"eval_time": "9m", "alertname": name, "exp_alerts": []} for name in fired]  # `for:` not over yet
    checks += [{"eval_time": "20m", "alertname": name, "exp_alerts": alerts} for name, alerts in fired.items()]
    block = next(b for b in _code_blocks(DEPLOYMENT.read_text()) if b and b[0] == "groups:")
    (tmp_path / "rules.yml").write_text("\n".join(block) + "\n")
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": inputs, "alert_rule_test": checks}]}))
    proc = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr


def _ok(s: dict, code: int, since_ns: int, until_ns: int) -> np.ndarray:
    """Durations (s) of the op's successful samples that start in [since, until)."""
    sel = (s["op"] == code) & (s["status"] == 0) & (s["start_ns"] >= since_ns) & (s["start_ns"] < until_ns)
    return s["duration_ns"][sel] / 1e9


@pytest.mark.slow
def test_a_real_prometheus_scrapes_it(tmp_path):
    """Prometheus (Debian's) scrapes /metrics on loopback; its query API then answers with the store's numbers,
    for a target whose baseline has learned (slowdowns) and one still learning (no slowdown, learning=1)."""
    prom = shutil.which("prometheus")
    if not prom:
        pytest.skip("prometheus not installed (Debian package 'prometheus')")
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home))
    t0 = (time.time_ns() // 10**9) * 10**9
    # 25 h: past the 24 h a baseline learns for (exactly 24 h would leave the ops that start 10 µs
    # after md_stat in each period 10 µs short of it). 2 h: still learning.
    add_target(store, "p", t0 - 25 * 3600 * 10**9, t0, period_s=5, seed=8)
    add_target(store, "young", t0 - 2 * 3600 * 10**9, t0, period_s=5, seed=12)
    clock = [t0]
    with Server(frozen_app(home, t0, clock=clock)) as srv:
        assert srv.get("/api/status")[0] == 200 and srv.get("/metrics")[0] == 200  # the exporter starts at t0
        # After the start: 290 s of samples 25x slower, then the clock moves on past the 90 s lag.
        add_target(store, "p", t0, t0 + 290 * 10**9, period_s=1, seed=9, episodes=[Episode(t0, t0 + 10**12, 25.0)])
        clock[0] = t0 + 400 * 10**9
        port = free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            f"scrape_configs:\n  - job_name: ioweather\n    static_configs:\n"
            f"      - targets: ['{srv.url.removeprefix('http://')}']\n")
        log = open(tmp_path / "prometheus.log", "w")
        proc = subprocess.Popen([prom, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=log)
        base = f"http://127.0.0.1:{port}"

        def query(q) -> dict:
            """{(target, op): value} of an instant query; {} while Prometheus is not answering yet."""
            try:
                with urllib.request.urlopen(base + "/api/v1/query?query=" + urllib.parse.quote(q), timeout=5) as r:
                    result = json.loads(r.read())["data"]["result"]
            except OSError:
                return {}
            return {(r["metric"].get("target"), r["metric"].get("op")): float(r["value"][1]) for r in result}

        def counted(until_ns: int) -> dict:
            """What Prometheus must hold once it scraped the samples that settled before `until_ns`."""
            s = probe_store.read_samples(store, "p")
            return {("p", op): float(len(_ok(s, code, t0, until_ns))) for code, op in enumerate(probe_store.OPS)}

        def scraped(q: str, want: dict):
            got = query(q)
            return got if got == want else None

        try:
            # The counters are present (at zero) from the first scrape: wait for the counted samples themselves.
            want = counted(clock[0] - 90 * 10**9)
            assert all(v >= 280 for v in want.values()), want  # 290 samples of each op, fewer the planted errors
            wait_until(lambda: scraped('ioweather_probe_duration_seconds_count{target="p"}', want), 120,
                       "Prometheus to scrape the counted samples", every=0.5, proc=proc)
            # The slowdown's numerator is the median of the last 10 minutes, its denominator the baseline
            # median; in one query (one scrape) their product is the window's median, against numpy.
            s = probe_store.read_samples(store, "p")
            now = clock[0]
            median_now = {("p", op): float(np.median(_ok(s, code, now - 600 * 10**9, now)))
                          for code, op in enumerate(probe_store.OPS)}
            product = wait_until(lambda: query('ioweather_slowdown_ratio{stat="median"} * on (target, op) '
                                               "group_left ioweather_probe_expected_seconds") or None, 60,
                                 "a slowdown of the learned target", every=0.5, proc=proc)
            assert product.keys() == median_now.keys()  # nothing for the learning target
            for k, v in product.items():
                assert v == pytest.approx(median_now[k], rel=1e-9), k
            # The baseline median: of the 30 days before the moment the (cached) baseline was computed,
            # t0 (the status page above) or the clock's now.
            refs = [{("p", op): float(np.median(_ok(s, code, t - 30 * 86400 * 10**9, t)))
                     for code, op in enumerate(probe_store.OPS)} for t in (t0, now)]
            expected = query('ioweather_probe_expected_seconds{target="p"}')
            assert expected in refs, (expected, refs)
            ratio = query('ioweather_slowdown_ratio{target="p",stat="median"}')
            assert all(15 < v < 40 for v in ratio.values()), ratio  # planted: 25x
            learning = query("ioweather_baseline_learning")
            assert learning == {**{("p", op): 0.0 for op in probe_store.OPS},
                                **{("young", op): 1.0 for op in probe_store.OPS}}, learning
            assert not query('ioweather_slowdown_ratio{target="young"}')
            # Once rate() has two scrapes to go by it answers, but every scrape so far saw the same counts:
            # no increase, so the latency median is 0/0 (what a poll for "every query answers" stopped at).
            median_q = ('histogram_quantile(0.5, sum by (le, op) '
                        '(rate(ioweather_probe_duration_seconds_bucket{target="p"}[5m])))')
            median = wait_until(lambda: query(median_q), 60, "a second scrape", every=0.5, proc=proc)
            assert np.isnan(median[(None, "md_stat")]), median

            # More samples arrive while Prometheus scrapes, so rate() has something to see (a counter that
            # Prometheus has only seen flat has a rate of 0 and a histogram_quantile of NaN: 0/0); then every
            # query of the Grafana dashboard runs on this Prometheus without error.
            add_target(store, "p", t0 + 290 * 10**9, t0 + 400 * 10**9, period_s=1, seed=10,
                       episodes=[Episode(t0, t0 + 10**12, 25.0)])
            clock[0] = t0 + 500 * 10**9
            wait_until(lambda: scraped('ioweather_probe_duration_seconds_count{target="p"}', counted(clock[0])), 120,
                       "Prometheus to scrape the samples that arrived later", every=0.5, proc=proc)
            dash = json.loads((ROOT / "grafana" / "ioweather-dashboard.json").read_text())
            exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
            assert len(exprs) == 9
            for e in exprs:
                # 5m, not Grafana's 4 scrape intervals: the one increase stays in the range however slowly
                # this loaded machine gets through the queries.
                e = (e.replace("$target", "p").replace("$op", ".*").replace("$stat", "median")
                     .replace("$__rate_interval", "5m"))
                result = query(e)
                if "errors" not in e and "timeouts" not in e:
                    assert result, e
                if "histogram_quantile(0.5" in e:
                    # The median of the 110 s that arrived later, from the buckets (25 x md_stat's planted 3 µs).
                    assert 5e-5 <= result[(None, "md_stat")] <= 1e-4, (e, result)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
            log.close()
    store.dispose()


@pytest.mark.postgres
def test_metrics_and_status_on_postgresql(tmp_path, pg_url):
    """The same numbers when the store is PostgreSQL (the SQL aggregation is portable)."""
    settings = Settings.resolve(tmp_path / "home", pg_url)
    store = open_store(settings)
    t0 = (time.time_ns() // 10**9) * 10**9
    # 25 h: a younger baseline is still learning, and has no state to compare.
    add_target(store, "pg<fs>", t0 - 25 * 3600 * 10**9, t0, period_s=5, seed=11,
               episodes=[Episode(t0 - 20 * 60 * 10**9, t0, 12.0)], error_rate=1e-2)
    cache = ProbeCache(store, clock=lambda: t0 + 100 * 10**9)
    cache.baseline("pg<fs>")
    got = samples_of(ProbeMetrics(cache, count_since_ns=0).exposition().decode())
    s = probe_store.read_samples(store, "pg<fs>")
    for code, op in enumerate(probe_store.OPS):
        lab = frozenset({"target": "pg<fs>", "op": op}.items())
        sel = s["op"] == code
        assert got[("ioweather_probe_duration_seconds_count", lab)] == np.count_nonzero(sel & (s["status"] == 0))
        assert got[("ioweather_probe_errors_total", lab)] == np.count_nonzero(sel & (s["status"] == 1))
    with Server(frozen_app(tmp_path / "home", t0, db_url=pg_url)) as srv:
        status = json.loads(srv.get("/api/status")[2])
        assert status["targets"][0]["state"] == "severely degraded"
        assert srv.get("/history?target=pg%3Cfs%3E")[0] == 200
    store.dispose()
