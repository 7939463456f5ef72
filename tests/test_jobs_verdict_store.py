"""The verdict, the findings' costs and the Lustre layout as `jobs ingest` stores them (darshan store
version 2), shown by the Jobs page and the job page as `ioweather job LOG` shows them; and a store
ingested by an older ioweather (version 1: no verdict columns, Parquet parts without the layout)
upgraded in place, its pages saying "re-ingest", a second ingest completing it.

On SQLite and PostgreSQL; every number compared with the CLI's `--json` and direct SQL.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from darshan_support import TESTDATA_LOGS, need_darshan_logs  # noqa: F401 (autouse fixture)
from ioweather.config import Settings
from ioweather.stats.findings import ACTIONABLE
from ioweather.store import open_store
from ioweather.store import jobs as js
from web_server import Server, api

IMBALANCED = TESTDATA_LOGS / "imbalanced-io.darshan"
TREDDY = TESTDATA_LOGS / "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
LOGS = (IMBALANCED, TREDDY)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request):
    return request.getfixturevalue("pg_url") if request.param == "postgresql" else None


def _env(db):
    return {"IOWEATHER_DB": db} if db else {}


def _cli_report(cli, home, log) -> dict:
    return json.loads(cli("job", str(log), "--json", home=home, check=True).stdout)


def _sql(settings, query: str):
    store = open_store(settings)
    try:
        with store.connect() as conn:
            return conn.execute(sa.text(query)).all()
    finally:
        store.dispose()


def _make_old(settings) -> None:
    """Turn a store of this version into one as an ioweather before the verdict wrote it:
    the two columns dropped, the component at version 1, Parquet parts without the layout columns."""
    store = open_store(settings)
    try:
        with store.begin() as conn:
            for c in js.VERDICT_COLUMNS:
                conn.execute(sa.text(f"ALTER TABLE darshan_jobs DROP COLUMN {c}"))
            conn.execute(sa.text("UPDATE schema_versions SET version = 1 WHERE component = 'darshan'"))
            conn.execute(sa.text("DROP TABLE darshan_seen_files"))  # version 3's: an old ioweather had none
    finally:
        store.dispose()
    for part in js.files_dir(settings.parquet_dir).glob("files-*.parquet"):
        t = pq.read_table(part)
        pq.write_table(t.drop_columns(["stripe_count", "stripe_size", "ost_ids"]), part)


def _served(settings):
    from ioweather.web.app import create_app

    return Server(create_app(settings, warm=False))


def test_ingest_stores_the_verdict_and_ranked_costs_the_pages_show(cli, tmp_path, db):
    home = tmp_path / "home"
    cli("jobs", "ingest", *map(str, LOGS), home=home, env=_env(db), check=True)
    settings = Settings.resolve(home, db)
    assert _sql(settings, "SELECT version FROM schema_versions WHERE component = 'darshan'") == [(js.COMPONENT.version,)]
    with _served(settings) as s:
        code, jobs = api(s, "/api/jobs?limit=100")
        assert code == 200 and jobs["list"]["total"] == 2
        for row in jobs["list"]["rows"]:
            log = IMBALANCED if row["nprocs"] == 496 else TREDDY
            rep = _cli_report(cli, home, log)
            assert row["verdict"] == rep["verdict"]
            code, job = api(s, f"/api/job?id={row['id'][:16]}")
            assert code == 200 and job["verdict"] == rep["verdict"]
            want = [f for f in rep["findings"] if f["level"] in ACTIONABLE]
            assert [f["code"] for f in job["findings"]] == [f["code"] for f in want]
            for got, exp in zip(job["findings"], want):
                assert got["cost_s"] == pytest.approx(exp["cost_s"], rel=1e-12, abs=1e-12)
                assert got["cost_share"] == pytest.approx(exp["cost_share"], rel=1e-12, abs=1e-12)
                assert got["message"] == exp["message"]
            costs = [f["cost_s"] for f in job["findings"]]
            assert costs == sorted(costs, reverse=True)
            # the File systems table: the CLI's Lustre layout per mount, from the stored per-file table
            assert job["stripes_stored"] is True
            assert [m.get("lustre") for m in job["mounts"]] == [m.get("lustre") for m in rep["mounts"]]
    imb = _cli_report(cli, home, IMBALANCED)
    assert imb["mounts"][0]["lustre"]["stripe_count"] == 1  # the walkthrough's point: one OST


def test_old_store_upgrades_in_place_and_a_second_ingest_completes_it(cli, tmp_path, db):
    home = tmp_path / "home"
    cli("jobs", "ingest", *map(str, LOGS), home=home, env=_env(db), check=True)
    settings = Settings.resolve(home, db)
    ids_before = _sql(settings, "SELECT id, log_hash FROM darshan_jobs ORDER BY id")
    _make_old(settings)
    cols = {c["name"] for c in sa.inspect(open_store(settings).engine).get_columns("darshan_jobs")}
    assert not cols & set(js.VERDICT_COLUMNS)  # really an old store

    with _served(settings) as s:  # the page's first read upgrades the schema
        code, jobs = api(s, "/api/jobs?limit=100")
        assert code == 200 and [r["verdict"] for r in jobs["list"]["rows"]] == [None, None]
        code, _, body = s.get("/jobs")
        assert code == 200 and body.decode().count("re-ingest to see the verdict") == 2
        h = _sql(settings, "SELECT log_hash FROM darshan_jobs WHERE nprocs = 496")[0][0][:16]  # imbalanced-io
        code, job = api(s, f"/api/job?id={h}")
        assert code == 200 and job["verdict"] is None and job["stripes_stored"] is False
        assert job["findings"] and all(f["cost_s"] is None for f in job["findings"])
        code, _, body = s.get(f"/job?id={h}")
        page = body.decode()
        assert code == 200 and "re-ingest to see the verdict" in page
        # Parquet parts without the layout columns: the mounts still add up, the Lustre cell says why it is empty
        assert "not stored by the ioweather that ingested this job" in page
        rep = _cli_report(cli, home, IMBALANCED)
        # the page, as jobs show --json, carries the unit-rule twins (read_bytes, write_bytes) the CLI's JSON has
        assert job["mounts"] == [{**{k: v for k, v in m.items() if k != "lustre"}, "lustre_text": ""}
                                 for m in rep["mounts"]]
    assert _sql(settings, "SELECT version FROM schema_versions WHERE component = 'darshan'") == [(js.COMPONENT.version,)]
    assert _sql(settings, "SELECT COUNT(*) FROM darshan_jobs WHERE verdict IS NULL") == [(2,)]

    out = cli("jobs", "ingest", *map(str, LOGS), home=home, env=_env(db), check=True)
    assert "0 failed" in out.stdout + out.stderr
    # the same rows (ids kept), now complete; nothing added
    assert _sql(settings, "SELECT id, log_hash FROM darshan_jobs ORDER BY id") == ids_before
    stored = dict(_sql(settings, "SELECT path, verdict FROM darshan_jobs"))
    assert stored == {str(log): _cli_report(cli, home, log)["verdict"] for log in LOGS}
    with _served(settings) as s:
        code, jobs = api(s, "/api/jobs?limit=100")
        assert all(r["verdict"] for r in jobs["list"]["rows"])
        code, _, body = s.get("/jobs")
        assert "re-ingest to see the verdict" not in body.decode()
    # a third ingest reads nothing again
    out = cli("jobs", "ingest", *map(str, LOGS), home=home, env=_env(db), check=True)
    assert "0 logs ingested" in out.stdout + out.stderr and "2 already ingested" in out.stdout + out.stderr
