"""One ingested job: its characterization and findings as stored, and its files from the archive's Parquet table.

Nothing here reads the Darshan log again (it may have moved since it was ingested):
the header comes from the job's row, the per-interface, per-mount and top-file tables
from its rows of the per-file table (`services.jobs.darshan.stored_job`: `jobs show --json`). The verdict and the HIGH/WARN
findings with their cost are stored by `jobs ingest` (store version 2); a job ingested
before has only its finding codes, and the page says to re-ingest it for the verdict.
The full report (INFO/OK findings, plots) is `ioweather job LOG`.

The page opens with `ioweather why`'s answer for the job (services/answers/why.py: the same document as
`why JOB --json`), which reads the log again when it is still where it was ingested from: the
advisor's combined saving is not in the store.
"""

from __future__ import annotations

import re

from ioweather.errors import UserError
from ioweather.services.answers.umami import job_panel
from ioweather.services.answers.why import why
from ioweather.web.context import WebContext
from ioweather.web.pages import jobs_common as jc
from ioweather.web.params import BadRequest, NotFound, Query
from ioweather.web.registry import Page

_HASH = re.compile(r"^[0-9a-f]{8,64}$")


def job_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.jobs.darshan, loaded only when this runs
    from ioweather.services.jobs.darshan import AmbiguousJobId, stored_job
    q = Query(params, ("id",))
    raw = q.text("id")
    if raw is None:
        raise BadRequest("give the job with id=<its id from the Jobs page> (the first 8 or more hex digits)")
    h = raw.lower()
    if not _HASH.match(h):
        raise BadRequest(f"id must be 8 to 64 hexadecimal digits, got {raw!r}")
    jc.require_jobs(ctx)
    try:
        data = stored_job(ctx.store, ctx.settings.parquet_dir, h)
    except AmbiguousJobId as e:
        raise BadRequest(str(e)) from None
    if data is None:
        raise NotFound(f"no job with id {h} in the store; the Jobs page lists them")
    # the job's own side (`jobs show --json`), then the system's: climate vs weather (services/answers/umami.py), why
    return {**data.to_json(), "umami": job_panel(ctx.store, data.id).to_json(), "why": _why(ctx, data)}


def _why(ctx: WebContext, data) -> dict:
    """`ioweather why` of the job the log belongs to (every log of its job id, merged): the same document
    as the command's --json, or {"error": why not} (the page still shows the log's own side)."""
    jobid = data.job.jobid
    try:
        return why(ctx.settings, str(jobid) if jobid else data.id, store=ctx.store).to_json()
    except UserError as e:
        return {"error": str(e)}


PAGE = Page(slug="job", script="jobs.js", title="Job", data=job_data,
            template="job.html", available=jc.has_jobs, order=41, in_nav=False,
            description="One Darshan job: characterization, findings, interfaces, file systems, files.")
