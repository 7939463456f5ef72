"""`ioweather watch` and `ioweather serve` as a user runs them (subprocesses, real signals), and
`ioweather slowdown --check` as a monitoring system runs it."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from web_synthetic import Episode, add_target
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)


def start(args, home: Path) -> subprocess.Popen:
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    return subprocess.Popen([sys.executable, "-m", "ioweather", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def url_from(proc: subprocess.Popen, timeout: float = 60) -> str:
    """The dashboard URL from the first stdout line."""
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and not line:
        line = proc.stdout.readline()
        if proc.poll() is not None and not line:
            break
    m = re.search(r"(http://\S+?/)\s", line)
    assert m, f"no URL in {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
    return m.group(1)


def get_json(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def stop(proc: subprocess.Popen, sig=signal.SIGINT, timeout: float = 30) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("did not stop on a signal")
    return proc.returncode, proc.stderr.read()


@pytest.mark.slow
def test_watch_initialises_probes_serves_and_stops_cleanly(tmp_path, cli):
    home, d = tmp_path / "home", tmp_path / "probe"
    proc = start(["watch", str(d), "--port", "0", "--file-size", "8MiB", "--pool", "10", "--interval", "0.2s",
                  "--target", "laptop"], home)
    try:
        url = url_from(proc)
        assert url.startswith("http://127.0.0.1:")
        # The probe writes while the dashboard reads: wait for samples to show on the status page.
        deadline, state = time.monotonic() + 60, None
        while time.monotonic() < deadline:
            data = get_json(url + "api/status")
            if data["targets"] and data["targets"][0]["ops"][0]["count"] >= 5:
                state = data["targets"][0]["state"]
                break
            time.sleep(0.5)
        if state not in ("learning", "normal", "degraded", "severely degraded"):
            code, err = stop(proc)  # what the process said is the diagnosis
            raise AssertionError(f"no 5 samples on the status page in 60 s: {json.dumps(data)[:1500]}\n"
                                 f"watch exited {code}, stderr:\n{err[-3000:]}")
        assert data["targets"][0]["target"] == "laptop" and data["targets"][0]["last_sample_age_s"] < 30
        with urllib.request.urlopen(url + "metrics", timeout=30) as r:
            assert b"ioweather_probe_last_sample_timestamp_seconds{target=\"laptop\"}" in r.read()
        with urllib.request.urlopen(url + "timeline", timeout=30) as r:
            assert r.status == 200
    finally:
        if proc.poll() is None:
            code, err = stop(proc)
    assert code == 0, err
    assert "created probe directory" in err and "8.0 MiB data file and 10 small files" in err
    assert "laptop defaults" in err and "stopped" in err and "Traceback" not in err
    # Every sample up to the stop was stored (the last flush happened), and the files are in place.
    stats = json.loads(cli("probe", "stats", "--json", "--since", "1h", home=home, check=True).stdout)
    assert sum(r["count"] for r in stats if r["op"] == "md_stat") >= 5
    assert (d / "probe.json").exists() and len(list((d / "pool").iterdir())) == 10

    # A second start reuses the directory and stops on SIGTERM just as cleanly.
    proc = start(["watch", str(d), "--port", "0", "--interval", "0.2s", "--target", "laptop"], home)
    try:
        url_from(proc)
        time.sleep(1.5)
    finally:
        code, err = stop(proc, signal.SIGTERM)
    assert code == 0 and "using the existing probe directory" in err, err


@pytest.mark.slow
@pytest.mark.postgres
def test_one_ctrl_c_stops_while_a_scrape_waits_on_the_store(tmp_path, pg_url):
    """A /metrics request blocked in the store (a table locked by a migration or VACUUM FULL) used to
    keep the process alive after "stopped" until it returned: it took a second Ctrl-C."""
    import threading

    import psycopg

    home = tmp_path / "home"
    store = open_store(Settings.resolve(home, pg_url))
    t0 = time.time_ns()
    add_target(store, "scratch", t0 - 3600 * 10**9, t0, period_s=5)
    store.dispose()
    proc = start(["--db", pg_url, "serve", "--port", "0"], home)
    locker = psycopg.connect(pg_url)
    try:
        url = url_from(proc)
        with urllib.request.urlopen(url + "metrics", timeout=60) as r:
            assert b'ioweather_probe_last_sample_timestamp_seconds{target="scratch"}' in r.read()
        locker.execute("LOCK TABLE probe_samples IN ACCESS EXCLUSIVE MODE")
        client: list[str] = []

        def scrape():
            try:
                urllib.request.urlopen(url + "metrics", timeout=120).read()
                client.append("answered")
            except OSError as e:  # the stopped server closes the connection
                client.append(f"{type(e).__name__}: {e}")

        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
        # Until the server's query is queued behind the lock (seen by PostgreSQL itself).
        deadline = time.monotonic() + 30
        waiting = 0
        with psycopg.connect(pg_url, autocommit=True) as watcher:
            while time.monotonic() < deadline and not waiting:
                waiting = watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                          "AND wait_event_type = 'Lock'").fetchone()[0]
                time.sleep(0.1)
        assert waiting, "the scrape never reached the locked table"
        t = time.monotonic()
        code, err = stop(proc, signal.SIGINT, timeout=15)  # one Ctrl-C
        took = time.monotonic() - t
    finally:
        locker.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert code == 0 and "stopped" in err and "Traceback" not in err, err
    assert "1 request(s) still running after 3 s abandoned" in err
    assert took < 10
    scraper.join(30)
    assert client and client[0] != "answered", client  # abandoned, not answered from a locked table


def test_watch_on_a_busy_port_fails_before_writing_anything(tmp_path, cli):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = cli("watch", str(tmp_path / "probe"), "--port", str(port), home=tmp_path / "home")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"ioweather: error: port {port} on 127.0.0.1 is already in use; choose another with --port"
    assert not (tmp_path / "probe").exists()


@pytest.mark.parametrize("args,message", [
    (["serve", "--warn", "10", "--crit", "2"], "need 0 < --warn < --crit"),
    (["serve", "--port", "70000"], "70000 is not in the range"),
    (["serve", "--host", "no.such.host.invalid"], "cannot resolve --host"),
    (["serve", "--baseline", "0s"], "--baseline must be positive"),
    (["watch", "DIR", "--interval", "0"], "--interval must be positive"),
])
def test_bad_server_options(tmp_path, cli, args, message):
    args = [str(tmp_path / "p") if a == "DIR" else a for a in args]
    proc = cli(*args, "--port", "0", home=tmp_path / "home") if "--port" not in args else cli(*args, home=tmp_path / "home")
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr


def test_serve_warns_when_not_on_loopback(tmp_path):
    proc = start(["serve", "--host", "0.0.0.0", "--port", "0"], tmp_path / "home")
    try:
        url = url_from(proc)
        port = int(url.rsplit(":", 1)[1].strip("/"))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=30) as r:
            assert "no ioweather store" in json.loads(r.read())["message"]
    finally:
        code, err = stop(proc, signal.SIGTERM)
    assert code == 0
    assert "warning: listening on 0.0.0.0" in err and "no authentication" in err
    assert not (tmp_path / "home").exists()  # serving an empty home creates nothing


def test_serve_help(cli):
    proc = cli("serve", "--help")
    assert proc.returncode == 0 and "--host" in proc.stdout and "127.0.0.1" in proc.stdout
    proc = cli("watch", "--help")
    assert proc.returncode == 0 and "DIRECTORY" in proc.stdout


# --------------------------------------------------------------------------- slowdown --check
def _store_with(home: Path, factor: float, *, stale: bool = False):
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    end = now - (3 * 3600 * 10**9 if stale else 0)
    add_target(store, "fs1", now - 86400 * 10**9, end, period_s=10, seed=4,
               episodes=[Episode(now - 1800 * 10**9, now, factor)], error_rate=0)
    store.dispose()


@pytest.mark.parametrize("factor,args,code,word", [
    (1.0, [], 0, "OK"),
    (4.0, [], 1, "WARNING"),
    (25.0, [], 2, "CRITICAL"),
    (25.0, ["--warn", "60", "--crit", "100"], 0, "OK"),
    (4.0, ["--warn", "1.5", "--crit", "3"], 2, "CRITICAL"),
])
def test_check_exit_codes_follow_nagios(tmp_path, cli, factor, args, code, word):
    home = tmp_path / "home"
    _store_with(home, factor)
    proc = cli("slowdown", "--check", *args, home=home)
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"IOWEATHER {word} - fs1 ")
    # Perfdata: the worst slowdown with the thresholds, e.g. 'fs1'=24.9;2;10
    worst = float(re.search(r"'fs1'=([\d.]+);", lines[0]).group(1))
    assert 0.6 * factor < worst < 1.6 * factor


def test_check_unknown_for_stale_and_empty(tmp_path, cli):
    home = tmp_path / "home"
    proc = cli("slowdown", "--check", home=home)
    assert proc.returncode == 3 and proc.stdout.startswith("IOWEATHER UNKNOWN - no store at ")
    assert not home.exists()  # a check never creates a store (issue 30)
    _store_with(home, 1.0, stale=True)
    proc = cli("slowdown", "--check", "--json", home=home)
    assert proc.returncode == 3
    out = json.loads(proc.stdout)
    assert out["status"] == "UNKNOWN" and out["targets"][0]["state"] == "stale"
    # Cannot check: UNKNOWN with its reason (Nagios reads 2 as CRITICAL), issue 30.
    proc = cli("slowdown", "--check", "--target", "nope", home=home)
    assert proc.returncode == 3 and "target 'nope' has no probe samples; known targets: fs1" in proc.stdout
    proc = cli("slowdown", "--check", "--warn", "5", "--crit", "5", home=home)
    assert proc.returncode == 3 and "need 0 < --warn < --crit" in proc.stdout
