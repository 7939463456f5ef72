"""A package's docstring is its map (docs/architecture.md): it names each of its modules, and no module
that lives elsewhere (issue 37 item 5: sources/telemetry/__init__.py named modules that had moved)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "ioweather"
#: The packages whose docstring lists their modules (services/jobs, answers and runtime do not yet).
MAPS = ["sources/telemetry", "services/probe", "services/telemetry", "services/bench", "services/content"]
#: Words of sources/telemetry's prose that are also the names of modules elsewhere.
PROSE = {"services", "sources", "store", "telemetry", "runs", "params", "imports"}


def _words(package: str) -> set[str]:
    doc = ast.get_docstring(ast.parse((SRC / package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return set(re.findall(r"\b[a-z][a-z0-9_]*\b", doc))


@pytest.mark.parametrize("package", MAPS)
def test_the_docstring_names_every_module(package):
    modules = {p.stem for p in (SRC / package).glob("*.py")} - {"__init__"}
    assert modules - _words(package) == set(), f"{package}/__init__.py does not name these modules"


def test_sources_telemetry_names_no_module_of_elsewhere():
    elsewhere = {p.stem for p in SRC.rglob("*.py")} - {p.stem for p in (SRC / "sources" / "telemetry").glob("*.py")}
    assert (_words("sources/telemetry") & elsewhere) - PROSE == set()
