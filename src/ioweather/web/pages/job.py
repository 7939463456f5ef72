"""One ingested job: its characterization and findings as stored, and its files from the archive's Parquet table.

Nothing here reads the Darshan log again (it may have moved since it was ingested):
the header comes from the job's row, the per-interface, per-mount and top-file tables
from its rows of the per-file table (`stats.job_files`). The verdict and the HIGH/WARN
findings with their cost are stored by `jobs ingest` (store version 2); a job ingested
before has only its finding codes, and the page says to re-ingest it for the verdict.
The full report (INFO/OK findings, plots) is `ioweather job LOG`.
"""

from __future__ import annotations

import json
import re

from ioweather.stats.findings import describe_codes, highest_level
from ioweather.stats.job import LUSTRE_FILE_COLUMNS, mibps_per_node
from ioweather.stats.job_files import per_module, per_mount, top_files
from ioweather.store import jobs as jobs_store
from ioweather.units import ns_to_iso
from ioweather.views.job_console import lustre_text
from ioweather.web.context import WebContext
from ioweather.web.pages import jobs_common as jc
from ioweather.web.params import BadRequest, NotFound, Query
from ioweather.web.registry import Page

_HASH = re.compile(r"^[0-9a-f]{8,64}$")
TOP_FILES = 25


def job_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("id",))
    raw = q.text("id")
    if raw is None:
        raise BadRequest("give the job with id=<its id from the Jobs page> (the first 8 or more hex digits)")
    h = raw.lower()
    if not _HASH.match(h):
        raise BadRequest(f"id must be 8 to 64 hexadecimal digits, got {raw!r}")
    jc.require_jobs(ctx)
    try:
        found = jobs_store.job(ctx.store, ctx.settings.parquet_dir, h)
    except jobs_store.AmbiguousJobId as e:
        raise BadRequest(str(e)) from None
    if found is None:
        raise NotFound(f"no job with id {h} in the store; the Jobs page lists them")
    r, files = found
    nnodes = jc.opt_int(r["nnodes"])
    runtime = jc.opt_float(r["runtime_s"])
    return {
        "id": r["log_hash"], "path": r["path"], "ingested_at": ns_to_iso(r["ingested_ns"]),
        "job": {"jobid": jc.opt_int(r["jobid"]), "uid": jc.opt_int(r["uid"]), "exe": r["exe"],
                "nprocs": jc.opt_int(r["nprocs"]), "nnodes": nnodes,
                "start": None if r["start_ns"] is None else ns_to_iso(r["start_ns"]),
                "end": None if r["end_ns"] is None else ns_to_iso(r["end_ns"]), "runtime_s": runtime,
                "log_version": r["log_version"], "partial_modules": jc.codes(r["partial_modules"]),
                "modules": jc.codes(r["modules"])},
        "totals": {k: r[k] for k in ("bytes_read", "bytes_written", "files", "read_time_s", "write_time_s",
                                     "meta_time_s")},
        "perf": {"mibps": jc.opt_float(r["mibps"]), "agg_perf_by_slowest_mibps": jc.opt_float(r["agg_perf_by_slowest_mibps"]),
                 "io_time_s": jc.opt_float(r["io_time_s"]), "io_fraction_of_runtime": jc.opt_float(r["io_fraction"]),
                 "mibps_per_node": mibps_per_node(jc.opt_float(r["mibps"]), nnodes)},
        "access": {"common_access_bytes": jc.opt_int(r["common_access_bytes"]),
                   "seq_fraction": jc.opt_float(r["seq_fraction"])},
        "sharing": {k: jc.opt_int(r[c]) for k, c in (
            ("unique", "unique_files"), ("shared", "shared_files"), ("partially_shared", "partially_shared_files"),
            ("unique_bytes", "unique_bytes"), ("shared_bytes", "shared_bytes"),
            ("partially_shared_bytes", "partially_shared_bytes"))},
        "level": highest_level(jc.codes(r["finding_codes"])),
        "verdict": r.get("verdict"),
        "findings": _findings(r),
        "files_stored": files is not None,
        "interfaces": per_module(files) if files is not None else [],
        "mounts": [{**m, "lustre_text": lustre_text(m.get("lustre"))} for m in per_mount(files)]
        if files is not None else [],
        # Parquet parts written before the layout was stored lack its columns
        "stripes_stored": files is not None and all(c in files.columns for c in LUSTRE_FILE_COLUMNS),
        "top_files": top_files(files, TOP_FILES) if files is not None else [],
    }


def _findings(r: dict) -> list[dict]:
    """HIGH/WARN findings, most expensive first, with cost and message when the row has them
    (cost_s None: ingested before the store kept costs)."""
    described = describe_codes(jc.codes(r["finding_codes"]))
    if not r.get("findings_json"):
        return [{**f, "cost_s": None, "cost_share": None, "message": None, "fix": None} for f in described]
    what = {f["code"]: f["what"] for f in described}
    stored = json.loads(r["findings_json"])
    stored.sort(key=lambda f: -(f.get("cost_s") or 0.0))  # stable: the report's order on ties
    return [{**f, "what": what.get(f["code"], "")} for f in stored]


PAGE = Page(slug="job", script="jobs.js", title="Job", data=job_data,
            template="job.html", available=jc.has_jobs, order=41, in_nav=False,
            description="One Darshan job: characterization, findings, interfaces, file systems, files.")
