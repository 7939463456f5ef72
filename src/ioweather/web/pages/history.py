"""Slowdown history: op × time heatmap of the slowdown per interval (10 min … 4 h), one per target."""

from __future__ import annotations

from ioweather.encoding import Encoded, to_json
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
    return _encoded(history(ctx.cache, targets, one, since, until, interval, stat, ctx.config.warn,
                            ctx.config.crit, now_ns).to_json())


#: Per (target, matrix, op): the last values of a heatmap row before its unfinished intervals and their JSON text.
_ROWS: dict[tuple[str, str, int], tuple[list, str]] = {}
#: The row's last columns always encoded afresh (the unfinished interval, and one that settled since).
_FRESH = 2


def _encoded(doc: dict) -> dict:
    """`doc` (`History.to_json()`) with each target as `Encoded`, its heatmap rows' settled columns' text kept
    (`_row_text`): 100 targets × 7 days × 6 ops were 3 MB of JSON encoded at every request, for /api/history and
    again for the page's data, though only each row's last interval changes between two requests. The same text."""
    targets = []
    for t in doc["targets"]:
        name = t["target"]
        rows = {m: "[" + ", ".join(_row_text(name, m, o, row) for o, row in enumerate(t[m])) + "]"
                for m in ("slowdown", "count", "timeouts")}
        text = "{" + ", ".join(f"{to_json(k)}: {rows[k] if k in rows else to_json(v)}" for k, v in t.items()) + "}"
        targets.append(Encoded(t, text))
    return {**doc, "targets": targets}


def _row_text(target: str, matrix: str, op: int, row: list) -> str:
    """`to_json(row)`, the text of all but its last _FRESH values reused while they are the same values."""
    k = max(0, len(row) - _FRESH)
    head = row[:k]
    kept = _ROWS.get((target, matrix, op))
    # a row's values are all floats or None (slowdowns) or all ints (counts): equal values are the same text
    if kept is not None and kept[0] == head:
        text = kept[1]
    else:
        text = to_json(head)[1:-1]
        _ROWS[(target, matrix, op)] = (head, text)
    tail = to_json(row[k:])[1:-1]
    return "[" + text + (", " if text and tail else "") + tail + "]"


PAGE = Page(slug="history", title="Slowdown history", data=history_data, template="history.html",
            available=has_probe_data, order=30, parts={"changes": history_changes},
            description="Slowdown per op and interval as a heatmap, with the chosen statistic and interval.")
