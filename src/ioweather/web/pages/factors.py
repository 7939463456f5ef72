"""Factors: the latency density of one probe target's op over a window, with its classes, splits and
outlier cutoff (METHODS.md 2.2-2.3; seed 000 Fig. 2).

The store has no factors table: the page runs `services.factors.probe_density_timeline` (the density of the
successful samples of the window, as `factors density --from-store` reads them) with the options
of `ioweather factors density`, so its `analysis` is that command's
`--from-store --json` for the same target, op and window. The window is capped (7 days) to keep a request
under a second; a window that ended more than two minutes ago cannot change and is
kept in memory.
"""

from __future__ import annotations

from ioweather.errors import UserError
from ioweather.services.defaults import DEFAULT_SIGNIFICANCE
from ioweather.services.probe_cache import OPS
from ioweather.units import ns_to_iso
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_probe_data, iso_ms, now_utc, require_probe_data, target_param
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page

MAX_WINDOW_S = 7 * 86400.0
MAX_POINTS = 20000
#: A window ending this long before now holds every sample it will ever hold (the probe stores every 5 s).
SETTLED_NS = 120 * 10**9


def _analyse(ctx: WebContext, target: str, op: str, since: int, until: int, kw: dict) -> dict:
    # pandas and scipy load with the first analysis, not at the dashboard's start
    from ioweather.services.factors import probe_density_timeline

    try:
        a, excluded, start, dur, lab, total = probe_density_timeline(ctx.store, target, op, since, until, kw, MAX_POINTS)
    except UserError as e:  # no successful sample in the window, or too few to read classes from
        raise BadRequest(str(e)) from None
    names = [c.label for c in a.classes]
    return {"analysis": a.as_dict(), "excluded": excluded,
            "timeline": {"shown": int(len(dur)), "total": int(total), "downsampled": bool(len(dur) < total),
                         "time": iso_ms(start), "duration_s": dur.tolist(),
                         "class": [names[i] for i in lab.tolist()]}}


def factors_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("target", "op", "since", "until", "adjust", "significance", "cutoff_fraction", "split"))
    targets = require_probe_data(ctx)
    target = target_param(q, targets, required=True)
    op = q.choice("op", OPS, "data_read")
    since, until = q.window("1d", MAX_WINDOW_S, now_utc(ctx))
    kw = {"adjust": q.number("adjust", 2.0, 0.0, 100.0, lo_open=True),
          "significance": q.number("significance", DEFAULT_SIGNIFICANCE, 0.0, 1.0, lo_open=True),
          "cutoff_fraction": q.number("cutoff_fraction", 0.05, 0.0, 0.99, lo_open=True),
          "split": q.choice("split", ("minimum", "mean"), "minimum")}

    def run():
        return _analyse(ctx, target, op, since, until, kw)

    key = ("factors", target, op, since, until, tuple(sorted(kw.items())))
    settled = until <= ctx.cache.clock() - SETTLED_NS
    out = ctx.memo(key, "settled", run) if settled else run()
    return {"target": target, "targets_all": targets, "op": op, "ops": list(OPS),
            "since": ns_to_iso(since), "until": ns_to_iso(until), **kw, **out}


PAGE = Page(slug="factors", script="factors.js", title="Factors", data=factors_data,
            template="factors.html", available=has_probe_data, order=35,
            description="Latency density of a probe op: performance classes, splits and outlier cutoff.")
