"""The probe targets' lifecycle (issue 30): which targets the store holds, in which state, and retiring one.

A target is `starting` until its first samples are stored, `active` while its probe reports, `stale` once its newest sample is older than the Status page's
limit (`probe_status.stale_after_s`: 10 probe periods, at least a minute), `abandoned` after
`probe_status.ABANDON_AFTER_S` of silence (or without a sample since its last run started that long ago) (no longer deciding `slowdown --check`), `retired` once an admin says so
(`probe retire`: kept, out of Status, /metrics and --check, back as soon as a probe of it runs again).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ioweather.encoding import Answer, answer_dict
from ioweather.files import StoreTree
from ioweather.services.probe.status import abandoned, stale_after_s
from ioweather.services.runtime.stores import archive_probe_samples
from ioweather.services.probe.slowdown import known_targets
from ioweather.store import probe as probe_store
from ioweather.store.probe_aggregates import sample_range
from ioweather.units import ns_to_iso


@dataclass(frozen=True)
class TargetRow:
    """One probe target: its `state` (module docstring), its newest run's `host`, `fs` and `directory`, its
    number of `runs`, its first and last sample (ISO 8601 UTC) and how long it has been silent (s)."""

    target: str
    state: str
    host: str | None
    fs: str | None
    directory: str | None
    runs: int
    first_sample: str | None
    last_sample: str | None
    last_sample_age_s: float | None


@dataclass(frozen=True)
class Targets:
    """`probe targets`' answer: one `TargetRow` per target, by name."""

    rows: list[TargetRow]

    def to_json(self) -> list[dict]:
        """The rows: `probe targets --json` has always been a list."""
        return [answer_dict(r) for r in self.rows]


@dataclass(frozen=True)
class Retired:
    """`probe retire TARGET`: the target, retired, and the state it `was` in."""

    target: str
    retired: bool
    was: str
    #: Its newest run's host (the note when it `was` active: a probe there still writes); not in the JSON.
    host: str | None = None

    def to_json(self) -> dict:
        return {"target": self.target, "retired": self.retired, "was": self.was}


@dataclass(frozen=True)
class Skipped(Answer):
    """An archive file `probe retire --purge` left in place, and why (a planted link is never followed)."""

    path: str
    reason: str


@dataclass(frozen=True)
class Purged(Answer):
    """`probe retire TARGET --purge`: the counts of what went (`runs`, `samples`, `pieces` summaries,
    archive `files`) and the archive files `skipped`."""

    target: str
    purged: bool
    runs: int
    samples: int
    pieces: int
    files: int
    skipped: list[Skipped]

    def to_json(self) -> dict:
        d = answer_dict(self)
        d["skipped"] = [s.to_json() for s in self.skipped]
        return d


@dataclass(frozen=True)
class Archived(Answer):
    """`probe archive`'s answer: how many samples of completed days moved to Parquet."""

    archived_samples: int


def archive(store, keep_days: int) -> Archived:
    """Move completed days of probe samples (but the last `keep_days`) to Parquet (SQLite only)."""
    return Archived(archive_probe_samples(store, keep_days=keep_days))


def list_targets(store, now_ns: int | None = None) -> Targets:
    """One row per target: its file system's name, first and last sample, runs, host of the last run, state
    (module docstring). The file system and host are its newest run's: a run records them when it starts."""
    now = time.time_ns() if now_ns is None else now_ns
    retired = set(probe_store.retired_targets(store))
    by_target: dict[str, list[dict]] = {}
    for r in probe_store.runs(store):
        by_target.setdefault(r["target"], []).append(r)
    rows = []
    for target, runs in sorted(by_target.items()):
        span = sample_range(store, target)
        last = runs[-1]
        age_s = None if span is None else max(0.0, (now - span[1]) / 1e9)
        if target in retired:
            state = "retired"
        elif abandoned(age_s, last["started_ns"], now):
            state = "abandoned"
        elif age_s is None:
            state = "starting"  # its run began less than a day ago and has stored nothing yet
        elif age_s > stale_after_s(last["interval_s"]):
            state = "stale"
        else:
            state = "active"
        rows.append(TargetRow(target=target, state=state, host=last["host"], fs=last["fs"],
                              directory=last["directory"], runs=len(runs),
                              first_sample=ns_to_iso(span[0]) if span else None,
                              last_sample=ns_to_iso(span[1]) if span else None, last_sample_age_s=age_s))
    return Targets(rows)


def retire(store, target: str) -> Retired:
    """Retire `target`, with its row of `list_targets` as it was (an `active` one still has a probe writing)."""
    known_targets(store, target)
    row = next(r for r in list_targets(store).rows if r.target == target)
    probe_store.retire(store, target)
    return Retired(target, True, row.state, row.host)


def purge(store, target: str) -> Purged:
    """Delete the target and all its data; the counts of what went (`runs`, `samples`, `pieces`, `files`)."""
    known_targets(store, target)
    done = probe_store.purge(store, target)
    removed, skipped = 0, []
    if store.parquet_dir is not None:
        # the store's no-follow walker: a link planted at run=<id>/ or at a file is skipped, never followed
        tree = StoreTree(store.parquet_dir)
        removed = sum(tree.unlink(store.parquet_dir / rel) for rel in done["files"])
        skipped = tree.skipped
    return Purged(target=target, purged=True, runs=done["runs"], samples=done["samples"], pieces=done["pieces"],
                  files=removed, skipped=[Skipped(str(p), r) for p, r in skipped])
