"""Helpers shared by the pages."""

from __future__ import annotations

from datetime import datetime, timezone

from ioweather.web.context import WebContext
from ioweather.web.params import BadRequest, NotFound, Query

HINT = ("Start probing with `ioweather watch DIR` (probe and dashboard in one process), or "
        "`ioweather probe init DIR` then `ioweather probe run DIR`, and reload this page.")


def has_probe_data(ctx: WebContext) -> bool:
    return ctx.problem() is None


def require_probe_data(ctx: WebContext) -> list[str]:
    problem = ctx.problem()
    if problem:
        raise NotFound(f"No probe data: {problem}. {HINT}")
    return ctx.cache.targets()


def target_param(q: Query, targets: list[str], *, required: bool) -> str | None:
    t = q.text("target")
    if t is None:
        if required:
            return targets[0]
        return None
    if t not in targets:
        shown = ", ".join(repr(x) for x in targets[:20])
        raise BadRequest(f"unknown target {t!r}; known targets: {shown}")
    return t


def now_utc(ctx: WebContext) -> datetime:
    return datetime.fromtimestamp(ctx.cache.clock() / 1e9, timezone.utc)
