"""Content snapshots (METHODS.md section 5, seed 002 section IV-A): walk a tree into a snapshot,
keep it (file, HTML report, store label), compare two, list the stored ones.

Serves `ioweather fsstats DIR | diff A B | list`. Notes for the person at the terminal go to the
`say` callable the caller passes; results come back as documents for the caller to render.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable

from ioweather.errors import UserError, from_os_error

Say = Callable[[str], None]


def take_snapshot(directory, *, threads, cross_mounts, exclude, progress) -> tuple[dict, list[str]]:
    """(snapshot document, the walk's notes) of one walk of `directory`."""
    from ioweather import __version__
    from ioweather.sources.tree_walk import walk
    from ioweather.stats.fsstats import snapshot_document

    result = walk(directory, threads=threads, cross_mounts=cross_mounts, exclude=exclude, progress=progress)
    return snapshot_document(result, host=socket.gethostname(), version=__version__), list(result.notes)


def keep_snapshot(settings, doc: dict, *, out=None, html_out=None, label=None) -> int | None:
    """Write the snapshot to `out`, its HTML report to `html_out` and store it under `label`, each
    when given; returns the stored snapshot's id."""
    if out:
        from ioweather.store.snapshots import write_file

        write_file(out, doc)
    if html_out:
        _write_html(doc, html_out)
    if not label:
        return None
    from ioweather.store import open_store
    from ioweather.store.snapshots import save

    return save(open_store(settings), doc, label)


def _write_html(doc: dict, path) -> None:
    from ioweather.views.fsstats_report import render_html

    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(render_html(doc))
    except OSError as e:
        raise from_os_error(path, e, "write") from None


def load_snapshot(settings, ref: str) -> dict:
    """A snapshot by file path, else by store label."""
    from ioweather.store import open_store, snapshots

    if os.path.exists(ref):
        return snapshots.read_file(ref)
    doc = snapshots.load(open_store(settings), ref)
    if doc is None:
        raise UserError(f"{ref!r} is neither a snapshot file nor a stored label (see 'ioweather fsstats list')")
    return doc


def compare(settings, a: str, b: str, *, movers: int, say: Say) -> tuple[dict, dict, dict]:
    """(growth document with both sides named, snapshot A, snapshot B) from A to B (files or labels)."""
    from ioweather.stats.fsstats import growth

    da, db = load_snapshot(settings, a), load_snapshot(settings, b)
    if da["root"] != db["root"]:
        say(f"note: comparing different roots: {da['root']!r} and {db['root']!r}")
    g = growth(da, db, movers=movers)
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
