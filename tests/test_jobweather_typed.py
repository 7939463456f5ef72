"""Issue 28 item 2 for a job's weather and its UMAMI answer: one typed `Job` that every path builds, one
`Weather` built in one place (what the store keeps), one `Umami` answer that `umami --json`, the job
page's `/api/job` panel and the HTML report all render. On the planted motif of tests/test_job_weather.py
(13 Darshan jobs through the store's writers, 5 s telemetry of 4 OSTs, scheduler rows)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from test_job_weather import planted  # noqa: F401 (the fixture)
from umami_planted import S, T0

from ioweather.services.jobs import weather as job_weather
from ioweather.services.answers import umami
from ioweather.services.jobs.weather import CoverageFactors, Job, Weather
from ioweather.services.answers.umami import Umami
from ioweather.store import job_weather as wstore
from ioweather.store import scheduler
from ioweather.views.output import to_json
from ioweather.views.umami_report import figure_data

LAST = f"{13:064x}"  # the log hash of job id 1012, the slow one


def _declared(cls) -> set[str]:
    return {f.name for f in fields(cls)}


def _schedule(store):
    start = T0 + 12 * 86_400 * S
    scheduler.replace_jobs(store, [
        {"cluster": "c", "jobid": "1012", "start_ns": start - 10 * S, "end_ns": start + 70 * S, "nnodes": 2},
        {"cluster": "c", "jobid": "7", "start_ns": start - 3600 * S, "end_ns": start + 30 * S, "nnodes": 10}], "test")


def test_every_path_builds_one_job_shape(planted):
    _settings, store = planted
    _schedule(store)
    by_id = job_weather.find_job(store, "1012")
    by_hash = job_weather.find_job(store, LAST)
    listed = {j.key: j for j in job_weather.darshan_jobs(store)}
    sched = job_weather.find_job(store, "7")
    assert all(isinstance(j, Job) for j in (by_id, by_hash, sched, *listed.values()))
    assert by_id == by_hash and not by_id.files  # from its row alone: no per-file read to answer
    full = job_weather.with_files(store, [by_id])[0]
    assert full == listed[f"darshan:{LAST}"]  # the same job, whichever way it was found
    assert (full.opens, full.mounts, full.motif("scratch")) == (16, ["/scratch"], "ior / 2 nodes / write / scratch")
    assert sched.key == "sched:c:7" and sched.motif("scratch") == "? / 10 nodes / read / scratch"


def test_the_weather_is_built_once_and_stored_as_its_document(planted):
    _settings, store = planted
    answer = umami.umami(store, "1012")
    stored = wstore.get(store, f"darshan:{LAST}", "scratch")["doc"]
    w = job_weather.compute(store, job_weather.find_job(store, "1012"), "scratch")
    assert isinstance(w, Weather)
    # the store keeps the document and, beside it, the verdict and climate the Jobs list reads
    assert {k: v for k, v in stored.items() if k not in ("climate", "verdict")} == json.loads(to_json(w.to_json()))
    assert stored["verdict"] == answer.verdict
    assert Weather.from_json(stored).to_json() == stored
    # nothing in the document that Weather does not declare: the rest are its coverage factors
    extra = set(stored) - _declared(Weather)
    assert extra == set(w.coverage_factors.to_json()) and all(k.startswith(("coverage_factor_", "contention_")) for k in extra)
    assert extra >= {"contention_bw", "coverage_factor_bw_flagged", "coverage_factor_bw_all_targets"}
    # a window without telemetry has no coverage factors at all, and says so
    early = job_weather.Job(key="bench:x", id="x", jobid=None, exe="x", nnodes=1, start_ns=T0 - 86_400 * S,
                            end_ns=T0 - 86_000 * S)
    empty = job_weather.compute(store, early, "scratch").to_json()
    assert empty["no_data"] is True and "cf_variant" not in empty and "fs_bytes" not in empty
    assert empty["notes"][0] == "no telemetry for scratch in the job's window"


def test_the_umami_answer_is_typed_and_every_surface_renders_it(planted):
    from web_server import Server, api

    from ioweather.config import Settings
    from ioweather.web.app import create_app

    settings, store = planted
    _schedule(store)
    answer = umami.umami(store, "1012")
    assert isinstance(answer, Umami) and isinstance(answer.weather, Weather)
    doc = json.loads(to_json(answer.to_json()))
    assert set(doc) == _declared(Umami)
    assert set(doc["weather"]) <= _declared(Weather) | set(answer.weather.coverage_factors.to_json())
    assert {"climate", "verdict"}.isdisjoint(doc["weather"])  # answers, not weather
    assert doc["weather"]["concurrent_jobs"] == 1 and doc["source"] == "darshan" and doc["fs"] == "scratch"
    p = run_cli("umami", "1012", "--json", home=settings.home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == doc
    with Server(create_app(Settings.resolve(settings.home), warm=False)) as server:
        code, page = api(server, f"/api/job?id={LAST}")
    assert code == 200, page
    # the page's panel is the view of the same answer (it adds colours and texts: presentation only)
    assert page["umami"] == json.loads(to_json({"available": True, **figure_data(doc)}))
    assert page["umami"]["verdict"] == doc["verdict"] and page["umami"]["history_jobs"] == 12


def test_a_scheduler_job_answers_the_same_way(planted):
    settings, store = planted
    _schedule(store)
    answer = umami.umami(store, "7", fs="scratch")
    assert isinstance(answer, Umami) and answer.source == "scheduler" and isinstance(answer.weather, Weather)
    p = run_cli("umami", "7", "--fs", "scratch", "--json", home=settings.home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == json.loads(to_json(answer.to_json()))


def test_why_reads_the_typed_weather(planted):
    """`why` takes its coverage factor and fullest OST from the Weather (services/answers/why.py)."""
    from ioweather.services.answers.why import _system
    from ioweather.services.jobs.facts import LogFacts

    _settings, store = planted
    w = umami.umami(store, "1012").weather
    facts = LogFacts(io_time_s=10.0, bytes_written=1, bytes_read=0)
    system, model, evidence = _system(facts, w, (None, None), [], "scratch", True, "")
    assert model == "coverage_factor" and system == pytest.approx(10.0 * (1 - w.coverage_factor_write_bw))


def test_why_says_a_flagged_coverage_factor_is_clock_skew_not_missing_bytes(planted):
    """A window whose servers recorded fewer bytes than the job moved (CF > 1.2, left out as an artefact) is said
    as such: the lab's quiet twin on a loaded machine was told "no byte counts" while 1.7 GB were stored."""
    from dataclasses import replace

    from ioweather.services.answers.why import _system
    from ioweather.services.jobs.facts import LogFacts

    _settings, store = planted
    w = umami.umami(store, "1012").weather
    facts = LogFacts(io_time_s=10.0, bytes_written=1, bytes_read=0)
    gone = dict(coverage_factor_bw=None, coverage_factor_read_bw=None, coverage_factor_write_bw=None)
    kinds = w.coverage_factors.kinds
    assert "write_bw" in {f.kind for f in kinds}
    flagged = replace(w, **gone, coverage_factors=CoverageFactors(tuple(replace(f, flagged=f.flagged or f.kind == "write_bw")
                                                                        for f in kinds)))
    system, model, evidence = _system(facts, flagged, (None, None), [], "scratch", True, "")
    assert system is None and model == "unknown"
    assert "fewer write bytes than the job moved itself" in evidence and "clock" in evidence
    plain = replace(w, **gone, coverage_factors=CoverageFactors(tuple(replace(f, flagged=None) for f in kinds)))
    assert "no byte counts" in _system(facts, plain, (None, None), [], "scratch", True, "")[2]


