"""`ioweather events`: synthetic telemetry with planted jobs whose bytes are known (the culprit ranks
first with its exact share, computed from the raw rows), job_stats exact attribution on a collected
mock tree, the cost against a hand computation, and bad input."""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pandas as pd
import pytest

import workload_synthetic as syn
from collect_growth import collect_with_growth
from ioweather.config import Settings
from ioweather.store.telemetry_layout import write_rows

MIN = 60_000_000_000
BURST = syn.bursts()[0]             # 30 minutes of 4 GiB/s writes
CULPRIT = dict(cluster="alpha", jobid="7001", user="storm", nnodes=16, ncpus=1024,
               start_ns=syn.T0 + BURST.start_min * MIN, end_ns=syn.T0 + BURST.end_min * MIN)
TAIL = dict(cluster="alpha", jobid="7002", user="tail", nnodes=2, ncpus=128,
            start_ns=CULPRIT["end_ns"], end_ns=CULPRIT["end_ns"] + 20 * MIN)
# the same job id on another cluster, running during the second burst: kept apart by cluster
TWIN_A = dict(cluster="alpha", jobid="8000", user="a", nnodes=4, ncpus=256,
              start_ns=syn.T0 + syn.bursts()[1].start_min * MIN, end_ns=syn.T0 + syn.bursts()[1].end_min * MIN)
TWIN_B = {**TWIN_A, "cluster": "beta", "user": "b", "nnodes": 1, "ncpus": 64}


def run(*args, home):
    from click.testing import CliRunner

    from ioweather.cli import cli

    r = CliRunner().invoke(cli, ["--home", str(home), *args])
    if r.exception and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    home = tmp_path_factory.mktemp("ev") / "home"
    df = syn.frame()
    settings = Settings.resolve(home)
    write_rows(settings, "syn", df)
    return home, df


@pytest.fixture(scope="module")
def with_jobs(tmp_path_factory, synthetic):
    from ioweather.store import open_store
    from ioweather.store.scheduler import replace_jobs

    home = tmp_path_factory.mktemp("evj") / "home"
    shutil.copytree(synthetic[0], home)
    store = open_store(Settings.resolve(home))
    replace_jobs(store, [CULPRIT, TAIL, TWIN_A, TWIN_B], "test")
    store.dispose()
    code, out, err = run("events", "--fs", "syn", "--json", home=home)
    assert code == 0, err
    return home, synthetic[1], json.loads(out)


def _bytes(df, lo_ns, hi_ns) -> float:
    """Server bytes in [lo, hi) straight from the rows written (the independent reference)."""
    sel = df[(df["time_ns"] >= lo_ns) & (df["time_ns"] < hi_ns) & df["metric"].isin(["read_bytes", "write_bytes"])]
    return float(sel["value"].sum())


def _ns(iso) -> int:
    return pd.Timestamp(iso).value


def test_planted_culprit_ranks_first_with_its_exact_share(with_jobs):
    _, df, events = with_jobs
    ev = next(e for e in events if _ns(e["start"]) <= CULPRIT["start_ns"] < _ns(e["end"]))
    lo, hi = _ns(ev["start"]), _ns(ev["end"])
    assert ev["bytes"] == _bytes(df, lo, hi)
    top = ev["jobs"][0]
    assert (top["job"], top["cluster"], top["method"]) == ("7001", "alpha", "overlap")
    # alone in its run: every byte of the event inside its run is its own
    want = _bytes(df, max(lo, CULPRIT["start_ns"]), min(hi, CULPRIT["end_ns"])) / ev["bytes"]
    assert top["share"] == pytest.approx(want, rel=1e-12)
    assert top["confidence"] == "high"
    if hi > TAIL["start_ns"]:
        tail = ev["jobs"][1]
        assert tail["job"] == "7002"
        assert tail["share"] == pytest.approx(_bytes(df, TAIL["start_ns"], min(hi, TAIL["end_ns"])) / ev["bytes"],
                                              rel=1e-12)


