"""Slowdown history: op × time heatmap of the slowdown per interval (10 min … 4 h), one per target."""

from __future__ import annotations

import numpy as np

from ioweather.stats.probe import SLOWDOWN_STATS, state
from ioweather.units import ns_to_iso
from ioweather.services.changes import probe_marks
from ioweather.services.probe_cache import INTERVALS_S, OPS
from ioweather.web.context import WebContext
from ioweather.web.pages.common import (finite_or_none, has_probe_data, iso_ms, now_utc, require_probe_data,
                                        target_param)
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page

MAX_WINDOW_S = 92 * 86400.0
MAX_COLUMNS = 5000
WORST_SHOWN = 10


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
    return probe_marks(ctx.cache, [one] if one else targets, since, until, now_ns)


def history_data(ctx: WebContext, params) -> dict:
    q = Query(params, PARAMS)
    targets, one, _, since, until = _window(ctx, q)
    interval = int(q.duration("interval", "1h", allowed=tuple(float(i) for i in INTERVALS_S)))
    stat = q.choice("stat", SLOWDOWN_STATS, "median")
    step = interval * 10**9
    first = (since // step) * step
    columns = -((first - until) // step)
    if columns > MAX_COLUMNS:
        raise BadRequest(f"{columns} intervals of {interval} s in this window; at most {MAX_COLUMNS}: "
                         "choose a longer interval or a shorter window")
    starts = first + step * np.arange(columns, dtype=np.int64)
    col = "mean_s" if stat == "mean" else f"{stat}_s"
    warn, crit = ctx.config.warn, ctx.config.crit
    out = []
    for target in ([one] if one else targets):
        base = ctx.cache.baseline(target)
        # Like for like on the dashboard: a p99 against the baseline p99 (the median against the median).
        expected = base.expected(stat, "same")
        r = ctx.cache.rollups(target, interval, since, until)
        sd = np.full((len(OPS), columns), np.nan)
        n = np.zeros((len(OPS), columns), np.int64)
        to = np.zeros((len(OPS), columns), np.int64)
        j = (r["start_ns"] - first) // step
        inside = (j >= 0) & (j < columns)
        oc, j = r["op"][inside], j[inside]
        with np.errstate(invalid="ignore", divide="ignore"):
            sd[oc, j] = r[col][inside] / expected[oc]
        n[oc, j] = r["count"][inside]
        to[oc, j] = r["timeouts"][inside]
        flat = np.where(np.isfinite(sd), sd, -np.inf).ravel()
        worst = []
        for k in np.argsort(-flat, kind="stable")[:WORST_SHOWN]:
            if not np.isfinite(flat[k]):
                break
            o, c = divmod(int(k), columns)
            worst.append({"op": OPS[o], "interval_start": ns_to_iso(int(starts[c])), "slowdown": float(sd[o, c]),
                          "state": state(float(sd[o, c]), warn, crit), "count": int(n[o, c]),
                          "timeouts": int(to[o, c])})
        out.append({"target": target,
                    "expected_s": {op: (float(expected[c]) if np.isfinite(expected[c]) else None)
                                   for c, op in enumerate(OPS)},
                    "baseline": {"since": ns_to_iso(base.since_ns), "until": ns_to_iso(base.until_ns)},
                    "slowdown": [finite_or_none(row) for row in sd], "count": n.tolist(), "timeouts": to.tolist(),
                    "worst": worst})
    return {"since": ns_to_iso(since), "until": ns_to_iso(until), "interval_s": interval, "stat": stat,
            "thresholds": {"warn": warn, "crit": crit}, "targets_all": targets, "target": one,
            "ops": list(OPS), "time": iso_ms(starts), "targets": out}


PAGE = Page(slug="history", title="Slowdown history", data=history_data, template="history.html",
            available=has_probe_data, order=30, parts={"changes": history_changes},
            description="Slowdown per op and interval as a heatmap, with the chosen statistic and interval.")
