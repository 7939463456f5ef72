"""Removing the server telemetry older than a limit (issues 30, 38 and 41: `store prune` and the daemons' retention).

Rows are judged by their own times, never by when their file was written: a day directory
(store/telemetry_layout.py) that ended by the cutoff goes whole, and in the day the cutoff falls in
a file holding rows on both sides is rewritten with only the rows from the cutoff on (a new file
that names the old one as replaced, as a compaction's does, so every reader counts each row once
at every instant; then the old file goes). Every count is of rows, from the files themselves.

Whose rows: `live_only` (the daemons' hourly retention, `store prune` without `--older-than`)
touches only what `collect` recorded live; an import's files (those of a writer with a marker in
`_imports/`) are history the admin brought in on purpose and stay until `store prune --older-than`
names an age. An import that is running (it holds its source's lock) is never touched: its lock is
taken for the time of the change, and its marker lists the files that remain, in the same step.

Walked with files.StoreTree: a link or mount point anywhere in the store is skipped and noted, a
file that cannot be read (damaged, truncated) is skipped and noted (`store check --repair` sets it
aside), and neither stops the other days' pruning.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ioweather.config import Settings
from ioweather.errors import StoreError, os_error_reason
from ioweather.files import StoreTree, atomic_output
from ioweather.store import telemetry_imports as imports
from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_rollup as rollup
from ioweather.store import telemetry_target_rollups as target_rollups

DAY_NS = layout.DAY_NS


@dataclass
class Pruned:
    """What a telemetry prune removed (or, in a dry run, would remove)."""

    rows: int = 0
    files: int = 0              # data files removed whole
    files_cut: int = 0          # files rewritten with their rows from the cutoff on
    imported_kept_rows: int = 0  # rows of imports older than the cutoff, kept (live_only)
    skipped: list = field(default_factory=list)  # (path, reason): links, mounts, unreadable files, running imports

    def as_dict(self) -> dict:
        return {"rows": self.rows, "files": self.files, "files_cut": self.files_cut,
                "imported_kept_rows": self.imported_kept_rows,
                "skipped": [{"path": p, "reason": r} for p, r in self.skipped]}


def prune_telemetry(settings: Settings, cutoff_ns: int, *, live_only: bool, apply: bool) -> Pruned:
    """Remove (with `apply`, else count) the telemetry rows older than `cutoff_ns`, file system by file system."""
    tree = StoreTree(settings.parquet_dir)
    out = Pruned()
    for base in tree.subdirs(layout.telemetry_dir(settings), lambda n: n.startswith("fs=")):
        _prune_dataset(tree, base, cutoff_ns, live_only, apply, out)
    out.skipped = tree.skipped + out.skipped
    return out


def _writer_of(name: str, markers: dict) -> str | None:
    return next((w for w in markers if name.startswith(w + "-")), None)


def _prune_dataset(tree: StoreTree, base: Path, cutoff_ns: int, live_only: bool, apply: bool, out: Pruned) -> None:
    markers = layout.import_markers(base)
    locks: dict[str, int | None] = {}
    try:
        for day in tree.subdirs(base, lambda n: n.startswith("date=")):
            day0 = layout._day_of_dir(day.name)
            if day0 is None or day0 >= cutoff_ns:
                continue
            files = tree.regular_files(day, lambda n: n.endswith(".parquet"))
            replaced = {n for f in files for n in layout.replaced_by(f)}
            whole: dict[str | None, list[tuple[Path, int, bool]]] = {}
            for f in files:
                writer = _writer_of(f.name, markers)
                if writer is not None and layout.uncommitted(f.name, markers):
                    continue  # a killed or running import's leftover: store check --repair's, not retention's
                if writer is not None and live_only:
                    if f.name not in replaced:
                        out.imported_kept_rows += _old_rows(f, day0, cutoff_ns, out) or 0
                    continue
                if writer is not None and apply and not _locked(base, writer, locks, out):
                    continue
                if day0 + DAY_NS <= cutoff_ns:  # the whole day is older
                    n = 0 if f.name in replaced else _footer_rows(f, out)
                    if n is not None:
                        whole.setdefault(writer, []).append((f, n, f.name not in replaced))
                elif f.name not in replaced:
                    _cut(tree, base, f, cutoff_ns, writer, markers, apply, out)
            for writer, gone in whole.items():
                if apply:
                    _forget(base, writer, markers, [f for f, _, _ in gone], [])
                for f, n, counted in gone:
                    if not apply or layout.remove_files([f], tree):
                        out.rows += n
                        out.files += counted
            if apply:
                for sub in ("_rollup", "_targets", "_targets_900s", "_targets_3600s"):
                    tree.rmdir(day / sub)
                tree.rmdir(day)  # only when empty: a file ioweather did not write keeps it
    finally:
        for fd in locks.values():
            if fd is not None:
                imports.unlock(fd)


def _locked(base: Path, writer: str, locks: dict, out: Pruned) -> bool:
    """Whether this prune holds the import source's lock (taken once per prune; a running import keeps its files)."""
    if writer not in locks:
        locks[writer] = imports.try_lock(base, writer)
        if locks[writer] is None:
            out.skipped.append((str(base / layout.IMPORTS_DIR / writer), "an import of it is running"))
    return locks[writer] is not None


