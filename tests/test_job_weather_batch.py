"""The batch weather (services/jobs/weather.compute_many: one telemetry query per day of jobs, summed
over targets) against an independent per-job pandas join of the raw rows; weather and verdicts stored
by `jobs ingest` and by a scheduler import, counted with SQL on the store."""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import asdict, replace

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from darshan_support import LOGS
from umami_planted import S, T0
from umami_planted import job_row as _job

from ioweather.config import Settings
from ioweather.services.jobs import weather as job_weather
from ioweather.store import jobs as jstore
from ioweather.store import open_store
from ioweather.store import telemetry_layout as layout

DAY = 86_400 * S
MAXI = 600 * S
OSTS = [f"fs-OST{k:04x}" for k in range(5)]


def _telemetry(rng) -> pd.DataFrame:
    """Two days of OST byte and op counters at 5 s (one OST at 10 s, some NaN and negative values, a
    gap of an hour), MDT md_* ops, server CPU, and hourly capacity/free gauges."""
    d0 = T0 // DAY * DAY
    frames = []
    for k, target in enumerate(OSTS):
        step = 10 if k == 4 else 5
        t = np.arange(d0, d0 + 2 * DAY, step * S)
        t = t[(t < d0 + 30 * 3600 * S) | (t >= d0 + 31 * 3600 * S)]  # an hour with no samples
        for metric, scale in (("read_bytes", 3e7), ("write_bytes", 5e7), ("read_ops", 300), ("write_ops", 200)):
            v = rng.exponential(scale, size=t.size)
            v[rng.random(t.size) < 0.01] = np.nan
            v[rng.random(t.size) < 0.002] = -1.0  # a counter reset: not an amount
            frames.append(pd.DataFrame({"time_ns": t, "target": target, "metric": metric, "value": v,
                                        "interval_s": float(step)}))
        frames.append(pd.DataFrame({"time_ns": t, "target": target, "metric": "cpu_pct",
                                    "value": rng.uniform(5, 90, t.size), "interval_s": float(step)}))
        th = np.arange(d0, d0 + 2 * DAY, 3600 * S)
        cap = 1e13
        frames.append(pd.DataFrame({"time_ns": th, "target": target, "metric": "capacity_bytes", "value": cap,
                                    "interval_s": 0.0}))
        frames.append(pd.DataFrame({"time_ns": th, "target": target, "metric": "free_bytes",
                                    "value": cap * rng.uniform(0.05, 0.6, th.size), "interval_s": 0.0}))
    t = np.arange(d0, d0 + 2 * DAY, 5 * S)
    for metric in ("md_open", "md_getattr", "md_close"):
        frames.append(pd.DataFrame({"time_ns": t, "target": "fs-MDT0000", "metric": metric,
                                    "value": rng.exponential(50, t.size), "interval_s": 5.0}))
    return pd.concat(frames, ignore_index=True)


