"""Issue 28 item 2 for the workload, report, contents, bench, jobs and job answers: each is one service
function returning a dataclass, and the command's `--json`, `/api/<slug>` and the service's `to_json()`
are one document for the same window, on real data (the LMT database of docs/workload.md's example,
two real Darshan logs, tokio-abc's benchmark rows) and a tree built here (whose totals this file knows).
The API carries no key its dataclass does not declare, besides the form fields a page says it adds.
(This file also holds what tests/test_api_equals_cli.py checked: `/api/<page>` of workload, report, jobs and
bench, with the page's defaults too, equals the command's `--json`, run as a process.)"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone
from urllib.parse import quote

import pytest

from ioweather.config import Settings
from ioweather.encoding import to_json
from ioweather.services.bench import runs as bench
from ioweather.services.jobs import darshan
from ioweather.services.jobs import answer as one_log  # the unit-rule key maps live with the one-log answer
from ioweather.services.content import fsstats
from ioweather.services.answers import report
from ioweather.services.telemetry import workload
from ioweather.services.answers.events import Params
from ioweather.services.runtime.stores import open_store
from ioweather.web.app import create_app
from shared_stores import TWO_LOGS as LOGS, copy_home, day_logs_bench
from web_server import Server, api

pytestmark = pytest.mark.slow  # a CLI process per surface

FS = "snx11025"
SINCE, UNTIL = "2018-01-28T08:00:00Z", "2018-01-28T08:05:00Z"
RESAMPLE_S, SMOOTH_S, MIN_AMP = 5.0, 30.0, 100 * 2**20
WINDOW_ARGS = ["--fs", FS, "--since", SINCE, "--until", UNTIL, "--resample", "5s", "--smooth", "30s",
               "--min-amplitude", "100MiB/s"]
QUERY = "&".join(f"{k}={quote(v, safe='')}" for k, v in
                 {"fs": FS, "since": SINCE, "until": UNTIL, "resample": "5s", "smooth": "30s",
                  "min_amplitude": "100MiB/s"}.items())
#: the tree snapshotted as "before", and what "after" adds: (path, bytes)
BEFORE = [("p1/a", 1000), ("p1/b", 30000), ("p2/c", 5), ("top", 700)]
ADDED = [("p2/big", 400000), ("p3/x", 12)]


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def _plain(obj):
    """What a JSON client reads (NaN -> null, numpy -> numbers), as the CLI and the API write it."""
    return json.loads(to_json(obj))


def _names(cls) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _write(root, files):
    for rel, size in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * size)


@pytest.fixture(scope="module")
def home(testdata, tmp_path_factory):
    from conftest import run_cli

    work = tmp_path_factory.mktemp("typed")
    home = copy_home(day_logs_bench(tmp_path_factory), work / "home")
    tree = work / "tree"
    _write(tree, BEFORE)
    run_cli("fsstats", str(tree), "--label", "before", "-q", home=home, check=True)
    _write(tree, ADDED)
    after = run_cli("fsstats", str(tree), "--label", "after", "-q", "--json", home=home, check=True)
    (work / "after.json").write_text(after.stdout)
    return home


@pytest.fixture(scope="module")
def settings(home):
    return Settings.resolve(home)


@pytest.fixture(scope="module")
def store(settings):
    s = open_store(settings)
    yield s
    s.dispose()


@pytest.fixture(scope="module")
def server(settings):
    with Server(create_app(settings)) as s:
        yield s


def _api(server, path: str) -> dict:
    code, doc = api(server, path)
    assert code == 200, doc
    return doc


def _cli_json(cli, home, *args):
    return json.loads(cli(*args, "--json", home=home, check=True).stdout)


def test_workload(server, settings, home, cli):
    answer = workload.workload_view(settings, FS, _utc(SINCE), _utc(UNTIL), RESAMPLE_S, 0.05, SMOOTH_S, MIN_AMP,
                                    86400.0, 20000)
    assert isinstance(answer, workload.WorkloadView) and isinstance(answer.result, workload.Workload)
    assert isinstance(answer.series, workload.WorkloadSeries) and isinstance(answer.daily_rates, workload.DailyRates)
    doc = _api(server, f"/api/workload?{QUERY}")
    form = {"fs", "fs_all", "since", "until", "resample_s", "resamples_s", "smooth_s", "min_amplitude_bps",
            "min_amplitude", "max_events_shown", "span"}  # what the page adds: its form's fields and its window
    assert set(doc) - form == _names(workload.WorkloadView)
    assert {k: doc[k] for k in _names(workload.WorkloadView)} == _plain(answer.to_json())
    assert set(doc["result"]) == _names(workload.Workload)
    assert set(doc["series"]) == _names(workload.WorkloadSeries)
    assert set(doc["daily_rates"]) == _names(workload.DailyRates)
    assert doc["result"] == _cli_json(cli, home, "workload", *WINDOW_ARGS)
    # the window as asked, 5 s intervals: 60 of them, and the plot shows every one
    assert doc["result"]["samples"] + doc["result"]["missing_samples"] == 60 == doc["series"]["points"]
    assert doc["result"]["events"], "the example's window has events above 100 MiB/s"


def test_report(server, settings, home, cli):
    answer = report.compute(settings, FS, _utc(SINCE), _utc(UNTIL), Params(RESAMPLE_S, SMOOTH_S, MIN_AMP))
    assert isinstance(answer, report.Report)
    doc = _api(server, f"/api/report?{QUERY}")
    assert set(doc) == {"fs_all", "report", "span"}  # the page adds only its form's file systems and its window
    assert set(doc["report"]) == _names(report.Report)
    assert doc["report"] == _plain(answer.to_json()) == _cli_json(cli, home, "report", *WINDOW_ARGS)
    # the report's events are the workload's, over the same series
    wl = _cli_json(cli, home, "workload", *WINDOW_ARGS)
    assert [e["start"] for e in doc["report"]["events"]["events"]] == [e["start"] for e in wl["events"]]


def _summary_keys() -> set[str]:
    return _names(darshan.ArchiveSummary) | {one_log.BYTE_KEYS[k] for k in ("bytes_read", "bytes_written")} \
        | {"per_node_bps_by_project"}


def test_jobs(server, settings, store, home, cli):
    summary = darshan.archive_summary(settings, projects_file=None, cores_per_node=None, min_procs=1024,
                                      min_bytes=500 * 2**20, top=10)
    assert isinstance(summary, darshan.ArchiveSummary)
    assert summary.jobs == len(LOGS) and summary.failed_logs == 0
    doc = _api(server, "/api/jobs?sort=runtime&order=asc&limit=1&offset=1")
    assert doc["summary"] == _plain(summary.to_json()) == _cli_json(cli, home, "jobs", "summary")
    assert _api(server, "/api/jobs")["summary"] == doc["summary"]  # the page's own order and paging: the same
    assert set(doc["summary"]) == _summary_keys()
    view = darshan.jobs_view(store, darshan.ArchiveIndex(store), "runtime", "asc", 1, 1, doc["projects_shown"])
    assert isinstance(view, darshan.JobsView) and isinstance(view.list, darshan.JobList)
    assert doc == _plain(view.to_json())
    assert set(doc) == _names(darshan.JobsView) and set(doc["list"]) == _names(darshan.JobList)
    # the second shortest of the two jobs is the longer one: paging and sorting happen in the service
    longest = max(darshan.list_jobs(store).rows, key=lambda r: r.runtime_s)
    assert [r["id"] for r in doc["list"]["rows"]] == [longest.id]


def test_jobs_list_and_the_jobs_page_show_one_row(server, store, home, cli):
    """`jobs list --json` and the Jobs page's rows are one `JobRow` per job: the same document, key for key."""
    listed = darshan.list_jobs(store)
    assert listed.rows and all(isinstance(r, darshan.JobRow) for r in listed.rows)
    cli_rows = _cli_json(cli, home, "jobs", "list")
    assert cli_rows == _plain(listed.to_json())
    page = {r["id"]: r for r in _api(server, "/api/jobs?limit=1000")["list"]["rows"]}
    assert sorted(page) == sorted(r["id"] for r in cli_rows)
    for r in cli_rows:
        assert list(page[r["id"]]) == list(r) and page[r["id"]] == r, r["id"]
    # the unit-rule twins beside the old keys, as everywhere else
    assert all(r["read_bytes"] == r["bytes_read"] and r["bps"] == (None if r["mibps"] is None else r["mibps"] * 2**20)
               for r in cli_rows)


