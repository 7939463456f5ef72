"""Benchmarks: regression benchmark runs (METHODS.md section 6; seed 004 Figs. 3-4, Table 2).

Per motif, direction and file system the summary table (optimum, mean, contention, last run's
fraction of peak); for the chosen series the histogram of durations with the optimum marked and
fraction of peak over time; for the chosen run (default: the newest) the servers' read/write rates
over its window with its start, end and reported rate drawn over them, when telemetry for its file
system exists. The answer is services/bench/runs.py's `page` (a `BenchPage`), its rows `bench summary --json`'s.
"""

from __future__ import annotations

from ioweather.errors import UserError
from ioweather.services.bench import runs as svc
from ioweather.web.context import WebContext
from ioweather.web.params import BadRequest, NotFound, Query
from ioweather.web.registry import Page

HINT = "Run `ioweather bench run --dir DIR` (or `ioweather bench import FILE`) and reload this page."


def available(ctx: WebContext) -> bool:
    return ctx.settings.store_exists() and svc.has_runs(ctx.store)


def bench_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("motif", "direction", "fs", "run"))
    if not available(ctx):
        raise NotFound(f"No benchmark runs. {HINT}")
    try:
        return svc.page(ctx.store, q.text("motif"), q.text("direction"), q.text("fs"), q.text("run")).to_json()
    except UserError as e:
        raise BadRequest(str(e)) from None


PAGE = Page(slug="bench", script="bench.js", title="Benchmarks", data=bench_data, template="bench.html",
            available=available, order=60,
            description="Regression benchmarks: durations, contention (mean/optimum) and fraction of peak per motif.")
