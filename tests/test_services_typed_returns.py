"""No public function in services/ returns a dict or a list of dicts (issue 37 item 1): an answer is a
dataclass typed to its leaves, and its `to_json()` is the one place it becomes JSON.

Read from the AST of every module under services/: a public function or method (of a public class) must
not be annotated to return `dict`, `dict | None`, `dict[str, object]`, a list or tuple of dicts; nor, without an
annotation, return a dict literal or a list of them. Allowed: a typed lookup table `dict[K, V]` whose values
are a type (`dict[str, np.ndarray]` columns, `dict[str, Weather]` answers by id, `dict[str, str]`), and the
methods that render an answer (`to_json`, `raw`, `answer_json`). What still breaks the rule is NOT_YET_TYPED,
each with its reason; an entry that no longer breaks it fails the test until it is taken out.

The same for the fields of the answers (a public dataclass that is an `Answer` or renders itself) and of every
dataclass their fields name, to the leaves: a field annotated as a dict document or a list of them is
NOT_YET_TYPED_FIELDS, shrink-only. A dataclass only a private one holds (`why`'s `_LogAnswer.facts`, the
stored `LogFacts`) is not reached: tests/test_why_facts.py checks that one.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[1] / "src" / "ioweather" / "services"
RENDERING = {"to_json", "raw", "answer_json"}
UNTYPED_VALUES = {"dict", "object", "Any", "typing.Any"}

NOT_YET_TYPED: dict[str, str] = {}  # empty since 2026-11-28


def _untyped(node: ast.expr) -> bool:
    """Whether a return annotation is a dict document, or a list or tuple of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        node = ast.parse(node.value, mode="eval").body
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _untyped(node.left) or _untyped(node.right)
    if isinstance(node, ast.Name):
        return node.id in ("dict", "Dict")
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if head in ("dict", "Dict"):
            # a lookup table's values are checked too: dict[str, list[dict]] is documents under a key
            return ast.unparse(args[-1]) in UNTYPED_VALUES or _untyped(args[-1])
        if head in ("list", "List", "tuple", "Tuple", "Iterator", "Iterable"):
            return any(_untyped(a) for a in args if not (isinstance(a, ast.Constant) and a.value is Ellipsis))
    return False


def _returns_dict_literal(fn: ast.FunctionDef) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Return) and n.value is not None:
            v = n.value
            if isinstance(v, (ast.Dict, ast.DictComp)):
                return True
            if isinstance(v, ast.ListComp) and isinstance(v.elt, (ast.Dict, ast.DictComp)):
                return True
    return False


def dict_returning(source: str) -> list[str]:
    """The public functions and methods of a module's source that return a dict or a list of dicts."""
    out = []
    for node in ast.parse(source).body:
        items = [(node, "")] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            items = [(m, f"{node.name}.") for m in node.body if isinstance(m, ast.FunctionDef)]
        for fn, owner in items:
            if fn.name.startswith("_") or (owner and fn.name in RENDERING):
                continue
            if (fn.returns is not None and _untyped(fn.returns)) or (fn.returns is None and _returns_dict_literal(fn)):
                out.append(owner + fn.name)
    return out


def _found() -> set[str]:
    return {f"{p.relative_to(SERVICES).as_posix()}:{name}" for p in sorted(SERVICES.rglob("*.py"))
            for name in dict_returning(p.read_text(encoding="utf-8"))}


def test_no_public_service_returns_a_dict():
    found = _found()
    assert len(list(SERVICES.rglob("*.py"))) > 40  # the walk reached the domains
    new = found - set(NOT_YET_TYPED)
    assert not new, f"public services returning dicts (return a dataclass, or list it with its reason): {sorted(new)}"
    typed_since = set(NOT_YET_TYPED) - found
    assert not typed_since, f"typed now: take {sorted(typed_since)} out of NOT_YET_TYPED"


def test_the_jobs_and_changes_answers_are_typed():
    """This branch's part: `job`, `jobs list`, the Jobs page, `changes` and the probe marks, `job diff`."""
    found = _found()
    for module in ("jobs/darshan.py", "jobs/darshan_child.py", "jobs/answer.py", "answers/changes.py",
                   "answers/report.py", "answers/job_diff.py", "jobs/report.py", "answers/why.py"):
        assert not {f for f in found if f.startswith(module + ":")}, module


