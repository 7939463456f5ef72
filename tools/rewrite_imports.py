"""Rewrite references to the old flat src/ioweather/services/*.py into the domain packages (issue 37).

    python tools/rewrite_imports.py [--check] [FILE ...]

With no FILE: every text file under src/ tests/ benchmarks/ scripts/ docs/ tools/, plus pyproject.toml,
Makefile and README.md. Files that are not text, or that do not exist (a path `git diff --name-only`
lists as deleted), are skipped. --check rewrites nothing and exits 1 when something would change.

Forms rewritten (OLD is a key of MOVED, NEW its value):
    from ioweather.services import OLD [as A]         -> from ioweather.services.PKG import LEAF as OLD|A
    from ioweather.services.OLD import names          -> from ioweather.services.NEW import names
    import ioweather.services.OLD [as A]               -> import ioweather.services.NEW [as A]
    from .OLD import names / from . import OLD         (inside services/) -> the absolute forms above
    ioweather.services.OLD.attr, services.OLD.attr    (strings for mock.patch, monkeypatch, import-linter,
                                                       docs, comments) -> ....services.NEW.attr
    services/OLD.py, services/OLD                      (paths in docs and comments) -> services/NEW_PATH[.py]

A file holding the line `# rewrite_imports: leave this file` is skipped (tests/test_rewrite_imports.py,
whose samples name the old modules on purpose).

Idempotent: what it writes is never a key of MOVED again. Three old modules share their name with a new
package (probe.py, bench.py, telemetry.py); a reference to one of them is rewritten only where it cannot
mean the package: followed by an attribute that is not one of the package's modules, in an import of
names that are not its modules, in `import ioweather.services.X`, and in a `# lazy: ... via services.X`
reason. A bare "ioweather.services.probe" elsewhere (an import-linter contract, docs) is the package.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

#: old module under ioweather.services -> its new dotted path under ioweather.services
MOVED: dict[str, str] = {
    # probe/: the probe daemon and everything computed from its samples
    "probe": "probe.run",
    "probe_cache": "probe.cache",
    "probe_pieces": "probe.pieces",
    "probe_samples": "probe.samples",
    "probe_status": "probe.status",
    "probe_targets": "probe.targets",
    "probe_timeline": "probe.timeline",
    "probe_history": "probe.history",
    "slowdown": "probe.slowdown",
    # jobs/: Darshan logs, their ingest, the scheduler's jobs and a job's weather
    "darshan": "jobs.darshan",
    "darshan_ingest": "jobs.ingest",
    "darshan_job": "jobs.darshan_child",
    "scheduler": "jobs.scheduler",
    "job_weather": "jobs.weather",
    # telemetry/: collect, import, the fs views, the workload and the exporter
    "collect": "telemetry.collect",
    "collector": "telemetry.collector",
    "telemetry": "telemetry.imports",
    "telemetry_ingest": "telemetry.ingest",
    "import_kinds": "telemetry.import_kinds",
    "fsview": "telemetry.fsview",
    "capacity": "telemetry.capacity",
    "workload": "telemetry.workload",
    "exporter": "telemetry.exporter",
    "exporter_defaults": "telemetry.exporter_defaults",
    "exporter_lctl": "telemetry.exporter_lctl",
    # bench/: benchmark runs (fio motifs, imported results) and the io-model benchmark
    "bench": "bench.runs",
    "iomodel": "bench.iomodel",
    # content/: content snapshots
    "fsstats": "content.fsstats",
    # answers/: the answers that join domains (the second move of issue 37: services/ top held 16 files)
    "job_diff": "answers.job_diff",
    "why": "answers.why",
    "report": "answers.report",
    "events": "answers.events",
    "changes": "answers.changes",
    "umami": "answers.umami",
    "factors": "answers.factors",
    "metrics": "answers.metrics",
    "imports": "answers.imports",
    # runtime/: the plumbing every domain uses (daemons, retention, the server, stores, Dask, names)
    "daemon": "runtime.daemon",
    "retention": "runtime.retention",
    "server": "runtime.server",
    "stores": "runtime.stores",
    "distributed": "runtime.distributed",
    "fs_names": "runtime.fs_names",
    "defaults": "runtime.defaults",
}

#: new package -> its modules (what `from ioweather.services.PKG import X` may name in the new layout)
PACKAGES: dict[str, set[str]] = {}
for _new in MOVED.values():
    _pkg, _leaf = _new.split(".")
    PACKAGES.setdefault(_pkg, set()).add(_leaf)
#: Modules new in a package since the move (no old flat name): `services.probe.light_check` is not the old
#: `services/probe.py`'s attribute `light_check`, nor `services.telemetry.fsfacts` the old telemetry.py's.
#: Read from the tree, so that a module added later is never taken for an old one's attribute.
_SERVICES = Path(__file__).resolve().parent.parent / "src" / "ioweather" / "services"
for _pkg in PACKAGES:
    PACKAGES[_pkg].update(f.stem for f in (_SERVICES / _pkg).glob("*.py") if f.stem != "__init__")

ROOTS = ("src", "tests", "benchmarks", "scripts", "docs", "tools")
TOP_FILES = ("pyproject.toml", "Makefile", "README.md")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".rst", ".html", ".js", ".sh", ".yml",
                 ".yaml", ".json", ".pyi", ""}

_NAMES = r"(?:\((?P<pnames>[^)]*)\)|(?P<names>[^\n#]*?(?:\\\n[^\n#]*?)*))(?P<tail>[ \t]*(?:#[^\n]*)?)$"
FROM_SERVICES = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+ioweather\.services[ \t]+import[ \t]+" + _NAMES,
                           re.M)
FROM_MODULE = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+(?P<mod>ioweather\.services\.(?P<old>\w+))[ \t]+import[ \t]+"
                         + _NAMES, re.M)
FROM_RELATIVE = re.compile(r"^(?P<indent>[ \t]*)from[ \t]+\.(?P<old>\w*)[ \t]+import[ \t]+" + _NAMES, re.M)
IMPORT_MODULE = re.compile(r"^(?P<head>[ \t]*import[ \t]+ioweather\.services\.)(?P<old>\w+)(?=[ \t]*(?:as\b|#|$))",
                           re.M)
DOTTED = re.compile(r"(?<![\w.])(?P<pre>(?:ioweather\.)?services)\.(?P<old>\w+)(?P<after>\.\w+)?")
PATH = re.compile(r"(?<![\w.])(?P<pre>services)/(?P<old>\w+)(?P<after>\.py|/)?")
VIA = re.compile(r"via\s+$")
LEAVE = "# rewrite_imports: leave this file"


def _split_names(text: str) -> list[tuple[str, str | None]]:
    """`a, b as c` (parenthesized or continued) -> [(a, None), (b, c)]."""
    text = re.sub(r"#[^\n]*", "", text).replace("\\\n", " ")
    out = []
    for part in text.split(","):
        words = part.split()
        if not words:
            continue
        if len(words) == 3 and words[1] == "as":
            out.append((words[0], words[2]))
        elif len(words) == 1:
            out.append((words[0], None))
        else:
            raise ValueError(f"cannot read import names {part!r}")
    return out


def _names_text(names: list[tuple[str, str | None]]) -> str:
    return ", ".join(n if a is None or a == n else f"{n} as {a}" for n, a in names)


def _module_imports(indent: str, names: list[tuple[str, str | None]], tail: str) -> str:
    """`from ioweather.services import names` in the new layout: one statement per package, bound names kept."""
    groups: dict[str, list[tuple[str, str | None]]] = {}
    for name, alias in names:
        if name in MOVED:
            pkg, leaf = MOVED[name].rsplit(".", 1)
            groups.setdefault(f"ioweather.services.{pkg}", []).append((leaf, alias or name))
        else:
            groups.setdefault("ioweather.services", []).append((name, alias))
    lines = [f"{indent}from {mod} import {_names_text(ns)}" for mod, ns in groups.items()]
    lines[-1] += tail
    return "\n".join(lines)


def _names_of(m: re.Match) -> list[tuple[str, str | None]]:
    return _split_names(m.group("pnames") if m.group("pnames") is not None else m.group("names"))


def _rewrite_from_services(m: re.Match) -> str:
    names = _names_of(m)
    if not any(n in MOVED for n, _ in names):
        return m.group(0)
    return _module_imports(m.group("indent"), names, m.group("tail"))


def _rewrite_from_module(m: re.Match) -> str:
    old = m.group("old")
    if old not in MOVED:
        return m.group(0)
    if old in PACKAGES:  # the package's own name: new layout when it imports the package's modules
        names = _names_of(m)
        inside = [n in PACKAGES[old] for n, _ in names]
        if all(inside):
            return m.group(0)
        if any(inside):
            raise ValueError(f"{m.group(0)!r} mixes modules of the package {old} with names of the old {old}.py")
    start, end = m.span("mod")
    s = m.group(0)
    return s[:start - m.start()] + f"ioweather.services.{MOVED[old]}" + s[end - m.start():]


def _rewrite_relative(m: re.Match) -> str:
    old = m.group("old")
    if old == "":
        names = _names_of(m)
        if not any(n in MOVED for n, _ in names):
            return m.group(0)
        return _module_imports(m.group("indent"), names, m.group("tail"))
    if old not in MOVED:
        return m.group(0)
    s = m.group(0)
    return s.replace(f"from .{old}", f"from ioweather.services.{MOVED[old]}", 1)


def _rewrite_dotted(text: str, m: re.Match) -> str:
    old, after = m.group("old"), m.group("after")
    if old not in MOVED:
        return m.group(0)
    if old in PACKAGES:
        if after is None:
            # bare: the package, unless it is the `via services.X` of a lazy-import reason
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not (VIA.search(text, line_start, m.start()) and "lazy:" in text[line_start:m.start()]):
                return m.group(0)
        elif after[1:] in PACKAGES[old]:
            return m.group(0)
    return f"{m.group('pre')}.{MOVED[old]}{after or ''}"


def _rewrite_path(m: re.Match) -> str:
    old, after = m.group("old"), m.group("after")
    if old not in MOVED or after == "/":
        return m.group(0)
    if after is None and old in PACKAGES:
        return m.group(0)  # `services/probe` alone: the package
    return f"{m.group('pre')}/{MOVED[old].replace('.', '/')}{after or ''}"


def rewrite(text: str, in_services: bool = False) -> str:
    """`text` with every reference to a moved module rewritten; the same text when there is none."""
    text = FROM_SERVICES.sub(_rewrite_from_services, text)
    text = FROM_MODULE.sub(_rewrite_from_module, text)
    if in_services:
        text = FROM_RELATIVE.sub(_rewrite_relative, text)
    text = IMPORT_MODULE.sub(lambda m: m.group("head") + MOVED.get(m.group("old"), m.group("old")), text)
    text = DOTTED.sub(lambda m: _rewrite_dotted(text, m), text)
    return PATH.sub(_rewrite_path, text)


def _default_files(root: Path) -> list[Path]:
    files = [root / f for f in TOP_FILES if (root / f).is_file()]
    for top in ROOTS:
        for p in sorted((root / top).rglob("*")):
            if p.is_file() and p.suffix in TEXT_SUFFIXES and not any(
                    part.startswith(".") or part in ("__pycache__", "node_modules") for part in p.parts):
                files.append(p)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="files to rewrite (default: the whole tree)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if something would change")
    args = ap.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    files = args.files or _default_files(root)
    changed = []
    for path in files:
        if this_file(path) or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if LEAVE in text:
            continue
        old_layout = path.resolve().parent == (root / "src/ioweather/services").resolve()
        try:
            new = rewrite(text, in_services=old_layout)
        except ValueError as e:
            print(f"rewrite_imports: {path}: {e}", file=sys.stderr)
            return 2
        if new != text:
            changed.append(path)
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for path in changed:
        print(("would rewrite " if args.check else "rewrote ") + str(path))
    return 1 if args.check and changed else 0


def this_file(path: Path) -> bool:
    """The map itself names every old module: rewriting it would erase it."""
    return path.resolve() == Path(__file__).resolve()


if __name__ == "__main__":
    sys.exit(main())
