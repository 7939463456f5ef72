"""Property-based fuzzing of hand-edited snapshot JSON (issue 19 items 9 and "keep it fixed"):
whatever a snapshot file holds, `fsstats diff` of it ends in a growth table or in one UserError,
never a TypeError/ValueError/KeyError. The target is the service and the renderers the command
uses, in process (a subprocess per example would allow a handful of examples); one real run of
the command checks that the error is one line there too.

Short in CI: IOWEATHER_FUZZ_EXAMPLES examples (default 15). The long run (docs/architecture.md,
"Test data and checks"):

    IOWEATHER_FUZZ_EXAMPLES=2000 IOWEATHER_FUZZ_RANDOM=1 .venv/bin/python -m pytest tests/test_fuzz_snapshots.py -q
"""

from __future__ import annotations

import copy
import json
import os
from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioweather.errors import UserError

EXAMPLES = int(os.environ.get("IOWEATHER_FUZZ_EXAMPLES", "15"))
FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=20), derandomize=not os.environ.get(
    "IOWEATHER_FUZZ_RANDOM"), suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                     HealthCheck.data_too_large])

pytestmark = pytest.mark.timeout(600)

#: JSON values a person editing the file could leave anywhere.
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                    st.text(max_size=12), st.sampled_from(["", "2026-13-45T99:99:99Z", "-1", "1e999", "NaN",
                                                           "0001-01-01T00:00:00Z", "[/oops]", "\x00"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


@pytest.fixture(scope="module")
def real_doc(tmp_path_factory) -> dict:
    """A snapshot of a small real tree, written by the real walk."""
    from ioweather.services.content.fsstats import take_snapshot

    d = tmp_path_factory.mktemp("tree")
    for i, name in enumerate(("alpha", "beta", "gamma")):
        (d / name).mkdir()
        for j in range(i + 2):
            (d / name / f"f{j}").write_bytes(b"x" * (10 ** j))
    snapshot, _ = take_snapshot(str(d), threads=1, cross_mounts=False, exclude=(), progress=None)
    return json.loads(json.dumps(snapshot.to_json()))


def _paths(doc, prefix=()):
    """Every (path of keys/indices) inside `doc`, the root excluded."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield (*prefix, k)
        yield from _paths(v, (*prefix, k))


@st.composite
def edits(draw, doc: dict):
    """`doc` with a few values replaced, keys deleted or lists emptied, as an editor would."""
    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        parent = doc
        try:
            for k in path[:-1]:
                parent = parent[k]
            action = draw(st.sampled_from(["replace", "replace", "delete"]))
            if action == "delete" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(VALUES)
        except (KeyError, IndexError, TypeError):  # an earlier edit removed or replaced the way there
            continue
    return doc


def _diff(a: Path, b: Path) -> None:
    """What `fsstats diff A B` and `fsstats diff --json A B` do with two files (services.content.fsstats.compare
    without the store lookups, which only decide that A and B are files)."""
    from ioweather.services.content.fsstats import growth_doc
    from ioweather.store.snapshots import read_file
    from ioweather.views.fsstats_tables import print_growth
    from ioweather.views.output import to_json

    da, db = read_file(a), read_file(b)
    g = growth_doc(da, db, str(a), str(b), movers=5).to_json()
    to_json(g)
    print_growth(g, 5)


def _check(tmp_path: Path, a_doc, b_doc, raw: str | None = None) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(a_doc, allow_nan=True))
    b.write_text(raw if raw is not None else json.dumps(b_doc, allow_nan=True))
    try:
        _diff(a, b)
    except UserError as e:
        assert "\n" not in str(e)


@FUZZ
@given(data=st.data())
def test_fuzz_edited_snapshot(real_doc, tmp_path, data, capsys):
    side = data.draw(st.sampled_from(["a", "b", "both"]))
    a = data.draw(edits(real_doc)) if side != "b" else real_doc
    b = data.draw(edits(real_doc)) if side != "a" else real_doc
    _check(tmp_path, a, b)


@FUZZ
@given(value=VALUES)
def test_fuzz_whole_document(real_doc, tmp_path, value, capsys):
    _check(tmp_path, real_doc, value)


@FUZZ
@given(cut=st.integers(0, 4000), junk=st.text(max_size=20))
def test_fuzz_truncated_text(real_doc, tmp_path, cut, junk, capsys):
    text = json.dumps(real_doc)
    _check(tmp_path, real_doc, None, raw=text[:cut] + junk)


KNOWN = [  # found by the fuzzer or by hand before the fix: each raised a TypeError/ValueError/KeyError
    ("snapshot_time", 5), ("snapshot_time", "yesterday"), ("bytes", "12"), ("files", None),
    ("top_dirs", {"a": 1}), ("top_dirs", [1, 2]), ("top_dirs", [{"files": 1}]), ("owners", [{"uid": [1]}]),
    ("histograms", []), ("capacity_bytes", [1]), ("dirs", 1e400), ("owners", "x"),
]


@pytest.mark.parametrize("key,value", KNOWN)
def test_known_bad_values_are_one_line(real_doc, tmp_path, cli, key, value):
    bad = {**real_doc, key: value}
    b = tmp_path / "bad.json"
    b.write_text(json.dumps(bad))
    a = tmp_path / "a.json"
    a.write_text(json.dumps(real_doc))
    for extra in ((), ("--json",)):
        r = cli("fsstats", "diff", str(a), str(b), *extra, home=tmp_path / "home")
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
        lines = [ln for ln in r.stderr.splitlines() if not ln.startswith(("comparing", "note:", "warning:"))]
        assert len(lines) == 1 and lines[0].startswith("ioweather: error: ") and "bad.json" in lines[0], r.stderr
