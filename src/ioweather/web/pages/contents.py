"""Contents: the labelled fsstats snapshots in the store — size and age CDFs by count and by bytes,
the per-project (first-level directory) table, owners, the snapshot list, and the growth between two labels.

A label names a series and resolves to its newest snapshot, as `ioweather fsstats diff` does; `id`
and `compare_id` open any stored snapshot (an older one of a label), as `fsstats diff ID` does. The
growth is `services.content.fsstats.growth_doc`, so the `diff` of the JSON twin is `ioweather fsstats diff COMPARE
LABEL --json`, and its `diff_warnings` are what that command says on stderr (different roots). The answer
is `services.content.fsstats.contents`; the page resolves which snapshots the request names.
"""

from __future__ import annotations

import re

from ioweather.services.content.fsstats import (Picked, contents, newest_snapshot_id, snapshot_by_id, snapshot_labels,
                                                snapshot_listing, SnapshotRow, StoredSnapshot)
from ioweather.web.context import WebContext
from ioweather.web.params import BadRequest, NotFound, Query
from ioweather.web.registry import Page

HINT = "Store a content snapshot with `ioweather fsstats DIR --label LABEL`, then reload this page."


def _listing(ctx: WebContext) -> list[SnapshotRow]:
    return snapshot_listing(ctx.store) if ctx.settings.store_exists() else []


def has_snapshots(ctx: WebContext) -> bool:
    return bool(_listing(ctx))


def _label(q: Query, name: str, labels: list[str], default: str | None) -> str | None:
    v = q.text(name, default)
    if v is not None and v not in labels:
        shown = ", ".join(repr(x) for x in labels[-20:])
        raise BadRequest(f"unknown {name} {v!r}; stored labels: {shown}")
    return v


def _by_id(ctx: WebContext, sid: int, name: str) -> StoredSnapshot:
    hit = snapshot_by_id(ctx.store, sid)
    if hit is None:  # never stored (as an unknown label), or removed between the listing and now
        raise BadRequest(f"no stored snapshot with {name} {sid} (see the list of stored snapshots)")
    return hit


def _resolve(ctx: WebContext, q: Query, labels: list[str], label_name: str, id_name: str,
             default: str | None) -> tuple[Picked, dict] | tuple[None, None]:
    """(which snapshot, its document) of the snapshot asked for by label (its newest) or by id."""
    raw = q.text(id_name)
    if raw is not None:
        if q.text(label_name) is not None:
            raise BadRequest(f"give {label_name} or {id_name}, not both")
        if not re.fullmatch(r"[0-9]{1,18}", raw):  # ASCII, and within SQLite's 64-bit integers
            raise BadRequest(f"{id_name} must be a snapshot id (a whole number, as listed), got {raw!r}")
        hit = _by_id(ctx, int(raw), id_name)
        return Picked(hit.id, hit.label, raw, f"stored snapshot id {raw} (label {hit.label!r})"), hit.document
    label = _label(q, label_name, labels, default)
    if label is None:
        return None, None
    sid = newest_snapshot_id(ctx.store, label)
    if sid is None:
        raise NotFound(f"snapshot {label!r} is not in the store any more")
    # by id: the document and the id stay one snapshot even if a newer one is stored meanwhile
    return Picked(sid, label, label, f"stored label {label!r} (id {sid})"), _by_id(ctx, sid, label_name).document


def contents_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("label", "compare", "id", "compare_id"))
    listing = _listing(ctx)
    if not listing:
        raise NotFound(f"No content snapshots in the store at {ctx.where}. {HINT}")
    labels = snapshot_labels(listing)
    this, doc = _resolve(ctx, q, labels, "label", "id", labels[0])
    other, a = _resolve(ctx, q, labels, "compare", "compare_id", None)
    return contents(listing, this, doc, other, a).to_json()


PAGE = Page(slug="contents", script="contents.js", title="Contents", data=contents_data,
            template="contents.html", available=has_snapshots, order=60,
            description="Content snapshots: file size and age distributions, projects, owners, growth.")
