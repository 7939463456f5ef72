"""Retention (issue 30): what `ioweather store prune` and the daemons remove, per kind of data.

Kinds (config.RETENTION_DEFAULTS): `probe` raw samples, `rollups` the probe's per-day and per-hour summaries,
`telemetry` the servers' Parquet days. Removing raw probe samples keeps their summaries: every complete day
about to lose its samples is summarized first (services/probe/pieces.build), so slowdowns, baselines and the
Status climate over it stay exact. Every step is a short transaction (or a whole day's files), so the probe,
`collect` and the dashboard keep running meanwhile (docs/store.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ioweather.config import RETENTION_DEFAULTS
from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError
from ioweather.files import StoreTree, skipped_line
from ioweather.units import ns_to_iso

KINDS = tuple(RETENTION_DEFAULTS)


@dataclass(frozen=True)
class Skipped:
    """A path a prune left alone (a link, a mount point, an unreadable file, a running import), and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class KindPruned:
    """One kind's prune (or dry run): its limit and cutoff (ISO 8601 UTC), the rows and files removed (or
    that would be). Telemetry's also `files_cut` (rewritten from the cutoff on) and `imported_kept_rows`
    (imports kept: live_only); a probe prune's `summarized_days` (days summarized before their samples
    went). A field a kind does not have is None, absent from `to_json()`, as it always was."""

    kind: str
    older_than_s: float
    cutoff: str
    rows: int
    files: int
    skipped: list[Skipped] = field(default_factory=list)
    files_cut: int | None = None
    imported_kept_rows: int | None = None
    summarized_days: int | None = None

    def to_json(self) -> dict:
        out = {"kind": self.kind, "older_than_s": self.older_than_s, "cutoff": self.cutoff, "rows": self.rows,
               "files": self.files}
        for name in ("files_cut", "imported_kept_rows", "summarized_days"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["skipped"] = [answer_dict(s) for s in self.skipped]
        return out


@dataclass(frozen=True)
class Pruning(Answer):
    """`store prune`'s answer: a dry run (`plan`) or what was removed (`prune`), one `KindPruned` per kind."""

    dry_run: bool
    kinds: list[KindPruned]

    def to_json(self) -> dict:
        return {"dry_run": self.dry_run, "kinds": [k.to_json() for k in self.kinds]}

    @property
    def skipped(self) -> list[tuple[str, str]]:
        """Every kind's skipped (path, reason)."""
        return [(s.path, s.reason) for k in self.kinds for s in k.skipped]


def _cutoffs(older_than: dict[str, float | None], now_ns: int) -> dict[str, int]:
    unknown = set(older_than) - set(KINDS)
    # (`store` is None without a database: the probe's kinds then have nothing to remove.)
    if unknown:
        raise UserError(f"unknown kind {sorted(unknown)[0]!r}; choose {', '.join(KINDS)}")
    return {k: now_ns - int(s * 1e9) for k, s in older_than.items() if s is not None}


def plan(store, settings, older_than: dict[str, float | None], now_ns: int | None = None,
         live_only: bool = True) -> Pruning:
    """Per kind: the cutoff and what a prune would remove (`rows`, `files`), nothing removed."""
    return _run(store, settings, older_than, now_ns, live_only, apply=False)


def prune(store, settings, older_than: dict[str, float | None], now_ns: int | None = None,
          log=None, live_only: bool = True, warn=None) -> Pruning:
    """Remove, per kind, what is older than its limit; the same rows as `plan` with what was removed.

    `live_only` (the daemons, `store prune` with the retention settings): an import's telemetry is kept
    until `store prune --older-than` names an age (live_only=False): history brought in on purpose is
    never removed by a setting sized for what `collect` records. Links and mount points in the store,
    unreadable files and running imports are skipped, each in `skipped` (path, reason)."""
    return _run(store, settings, older_than, now_ns, live_only, apply=True, log=log, warn=warn or log)


def _run(store, settings, older_than, now_ns, live_only: bool, apply: bool, log=None, warn=None) -> Pruning:
    # lazy: numpy, sqlalchemy via store: commands.store imports this at its top: kept off `ioweather store --help` and its usage errors
    from ioweather.store import probe as probe_store
    # lazy: pyarrow via store.retention, loaded only when this runs
    from ioweather.store import retention as tele

    now = time.time_ns() if now_ns is None else now_ns
    out = []
    for kind, cutoff in _cutoffs(older_than, now).items():
        skipped: list = []
        extra: dict[str, int] = {}
        if kind != "telemetry" and store is None:
            rows, files = 0, 0
        elif kind == "probe" and not apply:
            old = probe_store.old_samples(store, cutoff)
            rows, files = old["rows"], old["files"]
        elif kind == "probe":
            summarized = _summarize_before(store, cutoff, now)
            done = probe_store.prune_samples(store, cutoff)
            rows, files = done["rows"], done["files"]
            skipped = unlink_archived(store, done["paths"])
            extra["summarized_days"] = summarized
        elif kind == "rollups":
            rows = probe_store.old_pieces(store, cutoff, delete=apply)
            files = _derived_rollups(store, apply) if rows or not live_only else 0
        else:
            pruned = tele.prune_telemetry(settings, cutoff, live_only=live_only, apply=apply)
            rows, files, skipped = pruned.rows, pruned.files, list(pruned.skipped)
            extra = {"files_cut": pruned.files_cut, "imported_kept_rows": pruned.imported_kept_rows}
        out.append(KindPruned(kind=kind, older_than_s=older_than[kind], cutoff=ns_to_iso(cutoff), rows=rows,
                              files=files, skipped=[Skipped(p, r) for p, r in skipped], **extra))
        if log and apply and (rows or files):
            log(f"retention: removed {rows:,} {kind} rows and {files:,} files older than {ns_to_iso(cutoff)}")
        if warn and skipped:
            warn(f"retention: {kind}: {skipped_line(skipped, 'removed' if apply else 'counted')}")
    if apply and (not live_only or any(k.rows or k.files for k in out)):
        _derived_answers(settings)
    return Pruning(dry_run=not apply, kinds=out)


def _derived_answers(settings) -> int:
    """The dashboard's kept page answers (store/kept_answers.py), derived from the data: removed by a prune that
    removes anything or names an age (as `_derived_rollups`); a page computes its answer again at its next view."""
    # lazy: as the store modules in `_run`
    from ioweather.store import kept_answers

    return kept_answers.remove(settings.home)


def _summarize_before(store, cutoff_ns: int, now_ns: int) -> int:
    """Summarize every complete day before the cutoff that has samples and no summary yet; how many were built."""
    # lazy: numpy, sqlalchemy via services.probe.pieces: commands.store imports this at its top: kept off `ioweather store --help` and its usage errors
    from ioweather.services.probe import pieces as probe_pieces
    # lazy: numpy, sqlalchemy via store: commands.store imports this at its top: kept off `ioweather store --help` and its usage errors
    from ioweather.store import probe as probe_store
    # lazy: numpy, sqlalchemy via store: commands.store imports this at its top: kept off `ioweather store --help` and its usage errors
    from ioweather.store import probe_pieces as pieces_store
    # lazy: numpy, sqlalchemy via store: commands.store imports this at its top: kept off `ioweather store --help` and its usage errors
    from ioweather.store.probe_aggregates import sample_range
    # lazy: numpy, sqlalchemy via store: commands.store imports this at its top: kept off `ioweather store --help` and its usage errors
    from ioweather.store.probe_pieces import DAY_NS

    if not probe_pieces.enabled(store):
        return 0  # MariaDB keeps no summaries: its raw samples are all there is (docs/store.md)
    built = 0
    for target in probe_store.targets(store):
        span = sample_range(store, target)
        if span is None:
            continue
        days = [(d, DAY_NS) for d in range((span[0] // DAY_NS) * DAY_NS, min(cutoff_ns, span[1] + 1), DAY_NS)
                if d + DAY_NS + probe_pieces.PIECE_LAG_NS <= now_ns]
        have = {(p["start_ns"], p["span_ns"]) for p in pieces_store.load(store, target, days, False, False)
                if p["op"] == probe_store.OPS[0]}
        for day in days:
            if day not in have:
                probe_pieces.build(store, target, *day)
                built += 1
    return built


def unlink_archived(store, paths: list[str]) -> list[tuple[str, str]]:
    """Remove archived probe files (paths relative to the archive directory) once their manifest rows are
    gone, through the store's no-follow walker; returns what it skipped (a link, a mount point) and why."""
    if store.parquet_dir is None:
        return []
    tree = StoreTree(store.parquet_dir)
    for rel in paths:
        tree.unlink(store.parquet_dir / rel)
    return tree.skipped


def _derived_rollups(store, apply: bool) -> int:
    """The dashboard's kept rollups (store/probe_rollups_file.py), derived from the summaries: removed when some are
    pruned or when `store prune --older-than` names an age (not by the daemons' hourly prune that removes nothing,
    which would make every dashboard restart rebuild it); a running dashboard writes it again when it stops.
    1 when there is one."""
    # lazy: as the store modules in `_run`: commands.store imports this module at its top
    from ioweather.store import probe_rollups_file

    path = probe_rollups_file.path_of(store)
    if path is None or not path.is_file() or path.is_symlink():
        return 0
    return probe_rollups_file.remove(path) if apply else 1
