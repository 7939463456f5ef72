"""ioweather's own imports sit at the top of each module (issue 28 item 5).

An import inside a function hides a dependency from readers and from import-linter's picture of the
layers. One stays lazy only with its reason written beside it, `# lazy: <reason>` on the import's
first line or on the line directly above it: a fast path (`ioweather --help` loads every command
module; the Darshan job reader forks before numpy, pandas and PyDarshan), an import cycle (named),
an optional dependency. The heavy third-party libraries below may be imported inside a function only
with such a reason too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "ioweather"
HEAVY = {"pandas", "pyarrow", "matplotlib", "plotly", "dask", "darshan", "scipy"}
MARKER = re.compile(r"#\s*lazy:\s*\S")


def _imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.ImportFrom):
        return {"." if node.level else (node.module or "").split(".")[0]}
    return {alias.name.split(".")[0] for alias in node.names}


def unexplained_lazy_imports(source: str) -> list[tuple[int, str]]:
    """(line, statement) of each function-level import of ioweather (absolute or relative) or of a
    heavy library that carries no `# lazy:` reason."""
    lines = source.splitlines()
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                names = _imported(child)
                if names & ({".", "ioweather"} | HEAVY):
                    nearby = lines[child.lineno - 1:child.end_lineno]
                    if child.lineno >= 2:
                        nearby.append(lines[child.lineno - 2])
                    if not any(MARKER.search(line) for line in nearby):
                        out.append((child.lineno, ast.get_source_segment(source, child)))
            visit(child, inner)

    visit(ast.parse(source), False)
    return out


def test_the_check_sees_what_it_should():
    source = (
        "import pandas as pd\n"
        "from ioweather.units import format_bytes\n"
        "def f():\n"
        "    from ioweather.services import probe\n"
        "    from . import sibling\n"
        "    import pandas\n"
        "    import json\n"
        "    # lazy: numpy, rich: `ioweather --help` loads every command module\n"
        "    from ioweather.services import stores\n"
        "    from ioweather.stats import costs  # lazy: cycle stats.findings -> stats.costs\n"
        "    class C:\n"
        "        def g(self):\n"
        "            from scipy import stats\n"
        "    # lazy:\n"
        "    from ioweather import units\n"
    )
    assert [line for line, _ in unexplained_lazy_imports(source)] == [4, 5, 6, 13, 15]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_own_imports_are_at_the_top(path):
    found = unexplained_lazy_imports(path.read_text(encoding="utf-8"))
    assert not found, (
        f"{path.relative_to(PACKAGE.parent)}: imports inside functions without a `# lazy: <reason>` "
        "(move them to the top, or say why they stay):\n"
        + "\n".join(f"  line {line}: {stmt}" for line, stmt in found))
