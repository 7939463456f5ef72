"""Contents: the labelled fsstats snapshots in the store — size and age CDFs by count and by bytes,
the per-project (first-level directory) table, owners, the snapshot list, and the growth between two labels.

A label names a series and resolves to its newest snapshot (`store.snapshots.load`), as
`ioweather fsstats diff` does; the growth is `stats.fsstats.growth`, so the `diff` of the
JSON twin is `ioweather fsstats diff COMPARE LABEL --json`.
"""

from __future__ import annotations

from ioweather.stats import fsstats as fs
from ioweather.store import snapshots
from ioweather.units import ns_to_iso
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_component
from ioweather.web.params import BadRequest, NotFound, Query
from ioweather.web.registry import Page

HINT = "Store a content snapshot with `ioweather fsstats DIR --label LABEL`, then reload this page."
PROJECTS_SHOWN = 200
OWNERS_SHOWN = 50
MOVERS = 10
#: CDFs drawn: histogram of the snapshot -> what its x axis is.
CDFS = {"file_size": "bytes", "atime_age_days": "days", "mtime_age_days": "days"}


def _listing(ctx: WebContext) -> list[dict]:
    if not has_component(ctx, snapshots.COMPONENT):
        return []
    return [{"id": r["id"], "label": r["label"], "root": r["root"], "host": r["host"],
             "snapshot_time": ns_to_iso(r["snapshot_ns"]), "files": r["files"], "dirs": r["dirs"],
             "bytes": r["bytes"], "capacity_bytes": r["capacity_bytes"], "errors": r["errors"]}
            for r in snapshots.listing(ctx.store)]


def has_snapshots(ctx: WebContext) -> bool:
    return bool(_listing(ctx))


def _label(q: Query, name: str, labels: list[str], default: str | None) -> str | None:
    v = q.text(name, default)
    if v is not None and v not in labels:
        shown = ", ".join(repr(x) for x in labels[-20:])
        raise BadRequest(f"unknown {name} {v!r}; stored labels: {shown}")
    return v


def _load(ctx: WebContext, label: str) -> dict:
    doc = snapshots.load(ctx.store, label)
    if doc is None:  # removed between the listing and now
        raise NotFound(f"snapshot {label!r} is not in the store any more")
    return doc


def _cdfs(doc: dict) -> dict:
    out = {}
    for key, unit in CDFS.items():
        h = doc["histograms"][key]
        x, by_count = fs.cdf(h, "count")
        _, by_bytes = fs.cdf(h, "bytes")
        out[key] = {"unit": unit, "upper_bound": x.tolist(), "by_count": by_count.tolist(), "by_bytes": by_bytes.tolist(),
                    "count": h["count"], "min": h["min"], "max": h["max"], "mean": h["mean"]}
    return out


def _share(part, whole) -> float | None:
    return part / whole if whole else None


def contents_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("label", "compare"))
    listing = _listing(ctx)
    if not listing:
        raise NotFound(f"No content snapshots in the store at {ctx.where}. {HINT}")
    labels = list(dict.fromkeys(r["label"] for r in reversed(listing)))  # newest first
    label = _label(q, "label", labels, labels[0])
    compare = _label(q, "compare", labels, None)
    doc = _load(ctx, label)
    size = doc["histograms"]["file_size"]
    top = fs.largest_bucket(size)
    out = {
        "label": label, "compare": compare, "labels": labels, "snapshots": listing,
        "snapshot": {k: doc.get(k) for k in ("root", "snapshot_time", "host", "entries", "walk_s", "threads", "files",
                                             "dirs", "symlinks", "other", "bytes", "capacity_bytes", "errors",
                                             "hardlinks_deduplicated", "excluded", "skipped_mounts", "notes")},
        "highlights": {"most_popular_size": top and {k: top[k] for k in ("min", "max", "count", "bytes")},
                       "files_below_1mib": fs.fraction_below(size, 2**20),
                       "bytes_in_files_below_1mib": fs.fraction_below(size, 2**20, "bytes"),
                       "overhead": fs.fsstats_overhead(doc["bytes"], doc["capacity_bytes"])},
        "cdfs": _cdfs(doc),
        "projects_total": len(doc["top_dirs"]),
        "projects": [{**{k: d[k] for k in ("name", "files", "bytes", "capacity_bytes", "dirs", "newest_mtime")},
                      "files_share": _share(d["files"], doc["files"]), "bytes_share": _share(d["bytes"], doc["bytes"])}
                     for d in doc["top_dirs"][:PROJECTS_SHOWN]],
        "owners_total": len(doc["owners"]),
        "owners": [{**{k: o[k] for k in ("uid", "user", "files", "bytes", "capacity_bytes")},
                    "bytes_share": _share(o["bytes"], doc["bytes"])} for o in doc["owners"][:OWNERS_SHOWN]],
        "errors": doc["error_list"][:20],
        "diff": None,
    }
    if compare is not None:
        a = _load(ctx, compare)
        out["diff"] = {"a": {"root": a["root"], "snapshot_time": a["snapshot_time"], "source": compare},
                       "b": {"root": doc["root"], "snapshot_time": doc["snapshot_time"], "source": label},
                       **fs.growth(a, doc, movers=MOVERS)}
    return out


PAGE = Page(slug="contents", script="contents.js", title="Contents", data=contents_data,
            template="contents.html", available=has_snapshots, order=60,
            description="Content snapshots: file size and age distributions, projects, owners, growth.")
