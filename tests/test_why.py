"""`ioweather why JOB` end to end (issue 29): real public Darshan logs ingested by `jobs ingest` in a
real process, server telemetry planted through the store's writer (a storm by a culprit job during
the job's run, or the job alone), scheduler rows for the job and the culprit.

The expected numbers are computed here from what was planted and from PyDarshan's report of the log
(the advisor's I/O time and saving), never read back from the answer."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import cli_env, run_cli
from inprocess import run_cli as in_process_cli

from ioweather.config import Settings
from ioweather.services.answers.why import NO_SHARE
from ioweather.store import open_store
from ioweather.store import telemetry_layout as layout

S = 10**9
GIB = 1 << 30
JOB_LOG = "imbalanced-io.darshan"            # Lustre, /lus/theta-fs0, 12 min of I/O, jobid 1452113755
MULTI = ("snyder_python3_id3116902-2110482_12-19-66980-12360425722114849340_1.darshan",
         "snyder_python3_id3116902-2110483_12-19-66980-15861026832475351160_1.darshan")  # one job, two logs
CULPRIT = "424242"
TARGETS = 4
#: The storm: reads and writes of 4 GiB/s each for 10 minutes, from 5 minutes into the job.
STORM_FROM_S, STORM_FOR_S, STORM_BPS = 300, 600, 4 * GIB


def _report(testdata, name):
    from ioweather.services.jobs.darshan import job_answer

    rep, log = job_answer(str(testdata / "darshan" / name))
    return rep.raw(), log


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, testdata):
    """A store holding the three logs, as `jobs ingest` (a real process) stores them."""
    home = tmp_path_factory.mktemp("why") / "home"
    paths = [str(testdata / "darshan" / n) for n in (JOB_LOG, *MULTI)]
    run_cli("jobs", "ingest", *paths, "--workers", "1", home=home, timeout=300, check=True)
    rep, log = _report(testdata, JOB_LOG)
    return home, rep, log


def _window(log) -> tuple[int, int]:
    return int(round(log.start_time_s * S)), int(round(log.end_time_s * S))


def _telemetry(rep, log, storm: bool) -> pd.DataFrame:
    """5 s samples on TARGETS servers from an hour before the job to an hour after: the job's own POSIX
    bytes spread evenly over its run, and (storm) the culprit's reads and writes."""
    start, end = _window(log)
    t = np.arange(start - 3600 * S, end + 3600 * S, 5 * S, dtype=np.int64)
    inside = (t >= start) & (t < end)
    posix = rep["interfaces"]["POSIX"]
    hot = (t >= start + STORM_FROM_S * S) & (t < start + (STORM_FROM_S + STORM_FOR_S) * S)
    frames = []
    for metric, job_bytes in (("read_bytes", posix["bytes_read"]), ("write_bytes", posix["bytes_written"])):
        per = np.where(inside, job_bytes / inside.sum() / TARGETS, 0.0)
        if storm:
            per = per + np.where(hot, STORM_BPS * 5 / TARGETS, 0.0)
        for k in range(TARGETS):  # not named OSTnnnn: the coverage factor is over all the servers
            frames.append(pd.DataFrame({"time_ns": t, "target": f"oss{k}", "metric": metric, "value": per,
                                        "interval_s": 5.0}))
    return pd.concat(frames, ignore_index=True)


def _plant(src, dst, rep, log, dataset: str, storm: bool, fs_map: str | None = None, culprit: bool = True):
    from ioweather.store.scheduler import replace_jobs

    shutil.copytree(src, dst)
    settings = Settings.resolve(dst)
    layout.write_rows(settings, dataset, _telemetry(rep, log, storm))
    if fs_map:
        (dst / "fs-map").write_text(fs_map)
    start, end = _window(log)
    rows = [dict(cluster="theta", jobid=str(rep["job"]["jobid"]), user="me", name="imbalanced", nnodes=8, ncpus=512,
                 start_ns=start, end_ns=end)]
    if culprit:
        rows.append(dict(cluster="theta", jobid=CULPRIT, user="storm", name="ior", nnodes=64, ncpus=4096,
                         start_ns=start + (STORM_FROM_S - 10) * S, end_ns=start + (STORM_FROM_S + STORM_FOR_S + 10) * S))
    store = open_store(settings)
    replace_jobs(store, rows, "test")
    store.dispose()
    return dst


