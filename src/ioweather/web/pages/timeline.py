"""Probe timeline: every sample of one target on a log scale (downsampled keeping extremes),
interval statistics and slowdown below it (seed 001, Fig. 1)."""

from __future__ import annotations

import numpy as np

from ioweather.stats.downsample import downsample, split_budget
from ioweather.stats.probe import SLOWDOWN_STATS, STATUS_OK, interval_stats
from ioweather.store.probe import STATUSES
from ioweather.units import ns_to_iso
from ioweather.services.changes import probe_marks
from ioweather.services.probe_cache import INTERVALS_S, OPS, rollup_rows
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_probe_data, iso_ms, now_utc, require_probe_data, target_param
from ioweather.web.params import Query
from ioweather.web.registry import Page

#: Raw samples of one day are 518 k rows at 1 Hz: more is the Slowdown history's job.
MAX_WINDOW_S = 86400.0
MAX_POINTS = 20_000
TIMELINE_INTERVALS_S = (60.0, 300.0, 600.0, 1800.0, 3600.0, 14400.0)


def timeline_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("target", "since", "until", "interval", "stat", "points"))
    targets = require_probe_data(ctx)
    target = target_param(q, targets, required=True)
    now = now_utc(ctx)
    now_ns = int(now.timestamp() * 1e9)
    since, until = q.window("1h", MAX_WINDOW_S, now)
    interval = q.duration("interval", "10m", allowed=TIMELINE_INTERVALS_S)
    stat = q.choice("stat", SLOWDOWN_STATS, "median")
    max_points = q.integer("points", MAX_POINTS, 100, MAX_POINTS)
    step = int(interval * 1e9)
    first = (since // step) * step
    s = ctx.cache.read(target, first, until)
    # Like for like on the dashboard: a p99 against the baseline p99 (the median against the median).
    expected = ctx.cache.baseline(target).expected(stat, "same")

    # Samples: successful ones per op, failures as their own series, one shared point budget.
    inwin = s["start_ns"] >= since
    ok = inwin & (s["status"] == STATUS_OK)
    bad = inwin & (s["status"] != STATUS_OK)
    series = [np.flatnonzero(ok & (s["op"] == code)) for code in range(len(OPS))] + [np.flatnonzero(bad)]
    budget = split_budget([len(ix) for ix in series], max_points)
    samples, shown = {}, 0
    for code, op in enumerate(OPS):
        ix = series[code]
        keep = ix[downsample(s["start_ns"][ix], s["duration_ns"][ix], budget[code], since, until)] if len(ix) else ix
        shown += len(keep)
        samples[op] = {"time": iso_ms(s["start_ns"][keep]), "duration_s": (s["duration_ns"][keep] / 1e9).tolist()}
    ix = series[-1]
    keep = ix[downsample(s["start_ns"][ix], s["duration_ns"][ix], budget[-1], since, until)] if len(ix) else ix
    shown += len(keep)
    failures = {"time": iso_ms(s["start_ns"][keep]), "op": [OPS[c] for c in s["op"][keep].tolist()],
                "status": [STATUSES[c] for c in s["status"][keep].tolist()],
                "duration_s": (s["duration_ns"][keep] / 1e9).tolist()}
    total = int(inwin.sum())

    if int(interval) in INTERVALS_S:  # finished intervals come from the cache, only the tail is computed
        stats = rollup_rows(ctx.cache.rollups(target, int(interval), since, until))
    else:
        stats = interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval)
    rows = []
    for r in stats:
        exp = expected[r["op_code"]]
        value = r["mean_s"] if stat == "mean" else r[f"{stat}_s"]
        rows.append({"op": OPS[r["op_code"]], "interval_start": ns_to_iso(r["interval_start_ns"]), "count": r["count"],
                     "errors": r["errors"], "timeouts": r["timeouts"], "median_s": r["median_s"], "p90_s": r["p90_s"],
                     "p99_s": r["p99_s"], "max_s": r["max_s"],
                     "slowdown": value / exp if value is not None and np.isfinite(exp) and exp > 0 else None})
    return {
        "target": target, "targets": targets, "since": ns_to_iso(since), "until": ns_to_iso(until),
        "interval_s": interval, "stat": stat, "max_points": max_points,
        "samples_total": total, "samples_shown": shown, "downsampled": shown < total,
        "expected_s": {op: (float(expected[c]) if np.isfinite(expected[c]) else None) for c, op in enumerate(OPS)},
        "thresholds": {"warn": ctx.config.warn, "crit": ctx.config.crit},
        "samples": samples, "failures": failures, "intervals": rows,
        # level changes of the probe's 10-minute medians (services/changes.py), marked on the plot
        "changes": probe_marks(ctx.cache, [target], since, until, now_ns),
    }


PAGE = Page(slug="timeline", title="Probe timeline", data=timeline_data, template="timeline.html",
            available=has_probe_data, order=20,
            description="Every probe sample of a target on a log scale, interval statistics and slowdown below.")
