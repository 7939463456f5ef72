"""Metadata: MDS/MDT operation rates by operation, with the workload page's events and burstiness
applied to operations (services/telemetry/fsview.py)."""

from __future__ import annotations

from ioweather.web.context import WebContext
from ioweather.web.pages.fsview_common import fs_and_window, has_telemetry, memo, with_span, without_data
from ioweather.web.params import Query
from ioweather.web.registry import Page


def metadata_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry import fsview  # it loads pandas: with the first telemetry page, not at start

    q = Query(params, ("fs", "since", "until", "min_amplitude", "smooth"))
    fs, systems, since_ns, until_ns, span = fs_and_window(ctx, q, "7d", "md")
    amp = q.number("min_amplitude", fsview.DEFAULT_MD_MIN_AMPLITUDE, 0.0, 1e12, lo_open=True)
    smooth = q.duration("smooth", "10m", lo=1.0, hi=86400.0)
    empty = without_data(fs, systems, span)
    if empty:
        return empty
    # every file system is in the key: the answer names them all (fs_all)
    return with_span(memo(ctx, fs, ("metadata", fs, tuple(systems), since_ns, until_ns, amp, smooth),
                lambda: fsview.metadata(ctx.settings, fs, since_ns, until_ns, amp, smooth)).to_json(), span)


PAGE = Page(slug="metadata", script="fsview.js", title="Metadata", data=metadata_data, template="metadata.html",
            available=has_telemetry, order=53,
            description="MDS/MDT operation rates by operation, metadata events and burstiness.")
