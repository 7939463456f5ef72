"""The Jobs list and the job page over a store filled by `ioweather jobs ingest` on real Darshan logs:
the same numbers as `ioweather jobs summary --json` and `ioweather job LOG --json`, escaping, bad input,
hidden without jobs. The browser tests are in test_web_pages_browser.py."""

from __future__ import annotations

from dataclasses import asdict
import json
import re
from urllib.parse import quote

import numpy as np
import pytest

from ioweather.services.jobs.darshan import job_answer, log_top_files, with_unit_keys
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.views.job_console import lustre_text
from ioweather.views.output import to_json
from ioweather.web.app import create_app
# `cli`: the commands in this process (their answers are the point here, not their processes)
from inprocess import in_process_cli  # noqa: F401  (fixture)
from web_pages_data import (  # noqa: F401  (fixtures)
    CORES_PER_NODE, NASTY, NASTY_NAME, nasty_hash, pages_home, pages_server)
from web_server import Server, api, assert_bad_request, assert_never_500, escaped_page


@pytest.fixture(scope="module")
def jobs_home(pages_home):
    return pages_home


@pytest.fixture(scope="module")
def jserver(pages_server):
    return pages_server



def normal(obj):
    """What a JSON client sees (NaN -> null, numpy scalars -> numbers)."""
    return json.loads(to_json(obj))


# --------------------------------------------------------------------------- numbers
def test_summary_equals_the_cli(jserver, jobs_home, cli):
    code, web = api(jserver, "/api/jobs")
    assert code == 200
    proc = cli("jobs", "summary", "--json", home=jobs_home, check=True)
    assert web["summary"] == json.loads(proc.stdout)
    assert web["summary"]["jobs"] == 15 and web["summary"]["failed_logs"] == 1
    assert web["failed"]["total"] == 1 and NASTY_NAME in web["failed"]["rows"][0]["path"]


def _key(v):
    return -np.inf if v is None else v


@pytest.mark.parametrize("sort,field", [("bytes", "moved_bytes"), ("runtime", "runtime_s"),
                                        ("mibps_per_node", "mibps_per_node"), ("mibps", "mibps"),
                                        ("start", "start"), ("nprocs", "nprocs")])
def test_list_sorts_and_pages_through_every_job(jserver, sort, field):
    seen, values = [], []
    for offset in range(0, 15, 4):
        code, d = api(jserver, f"/api/jobs?sort={sort}&order=desc&limit=4&offset={offset}")
        assert code == 200 and d["list"]["total"] == 15
        seen += [r["id"] for r in d["list"]["rows"]]
        values += [r[field] for r in d["list"]["rows"]]
    assert len(seen) == len(set(seen)) == 15  # every job exactly once
    known = [v for v in values if v is not None]
    assert known == sorted(known, reverse=True)
    assert all(v is None for v in values[len(known):])  # unknown values last
    code, d = api(jserver, f"/api/jobs?sort={sort}&order=asc&limit=1000")
    asc = [r[field] for r in d["list"]["rows"] if r[field] is not None]
    assert asc == sorted(asc)


def test_list_rows_follow_the_job_rows(jserver):
    code, d = api(jserver, "/api/jobs?limit=1000")
    rows = d["list"]["rows"]
    for r in rows:
        assert r["moved_bytes"] == (r["bytes_read"] or 0) + (r["bytes_written"] or 0)
        if r["mibps"] is not None and r["nnodes"]:
            assert r["mibps_per_node"] == pytest.approx(r["mibps"] / r["nnodes"], rel=1e-12)
        else:
            assert r["mibps_per_node"] is None
    assert sum(r["level"] == "HIGH" for r in rows) == d["levels"]["HIGH"]
    # Ingested with --cores-per-node: every job that did I/O has a MiB/s per node.
    assert sum(r["mibps_per_node"] is not None for r in rows) >= 10
    # The scatter carries every job; level counts add up.
    assert d["plot"]["shown"] == d["plot"]["total"] == 15
    assert d["levels"]["HIGH"] + d["levels"]["WARN"] + d["levels"]["none"] == 15


