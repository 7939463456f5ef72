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


# -- every --json prints an answer's to_json() (issue 37 item 1)

#: Commands whose --json still prints a document the command assembles (or a service's dict), with
#: whose work types it. A command typed since fails `test_every_json_is_an_answers_to_json` until it
#: leaves this table, so the table only shrinks.
JSON_NOT_YET_TYPED: dict[str, str] = {}  # empty since 2026-11-28: every command's --json is an answer's


def _full_tree() -> click.Group:
    group = click.Group()
    for name in dict.fromkeys(m for modules in cli_module.COMMANDS.values() for m in modules):
        importlib.import_module(name).register(group)
    return group


def _json_commands(group: click.Group) -> dict[str, click.Command]:
    """Every command of the tree with a --json option, by its path ("jobs list")."""
    out = {}

    def walk(path, cmd):
        if any("--json" in getattr(p, "opts", ()) for p in cmd.params):
            out[" ".join(path)] = cmd
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk([*path, name], sub)

    for name, cmd in group.commands.items():
        walk([name], cmd)
    return out


def json_not_an_answer(source: str) -> list[str]:
    """What a command's callback prints with print_json that is not an answer's `to_json()`: each print_json
    argument must be `X.to_json()` or a name bound only to one (`rep = answer(...).to_json()`); a callback
    with no print_json at all (its JSON printed by a helper) is named too."""
    import ast
    import textwrap

    fn = ast.parse(textwrap.dedent(source)).body[0]

    def to_json_call(node) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to_json"

    bound: dict[str, list] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(node.value)
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "print_json"]
    if not calls:
        return ["no print_json in the callback"]
    bad = []
    for c in calls:
        arg = c.args[0] if c.args else None
        ok = to_json_call(arg) or (isinstance(arg, ast.Name) and bound.get(arg.id)
                                   and all(to_json_call(v) for v in bound[arg.id]))
        if not ok:
            bad.append(ast.unparse(c))
    return bad


def _callback_source(cmd: click.Command) -> str:
    import inspect

    return inspect.getsource(inspect.unwrap(cmd.callback))


def test_every_json_is_an_answers_to_json():
    """Walk the click tree: every command with --json prints its answer's `to_json()`, no JSON of its own
    (issue 37: "every command's --json is a to_json()"), except JSON_NOT_YET_TYPED, which must still fail."""
    commands = _json_commands(_full_tree())
    assert {"job log", "job diff", "jobs list", "jobs show", "jobs summary", "jobs failed", "changes",
            "report", "workload", "why"} <= set(commands), sorted(commands)
    assert set(JSON_NOT_YET_TYPED) <= set(commands), set(JSON_NOT_YET_TYPED) - set(commands)
    failing = {path: json_not_an_answer(_callback_source(cmd)) for path, cmd in commands.items()}
    failing = {path: bad for path, bad in failing.items() if bad}
    assert set(failing) - set(JSON_NOT_YET_TYPED) == set(), {k: failing[k] for k in set(failing) - set(JSON_NOT_YET_TYPED)}
    typed_since = set(JSON_NOT_YET_TYPED) - set(failing)
    assert not typed_since, f"typed now: take {sorted(typed_since)} out of JSON_NOT_YET_TYPED"


def test_the_json_check_fails_on_a_command_that_builds_its_json():
    """The check itself, on planted callbacks: a dict literal, a service's rows, a name bound twice, a helper."""
    built = "def cb(as_json):\n    rows = list_jobs()\n    if as_json:\n        print_json({'rows': rows})\n"
    assert json_not_an_answer(built) == ["print_json({'rows': rows})"]
    assert json_not_an_answer("def cb():\n    rows = list_jobs()\n    print_json(rows)\n") == ["print_json(rows)"]
    twice = "def cb():\n    d = a().to_json()\n    d = {**d, 'x': 1}\n    print_json(d)\n"
    assert json_not_an_answer(twice) == ["print_json(d)"]
    assert json_not_an_answer("def cb():\n    _report(counts)\n") == ["no print_json in the callback"]
    typed = "def cb():\n    rep = answer().to_json()\n    print_json(rep)\n    print_json(other().to_json())\n"
    assert json_not_an_answer(typed) == []
