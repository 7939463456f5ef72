"""`LogFacts` (services/jobs/facts.py): what `why` takes of a log, stored at ingest as JSON in
darshan_jobs.why_facts (darshan store version 4), typed to the leaves: the time per kind of op is
`OpTimes`, each mount a `config.MountBytes`.

The fixture tests/data/why_facts_v1_imbalanced-io.json is the column as `jobs ingest` wrote it for
../shared/testdata/darshan/imbalanced-io.darshan *before* these leaves were typed (when `times` was a dict
and `mounts` a list of dicts): every row stored since version 4 must still be read, and written again
byte for byte the same, when it was derived under this code's rules (stats/rules_revision.py: the facts say
theirs since darshan store version 5; a row that says none, or another, is read from its log again)."""

from __future__ import annotations

import json
import typing
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

from ioweather import __version__
from ioweather.config import MountBytes
from ioweather.services.jobs.facts import LogFacts, OpTimes
from ioweather.stats.rules_revision import RULES_REVISION

STORED = Path(__file__).parent / "data" / "why_facts_v1_imbalanced-io.json"


def _row_of_this_version() -> str:
    """The stored row as this ioweather would take it: `usable` reads only facts its own version made under its
    own rules (the version string and the rules' revision, darshan store version 5, are the fields that say who
    wrote it, not what); the fixture predates the revision, which goes after the version string."""
    text = STORED.read_text()
    doc = json.loads(text)
    return text.replace(f'"ioweather": "{doc["ioweather"]}"',
                        f'"ioweather": "{__version__}", "rules": "{RULES_REVISION}"', 1)


def test_a_row_stored_before_the_leaves_were_typed_loads_typed_and_is_written_again_the_same():
    text = _row_of_this_version()
    facts = LogFacts.usable(text)
    assert facts is not None
    assert isinstance(facts.times, OpTimes) and facts.times.write == 6345.617449998856
    assert all(isinstance(m, MountBytes) for m in facts.mounts)
    # the mount the log names no file system for is kept: `why` leaves it out of its list, not the store
    assert [(m.mount, m.fs_type, m.bytes) for m in facts.mounts] == [
        ("/lus/theta-fs0", "lustre", 105879045777), ("/", "overlay", 852195214), (None, None, 3183)]
    assert facts.stored() == text  # the same JSON, key order and every digit
    assert facts.times.by_kind() == json.loads(text)["facts"]["times"]


def test_the_current_report_stores_what_the_earlier_code_stored(testdata):
    """An independent check of the writer: the report of the very log, made now, is the row the code before
    the typed leaves wrote (the fixture), byte for byte."""
    from ioweather.services.jobs.report import job_answer

    rep, log = job_answer(str(testdata / "darshan" / "imbalanced-io.darshan"))
    assert LogFacts.of_report(rep, log).stored() == _row_of_this_version()


def test_facts_of_other_rules_or_of_none_are_not_used():
    """The fixture as stored (before the facts said their rules: the version string "0.1.0" said nothing of
    them) and the same facts under another revision are not what reading the log would give now."""
    doc = json.loads(_row_of_this_version())
    assert LogFacts.usable(json.dumps(doc)) is not None
    assert LogFacts.usable(json.dumps({k: v for k, v in doc.items() if k != "rules"})) is None
    assert LogFacts.usable(json.dumps({**doc, "rules": "2026-11-28"})) is None
    assert "rules" not in json.loads(STORED.read_text()) and LogFacts.usable(
        STORED.read_text().replace(f'"ioweather": "{json.loads(STORED.read_text())["ioweather"]}"',
                                   f'"ioweather": "{__version__}"', 1)) is None


@pytest.mark.parametrize("change", [
    {"times": [1.0, 2.0, 3.0]},
    {"times": {"read": 1.0, "write": 2.0, "meta": 3.0, "open": 4.0}},
    {"mounts": {"mount": "/"}},
    {"mounts": [["/", "ext4", 1]]},
    {"mounts": [{"mount": "/", "fs_type": "ext4", "bytes": 1, "osts": []}]},
])
def test_facts_of_another_shape_are_not_used(change):
    """A row `why` cannot read as these dataclasses is no facts (the log is read again), never an error."""
    doc = json.loads(_row_of_this_version())
    doc["facts"].update(change)
    assert LogFacts.usable(json.dumps(doc)) is None


def test_the_facts_are_dataclasses_to_the_leaves():
    """No dict, nor list of dicts, anywhere in the facts: each field is a scalar, a dataclass or a list of them."""
    scalars = {int, float, str, bool, type(None)}

    def leaves_ok(tp) -> bool:
        origin = typing.get_origin(tp)
        if origin in (typing.Union, getattr(__import__("types"), "UnionType")):
            return all(leaves_ok(a) for a in typing.get_args(tp))
        if origin is list:
            return all(leaves_ok(a) for a in typing.get_args(tp))
        if is_dataclass(tp):
            hints = typing.get_type_hints(tp)
            return all(leaves_ok(hints[f.name]) for f in fields(tp))
        return tp in scalars

    assert leaves_ok(LogFacts)
