"""Stored jobs: the row <-> characterization mapping (stats.job.ROW_MAP) round trip through a real
store, one top-files ranking for the CLI report and the page, `jobs list` / `jobs show`, and the
unit-rule JSON keys beside the old ones."""

from __future__ import annotations

import html
import json
import re
import sqlite3

import pytest
from conftest import run_cli
from darshan_support import TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)

from ioweather.config import Settings
from ioweather.services.jobs.darshan import (
    MiB,
    job_answer,
    job_html,
    log_top_files,
    stored_job,
)
from ioweather.sources.darshan_log import read_log
from ioweather.stats.job import (
    ROW_MAP,
    characterization_fields,
    characterize,
    file_columns,
    row_fields,
)
from ioweather.stats.job_files import TOP_FILES
from ioweather.store import jobs as jobs_store
from ioweather.store import open_store

LOGS = sorted(TESTDATA_LOGS.glob("*.darshan"))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    h = tmp_path_factory.mktemp("stored-jobs")
    run_cli("jobs", "ingest", *map(str, LOGS), "--workers", "2", "--json", home=h, timeout=300, check=True)
    return h


@pytest.fixture(scope="module")
def store(home):
    return open_store(Settings.resolve(home))


def _db(home) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{home}/ioweather.sqlite?mode=ro", uri=True)


def _get(d, path):
    for k in path.split("."):
        d = d[k]
    return d


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:40])
def test_row_round_trip_through_the_store(log, store, home):
    """characterize(log) -> job row (ingest, stored in SQLite) -> back: the characterization's fields."""
    ch = characterize(read_log(str(log), dxt=False, heatmaps=False))
    (h,) = [c["log_hash"] for c in jobs_store.find_jobs(store, str(ch["job"]["jobid"])) if c["path"] == str(log)]
    row, _ = jobs_store.job(store, Settings.resolve(home).parquet_dir, h)
    back = characterization_fields(row)
    for col, path, _kind in ROW_MAP:
        assert _get(back, path) == _get(ch, path), (log.name, col, path)
    # and without the store: row_fields is the inverse for every field it writes
    assert {c: v for c, v in row_fields(ch).items()} == {c: row[c] for c in row_fields(ch)}, log.name


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:40])
def test_cli_report_and_page_list_the_same_top_files(log, store, home):
    rep, dlog = job_answer(str(log), dxt=True)
    h = next(c["log_hash"] for c in jobs_store.find_jobs(store, str(rep.job.jobid)) if c["path"] == str(log))
    page = stored_job(store, Settings.resolve(home).parquet_dir, h)
    assert page.top_files == log_top_files(dlog), log.name
    # the HTML report (what `job LOG --html` writes) lists those files in that order
    text = job_html(rep, dlog, source=str(log))
    table = text.split("Files that moved the most data", 1)[1].split("</table>", 1)[0]
    names = [html.unescape(n) for n in re.findall(r"<tr><td><code>(.*?)</code>", table, re.DOTALL)]
    assert names == [f.name or f"(record {f.record_id})" for f in page.top_files], log.name
    assert len(names) == min(TOP_FILES, len(file_columns(dlog)["id"])), log.name


def test_jobs_list_counts_and_filters(home):
    with _db(home) as db:
        total = db.execute("SELECT count(*) FROM darshan_jobs").fetchone()[0]
        mpi = db.execute("SELECT count(*) FROM darshan_jobs WHERE instr(exe, 'mpi-io-test') > 0").fetchone()[0]
        uid = db.execute("SELECT uid, count(*) FROM darshan_jobs GROUP BY uid ORDER BY count(*) DESC").fetchone()
        since = db.execute("SELECT count(*) FROM darshan_jobs WHERE start_ns >= 1640995200000000000 "
                           "AND start_ns < 1672531200000000000").fetchone()[0]
        by_start = [r[0] for r in db.execute("SELECT log_hash FROM darshan_jobs ORDER BY start_ns DESC, log_hash")]
    assert total == len(LOGS) and 0 < mpi < total and 0 < since < total

    def listed(*args):
        return json.loads(run_cli("jobs", "list", "--json", *args, home=home, check=True).stdout)

    rows = listed("--limit", "1000")
    assert [r["id"] for r in rows] == by_start
    assert len(listed("--exe", "mpi-io-test")) == mpi
    assert all(r["uid"] == uid[0] for r in listed("--user", str(uid[0]))) and len(listed("--user", str(uid[0]))) >= uid[1]
    assert len(listed("--since", "2022-01-01", "--until", "2023-01-01")) == since
    assert len(listed("--limit", "3")) == 3
    r = rows[0]
    # one row type with the Jobs page (services.jobs.darshan.JobRow): the unit-rule keys beside the old ones
    assert {"read_bytes", "write_bytes", "bps", "bytes_read", "mibps"} <= set(r)
    human = run_cli("jobs", "list", "--exe", "mpi-io-test", home=home, env={"COLUMNS": "250"}, check=True)
    shown = listed("--exe", "mpi-io-test")
    assert sum(r["id"][:16] in human.stdout for r in rows) == mpi == len(shown)
    assert all(r["id"][:16] in human.stdout for r in shown) and "e+" not in human.stdout


