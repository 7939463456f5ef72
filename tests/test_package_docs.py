"""A package's docstring is its map (docs/architecture.md): it names each of its modules, and no module
that lives elsewhere (issue 37 item 5: sources/telemetry/__init__.py named modules that had moved)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "ioweather"
#: services/' packages, each found on disk: a new one is held to its map without being listed here.
SERVICES = sorted(p.parent.relative_to(SRC).as_posix() for p in (SRC / "services").glob("*/__init__.py"))
#: The packages whose docstring lists their modules.
MAPS = ["sources/telemetry", *SERVICES]
#: Words of sources/telemetry's prose that are also the names of modules elsewhere.
PROSE = {"services", "sources", "store", "telemetry", "runs", "params", "imports"}


def _doc(package: str) -> str:
    # raw: cleaning would strip a table's indent where no prose line follows the first
    tree = ast.parse((SRC / package / "__init__.py").read_text(encoding="utf-8"))
    return ast.get_docstring(tree, clean=False) or ""


def _words(package: str) -> set[str]:
    return set(re.findall(r"\b[a-z][a-z0-9_]*\b", _doc(package)))


def _modules(package: str) -> set[str]:
    return {p.stem for p in (SRC / package).glob("*.py")} - {"__init__"}


def _table(doc: str) -> dict[str, str]:
    """The map's rows: an indented line whose first word is a module's name, then what the module holds."""
    rows = [line.split(maxsplit=1) for line in doc.splitlines() if line.startswith("    ")]
    return {row[0]: row[1] if len(row) > 1 else "" for row in rows if re.fullmatch(r"[a-z][a-z0-9_]*", row[0])}


@pytest.mark.parametrize("package", MAPS)
def test_the_docstring_names_every_module(package):
    assert _modules(package) - _words(package) == set(), f"{package}/__init__.py does not name these modules"


@pytest.mark.parametrize("package", SERVICES)
def test_a_services_package_has_a_line_for_each_of_its_modules(package):
    """services/' maps are tables: one line per module, its name first, then what it holds; a row for a
    module that moved away fails as a module without its row does."""
    table = _table(_doc(package))
    assert _modules(package) - table.keys() == set(), f"{package}/__init__.py has no line for these modules"
    assert table.keys() - _modules(package) == set(), f"{package}/__init__.py has lines for modules it lacks"
    assert [m for m, what in table.items() if len(what.split()) < 3] == [], "a line says what its module holds"


def test_the_table_rule_sees_a_missing_a_moved_and_a_bare_module():
    doc = "Prose naming why in passing.\n\n    why     a job's time, split\n    gone    moved to another package\n    bare\n"
    assert _table(doc) == {"why": "a job's time, split", "gone": "moved to another package", "bare": ""}
    assert {"why", "report"} - _table(doc).keys() == {"report"}


def test_sources_telemetry_names_no_module_of_elsewhere():
    elsewhere = {p.stem for p in SRC.rglob("*.py")} - {p.stem for p in (SRC / "sources" / "telemetry").glob("*.py")}
    assert (_words("sources/telemetry") & elsewhere) - PROSE == set()
