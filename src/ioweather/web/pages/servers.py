"""Servers: per-target (OST/MDT/NSD server) read and write rates as a heatmap target x time, sortable
totals, peaks and shares, imbalanced or idle targets flagged; `target=` adds that target's own series
with its events. Aggregated server-side to the heatmap's resolution (services/telemetry/fsview.py)."""

from __future__ import annotations

from functools import partial

from ioweather.errors import StoreError, UserError
from ioweather.units import parse_rate
from ioweather.web.context import WebContext
from ioweather.web.pages.fsview_common import fs_and_window, has_telemetry, memo, with_span, without_data
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page


def servers_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry import fsview  # it loads pandas: with the first telemetry page, not at start

    q = Query(params, ("fs", "since", "until", "sort", "target", "min_amplitude"))
    fs, systems, since_ns, until_ns, span = fs_and_window(ctx, q, "7d", "io")
    sort = q.choice("sort", fsview.SORTS, "bytes")
    target = q.text("target")
    amp = fsview.DEFAULT_TARGET_MIN_AMPLITUDE
    raw = q.text("min_amplitude")
    if target is not None and raw:  # it shapes the target's series only
        try:
            amp = parse_rate(raw)
        except (UserError, ValueError):
            raise BadRequest(f"min_amplitude must be a rate such as 64MiB/s, got {raw!r}") from None
        if not amp > 0 or amp == float("inf"):
            raise BadRequest(f"min_amplitude must be a positive rate, got {raw!r}")
    empty = without_data(fs, systems, span)
    if empty:
        return empty
    try:
        answer = fsview.servers(ctx.settings, fs, since_ns, until_ns, sort, target, amp, partial(memo, ctx, fs))
    except StoreError:
        raise
    except UserError as e:  # a target that moved nothing in the window
        raise BadRequest(str(e)) from None
    return with_span(answer.to_json(), span)


PAGE = Page(slug="servers", script="fsview.js", title="Servers", data=servers_data, template="servers.html",
            available=has_telemetry, order=52,
            description="Per-OST/MDT read and write rates (heatmap), shares of the file system, imbalanced targets.")