def test_contract_keys_and_order(with_jobs):
    _, _, events = with_jobs
    assert len(events) == len(syn.bursts())
    for e in events:
        assert {"start", "end", "peak_bps", "bytes", "jobs"} <= e.keys()
        shares = [j["share"] for j in e["jobs"]]
        assert shares == sorted(shares, reverse=True)
        for j in e["jobs"]:
            assert {"job", "share", "method"} <= j.keys()


def test_same_job_id_on_two_clusters_kept_apart(with_jobs):
    _, df, events = with_jobs
    ev = next(e for e in events if _ns(e["start"]) <= TWIN_A["start_ns"] < _ns(e["end"]))
    twins = [j for j in ev["jobs"] if j["job"] == "8000"]
    assert sorted(j["cluster"] for j in twins) == ["alpha", "beta"]
    # equal split of every interval both ran in; the larger job first (node count breaks the tie)
    assert twins[0]["cluster"] == "alpha" and twins[0]["share"] == twins[1]["share"]
    both = _bytes(df, max(_ns(ev["start"]), TWIN_A["start_ns"]), min(_ns(ev["end"]), TWIN_A["end_ns"]))
    assert twins[0]["share"] + twins[1]["share"] == pytest.approx(both / ev["bytes"], rel=1e-12)
    assert [j["confidence"] for j in twins] == ["low", "low"]


def test_events_without_running_jobs(with_jobs):
    _, _, events = with_jobs
    empty = [e for e in events if e["running_jobs"] == 0]
    assert len(empty) == len(syn.bursts()) - 2
    assert all(e["jobs"] == [] and e["core_hours_exposed"] == 0 for e in empty)


def test_cost_by_hand(with_jobs):
    """Without probes, every event is contended; its culprits (share >= 0.5) are not exposed to it.
    The culprit's event: only the tail job is exposed, 128 cores for its overlap with the event."""
    home, _, events = with_jobs
    ev = next(e for e in events if _ns(e["start"]) <= CULPRIT["start_ns"] < _ns(e["end"]))
    overlap_h = max(0, min(_ns(ev["end"]), TAIL["end_ns"]) - TAIL["start_ns"]) / 3.6e12
    assert ev["contention"] == "coverage"
    assert ev["core_hours_exposed"] == pytest.approx(128 * overlap_h)
    twin = next(e for e in events if _ns(e["start"]) <= TWIN_A["start_ns"] < _ns(e["end"]))
    twin_h = (min(_ns(twin["end"]), TWIN_A["end_ns"]) - max(_ns(twin["start"]), TWIN_A["start_ns"])) / 3.6e12
    assert twin["core_hours_exposed"] == pytest.approx((256 + 64) * twin_h)  # neither holds half the bytes
    code, out, err = run("events", "--fs", "syn", "--cost", "--json", home=home)
    assert code == 0, err
    cost = json.loads(out)
    assert cost["core_hours_exposed"] == pytest.approx(128 * overlap_h + 320 * twin_h)
    assert sum(d["core_hours_exposed"] for d in cost["daily"]) == pytest.approx(cost["core_hours_exposed"])
    assert [m["month"] for m in cost["monthly"]] == ["2024-03"]
    assert cost["top_events"][0]["start"] == twin["start"]
    culprit = next(c for c in cost["top_culprits"] if c["job"] == "7001")
    assert culprit["core_hours_caused"] == pytest.approx(128 * overlap_h * ev["jobs"][0]["share"])


def test_no_scheduler_data_is_said(synthetic):
    home, _ = synthetic
    code, out, err = run("events", "--fs", "syn", home=home)
    assert code == 0
    assert "no scheduler data and no Darshan logs" in err
    code, out, err = run("events", "--fs", "syn", "--json", home=home)
    assert all(e["jobs"] == [] for e in json.loads(out))