def test_job(server, settings, store, home, cli):
    for row in darshan.list_jobs(store).to_json():
        answer = darshan.stored_job(store, settings.parquet_dir, row["id"])
        assert isinstance(answer, darshan.StoredJob)
        doc = _api(server, f"/api/job?id={row['id']}")
        own = {k: v for k, v in doc.items() if k not in ("umami", "why")}  # the system's side: services/answers/umami, why
        assert own == _plain(answer.to_json()) == _cli_json(cli, home, "jobs", "show", row["id"])
        renamed = {v for k, v in {**one_log.BYTE_KEYS, **one_log.RATE_KEYS}.items() if k in own}
        assert set(own) - renamed == _names(darshan.StoredJob)
        assert own["job"]["nprocs"] == row["nprocs"] and own["totals"]["bytes_read"] == row["read_bytes"]


def test_bench(server, store, home, cli):
    answer = bench.bench_summary(store)
    assert isinstance(answer, bench.BenchSummary)
    assert _plain(answer.to_json()) == _cli_json(cli, home, "bench", "summary")
    page = bench.page(store, None, "read", None, None)
    assert isinstance(page, bench.BenchPage)
    doc = _api(server, "/api/bench?direction=read")
    assert doc == _plain(page.to_json()) and set(doc) == _names(bench.BenchPage)
    # the page's rows are the command's, each with its last fractions of peak
    assert [{k: v for k, v in r.items() if k != "last_k"} for r in doc["rows"]] == _plain(answer.to_json())
    default = _api(server, "/api/bench")  # the page as first opened: its rows too
    assert [{k: v for k, v in r.items() if k != "last_k"} for r in default["rows"]] == _plain(answer.to_json())
    assert doc["direction"] == "read" and len(doc["series"]["time"]) == next(
        r["runs"] for r in doc["rows"] if (r["motif"], r["direction"], r["fs"]) == (doc["motif"], "read", doc["fs"]))


