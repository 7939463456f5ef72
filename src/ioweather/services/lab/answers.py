"""The answers of `lab list` (the catalogue) and `lab run` (the run, with its scores under --score).

The cases and labels themselves are services/lab/catalogue.py's; here they are only read into the
answer `lab list --json` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from ioweather.encoding import Answer, answer_dict
from ioweather.services.lab.catalogue import CASES, LABELS
from ioweather.services.lab.run import LabRun
from ioweather.services.lab.score import Scores


@dataclass(frozen=True)
class CatalogueCase:
    """A case of the catalogue: its name, processes (MPI ranks, or `mpi` false: processes each writing its
    own log), the labels it plants and those a finding may name without being wrong, whether it is a
    control (plants nothing) and its planted cause in words."""

    name: str
    procs: int
    mpi: bool
    labels: list[str]
    tolerated: list[str]
    control: bool
    cause: str


@dataclass(frozen=True)
class CatalogueLabel:
    """A label of the vocabulary: what it means and the finding codes naming it in ioweather and Drishti."""

    label: str
    meaning: str
    ioweather_codes: list[str]
    drishti_codes: list[str]


@dataclass(frozen=True)
class Catalogue:
    """`lab list`'s answer: every case, in the catalogue's order, and every label."""

    cases: list[CatalogueCase]
    labels: list[CatalogueLabel]

    def to_json(self) -> dict:
        return {"cases": [answer_dict(c) for c in self.cases], "labels": [answer_dict(x) for x in self.labels]}


def catalogue() -> Catalogue:
    """The lab's cases and labels (services/lab/catalogue.py)."""
    return Catalogue(
        cases=[CatalogueCase(name=c.name, procs=c.procs, mpi=c.mpi, labels=list(c.labels), tolerated=list(c.tolerated),
                             control=c.control, cause=c.cause) for c in CASES],
        labels=[CatalogueLabel(label=x.name, meaning=x.meaning, ioweather_codes=list(x.ioweather),
                               drishti_codes=list(x.drishti)) for x in LABELS])


@dataclass(frozen=True)
class RunAndScores(Answer):
    """`lab run`'s answer: the run (what INDEX.json keeps) and, with --score, the scores of its logs
    (`lab score`'s answer; None without)."""

    run: LabRun
    scores: Scores | None
