"""No dead code: vulture over src/ioweather finds nothing (issue 28, item 5).

The settings are `[tool.vulture]` in pyproject.toml; what vulture cannot see used is listed, each
with its reason, in tools/vulture_whitelist.py. A finding fails here, naming the file, the line and the name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHITELIST = ROOT / "tools" / "vulture_whitelist.py"
ANSWERS = ROOT / "tools" / "vulture_answers.py"  # generated: see _answer_fields


def _vulture() -> str:
    exe = shutil.which("vulture", path=str(Path(sys.executable).parent))
    # A skip would let dead code in unseen: this test is the only guard.
    assert exe is not None, "vulture is not installed (pip install -e '.[test]'): dead code cannot be checked"
    return exe


def _run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([_vulture(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _names(out: str) -> set[str]:
    return set(re.findall(r"unused \w+ '([^']+)'", out))


def test_vulture_finds_no_dead_code():
    r = _run()  # paths, confidence and whitelist from pyproject.toml
    assert r.returncode == 0 and not r.stdout.strip(), \
        "dead code (delete it, or list it in tools/vulture_whitelist.py with the reason it is used):\n" + r.stdout + r.stderr


def test_every_whitelist_entry_is_needed():
    """An entry that vulture would not report any more (its code deleted or now used plainly) goes."""
    listed = set(re.findall(r"^_\.(\w+)", WHITELIST.read_text(encoding="utf-8"), re.M))
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["vulture"]
    # pyproject's settings without the whitelist: what the whitelist hides
    r = _run(*(p for p in conf["paths"] if p != WHITELIST.relative_to(ROOT).as_posix()), "--min-confidence", str(conf["min_confidence"]),
             "--ignore-decorators", ",".join(conf["ignore_decorators"]))
    stale = listed - _names(r.stdout)
    assert not stale, f"tools/vulture_whitelist.py lists names vulture does not report: {sorted(stale)}"


def test_an_unused_function_is_found(tmp_path):
    """The check on a copy of the package with one function nothing calls: named, with its line."""
    pkg = tmp_path / "src" / "ioweather"
    shutil.copytree(ROOT / "src" / "ioweather", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "tools").mkdir()
    shutil.copy(WHITELIST, tmp_path / "tools")
    shutil.copy(ANSWERS, tmp_path / "tools")
    units = pkg / "units.py"
    n = len(units.read_text(encoding="utf-8").splitlines())
    units.write_text(units.read_text(encoding="utf-8") + "\n\ndef nobody_calls_me():\n    return 1\n",
                     encoding="utf-8")
    r = _run(cwd=tmp_path)
    assert r.returncode != 0
    assert f"src/ioweather/units.py:{n + 3}: unused function 'nobody_calls_me'" in r.stdout, r.stdout


def test_a_missing_vulture_fails_rather_than_skips(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    with pytest.raises(AssertionError, match="vulture is not installed"):
        _vulture()


# -- the typed answers' fields --------------------------------------------------------------------------
# A typed answer's fields are read by `dataclasses.fields()` (its `to_json()`, encoding.answer_dict): each is
# a key of a JSON document, used by reflection that vulture cannot follow. tools/vulture_answers.py lists them,
# made from the code by `python tests/test_dead_code.py --write`; the test below keeps it current, so a
# field is listed only while its class renders itself by its fields.


def _answer_fields() -> str:
    """Each field of a typed answer (a dataclass with `to_json()`), of the dataclasses its fields hold (their
    `to_json()` renders them by their fields too), and of every TypedDict (its keys are a dict's keys)."""
    import dataclasses
    import importlib
    import pkgutil
    import re as re_
    import typing

    import ioweather

    names: dict[str, set[str]] = {}
    for m in pkgutil.walk_packages(ioweather.__path__, "ioweather."):
        if m.name.startswith("ioweather._native") or m.name.endswith("__main__"):
            continue
        mod = importlib.import_module(m.name)
        own = {n: c for n, c in vars(mod).items() if isinstance(c, type) and c.__module__ == m.name}
        data = {n: c for n, c in own.items() if dataclasses.is_dataclass(c)}
        todo = [c for c in data.values() if callable(getattr(c, "to_json", None))]
        seen: set[type] = set()
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            for f in dataclasses.fields(cls):
                ann = f.type if isinstance(f.type, str) else repr(f.type)
                todo += [data[w] for w in re_.findall(r"\w+", ann) if w in data]
        keys = {c: list(dataclasses.fields(c)) for c in seen}
        for c in own.values():
            if typing.is_typeddict(c):
                keys[c] = [type("F", (), {"name": k}) for k in c.__annotations__]
        for cls, fs in keys.items():
            for f in fs:
                names.setdefault(f.name, set()).add(f"{m.name.removeprefix('ioweather.')}.{cls.__name__}")
    lines = ['"""Generated by `python tests/test_dead_code.py --write`: the fields of the typed answers (dataclasses',
             'with a `to_json()`, the dataclasses they hold, TypedDicts), which reach their JSON document through',
             '`dataclasses.fields()` or as a dict\'s keys."""', "",
             "_ = object()", ""]
    lines += [f"_.{n}  # {', '.join(sorted(c))}" for n, c in sorted(names.items())]
    return "\n".join(lines) + "\n"


def test_answer_fields_list_is_current():
    assert ANSWERS.read_text(encoding="utf-8") == _answer_fields(), \
        "tools/vulture_answers.py is out of date: run `python tests/test_dead_code.py --write`"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    ANSWERS.write_text(_answer_fields(), encoding="utf-8")
