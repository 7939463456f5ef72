"""Capacity: fullness per OST and of the file system over time, the fullest OSTs, days until full at
the recent growth, inode use, and `lctl dl -t` state and failover where imported (services/telemetry/fsview.py)."""

from __future__ import annotations

from ioweather.web.context import WebContext
from ioweather.web.pages.fsview_common import fs_and_window, has_telemetry, memo, with_span, without_data
from ioweather.web.params import Query
from ioweather.web.registry import Page


def capacity_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry import fsview  # it loads pandas: with the first telemetry page, not at start

    q = Query(params, ("fs", "since", "until"))
    fs, systems, since_ns, until_ns, span = fs_and_window(ctx, q, "30d", "capacity")
    empty = without_data(fs, systems, span)
    if empty:
        return empty
    # every file system is in the key: the answer names them all (fs_all)
    return with_span(memo(ctx, fs, ("capacity", fs, tuple(systems), since_ns, until_ns),
                lambda: fsview.capacity(ctx.settings, fs, since_ns, until_ns)).to_json(), span)


PAGE = Page(slug="capacity", script="fsview.js", title="Capacity", data=capacity_data, template="capacity.html",
            available=has_telemetry, order=54,
            description="Fullness per OST and of the file system, days until full, inode use, lctl state.")
