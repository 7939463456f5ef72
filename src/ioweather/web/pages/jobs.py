"""Jobs: the Darshan archive in the store — the list of jobs (sortable), its cross-job summary, failed logs.

The summary and the list come from `services.darshan.archive_view`: the summary is `ioweather jobs
summary --json` with its defaults; the list adds MiB/s per node (the node count from the log), each
job's highest finding level and the verdict line of
`ioweather job` as `jobs ingest` stored it (None for jobs ingested before it was stored).
"""

from __future__ import annotations

import numpy as np

from ioweather.services.job_weather import stored_verdicts
from ioweather.units import ns_to_iso
from ioweather.web.context import WebContext
from ioweather.web.pages import jobs_common as jc
from ioweather.web.params import Query
from ioweather.web.registry import Page

#: sort key -> column of the list frame
SORTS = {"start": "start_ns", "bytes": "moved_bytes", "runtime": "runtime_s", "mibps_per_node": "mibps_per_node",
         "mibps": "mibps", "nprocs": "nprocs", "level": "level_rank", "jobid": "jobid"}
MAX_LIMIT = 1000
#: Jobs drawn in the scatter plot (the ones that moved the most when the archive holds more).
MAX_PLOTTED = 20000
PROJECTS_SHOWN = 25
FAILED_SHOWN = 100


def _row(r) -> dict:
    return {"id": r.log_hash, "jobid": jc.opt_int(r.jobid), "uid": jc.opt_int(r.uid), "exe": r.exe,
            "nprocs": jc.opt_int(r.nprocs), "nnodes": jc.opt_int(r.nnodes),
            "start": None if jc.opt_int(r.start_ns) is None else ns_to_iso(int(r.start_ns)),
            "runtime_s": jc.opt_float(r.runtime_s), "bytes_read": jc.opt_int(r.bytes_read),
            "bytes_written": jc.opt_int(r.bytes_written), "moved_bytes": int(r.moved_bytes),
            "files": jc.opt_int(r.files), "mibps": jc.opt_float(r.mibps),
            "mibps_per_node": jc.opt_float(r.mibps_per_node), "io_fraction": jc.opt_float(r.io_fraction),
            "level": r.level, "findings": jc.codes(r.finding_codes),
            "verdict": r.verdict if isinstance(r.verdict, str) else None}


def _view(ctx: WebContext) -> dict:
    """Everything that does not depend on the request's parameters, computed once per change of the store:
    with 100 000 jobs, building it takes ~0.7 s, a request that reuses it ~0.1 s."""
    from ioweather.services.darshan import archive_marker, archive_view

    def build():
        lf, summary, failed = archive_view(ctx.store, jc.COLUMNS)
        plotted = lf.sort_values(["moved_bytes", "log_hash"], ascending=[False, True], kind="stable").head(MAX_PLOTTED)
        return {
            "lf": lf, "orders": {},
            "summary": summary,  # `jobs summary --json`'s, unit-rule keys included
            "levels": {lv: int((lf["level"] == lv).sum()) for lv in ("HIGH", "WARN")}
            | {"none": int(lf["level"].isna().sum())},
            # 16 hex digits name a job for the job page; the whole hash would triple the plot's bytes
            "plot": {"total": len(lf), "shown": len(plotted), "id": plotted["log_hash"].str[:16].tolist(),
                     "jobid": [jc.opt_int(v) for v in plotted["jobid"]],
                     "runtime_s": [jc.opt_float(v) for v in plotted["runtime_s"]],
                     "moved_bytes": [int(v) for v in plotted["moved_bytes"]],
                     "nprocs": [jc.opt_int(v) for v in plotted["nprocs"]], "level": plotted["level"].tolist()},
            "failed": {"total": len(failed), "rows": [{"path": f["path"], "reason": f["reason"],
                                                       "size_bytes": f["size_bytes"],
                                                       "failed_at": ns_to_iso(f["failed_ns"])}
                                                      for f in failed[:FAILED_SHOWN]]},
        }
    return ctx.memo("jobs.view", archive_marker(ctx.store), build)


def _order(view: dict, sort: str, order: str) -> np.ndarray:
    """Row positions in the asked order (kept: paging through the list sorts once)."""
    key = (sort, order)
    if key not in view["orders"]:
        lf = view["lf"]
        # Ties keep a fixed order (most bytes first) so that paging never shows a job twice.
        ordered = lf.reset_index(drop=True).sort_values([SORTS[sort], "moved_bytes", "log_hash"],
                                                        ascending=[order == "asc", False, True],
                                                        na_position="last", kind="stable")
        view["orders"][key] = ordered.index.to_numpy()
    return view["orders"][key]


def jobs_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("sort", "order", "limit", "offset"))
    sort = q.choice("sort", tuple(SORTS), "bytes")
    order = q.choice("order", ("desc", "asc"), "desc")
    limit = q.integer("limit", 100, 1, MAX_LIMIT)
    offset = q.integer("offset", 0, 0, 10**9)
    jc.require_jobs(ctx)
    view = _view(ctx)
    lf = view["lf"]
    page = lf.iloc[_order(view, sort, order)[offset:offset + limit]]
    weather = stored_verdicts(ctx.store, page["log_hash"].tolist())  # stored, never computed here
    return {
        "summary": view["summary"], "levels": view["levels"],
        "list": {"sort": sort, "order": order, "limit": limit, "offset": offset, "total": len(lf),
                 "rows": [{**_row(r), "weather_verdict": weather.get(r.log_hash)} for r in page.itertuples()]},
        "plot": view["plot"], "projects_shown": PROJECTS_SHOWN, "failed": view["failed"],
    }


PAGE = Page(slug="jobs", script="jobs.js", title="Jobs", data=jobs_data,
            template="jobs.html", available=jc.has_jobs, order=40,
            description="Darshan jobs in the store: sortable list with findings, interfaces by job size, projects.")
