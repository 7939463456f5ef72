"""Probe timeline: every sample of one target on a log scale (downsampled keeping extremes; over 6 h
each 10-minute interval's fastest, median and slowest), interval statistics and slowdown below it
(seed 001, Fig. 1). The data come from services/probe/timeline.py."""

from __future__ import annotations

from ioweather.services.answers.changes import probe_marks
from ioweather.services.runtime.defaults import SLOWDOWN_STATS
from ioweather.services.probe.timeline import MAX_POINTS, timeline
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_probe_data, now_utc, require_probe_data, target_param
from ioweather.web.params import Query
from ioweather.web.registry import Page

#: Raw samples of one day are 518 k rows at 1 Hz: more is the Slowdown history's job.
MAX_WINDOW_S = 86400.0
TIMELINE_INTERVALS_S = (60.0, 300.0, 600.0, 1800.0, 3600.0, 14400.0)


PARAMS = ("target", "since", "until", "interval", "stat", "points")


def _window(ctx: WebContext, q: Query) -> tuple[list[str], str, int, int, int]:
    """The targets, the chosen one, now, since and until (ns) of the page's query."""
    targets = require_probe_data(ctx)
    target = target_param(q, targets, required=True)
    now = now_utc(ctx)
    since, until = q.window("1h", MAX_WINDOW_S, now)
    return targets, target, int(now.timestamp() * 1e9), since, until


def timeline_changes(ctx: WebContext, params) -> dict:
    """/api/timeline/changes: the level changes of the page's window, marked on its plot once they arrive."""
    _, target, now_ns, since, until = _window(ctx, Query(params, PARAMS))
    return probe_marks(ctx.cache, [target], since, until, now_ns).to_json()


def timeline_data(ctx: WebContext, params) -> dict:
    q = Query(params, PARAMS)
    targets, target, now_ns, since, until = _window(ctx, q)
    interval = q.duration("interval", "10m", allowed=TIMELINE_INTERVALS_S)
    stat = q.choice("stat", SLOWDOWN_STATS, "median")
    max_points = q.integer("points", MAX_POINTS, 100, MAX_POINTS)
    return timeline(ctx.cache, targets, target, since, until, interval, stat, max_points, ctx.config.warn,
                    ctx.config.crit, now_ns).to_json()


PAGE = Page(slug="timeline", title="Probe timeline", data=timeline_data, template="timeline.html",
            available=has_probe_data, order=20, parts={"changes": timeline_changes},
            description="Every probe sample of a target on a log scale, interval statistics and slowdown below.")