def test_jobs_show_by_jobid_hash_and_ambiguous(home):
    with _db(home) as db:
        h, jobid, verdict, codes = db.execute(
            "SELECT log_hash, jobid, verdict, finding_codes FROM darshan_jobs WHERE jobid = 4373053").fetchone()
        twins = [r[0] for r in db.execute("SELECT log_hash FROM darshan_jobs WHERE jobid = 3116902 ORDER BY log_hash")]
    for ident in (str(jobid), h[:10], h.upper()):
        out = json.loads(run_cli("jobs", "show", ident, "--json", home=home, check=True).stdout)
        assert out["id"] == h and out["verdict"] == verdict
        assert sorted(f["code"] for f in out["findings"]) == sorted(c for c in (codes or "").split(",") if c)
        assert out["totals"]["read_bytes"] == out["totals"]["bytes_read"]
    human = run_cli("jobs", "show", str(jobid), home=home, check=True)
    assert verdict in human.stdout.replace("\n", " ") or verdict[:40] in human.stdout
    # two logs of one job: one line naming both, exit 2 (a user error)
    amb = run_cli("jobs", "show", "3116902", home=home)
    assert len(twins) == 2 and amb.returncode == 2 and amb.stdout == ""
    assert len(amb.stderr.strip().splitlines()) == 1 and all(t[:16] in amb.stderr for t in twins)
    assert "Traceback" not in amb.stderr
    for bad in ("999999999", "zz", "0" * 70):
        p = run_cli("jobs", "show", bad, home=home)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_job_json_has_the_unit_rule_keys_beside_the_old(home):
    log = TESTDATA_LOGS / "imbalanced-io.darshan"
    rep = json.loads(run_cli("job", str(log), "--json", check=True).stdout)
    assert rep["totals"]["read_bytes"] == rep["totals"]["bytes_read"] > 0
    assert rep["totals"]["write_bytes"] == rep["totals"]["bytes_written"]
    assert rep["perf"]["bps"] == rep["perf"]["mibps"] * MiB
    assert rep["perf"]["agg_perf_by_slowest_bps"] == rep["perf"]["agg_perf_by_slowest_mibps"] * MiB
    for it in rep["interfaces"].values():
        assert it.get("read_bytes") == it.get("bytes_read")
    keys = list(rep["totals"])
    assert keys.index("read_bytes") == keys.index("bytes_read") + 1


def test_a_stored_level_is_read_as_json_reads_it():
    """`job_level` reads the stored findings' levels without parsing the JSON (the Jobs page reads every
    row): the same answer as json.loads, also when a message quotes a level."""
    import json

    from ioweather.services.jobs.darshan import job_level
    from ioweather.stats.findings import severity

    def stored(*levels, message="m"):
        return json.dumps([{"code": f"X0{i}", "level": lv, "cost_s": 1.0, "cost_share": 0.1, "message": message,
                            "fix": None} for i, lv in enumerate(levels)])

    cases = [stored("WARN", "INFO"), stored("INFO", message='says "level": "HIGH" in its text'), stored(),
             stored("HIGH", "WARN", message=r'\"level\": \"OK\"')]
    for text in cases:
        levels = [f["level"] for f in json.loads(text)]
        assert job_level("P05", text) == (max(levels, key=severity) if levels else "HIGH"), text
    assert job_level("P05,M02", None) == "HIGH" and job_level("", None) is None
