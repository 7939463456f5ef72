"""Content snapshots (METHODS.md section 5, seed 002 section IV-A): walk a tree into a snapshot,
keep it (file, HTML report, store label), compare two, list the stored ones.

Serves `ioweather fsstats DIR | diff A B | list`. Notes for the person at the terminal go to the
`say` callable the caller passes; results come back as documents for the caller to render.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from ioweather.errors import UserError

Say = Callable[[str], None]
#: How the outputs of `fsstats DIR` are named in their errors.
HTML_WHAT = "write HTML report"


def take_snapshot(directory, *, threads, cross_mounts, exclude, progress, outputs=()) -> tuple[dict, list[str]]:
    """(snapshot document, the walk's notes) of one walk of `directory`. `outputs`: (path, what) the
    snapshot will be written to, refused before the walk (a symlink there) rather than after it."""
    from ioweather import __version__
    from ioweather.files import check_destination

    for path, what in outputs:
        if path:
            check_destination(path, what=what)
    from ioweather.sources.tree_walk import walk
    from ioweather.stats.fsstats import snapshot_document

    result = walk(directory, threads=threads, cross_mounts=cross_mounts, exclude=exclude, progress=progress)
    return snapshot_document(result, host=socket.gethostname(), version=__version__), list(result.notes)


def keep_snapshot(settings, doc: dict, *, out=None, html_out=None, label=None) -> int | None:
    """Write the snapshot to `out`, its HTML report to `html_out` and store it under `label`, each
    when given; returns the stored snapshot's id."""
    if out:
        from ioweather.store.snapshots import write_file

        write_file(out, doc)  # store.snapshots.write_file: write_atomic too
    if html_out:
        _write_html(doc, html_out)
    if not label:
        return None
    from ioweather.store import open_store
    from ioweather.store.snapshots import save

    return save(open_store(settings), doc, label)


def _write_html(doc: dict, path) -> None:
    from ioweather.files import write_atomic
    from ioweather.views.fsstats_report import render_html

    write_atomic(path, render_html(doc), what=HTML_WHAT)


def load_snapshot(settings, ref: str, *, label_only: bool = False, say: Say | None = None) -> tuple[dict, str, str]:
    """(snapshot, what was used in words, identity) for `ref`: a snapshot file, a stored label (its
    newest snapshot) or a stored id as `fsstats list` prints it. With `label_only`, only a label.

    A path that exists wins over a label of the same name, except a directory (never a snapshot
    file): either way `say` is told which one was used, and that `--label` picks the label."""
    from ioweather.store import open_store, snapshots

    def stored(label: str) -> tuple[dict, str, str] | None:
        store = open_store(settings)
        doc = snapshots.load(store, label)
        if doc is None:
            return None
        sid = snapshots.newest_id(store, label)
        return doc, f"stored label {label!r} (id {sid})", f"id:{sid}"

    if not label_only and os.path.isfile(ref):
        if say and stored(ref) is not None:
            say(f"note: {ref!r} is the file ./{ref}; a stored label {ref!r} exists too: add --label to compare labels")
        return snapshots.read_file(ref), f"file {ref}", f"file:{os.path.realpath(ref)}"
    found = stored(ref)
    if found is not None:
        if say and not label_only and os.path.isdir(ref):
            say(f"note: {ref!r} is a directory here, not a snapshot file: using the {found[1]}")
        return found
    if not label_only and ref.lstrip("#").isdigit():
        hit = snapshots.load_id(open_store(settings), int(ref.lstrip("#")))
        if hit is not None:
            sid = int(ref.lstrip("#"))
            return hit[1], f"stored snapshot id {sid} (label {hit[0]!r})", f"id:{sid}"
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


def compare(settings, a: str, b: str, *, movers: int, say: Say, label_only: bool = False) -> tuple[dict, dict, dict]:
    """(growth document with both sides named, snapshot A, snapshot B) from A to B (files, labels or ids)."""
    from ioweather.stats.fsstats import growth

    (da, wa, ka), (db, wb, kb) = (load_snapshot(settings, r, label_only=label_only, say=say) for r in (a, b))
    say(f"comparing {wa} with {wb}")
    for line in comparison_warnings(da, db, same=ka == kb, what=wa):
        say(line)
    g = growth(da, db, movers=movers)
    # The same document as the Contents page's growth (its JSON twin equals `diff --json`): what was
    # used and the warnings go to `say` only.
    doc = {"a": {"root": da["root"], "snapshot_time": da["snapshot_time"], "source": a},
           "b": {"root": db["root"], "snapshot_time": db["snapshot_time"], "source": b}, **g}
    return doc, da, db


def stored_snapshots(settings) -> list[dict]:
    """The snapshots kept in the store, one JSON-ready row each."""
    from ioweather.store import open_store
    from ioweather.store.snapshots import listing
    from ioweather.units import ns_to_iso

    return [{"id": r["id"], "label": r["label"], "root": r["root"], "host": r["host"],
             "snapshot_time": ns_to_iso(r["snapshot_ns"]), "files": r["files"], "dirs": r["dirs"],
             "bytes": r["bytes"], "capacity_bytes": r["capacity_bytes"], "errors": r["errors"]}
            for r in listing(open_store(settings))]
