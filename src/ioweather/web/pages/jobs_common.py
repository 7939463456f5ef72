"""What the Jobs list and the job page share: whether there are jobs."""

from __future__ import annotations

from ioweather.services.jobs.presence import has_jobs as stored
from ioweather.web.context import WebContext
from ioweather.web.params import NotFound

HINT = ("Read Darshan logs into the store with `ioweather jobs ingest PATH...` (files, or directories searched "
        "for *.darshan), then reload this page.")


def has_jobs(ctx: WebContext) -> bool:
    return ctx.settings.store_exists() and stored(ctx.store)


def require_jobs(ctx: WebContext) -> None:
    if not has_jobs(ctx):
        raise NotFound(f"No Darshan jobs in the store at {ctx.where}. {HINT}")
