"""Stored jobs say the advisor's rules they were derived under (stats/rules_revision.py, darshan store version 5),
and a row of other rules is not "seen": the next `jobs ingest` reads its log again and refreshes the row in place
(same id, path and Parquet part), counts it (`refreshed`), and `jobs show` then says what `job LOG` says.

The old rules are simulated as the code before a change would run them: the revision constant one day earlier and
the findings without a code the rules now give (L01 of imbalanced-io, M10 of treddy), in this process (the pool's
forked workers inherit it). A store written before the revision existed (schema 4, c15c636's) is made by dropping
the column, on SQLite, PostgreSQL and MariaDB; its migration adds the column NULL, and the next ingest refreshes
every row. References: `job LOG --json` (a fresh read of the log, no store) and `LogFacts.of_report`."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from darshan_support import TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)
from inprocess import run_cli

from ioweather.config import Settings
from ioweather.services.jobs import facts as facts_module
from ioweather.services.jobs.facts import LogFacts
from ioweather.services.jobs.ingest_scan import unchanged_answer
from ioweather.stats import findings as findings_module
from ioweather.stats.findings import ACTIONABLE
from ioweather.stats.rules_revision import RULES_REVISION
from ioweather.store import jobs as js, open_store, sqlite_reads

IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"
TREDDY = TESTDATA_LOGS / "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
HDF5 = TESTDATA_LOGS / "shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan"
X86 = TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan"
PREVIOUS = "2026-11-28"
#: what the simulated older rules did not find (each the top finding of its log now)
NOT_YET = {"L01", "M10"}


def _older_rules(monkeypatch) -> None:
    """This process runs the rules as they were one revision ago: every place that reads the constant, and the
    findings without NOT_YET."""
    now = findings_module.job_findings
    monkeypatch.setattr(findings_module, "job_findings",
                        lambda log, ch, thresholds=None: [f for f in now(log, ch, thresholds) if f["code"] not in NOT_YET])
    for module in (findings_module, facts_module, js, sqlite_reads):
        monkeypatch.setattr(module, "RULES_REVISION", PREVIOUS)


def _ingest(home, *logs, db=None) -> dict:
    extra = ["--db", db] if db else []
    return json.loads(run_cli(*extra, "jobs", "ingest", *map(str, logs), "--workers", "1", "--json", home=home,
                              timeout=300, check=True).stdout)


def _rows(settings) -> dict[str, dict]:
    store = open_store(settings)
    try:
        with store.connect() as conn:
            return {r["path"]: dict(r) for r in conn.execute(sa.select(js.jobs)).mappings()}
    finally:
        store.dispose()


def _shown(home, log_hash: str, db=None) -> dict:
    extra = ["--db", db] if db else []
    return json.loads(run_cli(*extra, "jobs", "show", log_hash[:16], "--json", home=home, check=True).stdout)


def _job(log) -> dict:
    return json.loads(run_cli("job", str(log), "--json", check=True).stdout)


def _agrees(shown: dict, fresh: dict) -> bool:
    """`jobs show` says what `job LOG` says: the verdict, the level and the HIGH/WARN findings with their numbers."""
    want = [{k: f.get(k) for k in ("code", "level", "cost_s", "cost_share", "message", "fix")}
            for f in fresh["findings"] if f["level"] in ACTIONABLE]
    want.sort(key=lambda f: -(f["cost_s"] or 0.0))
    got = [{k: f.get(k) for k in ("code", "level", "cost_s", "cost_share", "message", "fix")} for f in shown["findings"]]
    return shown["verdict"] == fresh["verdict"] and got == want


def test_rows_of_older_rules_are_refreshed_in_place_counted_and_shown_as_job_reads_them(tmp_path, monkeypatch):
    home = tmp_path / "home"
    settings = Settings.resolve(home)
    with monkeypatch.context() as m:
        _older_rules(m)
        assert _ingest(home, IMBALANCED, TREDDY)["ingested"] == 2
        # the older code's store is whole as it sees it: a second ingest by that code reads nothing
        assert _ingest(home, IMBALANCED, TREDDY)["skipped"] == 2
    old = _rows(settings)
    assert {r["rules_revision"] for r in old.values()} == {PREVIOUS}
    fresh = {log: _job(log) for log in (IMBALANCED, TREDDY, HDF5)}
    for log in (IMBALANCED, TREDDY):  # what the defect was: the stored answer is not the log's now
        r = old[str(log)]
        assert not _agrees(_shown(home, r["log_hash"]), fresh[log])
        assert not set(r["finding_codes"].split(",")) & NOT_YET
        assert LogFacts.usable(r["why_facts"]) is None  # `why` reads such a log again
    # a log stored by this code, then the archive again with one log new: each counted once, in its own count
    assert _ingest(home, HDF5)["ingested"] == 1
    assert _ingest(home, IMBALANCED, TREDDY, HDF5, X86) == {
        "ingested": 1, "refreshed": 2, "failed": 0, "duplicates": 0, "skipped": 1, "symlinks_skipped": 0, "found": 4}
    new = _rows(settings)
    assert {r["rules_revision"] for r in new.values()} == {RULES_REVISION}
    for log in (IMBALANCED, TREDDY, HDF5):
        r, was = new[str(log)], old.get(str(log))
        if was is not None:  # the same row: its identity, place and Parquet part kept; its answers the log's now
            assert [r[c] for c in ("id", "log_hash", "path", "files_part")] == \
                [was[c] for c in ("id", "log_hash", "path", "files_part")]
            assert r["ingested_ns"] > was["ingested_ns"]  # the pages' change marker moves
            assert set(r["finding_codes"].split(",")) & NOT_YET
        assert _agrees(_shown(home, r["log_hash"]), fresh[log]), log
        # reference: the report of the log made now, as `why` would make it (every float's digits)
        # lazy: PyDarshan, as the module's other reads
        from ioweather.services.jobs.report import job_answer

        assert r["why_facts"] == LogFacts.of_report(*job_answer(str(log))).stored()
    # nothing left to refresh: the light path answers, unchanged
    light = unchanged_answer(settings, list(map(str, (IMBALANCED, TREDDY, HDF5, X86))))
    assert light is not None and (light.refreshed, light.skipped) == (0, 4)


def test_the_light_and_full_reads_see_the_same_rows(tmp_path):
    """store.jobs.seen and its sqlite3 twin (the light path's) exclude exactly the rows not current: another
    revision, none (a schema-4 row), or a completed column missing (a version-1 or -3 row)."""
    home = tmp_path / "home"
    logs = (IMBALANCED, TREDDY, HDF5, X86)
    _ingest(home, *logs)
    settings = Settings.resolve(home)
    store = open_store(settings)
    try:
        with store.begin() as conn:
            for log, change in zip(logs[1:], ({"rules_revision": PREVIOUS}, {"rules_revision": None},
                                              {"why_facts": None})):
                conn.execute(js.jobs.update().where(js.jobs.c.path == str(log)).values(change))
        full = js.seen(store)
    finally:
        store.dispose()
    light = sqlite_reads.open_light(settings)
    try:
        assert sqlite_reads.seen(light) == full
    finally:
        light.dispose()
    current = _rows(settings)[str(IMBALANCED)]
    assert full[0] == {current["log_hash"]} and set(full[1]) == {current["path_hash"]}
    counts = _ingest(home, *logs)
    assert (counts["refreshed"], counts["skipped"], counts["ingested"]) == (3, 1, 0)


def _as_schema_4(settings) -> None:
    """The store as ioweather before the revision (c15c636) wrote it: no rules_revision column, darshan schema 4,
    `why`'s facts without their "rules"."""
    store = open_store(settings)
    try:
        with store.begin() as conn:
            facts = conn.execute(sa.select(js.jobs.c.log_hash, js.jobs.c.why_facts)).all()
            for h, text in facts:
                doc = json.loads(text)
                del doc["rules"]
                conn.execute(js.jobs.update().where(js.jobs.c.log_hash == h).values(why_facts=json.dumps(doc)))
            conn.execute(sa.text("ALTER TABLE darshan_jobs DROP COLUMN rules_revision"))
            conn.execute(sa.text("UPDATE schema_versions SET version = 4 WHERE component = 'darshan'"))
    finally:
        store.dispose()


@pytest.mark.parametrize("db", [None, "pg_url", "mariadb_url"])
def test_a_schema_4_store_migrates_and_its_rows_are_refreshed(tmp_path, db, request):
    url = request.getfixturevalue(db) if db else None
    home = tmp_path / "home"
    logs = (IMBALANCED, TREDDY)
    assert _ingest(home, *logs, db=url)["ingested"] == 2
    settings = Settings.resolve(home, url)
    made = _rows(settings)
    _as_schema_4(settings)
    store = open_store(settings)  # opening does not migrate: a component is upgraded where it is required
    try:
        assert "rules_revision" not in {c["name"] for c in sa.inspect(store.engine).get_columns("darshan_jobs")}
    finally:
        store.dispose()
    # any command opening the store upgrades it in place: the column added, NULL, every row kept
    listed = json.loads(run_cli(*(["--db", url] if url else []), "jobs", "list", "--json", home=home,
                                check=True).stdout)
    assert len(listed) == 2
    migrated = _rows(settings)
    assert {r["rules_revision"] for r in migrated.values()} == {None}
    assert all(LogFacts.usable(r["why_facts"]) is None for r in migrated.values())
    store = open_store(settings)
    try:
        assert store.versions()["darshan"] == js.COMPONENT.version == 5
    finally:
        store.dispose()
    # the next ingest refreshes each row once, in place, as this code derives it
    out = run_cli(*(["--db", url] if url else []), "jobs", "ingest", *map(str, logs), "--workers", "1", home=home,
                  timeout=300, check=True)
    assert out.stdout.startswith("0 logs ingested, 2 refreshed (stored under other rules), 0 failed"), out.stdout
    refreshed = _rows(settings)
    # every column as this code wrote it at first (the facts with their "rules" again), the id too
    assert refreshed == {p: {**r, "ingested_ns": refreshed[p]["ingested_ns"]} for p, r in made.items()}
    assert _ingest(home, *logs, db=url) == {
        "ingested": 0, "refreshed": 0, "failed": 0, "duplicates": 0, "skipped": 2, "symlinks_skipped": 0, "found": 2}
    for log in logs:
        assert _agrees(_shown(home, made[str(log)]["log_hash"], db=url), _job(log))


def test_the_revision_is_the_findings_and_stamped_on_what_ingest_writes(tmp_path):
    """One constant: stats/findings.py names the revision stats/rules_revision.py holds (the light paths' import),
    and each row and its `why` facts carry it."""
    assert findings_module.RULES_REVISION is RULES_REVISION
    home = tmp_path / "home"
    _ingest(home, X86)
    (row,) = _rows(Settings.resolve(home)).values()
    assert row["rules_revision"] == RULES_REVISION == json.loads(row["why_facts"])["rules"]
