"""Factors: the latency density of one probe target's op over a window, with its classes, splits and
outlier cutoff (METHODS.md 2.2-2.3; seed 000 Fig. 2).

The store has no factors table: the page runs `services.answers.factors.probe_factors` (the density of the
successful samples of the window, as `factors density --from-store` reads them) with the options
of `ioweather factors density`, so its `analysis` is that command's
`--from-store --json` for the same target, op and window. The window is capped (7 days) to keep a request
under a second; a window that ended more than two minutes ago cannot change and is
kept in memory.
"""

from __future__ import annotations

from ioweather.errors import UserError
from ioweather.services.runtime.defaults import DEFAULT_SIGNIFICANCE
from ioweather.services.probe.cache import OPS
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_probe_data, now_utc, require_probe_data, target_param
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page

MAX_WINDOW_S = 7 * 86400.0
#: A window ending this long before now holds every sample it will ever hold (the probe stores every 5 s).
SETTLED_NS = 120 * 10**9


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
        # pandas and scipy load with the first analysis, not at the dashboard's start
        # lazy: pandas, pyarrow via services.answers.factors, loaded only when this runs
        from ioweather.services.answers.factors import probe_factors

        try:
            return probe_factors(ctx.store, targets, target, op, since, until, kw)
        except UserError as e:  # no successful sample in the window, or too few to read classes from
            raise BadRequest(str(e)) from None

    key = ("factors", tuple(targets), target, op, since, until, tuple(sorted(kw.items())))
    settled = until <= ctx.cache.clock() - SETTLED_NS
    return (ctx.memo(key, "settled", run) if settled else run()).to_json()


PAGE = Page(slug="factors", script="factors.js", title="Factors", data=factors_data,
            template="factors.html", available=has_probe_data, order=35,
            description="Latency density of a probe op: performance classes, splits and outlier cutoff.")
