"""The Benchmarks page and the bench gauges of /metrics, against numbers computed here from what was stored."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.store import bench as bstore
from ioweather.store import open_store
from ioweather.store import telemetry_layout as layout
from web_server import Server, frozen_app

S = 10**9
T0 = 1_700_000_000 * S
MOTIF = "fpp<b>-write"  # a name that must reach HTML escaped
BWS = [100e6, 80e6, 50e6, 95e6, 40e6]


@pytest.fixture
def stored(home):
    settings = Settings.resolve(home)
    store = open_store(settings)
    runs = []
    for i, bw in enumerate(BWS):
        start = T0 + i * 8 * 3600 * S
        dur = 1e9 / bw
        runs.append({"run_id": f"r{i}", "motif": MOTIF, "fs": "scratch", "source": "fio", "start_ns": start,
                     "end_ns": start + int(dur * S), "params": {},
                     "results": [{"direction": "write", "bytes": 10**9, "duration_s": dur, "bw_bps": bw}]})
    bstore.put_runs(store, runs)
    last = runs[-1]
    t = np.arange(last["start_ns"] - 120 * S, last["end_ns"] + 120 * S, 5 * S)
    frames = [pd.DataFrame({"time_ns": t, "target": f"scratch-OST{k:04x}", "metric": m, "value": v, "interval_s": 5.0})
              for k in range(2) for m, v in (("write_bytes", 50e6 * (k + 1)), ("read_bytes", 10e6))]
    layout.write_rows(settings, "scratch", pd.concat(frames, ignore_index=True))
    return home, runs


def test_page_and_api(stored):
    home, runs = stored
    with Server(frozen_app(home, T0 + 3 * 86400 * S)) as srv:
        code, _, body = srv.get("/api/bench")
        assert code == 200, body[:300]
        d = json.loads(body)
        durs = [r["results"][0]["duration_s"] for r in runs]
        assert sum(d["histogram"]["counts"]) == len(runs) and d["histogram"]["optimum_s"] == pytest.approx(min(durs))
        assert d["series"]["fraction_of_peak"] == pytest.approx([b / max(BWS) for b in BWS])
        [row] = d["rows"]
        assert row["contention"] == pytest.approx(np.mean(durs) / min(durs))
        run = d["run"]
        assert run["run_id"] == "r4"
        # the window is the run ± 60 s; every 5 s sample sums both targets' writes (50 + 100 MB per 5 s): 30 MB/s, reads 2 x 10 MB / 5 s
        n = len(run["rates"]["time"])
        assert n == 2 * 60 // 5 + int(np.ceil((runs[-1]["end_ns"] - runs[-1]["start_ns"]) / (5 * S)))
        assert run["rates"]["write_bytes_bps"] == pytest.approx([30e6] * n)
        assert run["rates"]["read_bytes_bps"] == pytest.approx([4e6] * n)
        code, _, body = srv.get("/api/bench?run=r1")
        assert code == 200 and json.loads(body)["run"]["rates"] is None  # no telemetry in r1's window
        code, _, body = srv.get("/api/bench?run=nope")
        assert code == 400 and b"no benchmark run" in body
        code, _, html = srv.get("/bench")
        assert code == 200 and b"fpp&lt;b&gt;-write" in html and b"fpp<b>-write" not in html
        assert b'id="bench-window"' in html

        code, _, metrics = srv.get("/metrics")
        text = metrics.decode()
        lab = 'direction="write",fs="scratch",motif="fpp<b>-write"'
        bw = re.search(r"^ioweather_bench_bandwidth_bytes_per_second\{" + re.escape(lab) + r"\} (\S+)$", text, re.M)
        fr = re.search(r"^ioweather_bench_fraction_of_peak\{" + re.escape(lab) + r"\} (\S+)$", text, re.M)
        assert bw and float(bw.group(1)) == BWS[-1]
        assert fr and float(fr.group(1)) == pytest.approx(BWS[-1] / max(BWS))


def test_no_runs_hides_the_page_and_creates_no_table(home):
    from ioweather.store import probe

    open_store(Settings.resolve(home)).require(probe.COMPONENT)  # a store, without bench tables

    with Server(frozen_app(home, T0)) as srv:
        assert srv.get("/api/bench")[0] == 404
        assert b"ioweather_bench_" not in srv.get("/metrics")[2]
    assert "bench" not in open_store(Settings.resolve(home)).versions()