def test_job_page_equals_the_job_command(jserver, testdata):
    """For every real log: header, interfaces, mounts and findings as `ioweather job LOG --json` gives them."""
    code, d = api(jserver, "/api/jobs?limit=1000")
    by_path = {}
    for r in d["list"]["rows"]:
        code, page = api(jserver, f"/api/job?id={r['id'][:12]}")
        assert code == 200
        by_path[page["path"]] = page
    logs = sorted((testdata / "darshan").glob("*.darshan"))
    assert len(logs) == 14
    levels_checked = set()
    for log in logs:
        page = by_path[str(log)]
        rep, dlog = job_answer(str(log), cores_per_node=CORES_PER_NODE)
        rep = normal(rep.to_json())  # what `job LOG --json` prints; the page is `jobs show --json`
        # the files `job LOG --html` lists are the page's, in the same order (one stats.job_files.top_files)
        assert page["top_files"] == normal(with_unit_keys([asdict(f) for f in log_top_files(dlog)])), log.name
        for k in ("jobid", "uid", "exe", "nprocs", "nnodes", "start", "end", "runtime_s", "log_version",
                  "partial_modules"):
            assert page["job"][k] == rep["job"][k], (log.name, k)
        assert page["totals"] == rep["totals"], log.name
        for k in ("mibps", "agg_perf_by_slowest_mibps", "io_time_s", "io_fraction_of_runtime", "mibps_per_node"):
            assert page["perf"][k] == rep["perf"][k], (log.name, k)
        assert page["sharing"] == rep["sharing"], log.name
        assert page["access"]["seq_fraction"] == rep["access"]["seq_fraction"]
        common = rep["access"]["common_sizes"]
        assert page["access"]["common_access_bytes"] == (common[0]["size_bytes"] if common else None)
        # per interface, rebuilt from the stored per-file table
        web_if = {m["module"]: m for m in page["interfaces"]}
        for mod, it in rep["interfaces"].items():
            if not it["records"]:
                continue
            w = web_if.pop(mod)
            assert w["files"] == it["files"], (log.name, mod)
            for k in ("bytes_read", "bytes_written", "reads", "writes", "opens"):
                assert w[k] == (it[k] or 0), (log.name, mod, k)
            for k in ("read_time_s", "write_time_s", "meta_time_s"):
                assert w[k] == pytest.approx(it[k] or 0.0, rel=1e-9, abs=1e-12), (log.name, mod, k)
        assert not web_if, (log.name, web_if)
        # per mount, with the Lustre layout (stripe count, size, OSTs) as the CLI shows it
        assert [{k: v for k, v in m.items() if k != "lustre_text"} for m in page["mounts"]] == rep["mounts"], log.name
        assert [m["lustre_text"] for m in page["mounts"]] == [lustre_text(m.get("lustre")) for m in rep["mounts"]]
        # findings: the stored HIGH/WARN codes, each with the level job_findings gives it
        expected = {f["code"]: f["level"] for f in rep["findings"] if f["level"] in ("HIGH", "WARN")}
        assert {f["code"]: f["level"] for f in page["findings"]} == expected, log.name
        # ranked by cost as the CLI ranks them, with the CLI's costs and verdict
        ranked = [f for f in rep["findings"] if f["level"] in ("HIGH", "WARN")]
        assert [f["code"] for f in page["findings"]] == [f["code"] for f in ranked], log.name
        assert [f["cost_s"] for f in page["findings"]] == pytest.approx([f["cost_s"] for f in ranked], rel=1e-12)
        assert page["verdict"] == rep["verdict"], log.name
        levels_checked |= set(expected)
        worst = "HIGH" if "HIGH" in expected.values() else "WARN" if expected else None
        assert page["level"] == worst
    assert len(levels_checked) >= 8  # the table of levels is checked on many codes


def test_top_files_are_the_largest(jserver):
    code, d = api(jserver, "/api/jobs?sort=bytes&limit=1")
    code, page = api(jserver, f"/api/job?id={d['list']['rows'][0]['id']}")
    moved = [f["bytes_read"] + f["bytes_written"] for f in page["top_files"]]
    assert moved == sorted(moved, reverse=True) and moved[0] > 0
    assert page["files_stored"] and len(page["top_files"]) <= 25


# --------------------------------------------------------------------------- escaping
@pytest.mark.parametrize("path", ["/jobs", "/jobs?sort=level", "/job?id=" + nasty_hash()[:16]])
def test_labels_from_data_are_escaped(jserver, path):
    html, data = escaped_page(jserver, path)
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html or "&lt;img src=x" in html
    if path.startswith("/job?"):
        assert data["job"]["exe"] == NASTY + " --input " + NASTY
        assert all(f["name"].startswith(f"/scratch/{NASTY}/") for f in data["top_files"])


# --------------------------------------------------------------------------- bad input
BAD = [
    ("/api/jobs?sort=size", "sort must be one of"),
    ("/api/jobs?order=up", "order must be one of"),
    ("/api/jobs?limit=0", "between 1 and 1000"),
    ("/api/jobs?limit=5000", "between 1 and 1000"),
    ("/api/jobs?offset=-1", "between 0 and"),
    ("/api/jobs?offset=1e3", "whole number"),
    ("/api/jobs?sort=bytes&sort=runtime", "given 2 times"),
    ("/api/jobs?path=/etc/passwd", "unknown parameter 'path'"),
    ("/api/job", "give the job with id="),
    ("/api/job?id=xyz", "8 to 64 hexadecimal digits"),
    ("/api/job?id=" + quote("<script>"), "8 to 64 hexadecimal digits"),
    ("/api/job?id=" + "a" * 65, "8 to 64 hexadecimal digits"),
    ("/api/job?id=../../etc", "8 to 64 hexadecimal digits"),
    ("/api/job?log=/etc/passwd", "unknown parameter 'log'"),
]


@pytest.mark.parametrize("path,message", BAD)
def test_bad_parameters_are_400_with_a_message(jserver, path, message):
    assert_bad_request(jserver, path, message)


def test_unknown_job_is_404(jserver):
    code, d = api(jserver, "/api/job?id=" + "0" * 64)
    assert code == 404 and "no job with id" in d["error"]


