"""No import cycle among ioweather's modules, counting the imports inside functions (issue 37 item 3).

import-linter sees every import but checks layers, not cycles within one; a cycle hidden in a function
(`# lazy:` "to dodge a cycle") is still one file doing two jobs. The graph here is read from the AST
of every module: `import a.b`, `from a import b` (b a module or a name of a), relative imports,
at the top, in functions and under TYPE_CHECKING alike. An edge goes to the deepest module named.
"""
from __future__ import annotations

import ast
import functools
import shutil
from collections import deque
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def module_graph(src: Path, package: str = "ioweather") -> dict[str, set[str]]:
    """{module: the modules of `package` it imports anywhere in its file}."""
    files = {}
    for path in (src / package).rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                named = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))
                named = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            for name in named:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != mod:
                    graph[mod].add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module, as a path a -> ... -> a."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(root: str) -> None:  # Tarjan's, iterative: the graph is deep enough to matter
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        components.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_path_back(graph, comp) for comp in components]


def _path_back(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """The shortest way from the component's first module back to itself (breadth first)."""
    start = min(comp)
    parent: dict[str, str | None] = {start: None}
    todo = deque([start])
    while todo:
        v = todo.popleft()
        for w in sorted(graph[v]):
            if w == start:
                path = [start]
                while v is not None:
                    path.append(v)
                    v = parent[v]
                return path[::-1]
            if w in comp and w not in parent:
                parent[w] = v
                todo.append(w)
    raise AssertionError(f"{sorted(comp)} is not strongly connected")


@functools.cache
def _tree() -> dict[str, set[str]]:
    return module_graph(SRC)


def test_no_import_cycles():
    found = cycles(_tree())
    assert not found, "import cycles (imports inside functions count; split the module that does two jobs):\n" + \
        "\n".join("  " + " -> ".join(c) for c in found)


def test_the_graph_sees_every_import_form():
    g = _tree()
    assert "ioweather.stats.costs" in g["ioweather.stats.findings"]               # from ioweather.stats import costs
    assert "ioweather.store.probe_tables" in g["ioweather.store.probe"]            # from a.b.c import NAME
    assert "ioweather.store.probe" in g["ioweather.services.probe.slowdown"]        # only inside functions
    assert "ioweather.services.probe.pieces" in g["ioweather.services.probe.cache"]  # from pkg import module as x


def _plant(src: Path, module: str, line: str) -> None:
    path = src.joinpath(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _planted():\n    {line}\n", encoding="utf-8")


def test_a_planted_cycle_is_caught(tmp_path):
    """A copy of the tree with two cycles planted inside functions: costs <-> findings again (the
    `severity` one issue 37 removed) and a relative import closing probe_tables -> probe."""
    shutil.copytree(SRC / "ioweather", tmp_path / "ioweather", ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    _plant(tmp_path, "ioweather.stats.costs", "from ioweather.stats.findings import job_clock  # noqa: F401")
    _plant(tmp_path, "ioweather.store.probe_tables", "from . import probe  # noqa: F401")
    planted = module_graph(tmp_path)
    assert {m: e for m, e in planted.items() if m not in ("ioweather.stats.costs", "ioweather.store.probe_tables")} == \
        {m: e for m, e in _tree().items() if m not in ("ioweather.stats.costs", "ioweather.store.probe_tables")}
    found = cycles(planted)
    assert sorted(found) == [["ioweather.stats.costs", "ioweather.stats.findings", "ioweather.stats.costs"],
                             ["ioweather.store.probe", "ioweather.store.probe_tables", "ioweather.store.probe"]]


def test_a_longer_cycle_is_named_in_order():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