def test_snapshot_is_typed(tmp_path):
    _write(tmp_path, BEFORE)
    snapshot, notes = fsstats.take_snapshot(str(tmp_path), threads=1, cross_mounts=False, exclude=(), progress=None)
    assert isinstance(snapshot, fsstats.Snapshot) and notes == []
    assert (snapshot.files, snapshot.bytes) == (len(BEFORE), sum(s for _, s in BEFORE))


@pytest.mark.parametrize("warn, crit", [(0.5, 0.25), (0.9, 0.86)])
def test_bench_check(store, home, cli, warn, crit):
    answer = bench.check(store, warn, crit)
    assert isinstance(answer, bench.BenchCheck)
    proc = cli("bench", "check", "--warn", str(warn), "--crit", str(crit), "--json", home=home)
    assert proc.returncode == answer.exit_code and json.loads(proc.stdout) == _plain(answer.to_json())
    assert set(json.loads(proc.stdout)) == _names(bench.BenchCheck)
    # the state of each series from its last runs' fractions of peak, as the summary has them
    rows = {(r.motif, r.direction, r.fs): r.last_k for r in bench.bench_summary(store, last=3).rows}
    for s in answer.series:
        last = rows[(s.motif, s.direction, s.fs)]
        below = lambda t: len(last) == 3 and all(f is not None and f < t for f in last)  # noqa: E731
        assert s.state == ("CRITICAL" if below(crit) else "WARNING" if below(warn) else "OK")


def test_contents(server, store, home, cli):
    listing = fsstats.snapshot_listing(store)
    picked = {}
    for label in ("before", "after"):
        sid = fsstats.newest_snapshot_id(store, label)
        picked[label] = (fsstats.Picked(sid, label, label, f"stored label {label!r} (id {sid})"),
                         fsstats.snapshot_by_id(store, sid).document)
    (this, doc_b), (other, doc_a) = picked["after"], picked["before"]
    answer = fsstats.contents(listing, this, doc_b, other, doc_a)
    assert isinstance(answer, fsstats.Contents) and isinstance(answer.diff, fsstats.Growth)
    doc = _api(server, "/api/contents?label=after&compare=before")
    assert doc == _plain(answer.to_json()) and set(doc) == _names(fsstats.Contents)
    assert set(doc["diff"]) == _names(fsstats.Growth)
    assert doc["diff"] == _cli_json(cli, home, "fsstats", "diff", "before", "after")
    # `fsstats DIR --json` is the stored snapshot, and the page's header its fields
    printed = json.loads((home.parent / "after.json").read_text())
    assert set(printed) == _names(fsstats.Snapshot) and printed == doc_b
    assert doc["snapshot"] == {k: printed.get(k) for k in fsstats.SNAPSHOT_FIELDS}
    # against the tree as built here
    assert doc["snapshot"]["files"] == len(BEFORE) + len(ADDED)
    assert doc["snapshot"]["bytes"] == sum(s for _, s in BEFORE + ADDED)
    total = doc["diff"]["total"]
    assert total["bytes_change"] == sum(s for _, s in ADDED) and total["files_change"] == len(ADDED)
    # first-level directories; the files at the root are the project "."
    assert {p["name"]: p["bytes"] for p in doc["projects"]} == {"p1": 31000, "p2": 400005, "p3": 12, ".": 700}
