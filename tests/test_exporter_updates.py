"""The exporter over a store that changes under it: new files, a compaction, an import that removes
old files, targets that stop, missing and impossible values, hostile job ids; every number against a
direct DuckDB sum over the Parquet files that are there."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import threading
import time
import urllib.request

import duckdb
import numpy as np
import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families

from ioweather.config import Settings
from ioweather.services.telemetry.exporter import TelemetryExporter, make_server
from ioweather.store import telemetry_layout as layout
from ioweather.store.telemetry_compact import compact_finished_days

DAY = 86_400_000_000_000
T0 = int(pd.Timestamp("2024-03-01T00:00:00Z").value)
VALID = "value BETWEEN 0 AND 1.7976931348623157e308"


def rows(target: str, metric: str, t0: int, n: int, step_s: float = 5.0, values=None, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 1 << 30, n).astype(float) if values is None else np.asarray(values, float)
    return pd.DataFrame({"time_ns": t0 + np.arange(n, dtype=np.int64) * int(step_s * 1e9), "target": target,
                         "metric": metric, "value": v, "interval_s": step_s})


def counters(text: str) -> dict[tuple, float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def sql_sums(settings, fs: str, metric: str) -> dict[str, float]:
    files = layout.data_files(layout.fs_dir(settings, fs))
    con = duckdb.connect()
    try:
        got = con.execute(f"SELECT target, sum(value) FROM read_parquet(?) WHERE metric = ? AND {VALID} GROUP BY ALL",
                          [[str(f) for f in files], metric]).fetchall()
    finally:
        con.close()
    return dict(got)


def ost_bytes(text: str, fs: str, kind: str = "write") -> dict[str, float]:
    return {dict(lab)["target"]: v for (name, lab), v in counters(text).items()
            if name == f"lustre_{kind}_bytes_total" and dict(lab)["fs"] == fs}


@pytest.fixture
def settings(tmp_path):
    return Settings.resolve(tmp_path / "home")


def test_new_files_add_and_a_compaction_changes_nothing(settings):
    fs = "scr"
    for k in range(3):  # three flushes of one collect, day D
        layout.write_rows(settings, fs, pd.concat([rows(f"scr-OST000{i}", "write_bytes", T0 + k * 60 * 10**9, 12, seed=10 * k + i)
                                                   for i in range(3)]), writer="collect-h")
    exp = TelemetryExporter(settings)
    first = exp.exposition().decode()
    assert ost_bytes(first, fs) == pytest.approx(sql_sums(settings, fs, "write_bytes"), rel=1e-15)
    assert exp.exposition().decode() == first  # nothing new: the same text, from the cache
    new = pd.concat([rows(f"scr-OST000{i}", "write_bytes", T0 + DAY + 3600 * 10**9, 10, values=np.full(10, 1000.0))
                     for i in range(3)])
    layout.write_rows(settings, fs, new, writer="collect-h")
    second = ost_bytes(exp.exposition().decode(), fs)
    assert second["scr-OST0001"] == ost_bytes(first, fs)["scr-OST0001"] + 10_000.0
    assert second == pytest.approx(sql_sums(settings, fs, "write_bytes"), rel=1e-15)
    made = compact_finished_days(layout.fs_dir(settings, fs), "collect-h", T0 + 10 * DAY, 0)
    assert len(made) == 1  # day D: three files become one; day D+1 has one already
    after = ost_bytes(exp.exposition().decode(), fs)
    assert after == second and exp.rebuilds == 0
    assert counters(exp.exposition().decode())[("ioweather_exporter_files", (("fs", fs),))] == 2.0


def test_a_folded_file_removed_sums_everything_again(settings):
    fs = "scr"
    for d in range(5):
        layout.write_rows(settings, fs, rows("scr-OST0000", "read_bytes", T0 + d * DAY, 20, seed=d), writer="imp-a")
    exp = TelemetryExporter(settings)
    before = ost_bytes(exp.exposition().decode(), fs, "read")
    assert sum(f.targets is None for f in exp._files.values()) == 3  # days 0-2: two days before the newest
    oldest = sorted(layout.data_files(layout.fs_dir(settings, fs)))[0]
    layout.remove_files([oldest])
    after = ost_bytes(exp.exposition().decode(), fs, "read")
    assert exp.rebuilds == 1
    assert after == pytest.approx(sql_sums(settings, fs, "read_bytes"), rel=1e-15)
    assert after["scr-OST0000"] < before["scr-OST0000"]  # a real decrease is shown (Prometheus: a reset)


def test_stopped_targets_and_old_readings_are_left_out(settings):
    fs = "scr"
    df = pd.concat([rows("scr-OST0000", "write_bytes", T0, 720),                     # 1 h, then gone
                    rows("scr-OST0001", "write_bytes", T0, 2160),                    # 3 h
                    rows("scr-OST0000", "free_bytes", T0, 1, values=[5e12]),
                    rows("scr-OST0001", "free_bytes", T0, 1, values=[6e12]),         # read once, long ago
                    rows("scr-OST0001", "free_bytes", T0 + 3 * 3600 * 10**9 - 10**9, 1, values=[7e12])])
    layout.write_rows(settings, fs, df)
    c = counters(TelemetryExporter(settings).exposition().decode())
    assert set(ost_bytes(TelemetryExporter(settings).exposition().decode(), fs)) == {"scr-OST0001"}
    free = {dict(lab)["target"]: v for (n, lab), v in c.items() if n == "lustre_free_bytes"}
    assert free == {"scr-OST0001": 7e12}
    c = counters(TelemetryExporter(settings, stale_s=4 * 3600).exposition().decode())
    free = {dict(lab)["target"]: v for (n, lab), v in c.items() if n == "lustre_free_bytes"}
    assert free == {"scr-OST0000": 5e12, "scr-OST0001": 7e12}


def test_missing_negative_and_infinite_values_count_nothing(settings):
    vals = [100.0, np.nan, -5.0, np.inf, 50.0]
    layout.write_rows(settings, "scr", pd.concat([rows("scr-OST0000", "write_bytes", T0, 5, values=vals),
                                                  rows("scr-OST0001", "write_bytes", T0, 5, values=[np.nan] * 5),
                                                  rows("host1:sda", "busy_s", T0, 5, values=[0.5, 0.25, np.nan, 1, 2])]))
    c = counters(TelemetryExporter(settings).exposition().decode())
    assert ost_bytes(TelemetryExporter(settings).exposition().decode(), "scr") == {"scr-OST0000": 150.0}
    assert c[("ioweather_busy_seconds_total", (("fs", "scr"), ("target", "host1:sda")))] == 3.75


HOSTILE = 'x"y\\z\n{a="b"}\tü'


def test_hostile_job_ids_round_trip_and_pass_promtool(settings):
    names = [HOSTILE, "ok.1", "</script>", "a" * 300]
    df = pd.concat([rows(f"scr-OST000{i % 2}/{j}", "job_write_bytes", T0, 3, values=[float(i + 1)] * 3)
                    for i, j in enumerate(names)] + [rows("scr-OST0000", "write_bytes", T0, 3)])
    layout.write_rows(settings, "scr", df)
    text = TelemetryExporter(settings).exposition().decode()
    got = {dict(lab)["jobid"]: v for (n, lab), v in counters(text).items() if n == "lustre_job_write_bytes_total"}
    assert got == {j: 3.0 * (i + 1) for i, j in enumerate(names)}
    promtool = shutil.which("promtool")
    if promtool:
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr


def test_jobs_outside_the_window_and_below_the_top(settings):
    df = pd.concat([rows("scr-OST0000/old", "job_write_bytes", T0, 10, values=[1e12] * 10),     # early, big
                    rows("scr-OST0000/a", "job_write_bytes", T0 + 3600 * 10**9, 10, values=[3.0] * 10),
                    rows("scr-OST0001/a", "job_read_bytes", T0 + 3600 * 10**9, 10, values=[1.0] * 10),
                    rows("scr-OST0001/b", "job_write_bytes", T0 + 3600 * 10**9, 10, values=[2.0] * 10),
                    rows("scr-OST0000/c", "job_write_bytes", T0 + 3600 * 10**9, 10, values=[1.0] * 10),
                    rows("scr-MDT0000/c", "job_md_open", T0 + 3600 * 10**9, 10, values=[7.0] * 10)])
    layout.write_rows(settings, "scr", df)
    c = counters(TelemetryExporter(settings, top_jobs=2).exposition().decode())
    jobs = {(n, dict(lab)["jobid"]): v for (n, lab), v in c.items() if n.startswith("lustre_job_")}
    assert jobs == {("lustre_job_write_bytes_total", "a"): 30.0, ("lustre_job_read_bytes_total", "a"): 10.0,
                    ("lustre_job_write_bytes_total", "b"): 20.0}
    assert c[("ioweather_lustre_jobs_active", (("fs", "scr"),))] == 3.0
    c = counters(TelemetryExporter(settings, top_jobs=3).exposition().decode())
    assert c[("lustre_job_stats_total", (("component", "mdt"), ("fs", "scr"), ("jobid", "c"), ("operation", "open")))] == 70.0


def test_a_scrape_during_the_first_summing_says_not_ready(settings):
    layout.write_rows(settings, "scr", rows("scr-OST0000", "write_bytes", T0, 10))
    exp = TelemetryExporter(settings)
    exp._lock.acquire()  # what the first summing of a big store holds
    try:
        c = counters(exp.exposition().decode())
    finally:
        exp._lock.release()
    assert c == {("ioweather_exporter_ready", ()): 0.0}
    text = exp.exposition()
    c = counters(text.decode())
    assert c[("ioweather_exporter_ready", ())] == 1.0 and ost_bytes(text.decode(), "scr")
    layout.write_rows(settings, "scr", rows("scr-OST0000", "write_bytes", T0 + 60 * 10**9, 10))
    exp._lock.acquire()  # a later update that takes long (a rebuild): scrapes get the last text, not a gap
    try:
        assert exp.exposition() == text
    finally:
        exp._lock.release()
    assert exp.exposition() != text


def test_http_server_gzip_landing_and_404(settings):
    layout.write_rows(settings, "scr", rows("scr-OST0000", "write_bytes", T0, 10))
    exp = TelemetryExporter(settings)
    server = make_server(exp, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        req = urllib.request.Request(base + "/metrics", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.headers["Content-Encoding"] == "gzip" and r.headers["Content-Type"].startswith("text/plain")
            assert gzip.decompress(r.read()) == exp.exposition()
        with urllib.request.urlopen(base + "/", timeout=10) as r:
            assert b'href="/metrics"' in r.read()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/nope", timeout=10)
        assert e.value.code == 404
    finally:
        server.shutdown()
        server.server_close()


def test_render_is_what_prometheus_client_writes():
    """views.exposition.render against prometheus_client's generate_latest on the same families."""
    from prometheus_client import generate_latest
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from ioweather.views.exposition import Family, render

    fams = [Family("lustre_job_write_bytes_total", "counter", 'Bytes \\ written\nby "jobs".', ("fs", "component", "jobid"),
                   [(("scr", "ost", HOSTILE), 1.5e21), (("scr", "ost", "é"), 0.0), (("s", "mdt", ""), 123456789.0)]),
            Family("ioweather_cpu_busy_ratio", "gauge", "CPU.", ("target", "fs"),
                   [(("h1", "scr"), 0.1 + 0.2), (("h2", "scr"), float("nan")), (("h3", "scr"), float("inf")),
                    (("h4", "scr"), -1e-300), (("h5", "scr"), 1234567.0)]),
            Family("ioweather_exporter_ready", "gauge", "Ready.", (), [((), 1.0)]),
            Family("lustre_read_bytes_total", "counter", "Empty family.", ("fs", "target"), [])]

    class Reference:
        def collect(self):
            for f in fams:
                cls = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
                m = cls(f.name.removesuffix("_total") if f.kind == "counter" else f.name, f.help, labels=list(f.labels))
                for values, v in f.samples:
                    m.add_metric(list(values), v)
                yield m

    assert render(fams) == generate_latest(Reference())


