"""Slowdown history: op × time heatmap of the slowdown per interval (10 min … 4 h), one per target."""

from __future__ import annotations

from ioweather.services.answers.changes import probe_marks
from ioweather.services.runtime.defaults import SLOWDOWN_STATS
from ioweather.services.probe.cache import INTERVALS_S
from ioweather.services.probe.history import grid, history
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_probe_data, now_utc, require_probe_data, target_param
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page

MAX_WINDOW_S = 92 * 86400.0
MAX_COLUMNS = 5000


PARAMS = ("target", "since", "until", "interval", "stat")


def _window(ctx: WebContext, q: Query) -> tuple[list[str], str | None, int, int, int]:
    """Every target, the one chosen (None: all), now, since and until (ns) of the page's query."""
    targets = require_probe_data(ctx)
    one = target_param(q, targets, required=False)
    now = now_utc(ctx)
    since, until = q.window("7d", MAX_WINDOW_S, now)
    return targets, one, int(now.timestamp() * 1e9), since, until


def history_changes(ctx: WebContext, params) -> dict:
    """/api/history/changes: the level changes of the page's window, marked on its heatmaps once they arrive."""
    targets, one, now_ns, since, until = _window(ctx, Query(params, PARAMS))
    return probe_marks(ctx.cache, [one] if one else targets, since, until, now_ns).to_json()


def history_data(ctx: WebContext, params) -> dict:
    q = Query(params, PARAMS)
    targets, one, now_ns, since, until = _window(ctx, q)
    interval = int(q.duration("interval", "1h", allowed=tuple(float(i) for i in INTERVALS_S)))
    stat = q.choice("stat", SLOWDOWN_STATS, "median")
    _, columns = grid(since, until, interval)
    if columns > MAX_COLUMNS:
        raise BadRequest(f"{columns} intervals of {interval} s in this window; at most {MAX_COLUMNS}: "
                         "choose a longer interval or a shorter window")
    return history(ctx.cache, targets, one, since, until, interval, stat, ctx.config.warn,
                   ctx.config.crit, now_ns).to_json()


PAGE = Page(slug="history", title="Slowdown history", data=history_data, template="history.html",
            available=has_probe_data, order=30, parts={"changes": history_changes},
            description="Slowdown per op and interval as a heatmap, with the chosen statistic and interval.")
