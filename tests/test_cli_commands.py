"""The CLI imports a command's module when the command is used (cli.COMMANDS); the table must name
exactly what the modules register, and a command must not import the others."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import click

from ioweather import cli as cli_module


def _kinds(group: click.Group) -> set[str]:
    imports = group.commands.get("import")
    return set(imports.list_commands(click.Context(imports))) if imports else set()


def test_the_table_is_what_the_modules_register():
    """Register every module eagerly on a fresh group (the way the CLI worked before) and compare,
    counting a module that adds kinds inside another's group (`import`) as registering that group."""
    group = click.Group()
    registered: dict[str, list[str]] = {}
    for name in dict.fromkeys(m for modules in cli_module.COMMANDS.values() for m in modules):
        before, kinds = dict(group.commands), _kinds(group)
        importlib.import_module(name).register(group)
        for cmd, obj in group.commands.items():
            if before.get(cmd) is not obj or (cmd == "import" and _kinds(group) != kinds):
                registered.setdefault(cmd, []).append(name)
    # (the order inside a tuple is only the order of loading)
    assert {k: set(v) for k, v in registered.items()} == {k: set(v) for k, v in cli_module.COMMANDS.items()}
    assert {"slurm", "nersc-jobsdb", "job-features", "lmt", "csv"} <= _kinds(group)


def test_help_lists_every_command_and_import_has_every_kind(cli):
    top = cli("--help", check=True).stdout
    listed = {line.split()[0] for line in top.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(cli_module.COMMANDS)
    kinds = cli("import", "--help", check=True).stdout
    assert all(k in kinds for k in ("slurm", "nersc-jobsdb", "job-features", "lmt"))


_PROBE = """
import sys
from ioweather.cli import main
sys.argv = ["ioweather"] + sys.argv[1:]
try:
    main()
except SystemExit:
    pass
import json
print(json.dumps(sorted(m for m in sys.modules if m.startswith("ioweather.commands."))), file=sys.stderr)
"""


def test_a_command_imports_only_its_own_module(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _PROBE, "slowdown", "--help"], capture_output=True, text=True,
                          env={**os.environ, "IOWEATHER_HOME": str(tmp_path)})
    loaded = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    mine = {"ioweather.commands.slowdown"}
    others = {m for ms in cli_module.COMMANDS.values() for m in ms} - mine
    assert mine <= loaded and not loaded & others, loaded


def test_the_summaries_are_the_commands_own_first_paragraphs():
    """`ioweather --help` lists cli.SUMMARIES; each must say what the command's own help says, so that the
    list cannot drift from the commands (an edited docstring fails here until the table follows)."""
    import inspect

    group = cli_module.cli
    ctx = click.Context(group)
    assert set(cli_module.SUMMARIES) == set(cli_module.COMMANDS)
    for name, summary in cli_module.SUMMARIES.items():
        cmd = group.get_command(ctx, name)
        assert summary == " ".join(inspect.cleandoc(cmd.help).split("\n\n")[0].split()), name
        for limit in (45, 80, 1000):  # what click prints for it, at any terminal width
            assert click.Command(name, help=summary).get_short_help_str(limit) == cmd.get_short_help_str(limit)


def test_the_top_level_help_imports_no_command(tmp_path):
    proc = subprocess.run([sys.executable, "-c", _PROBE, "--help"], capture_output=True, text=True,
                          env={**os.environ, "IOWEATHER_HOME": str(tmp_path)})
    assert "Commands:" in proc.stdout and "workload" in proc.stdout
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []
