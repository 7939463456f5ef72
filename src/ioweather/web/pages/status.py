"""Status: one card per probe target with its state now, the slowdown per op, the last hour, and its climate;
with `fs`, the cards of the targets that probe that file system (services.runtime.fs_names.probes_on)."""

from __future__ import annotations

from ioweather.config import load_fs_map
from ioweather.services.probe.status import no_status, status
from ioweather.services.telemetry.workload import file_systems
from ioweather.web.context import WebContext
from ioweather.web.pages.common import HINT, target_param
from ioweather.web.params import Query
from ioweather.web.registry import Page


def status_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("target", "fs"))
    cfg = ctx.config
    problem = ctx.problem()
    targets = [] if problem else ctx.cache.targets()
    fs, fs_map = None, []
    if q.text("fs") is not None:  # the names are looked up only when asked: listing telemetry loads pyarrow
        fs_map = load_fs_map(ctx.settings.home)
        # the names a file system goes by: its telemetry's, the fs-map's, and (with probe data) its probes' runs'
        known = set(file_systems(ctx.settings) if ctx.settings.store_exists() else []) | {n for _, n in fs_map}
        known |= {r.fs for r in (ctx.cache.latest_run(t) for t in targets) if r is not None and r.fs}
        fs = q.fs(sorted(known))
    if problem:
        # the hint (how to start probing) is the page's: the service only knows there is no data
        return no_status(f"No probe data: {problem}. {HINT}", warn=cfg.warn, crit=cfg.crit,
                         baseline_s=cfg.baseline_s, fs=fs).to_json()
    one = target_param(q, targets, required=False)
    return status(ctx.cache, [one] if one else targets, warn=cfg.warn, crit=cfg.crit,
                  baseline_s=cfg.baseline_s, fs=fs, fs_map=fs_map).to_json()


#: How long (s) a Status answer is served once computed (web/latest.py): its state is the median of the last 10
#: minutes, of samples that reach the store in 5 s batches; computed for each request it was ~0.4 s of CPU for 100
#: targets, the page's p95 1.5 s through HTTP (issue 40 item 4). `generated_at` says when it was computed.
FRESH_S = 10.0

PAGE = Page(slug="status", title="Status", data=status_data, template="status.html",
            available=lambda ctx: True, order=10, fresh_s=FRESH_S,
            description="Is the file system slow right now? State, slowdown per op, last hour, 30-day climate.")
