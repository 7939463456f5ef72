"""Issue 30, item 4: retention. `store prune` counts in a dry run, removes exactly the probe rows older than
the limit (database and archived days) and keeps their summaries, telemetry days go whole, and all of it
while a real `watch` process keeps probing and enforcing its own retention setting."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from ioweather.config import Settings, retention_from_env
from ioweather.errors import UserError
from ioweather.store import open_store
from waiting import wait_until
from web_synthetic import add_target
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

DAY = 86_400 * 10**9
OPS = 6


def _rows(home, target: str | None = None) -> int:
    """Samples in the database and the archive manifest (of one target or all)."""
    store = open_store(Settings.resolve(home))
    where = "" if target is None else f"WHERE run_id IN (SELECT id FROM probe_runs WHERE target = '{target}')"
    with store.connect() as conn:
        n = conn.execute(sa.text(f"SELECT count(*) FROM probe_samples {where}")).scalar()
        n += conn.execute(sa.text(f"SELECT coalesce(sum(rows), 0) FROM probe_archive {where}")).scalar()
    store.dispose()
    return int(n)


def test_prune_is_a_dry_run_then_removes_exactly_the_old_rows_and_keeps_their_summaries(tmp_path, cli):
    home = tmp_path / "home"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    day0 = (now // DAY - 5) * DAY
    # Two whole old days, a gap around the limit (so a second's drift between here and the command changes
    # nothing), and the last day.
    add_target(store, "fs1", day0, day0 + 2 * DAY, period_s=30, seed=1, error_rate=0, timeout_rate=0)
    add_target(store, "fs1", now - DAY, now, period_s=30, seed=2, error_rate=0, timeout_rate=0)
    store.dispose()
    old, recent = 2 * 2880 * OPS, 2880 * OPS
    cli("probe", "archive", "--keep-days", "1", home=home, check=True)  # completed days move to Parquet
    archived = sorted((home / "parquet" / "probe").rglob("*.parquet"))
    assert len(archived) >= 2
    # A 12-hour baseline (1,440 samples per op: judged), aligned on days so both sides read only summaries.
    window = ("--since", _iso(day0 + DAY // 2), "--until", _iso(day0 + DAY), "--baseline", "12h")
    before = json.loads(cli("slowdown", "--json", "--interval", "1h", *window, home=home, check=True).stdout)
    assert len(before) == 12 * OPS and {r["state"] for r in before} == {"normal"}

    dry = json.loads(cli("store", "prune", "--older-than", "2d", "--kind", "probe", "--json", home=home,
                         check=True).stdout)
    assert dry["dry_run"] is True and dry["kinds"][0]["rows"] == old and dry["kinds"][0]["files"] == 2
    assert _rows(home) == old + recent  # a dry run removes nothing

    done = json.loads(cli("store", "prune", "--older-than", "2d", "--kind", "probe", "--yes", "--json",
                          home=home, check=True).stdout)
    assert done["dry_run"] is False
    assert (done["kinds"][0]["rows"], done["kinds"][0]["files"]) == (old, 2)
    assert _rows(home) == recent
    assert len(sorted((home / "parquet" / "probe").rglob("*.parquet"))) == len(archived) - 2
    # The summaries stayed: the same slowdowns over the pruned days, exactly.
    after = json.loads(cli("slowdown", "--json", "--interval", "1h", *window, home=home, check=True).stdout)
    assert after == before
    again = json.loads(cli("store", "prune", "--older-than", "2d", "--yes", "--json", home=home, check=True).stdout)
    assert [k["rows"] for k in again["kinds"]] == [0, 0]


def test_telemetry_days_go_whole(tmp_path, cli, testdata):
    home = tmp_path / "home"
    # Real LMT data from 2017 (pytokio's sample): every day of it is older than a year.
    src = testdata / "pytokio" / "sample_tokiots.hdf5"
    cli("import", "tts", str(src), "--fs", "tts", home=home, check=True)
    days = sorted((home / "parquet" / "telemetry" / "fs=tts").glob("date=*"))
    assert days
    # Imported history is kept by the retention settings (issue 38 item 3): only an explicit age removes it.
    proc = cli("store", "prune", "--kind", "telemetry", "--json", home=home, check=True)
    k = json.loads(proc.stdout)["kinds"][0]
    assert k["files"] == 0 and k["rows"] == 0 and k["imported_kept_rows"] > 0
    dry = json.loads(cli("store", "prune", "--kind", "telemetry", "--older-than", "400d", "--json", home=home,
                         check=True).stdout)
    k = dry["kinds"][0]
    assert k["kind"] == "telemetry" and k["older_than_s"] == 400 * 86400 and k["files"] >= len(days) and k["rows"] > 0
    table = cli("store", "prune", "--kind", "telemetry", "--older-than", "400d", home=home, check=True).stdout
    assert "dry run" in table and f"{k['rows']:,}" in table and "e+" not in table
    done = json.loads(cli("store", "prune", "--kind", "telemetry", "--older-than", "400d", "--yes", "--json",
                          home=home, check=True).stdout)
    assert done["kinds"][0]["rows"] == k["rows"]
    assert not list((home / "parquet" / "telemetry" / "fs=tts").glob("date=*"))


def test_settings_and_arguments_are_checked(tmp_path, cli):
    assert retention_from_env({}) == {"probe": 90 * 86400.0, "rollups": 400 * 86400.0, "telemetry": 400 * 86400.0}
    assert retention_from_env({"IOWEATHER_RETAIN_PROBE": "30d", "IOWEATHER_RETAIN_TELEMETRY": "forever"}) == \
        {"probe": 30 * 86400.0, "rollups": 400 * 86400.0, "telemetry": None}
    with pytest.raises(UserError, match="IOWEATHER_RETAIN_ROLLUPS is shorter than IOWEATHER_RETAIN_PROBE"):
        retention_from_env({"IOWEATHER_RETAIN_PROBE": "forever"})
    with pytest.raises(UserError, match="IOWEATHER_RETAIN_TELEMETRY='30': a duration needs its unit"):
        retention_from_env({"IOWEATHER_RETAIN_TELEMETRY": "30"})
    home = tmp_path / "home"
    proc = cli("store", "prune", "--older-than", "30", home=home)
    assert proc.returncode == 2 and "a duration needs its unit: 30s, 30m, 30h or 30d?" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    proc = cli("store", "prune", "--older-than", "2h", home=home)
    assert proc.returncode == 2 and "would remove today's data" in proc.stderr
    proc = cli("store", "prune", "--older-than", "30d", home=home)
    assert proc.returncode == 2 and "no store at" in proc.stderr and not home.exists()


def _iso(ns: int) -> str:
    from ioweather.units import ns_to_iso

    return ns_to_iso(ns)


@pytest.mark.slow
def test_prune_while_watch_probes_and_watch_enforces_its_setting(tmp_path, cli):
    home, d = tmp_path / "home", tmp_path / "probe"
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    add_target(store, "ancient", now - 10 * DAY, now - 9 * DAY, period_s=60, seed=1)
    add_target(store, "old", now - 4 * DAY, now - 3 * DAY, period_s=60, seed=2)
    store.dispose()
    env = {**os.environ, "IOWEATHER_HOME": str(home), "IOWEATHER_RETAIN_PROBE": "7d"}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "watch", str(d), "--port", "0", "--file-size", "8MiB",
                             "--pool", "10", "--interval", "0.2s", "--target", "laptop"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert re.search(r"http://\S+/", proc.stdout.readline())
        deadline = time.monotonic() + 60
        while _rows(home, "ancient") and time.monotonic() < deadline:  # watch's own retention, at its start
            time.sleep(0.5)
        assert _rows(home, "ancient") == 0
        while _rows(home, "laptop") == 0 and time.monotonic() < deadline:
            time.sleep(0.5)
        probing = _rows(home, "laptop")
        assert probing > 0
        done = json.loads(cli("store", "prune", "--older-than", "2d", "--kind", "probe", "--yes", "--json",
                              home=home, check=True).stdout)
        assert done["kinds"][0]["rows"] == 1440 * OPS  # exactly "old"; nothing of the live probe
        assert _rows(home, "old") == 0
        # the probe's write-behind flushes every 5 s
        wait_until(lambda: _rows(home, "laptop") > probing, 60, "a flush of the live probe after the prune",
                   every=0.5, proc=proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        err = proc.stderr.read()
    assert code == 0, err
    assert "lost" not in err and "failed" not in err, err
