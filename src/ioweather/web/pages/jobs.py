"""Jobs: the Darshan archive in the store — the list of jobs (sortable), its cross-job summary, failed logs.

The answer is `services.jobs.darshan.jobs_view`: its summary is `ioweather jobs summary --json` with its
defaults; the list adds MiB/s per node (the node count from the log), each job's highest finding level
and the verdict line of `ioweather job` as `jobs ingest` stored it (None for jobs ingested before it was
stored). The request-independent part (`ArchiveIndex`) is kept until a job is stored or a log fails.
"""

from __future__ import annotations

from ioweather.web.context import WebContext
from ioweather.web.pages import jobs_common as jc
from ioweather.web.params import Query
from ioweather.web.registry import Page

MAX_LIMIT = 1000
PROJECTS_SHOWN = 25


def jobs_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.jobs.darshan, loaded only when this runs
    from ioweather.services.jobs.darshan import SORTS, ArchiveIndex, archive_marker, jobs_view  # pandas: pages/__init__.py

    q = Query(params, ("sort", "order", "limit", "offset"))
    sort = q.choice("sort", tuple(SORTS), "bytes")
    order = q.choice("order", ("desc", "asc"), "desc")
    limit = q.integer("limit", 100, 1, MAX_LIMIT)
    offset = q.integer("offset", 0, 0, 10**9)
    jc.require_jobs(ctx)
    index = ctx.memo("jobs.view", archive_marker(ctx.store), lambda: ArchiveIndex(ctx.store))
    return jobs_view(ctx.store, index, sort, order, limit, offset, PROJECTS_SHOWN).to_json()


PAGE = Page(slug="jobs", script="jobs.js", title="Jobs", data=jobs_data,
            template="jobs.html", available=jc.has_jobs, order=40,
            description="Darshan jobs in the store: sortable list with findings, interfaces by job size, projects.")