def test_the_check_finds_planted_dicts():
    planted = '''
def a() -> dict: ...
def b() -> list[dict]: ...
def c() -> dict[str, object]: ...
def d() -> tuple[dict, int]: ...
def e() -> "dict | None": ...
def f():
    return {"x": 1}
def g():
    return [{"x": i} for i in range(3)]
def _private() -> dict: ...
def columns() -> dict[str, np.ndarray]: ...
def answers() -> dict[str, Weather]: ...
def typed() -> Answer: ...
class Thing:
    def to_json(self) -> dict: ...
    def rows(self) -> list[dict]: ...
class _Hidden:
    def rows(self) -> list[dict]: ...
'''
    assert dict_returning(planted) == ["a", "b", "c", "d", "e", "f", "g", "Thing.rows"]


# ---------------------------------------------------------------- the answers' fields

#: Answer fields still holding a dict document (or a list of them), each with its reason; shrink-only: an
#: entry typed since fails the test until it is taken out, a new one fails it until it is typed.
NOT_YET_TYPED_FIELDS: dict[str, str] = {}  # empty since 2026-11-29


def _is_dataclass_def(node: ast.ClassDef) -> bool:
    return any(ast.unparse(d.func if isinstance(d, ast.Call) else d).split(".")[-1] == "dataclass"
               for d in node.decorator_list)


def _is_answer_def(node: ast.ClassDef) -> bool:
    """An answer: an `Answer`, or a dataclass that renders itself (`to_json`, `raw`, `answer_json`)."""
    return (any(ast.unparse(b).split(".")[-1] == "Answer" for b in node.bases)
            or any(isinstance(m, ast.FunctionDef) and m.name in RENDERING for m in node.body))


def _fields(node: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    return [(n.target.id, n.annotation) for n in node.body if isinstance(n, ast.AnnAssign)
            and isinstance(n.target, ast.Name) and "ClassVar" not in ast.unparse(n.annotation)]


def _names_in(annotation: ast.expr) -> set[str]:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)}


def dict_fields(sources: dict[str, str]) -> list[str]:
    """`module:Class.field` of every field of an answer, or of a dataclass an answer's fields name (to the
    leaves), annotated as a dict document or a list of them (the `_untyped` of the return annotations)."""
    classes: dict[str, list[tuple[str, ast.ClassDef]]] = {}
    for module, source in sources.items():
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef) and _is_dataclass_def(node):
                classes.setdefault(node.name, []).append((module, node))
    todo = [(m, c) for defs in classes.values() for m, c in defs if _is_answer_def(c) and not c.name.startswith("_")]
    seen: set[tuple[str, str]] = set()
    out = []
    while todo:
        module, cls = todo.pop()
        if (module, cls.name) in seen:
            continue
        seen.add((module, cls.name))
        for name, annotation in _fields(cls):
            if _untyped(annotation):
                out.append(f"{module}:{cls.name}.{name}")
            todo.extend(d for n in _names_in(annotation) for d in classes.get(n, []))
    return sorted(out)


def test_no_answer_holds_a_dict():
    """The house rule's "dataclasses down to the leaves, not dicts inside a dataclass", for every answer
    the services return and every dataclass its fields hold."""
    found = set(dict_fields({p.relative_to(SERVICES).as_posix(): p.read_text(encoding="utf-8")
                             for p in sorted(SERVICES.rglob("*.py"))}))
    new = found - set(NOT_YET_TYPED_FIELDS)
    assert not new, f"answer fields holding dicts (type them, or list them with their reason): {sorted(new)}"
    typed_since = set(NOT_YET_TYPED_FIELDS) - found
    assert not typed_since, f"typed now: take {sorted(typed_since)} out of NOT_YET_TYPED_FIELDS"


def test_the_field_check_finds_planted_dicts():
    planted = '''
@dataclass
class Leaf:
    ok: int
    doc: dict
@dataclass(frozen=True)
class Page(Answer):
    histogram: dict
    runs: list[dict]
    extra: "dict[str, Any] | None"
    by_id: dict[str, Leaf]
    columns: dict[str, float]
    tops: dict[str, list[dict]]
@dataclass
class Rendered:
    rows: list[dict[str, object]]
    def to_json(self) -> dict: ...
@dataclass
class NotAnAnswer:
    row: dict
class NotADataclass(Answer):
    doc: dict
'''
    assert dict_fields({"m.py": planted}) == ["m.py:Leaf.doc", "m.py:Page.extra", "m.py:Page.histogram",
                                              "m.py:Page.runs", "m.py:Page.tops", "m.py:Rendered.rows"]
