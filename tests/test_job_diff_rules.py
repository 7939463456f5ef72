"""`job diff` of stored jobs ingested under older advisor rules answers as under this code's: it reads both logs
again (services/answers/job_diff.py: `job_outputs`, as `ioweather job LOG`), and `why`'s stored facts of other
rules are not used (services/jobs/facts.LogFacts.usable: the log is read instead), so no finding, cost or verdict of
the diff is a stored one and there is no stale side to mark, unlike `jobs list`/`jobs show`
(tests/test_jobs_rules_mark.py). The reference is the same diff before the rows were stamped older; should the
diff ever take a stored answer, this fails."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from inprocess import run_cli

from ioweather.config import Settings
from ioweather.store import jobs as js, open_store

LAB = Path(__file__).parent / "data" / "lab"
QUIET, STORM = LAB / "clean-quiet.darshan", LAB / "clean-storm.darshan"
PREVIOUS = "2026-11-28"


def _cli(home, *args) -> str:
    return run_cli(*args, home=home, check=True, env={"COLUMNS": "200"}).stdout


def test_a_diff_of_jobs_stored_under_older_rules_is_this_codes(tmp_path):
    home = tmp_path / "home"
    _cli(home, "jobs", "ingest", str(QUIET), str(STORM), "--workers", "1")
    ids = {Path(r["path"]).name: r["id"][:12] for r in json.loads(_cli(home, "jobs", "list", "--json"))}
    args = ("job", "diff", ids[QUIET.name], ids[STORM.name])
    before_json, before_text = _cli(home, *args, "--json"), _cli(home, *args)
    store = open_store(Settings.resolve(home))
    try:
        with store.begin() as conn:
            rows = conn.execute(sa.select(js.jobs.c.log_hash, js.jobs.c.why_facts)).all()
            for log_hash, facts in rows:
                doc = json.loads(facts)
                doc["rules"] = PREVIOUS  # as an ingest under those rules wrote them
                doc["facts"]["saving_s"] = doc["facts"]["io_time_s"]
                # older rules' answer differs from this code's: were it read, the diff would change
                conn.execute(js.jobs.update().where(js.jobs.c.log_hash == log_hash)
                             .values(rules_revision=PREVIOUS, why_facts=json.dumps(doc), verdict="older rules' verdict",
                                     findings_json=json.dumps([{"code": "P01", "level": "HIGH", "message": "older",
                                                                "cost_s": 1.0}]), finding_codes="P01"))
    finally:
        store.dispose()
    assert not any(r["rules_current"] for r in json.loads(_cli(home, "jobs", "list", "--json")))
    shown = json.loads(_cli(home, "jobs", "show", ids[QUIET.name], "--json"))
    assert shown["verdict"] == "older rules' verdict" and [f["code"] for f in shown["findings"]] == ["P01"]
    assert _cli(home, *args, "--json") == before_json
    assert _cli(home, *args) == before_text

