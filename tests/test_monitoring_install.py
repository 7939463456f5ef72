"""Issue 30, item 5: a production install. `make watch` installs only the package, `probe init` says how far
it is when nobody watches a terminal, and what docs/deployment.md tells an admin to install (systemd units,
a Nagios command, Prometheus rules) names commands and metrics that exist."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from ioweather.config import Settings
from ioweather.store import open_store
from web_synthetic import add_target
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

ROOT = Path(__file__).resolve().parent.parent
DEPLOYMENT = ROOT / "docs" / "deployment.md"
DOC_BINARY = "/opt/ioweather/bin/ioweather"
#: What systemd puts for the specifiers the units use.
SPECIFIERS = {"%i": "scratch", "%H": "node01", "%h": "/home/admin", "%u": "admin"}


def _code_blocks(text: str) -> list[list[str]]:
    """The indented (4 spaces) code blocks of a Markdown page, as lists of lines without the indent."""
    blocks, cur = [], []
    for line in text.splitlines() + ["end"]:
        if line.startswith("    ") or (not line.strip() and cur):
            cur.append(line[4:])
        else:
            if cur:
                while cur and not cur[-1].strip():
                    cur.pop()
                blocks.append(cur)
            cur = []
    return blocks


def _units(text: str) -> list[str]:
    """Every systemd unit in the page: from `[Unit]` while lines are sections, settings, comments or blank."""
    units = []
    for block in _code_blocks(text):
        for i, line in enumerate(block):
            if line.strip() == "[Unit]":
                unit = []
                for ln in block[i:]:
                    if not re.match(r"^(\[\w+\]|[A-Za-z]+=.*|#.*|)$", ln.strip()):
                        break
                    unit.append(ln)
                units.append("\n".join(unit).strip() + "\n")
    return units


def _ioweather_args(command_line: str) -> list[str]:
    words = shlex.split(command_line.lstrip("-"))
    assert words[0] == DOC_BINARY, command_line
    out = []
    for w in words[1:]:
        for k, v in SPECIFIERS.items():
            w = w.replace(k, v)
        out.append(w)
    return out


def _resolve(args: list[str]) -> str:
    """Parse `args` as the CLI would (every option and its type), without running the command; its path."""
    from ioweather.cli import cli

    ctx = cli.make_context("ioweather", list(args))
    cmd = cli
    while isinstance(cmd, click.Group):
        name, sub, rest = cmd.resolve_command(ctx, [*getattr(ctx, "_protected_args", []), *ctx.args])
        ctx = sub.make_context(name, rest, parent=ctx)
        cmd = sub
    return ctx.command_path


def test_the_systemd_units_name_commands_that_exist(tmp_path):
    units = _units(DEPLOYMENT.read_text())
    assert len(units) >= 3, "docs/deployment.md should show the probe, collect and serve units"
    assert any(re.search(r"^ExecStart=\S+ serve ", u, re.M) for u in units), "no unit runs `ioweather serve`"
    analyze = shutil.which("systemd-analyze")
    binary = str(Path(sys.executable).parent / "ioweather")
    seen = set()
    for k, unit in enumerate(units):
        execs = re.findall(r"^Exec\w*=(.*)$", unit, re.M)
        assert execs, unit
        for line in execs:
            seen.add(_resolve(_ioweather_args(line)))
        if analyze is None:
            continue
        # systemd's own check: sections and settings it knows, and an executable that exists (ours).
        path = tmp_path / (f"unit{k}@.service" if "%i" in unit else f"unit{k}.service")
        path.write_text(unit.replace(DOC_BINARY, binary))
        instance = path.with_name(path.name.replace("@.", "@scratch.")) if "%i" in unit else path
        proc = subprocess.run([analyze, "verify", "--man=no", str(instance)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr + unit
    assert {"ioweather probe init", "ioweather probe run", "ioweather collect"} <= seen


def test_a_unit_naming_a_missing_command_fails_the_check():
    """The check has teeth: a renamed option or command is caught."""
    with pytest.raises(click.UsageError):
        _resolve(_ioweather_args(f"{DOC_BINARY} probe run /x --target %i --no-such-option"))
    with pytest.raises(click.UsageError):
        _resolve(_ioweather_args(f"{DOC_BINARY} probes run /x"))


def test_the_nagios_command_runs_as_documented(tmp_path, cli):
    lines = re.findall(r"^\s+command_line\s+(.*)$", DEPLOYMENT.read_text(), re.M)
    assert len(lines) == 1
    args = _ioweather_args(lines[0].replace("$ARG1$", "2").replace("$ARG2$", "10"))
    assert _resolve(args) == "ioweather slowdown"
    home = tmp_path / "home"
    proc = cli(*args, home=home)
    assert proc.returncode == 3 and proc.stdout.startswith("IOWEATHER UNKNOWN - no store at") and not home.exists()
    store = open_store(Settings.resolve(home))
    now = time.time_ns()
    add_target(store, "fs1", now - 26 * 3600 * 10**9, now, period_s=10, seed=4, error_rate=0, timeout_rate=0)
    store.dispose()
    proc = cli(*args, home=home)
    assert proc.returncode == 0 and re.fullmatch(r"IOWEATHER OK - fs1 normal \(.*\) \| 'fs1'=[\d.]+;2;10\n",
                                                 proc.stdout), proc.stdout
    # Icinga 2's CheckCommand names the same command.
    icinga = re.search(r'command = \[ "([^"]+)", "([^"]+)", "([^"]+)" \]', DEPLOYMENT.read_text())
    assert icinga and _resolve(_ioweather_args(" ".join(icinga.groups()))) == "ioweather slowdown"


def test_the_prometheus_rules_load_and_use_exported_metrics(tmp_path):
    import yaml

    from ioweather.services.answers.metrics import ProbeMetrics
    from ioweather.services.probe.cache import ProbeCache

    block = next(b for b in _code_blocks(DEPLOYMENT.read_text()) if b and b[0] == "groups:")
    doc = yaml.safe_load("\n".join(block))
    exprs = [r["expr"] for g in doc["groups"] for r in g["rules"]]
    assert len(exprs) == 3
    promtool = shutil.which("promtool")
    if promtool:
        (tmp_path / "rules.yml").write_text("\n".join(block) + "\n")
        proc = subprocess.run([promtool, "check", "rules", str(tmp_path / "rules.yml")], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0 and "SUCCESS: 3 rules found" in proc.stdout, proc.stdout + proc.stderr
    store = open_store(Settings.resolve(tmp_path / "home"))
    t0 = (time.time_ns() // 10**9) * 10**9
    add_target(store, "d", t0 - 26 * 3600 * 10**9, t0, period_s=20, seed=6, error_rate=0, timeout_rate=0)
    cache = ProbeCache(store, clock=lambda: t0)
    cache.baseline("d")
    text = ProbeMetrics(cache, count_since_ns=t0).exposition().decode()
    store.dispose()
    exported = set(re.findall(r"^(ioweather_\w+?)(?:\{| )", text, re.M))
    for expr in exprs:
        for name in re.findall(r"ioweather_\w+", expr):
            assert name in exported, (name, sorted(exported))
    assert re.search(r'^ioweather_slowdown_ratio\{[^}]*stat="median"', text, re.M)


def test_make_watch_installs_the_package_alone(tmp_path):
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make")
    venv = tmp_path / "venv"
    plan = subprocess.run([make, "-n", "watch", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert plan.returncode == 0, plan.stderr
    installs = [ln for ln in plan.stdout.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert installs == [f"{venv}/bin/python -m pip install -q -e ."], plan.stdout
    assert f"touch {venv}/.installed-run" in plan.stdout
    test_plan = subprocess.run([make, "-n", "install", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True,
                               timeout=60)
    assert "-e '.[test]'" in test_plan.stdout


def test_probe_init_without_a_terminal_is_quiet_when_quick(tmp_path, cli):
    """The real command with stderr a pipe: a write done within 10 s says only its result (the slow path,
    which takes minutes for real, is the next test's, on a clock it controls)."""
    proc = cli("probe", "init", str(tmp_path / "p"), "--file-size", "16MiB", "--pool", "4", home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert "writing" not in proc.stderr and proc.stdout.startswith(f"probe directory {tmp_path / 'p'}: 16.0 MiB")


def test_progress_lines_every_10_percent_or_10_seconds():
    from ioweather.commands.probe import ProgressLines

    now = [0.0]
    said: list[str] = []
    p = ProgressLines("writing d", clock=lambda: now[0], say=said.append)
    total = 1000
    for done in range(0, 51, 1):  # 5 % in 50 s: slow, so every 10 s, from 10 s on
        now[0] = float(done)
        p(done, total)
    percents = lambda: [s.split(": ")[1].split(" %")[0] for s in said]  # noqa: E731
    assert percents() == ["1", "2", "3", "4", "5"]
    assert said[0] == "writing d: 1 % (10 B of 1000 B), 10 s, 1 B/s"
    said.clear()
    for done in range(50, 1001, 50):  # then fast: each 10 %
        now[0] += 0.01
        p(done, total)
    assert percents() == ["10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]
    said.clear()
    quick = ProgressLines("writing d", clock=lambda: now[0], say=said.append)
    for done in range(0, 1001, 100):
        now[0] += 0.5
        quick(done, total)
    assert said == []  # done in 5 s: nothing to wait for
