"""The cost of contention when probes ran (docs/events.md): an event is contended when the probes'
slowdown over it reaches the threshold, and only then are the jobs exposed to it counted.

The synthetic file system of test_events (its planted culprit, tail and twin jobs) plus two probe
targets: a month of baseline before the events, 20-second samples during them, and a slowdown
planted during the culprit's burst only (×4 on scratch, ×2 on the data ops of home). The reference
is computed from the stored rows (SQL) with pandas: per target and op, the median successful
duration over the event ÷ the median over the 30 days before the event's UTC day; the median over
targets per op; the worst op.
"""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest
import sqlalchemy as sa

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.store import open_store
from test_events import CULPRIT, TAIL, TWIN_A, run, synthetic, with_jobs  # noqa: F401  (module fixtures)
from web_synthetic import Episode, add_target

DAY = 86_400 * 10**9
BASELINE_DAYS = 30


@pytest.fixture(scope="module")
def probed(tmp_path_factory, with_jobs):  # noqa: F811
    home = tmp_path_factory.mktemp("evp") / "home"
    shutil.copytree(with_jobs[0], home)
    store = open_store(Settings.resolve(home))
    burst = Episode(CULPRIT["start_ns"], CULPRIT["end_ns"], 4.0)
    for target, seed, episode in (("scratch", 11, burst),
                                  ("home", 12, Episode(burst.start_ns, burst.end_ns, 2.0, ("data_write", "data_read")))):
        add_target(store, target, syn.T0 - BASELINE_DAYS * DAY, syn.T0, period_s=300, seed=seed)
        add_target(store, target, syn.T0, syn.T0 + syn.DAYS * DAY, period_s=20, seed=seed + 100, episodes=[episode])
    store.dispose()
    code, out, err = run("events", "--fs", "syn", "--json", home=home)
    assert code == 0, err
    return home, json.loads(out)


def _samples(home) -> pd.DataFrame:
    store = open_store(Settings.resolve(home))
    q = sa.text("SELECT r.target, s.op, s.start_ns, s.duration_ns FROM probe_samples s "
                "JOIN probe_runs r ON r.id = s.run_id WHERE s.status = 'ok'")
    try:
        with store.connect() as conn:
            return pd.DataFrame(conn.execute(q).fetchall(), columns=["target", "op", "start_ns", "duration_ns"])
    finally:
        store.dispose()


def reference_slowdown(df: pd.DataFrame, lo: int, hi: int) -> float:
    day = lo // DAY * DAY

    def medians(a, b):
        w = df[(df["start_ns"] >= a) & (df["start_ns"] < b)]
        return (w["duration_ns"] / 1e9).groupby([w["target"], w["op"]]).median()

    ratio = (medians(lo, hi) / medians(day - BASELINE_DAYS * DAY, day)).dropna()
    return float(ratio.groupby(level="op").median().max())


def _ns(iso) -> int:
    return pd.Timestamp(iso).value


def _event_of(events, job) -> dict:
    return next(e for e in events if _ns(e["start"]) <= job["start_ns"] < _ns(e["end"]))


def test_probe_slowdown_of_each_event_against_the_rows(probed):
    home, events = probed
    df = _samples(home)
    for e in events:
        assert e["slowdown"] == pytest.approx(reference_slowdown(df, _ns(e["start"]), _ns(e["end"])), rel=1e-12)
        assert e["contention"] == "probe"
    culprit = _event_of(events, CULPRIT)
    # the data ops: 4× on scratch, 2× on home, the median of the two targets 3× (seen through the noise)
    assert culprit["slowdown"] == pytest.approx(3.0, rel=0.15)
    assert [e["contended"] for e in events] == [e is culprit for e in events]  # the others stay below 1.5×


def test_only_contended_events_cost(probed):
    """The culprit's event: the tail job (128 cores) is exposed for its overlap, the culprit is not;
    the twins' event is not contended by the probes (with the coverage criterion it cost 320 cores)."""
    home, events = probed
    ev, twin = _event_of(events, CULPRIT), _event_of(events, TWIN_A)
    overlap_h = max(0, min(_ns(ev["end"]), TAIL["end_ns"]) - TAIL["start_ns"]) / 3.6e12
    assert (ev["exposed_jobs"], ev["core_hours_exposed"]) == (1, pytest.approx(128 * overlap_h))
    assert (twin["contended"], twin["exposed_jobs"], twin["core_hours_exposed"]) == (False, 0, 0.0)
    code, out, err = run("events", "--fs", "syn", "--cost", "--json", home=home)
    assert code == 0, err
    cost = json.loads(out)
    assert cost["core_hours_exposed"] == pytest.approx(128 * overlap_h)
    want = pd.Series([e["start"][:10] for e in events]).value_counts().sort_index()
    assert [(d["day"], d["events"]) for d in cost["daily"]] == list(want.items())
    assert cost["top_events"][0]["start"] == ev["start"]
    culprit = next(c for c in cost["top_culprits"] if c["job"] == "7001")
    assert culprit["core_hours_caused"] == pytest.approx(128 * overlap_h * ev["jobs"][0]["share"])


def test_a_higher_threshold_makes_no_event_contended(probed):
    home, events = probed
    worst = max(e["slowdown"] for e in events)
    code, out, err = run("events", "--fs", "syn", "--json", "--slowdown-threshold", f"{worst * 1.01}", home=home)
    assert code == 0, err
    assert all(not e["contended"] and e["core_hours_exposed"] == 0 for e in json.loads(out))


