"""Status: one card per probe target with its state now, the slowdown per op, the last hour, and its climate."""

from __future__ import annotations

from ioweather.services.probe.status import no_status, status
from ioweather.web.context import WebContext
from ioweather.web.pages.common import HINT, target_param
from ioweather.web.params import Query
from ioweather.web.registry import Page


def status_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("target",))
    cfg = ctx.config
    problem = ctx.problem()
    if problem:
        # the hint (how to start probing) is the page's: the service only knows there is no data
        return no_status(f"No probe data: {problem}. {HINT}", warn=cfg.warn, crit=cfg.crit,
                         baseline_s=cfg.baseline_s).to_json()
    targets = ctx.cache.targets()
    one = target_param(q, targets, required=False)
    return status(ctx.cache, [one] if one else targets, warn=cfg.warn, crit=cfg.crit,
                  baseline_s=cfg.baseline_s).to_json()


PAGE = Page(slug="status", title="Status", data=status_data, template="status.html",
            available=lambda ctx: True, order=10,
            description="Is the file system slow right now? State, slowdown per op, last hour, 30-day climate.")