def test_correlations_are_typed_and_the_cli_prints_their_rows(planted):
    from ioweather.services.answers.umami import Correlations

    settings, store = planted
    answer = umami.correlations(store, fs="scratch")
    assert isinstance(answer, Correlations) and answer.jobs == 13
    assert set(answer.to_json()) == _declared(Correlations)
    p = run_cli("correlations", "--fs", "scratch", "--json", home=settings.home)
    assert p.returncode == 0, p.stderr
    keys = ("metric", "r", "p", "n", "strength", "magnitude")
    # the listing is the answer's rows, field for field (a service-side key pick, not the command's)
    assert json.loads(p.stdout) == json.loads(to_json([{k: getattr(r, k) for k in keys} for r in answer.rows]))
    assert json.loads(p.stdout) == json.loads(to_json(answer.listing().to_json()))
    cf = next(r for r in answer.rows if r.metric == "coverage_factor_bw")
    assert cf.n == 13 and cf.performance == "fraction_of_peak"


def test_an_imported_feature_row_answers_typed_without_a_file_system(testdata, home, tmp_path):
    """tokio-abc's first 400 Edison rows (a real year's benchmark features): the import and a row's
    UMAMI are typed; the row's answer has no `fs` key (no telemetry of ours) and its weather is its
    bandwidth alone."""
    import pandas as pd

    from ioweather.config import Settings
    from ioweather.services.answers.umami import FeatureImport, FeatureWeather
    from ioweather.store import open_store

    d = testdata / "tokio-abc"
    csv = tmp_path / "edison-summaries_head.csv"
    raw = pd.read_csv(d / "edison-summaries_2017-02-14-2018-02-15.csv.gz", low_memory=False).head(400)
    raw.to_csv(csv, index=False)
    store = open_store(Settings.resolve(home, None))
    res = umami.import_job_features(store, str(csv), "tokio-abc", str(d / "abcconfig.json"))
    assert isinstance(res, FeatureImport) and res.rows_in_file == 400 and set(res.to_json()) == _declared(FeatureImport)
    kept = raw[raw["darshan_agg_perf_by_slowest_posix"].notna()]
    jobid = str(kept["_jobid"].iloc[-1])
    p = run_cli("umami", jobid, "--json", home=home)
    assert p.returncode == 0, p.stderr
    answer = umami.umami(store, jobid, system=res.set)
    assert isinstance(answer, Umami) and isinstance(answer.weather, FeatureWeather)
    doc = json.loads(to_json(answer.to_json()))
    assert json.loads(p.stdout) == doc and "fs" not in doc and set(doc["weather"]) == {"performance_bps"}
    assert doc["weather"]["performance_bps"] == pytest.approx(
        kept["darshan_agg_perf_by_slowest_posix"].iloc[-1] * 1024 * 1024, rel=1e-12)
