"""Content snapshots (METHODS.md section 5, seed 002 section IV-A): walk a tree into a snapshot,
keep it (file, HTML report, store label), compare two, list the stored ones.

Serves `ioweather fsstats DIR | diff A B | list`. Notes for the person at the terminal go to the
`say` callable the caller passes; results come back as typed answers (`to_json()`) for the caller to render.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from ioweather import __version__
from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError
from ioweather.files import check_destination, write_atomic
from ioweather.services.runtime.distributed import connect, map_unordered
from ioweather.units import ns_to_iso

Say = Callable[[str], None]
#: How the outputs of `fsstats DIR` are named in their errors.
HTML_WHAT = "write HTML report"


@dataclass(frozen=True)
class Bucket:
    """A histogram bucket [min, max) in the histogram's unit: its items, their st_size (`bytes`), the sum of
    their values and, for ages, the byte-weighted sum of ages (`byte_days`; None and absent otherwise)."""

    min: int | float
    max: int | float
    count: int
    bytes: int
    sum: int | float
    byte_days: float | None = None

    def to_json(self) -> dict:
        out = {"min": self.min, "max": self.max, "count": self.count, "bytes": self.bytes, "sum": self.sum}
        if self.byte_days is not None:
            out["byte_days"] = self.byte_days
        return out


@dataclass(frozen=True)
class Histogram:
    """One histogram of a walk (stats.fsstats.histogram): its unit, summary (count, min, max, mean; None
    without an item) and the buckets from the first non-empty one to the last."""

    unit: str
    count: int
    min: int | float | None
    max: int | float | None
    mean: float | None
    buckets: tuple[Bucket, ...]

    @classmethod
    def of(cls, doc: dict) -> Histogram:
        return cls(doc["unit"], doc["count"], doc["min"], doc["max"], doc["mean"],
                   tuple(Bucket(**b) for b in doc["buckets"]))

    def to_json(self) -> dict:
        return {"unit": self.unit, "count": self.count, "min": self.min, "max": self.max, "mean": self.mean,
                "buckets": [b.to_json() for b in self.buckets]}


@dataclass(frozen=True)
class OverheadSide:
    """One side of the overhead (positive: capacity >= size; negative: size > capacity): its items, the sum
    of their overheads and the smallest and largest (magnitudes, bytes)."""

    count: int
    sum: int
    min: int | None
    max: int | None


@dataclass(frozen=True)
class OverheadBucket:
    """A bucket of the overhead histogram (by the items' size, log2 bytes): items, their st_size, the
    signed overhead sum and each side's items and sum."""

    min: int
    max: int
    count: int
    bytes: int
    sum: int
    positive_count: int
    positive_sum: int
    negative_count: int
    negative_sum: int


@dataclass(frozen=True)
class OverheadHistogram:
    """Capacity minus size of every inode (stats.fsstats.overhead_histogram): the signed summary, each
    side's, and the buckets by size."""

    unit: str
    bucketed_by: str
    count: int
    min: int | None
    max: int | None
    mean: float | None
    positive: OverheadSide
    negative: OverheadSide
    buckets: tuple[OverheadBucket, ...]

    @classmethod
    def of(cls, doc: dict) -> OverheadHistogram:
        return cls(doc["unit"], doc["bucketed_by"], doc["count"], doc["min"], doc["max"], doc["mean"],
                   OverheadSide(**doc["positive"]), OverheadSide(**doc["negative"]),
                   tuple(OverheadBucket(**b) for b in doc["buckets"]))

    def to_json(self) -> dict:
        return {**{k: getattr(self, k) for k in ("unit", "bucketed_by", "count", "min", "max", "mean")},
                "positive": answer_dict(self.positive), "negative": answer_dict(self.negative),
                "buckets": [answer_dict(b) for b in self.buckets]}


@dataclass(frozen=True)
class Histograms:
    """Every histogram of a walk, by its JSON name (stats.fsstats.HISTOGRAMS, then the overhead)."""

    file_size: Histogram
    capacity: Histogram
    dir_entries: Histogram
    name_length: Histogram
    link_count: Histogram
    atime_age_days: Histogram
    mtime_age_days: Histogram
    ctime_age_days: Histogram
    dir_size: Histogram
    symlink_target_length: Histogram
    overhead: OverheadHistogram

    @classmethod
    def of(cls, doc: dict) -> Histograms:
        return cls(**{k: (OverheadHistogram if k == "overhead" else Histogram).of(v) for k, v in doc.items()})

    def to_json(self) -> dict:
        return answer_dict(self)


@dataclass(frozen=True)
class OwnerTotal:
    """An owner of a walk's entries: uid, user name (None when the uid has none here), files, bytes
    (apparent, allocated)."""

    uid: int
    user: str | None
    files: int
    bytes: int
    capacity_bytes: int


@dataclass(frozen=True)
class SizeCounts:
    """A directory's file sizes, log2 buckets from 0 (trailing empty ones dropped): files and bytes per bucket."""

    count: list[int]
    bytes: list[int]


@dataclass(frozen=True)
class DirCounts:
    """A first-level directory of a walk: files, bytes (apparent, allocated), directories and newest
    modification (ISO 8601 UTC, None without a file)."""

    name: str
    files: int
    bytes: int
    capacity_bytes: int
    dirs: int
    newest_mtime: str | None


@dataclass(frozen=True)
class DirTotal(DirCounts):
    """A first-level directory of a snapshot (`DirCounts`) and its file sizes (None when not counted)."""

    file_size_log2: SizeCounts | None

    @classmethod
    def of(cls, doc: dict) -> DirTotal:
        sizes = doc["file_size_log2"]
        return cls(**{**doc, "file_size_log2": None if sizes is None else SizeCounts(**sizes)})


@dataclass(frozen=True)
class Snapshot(Answer):
    """What a tree holds, from one walk (`fsstats DIR --json`, the file `--out` writes and what `--label`
    stores, format `stats.fsstats.SNAPSHOT_FORMAT`): counts, bytes (`bytes` apparent, `capacity_bytes`
    allocated), the walk's time (ISO 8601 UTC) and speed (seconds, entries per second), the size and age
    histograms, owners and first-level directories (`top_dirs`), and what could not be read. A stored or
    saved snapshot is read back as its JSON document (older ones may lack newer keys), never as this."""

    format: str
    root: str
    root_is_symlink: bool
    symlink_target: str | None
    snapshot_time: str
    host: str
    ioweather_version: str
    threads: int
    cross_mounts: bool
    exclude: list[str]
    walk_s: float
    entries: int
    entries_per_s: float | None
    files: int
    dirs: int
    symlinks: int
    other: int
    bytes: int
    capacity_bytes: int
    errors: int
    hardlinks_deduplicated: int
    excluded: int
    skipped_mounts: int
    error_list: list
    notes: list[str]
    histograms: Histograms
    owners: tuple[OwnerTotal, ...]
    top_dirs: tuple[DirTotal, ...]

    @classmethod
    def of(cls, doc: dict) -> Snapshot:
        """The answer of `stats.fsstats.snapshot_document`'s document."""
        return cls(**{**doc, "histograms": Histograms.of(doc["histograms"]),
                      "owners": tuple(OwnerTotal(**o) for o in doc["owners"]),
                      "top_dirs": tuple(DirTotal.of(d) for d in doc["top_dirs"])})

    def to_json(self) -> dict:
        """The snapshot document (what `--out` writes and `--label` stores)."""
        return {**answer_dict(self), "owners": [answer_dict(o) for o in self.owners],
                "top_dirs": [answer_dict(d) for d in self.top_dirs]}


def take_snapshot(directory, *, threads, cross_mounts, exclude, progress, outputs=(),
                  dask: str | None = None) -> tuple[Snapshot, list[str]]:
    """(snapshot, the walk's notes) of one walk of `directory`. `outputs`: (path, what) the
    snapshot will be written to, refused before the walk (a symlink there) rather than after it.
    `dask` (a `--dask` SPEC, services/runtime/distributed.py): each first-level directory is walked by a
    task on the cluster (whose workers must see DIR at the same path), merged into the document
    one walk gives (sources/tree_walk_parts.py)."""
    for path, what in outputs:
        if path:
            check_destination(path, what=what)
    # lazy: numpy via sources.tree_walk: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.sources.tree_walk import walk
    # lazy: numpy via stats.fsstats: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.stats.fsstats import snapshot_document

    extra: list[str] = []
    result = None
    if dask:
        result, extra = _distributed_walk(directory, threads=threads, cross_mounts=cross_mounts,
                                          exclude=list(exclude), progress=progress, dask=dask)
    if result is None:
        result = walk(directory, threads=threads, cross_mounts=cross_mounts, exclude=exclude, progress=progress)
    doc = snapshot_document(result, host=socket.gethostname(), version=__version__)
    return Snapshot.of(doc), list(result.notes) + extra


def walk_part(name: bytes, *, root: bytes, snap_ns: int, threads, cross_mounts: bool, patterns: list[str]):
    """Dask task: the walk of the first-level directory `name` of `root` (ages from `snap_ns`)."""
    # lazy: numpy via sources.tree_walk_parts: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.sources import tree_walk_parts as parts

    path = root.rstrip(b"/") + b"/" + name
    try:
        return parts.walk_at(path, snap_ns, threads=threads, cross_mounts=cross_mounts,
                             patterns=parts.part_patterns(patterns, name))
    except OSError as e:  # what one walk records of a directory it cannot open
        return parts.unopened(path, snap_ns, e.errno or 0, threads=threads, cross_mounts=cross_mounts)


def _distributed_walk(directory, *, threads, cross_mounts: bool, exclude: list[str], progress, dask: str):
    """(merged walk result, notes) with each first-level directory walked on the cluster; (None, [])
    when DIR has nothing to split (the caller walks it here)."""
    # lazy: numpy via sources.tree_walk_parts: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.sources import tree_walk_parts as parts
    # lazy: numpy via sources.tree_walk: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.sources.tree_walk import default_threads

    for p in exclude:
        if not p.strip("/"):
            raise UserError(f"empty --exclude pattern {p!r}")
    plan = parts.plan(directory, cross_mounts=cross_mounts, exclude=exclude)
    if plan is None:
        return None, []
    threads = threads or default_threads()
    got: dict[bytes, object] = {}
    done = {"entries": 0, "errors": 0}

    def on_result(name, res):
        got[name] = res
        done["entries"] += res.totals["entries"]
        done["errors"] += res.totals["errors"]
        if progress:
            progress(done["entries"], done["errors"], len(plan.parts) - len(got))

    def on_crash(name, reason):
        raise UserError(f"fsstats: the walk of {os.fsdecode(name)!r} {reason}; no snapshot was made")

    with connect(dask) as client:
        t0 = time.perf_counter()
        snap_ns = time.time_ns()
        map_unordered(client, walk_part, [name for name, _ in plan.parts], on_result, on_crash,
                      kwargs={"root": plan.root, "snap_ns": snap_ns, "threads": threads,
                              "cross_mounts": cross_mounts, "patterns": exclude},
                      crash_reason="killed every Dask worker it ran on")
    missing = [n for n, _ in plan.parts if n not in got]
    if missing:  # map_unordered hands every item to on_result or on_crash: a bug, never a result
        raise RuntimeError(f"Dask returned no walk of {missing[:3]}")
    return merge_walks(plan, got, snap_ns, threads=threads, cross_mounts=cross_mounts, exclude=exclude, t0=t0)


def merge_walks(plan, got: dict, snap_ns: int, *, threads: int, cross_mounts: bool, exclude: list[str], t0: float):
    """The root's own walk, then the parts' walks `got` (name -> walk) merged with it: (result, notes),
    or (None, notes) when DIR must be walked as one walk instead."""
    # lazy: numpy via sources.tree_walk_parts: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.sources import tree_walk_parts as parts

    root = parts.walk_at(plan.root, snap_ns, threads=threads, cross_mounts=cross_mounts, patterns=plan.root_patterns)
    walks = [got[n] for n, _ in plan.parts]
    if parts.shared_links(root, walks):
        # hard-linked files met by two walks may be one inode, counted twice: one walk here
        # counts every inode once (exact, at the price of this walk)
        return None, ["hard-linked files in more than one first-level directory (or beside them): "
                      "walked here as one walk, so that each inode counts once"]
    if not parts.entered_only_root(root):
        return None, ["the first-level directories changed during the walk: walked again here as one walk"]
    merged = parts.merge(plan, root, walks, threads=threads, walk_s=time.perf_counter() - t0, exclude=exclude)
    return merged, []


def keep_snapshot(settings, doc: dict, *, out=None, html_out=None, label=None) -> int | None:
    """Write the snapshot to `out`, its HTML report to `html_out` and store it under `label`, each
    when given; returns the stored snapshot's id."""
    if out:
        # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
        from ioweather.store.snapshots import write_file

        write_file(out, doc)  # store.snapshots.write_file: write_atomic too
    if html_out:
        _write_html(doc, html_out)
    if not label:
        return None
    # lazy: sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import open_store
    # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store.snapshots import save

    return save(open_store(settings), doc, label)


def _write_html(doc: dict, path) -> None:
    # lazy: jinja2, numpy via views.fsstats_report: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.views.fsstats_report import render_html

    write_atomic(path, render_html(doc), what=HTML_WHAT)


@dataclass(frozen=True)
class LoadedSnapshot:
    """A snapshot read back: its `document` (the JSON a walk wrote, format `stats.fsstats.SNAPSHOT_FORMAT`,
    checked by `store.snapshots.check_document`: kept as the document, since a saved or hand-edited file
    and an older store's snapshot may lack the keys newer walks add), what was used in words (`what`: a
    file, a stored label and its id, a stored id and its label) and its `identity` ("file:PATH", "id:N"),
    equal for two references to one snapshot."""

    document: dict
    what: str
    identity: str


def load_snapshot(settings, ref: str, *, label_only: bool = False, say: Say | None = None) -> LoadedSnapshot:
    """The snapshot `ref` names: a snapshot file, a stored label (its newest snapshot) or a stored id as
    `fsstats list` prints it. With `label_only`, only a label.

    A path that exists wins over a label of the same name, except a directory (never a snapshot
    file): either way `say` is told which one was used, and that `--label` picks the label."""
    # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import open_store, snapshots

    def stored(label: str) -> LoadedSnapshot | None:
        store = open_store(settings)
        doc = snapshots.load(store, label)
        if doc is None:
            return None
        sid = snapshots.newest_id(store, label)
        return LoadedSnapshot(doc, f"stored label {label!r} (id {sid})", f"id:{sid}")

    if not label_only and os.path.isfile(ref):
        if say and stored(ref) is not None:
            say(f"note: {ref!r} is the file ./{ref}; a stored label {ref!r} exists too: add --label to compare labels")
        return LoadedSnapshot(snapshots.read_file(ref), f"file {ref}", f"file:{os.path.realpath(ref)}")
    found = stored(ref)
    if found is not None:
        if say and not label_only and os.path.isdir(ref):
            say(f"note: {ref!r} is a directory here, not a snapshot file: using the {found.what}")
        return found
    if not label_only and ref.lstrip("#").isdigit():
        hit = snapshots.load_id(open_store(settings), int(ref.lstrip("#")))
        if hit is not None:
            sid = int(ref.lstrip("#"))
            return LoadedSnapshot(hit[1], f"stored snapshot id {sid} (label {hit[0]!r})", f"id:{sid}")
    if label_only:
        raise UserError(f"no stored label {ref!r} (see 'ioweather fsstats list')")
    raise UserError(f"{ref!r} is neither a snapshot file nor a stored label (nor an id; see 'ioweather fsstats list')")


def comparison_warnings(da: dict, db: dict, *, same: bool, what: str) -> list[str]:
    """What `fsstats diff` and the Contents page say before a growth that means less than it seems."""
    out = []
    if same:
        out.append(f"note: A and B are the same snapshot ({what}): every change is zero")
    if da["root"] != db["root"]:
        out.append(f"warning: comparing different roots: {da['root']!r} and {db['root']!r}; "
                   "the growth is not that of one tree")
    return out


@dataclass(frozen=True)
class GrowthSide:
    """One side of a growth: the snapshot's root, its time (ISO 8601 UTC) and what the user gave for it."""

    root: str
    snapshot_time: str
    source: str


@dataclass(frozen=True)
class GrowthTotal:
    """A tree's totals at A and at B (`_a`, `_b`: bytes apparent, `capacity_bytes` allocated, counts), each
    with its change B - A and that change in % of A (None when A is 0)."""

    bytes_a: int
    bytes_b: int
    bytes_change: int
    bytes_change_pct: float | None
    files_a: int
    files_b: int
    files_change: int
    files_change_pct: float | None
    capacity_bytes_a: int
    capacity_bytes_b: int
    capacity_bytes_change: int
    capacity_bytes_change_pct: float | None
    dirs_a: int
    dirs_b: int
    dirs_change: int
    dirs_change_pct: float | None
    symlinks_a: int
    symlinks_b: int
    symlinks_change: int
    symlinks_change_pct: float | None
    other_a: int
    other_b: int
    other_change: int
    other_change_pct: float | None


@dataclass(frozen=True)
class DirGrowth:
    """A first-level directory's growth: its `name`, its bytes, files and allocated bytes at A and B with
    their changes (as GrowthTotal's), its share in % of the tree's change in bytes and in files (None when
    the tree's is 0), and whether it is in both snapshots, `new` in B or `gone` from it."""

    name: str
    bytes_a: int
    bytes_b: int
    bytes_change: int
    bytes_change_pct: float | None
    files_a: int
    files_b: int
    files_change: int
    files_change_pct: float | None
    capacity_bytes_a: int
    capacity_bytes_b: int
    capacity_bytes_change: int
    capacity_bytes_change_pct: float | None
    share_of_bytes_change_pct: float | None
    share_of_files_change_pct: float | None
    status: str


@dataclass(frozen=True)
class OwnerGrowth:
    """An owner's growth (`uid`, `user` as the newer snapshot names it): as DirGrowth's."""

    uid: int
    user: str | None
    bytes_a: int
    bytes_b: int
    bytes_change: int
    bytes_change_pct: float | None
    files_a: int
    files_b: int
    files_change: int
    files_change_pct: float | None
    capacity_bytes_a: int
    capacity_bytes_b: int
    capacity_bytes_change: int
    capacity_bytes_change_pct: float | None
    share_of_bytes_change_pct: float | None
    share_of_files_change_pct: float | None
    status: str


@dataclass(frozen=True)
class Movers:
    """The directories (names) and owners (uids) that changed most, by bytes and by files, biggest first."""

    top_dirs_by_bytes: list[str]
    top_dirs_by_files: list[str]
    owners_by_bytes: list[int]
    owners_by_files: list[int]


@dataclass(frozen=True)
class Growth(Answer):
    """How a tree grew from snapshot A to B (seed 002 Table IV): `fsstats diff --json` and the Contents
    page's `diff`. `a` and `b` name each side (root, ISO 8601 UTC snapshot time, what the user gave);
    `interval_s` is seconds between them; `total` the counts and bytes at A and B with their changes
    (and %); `files_per_day`/`bytes_per_day` the change per day (None over no time); `top_dirs` and
    `owners` the same per first-level directory and per owner; `largest_movers` their names, biggest first."""

    a: GrowthSide
    b: GrowthSide
    interval_s: float
    total: GrowthTotal
    files_per_day: float | None
    bytes_per_day: float | None
    top_dirs: list[DirGrowth]
    owners: list[OwnerGrowth]
    largest_movers: Movers

    def to_json(self) -> dict:
        # answer_dict leaves list items as they are: the rows are dataclasses too
        return {**answer_dict(self), "top_dirs": [answer_dict(r) for r in self.top_dirs],
                "owners": [answer_dict(r) for r in self.owners]}


def compare(settings, a: str, b: str, *, movers: int, say: Say, label_only: bool = False) -> Growth:
    """`fsstats diff`'s answer: the growth from snapshot A to B (files, labels or ids), both sides named."""
    sa, sb = (load_snapshot(settings, r, label_only=label_only, say=say) for r in (a, b))
    say(f"comparing {sa.what} with {sb.what}")
    for line in comparison_warnings(sa.document, sb.document, same=sa.identity == sb.identity, what=sa.what):
        say(line)
    # what was used and the warnings go to `say` only
    return growth_doc(sa.document, sb.document, a, b, movers=movers)


def growth_doc(da: dict, db: dict, source_a: str, source_b: str, *, movers: int) -> Growth:
    """The growth from snapshot A to B with both sides named: `fsstats diff --json` and the Contents
    page's `diff` (its JSON twin equals the command's)."""
    # lazy: numpy via stats.fsstats: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.stats.fsstats import growth

    g = growth(da, db, movers=movers)
    return Growth(a=GrowthSide(da["root"], da["snapshot_time"], source_a),
                  b=GrowthSide(db["root"], db["snapshot_time"], source_b), interval_s=g["interval_s"],
                  total=GrowthTotal(**g["total"]), files_per_day=g["files_per_day"], bytes_per_day=g["bytes_per_day"],
                  top_dirs=[DirGrowth(**r) for r in g["top_dirs"]], owners=[OwnerGrowth(**r) for r in g["owners"]],
                  largest_movers=Movers(**g["largest_movers"]))


@dataclass(frozen=True)
class SnapshotRow:
    """A stored snapshot as `fsstats list` shows it: its id and label, the tree's root, the host that walked
    it, when (ISO 8601 UTC), its totals (`bytes` apparent, `capacity_bytes` allocated) and unread entries."""

    id: int
    label: str
    root: str
    host: str
    snapshot_time: str
    files: int
    dirs: int
    bytes: int
    capacity_bytes: int
    errors: int


@dataclass(frozen=True)
class SnapshotListing:
    """`fsstats list`'s answer: the stored snapshots, oldest first; its JSON is the list of rows."""

    rows: list[SnapshotRow]

    def to_json(self) -> list[dict]:
        return [answer_dict(r) for r in self.rows]


def stored_snapshots(settings) -> SnapshotListing:
    """The snapshots kept in the store (`fsstats list`)."""
    # lazy: sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import open_store

    return SnapshotListing(_listing(open_store(settings)))


def snapshot_listing(store) -> list[SnapshotRow]:
    """The snapshots kept in `store`, oldest first (none before the first: the page writes nothing)."""
    # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import snapshots

    return _listing(store) if snapshots.COMPONENT.name in store.versions() else []


def _listing(store) -> list[SnapshotRow]:
    # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import snapshots
    return [SnapshotRow(id=r["id"], label=r["label"], root=r["root"], host=r["host"],
                        snapshot_time=ns_to_iso(r["snapshot_ns"]), files=r["files"], dirs=r["dirs"], bytes=r["bytes"],
                        capacity_bytes=r["capacity_bytes"], errors=r["errors"])
            for r in snapshots.listing(store)]


@dataclass(frozen=True)
class StoredSnapshot:
    """A stored snapshot by id: its label and its document (as `LoadedSnapshot.document`)."""

    id: int
    label: str
    document: dict


def snapshot_by_id(store, sid: int) -> StoredSnapshot | None:
    """Stored snapshot `sid`, None when there is none."""
    # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import snapshots

    hit = snapshots.load_id(store, sid)
    return None if hit is None else StoredSnapshot(sid, hit[0], hit[1])


def newest_snapshot_id(store, label: str) -> int | None:
    """The id of the newest snapshot stored under `label`."""
    # lazy: numpy, sqlalchemy via store: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.store import snapshots

    return snapshots.newest_id(store, label)


#: The Contents page's CDFs: histogram of the snapshot -> what its x axis is.
CDFS = {"file_size": "bytes", "atime_age_days": "days", "mtime_age_days": "days"}


@dataclass(frozen=True)
class Cdf:
    """One histogram of a snapshot as a CDF: in `unit` (bytes, days), each bucket's `upper_bound` with the
    cumulative share of entries (`by_count`) and of bytes (`by_bytes`) up to it (fractions); the histogram's
    `count` and its `min`, `max` and `mean` (None without an entry)."""

    unit: str
    upper_bound: list[float]
    by_count: list[float]
    by_bytes: list[float]
    count: int
    min: float | None
    max: float | None
    mean: float | None


def snapshot_cdfs(doc: dict) -> dict[str, Cdf]:
    """Size and age CDFs of a snapshot (by histogram: CDFS), by count and by bytes, with each histogram's
    count and range."""
    # lazy: numpy via stats.fsstats: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.stats import fsstats as fs

    out = {}
    for key, unit in CDFS.items():
        h = doc["histograms"][key]
        x, by_count = fs.cdf(h, "count")
        _, by_bytes = fs.cdf(h, "bytes")
        out[key] = Cdf(unit=unit, upper_bound=x.tolist(), by_count=by_count.tolist(), by_bytes=by_bytes.tolist(),
                       count=h["count"], min=h["min"], max=h["max"], mean=h["mean"])
    return out


@dataclass(frozen=True)
class SizeBucket:
    """A bucket of the file size histogram: its bounds (bytes), files and bytes in it."""

    min: int
    max: int | None
    count: int
    bytes: int


@dataclass(frozen=True)
class Highlights:
    """What the Contents page says first: the most popular file size bucket (None without a file), the
    shares (fractions) of files and of bytes in files below 1 MiB, and fsstats' overhead (the share of the
    capacity used that is not data)."""

    most_popular_size: SizeBucket | None
    files_below_1mib: float | None
    bytes_in_files_below_1mib: float | None
    overhead: float


def snapshot_highlights(doc: dict) -> Highlights:
    """The most popular file size bucket, the shares of files and bytes below 1 MiB and the fsstats overhead."""
    # lazy: numpy via stats.fsstats: commands.fsstats imports this at its top: kept off `ioweather fsstats --help` and its usage errors
    from ioweather.stats import fsstats as fs

    size = doc["histograms"]["file_size"]
    top = fs.largest_bucket(size)
    return Highlights(most_popular_size=top and SizeBucket(**{k: top[k] for k in ("min", "max", "count", "bytes")}),
                      files_below_1mib=fs.fraction_below(size, 2**20),
                      bytes_in_files_below_1mib=fs.fraction_below(size, 2**20, "bytes"),
                      overhead=fs.fsstats_overhead(doc["bytes"], doc["capacity_bytes"]))


#: How many rows of each table the Contents page carries.
PROJECTS_SHOWN = 200
OWNERS_SHOWN = 50
ERRORS_SHOWN = 20
MOVERS = 10
#: The snapshot's own fields the Contents page shows (its header).
SNAPSHOT_FIELDS = ("root", "snapshot_time", "host", "entries", "walk_s", "threads", "files", "dirs", "symlinks",
                   "other", "bytes", "capacity_bytes", "errors", "hardlinks_deduplicated", "excluded",
                   "skipped_mounts", "notes")


@dataclass(frozen=True)
class SnapshotHeader:
    """The snapshot's own fields the Contents page shows (its header: SNAPSHOT_FIELDS, in that order), as
    the stored document has them; None for a key an older snapshot lacks."""

    root: str | None
    snapshot_time: str | None
    host: str | None
    entries: int | None
    walk_s: float | None
    threads: int | None
    files: int | None
    dirs: int | None
    symlinks: int | None
    other: int | None
    bytes: int | None
    capacity_bytes: int | None
    errors: int | None
    hardlinks_deduplicated: int | None
    excluded: int | None
    skipped_mounts: int | None
    notes: list[str] | None

    @classmethod
    def of(cls, doc: dict) -> SnapshotHeader:
        return cls(**{k: doc.get(k) for k in SNAPSHOT_FIELDS})


@dataclass(frozen=True)
class Picked:
    """A stored snapshot as a request named it: its id, label, what the user gave (`source`, a label or
    an id) and how to say which snapshot that was (`what`)."""

    id: int
    label: str
    source: str
    what: str


@dataclass(frozen=True)
class ProjectShare(DirCounts):
    """A first-level directory of a snapshot on the Contents page (`DirCounts`) and its shares (fractions)
    of the snapshot's files and bytes (None when the snapshot has none)."""

    files_share: float | None
    bytes_share: float | None


@dataclass(frozen=True)
class OwnerShare:
    """An owner of a snapshot's files on the Contents page (`user` None when the uid has no name there):
    files, bytes (apparent, allocated) and the share (a fraction) of the snapshot's bytes."""

    uid: int
    user: str | None
    files: int
    bytes: int
    capacity_bytes: int
    bytes_share: float | None


@dataclass(frozen=True)
class Contents(Answer):
    """The Contents page's answer (/api/contents): one stored snapshot (`snapshot_id`, of `label`;
    `newest_of_label` whether a newer one of that label exists), its header fields, highlights, size and
    age CDFs (bytes, days), first-level directories (`projects`, the first PROJECTS_SHOWN of
    `projects_total`) and owners with their shares (fractions of the snapshot's files and bytes), its
    first read errors; with a `compare` snapshot, the growth from it (`diff`, `fsstats diff --json`)
    and what that command would warn (`diff_warnings`). `labels` (newest first) and `snapshots` (oldest
    first) are the store's, for choosing another."""

    label: str
    compare: str | None
    labels: list[str]
    snapshots: list[SnapshotRow]
    snapshot_id: int
    newest_of_label: bool
    compare_id: int | None
    diff_warnings: list[str]
    snapshot: SnapshotHeader
    highlights: Highlights
    cdfs: dict[str, Cdf]
    projects_total: int
    projects: list[ProjectShare]
    owners_total: int
    owners: list[OwnerShare]
    errors: list
    diff: Growth | None

    def to_json(self) -> dict:
        # answer_dict leaves list items and mapping values as they are: the rows and CDFs are dataclasses too
        return {**answer_dict(self), "snapshots": [answer_dict(r) for r in self.snapshots],
                "cdfs": {k: answer_dict(c) for k, c in self.cdfs.items()},
                "projects": [answer_dict(r) for r in self.projects], "owners": [answer_dict(r) for r in self.owners]}


def _share(part, whole) -> float | None:
    return part / whole if whole else None


def snapshot_labels(listing: list[SnapshotRow]) -> list[str]:
    """The labels of `snapshot_listing`, newest first."""
    return list(dict.fromkeys(r.label for r in reversed(listing)))


def contents(listing: list[SnapshotRow], this: Picked, doc: dict, other: Picked | None, a: dict | None) -> Contents:
    """The Contents page for snapshot `doc` (picked as `this`) and, when `other` is given, the growth
    from snapshot `a` to it; `listing` is `snapshot_listing`'s."""
    newest = {r.label: r.id for r in listing}  # oldest first: the last id of a label is its newest
    return Contents(
        label=this.label, compare=other and other.label, labels=snapshot_labels(listing), snapshots=listing,
        snapshot_id=this.id, newest_of_label=newest.get(this.label) == this.id,
        compare_id=other and other.id,
        diff_warnings=[] if other is None else comparison_warnings(a, doc, same=other.id == this.id,
                                                                   what=other.what),
        snapshot=SnapshotHeader.of(doc),
        highlights=snapshot_highlights(doc),
        cdfs=snapshot_cdfs(doc),
        projects_total=len(doc["top_dirs"]),
        projects=[ProjectShare(**{k: d[k] for k in ("name", "files", "bytes", "capacity_bytes", "dirs", "newest_mtime")},
                               files_share=_share(d["files"], doc["files"]), bytes_share=_share(d["bytes"], doc["bytes"]))
                  for d in doc["top_dirs"][:PROJECTS_SHOWN]],
        owners_total=len(doc["owners"]),
        owners=[OwnerShare(**{k: o[k] for k in ("uid", "user", "files", "bytes", "capacity_bytes")},
                           bytes_share=_share(o["bytes"], doc["bytes"])) for o in doc["owners"][:OWNERS_SHOWN]],
        errors=doc["error_list"][:ERRORS_SHOWN],
        diff=None if other is None else growth_doc(a, doc, other.source, this.source, movers=MOVERS),
    )