def test_human_table(with_jobs):
    home, _, _ = with_jobs
    code, out, err = run("events", "--fs", "syn", home=home)
    assert code == 0, err
    assert "7001@alpha" in out and "overlap" in out


@pytest.mark.parametrize("args, message", [
    (["--fs", "nope"], "no telemetry"),
    (["--fs", "syn", "--json", "--html", "x.html"], "choose one of --json and --html"),
    (["--fs", "syn", "--min-amplitude", "0"], "--min-amplitude must be positive"),
])
def test_bad_input_is_one_line(synthetic, args, message):
    from conftest import run_cli

    home, _ = synthetic
    proc = run_cli("events", *args, home=home)
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- job_stats on a collected tree
JOB_ADD = {"1001": 7 << 20, "dd.4242": 3 << 20, "wrf.500": 5 << 20}


def _job_stats(jobs: dict[str, int]) -> str:
    out = ["job_stats:"]
    for job, written in jobs.items():
        out += [f"- job_id:          {job}", "  snapshot_time:   1510782606",
                f"  write_bytes:     {{ samples:       {written // 4096}, unit: bytes, min:    4096, max: 4194304, sum:    {written} }}"]
    return "\n".join(out) + "\n"


def _ost_stats(text: str, add: int) -> str:
    """The OST's stats file with `add` more bytes written."""
    def grow(line):
        if not line.startswith("write_bytes"):
            return line
        f = line.split()
        f[1] = str(int(f[1]) + add // 4096)
        f[-1] = str(int(f[-1]) + add)
        return " ".join(f)
    return "\n".join(grow(x) for x in text.splitlines()) + "\n"


@pytest.fixture(scope="module")
def collected(tmp_path_factory, testdata):
    """`collect` on a copy of the mock tree where, mid-run, OST0000 writes 15 MiB and its job_stats
    say which job wrote what."""
    from ioweather.store import open_store
    from ioweather.store.scheduler import replace_jobs

    work = tmp_path_factory.mktemp("js")
    home = work / "home"
    root = work / "tree"
    shutil.copytree(testdata / "lustre-procfs", root)
    ost = root / "proc/fs/lustre/obdfilter/lustrefs-OST0000"
    (ost / "job_stats").write_text(_job_stats({j: 0 for j in JOB_ADD}))
    stats = (ost / "stats").read_text()
    def grow():
        for name, text in (("job_stats", _job_stats(JOB_ADD)), ("stats", _ost_stats(stats, sum(JOB_ADD.values())))):
            (ost / f"{name}.tmp").write_text(text)
        for name in ("job_stats", "stats"):  # both within one tick: renames are instant
            (ost / f"{name}.tmp").replace(ost / name)

    collect_with_growth(home, root, grow)
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    replace_jobs(store, [dict(cluster="c1", jobid="1001", user="alice", nnodes=2, ncpus=64, start_ns=now - 3600 * 10**9,
                              end_ns=None)], "test")
    store.dispose()
    return home


def test_job_stats_attribution_is_exact(collected):
    code, out, err = run("events", "--fs", "lustrefs", "--resample", "1s", "--smooth", "1s", "--min-amplitude", "1MiB/s",
                         "--json", home=collected)
    assert code == 0, err
    events = json.loads(out)
    assert len(events) == 1, events
    ev = events[0]
    assert ev["bytes"] == sum(JOB_ADD.values())
    got = [(j["job"], j["share"], j["method"], j["confidence"]) for j in ev["jobs"]]
    total = sum(JOB_ADD.values())
    assert got == [("1001", 7 / 15, "job_stats", "exact"), ("wrf.500", 5 / 15, "job_stats", "exact"),
                   ("dd.4242", 3 / 15, "job_stats", "exact")]
    assert ev["jobs"][0]["cluster"] == "c1" and ev["jobs"][0]["user"] == "alice"
    assert ev["jobs"][2]["user"] == "uid 4242"  # Lustre's procname_uid job id names its user
    assert total == 15 << 20
