"""benchmarks/answers_same.py, the before/after check of every command's JSON (issue 40): its comparison
catches each kind of drift and forgives only the listed volatile fields, and every command of the CLI
has a case or a stated reason to be skipped (a new command fails here before it is forgotten there)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import click

from ioweather.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("answers_same", ROOT / "benchmarks" / "answers_same.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("answers_same", mod)
    spec.loader.exec_module(mod)
    return mod


AS = _script()


def _commands(cmd=cli, path=()):
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):
            yield from _commands(cmd.get_command(ctx, name), (*path, name))
    else:
        yield " ".join(path), cmd


def test_every_command_has_a_case_or_a_reason():
    names = [n for n, _ in AS.cases(Path("/inputs"))]
    missing = [c for c, _ in _commands() if c != "job log" and c not in AS.SKIPPED
               and not any(n == c or n.startswith(c + " ") for n in names)]
    assert missing == [], f"commands with no case in benchmarks/answers_same.py: {missing}"
    # a skip names a real command, and every run case asks for --json of a command that has it
    real = dict(_commands())
    assert set(AS.SKIPPED) <= set(real), set(AS.SKIPPED) - set(real)
    for name, args in AS.cases(Path("/inputs")):
        cmd = next((real[c] for c in sorted(real, key=len, reverse=True)
                    if (name == c or name.startswith(c + " ") or (c == "job log" and name.startswith("job LOG")))),
                   None)
        assert cmd is not None, name
        assert any("--json" in getattr(p, "opts", ()) for p in cmd.params), f"{name}: no --json"


def test_first_difference_names_the_path_and_each_kind_of_drift():
    doc = {"a": [1, {"b": 1.5, "c": "x"}], "n": None, "t": True}
    assert AS.first_difference(doc, {"a": [1, {"b": 1.5, "c": "x"}], "n": None, "t": True}) is None
    assert AS.first_difference(doc, {"a": [1, {"b": 1.25, "c": "x"}], "n": None, "t": True}) == "$.a[1].b (1.5 vs 1.25)"
    assert AS.first_difference({"v": 1}, {"v": 1.0}) == "$.v (int vs float)"
    assert AS.first_difference({"v": 1}, {"v": True}) == "$.v (int vs bool)"
    assert AS.first_difference({"a": 1, "b": 2}, {"b": 2, "a": 1}) == "$ keys (order)"
    assert AS.first_difference({"a": 1}, {"a": 1, "z": 0}) == "$ keys ('z' in one only)"
    assert AS.first_difference([1, 2], [1, 2, 3]) == "$ (length 2 vs 3)"
    assert AS.first_difference({"x": float("nan")}, {"x": float("nan")}) is None


def test_normalise_replaces_only_the_listed_fields_and_the_temporary_paths():
    fields = AS.VOLATILE["import "]
    doc = {"sources": [{"seconds": 0.31, "rows": 10, "path": "/tmp/h1/x"}], "seconds": 2.0}
    got = AS.normalise(doc, [("/tmp/h1", "<home>")], fields)
    assert got == {"sources": [{"seconds": "<volatile>", "rows": 10, "path": "<home>/x"}], "seconds": 2.0}


def test_compare_tells_same_different_and_a_failure_in_one_tree(tmp_path):
    from subprocess import CompletedProcess

    a = AS.Tree("before", tmp_path / "a", tmp_path, tmp_path / "in")
    b = AS.Tree("after", tmp_path / "b", tmp_path, tmp_path / "in")
    ok = lambda out: CompletedProcess([], 0, out, "")  # noqa: E731
    assert AS.compare("jobs list", ok(f'{{"p": "{a.home}/s"}}'), ok(f'{{"p": "{b.home}/s"}}'), a, b) == ("same", "")
    assert AS.compare("jobs list", ok('{"n": 1}'), ok('{"n": 2}'), a, b) == ("different", "$.n (1 vs 2)")
    failed = CompletedProcess([], 2, "", "ioweather: error: no store\n")
    assert AS.compare("jobs list", failed, ok("{}"), a, b)[0] == "different"
    assert AS.compare("jobs list", failed, failed, a, b) == ("same (both failed)", "exit 2: ioweather: error: no store")
