"""A stored answer derived under other advisor rules is marked where it is shown, until the next `jobs ingest`
refreshes it (stats/rules_revision.rules_current, the one reading): `jobs list` ('*' on its level and a note line),
`jobs show` (a note line), their --json and /api/jobs, /api/job (`rules_revision`, `rules_current`), the Jobs page
("(older rules)") and the job page. A row of another revision and one stored before rows said theirs (NULL, a
migrated schema-4 row) are made by an UPDATE, on SQLite, PostgreSQL and MariaDB; the reference for "nothing else
changed" is each output of the same store before the UPDATE."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from darshan_support import TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)
from inprocess import run_cli
from web_server import Server, api

from ioweather.config import Settings
from ioweather.stats.rules_revision import RULES_REVISION
from ioweather.store import jobs as js, open_store

CURRENT = TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan"
OLDER = TESTDATA_LOGS / "shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan"
UNSTAMPED = TESTDATA_LOGS / "mpi-io-test-ppc64-3.1.8.darshan"
PREVIOUS = "2026-11-28"


def _cli(home, url, *args, as_json=True):
    out = run_cli(*(["--db", url] if url else []), *args, *(["--json"] if as_json else []), home=home, check=True).stdout
    return json.loads(out) if as_json else out


def _stamp(settings, path, revision) -> None:
    store = open_store(settings)
    try:
        with store.begin() as conn:
            conn.execute(js.jobs.update().where(js.jobs.c.path == str(path)).values(rules_revision=revision))
    finally:
        store.dispose()


def _served(settings):
    from ioweather.web.app import create_app

    return Server(create_app(settings, warm=False))


@pytest.mark.parametrize("db", [None, "pg_url", "mariadb_url"])
def test_rows_of_other_rules_are_marked_everywhere_until_the_next_ingest(tmp_path, db, request):
    url = request.getfixturevalue(db) if db else None
    home = tmp_path / "home"
    logs = (CURRENT, OLDER, UNSTAMPED)
    _cli(home, url, "jobs", "ingest", *map(str, logs), "--workers", "1")
    settings = Settings.resolve(home, url)
    listed = {r["path"]: r for r in _cli(home, url, "jobs", "list")}
    ids = {p: r["id"][:16] for p, r in listed.items()}
    assert all(r["rules_current"] and r["rules_revision"] == RULES_REVISION for r in listed.values())
    text_list = _cli(home, url, "jobs", "list", as_json=False)
    text_show = {p: _cli(home, url, "jobs", "show", i, as_json=False) for p, i in ids.items()}
    json_show = {p: _cli(home, url, "jobs", "show", i) for p, i in ids.items()}
    assert "*" not in text_list and not any("note:" in t for t in text_show.values())

    _stamp(settings, OLDER, PREVIOUS)
    _stamp(settings, UNSTAMPED, None)
    want = {str(CURRENT): (RULES_REVISION, True), str(OLDER): (PREVIOUS, False), str(UNSTAMPED): (None, False)}
    listed = {r["path"]: r for r in _cli(home, url, "jobs", "list")}
    assert {p: (r["rules_revision"], r["rules_current"]) for p, r in listed.items()} == want
    for p, i in ids.items():
        shown = _cli(home, url, "jobs", "show", i)
        assert (shown["rules_revision"], shown["rules_current"]) == want[p]
        # nothing else of the answer moved
        assert {k: v for k, v in shown.items() if not k.startswith("rules_")} == \
            {k: v for k, v in json_show[p].items() if not k.startswith("rules_")}
        # the text: the note line, and only it, where the rules are older
        text = _cli(home, url, "jobs", "show", i, as_json=False)
        lines, before = text.splitlines(), text_show[p].splitlines()
        if want[p][1]:
            assert text == text_show[p]
        else:
            note = [k for k, line in enumerate(lines) if line.startswith("note: ")]
            assert len(note) == 1 and lines[:note[0]] + lines[note[0] + 1:] == before
            assert (PREVIOUS if want[p][0] else "older than the rows' dates") in lines[note[0]]
            assert RULES_REVISION in lines[note[0]] and p in text.replace("\n", "")
    text = _cli(home, url, "jobs", "list", as_json=False)
    assert text.count("*") == 2 + 1  # two marked levels and the note line's
    assert "2 of these jobs' levels, findings and verdicts were derived under older advisor rules" in text

    # the pages and their API: the same reading as the commands
    with _served(settings) as s:
        code, jobs = api(s, "/api/jobs?limit=100")
        assert code == 200
        page_rows = {r["path"]: r for r in jobs["list"]["rows"]}
        assert {p: (r["rules_revision"], r["rules_current"]) for p, r in page_rows.items()} == want
        assert page_rows == listed
        code, _, body = s.get("/jobs")
        assert code == 200 and body.decode().count("(older rules)") == 2
        for p, i in ids.items():
            code, job = api(s, f"/api/job?id={i}")
            assert code == 200 and (job["rules_revision"], job["rules_current"]) == want[p]
            code, _, body = s.get(f"/job?id={i}")
            assert code == 200 and ('id="rules-old"' in body.decode()) == (not want[p][1])

    # the next ingest refreshes both rows: no mark is left
    out = _cli(home, url, "jobs", "ingest", *map(str, logs), "--workers", "1")
    assert (out["refreshed"], out["skipped"]) == (2, 1)
    assert all(r["rules_current"] for r in _cli(home, url, "jobs", "list"))
    assert "*" not in _cli(home, url, "jobs", "list", as_json=False)


def test_one_reading_of_the_revision():
    """rules_current is the stamp compared with this code's revision: None (a schema-4 row) and any other date
    are not current."""
    from ioweather.stats.rules_revision import rules_current

    assert rules_current(RULES_REVISION) and not rules_current(None) and not rules_current(PREVIOUS)
    assert not rules_current(RULES_REVISION + " ")
