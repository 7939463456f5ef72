"""`ioweather collect` as a user runs it (in this process; with a hung file, a real one), a real tree, the Parquet it leaves."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.sources.telemetry.synthetic import make_tree
from ioweather.store import telemetry_layout as layout
from conftest import run_cli as run_process
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)


def test_collect_lustre_tree_json_and_store(cli, home, testdata):
    root = testdata / "lustre-procfs"
    # a deadline past the interval: on a loaded machine a slow read is a late tick (counted in
    # missed_ticks, checked below), not a timeout that skips the source (the FIFO test's subject)
    p = cli("collect", "--proc-root", str(root), "--sources", "lustre", "--interval", "0.25s", "--duration", "1.2s",
            "--timeout", "2s", "--json", "-q", home=home)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["ticks"] >= 3 and out["rows_written"] > 0
    assert {"interval_s", "missed_ticks", "datasets", "sources", "wall_s", "cpu_s", "cpu_pct"} <= set(out)
    src = out["sources"][0]
    assert src["name"] == "lustre" and src["ok"] == out["ticks"] and src["failed"] == 0
    settings = Settings(home=home)
    assert "lustrefs" in layout.list_fs(settings)
    df = layout.read_frame(settings, "lustrefs", "metric = 'write_bytes'")
    # the mock tree does not change: every measured interval moved exactly 0 bytes; a tick a loaded
    # machine missed is a missing (NaN) interval row, never an absent or a doubled one
    osts = len(list((root / "proc/fs/lustre/obdfilter").iterdir()))
    intervals = df.time_ns.nunique()
    assert len(df) == osts * intervals and intervals == out["ticks"] - 1 + out["missed_ticks"]
    assert (df.value.dropna() == 0).all() and df.value.notna().sum() % osts == 0
    # each run of missed ticks leaves the pair of taken ticks around it unmeasured (its span becomes
    # missing intervals of one step: stats/counters.expand_gaps); every other pair is one measured interval
    gaps = out["ticks"] - 1 - df.value.notna().sum() // osts
    assert (gaps == 0) if out["missed_ticks"] == 0 else (1 <= gaps <= out["missed_ticks"]), (gaps, out)
    assert (df.time_ns % 250_000_000 == 0).all()  # ticks on multiples of the interval
    assert (df.interval_s == 0.25).all()


def test_collect_bad_options_fail_in_one_line(cli, home, tmp_path):
    p = cli("collect", "--sources", "lustre,beegfs", "--duration", "1s", home=home)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "unknown source(s) beegfs" in p.stderr
    # the same checks in-process (a subprocess each costs seconds on a shared machine)
    from click.testing import CliRunner

    from ioweather.cli import cli as main

    runner = CliRunner()
    for args, reason in ((["--proc-root", str(tmp_path / "nope")], "no such directory"),
                         (["--proc-root", str(tmp_path), "--sources", "lustre,nfs"], "none of the sources"),
                         (["--interval", "0s"], "--interval must be positive"),
                         (["--interval", "soon"], "malformed duration")):
        r = runner.invoke(main, ["--home", str(home), "collect", "--duration", "1s", *args])
        assert r.exit_code == 2 and reason in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
        assert r.stdout == ""


def test_collect_with_a_hung_file_goes_on_with_the_others(home, tmp_path):
    """A FIFO in place of a stats file blocks open() forever, like a stuck Lustre target: a process, whose
    exit ends the thread left blocked in open() (in this one it would stay)."""
    root = tmp_path / "tree"
    make_tree(root, 2, fs="synth")
    (root / "proc").mkdir(exist_ok=True)
    shutil.copy("/proc/stat", root / "proc/stat")
    shutil.copy("/proc/meminfo", root / "proc/meminfo")
    stats = root / "proc/fs/lustre/obdfilter/synth-OST0001/stats"
    stats.unlink()
    os.mkfifo(stats)
    p = run_process("collect", "--proc-root", str(root), "--sources", "lustre,host", "--interval", "0.5s",
                    "--timeout", "0.2s", "--duration", "2s", "--json", home=home, timeout=60)
    assert p.returncode == 0, p.stderr
    st = {s["name"]: s for s in json.loads(p.stdout)["sources"]}
    assert st["lustre"]["timeouts"] == 1 and st["lustre"]["skipped"] >= 2 and st["lustre"]["ok"] == 0
    assert st["host"]["ok"] >= 3 and st["host"]["failed"] == 0
    assert "no answer within 0.2 s" in p.stderr
    settings = Settings(home=home)
    host = layout.read_frame(settings, layout.list_fs(settings)[0])
    assert (host[host.metric == "mem_total_bytes"].value > 0).all()
    # a frozen copy of /proc/stat: no tick elapsed, so the CPU share is unknown, not 0
    assert len(host[host.metric == "cpu_pct"]) >= 2 and host[host.metric == "cpu_pct"].value.isna().all()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to drop to nobody")
def test_collect_unprivileged_with_an_unreadable_file(tmp_path):
    """As the systemd unit runs it: user nobody, one stats file mode 000; the rest is collected."""
    base = Path(tempfile.mkdtemp(prefix="iw-nobody-"))
    try:
        os.chmod(base, 0o755)
        names = make_tree(base / "tree", 3, fs="synth")
        for dirpath, dirs, files in os.walk(base / "tree"):
            os.chmod(dirpath, 0o755)
            for f in files:
                os.chmod(os.path.join(dirpath, f), 0o644)
        os.chmod(base / "tree/proc/fs/lustre/obdfilter/synth-OST0002/stats", 0)
        home = base / "home"
        home.mkdir(mode=0o777)
        os.chmod(home, 0o777)
        env = dict(os.environ, IOWEATHER_HOME=str(home), HOME=str(home))
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
                            "ioweather", "collect", "--proc-root", str(base / "tree"), "--sources", "lustre",
                            "--interval", "0.3s", "--duration", "1s", "--json"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0, p.stderr
        assert "permission denied" in p.stderr and "synth-OST0002/stats" in p.stderr
        assert p.stderr.count("synth-OST0002/stats") == 1          # once, not at every tick
        df = layout.read_frame(Settings(home=home), "synth", "metric = 'write_bytes'")
        assert set(df.target) == {n for n in names if "-OST" in n} - {"synth-OST0002"}
    finally:
        shutil.rmtree(base, ignore_errors=True)