def _why(home, *args) -> dict:
    """`why ARGS --json` in this process (tests/inprocess.py: the same answer as a process, without the
    1-1.5 s of CPU a new interpreter spends importing pandas, DuckDB and SQLAlchemy for each call)."""
    p = in_process_cli("why", *args, "--json", home=home, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _assert_budget(w: dict):
    # an unknown system share is null (issue 38), never 0 s: it adds nothing to the sum; so is one the disk's
    # readings cannot tell from 0 (below_resolution)
    assert (w["system_s"] is None) == all(b["system_model"] in NO_SHARE for b in w["logs"])
    parts = (w["code_s"], w["system_s"] or 0.0, w["unexplained_s"])
    assert all(x >= 0 for x in parts)
    assert sum(parts) == pytest.approx(w["io_time_s"], rel=1e-12, abs=1e-9)
    for b in w["logs"]:
        assert (b["system_s"] is None) == (b["system_model"] in NO_SHARE)
        bp = (b["code_s"], b["system_s"] or 0.0, b["unexplained_s"])
        assert all(x >= 0 for x in bp) and sum(bp) == pytest.approx(b["io_time_s"], rel=1e-12, abs=1e-9)


@pytest.fixture(scope="module")
def stormy(ingested, tmp_path_factory):
    home, rep, log = ingested
    # the site's telemetry calls the file system "theta": only the fs-map links /lus/theta-fs0 to it
    dst = _plant(home, tmp_path_factory.mktemp("storm") / "home", rep, log, "theta", storm=True,
                 fs_map="/lus/theta-fs0 theta  # Lustre theta-fs0\n")
    # `lctl dl -t` an hour before the job: OST0003's server is down, its partner (10.0.0.3) serves it too
    lctl = tmp_path_factory.mktemp("lctl") / "dl.txt"
    nids = ["10.0.0.1@o2ib", "10.0.0.2@o2ib", "10.0.0.3@o2ib", "10.0.0.3@o2ib"]
    lctl.write_text(f"BEGIN {int(log.start_time_s) - 3600}\n" + "".join(
        f"{k + 5} UP osc theta-OST{k:04x}-osc-ffff8800 uuid-{k} 4 {n}\n" for k, n in enumerate(nids)))
    run_cli("import", "lctl", str(lctl), "--fs", "theta", home=dst, timeout=120, check=True)
    return dst, rep, log


def test_storm_costs_the_system_and_names_the_culprit(stormy):
    home, rep, log = stormy
    w = _why(home, str(rep["job"]["jobid"]))
    _assert_budget(w)
    io, saving = rep["perf"]["io_time_s"], rep["verdict_saving_s"]
    assert w["io_time_s"] == pytest.approx(io, rel=1e-12)
    assert w["code_s"] == pytest.approx(min(io, saving), rel=1e-12)
    assert w["fs"] == "theta" and w["system_model"] == "coverage_factor"
    # reference: the job's share of the servers' bytes in its dominant direction over [start, end + 5 s)
    posix = rep["interfaces"]["POSIX"]
    direction = "write" if posix["bytes_written"] > posix["bytes_read"] else "read"
    own = posix[f"bytes_{'written' if direction == 'write' else 'read'}"]
    cf = own / (own + STORM_BPS * STORM_FOR_S)
    assert w["system_s"] > 0
    assert w["system_s"] == pytest.approx(min(io - w["code_s"], io * (1 - cf)), rel=1e-6)
    # the storm is the one event overlapping the job, its culprit named with the largest share
    assert len(w["events"]) == 1
    culprits = w["events"][0]["culprits"]
    assert culprits[0]["job"] == CULPRIT and culprits[0]["share"] > 0.5
    assert {"job", "share", "method"} <= culprits[0].keys()
    assert str(rep["job"]["jobid"]) not in [c["job"] for c in culprits]  # the job is not its own culprit
    assert f"job {CULPRIT}" in w["verdict"]
    assert w["nnodes"] == 8 and w["nnodes_source"] == "scheduler"  # not 496 processes
    assert w["targets"]["failed_over"] == ["theta-OST0002", "theta-OST0003"]
    assert "2 targets served by a failover partner" in w["verdict"]
    assert w["climate"] is not None and any(m["metric"] == "coverage_factor_bw" for m in w["climate"]["metrics"])


def test_quiet_file_system_says_the_code(ingested, tmp_path):
    home, rep, log = ingested
    # named like the mount's last component: no fs-map needed
    quiet = _plant(home, tmp_path / "home", rep, log, "theta-fs0", storm=False, culprit=False)
    w = _why(quiet, str(rep["job"]["jobid"]))
    _assert_budget(w)
    assert w["fs"] == "theta-fs0" and w["system_model"] == "coverage_factor"
    assert w["system_s"] == pytest.approx(0.0, abs=1e-3 * w["io_time_s"])
    assert w["events"] == []
    # the code's share is the advisor's verdict saving: 47 % of imbalanced-io's I/O time since issue 39
    # (its slow text log is costed at the 113 s it takes, P08 is under the bar of 5 % of the run), so
    # "mostly" may go either way; what a quiet file system must give is the code named and the system ~0
    assert w["verdict"].startswith(("Mostly your code", "Mostly unexplained")) and "is your code" in w["verdict"]
    assert "the system cost ~0" in w["verdict"]


def test_no_telemetry_for_its_file_system_says_so(ingested, tmp_path):
    """Telemetry only for another file system: the job is not attached to the only dataset there is."""
    home, rep, log = ingested
    other = _plant(home, tmp_path / "home", rep, log, "scratch", storm=True)
    w = _why(other, str(rep["job"]["jobid"]))
    _assert_budget(w)
    assert w["fs"] is None and w["system_model"] == "unknown" and w["system_s"] is None  # unknown, not 0 s
    assert w["verdict"].startswith("Code half only")
    assert "no telemetry or probe for the job's file system (/lus/theta-fs0 (lustre)" in w["verdict"]
    assert w["code_s"] == pytest.approx(min(rep["perf"]["io_time_s"], rep["verdict_saving_s"]), rel=1e-12)
    # --fs names it explicitly
    forced = _why(other, str(rep["job"]["jobid"]), "--fs", "scratch")
    assert forced["fs"] == "scratch" and forced["system_model"] == "coverage_factor" and forced["system_s"] > 0


def test_a_job_of_several_logs_is_merged(ingested, testdata):
    home, _rep, _log = ingested
    w = _why(home, "3116902")
    _assert_budget(w)
    assert len(w["logs"]) == 2
    reps = [_report(testdata, n)[0] for n in MULTI]
    assert w["io_time_s"] == pytest.approx(sum(r["perf"]["io_time_s"] for r in reps), rel=1e-12)
    assert sorted(b["io_time_s"] for b in w["logs"]) == pytest.approx(sorted(r["perf"]["io_time_s"] for r in reps))
    assert w["job"] == "3116902"
    p = run_cli("why", "3116902", home=home, timeout=300)
    assert p.returncode == 0 and "2 logs of job 3116902" in p.stdout and w["logs"][1]["id"] in p.stdout
    # one log of it, by hash: that log alone
    one = _why(home, w["logs"][0]["id"])
    assert len(one["logs"]) == 1 and one["io_time_s"] == pytest.approx(w["logs"][0]["io_time_s"])


def test_a_log_path_and_the_human_output(stormy, testdata, tmp_path):
    home, rep, _log = stormy
    path = str(testdata / "darshan" / JOB_LOG)
    by_path = _why(home, path)
    by_id = _why(home, str(rep["job"]["jobid"]))
    for k in ("io_time_s", "code_s", "system_s", "unexplained_s", "system_model"):
        assert by_path[k] == by_id[k]
    p = run_cli("why", path, home=home, timeout=300)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first == by_id["verdict"][:len(first)]
    assert "I/O events during the job" in p.stdout and CULPRIT in p.stdout
    assert "e+" not in p.stdout  # no scientific notation for people
    out = tmp_path / "why.html"
    p = run_cli("why", path, "--html", str(out), home=home, timeout=300)
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert "<script" not in html and f"job {CULPRIT}" in html and "why-budget" in html


@pytest.mark.parametrize("args, message, code", [
    (["no-such-job"], "no job 'no-such-job'", 2),
    (["/nonexistent/x.darshan"], "no Darshan log at /nonexistent/x.darshan", 2),
    # a file that was opened and is not a log we can read: exit 1, as `job` (DarshanLogError)
    (["TEXT"], "not a Darshan log", 1),
    (["99999999999"], "no job '99999999999'", 2),
    (["--fs"], "requires an argument", 2),
    (["JOB", "--baseline-from", "2021-04-01"], "--baseline-from and --baseline-until go together", 2),
    (["JOB", "--baseline-from", "2021-04-02", "--baseline-until", "2021-04-01"],
     "--baseline-from must be before --baseline-until", 2),
])
def test_bad_input_is_one_line(ingested, tmp_path, args, message, code):
    home, _rep, _log = ingested
    text = tmp_path / "notes.darshan"
    text.write_text("not a log\n" * 400)
    job = str(_rep["job"]["jobid"])
    p = run_cli("why", *[str(text) if a == "TEXT" else job if a == "JOB" else a for a in args], home=home, timeout=120)
    assert p.returncode == code
    assert p.stderr.count("\n") == 1 and message in p.stderr and "Traceback" not in p.stderr


def _leaves(value, where="Why"):
    """Every (path, value) of a typed answer that is not a dataclass, a list, or a plain value."""
    import dataclasses

    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            yield from _leaves(getattr(value, f.name), f"{where}.{f.name}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{where}[{i}]")
    elif not isinstance(value, (str, int, float, bool, type(None))):
        yield where, value


def test_the_job_page_opens_with_the_same_answer(stormy):
    """One typed answer (issue 37): `why` is dataclasses down to its leaves, no dict inside; the CLI's
    --json and text, /api/job's `why` and the job page all render that one answer."""
    from web_server import Server, api

    from ioweather.services.answers.why import Event, LogBudget, why
    from ioweather.units import format_seconds
    from ioweather.views.output import to_json
    from ioweather.web.app import create_app

    home, rep, _log = stormy
    answer = why(Settings.resolve(home), str(rep["job"]["jobid"]))
    assert list(_leaves(answer)) == []
    assert all(isinstance(b, LogBudget) for b in answer.logs) and all(isinstance(e, Event) for e in answer.events)
    doc = json.loads(to_json(answer.to_json()))
    cli = _why(home, str(rep["job"]["jobid"]))
    assert cli == doc
    text = run_cli("why", str(rep["job"]["jobid"]), home=home, timeout=300)
    assert text.returncode == 0, text.stderr
    assert " ".join(text.stdout.split()).startswith(answer.verdict[:60])
    assert format_seconds(answer.system_s) in text.stdout and f"job {CULPRIT}" in text.stdout
    with Server(create_app(Settings.resolve(home), warm=False)) as server:
        code, page = api(server, f"/api/job?id={cli['logs'][0]['id']}")
        assert code == 200
        assert json.loads(to_json(page["why"])) == cli
        status, _, body = server.get(f"/job?id={cli['logs'][0]['id']}")
        assert status == 200
        text = body.decode() if isinstance(body, bytes) else body
        assert 'id="why-verdict"' in text and f"job {CULPRIT}" in text
        assert text.index('id="why-verdict"') < text.index('id="job-findings"')  # the page opens with it
        page_verdict = text[text.index('id="why-verdict"'):].split("</p>")[0]
        assert answer.verdict.split(" (")[0].replace("'", "&#39;") in page_verdict


def test_why_loads_only_what_it_answers_with(stormy):
    """issue 40: the events of one job's window come from the numpy detector, with no workload summary
    (its autocorrelation imported scipy.signal: 0.8 s of the 2.2 s `why` took); no Jinja for a `--json`
    answer (the job report's page), nor rich; no pyarrow.dataset (the refresh re-read the per-file part of the
    store's other jobs on every call); two DuckDB databases for its four telemetry reads (each opened
    its own, 30–120 ms apiece; the window's series is read with the workload's memory settings, a
    database of its own). Nor what cost `why` ~35 ms of CPU for nothing (branch whyfast2): the dashboard's
    file-system views (services.telemetry.fsview, for the lctl state, a job's user and the telemetry
    kinds: services.telemetry.fsfacts), the slowdown service (for checking --baseline-from/until), and
    SQLAlchemy's MySQL dialect with its six drivers' modules (the probe pieces' LONGBLOB). Nor SQLAlchemy
    itself (~0.2 s, branch whysql): an SQLite store whose weather rows are written is read through sqlite3
    alone (store/sqlite_reads.py); the first call, which writes them, takes the store's usual door. Nor
    PyDarshan, the findings pass and the job report's types (~0.1 s, branch why40): a log the store ingested,
    unchanged since, answers from the facts `jobs ingest` stored of its report (test_why_reads_no_log...)."""
    import subprocess
    import sys

    import sqlite3

    home, rep, _log = stormy
    db = sqlite3.connect(home / "ioweather.sqlite")
    with db:  # as on a store `why` never asked: no weather rows
        db.execute("DELETE FROM job_weather")
    db.close()
    first = _why(home, str(rep["job"]["jobid"]))  # writes them through the store's usual door
    code = ("import contextlib, io, sys\n"
            "import duckdb\n"
            "opened, connect = [], duckdb.connect\n"
            "duckdb.connect = lambda *a, **k: opened.append(1) or connect(*a, **k)\n"
            "from ioweather.cli import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    cli.main(['--home', {str(home)!r}, 'why', {str(rep['job']['jobid'])!r}, '--json'], "
            "prog_name='ioweather', standalone_mode=False)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'jinja2', 'rich', 'sqlalchemy',\n"
            "                                                             'darshan', 'cffi')\n"
            "             or m in ('pyarrow.dataset', 'ioweather.services.telemetry.fsview',\n"
            "                      'ioweather.services.probe.slowdown', 'ioweather.stats.findings',\n"
            "                      'ioweather.services.jobs.answer')), len(opened))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=cli_env(home, None))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[] 2"
    assert _why(home, str(rep["job"]["jobid"])) == first  # read through sqlite3: the same answer


def test_why_reads_no_log_an_ingest_read(stormy, testdata, tmp_path):
    """issue 40: `jobs ingest` stores what `why` needs of each log's report (darshan_jobs.why_facts, darshan
    store version 4), equal fact for fact (every float's digits) to what the report `job_answer` makes of
    the log now gives, the reference `why` read before. A store of version 3 (no column) upgrades in place
    and `why` answers it from its logs; the next ingest fills the column; the answer is the same throughout.
    Facts `why` would not have made (another version, a node count from --cores-per-node) are not used."""
    import sqlite3

    from ioweather.services.jobs.facts import CORES_PER_NODE, FACTS_VERSION, LogFacts
    from ioweather.services.jobs.report import job_answer

    home, rep, _log = stormy
    dst = tmp_path / "home"
    shutil.copytree(home, dst)
    db = sqlite3.connect(dst / "ioweather.sqlite")
    stored = dict(db.execute("SELECT path, why_facts FROM darshan_jobs").fetchall())
    db.close()
    assert sorted(stored) == sorted(str(testdata / "darshan" / n) for n in (JOB_LOG, *MULTI))
    for path, text in stored.items():
        assert LogFacts.usable(text).stored() == LogFacts.of_report(*job_answer(path)).stored(), path
    facts = json.loads(stored[str(testdata / "darshan" / JOB_LOG)])
    assert facts["facts"]["saving_s"] > 0 and facts["facts"]["advice"] and facts["facts"]["mounts"]
    for changed in ({"version": FACTS_VERSION + 1}, {"ioweather": "0.0.1"}, {"rules": "2026-11-28"}, {"rules": None},
                    {"facts": {**facts["facts"], "nnodes_source": CORES_PER_NODE}},
                    {"facts": {k: v for k, v in facts["facts"].items() if k != "hosts"}}):
        assert LogFacts.usable(json.dumps({**facts, **changed})) is None, changed
    assert LogFacts.usable(None) is None and LogFacts.usable("{") is None

    job = str(rep["job"]["jobid"])
    answers = [_why(dst, job), _why(dst, "3116902")]
    db = sqlite3.connect(dst / "ioweather.sqlite")
    with db:  # the store as the ioweather before this column wrote it
        db.execute("ALTER TABLE darshan_jobs DROP COLUMN why_facts")
        db.execute("UPDATE schema_versions SET version = 3 WHERE component = 'darshan'")
    assert [_why(dst, job), _why(dst, "3116902")] == answers  # upgraded by the usual door, the logs read
    assert db.execute("SELECT version FROM schema_versions WHERE component = 'darshan'").fetchall() == [(5,)]
    assert db.execute("SELECT COUNT(*), COUNT(why_facts) FROM darshan_jobs").fetchall() == [(3, 0)]
    run_cli("jobs", "ingest", *stored, "--workers", "1", home=dst, timeout=300, check=True)
    assert dict(db.execute("SELECT path, why_facts FROM darshan_jobs").fetchall()) == stored
    db.close()
    assert [_why(dst, job), _why(dst, "3116902")] == answers


def test_why_reads_the_log_of_facts_of_other_rules(stormy, tmp_path):
    """`why` on a row whose stored facts were derived under another revision of the advisor's rules
    (stats/rules_revision.py) reads the log, and answers as the log says; the same facts under this revision
    are taken as stored (so the test sees which was used: they are made wrong, no saving and no advice)."""
    import sqlite3

    from ioweather.stats.rules_revision import RULES_REVISION

    home, rep, _log = stormy
    job = str(rep["job"]["jobid"])
    dst = tmp_path / "home"
    shutil.copytree(home, dst)
    want = _why(dst, job)
    db = sqlite3.connect(dst / "ioweather.sqlite")
    ((h, text),) = db.execute("SELECT log_hash, why_facts FROM darshan_jobs WHERE jobid = ?", (int(job),)).fetchall()
    doc = json.loads(text)
    assert doc["rules"] == RULES_REVISION and doc["facts"]["saving_s"] > 0
    wrong = {**doc, "facts": {**doc["facts"], "saving_s": 0.0, "advice": None}}
    for rules, taken in ((RULES_REVISION, True), ("2026-11-28", False)):
        with db:
            db.execute("UPDATE darshan_jobs SET why_facts = ? WHERE log_hash = ?", (json.dumps({**wrong, "rules": rules}), h))
        got = _why(dst, job)
        assert (got != want) is taken, rules
    db.close()
    assert got == want


def test_the_sqlite_reads_are_the_stores(stormy, tmp_path):
    """store/sqlite_reads.py answers `why`'s reads with sqlite3 alone: each the store module's own (SQLAlchemy)
    read, value for value and type for type (repr), on the storm store with a probe's runs added; what it
    cannot read exactly (another schema version, a probe's samples, a write) is a Fallback, never a guess."""
    import pandas.testing as pdt

    from ioweather.services.jobs.weather import _JOB_COLUMNS
    from ioweather.store import job_weather as wstore, jobs as jstore, probe as pstore, scheduler as sstore
    from ioweather.store import sqlite_reads as lite

    home, rep, _log = stormy
    dst = tmp_path / "home"
    shutil.copytree(home, dst)
    settings = Settings.resolve(dst)
    full = open_store(settings)
    start, end = _window(_log)
    _probe(full, "lus", "/lus/theta-fs0/probe", np.arange(start, end, 60 * S), start, {})
    _probe(full, "home", "/home/probe", np.arange(start, end, 600 * S), start, {"data_read": 2.0})
    light = lite.open_light(settings)
    try:
        hashes = sorted(jstore.load_jobs(full, ["log_hash"])["log_hash"])
        ids = [str(rep["job"]["jobid"]), "3116902", CULPRIT, "999"]
        motifs = sorted({r["motif"] for r in wstore.signatures(full)})
        fss = [None, "theta", "nowhere"]
        calls = {"jobs": [("find_jobs", (i,)) for i in [*ids, hashes[0][:8], hashes[0][:8].upper(), "14%", "zz"]]
                 + [("job_row", (h[:k],)) for h in hashes for k in (6, 64)]
                 + [("rows_of", (hashes, _JOB_COLUMNS)), ("rows_of", (hashes[1:] + ["f" * 64], ["jobid", "exe"]))]
                 + [("darshan_job_by_hash", (h[:k], _JOB_COLUMNS)) for h in hashes for k in (6, 64)]
                 + [("darshan_job_by_jobid", (int(i), _JOB_COLUMNS)) for i in ids],
                 "scheduler": [("get_job", (i,)) for i in ids] + [("get_job", (CULPRIT, "theta")),
                                                                  ("get_job", (CULPRIT, "other"))]
                 + [("jobs_overlapping", (a, b)) for a, b in ((start, end), (end, end + S), (0, start + 1))]
                 + [("jobs_overlapping", (start, end, "theta")), ("link_darshan", ()), ("link_darshan", (hashes,))]
                 + [("scheduler_job_for_darshan", (h,)) for h in hashes],
                 "probe": [("runs", ()), ("runs", ("home",)), ("targets", ())],
                 "job_weather": [("darshan_without_weather", (f,)) for f in fss]
                 + [("signatures", (f, m)) for f in fss for m in [None, *motifs]]
                 + [("of_motif", ("theta", m)) for m in motifs]
                 + [("of_keys", ("theta", [f"darshan:{h}" for h in hashes]))]}
        for module, cases in calls.items():
            for name, args in cases:
                want = getattr({"jobs": jstore, "scheduler": sstore, "probe": pstore, "job_weather": wstore}[module],
                               name)(full, *args)
                got = getattr(lite.door(light, module), name)(light, *args)
                assert repr(got) == repr(want), (module, name, args)
        assert any(r["how"] for r in sstore.link_darshan(full))  # links were compared, not only their absence
        assert len(pstore.runs(full)) == 2 and wstore.signatures(full)  # runs and weather rows were compared
        for cols in (None, ["log_hash", "jobid", "nprocs", "nnodes", "start_ns", "end_ns", "io_time_s"]):
            pdt.assert_frame_equal(lite.door(light, "jobs").load_jobs(light, cols), jstore.load_jobs(full, cols))
        assert light.versions() == full.versions()
        for fallback in (lambda: lite.door(light, "probe").read_samples(light, "lus", since_ns=start, until_ns=end),
                         lambda: lite.door(light, "job_weather").put_many(light, [{"job_key": "x"}]),
                         lambda: lite.door(light, "job_weather").all_rows(light)):
            with pytest.raises(lite.Fallback):
                fallback()
    finally:
        light.dispose()
        full.dispose()


def test_the_sqlite_reads_know_the_stores_tables(tmp_path):
    """The versions and columns store/sqlite_reads.py reads are the store modules' (SQLAlchemy's tables), and a
    read of a component at another version is a Fallback to the usual door (which upgrades or refuses it)."""
    import inspect
    import sqlite3

    from ioweather.store import job_weather as wstore, jobs as jstore, probe as pstore, scheduler as sstore
    from ioweather.store import sqlite_reads as lite
    from ioweather.store.probe_tables import probe_runs

    modules = {"jobs": jstore, "scheduler": sstore, "probe": pstore, "job_weather": wstore}
    assert lite.VERSIONS == {m.COMPONENT.name: m.COMPONENT.version for m in modules.values()}
    assert lite.JOB_COLUMNS == tuple(c.name for c in jstore.jobs.columns)
    assert lite.COMPLETED_COLUMNS == jstore.COMPLETED_COLUMNS
    assert lite.SCHED_COLUMNS == tuple(c.name for c in sstore.sched_jobs.columns)
    assert lite.WEATHER_COLUMNS == tuple(c.name for c in wstore.job_weather.columns)
    assert lite.RUN_COLUMNS == tuple(c.name for c in probe_runs.columns)
    assert set(lite.RUN_BOOLEANS) == {c.name for c in probe_runs.columns if c.type.python_type is bool}
    for module, names in lite.READS.items():
        for name in names:  # the same parameters, so that a caller passes the same arguments to either
            params = list(inspect.signature(getattr(modules[module], name)).parameters)
            light = list(inspect.signature(getattr(lite, name)).parameters)
            assert light == params or (name == "read_samples" and light[:2] == params[:2]), name
    db = sqlite3.connect(tmp_path / "old.sqlite")
    with db:
        db.execute("CREATE TABLE schema_versions (component TEXT PRIMARY KEY, version INTEGER, updated_ns INTEGER)")
        db.execute("INSERT INTO schema_versions VALUES ('darshan', 2, 0), ('scheduler', 1, 0)")
    db.close()
    old = lite.LightStore(tmp_path / "old.sqlite", tmp_path)
    try:
        assert old.versions() == {"darshan": 2, "scheduler": 1}
        for read in (lambda: lite.find_jobs(old, "1452113755"), lambda: lite.link_darshan(old),
                     lambda: lite.targets(old), lambda: lite.of_motif(old, "theta", "m")):
            with pytest.raises(lite.Fallback):
                read()
    finally:
        old.dispose()


def test_why_is_one_shot_for_the_garbage_collector(stormy):
    """issue 40: `why JOB` runs as a one-shot command (commands/common.one_shot): its imports grew the heap
    that the cyclic collector walked 278 times (255 young passes, 23 middle, 2 full; 0.3 s of CPU with the
    exit's pass); now it collects every 50,000 allocations, not 700, freezes what it made for the exit,
    and gives the thresholds back."""
    import ast
    import subprocess
    import sys

    home, rep, _log = stormy
    code = ("import contextlib, gc, io\n"
            "from ioweather.cli import cli\n"
            "before = [s['collections'] for s in gc.get_stats()]\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    cli.main(['--home', {str(home)!r}, 'why', {str(rep['job']['jobid'])!r}, '--json'], "
            "prog_name='ioweather', standalone_mode=False)\n"
            "print(([s['collections'] - b for s, b in zip(gc.get_stats(), before)], gc.get_freeze_count(), "
            "gc.get_threshold()))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=cli_env(home, None))
    assert p.returncode == 0, p.stderr
    passes, frozen, thresholds = ast.literal_eval(p.stdout.strip().splitlines()[-1])
    print("collections by generation:", passes, "frozen:", frozen)
    assert passes[0] <= 40 and passes[2] == 0, passes
    # what the imports made is frozen: ~91,000 objects since SQLAlchemy is no longer among them (branch whysql)
    assert frozen > 50_000 and thresholds == (700, 10, 10)


def test_only_the_motifs_jobs_are_read_for_one_answer(stormy):
    """The refresh of one job's answer reads the per-file facts only of new jobs that may be of its
    motif: the rows' motifs on a named fs are those darshan_jobs finds from the files (reference)."""
    from ioweather.services.jobs import weather as jw
    from ioweather.store import jobs as jstore

    home, _rep, _log = stormy
    store = open_store(Settings.resolve(home, None))
    try:
        hashes = set(jstore.load_jobs(store, ["log_hash"])["log_hash"])
        jobs = jw.darshan_jobs(store, hashes)
        motifs = {j.motif("theta") for j in jobs}
        assert len(jobs) == 3 and len(motifs) == 2  # the storm's job; the two logs of another job (one motif)
        for m in motifs:
            expected = {j.key[len("darshan:"):] for j in jobs if j.motif("theta") == m}
            assert jw._maybe_of_motif(store, hashes, "theta", m) == expected
        assert jw._maybe_of_motif(store, hashes, "theta", "nothing / ? nodes / read / theta") == set()
    finally:
        store.dispose()


def _probe(store, target: str, directory: str, times_ns, slow_from_ns: int, factor_by_op: dict):
    """Constant durations (data ops 1 ms, metadata 0.1 ms), times each op's factor from `slow_from_ns`:
    every median is exact."""
    from ioweather.store import probe as probe_store

    run = probe_store.start_run(store, probe_store.RunInfo(
        target=target, directory=directory, interval_s=20.0, block_bytes=1 << 20, file_bytes=1 << 30, pool_files=10,
        small_bytes=3901, direct=False, fsync=False, seed=0, timeout_s=60.0, file_exceeds_memory=False, host="test"))
    rows = []
    for k, op in enumerate(probe_store.OPS):
        base = 1_000_000 if op.startswith("data") else 100_000
        for t in times_ns:
            dur = int(base * factor_by_op.get(op, 1.0)) if t >= slow_from_ns else base
            rows.append((run, op, int(t) + k * 1000, dur, 1 << 20 if op.startswith("data") else 0, "ok", 0))
    probe_store.insert_samples(store, rows)


def _why_with_probes(ingested, tmp_path, history_s: int, period_s: int, probes: dict, *args) -> dict:
    """`why` on a copy of the store with probes {target: (directory, data-op factor during the job)} sampled
    every `period_s` over the `history_s` before the job's day, and every 20 s during its run."""
    home, rep, log = ingested
    dst = tmp_path / "home"
    shutil.copytree(home, dst)
    start, end = _window(log)
    day = start // (86_400 * S) * 86_400 * S
    times = np.concatenate([np.arange(day - history_s * S, day, period_s * S), np.arange(start, end, 20 * S)])
    store = open_store(Settings.resolve(dst))
    for target, (directory, factor) in probes.items():
        _probe(store, target, directory, times, start, {"data_read": factor, "data_write": factor})
    store.dispose()
    return _why(dst, str(rep["job"]["jobid"]), *args)


def test_probes_on_its_file_system_cost_the_system(ingested, tmp_path):
    """Probes slowed ×1.1 on the job's Lustre during its run (no telemetry at all), and ×10 on another
    file system's probe, which must not count: io_time × Σ share_kind × (1 − 1/slowdown_kind)."""
    _, rep, _ = ingested
    # two days every 150 s before the job's day: 1,152 samples per op, a learned baseline (24 h and 1,000)
    w = _why_with_probes(ingested, tmp_path, 2 * 86_400, 150, {"lus": ("/lus/theta-fs0/probe", 1.1),
                                                                "home": ("/home/probe", 10.0)})
    _assert_budget(w)
    assert w["system_model"] == "probe_slowdown"
    assert w["logs"][0]["evidence"]["probe_targets"] == ["lus"]
    t = rep["totals"]
    data_share = (t["read_time_s"] + t["write_time_s"]) / (t["read_time_s"] + t["write_time_s"] + t["meta_time_s"])
    io = rep["perf"]["io_time_s"]
    want = io * data_share * (1 - 1 / 1.1)
    assert want < io - w["code_s"]  # not capped: the model's own number
    assert w["system_s"] == pytest.approx(want, rel=1e-6)


def test_a_probe_still_learning_is_no_evidence(ingested, tmp_path):
    """A probe started 6 h before the job's day (×10 slower during the job) is still learning its baseline,
    as Status, /metrics and `slowdown --check` would say: `why` must not charge the system for it."""
    w = _why_with_probes(ingested, tmp_path, 6 * 3600, 10, {"lus": ("/lus/theta-fs0/probe", 10.0)})
    _assert_budget(w)
    assert w["system_model"] != "probe_slowdown"


def test_a_named_quiet_period_is_judged_at_once(ingested, tmp_path):
    """The same learning probe with --baseline-from/--baseline-until over its 6 h (issue 39 item 5): that
    period's medians are the baseline at once, as `slowdown` judges a reference period, and the answer
    names it."""
    import datetime as dt

    _, rep, log = ingested
    start, _end = _window(log)
    day = start // (86_400 * S) * 86_400 * S
    iso = lambda ns: dt.datetime.fromtimestamp(ns / S, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    w = _why_with_probes(ingested, tmp_path, 6 * 3600, 10, {"lus": ("/lus/theta-fs0/probe", 10.0)},
                         "--baseline-from", iso(day - 6 * 3600 * S), "--baseline-until", iso(day))
    _assert_budget(w)
    assert w["system_model"] == "probe_slowdown"
    assert w["baseline"] == {"from": iso(day - 6 * 3600 * S).replace("Z", ".000Z"),
                             "until": iso(day).replace("Z", ".000Z")}
    t = rep["totals"]
    data_share = (t["read_time_s"] + t["write_time_s"]) / (t["read_time_s"] + t["write_time_s"] + t["meta_time_s"])
    io = rep["perf"]["io_time_s"]
    assert w["system_s"] == pytest.approx(min(io - w["code_s"], io * data_share * (1 - 1 / 10.0)), rel=1e-6)


def test_a_log_moved_since_ingest_answers_from_its_row(ingested, testdata, tmp_path):
    """The row keeps the I/O time and the findings' costs: the code's part is the largest stored cost
    (a lower bound of the combined saving), and the evidence says why."""
    _home, rep, _log = ingested
    home = tmp_path / "home"
    moved = tmp_path / "logs" / JOB_LOG
    moved.parent.mkdir()
    shutil.copy(testdata / "darshan" / JOB_LOG, moved)
    run_cli("jobs", "ingest", str(moved), "--workers", "1", home=home, timeout=300, check=True)
    moved.unlink()
    w = _why(home, str(rep["job"]["jobid"]))
    _assert_budget(w)
    assert w["io_time_s"] == pytest.approx(rep["perf"]["io_time_s"], rel=1e-9)
    top = max(f["cost_s"] for f in rep["findings"] if f["level"] in ("HIGH", "WARN"))
    assert w["code_s"] == pytest.approx(top, rel=1e-9) and top < rep["verdict_saving_s"]
    assert "no longer at" in w["evidence"]["code"]


def test_fs_map_setting_and_its_bad_entries(testdata, tmp_path):
    """The fs-map from the environment wins over the file; a bad entry is one line naming it."""
    path = str(testdata / "darshan" / JOB_LOG)
    home = tmp_path / "home"
    home.mkdir()
    (home / "fs-map").write_text("/lus/theta-fs0 from-file\n")
    p = run_cli("why", path, "--json", home=home, env={"IOWEATHER_FS_MAP": "/lus=lus,/lus/theta-fs0=theta"},
                timeout=300)
    assert p.returncode == 0, p.stderr
    b = json.loads(p.stdout)["logs"][0]
    # the longest prefix wins; the dataset has no telemetry here, and the answer says so
    assert b["fs"] == "theta" and b["evidence"]["file_system"] == "fs-map /lus/theta-fs0 → theta"
    assert b["system_model"] == "unknown" and "no telemetry for theta" in b["evidence"]["system"]
    (home / "fs-map").write_text("/lus/theta-fs0 theta\nscratch\n")
    p = run_cli("why", path, home=home, timeout=300)
    assert p.returncode == 2 and p.stderr.count("\n") == 1
    assert "fs-map: entry 2 'scratch'" in p.stderr and "Traceback" not in p.stderr