def _reference(raw: pd.DataFrame, job: dict) -> dict:
    """The weather of one job from the raw rows, written out in pandas without ioweather's code."""
    since = job["start_ns"]
    until = job["end_ns"] + 5 * S
    w = raw[(raw["time_ns"] >= since - MAXI) & (raw["time_ns"] < until)]
    end = w["time_ns"] + (w["interval_s"] * 1e9).round().astype("int64")
    ov = (np.minimum(end, until) - np.maximum(w["time_ns"], since)).clip(lower=0) / 1e9
    # the servers' amounts: the interval the job started in counts whole (its bytes may all be the job's)
    job_ov = (np.minimum(end, until) - np.where(end > since, w["time_ns"], since)).clip(lower=0) / 1e9
    w = w.assign(ov=ov, job_ov=job_ov)

    def amount(rows, col="job_ov"):
        ok = np.isfinite(rows["value"]) & (rows["value"] >= 0) & (rows["interval_s"] > 0) & (rows[col] > 0)
        return float((rows["value"] * rows[col] / rows["interval_s"])[ok].sum()) if ok.any() else None

    def of(metric, targets=None):
        rows = w[w["metric"] == metric]
        return amount(rows if targets is None else rows[rows["target"].isin(targets)])

    byte_rows = w[w["metric"].isin(["read_bytes", "write_bytes"])]
    if byte_rows.empty:
        return {"no_data": True}
    targets = None
    if job.get("osts"):
        targets = [f"fs-OST{i:04x}" for i in job["osts"]]
    fs_bytes = of("read_bytes", targets) + of("write_bytes", targets)
    fs_ops = of("read_ops", targets) + of("write_ops", targets)
    span = (until - since) / 1e9
    days = range(since // DAY, (until - 1) // DAY + 1)
    day_rows = raw[raw["metric"].isin(["read_bytes", "write_bytes"]) & (raw["time_ns"] // DAY).isin(list(days))]
    valid = byte_rows[np.isfinite(byte_rows["value"]) & (byte_rows["value"] >= 0)]
    at = since
    g = raw[raw["metric"].isin(["capacity_bytes", "free_bytes"]) & (raw["time_ns"] <= at) & (raw["time_ns"] >= at - DAY)]
    last = g.sort_values("time_ns").groupby(["target", "metric"])["value"].last().unstack()
    used = (1 - last["free_bytes"] / last["capacity_bytes"]) * 100
    md = w[w["metric"].str.startswith("md_")]
    return {"no_data": False,
            "coverage_factor_bw": (job["bytes_read"] + job["bytes_written"]) / fs_bytes,
            "coverage_factor_ops": (job["read_ops"] + job["write_ops"]) / fs_ops,
            "coverage_factor_opens": job["opens"] / of("md_open"),
            "md_ops_per_s": amount(md, "ov") / span,  # a rate over the window: its part of the first interval
            "server_cpu_pct": float(w.loc[w["metric"] == "cpu_pct", "value"].mean()),
            "missing_fraction": 1 - valid["ov"].sum() / (span * 2 * day_rows["target"].nunique()),
            "fullest_ost_pct": float(used.max()), "fullest_ost": str(used.idxmax())}


@pytest.fixture
def batch(home):
    settings = Settings.resolve(home, None)
    store = open_store(settings)
    rng = np.random.default_rng(11)
    raw = _telemetry(rng)
    layout.write_rows(settings, "fs", raw)
    # the planted jobs' files live on /scratch, a name the dataset does not share: the site's fs-map says so
    (home / "fs-map").write_text("/scratch fs\n")
    d0 = T0 // DAY * DAY
    starts = [d0 + 3600 * S, d0 + 7 * 3600 * S + 3 * S, d0 + DAY - 1200 * S,  # the third crosses midnight
              d0 + 30 * 3600 * S + 600 * S,  # inside the gap: no data
              d0 + 40 * 3600 * S, d0 + 40 * 3600 * S + 17 * S, d0 + 47 * 3600 * S]
    durs = [600, 1800, 2400, 300, 3600, 123, 900]
    rows, tables = [], []
    for i, (st, du) in enumerate(zip(starts, durs)):
        r, f = _job(i + 1, st, du, int(rng.integers(1, 50)) << 30, 100.0 + i, 5000 + i)
        rows.append(r)
        tables.append(f)
    jstore.write_batch(store, settings.parquet_dir, rows, tables, [])
    return settings, store, raw


def test_batch_equals_a_pandas_join_of_the_raw_rows(batch):
    _settings, store, raw = batch
    jobs = job_weather.darshan_jobs(store)
    jobs[1] = replace(jobs[1], osts=[0, 2])  # the paper's variant: only the job's own OSTs
    docs = [w.to_json() for w in job_weather.compute_many(store, jobs, "fs")]
    assert len(docs) == 7
    for job, doc in zip(jobs, docs):
        ref = _reference(raw, asdict(job))
        assert doc["no_data"] is ref["no_data"], job.id
        if ref["no_data"]:
            assert doc["coverage_factor_bw"] is None and doc["missing_fraction"] is None
            continue
        for k, v in ref.items():
            if isinstance(v, float):
                assert doc[k] == pytest.approx(v, rel=1e-9), (job.id, k)
            else:
                assert doc[k] == v, (job.id, k)
        assert doc["cf_variant"] == ("job's targets" if job.osts else "all targets")
    # one job at a time gives the same numbers as the batch
    for job, doc in zip(jobs[:3], docs[:3]):
        one = job_weather.compute(store, job, "fs").to_json()
        assert {k: one[k] for k in ("coverage_factor_bw", "missing_fraction", "server_cpu_pct")} == \
            {k: doc[k] for k in ("coverage_factor_bw", "missing_fraction", "server_cpu_pct")}


def _verdicts(settings) -> dict[str, str]:
    """{job key: verdict} read with SQL from the store's database, not through ioweather."""
    con = sqlite3.connect(settings.sqlite_path)
    try:
        return dict(con.execute("SELECT job_key, json_extract(doc, '$.verdict') FROM job_weather "
                                "WHERE json_extract(doc, '$.verdict') IS NOT NULL"))
    finally:
        con.close()


def test_refresh_keeps_every_verdict_and_the_umami_answer_reads_it(batch):
    settings, store, _raw = batch
    res = job_weather.refresh_all(store)
    # no import span given: nothing counts as overlapped (services.jobs.weather.refresh_all)
    assert res.to_json() == {"jobs": 7, "computed": 7, "kept": 0, "skipped": 0, "overlapped": 0}
    got = _verdicts(settings)
    assert len(got) == 7
    assert sum(v.startswith("no data") for v in got.values()) == 1
    assert job_weather.refresh_all(store).computed == 0
    doc = job_weather.umami_for_job(store, "5004")
    assert doc.verdict == got[job_weather.find_job(store, "5004").key]


@pytest.mark.skipif(not LOGS, reason="the shared Darshan logs are not here")
def test_jobs_ingest_stores_weather_verdicts(home, tmp_path):
    """`jobs ingest` of real logs into a store with telemetry for their file system: every job gets
    its weather and verdict at ingest, counted with SQL, without opening any job."""
    logs = [p for p in LOGS if "empty" not in p.name][:4]
    src = tmp_path / "logs"
    src.mkdir()
    for p in logs:
        shutil.copy(p, src / p.name)
    first = tmp_path / "first"
    run_cli("jobs", "ingest", str(src), "--workers", "1", home=first, timeout=300, check=True)
    s1 = Settings.resolve(first, None)
    con = sqlite3.connect(s1.sqlite_path)
    windows = con.execute("SELECT jobid, start_ns, end_ns FROM darshan_jobs WHERE start_ns IS NOT NULL").fetchall()
    con.close()
    assert windows
    # telemetry for the window of every other job only: the others are "no data"
    settings = Settings.resolve(home, None)
    frames = []
    covered = windows[::2]
    for _jobid, st, en in covered:
        t = np.arange(st - 60 * S, en + 60 * S, 5 * S)
        for m in ("read_bytes", "write_bytes"):
            frames.append(pd.DataFrame({"time_ns": t, "target": "lus-OST0000", "metric": m, "value": 1e6,
                                        "interval_s": 5.0}))
    layout.write_rows(settings, "lus", pd.concat(frames, ignore_index=True))
    # the logs come from several sites and mounts: this site's fs-map says they all lived on "lus"
    (home / "fs-map").write_text("/ lus\n")
    run_cli("jobs", "ingest", str(src), "--workers", "1", home=home, timeout=300, check=True)
    got = _verdicts(settings)
    assert len(got) == len(windows)
    no_data = [v for v in got.values() if v.startswith("no data")]
    assert len(no_data) == len(windows) - len(covered)
    assert all(v.startswith("not enough history") for v in got.values() if not v.startswith("no data"))
    # the Jobs list reads them
    from ioweather.services.jobs.weather import stored_verdicts

    hashes = [k[len("darshan:"):] for k in got]
    assert stored_verdicts(open_store(settings), hashes) == {h: got["darshan:" + h] for h in hashes}


def test_scheduler_import_recomputes_concurrency(batch, tmp_path):
    """A scheduler import beside stored weather: the jobs that ran then get their concurrent jobs
    without being opened (the telemetry signature does not see the scheduler)."""
    from ioweather.services.jobs.scheduler import import_jobs

    settings, store, _raw = batch
    job_weather.refresh_all(store)
    job = job_weather.find_job(store, "5000")
    con = sqlite3.connect(settings.sqlite_path)
    q = "SELECT json_extract(doc, '$.concurrent_jobs') FROM job_weather WHERE job_key = ?"
    assert con.execute(q, (job.key,)).fetchone()[0] is None
    iso = lambda ns: pd.Timestamp(ns, unit="ns").strftime("%Y-%m-%dT%H:%M:%S")
    sacct = tmp_path / "sacct.txt"
    sacct.write_text("JobID|Cluster|JobName|Start|End|NNodes|State\n"
                     f"5000|c|ior|{iso(job.start_ns)}|{iso(job.end_ns)}|2|COMPLETED\n"
                     f"77|c|other|{iso(job.start_ns - 600 * S)}|{iso(job.end_ns + 600 * S)}|8|COMPLETED\n")
    import_jobs(settings, "slurm", str(sacct), tz="UTC")
    assert con.execute(q, (job.key,)).fetchone()[0] == 1
    con.close()


def test_umami_of_a_job_with_a_kept_climate_imports_no_scipy(batch):
    """`umami JOB` answers from the kept correlations: the answer equals a fresh computation, and
    the process that gave it never imported scipy (~2-5 s of import on a loaded machine)."""
    import json
    import subprocess
    import sys

    settings, store, _raw = batch
    job_weather.refresh_all(store)
    code = ("import json, sys; from ioweather.config import Settings; from ioweather.store import open_store; "
            "from ioweather.services.answers import umami; "
            f"d = umami.umami(open_store(Settings.resolve({str(settings.home)!r})), '5006').to_json(); "
            "print(json.dumps({'scipy': any(m.startswith('scipy') for m in sys.modules), "
            "'pandas': 'pandas' in sys.modules, 'doc': d}, default=str))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out["scipy"] is False
    assert out["pandas"] is False  # 0.4 s of `umami JOB`: the history goes to climate() as arrays
    kept = out["doc"]
    from ioweather.services.answers.umami import climate

    job = job_weather.find_job(store, "5006")
    t = job_weather.update_climates(store, "fs", {kept["motif"]})[kept["motif"]]
    i = t.keys.index(job.key)
    fresh = climate({"id": job.id, "motif": kept["motif"], "start_ns": job.start_ns,
                     "values": t.values(i).answer_json()}, t.starts[t.starts < job.start_ns],
                    t.x[t.starts < job.start_ns], list(job_weather.UMAMI_ROWS),
                    "fraction_of_peak")  # computes r and p itself (scipy.special)
    assert [(m["metric"], m["quartile"], m["r"], m["p"]) for m in kept["metrics"]] == \
        [(m["metric"], m["quartile"], m["r"], m["p"]) for m in fresh.metrics]
    assert kept["verdict"] == fresh.verdict


def test_dask_path_gives_the_local_documents(batch):
    """The batch on a real LocalCluster of worker processes (each day's telemetry read there, the
    store only here) gives the documents of the local path, and `refresh_all` stores the same."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed")
    from dask.distributed import Client, LocalCluster

    _settings, store, _raw = batch
    jobs = job_weather.darshan_jobs(store)
    jobs[1] = replace(jobs[1], osts=[0, 2])
    local = job_weather.compute_many(store, jobs, "fs")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as client:
        remote = job_weather.compute_many(store, jobs, "fs", client=client)
        assert remote == local
        assert job_weather.refresh_all(store, client=client).computed == 7
    assert distributed is not None


@pytest.mark.parametrize("db", ["pg_url", "mariadb_url"])
def test_refresh_and_verdicts_on_server_databases(home, db, request):
    """The incremental step's SQL (the anti-join of jobs without weather, the raw-cursor signatures, the
    kept verdicts) on PostgreSQL and MariaDB: the same documents as on SQLite, verdicts counted with SQL."""
    import json

    import sqlalchemy as sa

    url = request.getfixturevalue(db)
    ref_home = home.parent / "ref"
    docs = {}
    for h, u in ((ref_home, None), (home, url)):
        settings = Settings.resolve(h, u)
        store = open_store(settings)
        rng = np.random.default_rng(11)
        layout.write_rows(settings, "fs", _telemetry(rng))
        (h / "fs-map").write_text("/scratch fs\n")  # the planted jobs' mount (see `batch`)
        d0 = T0 // DAY * DAY
        rows, tables = [], []
        for i in range(12):
            r, f = _job(i + 1, d0 + (1 + i * 3) * 3600 * S, 600, (i + 1) << 30, 100.0 + 7 * i, 5000 + i)
            rows.append(r)
            tables.append(f)
        jstore.write_batch(store, settings.parquet_dir, rows, tables, [])
        assert job_weather.refresh_all(store).computed == 12
        assert job_weather.refresh_all(store).computed == 0
        with store.connect() as conn:
            got = {k: json_doc for k, json_doc in conn.execute(sa.text("SELECT job_key, doc FROM job_weather"))}
        docs[u] = {k: json.loads(d) for k, d in got.items()}
        for d in docs[u].values():
            d["climate"].pop("sig")  # a digest of computed_ns: the stores computed at other times
        assert sum(1 for d in docs[u].values() if isinstance(d.get("verdict"), str)) == 12
        store.dispose()
    assert docs[url] == docs[None]


def test_a_telemetry_import_recomputes_the_weather_it_covers(batch, tmp_path):
    """Job 4 ran in the hour without samples: its stored verdict says "no data". Importing that hour
    (`ioweather import csv`) recomputes its weather and verdict in the same command, with no umami
    call in between. Windows are watermarked per day, so the jobs whose window reaches that day are
    recomputed (with the same numbers: the new rows lie outside their windows) and the others kept."""
    import json

    settings, store, raw = batch
    job_weather.refresh_all(store)
    job = job_weather.find_job(store, "5003")
    con = sqlite3.connect(settings.sqlite_path)
    q = ("SELECT job_key, computed_ns, json_extract(doc, '$.no_data'), json_extract(doc, '$.verdict'), "
         "json_extract(doc, '$.coverage_factor_bw'), json_extract(doc, '$.missing_fraction') FROM job_weather")
    before = {k: rest for k, *rest in con.execute(q)}
    assert before[job.key][1] == 1 and before[job.key][2].startswith("no data")
    d0 = T0 // DAY * DAY
    gap_day = (d0 + 30 * 3600 * S) // DAY
    t = np.arange(d0 + 30 * 3600 * S, d0 + 31 * 3600 * S, 5 * S)
    gap = pd.concat([pd.DataFrame({"time": t / 1e9, "target": target, "metric": metric, "value": 1e6,
                                   "interval_s": 5.0})
                     for target in OSTS[:4] for metric in ("read_bytes", "write_bytes", "read_ops", "write_ops")])
    csv = tmp_path / "gap.csv"
    gap.to_csv(csv, index=False)
    r = run_cli("import", "csv", str(csv), "--fs", "fs", "--json", home=str(settings.home))
    assert r.returncode == 0, r.stderr
    after = {k: rest for k, *rest in con.execute(q)}
    con.close()
    reaches = {j.key for j in job_weather.darshan_jobs(store) if (j.end_ns + 5 * S - 1) // DAY >= gap_day}
    assert json.loads(r.stdout)["job_weather"]["computed"] == len(reaches) == 5
    assert {k for k in after if after[k][0] != before[k][0]} == reaches
    assert after[job.key][1] == 0 and not after[job.key][2].startswith("no data")
    assert after[job.key][3] is not None
    for k in set(after) - {job.key}:
        assert after[k][3:] == before[k][3:], k
