"""`ioweather export` against independent references: LMT's own tables (counter deltas summed in SQLite),
direct DuckDB sums over the Parquet files, exact job_stats bytes added to a live mock procfs tree while
`collect` samples it; `promtool check metrics` on the real output; a real Prometheus scraping the
exporter, its query API compared with the store; the servers Grafana dashboard's queries run on it."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import duckdb
import pytest
from prometheus_client.parser import text_string_to_metric_families

from collect_growth import collect_with_growth
from conftest import ROOT, run_cli
from lmt_reference import lmt_deltas
from ports import free_port
from shared_stores import copy_home, pytokio_telemetry

LMT = "lmt/snx11025_2018-01-28.sqlite3"
HOSTILE = 'a"b\\c\nd{e}=,é'
#: job id -> bytes written while collect runs (exact: the job_stats counters grow by this much)
JOBS = {"1001": 7 << 20, "dd.4242": 3 << 20, HOSTILE: 5 << 20, "small.1": 1 << 20}


def _job_stats(jobs: dict[str, int]) -> str:
    out = ["job_stats:"]
    for job, written in jobs.items():
        shown = job.replace("\n", " ")  # one line per job id in job_stats: a newline cannot survive it
        out += [f"- job_id:          {shown}", "  snapshot_time:   1510782606",
                "  read_bytes:      { samples:           0, unit: bytes, min:       0, max:       0, sum:               0 }",
                f"  write_bytes:     {{ samples:       {written // 4096}, unit: bytes, min:    4096, max: 4194304, sum:    {written} }}",
                "  punch:           { samples:           1, unit:  reqs }"]
    return "\n".join(out) + "\n"


def _collect_jobs(home: Path, testdata: Path, work: Path) -> None:
    """`collect` on a copy of the mock Lustre tree whose OST0000 job_stats grow by JOBS mid-run."""
    root = work / "tree"
    shutil.copytree(testdata / "lustre-procfs", root)
    js = root / "proc/fs/lustre/obdfilter/lustrefs-OST0000/job_stats"
    js.write_text(_job_stats({j: 0 for j in JOBS}))

    def grow():
        tmp = js.with_suffix(".tmp")
        tmp.write_text(_job_stats(JOBS))
        tmp.replace(js)

    collect_with_growth(home, root, grow)


@pytest.fixture(scope="module")
def home(tmp_path_factory, testdata):
    home = copy_home(pytokio_telemetry(tmp_path_factory), tmp_path_factory.mktemp("export") / "home")
    pyt = testdata / "pytokio"
    run_cli("import", "mmperfmon", str(pyt / "mmperfmon.2019-05-15-micro.tgz"), "--fs", "gpfsnode", home=home,
            check=True)
    _collect_jobs(home, testdata, tmp_path_factory.mktemp("tree"))
    return home


@pytest.fixture(scope="module")
def exposition(home) -> str:
    return run_cli("export", "--once", home=home, check=True).stdout


def samples(text: str) -> dict[str, list[tuple[dict, float]]]:
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _lmt_ost_bytes(testdata: Path) -> dict[str, dict[str, float]]:
    out = {}
    for col, key in (("READ_BYTES", "read"), ("WRITE_BYTES", "write")):
        d = lmt_deltas(testdata / LMT, f"""
            SELECT i.OST_NAME, d.{col} - LAG(d.{col}) OVER (PARTITION BY d.OST_ID ORDER BY t.TIMESTAMP)
            FROM OST_DATA d JOIN OST_INFO i USING (OST_ID) JOIN TIMESTAMP_INFO t USING (TS_ID)""")
        out[key] = {(k if k.startswith("snx") else f"snx11025-{k}"): float(v) for k, v in d.items()}
    return out


def _sql(home: Path, sql: str) -> list[tuple]:
    """A query over every data file of the store (`t`: the rows, with their dataset as `fs`)."""
    con = duckdb.connect()
    try:
        con.execute(f"""CREATE VIEW t AS SELECT * FROM read_parquet('{home}/parquet/telemetry/fs=*/date=*/*.parquet',
                        hive_partitioning = true)""")
        return con.execute(sql).fetchall()
    finally:
        con.close()


VALID = "value BETWEEN 0 AND 1.7976931348623157e308"


def test_promtool_accepts_it(exposition, tmp_path):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool not installed (Debian package 'prometheus')")
    p = subprocess.run([promtool, "check", "metrics"], input=exposition, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr
    assert exposition.count("# HELP ") == exposition.count("# TYPE ") > 20


def test_ost_bytes_equallmt_deltas(exposition, testdata):
    s = samples(exposition)
    want = _lmt_ost_bytes(testdata)
    for kind in ("read", "write"):
        got = {lab["target"]: v for lab, v in s[f"lustre_{kind}_bytes_total"] if lab["fs"] == "snx11025"}
        assert len(got) == 24 and got == want[kind]
        assert all(lab["component"] == "ost" for lab, _ in s[f"lustre_{kind}_bytes_total"])


def test_mdt_operations_equallmt_deltas(exposition, testdata):
    want = lmt_deltas(testdata / LMT, """
        SELECT o.OPERATION_NAME, d.SAMPLES - LAG(d.SAMPLES) OVER (PARTITION BY d.MDS_ID, d.OPERATION_ID ORDER BY t.TIMESTAMP)
        FROM MDS_OPS_DATA d JOIN OPERATION_INFO o USING (OPERATION_ID) JOIN TIMESTAMP_INFO t USING (TS_ID)""")
    got = {lab["operation"]: v for lab, v in samples(exposition)["lustre_stats_total"]
           if lab["fs"] == "snx11025" and lab["component"] == "mdt"}
    assert len(got) == 12 and got == {k: float(v) for k, v in want.items() if k in got}


def test_every_counter_is_the_stores_sum(exposition, home):
    """Each byte/operation counter equals a direct SQL sum of the stored amounts, and no target is missing."""
    s = samples(exposition)
    rows = _sql(home, f"""SELECT fs, metric, target, sum(value) FROM t
                          WHERE {VALID} AND metric IN ('read_bytes', 'write_bytes', 'read_ops', 'write_ops')
                             OR {VALID} AND (metric LIKE 'md\\_%' ESCAPE '\\' OR metric LIKE 'ost\\_%' ESCAPE '\\')
                          GROUP BY ALL""")
    lustre = re.compile(r"^[A-Za-z0-9_.-]+-(OST|MDT)[0-9a-f]{4}$")
    name = {"read_bytes": "read_bytes_total", "write_bytes": "write_bytes_total", "read_ops": "read_samples_total",
            "write_ops": "write_samples_total"}
    got = {}
    for fam, series in s.items():
        for lab, v in series:
            got[(fam, tuple(sorted(lab.items())))] = v
    checked = 0
    for fs, metric, target, total in rows:
        if lustre.match(target):
            comp = "ost" if "-OST" in target else "mdt"
            if metric in name:
                key = (f"lustre_{name[metric]}", (("component", comp), ("fs", fs), ("target", target)))
            else:
                op = metric.split("_", 1)[1]
                key = ("lustre_stats_total", (("component", comp), ("fs", fs), ("operation", op), ("target", target)))
        else:
            fam = {"read_ops": "read_operations_total", "write_ops": "write_operations_total"}.get(metric, f"{metric}_total")
            if metric.startswith("md_"):
                key = ("ioweather_metadata_operations_total", (("fs", fs), ("operation", metric[3:]), ("target", target)))
            else:
                key = (f"ioweather_{fam}", (("fs", fs), ("target", target)))
        assert key in got, key
        assert got[key] == pytest.approx(total, rel=1e-12, abs=1e-9), key
        checked += 1
    assert checked > 100
    assert {k[0] for k in got} >= {"lustre_read_bytes_total", "lustre_read_samples_total", "lustre_stats_total",
                                   "ioweather_read_bytes_total"}


def test_capacity_is_the_latest_reading(exposition, home):
    s = samples(exposition)
    rows = _sql(home, f"""SELECT target, arg_max(value, time_ns) FROM t
                          WHERE fs = 'snx11035' AND metric = 'avail_bytes' AND {VALID} GROUP BY ALL""")
    assert len(rows) == 25
    got = {lab["target"]: v for lab, v in s["lustre_available_bytes"] if lab["fs"] == "snx11035"}
    assert got == {t: pytest.approx(v, rel=1e-15) for t, v in rows}
    state = [lab for lab, v in s["ioweather_lustre_target_state"] if lab["fs"] == "snx11035"]
    assert len(state) == 25 and {lab["state"] for lab in state} == {"UP"}


def test_jobs_bytes_and_a_hostile_job_id(exposition):
    got = {lab["jobid"]: v for lab, v in samples(exposition)["lustre_job_write_bytes_total"]}
    assert got == {j.replace("\n", " "): float(b) for j, b in JOBS.items()}
    assert all(lab["component"] == "ost" and lab["fs"] == "lustrefs"
               for lab, _ in samples(exposition)["lustre_job_write_bytes_total"])
    md = samples(exposition)["lustre_job_stats_total"]
    assert md and {lab["component"] for lab, _ in md} == {"mdt"} and all(v >= 0 for _, v in md)


def test_top_jobs_bounds_the_series(home):
    text = run_cli("export", "--once", "--top-jobs", "2", "--fs", "lustrefs", home=home, check=True).stdout
    s = samples(text)
    assert {lab["jobid"] for lab, _ in s["lustre_job_write_bytes_total"]} == {"1001", HOSTILE.replace("\n", " ")}
    assert {lab["jobid"] for lab, _ in s["lustre_job_read_bytes_total"]} == {"1001", HOSTILE.replace("\n", " ")}
    active = _sql(home, """SELECT count(DISTINCT substr(target, strpos(target, '/') + 1)) FROM t
                           WHERE fs = 'lustrefs' AND metric LIKE 'job\\_%' ESCAPE '\\'""")[0][0]
    assert active > 4 and s["ioweather_lustre_jobs_active"] == [({"fs": "lustrefs"}, float(active))]
    assert "lustre_job_stats_total" not in s  # the MDT's jobs moved no bytes: below the top 2
    assert {lab["fs"] for series in s.values() for lab, _ in series if "fs" in lab} == {"lustrefs"}


def test_list_and_bad_input(home, exposition):
    r = run_cli("export", "--list", "--json", home=home, check=True)
    fams = {f["name"]: f for f in json.loads(r.stdout)["families"]}
    assert fams.keys() == {f.name if f.type != "counter" else f.name + "_total"
                           for f in text_string_to_metric_families(exposition)}
    read = fams["lustre_read_bytes_total"]
    assert read["type"] == "counter" and read["series"] == len(samples(exposition)["lustre_read_bytes_total"]) > 24
    for args, msg in ((["--fs", "nope", "--once"], "no telemetry for file system 'nope'"),
                      (["--fs", "../x", "--once"], "invalid file system name"),
                      (["--stale", "0s", "--once"], "must be positive"),
                      (["--once", "--json"], "--once prints the exposition")):
        r = run_cli("export", *args, home=home)
        assert r.returncode == 2 and r.stdout == "" and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1, r
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        r = run_cli("export", "--port", str(taken.getsockname()[1]), home=home, timeout=60)
    assert r.returncode == 2 and "cannot listen on 127.0.0.1" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def _dashboard_exprs() -> list[str]:
    dash = json.loads((ROOT / "grafana" / "ioweather-servers.json").read_text())
    return [t["expr"] for p in dash["panels"] for t in p["targets"]]


def test_dashboard_names_exist(exposition):
    names = set(samples(exposition))
    exprs = _dashboard_exprs()
    assert len(exprs) >= 12
    used = {m for e in exprs for m in re.findall(r"\b((?:lustre|ioweather)_[a-z_]+)\b", e)}
    assert used and used <= names, used - names


@pytest.mark.slow
def test_a_real_prometheus_scrapes_it(home, testdata, tmp_path):
    """Prometheus scrapes `ioweather export` on loopback; its query API answers with the store's numbers,
    and every query of the servers dashboard runs on it."""
    prom = shutil.which("prometheus")
    if not prom:
        pytest.skip("prometheus not installed (Debian package 'prometheus')")
    exporter = subprocess.Popen([sys.executable, "-m", "ioweather", "export", "--port", "0"],
                                env={**os.environ, "IOWEATHER_HOME": str(home)}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    proc = log = None
    try:
        line = exporter.stderr.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
        assert m, line
        port = free_port()
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
            "scrape_configs:\n  - job_name: ioweather\n    static_configs:\n"
            f"      - targets: ['127.0.0.1:{m.group(1)}']\n")
        log = open(tmp_path / "prometheus.log", "w")
        proc = subprocess.Popen([prom, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=log)
        base = f"http://127.0.0.1:{port}"

        def query(q):
            with urllib.request.urlopen(base + "/api/v1/query?query=" + urllib.parse.quote(q), timeout=5) as r:
                d = json.loads(r.read())
            assert d["status"] == "success", (q, d)
            return d["data"]["result"]

        deadline = time.monotonic() + 90
        result = []
        while time.monotonic() < deadline and len(result) < 2:
            try:
                result = query('lustre_read_bytes_total{fs="snx11025"}[30s]')
                result = result if all(len(r["values"]) >= 2 for r in result) else []
            except OSError:
                pass
            time.sleep(0.5)
        assert result, (tmp_path / "prometheus.log").read_text()[-2000:]
        assert [float(r["value"][1]) for r in query('up{job="ioweather"}')] == [1.0]
        want = _lmt_ost_bytes(testdata)
        for kind in ("read", "write"):
            got = {r["metric"]["target"]: float(r["value"][1])
                   for r in query(f'lustre_{kind}_bytes_total{{fs="snx11025", component="ost"}}')}
            assert got == want[kind]
        total = _sql(home, f"SELECT sum(value) FROM t WHERE fs = 'snx11025' AND metric = 'write_bytes' AND {VALID}")[0][0]
        assert float(query('sum(lustre_write_bytes_total{fs="snx11025"})')[0]["value"][1]) == pytest.approx(total, rel=1e-12)
        jobs = {r["metric"]["jobid"]: float(r["value"][1]) for r in query("lustre_job_write_bytes_total")}
        assert jobs == {j.replace("\n", " "): float(b) for j, b in JOBS.items()}  # the hostile id went through
        # a static store: every counter stands still, so rate() is 0 and never negative
        assert all(float(r["value"][1]) == 0.0 for r in query("rate(lustre_write_bytes_total[10s])"))
        for e in _dashboard_exprs():
            assert query(e.replace('$fs', ".*").replace("$__rate_interval", "30s")), e
    finally:
        exporter.terminate()
        exporter.wait(timeout=30)
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        if log is not None:
            log.close()
