"""Jobs: the Darshan archive in the store — the list of jobs (sortable), its cross-job summary, failed logs.

The answer is `services.jobs.darshan.jobs_view`: its summary is `ioweather jobs summary --json` with its
defaults; the list adds MiB/s per node (the node count from the log), each job's highest finding level
and the verdict line of `ioweather job` as `jobs ingest` stored it (None for jobs ingested before it was
stored). The request-independent part (`ArchiveIndex`) is kept until a job is stored or a log fails.
"""

from __future__ import annotations

import weakref
from dataclasses import fields

from ioweather.config import load_fs_map
from ioweather.encoding import Encoded
from ioweather.services.telemetry.workload import file_systems
from ioweather.web.context import WebContext
from ioweather.web.pages import jobs_common as jc
from ioweather.web.params import Query
from ioweather.web.registry import Page

MAX_LIMIT = 1000
PROJECTS_SHOWN = 25
#: Per `ArchiveIndex` (kept while it is): its summary and plot encoded (`_json_of`).
_ENCODED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jobs_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.jobs.darshan, loaded only when this runs
    from ioweather.services.jobs.darshan import SORTS, ArchiveIndex, archive_marker, jobs_view  # pandas: pages/__init__.py
    from ioweather.services.jobs.weather import job_datasets

    q = Query(params, ("sort", "order", "limit", "offset", "fs"))
    sort = q.choice("sort", tuple(SORTS), "bytes")
    order = q.choice("order", ("desc", "asc"), "desc")
    limit = q.integer("limit", 100, 1, MAX_LIMIT)
    offset = q.integer("offset", 0, 0, 10**9)
    # a job's file system is one with telemetry or none (fs_names.job_fs): those are the names it takes
    known = file_systems(ctx.settings) if ctx.settings.store_exists() and q.text("fs") is not None else []
    fs = q.fs(known)
    jc.require_jobs(ctx)
    marker = archive_marker(ctx.store)
    index = ctx.memo("jobs.view", marker, lambda: ArchiveIndex(ctx.store))
    datasets = None
    if fs is not None:
        # kept until a job is stored, the fs-map or the file systems with telemetry change
        key = (marker, tuple(load_fs_map(ctx.settings.home)), tuple(known))
        datasets = ctx.memo("jobs.fs", key,
                            lambda: job_datasets(ctx.store, zip(index.frame["log_hash"], index.frame["files_part"])))
        index = ctx.memo(f"jobs.view.fs={fs}", key,
                         lambda: ArchiveIndex(ctx.store, frozenset(h for h, d in datasets.items() if d == fs)))
    return _json_of(index, jobs_view(ctx.store, index, sort, order, limit, offset, PROJECTS_SHOWN, fs, datasets))


def _json_of(index, view) -> dict:
    """`view.to_json()`, its summary and plot (the index's: ~85 % of the answer's bytes, 0.75 MB for 10,000 jobs)
    encoded once per index (`Encoded`) instead of at every request: a request encodes its page of the list.
    The same text."""
    encoded = _ENCODED.get(index)
    if encoded is None:  # two requests racing both encode: the same text
        encoded = _ENCODED[index] = {"summary": Encoded(index.summary.to_json()), "plot": Encoded(index.plot.to_json())}
    kept = {"summary": index.summary, "plot": index.plot}
    doc = {}
    for f in fields(view):
        v = getattr(view, f.name)
        doc[f.name] = encoded[f.name] if f.name in kept and kept[f.name] is v else \
            v.to_json() if hasattr(v, "to_json") else v
    return doc


PAGE = Page(slug="jobs", script="jobs.js", title="Jobs", data=jobs_data,
            template="jobs.html", available=jc.has_jobs, order=40,
            description="Darshan jobs in the store: sortable list with findings, interfaces by job size, projects.")
