"""Servers: per-target (OST/MDT/NSD server) read and write rates as a heatmap target x time, sortable
totals, peaks and shares, imbalanced or idle targets flagged; `target=` adds that target's own series
with its events. Aggregated server-side to the heatmap's resolution (services/fsview.py)."""

from __future__ import annotations

from ioweather.errors import UserError
from ioweather.units import parse_rate
from ioweather.web.context import WebContext
from ioweather.web.pages.fsview_common import fs_and_window, has_telemetry, memo
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page


def servers_data(ctx: WebContext, params) -> dict:
    from ioweather.services import fsview

    q = Query(params, ("fs", "since", "until", "sort", "target", "min_amplitude"))
    fs, systems, since_ns, until_ns = fs_and_window(ctx, q, "7d")
    sort = q.choice("sort", fsview.SORTS, "bytes")
    doc = memo(ctx, fs, ("servers", fs, since_ns, until_ns, sort),
               lambda: fsview.servers(ctx.settings, fs, since_ns, until_ns, sort))
    out = {"fs_all": systems, **doc, "target": None, "series": None,
           "brw": memo(ctx, fs, ("servers-brw", fs, since_ns, until_ns),
                       lambda: fsview.brw_distributions(ctx.settings, fs, since_ns, until_ns))}
    target = q.text("target")
    if target is not None:
        if target not in {t["target"] for t in doc["targets"]}:
            raise BadRequest(f"unknown target {target!r} in {fs} between {doc['since']} and {doc['until']}")
        raw = q.text("min_amplitude")
        try:
            amp = parse_rate(raw) if raw else fsview.DEFAULT_TARGET_MIN_AMPLITUDE
        except (UserError, ValueError):
            raise BadRequest(f"min_amplitude must be a rate such as 64MiB/s, got {raw!r}") from None
        if not amp > 0 or amp == float("inf"):
            raise BadRequest(f"min_amplitude must be a positive rate, got {raw!r}")
        out["target"] = target
        out["series"] = memo(ctx, fs, ("servers-target", fs, target, since_ns, until_ns, amp),
                             lambda: fsview.target_series(ctx.settings, fs, target, since_ns, until_ns, amp))
    return out


PAGE = Page(slug="servers", script="fsview.js", title="Servers", data=servers_data, template="servers.html",
            available=has_telemetry, order=52,
            description="Per-OST/MDT read and write rates (heatmap), shares of the file system, imbalanced targets.")