def test_random_parameters_never_500(jserver):
    assert_never_500(jserver, {"/api/jobs": ["sort", "order", "limit", "offset"], "/api/job": ["id"]},
                     list("0123456789abcdef-<>'\"&%/\\ ") + ["bytes", "desc", "\x00", "é", "1e9", "99999999999999999999"],
                     tries=120, seed=11, codes=(200, 400, 404), max_len=14)


# --------------------------------------------------------------------------- no data / new data
def test_hidden_without_jobs_and_nothing_created(tmp_path):
    settings = Settings.resolve(tmp_path / "home")
    store = open_store(settings)
    store.require(probe_store.COMPONENT)  # a store with the probe's tables only
    before = store.versions()
    with Server(create_app(settings, warm=False)) as s:
        code, index = api(s, "/api")
        assert {p["slug"]: p["available"] for p in index["pages"]}["jobs"] is False
        code, d = api(s, "/api/jobs")
        assert code == 404 and "jobs ingest" in d["error"]
        code, _, html = s.get("/jobs")
        assert code == 404 and "jobs ingest" in html.decode()
        code, _, html = s.get("/status")
        assert 'href="/jobs"' not in html.decode()
    assert store.versions() == before  # viewing created no table
    store.dispose()


def test_new_jobs_show_without_restart(tmp_path, testdata, cli):
    home = tmp_path / "home"
    cli("jobs", "ingest", str(testdata / "darshan" / "imbalanced-io.darshan"), home=home, check=True)
    with Server(create_app(Settings.resolve(home), warm=False)) as s:
        code, _, html = s.get("/status")
        assert 'href="/jobs"' in html.decode()  # in the navigation once there are jobs
        assert api(s, "/api/jobs")[1]["summary"]["jobs"] == 1
        cli("jobs", "ingest", str(testdata / "darshan" / "empty_log.darshan"), home=home, check=True)
        assert api(s, "/api/jobs")[1]["summary"]["jobs"] == 2


def test_jobs_with_fs_lists_the_jobs_that_ran_on_it(tmp_path, testdata, cli):
    """issue 38: /jobs?fs=NAME answered 400 ("unknown parameter 'fs'"). It lists the jobs whose file system,
    as `why` names it (one resolver), is NAME, and says so; the page and its /api twin agree; an unknown
    NAME is refused as /servers refuses it. theta is the file system of job 1452113755 by the fs-map
    (its log's /lus/theta-fs0); no job ran on `other`."""
    home = tmp_path / "home"
    csv = tmp_path / "t.csv"
    csv.write_text("time,target,metric,value\n1600000000,t-OST0000,read_bytes,5\n1600000060,t-OST0000,read_bytes,5\n")
    for fs in ("theta", "other"):
        cli("import", "csv", str(csv), "--fs", fs, "--interval", "60s", "-q", home=home, check=True)
    (home / "fs-map").write_text("/lus/theta-fs0 theta\n")
    logs = ["imbalanced-io.darshan", "mpi-io-test-x86_64-3.0.0.darshan", "e3sm_io_heatmap_only.darshan"]
    cli("jobs", "ingest", *[str(testdata / "darshan" / f) for f in logs], "--workers", "1", "-q", home=home, check=True)
    with Server(create_app(Settings.resolve(home), warm=False)) as s:
        every = api(s, "/api/jobs")[1]["list"]["rows"]
        want: dict[str, set] = {"theta": set(), "other": set()}
        for r in every:
            fs = json.loads(cli("why", r["id"][:12], "--json", home=home, check=True).stdout)["fs"]
            if fs is not None:
                want[fs].add(r["id"])
        assert len(every) == 3 and len(want["theta"]) == 1 and not want["other"], want
        for fs, ids in want.items():
            code, d = api(s, f"/api/jobs?fs={fs}")
            assert code == 200 and d["fs"] == fs
            assert {r["id"] for r in d["list"]["rows"]} == ids and d["list"]["total"] == len(ids)
            assert d["fs_note"].startswith(f"{len(ids)} of 3 jobs ran on {fs} "), d["fs_note"]
            # the summary, levels and plot are of these jobs (they were the whole archive's): counted
            # against the unfiltered list's own rows
            mine = [r for r in every if r["id"] in ids]
            assert d["summary"]["jobs"] == len(ids) and d["plot"]["total"] == len(ids)
            assert d["summary"]["bytes_written"] == sum(r["bytes_written"] or 0 for r in mine), d["summary"]
            assert sum(d["levels"].values()) == len(ids)
            code, _, html = s.get(f"/jobs?fs={fs}")
            html = html.decode()
            assert code == 200 and d["fs_note"].split(" (")[0] in html
            assert set(re.findall(r'<a href="/job\?id=([0-9a-f]+)">', html)) == {i[:16] for i in ids}
            assert f"sort=jobid&amp;order=desc&amp;limit=100&amp;fs={fs}" in html  # sorting keeps the file system
        for path in ("/api/jobs?fs=nosuch", "/api/servers?fs=nosuch"):
            assert_bad_request(s, path, "unknown file system 'nosuch'; known: other, theta")