def test_windows_read_together_as_one_by_one(probed):
    """event_probes.window_slowdowns (each target read once per group of windows spanning at most GROUP_NS) gives
    each window the slowdown of services.jobs.weather._probe_slowdown reading that window alone: windows
    across a day's end, overlapping, empty, an hour long and spread over more than GROUP_NS (several groups)."""
    import numpy as np

    from ioweather.services.answers import event_probes
    from ioweather.services.jobs.weather import _probe_slowdown

    seed = int(os.environ.get("TEST_SEED", np.random.SeedSequence().entropy % 2**31))
    print("seed", seed, "(TEST_SEED)")
    rng = np.random.default_rng(seed)
    lo, hi = syn.T0 - (BASELINE_DAYS - 2) * DAY, syn.T0 + syn.DAYS * DAY
    starts = rng.integers(lo, hi, 12)
    windows = [(int(s), int(s + rng.integers(60, 6 * 3600) * 10**9)) for s in starts]
    windows += [(syn.T0 + DAY - 1800 * 10**9, syn.T0 + DAY + 1800 * 10**9), windows[0], (lo - 5 * DAY, lo - 4 * DAY)]
    assert hi - lo > event_probes.GROUP_NS
    store = open_store(Settings.resolve(probed[0]))
    try:
        got = event_probes.window_slowdowns(event_probes.PiecesBaselines(store), windows)
        ref = event_probes.PiecesBaselines(store)
        want = [_probe_slowdown(ref, a, b)[0] for a, b in windows]
    finally:
        store.dispose()
    assert got == want
    assert sum(w is not None for w in want) >= 8 and want[-1] is None  # most: the first days' baselines learn


def test_closed_days_slowdowns_kept_until_one_of_their_days_changes(probed, tmp_path, monkeypatch):
    """event_probes.kept_window_slowdowns (the Report's): the windows of days before today are computed once
    and read back (also by another process: the entry is in the home), today's are computed each time, and a
    late sample in a closed day makes every window computed again; always `window_slowdowns`' numbers."""
    from ioweather.services.answers import event_probes as ep
    from ioweather.store import probe as probe_store

    home = tmp_path / "home"
    shutil.copytree(probed[0], home)
    settings = Settings.resolve(home)
    hour = 3600 * 10**9
    windows = [(syn.T0 + h * hour, syn.T0 + h * hour + 40 * 60 * 10**9) for h in (2, 9, 23, 30, 41)]
    real, computed = ep.window_slowdowns, []

    def counting(probes, ws):
        computed.append(list(ws))
        return real(probes, ws)

    monkeypatch.setattr(ep, "window_slowdowns", counting)
    store = open_store(settings)
    try:
        def kept(now_ns=None):
            return ep.kept_window_slowdowns(settings, ep.PiecesBaselines(store), windows, now_ns)

        want = real(ep.PiecesBaselines(store), windows)
        assert sum(w is not None for w in want) >= 4
        assert kept() == want and computed[-1] == windows
        assert kept() == want and computed[-1] == []
        # "today" is the second day: its windows are open, computed each time; the first day's kept
        today = syn.T0 + DAY + 12 * hour
        assert kept(today) == want and computed[-1] == windows  # another set of closed days: a new entry
        assert kept(today) == want and computed[-1] == [w for w in windows if w[1] > syn.T0 + DAY]
        with store.connect() as conn:
            run_id = conn.execute(sa.text("SELECT max(id) FROM probe_runs WHERE target = 'scratch'")).scalar()
        probe_store.insert_samples(store, [(run_id, "md_stat", syn.T0 + 5 * hour + 7, 10**9, 0, "ok", 0)])
        want = real(ep.PiecesBaselines(store), windows)
        assert kept() == want and computed[-1] == windows
    finally:
        store.dispose()


def test_late_samples_into_a_closed_event_day_recompute_its_kept_slowdown(tmp_path):
    """A closed day whose day piece nothing built (the Report's last event day: the baselines read only the
    days before it) was invisible to the kept entry's marker: 40 slow samples per op stored late into an event
    window left the first answer in place (the reviewer's case: 1.35 kept, 1.7 M computed). The kept answer is
    `window_slowdowns`' before and after; the first computation on a fresh store is kept, not thrown away."""
    from ioweather.services.answers import event_probes as ep
    from ioweather.store import probe as probe_store

    settings = Settings.resolve(tmp_path / "home")
    day = syn.T0  # D: the event's day, 30 days of baselines before it
    window = (day + 10 * 3600 * 10**9, day + 11 * 3600 * 10**9)
    now = day + DAY + 3600 * 10**9
    store = open_store(settings)
    try:
        run_id = add_target(store, "scratch", day - BASELINE_DAYS * DAY, day + DAY, period_s=600, seed=5)
        real, computed = ep.window_slowdowns, []

        def kept():
            def counting(probes, ws):
                computed.append(list(ws))
                return real(probes, ws)
            ep.window_slowdowns = counting
            try:
                return ep.kept_window_slowdowns(settings, ep.PiecesBaselines(store), [window], now)
            finally:
                ep.window_slowdowns = real

        first = kept()  # on a fresh store: no piece built yet
        assert computed == [[window]]
        assert kept() == first and computed[-1] == []  # the first computation's entry is the one read back
        before = real(ep.PiecesBaselines(store), [window])
        assert first == before and before[0] is not None and before[0] < 3
        slow = [(run_id, op, window[0] + i * 60 * 10**9 + k * 10_000 + 7, 10**12, 0, "ok", 0)
                for k, op in enumerate(probe_store.OPS) for i in range(40)]
        probe_store.insert_samples(store, slow)
        after = real(ep.PiecesBaselines(store), [window])
        assert after[0] > 100 * before[0]
        assert kept() == after and computed[-1] == [window]
        assert kept() == after and computed[-1] == []
    finally:
        store.dispose()
