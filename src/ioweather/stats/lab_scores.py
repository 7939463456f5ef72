"""Precision, recall and F1 of a diagnosis tool's labels against a lab's planted ones (docs/validation.md).

Per case: the planted labels T, the labels it tolerates X (a consequence of the planted cause that a
tool may name or not), the labels the tool named P, and the alarms it raised that name no label U
(codes at WARN or HIGH outside the vocabulary). For a label L: a true positive when L is in T and P,
a false negative when in T only, a false positive when in P but neither T nor X. Each code of U is a
false positive of the row "unplanted". Micro averages pool the counts of every row (Manning, Raghavan
& Schütze, *Introduction to Information Retrieval*, 2008, section 13.6); `micro_f1_labels` leaves the
unplanted row out, as benchmarks that score only their labels do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

UNPLANTED = "unplanted"


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def prf(tp: int, fp: int, fn: int) -> dict:
    """precision, recall and F1 (None where undefined: nothing predicted, nothing planted)."""
    return {"tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp), "recall": _ratio(tp, tp + fn),
            "f1": _ratio(2 * tp, 2 * tp + fp + fn)}


def score(labels: Sequence[str], cases: Iterable[tuple[set[str], set[str], set[str], set[str]]]) -> dict:
    """Per label and micro scores over `cases` = (planted, tolerated, named, unplanted codes) each."""
    counts = {name: [0, 0, 0] for name in [*labels, UNPLANTED]}
    for planted, tolerated, named, unplanted in cases:
        for name in labels:
            if name in planted:
                counts[name][0 if name in named else 2] += 1
            elif name in named and name not in tolerated:
                counts[name][1] += 1
        counts[UNPLANTED][1] += len(unplanted)
    rows = {name: prf(*c) for name, c in counts.items()}
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    planted_only = [sum(c[i] for n, c in counts.items() if n != UNPLANTED) for i in range(3)]
    micro = prf(*total)
    return {"labels": rows, "micro_precision": micro["precision"], "micro_recall": micro["recall"],
            "micro_f1": micro["f1"], "micro_f1_labels": prf(*planted_only)["f1"]}


#: The causes over-claim a change when their seconds (before job diff's cap at the change) exceed it by more than
#: this factor: job diff's text says so beside the capped share.
OVERCLAIM = 1.2


def overclaims(claimed_s: float, change_s: float) -> bool:
    """Whether causes claiming `claimed_s` (signed, the change's way) over-claim a change of `change_s`."""
    return abs(claimed_s) > OVERCLAIM * abs(change_s)


def pair_outcome(share: float | None, change_s: float, still: bool, claimed_s: float, material_s: float,
                 min_share: float) -> tuple[bool, bool]:
    """(explained, no saving) of a bad -> fixed pair read by `job diff`. Explained: the findings account for at
    least `min_share` of the I/O-time change (`share`); but on an immaterial change (`still`) a claim that misses
    it by a material amount (`claimed_s`, the seconds of the findings the fix removed or lowered, which job diff
    caps at the change, exceeds |`change_s`| by `material_s` or more) is an over-claim, not an explanation.
    No saving: the change is immaterial and so is the claim: the cause costs nothing here, and the advisor did
    not say it would."""
    over = still and claimed_s - abs(change_s) >= material_s
    explained = (share or 0.0) >= min_share and not over
    return explained, still and claimed_s < material_s