def test_a_damaged_file_counts_nothing_and_the_others_still_do(settings, cli):
    for k in range(3):
        layout.write_rows(settings, "scr", rows("scr-OST0000", "write_bytes", T0 + k * 600 * 10**9, 10,
                                                values=[float(10**k)] * 10), writer="collect-h")
    files = sorted(layout.data_files(layout.fs_dir(settings, "scr")))
    lost = float(pd.read_parquet(files[1])["value"].sum())
    files[1].write_bytes(b"PAR1 this is not parquet PAR1")  # a disk error, a truncated copy
    said = []
    exp = TelemetryExporter(settings, say=said.append)
    c = counters(exp.exposition().decode())
    assert lost in (10.0, 100.0, 1000.0)
    assert ost_bytes(exp.exposition().decode(), "scr") == {"scr-OST0000": 1110.0 - lost}
    assert c[("ioweather_exporter_unreadable_files", (("fs", "scr"),))] == 1.0
    assert c[("ioweather_exporter_files", (("fs", "scr"),))] == 2.0
    assert len(said) == 1 and str(files[1]) in said[0] and "cannot read" in said[0]
    r = cli("export", "--once", home=settings.home)
    assert r.returncode == 0 and "lustre_write_bytes_total" in r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and "cannot read" in r.stderr


def test_the_server_sums_new_files_without_a_scrape(settings):
    from ioweather.services.telemetry.exporter import serve

    layout.write_rows(settings, "scr", rows("scr-OST0000", "write_bytes", T0, 10, values=[1.0] * 10))
    exp = TelemetryExporter(settings)
    server = make_server(exp, "127.0.0.1", 0)
    stop = threading.Event()
    t = threading.Thread(target=serve, args=(exp, server, stop), kwargs={"refresh_s": 0.2}, daemon=True)
    t.start()
    try:
        assert exp.ready.wait(60)
        layout.write_rows(settings, "scr", rows("scr-OST0000", "write_bytes", T0 + 60 * 10**9, 10, values=[2.0] * 10))
        deadline = time.monotonic() + 60
        while (len(exp._files) < 2 or exp._cache is None) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(exp._files) == 2 and exp._cache is not None  # summed and rendered, no scrape asked
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/metrics", timeout=10) as r:
            assert ost_bytes(r.read().decode(), "scr") == {"scr-OST0000": 30.0}
    finally:
        stop.set()
        t.join(30)
    assert not t.is_alive()
