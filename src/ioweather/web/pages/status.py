"""Status: one card per probe target with its state now, the slowdown per op, the last hour, and its climate."""

from __future__ import annotations

from ioweather.units import ns_to_iso
from ioweather.services.probe_status import WINDOW_S, overall_of, target_status
from ioweather.web.context import WebContext
from ioweather.web.pages.common import HINT, target_param
from ioweather.web.params import Query
from ioweather.web.registry import Page


def status_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("target",))
    cfg = ctx.config
    out = {"generated_at": None, "overall": "unknown", "message": None,
           "thresholds": {"warn": cfg.warn, "crit": cfg.crit}, "window_s": WINDOW_S,
           "baseline_s": cfg.baseline_s, "targets": []}
    problem = ctx.problem()
    if problem:
        out["message"] = f"No probe data: {problem}. {HINT}"
        return out
    targets = ctx.cache.targets()
    one = target_param(q, targets, required=False)
    out["generated_at"] = ns_to_iso(ctx.cache.clock())
    out["targets"] = [target_status(ctx.cache, t, warn=cfg.warn, crit=cfg.crit) for t in ([one] if one else targets)]
    out["overall"] = overall_of(out["targets"])
    return out


PAGE = Page(slug="status", title="Status", data=status_data, template="status.html",
            available=lambda ctx: True, order=10,
            description="Is the file system slow right now? State, slowdown per op, last hour, 30-day climate.")
