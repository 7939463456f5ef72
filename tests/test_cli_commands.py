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


def test_the_table_is_what_the_modules_register():
    """Register every module eagerly on a fresh group (the way the CLI worked before) and compare."""
    group = click.Group()
    registered: dict[str, list[str]] = {}
    for name in cli_module.COMMAND_MODULES:
        before = dict(group.commands)
        importlib.import_module(name).register(group)
        for cmd, obj in group.commands.items():
            if before.get(cmd) is not obj:
                registered.setdefault(cmd, []).append(name)
    # scheduler adds its kinds to telemetry's `import` group: a change inside it, not a new object
    registered["import"].append("ioweather.commands.scheduler")
    assert {k: tuple(v) for k, v in registered.items()} == cli_module.COMMANDS
    imports = group.commands["import"]
    assert {"slurm", "nersc-jobsdb", "lmt", "csv"} <= set(imports.list_commands(click.Context(imports)))


def test_help_lists_every_command_and_import_has_every_kind(cli):
    top = cli("--help", check=True).stdout
    listed = {line.split()[0] for line in top.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(cli_module.COMMANDS)
    kinds = cli("import", "--help", check=True).stdout
    assert "slurm" in kinds and "lmt" in kinds


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
