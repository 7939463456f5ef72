"""Top talkers: the jobs and users moving the most bytes and operations, now and over the window,
from Lustre job_stats; a job known to the Darshan store links to its page (services/telemetry/fsview.py)."""

from __future__ import annotations

from ioweather.web.context import WebContext
from ioweather.web.pages.fsview_common import fs_and_window, has_telemetry, memo, with_span, without_data
from ioweather.web.params import Query
from ioweather.web.registry import Page


def talkers_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry import fsview  # it loads pandas: with the first telemetry page, not at start

    q = Query(params, ("fs", "since", "until"))
    fs, systems, since_ns, until_ns, span = fs_and_window(ctx, q, "1d", "jobs")
    empty = without_data(fs, systems, span)
    if empty:
        return empty
    # every file system is in the key: the answer names them all (fs_all)
    return with_span(memo(ctx, fs, ("talkers", fs, tuple(systems), since_ns, until_ns),
                lambda: fsview.talkers(ctx.settings, fs, since_ns, until_ns, fsview.job_links(ctx.settings))).to_json(), span)


PAGE = Page(slug="talkers", script="fsview.js", title="Talkers", data=talkers_data, template="talkers.html",
            available=has_telemetry, order=55,
            description="Jobs and users moving the most bytes and operations (Lustre job_stats).")
