"""Probe timeline: every sample of one target on a log scale (downsampled keeping extremes; over 6 h
each 10-minute interval's fastest, median and slowest), interval statistics and slowdown below it
(seed 001, Fig. 1). The data come from services/probe_timeline.py."""

from __future__ import annotations

import numpy as np

from ioweather.services.changes import probe_marks
from ioweather.services.probe_cache import OPS
from ioweather.services.probe_timeline import MAX_POINTS, timeline
from ioweather.services.defaults import SLOWDOWN_STATS
from ioweather.services.probe_timeline import STATUSES
from ioweather.units import ns_to_iso
from ioweather.web.context import WebContext
from ioweather.web.pages.common import (finite_or_none, has_probe_data, iso_ms, now_utc, require_probe_data,
                                        target_param)
from ioweather.web.params import Query
from ioweather.web.registry import Page

#: Raw samples of one day are 518 k rows at 1 Hz: more is the Slowdown history's job.
MAX_WINDOW_S = 86400.0
TIMELINE_INTERVALS_S = (60.0, 300.0, 600.0, 1800.0, 3600.0, 14400.0)
INTERVAL_COLUMNS = ("count", "errors", "timeouts", "median_s", "p90_s", "p99_s", "max_s", "slowdown")


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
    return probe_marks(ctx.cache, [target], since, until, now_ns)


def timeline_data(ctx: WebContext, params) -> dict:
    q = Query(params, PARAMS)
    targets, target, _, since, until = _window(ctx, q)
    interval = q.duration("interval", "10m", allowed=TIMELINE_INTERVALS_S)
    stat = q.choice("stat", SLOWDOWN_STATS, "median")
    max_points = q.integer("points", MAX_POINTS, 100, MAX_POINTS)
    t = timeline(ctx.cache, target, since, until, interval, stat, max_points)
    f = t.failures
    if t.resolution_s is None:
        samples = {op: {"time": iso_ms(p["start_ns"]), "duration_s": (p["duration_ns"] / 1e9).tolist()}
                   for op, p in zip(OPS, t.points)}
        failures = {"time": iso_ms(f["start_ns"]), "op": [OPS[c] for c in f["op"].tolist()],
                    "status": [STATUSES[c] for c in f["status"].tolist()], "duration_s": (f["duration_ns"] / 1e9).tolist()}
    else:
        samples = {op: {"time": iso_ms(p["start_ns"]), "count": p["count"].tolist(), "min_s": finite_or_none(p["min_s"]),
                        "median_s": finite_or_none(p["median_s"]), "max_s": finite_or_none(p["max_s"])}
                   for op, p in zip(OPS, t.points)}
        failures = {"time": iso_ms(f["start_ns"]), "op": [OPS[c] for c in f["op"].tolist()],
                    "errors": f["errors"].tolist(), "timeouts": f["timeouts"].tolist()}
    return {
        "target": target, "targets": targets, "since": ns_to_iso(since), "until": ns_to_iso(until),
        "interval_s": t.interval_s, "stat": stat, "max_points": max_points,
        # "raw": `samples` are samples; "10 min": per op and interval its count, fastest, median and slowest
        "resolution": "raw" if t.resolution_s is None else f"{t.resolution_s // 60} min",
        "resolution_s": t.resolution_s,
        "samples_total": t.total, "samples_shown": t.shown, "downsampled": t.shown < t.total,
        "failures_total": t.failures_total,
        "expected_s": dict(zip(OPS, finite_or_none(t.expected_s))),
        "thresholds": {"warn": ctx.config.warn, "crit": ctx.config.crit},
        "samples": samples, "failures": failures,
        "intervals": [{"op": r["op"], "interval_start": ns_to_iso(r["interval_start_ns"]),
                       **{c: r[c] for c in INTERVAL_COLUMNS}} for r in t.intervals],
    }


PAGE = Page(slug="timeline", title="Probe timeline", data=timeline_data, template="timeline.html",
            available=has_probe_data, order=20, parts={"changes": timeline_changes},
            description="Every probe sample of a target on a log scale, interval statistics and slowdown below.")
