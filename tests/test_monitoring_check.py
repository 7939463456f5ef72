"""Issue 30, items 1-3: learning is a state in `slowdown`'s rows, `slowdown --check` follows the
monitoring-plugin guidelines (read-only, UNKNOWN when it cannot check, perfdata for every target), and
probe targets can be listed and retired. Every check runs the real CLI: in this process (tests/inprocess.py),
the probe daemon that stops on SIGTERM in its own."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store
from ioweather.units import ns_to_iso
from web_synthetic import Episode, add_target
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

H = 3600 * 10**9
DAY = 24 * H


def _whole(rows):
    """Rows of intervals holding 2 samples or more: quantiles need 2 (stats/probe.interval_stats), so the
    interval the fixture's last sample opens alone (1 run in 60 for fs1's 10 s period) is "unknown" by rule."""
    one = [r for r in rows if r["count"] < 2]
    assert all(r["state"] in ("unknown", "learning") and r["slowdown"] is None for r in one), one
    return [r for r in rows if r["count"] >= 2]


def _files(home):
    return sorted(p.name for p in home.iterdir()) if home.exists() else None


@pytest.fixture()
def homes(tmp_path):
    """A store with "young" (3 h of samples: learning) and "fs1" (a day and a half: judged, normal)."""
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home))
    now = (time.time_ns() // 10**9) * 10**9
    add_target(store, "young", now - 3 * H, now, period_s=5, seed=3, error_rate=0, timeout_rate=0)
    add_target(store, "fs1", now - 36 * H, now, period_s=10, seed=4, error_rate=0, timeout_rate=0)
    store.dispose()
    return home, now


# ---- item 1: learning in the table and --json -----------------------------------------------------
def test_slowdown_rows_say_learning_until_the_baseline_holds(homes, cli):
    home, now = homes
    rows = json.loads(cli("slowdown", "--json", "--since", "2h", home=home, check=True).stdout)
    young = _whole([r for r in rows if r["target"] == "young"])
    old = _whole([r for r in rows if r["target"] == "fs1"])
    assert young and old
    assert {r["state"] for r in young} == {"learning"}
    assert {r["slowdown"] for r in young} == {None}
    assert all(r["value_s"] is not None and r["expected_s"] is not None for r in young)  # measured, not judged
    assert {r["state"] for r in old} == {"normal"} and all(0.3 < r["slowdown"] < 3 for r in old)

    table = cli("slowdown", "--target", "young", "--since", "2h", home=home, check=True)
    assert "learning" in table.stdout and "normal" not in table.stdout
    assert "learning the baseline of young" in table.stderr

    # A reference period is taken as it is: judged at once.
    ref = ("--baseline-from", ns_to_iso(now - 3 * H), "--baseline-until", ns_to_iso(now - 2 * H))
    rows = json.loads(cli("slowdown", "--json", "--target", "young", "--since", "2h", *ref, home=home,
                          check=True).stdout)
    rows = _whole(rows)
    assert rows and {r["state"] for r in rows} <= {"normal", "degraded", "severely degraded"}
    assert all(r["slowdown"] is not None for r in rows)


def test_a_short_baseline_window_is_judged_once_it_is_full(homes, cli):
    """`--baseline 2h` can never hold 24 h: 95 % of its own length is enough (else it would learn forever)."""
    home, _ = homes
    rows = json.loads(cli("slowdown", "--json", "--target", "young", "--since", "30m", "--baseline", "2h",
                          home=home, check=True).stdout)
    rows = _whole(rows)
    assert rows and {r["state"] for r in rows} == {"normal"}


# ---- item 2: --check after the plugin guidelines ---------------------------------------------------
def test_check_on_an_empty_home_is_unknown_and_creates_nothing(tmp_path, cli):
    home = tmp_path / "empty"
    home.mkdir()
    proc = cli("slowdown", "--check", home=home)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == f"IOWEATHER UNKNOWN - no store at {home / 'ioweather.sqlite'}\n" and proc.stderr == ""
    assert _files(home) == []
    missing = tmp_path / "missing"
    proc = cli("slowdown", "--check", "--json", home=missing)
    assert proc.returncode == 3 and json.loads(proc.stdout)["status"] == "UNKNOWN"
    assert not missing.exists()


def test_check_never_writes_the_store(homes, cli):
    home, _ = homes
    db = home / "ioweather.sqlite"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    proc = cli("slowdown", "--check", home=home)
    assert proc.returncode == 3 and "young learning the baseline" in proc.stdout
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    store = open_store(Settings.resolve(home))
    with store.connect() as conn:  # the probe pieces it computed (a cache of the store) stayed in memory
        assert conn.execute(sa.text("SELECT count(*) FROM probe_pieces")).scalar() == 0
    store.dispose()


def test_unknown_target_and_bad_thresholds_are_unknown_with_one_line(homes, cli):
    home, _ = homes
    proc = cli("slowdown", "--check", "--target", "typo", home=home)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "IOWEATHER UNKNOWN - target 'typo' has no probe samples; known targets: fs1, young\n"
    proc = cli("slowdown", "--check", "--warn", "5", "--crit", "5", home=home)
    assert proc.returncode == 3 and proc.stdout.startswith("IOWEATHER UNKNOWN - need 0 < --warn < --crit")
    proc = cli("slowdown", "--check", "--baseline-from", "now-2h", home=home)
    assert proc.returncode == 3 and "--baseline-from and --baseline-until go together" in proc.stdout


def test_perfdata_for_every_target(homes, cli):
    home, _ = homes
    proc = cli("slowdown", "--check", home=home)
    line = proc.stdout.strip()
    perf = line.split(" | ", 1)[1]
    # The learning target has no slowdown: "U" (undetermined) in the plugin guidelines' perfdata.
    assert re.fullmatch(r"'fs1'=\d+\.\d{3};2;10 'young'=U;2;10", perf), line


# ---- item 3: target lifecycle ----------------------------------------------------------------------
def test_retired_and_abandoned_targets_no_longer_block_the_check(tmp_path, cli):
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    add_target(store, "fs1", now - 30 * H, now, period_s=10, seed=4, error_rate=0, timeout_rate=0)
    # A run that never stored a sample (its samples pruned, or a probe that died at once), started 2 days ago.
    run = add_target(store, "empty", now, now, period_s=1)
    with store.begin() as conn:
        conn.execute(sa.text("UPDATE probe_runs SET started_ns = :t WHERE id = :id"), {"t": now - 2 * DAY, "id": run})
    # README's first look: a 6-second trial probe, an hour ago -> stale.
    add_target(store, "scratch", now - H, now - H + 6 * 10**9, period_s=1, seed=5, error_rate=0, timeout_rate=0)
    # A probe that stopped two days ago -> abandoned.
    add_target(store, "old", now - 4 * DAY, now - 2 * DAY, period_s=60, seed=6, error_rate=0, timeout_rate=0)
    store.dispose()

    proc = cli("slowdown", "--check", home=home)
    assert proc.returncode == 3 and "scratch stale" in proc.stdout, proc.stdout
    from ioweather.services.probe.cache import ProbeCache
    from ioweather.services.probe.status import overall_of, target_status
    store = open_store(Settings.resolve(home))
    cache = ProbeCache(store)
    assert overall_of([target_status(cache, t, spark=False, with_climate=False) for t in cache.targets()]) == "stale"
    store.dispose()
    assert "not checked, silent for over a day: empty, old" in proc.stdout
    assert "'old'" not in proc.stdout  # no perfdata for what is not checked

    listed = {r["target"]: r for r in json.loads(cli("probe", "targets", "--json", home=home, check=True).stdout)}
    assert {t: r["state"] for t, r in listed.items()} == {"empty": "abandoned", "fs1": "active", "old": "abandoned",
                                                          "scratch": "stale"}
    assert listed["scratch"]["runs"] == 1 and listed["scratch"]["first_sample"] < listed["scratch"]["last_sample"]

    proc = cli("probe", "retire", "scratch", home=home)
    assert proc.returncode == 0 and "retired scratch" in proc.stdout
    proc = cli("slowdown", "--check", home=home)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("IOWEATHER OK - fs1 normal") and "scratch" not in proc.stdout
    table = cli("probe", "targets", home=home, check=True).stdout
    assert re.search(r"scratch\s+│\s+retired", table), table
    proc = cli("slowdown", "--check", "--target", "scratch", home=home)
    assert proc.returncode == 3 and "target 'scratch' is retired; known targets: empty, fs1, old" in proc.stdout
    # Its data stays: the history still answers.
    rows = json.loads(cli("probe", "stats", "--json", "--target", "scratch", "--since", "2h", home=home,
                          check=True).stdout)
    assert sum(r["count"] for r in rows) == 36

    # Status and /metrics leave it out (the dashboard's cache lists their targets); the Status header is
    # no longer "stale" for ever: the abandoned target is shown but decides nothing.
    from ioweather.services.answers.metrics import ProbeMetrics
    from ioweather.services.probe.cache import ProbeCache
    from ioweather.services.probe.status import overall_of, target_status
    store = open_store(Settings.resolve(home))
    cache = ProbeCache(store)
    assert cache.targets() == ["empty", "fs1", "old"]
    cards = [target_status(cache, t, spark=False, with_climate=False) for t in cache.targets()]
    assert [(c.state, c.abandoned) for c in cards] == [("unknown", True), ("normal", False), ("stale", True)]
    assert overall_of(cards) == "normal"
    text = ProbeMetrics(cache, count_since_ns=now).exposition().decode()
    assert 'target="old"' in text and 'target="scratch"' not in text
    store.dispose()


def test_purge_asks_first_and_deletes_everything(tmp_path, cli):
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    add_target(store, "keep", now - H, now, period_s=10, seed=1)
    add_target(store, "gone", now - H, now, period_s=10, seed=2)
    store.dispose()
    proc = cli("probe", "retire", "gone", "--purge", home=home)  # no terminal, no --yes: refused
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "ioweather: error: --purge deletes every sample of 'gone': confirm with --yes")
    proc = cli("probe", "retire", "gone", "--purge", "--yes", "--json", home=home, check=True)
    assert json.loads(proc.stdout) == {"target": "gone", "purged": True, "runs": 1, "samples": 360 * 6,
                                       "pieces": 0, "files": 0, "skipped": []}
    store = open_store(Settings.resolve(home))
    assert probe_store.targets(store) == ["keep"]
    with store.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM probe_samples")).scalar() == 360 * 6
    store.dispose()
    proc = cli("probe", "retire", "keep", home=home, check=True)
    assert "note: a probe of keep is still storing samples (on synthetic)" in proc.stderr
    proc = cli("slowdown", "--check", home=home)
    assert proc.returncode == 3 and proc.stdout == "IOWEATHER UNKNOWN - no probe target to check (retired: keep)\n"
    proc = cli("probe", "retire", "nope", home=home)
    assert proc.returncode == 2 and "no probe samples for target 'nope'; known targets: keep" in proc.stderr


@pytest.mark.postgres
def test_check_on_postgresql_is_read_only_too(tmp_path, cli, pg_url):
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home, pg_url))
    now = time.time_ns()
    add_target(store, "fs1", now - 30 * H, now, period_s=30, seed=4, error_rate=0, timeout_rate=0)
    store.dispose()
    proc = cli("--db", pg_url, "slowdown", "--check", home=home)
    assert proc.returncode == 0 and proc.stdout.startswith("IOWEATHER OK - fs1 normal"), proc.stdout + proc.stderr
    store = open_store(Settings.resolve(home, pg_url))
    with store.connect() as conn:  # the summaries it computed were not stored
        assert conn.execute(sa.text("SELECT count(*) FROM probe_pieces")).scalar() == 0
    store.dispose()
    # The server itself refuses a write through a read-only handle.
    ro = open_store(Settings.resolve(home, pg_url), read_only=True)
    with pytest.raises(Exception, match="read-only transaction"):
        probe_store.retire(ro, "fs1")
    ro.dispose()
    assert not home.exists()


def test_the_probe_daemon_keeps_the_summaries_a_read_only_check_needs(tmp_path, cli):
    """--check cannot store what it summarizes: the probe does it, at its start and hourly."""
    home, d = tmp_path / "home", tmp_path / "p"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    add_target(store, "scratch", now - 2 * DAY, now - H, period_s=60, seed=1)
    store.dispose()

    def pieces() -> int:
        s = open_store(Settings.resolve(home))
        with s.connect() as conn:
            n = conn.execute(sa.text("SELECT count(*) FROM probe_pieces WHERE target = 'scratch'")).scalar()
        s.dispose()
        return n

    cli("slowdown", "--check", home=home)
    assert pieces() == 0
    cli("probe", "init", str(d), "--file-size", "1MiB", "--pool", "4", home=home, check=True)
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "probe", "run", str(d), "--target", "scratch", "-q"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120  # a bound for a loaded machine, not a timing assertion
        while pieces() == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert pieces() > 0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
