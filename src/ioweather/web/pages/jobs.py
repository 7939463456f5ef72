"""Jobs: the Darshan archive in the store — the list of jobs (sortable), its cross-job summary, failed logs.

The answer is `services.jobs.darshan.jobs_view`: its summary is `ioweather jobs summary --json` with its
defaults; the list adds MiB/s per node (the node count from the log), each job's highest finding level
and the verdict line of `ioweather job` as `jobs ingest` stored it (None for jobs ingested before it was
stored). The request-independent part (`ArchiveIndex`) is kept until a job is stored or a log fails.
"""

from __future__ import annotations

from ioweather.config import load_fs_map
from ioweather.services.telemetry.workload import file_systems
from ioweather.web.context import WebContext
from ioweather.web.pages import jobs_common as jc
from ioweather.web.params import Query
from ioweather.web.registry import Page

MAX_LIMIT = 1000
PROJECTS_SHOWN = 25


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
    return index.json_of(jobs_view(ctx.store, index, sort, order, limit, offset, PROJECTS_SHOWN, fs, datasets))


PAGE = Page(slug="jobs", script="jobs.js", title="Jobs", data=jobs_data,
            template="jobs.html", available=jc.has_jobs, order=40,
            description="Darshan jobs in the store: sortable list with findings, interfaces by job size, projects.")
