"""The bench gauges of /metrics, scraped from a running `ioweather serve` over runs of the real fio: accepted
by `promtool check metrics`, and each series' values equal to its last run in the store read with sqlite3
(bandwidth, and bandwidth / the series' best), a motif named with quotes and a backslash included."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench_data import NASTY, make_bench_home, sql_series

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (scripts/install-system-deps.sh)")]
GAUGES = ("ioweather_bench_bandwidth_bytes_per_second", "ioweather_bench_fraction_of_peak")


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """(home, /metrics text) of `ioweather serve --port 0` over the bench runs."""
    home = make_bench_home(tmp_path_factory.mktemp("bench-metrics"))
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", "0", "--quiet"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "ioweather: dashboard at http://127.0.0.1:PORT/  (Prometheus: ...)"
        assert "dashboard at http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split("dashboard at ", 1)[1].split()[0].rstrip("/")
        with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")
            text = r.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return home, text


def test_promtool_accepts_the_bench_gauges(scraped):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed (Debian package 'prometheus')")
    _, text = scraped
    assert all(f"# TYPE {g} gauge" in text for g in GAUGES)
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_gauges_are_each_series_last_run(scraped):
    home, text = scraped
    got = {(f.name, s.labels["motif"], s.labels["direction"], s.labels["fs"]): s.value
           for f in text_string_to_metric_families(text) if f.name in GAUGES for s in f.samples}
    want = {}
    for (motif, direction, fs), runs in sql_series(home).items():
        last_bw, best = runs[-1][3], max(r[3] for r in runs)
        want[(GAUGES[0], motif, direction, fs)] = last_bw
        want[(GAUGES[1], motif, direction, fs)] = last_bw / best
    assert {k[1] for k in want} == {"fpp-write", "fpp-read", NASTY}  # the hostile label parsed back whole
    assert got.keys() == want.keys()
    for k, v in want.items():
        assert got[k] == pytest.approx(v, rel=1e-12), k