def _footer_rows(f: Path, out: Pruned) -> int | None:
    try:
        return pq.read_metadata(f).num_rows
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException) as e:
        out.skipped.append((str(f), f"unreadable Parquet ({_reason(e, f)}); ioweather store check --repair sets it aside"))
        return None


def _reason(e: BaseException, f: Path) -> str:
    return os_error_reason(e, f) if isinstance(e, OSError) else str(e).strip().splitlines()[0][:200]


def _times(f: Path, out: Pruned):
    try:
        return pq.read_table(f, columns=["time_ns"]).column("time_ns")
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException) as e:
        out.skipped.append((str(f), f"unreadable Parquet ({_reason(e, f)}); ioweather store check --repair sets it aside"))
        return None


def _old_rows(f: Path, day0: int, cutoff_ns: int, out: Pruned) -> int | None:
    if day0 + DAY_NS <= cutoff_ns:
        return _footer_rows(f, out)
    t = _times(f, out)
    return None if t is None else int(pc.sum(pc.less(t, cutoff_ns)).as_py() or 0)


def _cut(tree: StoreTree, base: Path, f: Path, cutoff_ns: int, writer, markers, apply: bool, out: Pruned) -> None:
    """The rows of `f` before the cutoff: the whole file, none, or a rewrite keeping the rest."""
    t = _times(f, out)
    if t is None:
        return
    old = int(pc.sum(pc.less(t, cutoff_ns)).as_py() or 0)
    if old == 0:
        return
    if old == len(t):
        if apply:
            _forget(base, writer, markers, [f], [])
            if not layout.remove_files([f], tree):
                return
        out.rows += old
        out.files += 1
        return
    if apply:
        try:
            table = pq.read_table(f).select(layout.SCHEMA.names).cast(layout.SCHEMA)
        except (OSError, pa.ArrowException) as e:
            out.skipped.append((str(f), f"unreadable Parquet ({_reason(e, f)})"))
            return
        kept = table.filter(pc.greater_equal(table.column("time_ns"), cutoff_ns))
        new = _write_cut(f, kept)
        _forget(base, writer, markers, [f], [new])
        layout.remove_files([f], tree)
    out.rows += old
    out.files_cut += 1


def _write_cut(f: Path, kept: pa.Table) -> Path:
    """`kept` as a new file beside `f` that names `f` (and what `f` replaced) as replaced: from its
    rename on, readers count it instead of `f` (telemetry_layout.data_files), as for a compaction."""
    stem = f.name[:-len(".parquet")].rsplit("-", 1)[0]
    stem = stem[:-len("-compact")] if stem.endswith("-compact") else stem
    new = f.parent / f"{stem}{layout.COMPACT_TAG}{uuid.uuid4().hex[:12]}.parquet"
    replaces = [f.name] + layout.replaced_by(f)
    meta = {layout.REPLACES_KEY: "\n".join(replaces).encode()}
    try:
        with atomic_output(new, what="write") as out:
            pq.write_table(kept.replace_schema_metadata(meta), out, **layout.WRITE_OPTIONS)
    except OSError as e:
        raise StoreError(f"cannot write {new}: {os_error_reason(e, new)}") from None
    try:
        rollup.write(new, kept)
        target_rollups.write(new, kept)
    except OSError:
        pass  # a full disk: readers build the missing rollups from the rows (telemetry_query.plan_files)
    return new


def _forget(base: Path, writer: str | None, markers: dict, gone: list[Path], new: list[Path]) -> None:
    """The import marker of `writer` stops listing `gone` (and lists `new`) before they are removed:
    `store check` then never finds a marker naming a missing file (issue 41 item 4)."""
    if writer is None:
        return
    marker = markers[writer]
    names = {str(Path(p).relative_to(base)) for p in gone}
    files = [base / rel for rel in marker.get("files", []) if rel not in names] + list(new)
    imports.write_marker(base, writer, list(marker.get("runs", [])), files)
    marker["files"] = sorted(str(Path(p).relative_to(base)) for p in files)
