"""Where a command imports what (issue 37 item 4), read from the AST of commands/*.py.

The rule: a command module imports at its top everything it can without loading a heavy library; in a
function it imports
- at most one service module (`ioweather.services...`, or the web app for `serve`): the one the command
  asks (its names in one statement or two), and
- besides it, only the two seams the heavy libraries sit behind: the store's opener
  (`services.runtime.stores`: SQLAlchemy) and a view that renders (`views...`: numpy, Jinja, rich),
and each such import is truly lazy: what it loads, followed through the modules' top-level imports,
holds a heavy library that the command module's own top does not load already. A light module imported
in a function belongs at the top; a lazy import of what the top has loaded hides nothing.
tests/test_imports_measured.py measures the outcome (what `--help` and `slowdown --check` load).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = SRC / "ioweather" / "commands"
#: What a lazy import may keep off a path: tests/test_imports_measured.py's five, and the web, plotting,
#: templating and terminal libraries whose import costs tenths of a second on a cron job's start.
HEAVY = {"numpy", "pandas", "pyarrow", "sqlalchemy", "scipy", "duckdb", "h5py", "dask", "matplotlib", "plotly",
         "starlette", "uvicorn", "jinja2", "rich", "prometheus_client"}
SEAMS = ("ioweather.services.runtime.stores", "ioweather.views.")
SERVICES = ("ioweather.services.", "ioweather.web.")
#: The one function that runs two services, and why.
TWO_SERVICES = {("web.py", "watch"): "probes (services.probe.run) and serves the dashboard (web.app) in one process"}


def _module_file(name: str) -> Path | None:
    base = SRC.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    here = module.split(".") if is_package else module.split(".")[:-1]
    return ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else []))


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The modules an import statement loads: each package on the way, and `from m import x` x when a module."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = _absolute(node, module, is_package)
        names = [base] + [f"{base}.{a.name}" for a in node.names if _module_file(f"{base}.{a.name}")]
    out = []
    for name in names:
        parts = name.split(".")
        out += [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return out


def _top_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """What the module imports when it is imported: its statements outside functions and classes' methods,
    outside `if TYPE_CHECKING:`."""
    found: set[str] = set()

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_imported(node, module, is_package))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                visit(node.orelse)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(node, block, []):
                        visit(part.body if isinstance(part, ast.ExceptHandler) else [part])
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    return found


@functools.cache
def loads(module: str) -> frozenset[str]:
    """The heavy libraries importing `module` loads, through ioweather's modules' top-level imports."""
    seen, todo, heavy = set(), [module], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name.split(".")[0] in HEAVY:
            heavy.add(name.split(".")[0])
            continue
        todo += _module_imports(name)
    return frozenset(heavy)


@functools.cache
def _module_imports(name: str) -> tuple[str, ...]:
    path = _module_file(name) if name.startswith("ioweather") else None
    if path is None:
        return ()
    return tuple(_top_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)), name, path.name == "__init__.py"))


def lazy_imports(path: Path) -> list[tuple[str, int, str, list[str]]]:
    """(function, line, module as written, modules loaded) of each import inside a function of `path`,
    the innermost function named."""
    module = f"ioweather.commands.{path.stem}"
    out = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
            elif isinstance(child, (ast.Import, ast.ImportFrom)) and function:
                written = child.names[0].name if isinstance(child, ast.Import) else _absolute(child, module, False)
                out.append((function, child.lineno, written, _imported(child, module, False)))
            else:
                visit(child, function)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), None)
    return out


def _reason(lines: list[str], line: int) -> bool:
    """Whether a `# lazy:` comment heads the import at `line` (1-based) or the run of imports and comment
    lines it ends."""
    i = line - 2
    while i >= 0 and lines[i].strip().startswith(("from ", "import ", "#")):
        if lines[i].strip().startswith("# lazy:"):
            return True
        i -= 1
    return False


def problems(path: Path) -> list[str]:
    """What breaks the rule in one command module, a line each."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    top = set().union(*(loads(n) for n in _top_imports(tree, f"ioweather.commands.{path.stem}", False)))
    found, services = [], {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for function, line, written, named in lazy_imports(path):
        where = f"{path.name}:{line} {function}() imports {written}"
        if not _reason(lines, line):
            found.append(f"{where} without a `# lazy:` reason above it")
        if not set().union(*(loads(n) for n in named)) - top:
            found.append(f"{where}: loads nothing heavy that the module's top does not: import it at the top")
        elif written.startswith(SERVICES) and written != SEAMS[0]:
            services.setdefault(function, {}).setdefault(named[-1], line)
        elif not written.startswith(SEAMS):
            found.append(f"{where}: neither the command's service nor a seam (the store's opener, a view)")
    found += [f"{path.name} {function}() imports {len(s)} services lazily: "
              + ", ".join(f"{m} (line {n})" for m, n in s.items())
              for function, s in services.items() if len(s) > 1 and (path.name, function) not in TWO_SERVICES]
    return found


def test_each_command_imports_one_service_lazily_and_the_rest_at_the_top():
    found = [p for path in sorted(COMMANDS.glob("*.py")) for p in problems(path)]
    assert not found, "\n".join(found)


def test_the_rule_sees_what_it_forbids(tmp_path):
    """Planted: a light module imported in a function, a lazy import of what the top already loads, two
    services in one callback, a lazy import without its reason. Each is named; the measure of what a
    module loads is not blind."""
    assert {"numpy", "sqlalchemy"} <= loads("ioweather.services.runtime.stores")
    assert loads("ioweather.units") == frozenset()
    planted = tmp_path / "planted.py"
    planted.write_text('''
import click
from ioweather.views.output import print_json


def register(cli):
    @cli.command()
    def one():
        # lazy: none
        from ioweather.units import format_seconds
        from ioweather.views.output import print_table
        from ioweather.services.answers.events import events
        from ioweather.services.answers.changes import detect
        from ioweather.services.runtime.stores import open_store
''', encoding="utf-8")
    got = problems(planted)
    bare = tmp_path / "bare.py"
    bare.write_text("def f():\n    x = 1\n    from ioweather.services.answers.events import events\n", encoding="utf-8")
    got += problems(bare)
    assert len(got) == 4, got
    assert "imports ioweather.units: loads nothing heavy" in got[0]
    assert "imports ioweather.views.output: loads nothing heavy" in got[1]
    assert "one() imports 2 services lazily" in got[2]
    assert "bare.py:3 f() imports ioweather.services.answers.events without a `# lazy:` reason" in got[3]


#: Modules whose in-function imports still lack a `# lazy:` reason (standard library or a library the top
#: loads already, to move up; or a heavy one to give its reason). Empty: every one has been fixed; the test
#: fails when a listed module is clean, so the list only shrinks and nothing is added to it.
NOT_YET: set[str] = set()


def without_reason(path: Path) -> list[int]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, True)
            elif isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                if not _reason(lines, child.lineno):
                    found.append(child.lineno)
            else:
                visit(child, in_function)

    visit(ast.parse("\n".join(lines), str(path)), False)
    return found


def test_every_import_in_a_function_says_why():
    package = SRC / "ioweather"
    found = {str(p.relative_to(package)): without_reason(p) for p in sorted(package.rglob("*.py"))}
    bare = {f: lines for f, lines in found.items() if lines and f not in NOT_YET}
    assert not bare, f"imports in functions without a `# lazy:` reason (file: lines): {bare}"
    clean = sorted(f for f in NOT_YET if not found.get(f))
    assert not clean, f"no longer without reasons, remove from NOT_YET: {clean}"
