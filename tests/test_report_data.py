"""`ioweather report` on a week with data in every part: the slowdown climate of two probe targets,
benchmark runs of the file system (and of another one, left out), capacity gauges of its targets
growing at known rates. Each part against a reference computed here from what was stored (SQL rows
and pandas for the probe, the runs as written for the benchmarks, the planted gauges for fullness).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.store import open_store
from test_events import run, synthetic, with_jobs  # noqa: F401  (module fixtures)
from test_events_probe_cost import _samples, probed  # noqa: F401

DAY = 86_400 * 10**9
HOUR = 3_600 * 10**9
UNTIL = syn.T0 + syn.DAYS * DAY
WINDOW = ["--since", "2024-03-01T00:00:00Z", "--until", "2024-03-03T00:00:00Z"]
TIB = float(1 << 40)
GAUGE_STEP = 360 * 10**9  # the capacity page's bin over two days: one gauge per bin, whatever a bin keeps
# per data target: capacity, used at the start, growth (bytes/s); avail = free - 5 % of capacity
OSTS = {"syn-OST0000": (100 * TIB, 60 * TIB, 2e6), "syn-OST0001": (100 * TIB, 85 * TIB, 1e6),
        "syn-OST0002": (50 * TIB, 10 * TIB, 0.0), "syn-OST0003": (100 * TIB, 70 * TIB, 4e6)}
RESERVE = 0.05


def _bench_runs() -> list[dict]:
    """Nightly runs of two motifs on syn (the second falls to a third of its peak for its last three
    runs: a regression), one motif on another file system, and runs after the week (a report of a
    past week must not count them: its standing is the one at the week's end)."""
    rng = np.random.default_rng(3)
    runs = []
    for motif, fs, last3 in (("ior-easy", "syn", 1.0), ("ior-hard", "syn", 0.3), ("ior-easy", "other", 1.0)):
        for night in range(12):
            bw = float(rng.uniform(0.8, 1.0) * 5e9 * (last3 if night >= 9 else 1.0))
            start = syn.T0 - (12 - night) * DAY // 6
            runs.append({"run_id": f"{motif}-{fs}-{night}", "motif": motif, "fs": fs, "source": "fio",
                         "start_ns": start, "end_ns": start + 60 * 10**9, "params": {},
                         "results": [{"direction": "write", "duration_s": 4e11 / bw, "bw_bps": bw}]})
    for motif, bw in (("ior-easy", 9e9), ("ior-hard", 9e9)):
        runs.append({"run_id": f"{motif}-later", "motif": motif, "fs": "syn", "source": "fio", "start_ns": UNTIL + DAY,
                     "end_ns": UNTIL + DAY + 60 * 10**9, "params": {},
                     "results": [{"direction": "write", "duration_s": 4e11 / bw, "bw_bps": bw}]})
    return runs


def _gauges() -> pd.DataFrame:
    t = np.arange(syn.T0, UNTIL, GAUGE_STEP, dtype=np.int64)
    parts = []
    for target, (cap, used0, rate) in OSTS.items():
        used = used0 + rate * (t - syn.T0) / 1e9
        for metric, v in (("capacity_bytes", np.full(len(t), cap)), ("free_bytes", cap - used),
                          ("avail_bytes", cap - used - RESERVE * cap)):
            parts.append(pd.DataFrame({"time_ns": t, "target": target, "metric": metric, "value": v,
                                       "interval_s": GAUGE_STEP / 1e9}))
    # a metadata target: not a data target, never in the file system's fullness
    parts.append(pd.DataFrame({"time_ns": t, "target": "syn-MDT0000", "metric": "free_bytes", "value": 1.0,
                               "interval_s": GAUGE_STEP / 1e9}))
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def week(tmp_path_factory, probed):  # noqa: F811
    from ioweather.store import bench as bstore
    from ioweather.store.telemetry_layout import write_rows

    home = tmp_path_factory.mktemp("rep") / "home"
    shutil.copytree(probed[0], home)
    settings = Settings.resolve(home)
    store = open_store(settings)
    bstore.put_runs(store, _bench_runs())
    store.dispose()
    write_rows(settings, "syn", _gauges())
    code, out, err = run("report", "--fs", "syn", *WINDOW, "--json", home=home)
    assert code == 0, err
    return home, json.loads(out)


def test_climate_against_the_rows(week):
    """Hourly medians of successful samples ÷ the median of the 30 days before the window's end, per
    target and op; per op over every target and hour: median, 95th percentile, worst, count."""
    home, doc = week
    df = _samples(home)
    base = df[(df["start_ns"] >= UNTIL - 30 * DAY) & (df["start_ns"] < UNTIL)]
    expected = (base["duration_ns"] / 1e9).groupby([base["target"], base["op"]]).median()
    win = df[(df["start_ns"] >= syn.T0) & (df["start_ns"] < UNTIL)]
    hourly = (win["duration_ns"] / 1e9).groupby([win["target"], win["op"], win["start_ns"] // HOUR]).median()
    sd = (hourly / expected.reindex(hourly.index.droplevel(2)).to_numpy()).rename("slowdown").reset_index()
    want = sd.groupby("op")["slowdown"].agg(["median", lambda s: s.quantile(0.95), "max", "count"])
    got = pd.DataFrame(doc["slowdown"]["ops"]).set_index("op")
    assert sorted(got.index) == sorted(want.index) and len(want) == 6
    np.testing.assert_allclose(got.loc[want.index, ["median", "p95", "worst"]].to_numpy(float),
                               want.iloc[:, :3].to_numpy(float), rtol=1e-12)
    assert got.loc[want.index, "intervals"].tolist() == want["count"].tolist()
    worst = sd.sort_values("slowdown", ascending=False).head(5)
    assert [(w["target"], w["op"], w["start"], w["slowdown"]) for w in doc["slowdown"]["worst"]] == [
        (r.target, r.op, pd.Timestamp(r.start_ns * HOUR, tz="UTC").strftime("%Y-%m-%dT%H:%M:%S.000Z"),
         pytest.approx(r.slowdown, rel=1e-12)) for r in worst.itertuples()]
    # the culprit's burst (02:01-02:31 on the first day, ×4 on scratch) is the worst hour
    assert doc["slowdown"]["worst"][0]["target"] == "scratch" and doc["slowdown"]["worst"][0]["start"].startswith(
        "2024-03-01T02:")


def test_bench_standing_against_the_runs(week):
    _, doc = week
    runs = pd.DataFrame([{"motif": r["motif"], "fs": r["fs"], "start_ns": r["start_ns"], **r["results"][0]}
                         for r in _bench_runs()])
    mine = runs[(runs["fs"] == "syn") & (runs["start_ns"] < UNTIL)].sort_values("start_ns")
    got = {(b["motif"], b["direction"]): b for b in doc["bench"]}
    assert set(got) == {("ior-easy", "write"), ("ior-hard", "write")}  # the other file system's runs left out
    for motif, g in mine.groupby("motif"):
        b = got[(motif, "write")]
        assert b["runs"] == len(g)
        assert b["optimum_s"] == pytest.approx(g["duration_s"].min(), rel=1e-12)
        assert b["mean_s"] == pytest.approx(g["duration_s"].mean(), rel=1e-12)
        frac = g["bw_bps"] / g["bw_bps"].max()
        assert b["last_fraction_of_peak"] == pytest.approx(frac.iloc[-1], rel=1e-12)
        assert b["regression"] == bool((frac.tail(3) < 0.5).all())
    assert (got[("ior-easy", "write")]["regression"], got[("ior-hard", "write")]["regression"]) == (False, True)


def test_fullness_against_the_gauges(week):
    """At the window's last gauge: used / (used + avail) over the data targets; days until full at the
    planted growth; the fullest targets in order."""
    _, doc = week
    t_last = (UNTIL - syn.T0 - GAUGE_STEP) / 1e9
    used = {t: u0 + r * t_last for t, (cap, u0, r) in OSTS.items()}
    avail = {t: cap - used[t] - RESERVE * cap for t, (cap, _, _) in OSTS.items()}
    f = doc["fullness"]
    assert f["fullness"] == pytest.approx(sum(used.values()) / (sum(used.values()) + sum(avail.values())), rel=1e-9)
    growth = sum(r for _, _, r in OSTS.values())
    assert f["growth_bps"] == pytest.approx(growth, rel=1e-6)
    assert f["days_until_full"] == pytest.approx(sum(avail.values()) / growth / 86400, rel=1e-6)
    per = {t: used[t] / (used[t] + avail[t]) for t in OSTS}
    assert [(r["target"], pytest.approx(r["fullness"], rel=1e-9)) for r in f["fullest"]] == sorted(
        per.items(), key=lambda kv: -kv[1])
    grows = {t: r for t, (_, _, r) in OSTS.items()}
    for r in f["fullest"]:
        want = avail[r["target"]] / grows[r["target"]] / 86400 if grows[r["target"]] > 0 else None
        assert r["days_until_full"] == (pytest.approx(want, rel=1e-6) if want else None)


@pytest.mark.slow  # ~2 s: three recomputations
def test_page_kept_across_a_restart_until_an_input_changes(week, tmp_path, monkeypatch):
    """The Report page's answer (the CLI's JSON) is kept across a restart: a new WebContext reads it back
    without computing; a late probe sample in the baselines' month, a benchmark run or new telemetry of the
    file system each change `inputs_version`, and the next view computes the report again."""
    from starlette.datastructures import QueryParams

    import ioweather.web.pages.report as page
    from ioweather.services.answers.report import inputs_version
    from ioweather.store import bench as bstore
    from ioweather.store import probe as probe_store
    from ioweather.store.telemetry_layout import write_rows
    from ioweather.web.context import WebContext

    home = tmp_path / "home"
    shutil.copytree(week[0], home)
    settings = Settings.resolve(home)
    q = QueryParams({"fs": "syn", "since": WINDOW[1], "until": WINDOW[3]})
    computed = []
    real = page.compute
    monkeypatch.setattr(page, "compute", lambda *a, **k: computed.append(1) or real(*a, **k))

    def view() -> dict:
        ctx = WebContext(settings)  # a restarted server's
        try:
            return page.report_data(ctx, q)["report"]
        finally:
            ctx.close()

    def version() -> tuple:
        store = open_store(settings)
        try:
            return inputs_version(settings, store, "syn", syn.T0, UNTIL)
        finally:
            store.dispose()

    first = view()
    assert first == week[1] and len(computed) == 1  # the page's report is the CLI's
    assert view() == first and len(computed) == 1  # read back after the restart, not computed
    assert version() == version()

    def late_sample():
        store = open_store(settings)
        with store.connect() as conn:
            run_id = conn.exec_driver_sql("SELECT min(id) FROM probe_runs WHERE target = 'scratch'").scalar()
        probe_store.insert_samples(store, [(run_id, "md_stat", syn.T0 - 5 * DAY + 17 * 10**9 + 1, 10**9, 0, "ok", 0)])
        store.dispose()

    def bench_run():
        store = open_store(settings)
        bstore.put_runs(store, [{"run_id": "late", "motif": "ior-easy", "fs": "syn", "source": "fio",
                                 "start_ns": syn.T0, "end_ns": syn.T0 + 60 * 10**9, "params": {},
                                 "results": [{"direction": "write", "duration_s": 100.0, "bw_bps": 4e9}]}])
        store.dispose()

    def telemetry():
        write_rows(settings, "syn", _gauges().head(8).assign(time_ns=lambda d: d["time_ns"] + GAUGE_STEP // 2))

    for change in (late_sample, bench_run, telemetry):
        before, n = version(), len(computed)
        change()
        assert version() != before, change.__name__
        view()
        assert len(computed) == n + 1, change.__name__


def test_events_and_report_agree_after_a_late_sample(probed, tmp_path):  # noqa: F811
    """The report keeps its events' probe slowdowns of closed days (event_probes.kept_window_slowdowns),
    `events --json` computes them each time: slow samples stored late into an event that the report kept
    change both alike. The window ends mid-day: its last day has no day piece (the climate summarizes its
    hours, the baselines the days before it), which the kept entry's marker, counting day pieces, did not see."""
    from ioweather.services.answers.report import inputs_version
    from ioweather.store import probe as probe_store

    home = tmp_path / "home"
    shutil.copytree(probed[0], home)  # its pieces: the events' baselines' (no report ran)
    window = [WINDOW[0], WINDOW[1], WINDOW[2], "2024-03-02T12:00:00Z"]

    def answer(*command) -> list | dict:
        code, out, err = run(*command, "--fs", "syn", *window, "--json", home=home)
        assert code == 0, err
        return json.loads(out)

    kept = answer("report")["events"]["events"]
    i, event = [(i, e) for i, e in enumerate(kept) if e["slowdown"] is not None][-1]
    lo, hi = pd.Timestamp(event["start"]).value, pd.Timestamp(event["end"]).value
    assert lo >= syn.T0 + DAY  # the window's last, partial day
    settings = Settings.resolve(home)
    store = open_store(settings)
    try:
        # the Report page's key (`inputs_version`) sees the late samples as well
        page_version = inputs_version(settings, store, "syn", syn.T0, pd.Timestamp(window[3]).value)
        with store.connect() as conn:
            run_ids = [r[0] for r in conn.exec_driver_sql("SELECT max(id) FROM probe_runs GROUP BY target")]
        ops = ("data_write", "data_read", "md_create", "md_stat", "md_read", "md_delete")
        n = 2 * int((hi - lo) // (20 * 10**9)) + 40  # more than the window's samples: its medians move
        step = max(1, (hi - lo) // (n + 1))
        probe_store.insert_samples(store, [(r, op, lo + j * step + k * 1_000 + 3, 10**12, 0, "ok", 0)
                                           for r in run_ids for k, op in enumerate(ops) for j in range(n)])
        assert inputs_version(settings, store, "syn", syn.T0, pd.Timestamp(window[3]).value) != page_version
    finally:
        store.dispose()
    events = answer("events")
    assert answer("report")["events"]["events"] == events
    assert events[i]["slowdown"] > 10 * event["slowdown"]


@pytest.mark.slow  # ~1 s: two computations
def test_page_keeps_no_answer_whose_inputs_changed_during_its_computation(week, tmp_path, monkeypatch):
    """A benchmark run stored while the Report page computes (after its inputs' version was read, before the
    report reads the runs): the answer is of the new inputs, and was kept under the old version. The page reads
    the version again once computed and keeps the answer only if it did not move; the next view computes it
    again and keeps it under the new version, the same answer."""
    from starlette.datastructures import QueryParams

    import ioweather.web.context as context
    import ioweather.web.pages.report as page
    from ioweather.store import bench as bstore
    from ioweather.web.context import WebContext

    home = tmp_path / "home"
    shutil.copytree(week[0], home)
    settings = Settings.resolve(home)
    q = QueryParams({"fs": "syn", "since": WINDOW[1], "until": WINDOW[3]})
    kept, versions = [], []
    real_keep, real_compute, real_version = context.keep_answer, page.compute, page.inputs_version

    def keep(settings, key, version, text):
        if key.startswith("('report'"):
            kept.append(version)
        real_keep(settings, key, version, text)

    def seen_version(*a, **k):
        versions.append(real_version(*a, **k))
        return versions[-1]

    def racing(*a, **k):
        store = open_store(settings)
        bstore.put_runs(store, [{"run_id": "during", "motif": "ior-easy", "fs": "syn", "source": "fio",
                                 "start_ns": syn.T0, "end_ns": syn.T0 + 60 * 10**9, "params": {},
                                 "results": [{"direction": "write", "duration_s": 100.0, "bw_bps": 4e9}]}])
        store.dispose()
        return real_compute(*a, **k)
    monkeypatch.setattr(context, "keep_answer", keep)
    monkeypatch.setattr(page, "inputs_version", seen_version)
    monkeypatch.setattr(page, "compute", racing)

    def view() -> dict:
        ctx = WebContext(settings)
        try:
            return page.report_data(ctx, q)["report"]
        finally:
            ctx.close()

    during = view()
    assert kept == []  # neither under the version read before (the bug) nor under the one after
    assert versions[0] != versions[-1]  # the run moved the version while the page computed
    assert during["bench"] != week[1]["bench"]  # the report counts the new run
    monkeypatch.setattr(page, "compute", real_compute)
    n = len(versions)
    again = view()
    # the version once the run was in, read before and after: unchanged, so kept under it
    assert versions[n - 1] == versions[n] == versions[n + 1] and kept == [repr(versions[n])]
    assert again == during
