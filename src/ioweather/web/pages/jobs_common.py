"""What the Jobs list and the job page share: the store's job rows, read once per change, and findings' levels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import sqlalchemy as sa

from ioweather.store import jobs as jobs_store
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_component
from ioweather.web.params import NotFound

HINT = ("Read Darshan logs into the store with `ioweather jobs ingest PATH...` (files, or directories searched "
        "for *.darshan), then reload this page.")

#: The findings the store keeps per job (`finding_codes`: those of level HIGH or WARN; docs/darshan.md).
#: The ingest stores codes only, so their level and meaning are looked up here; a test checks this table
#: against `stats.findings.job_findings` on real logs.
FINDINGS = {
    "S01": ("HIGH", "more than 10 % of the bytes through STDIO (fopen/fwrite)"),
    "M01": ("WARN", "an MPI job that does not use MPI-IO"),
    "P05": ("HIGH", "many small reads (below 1 MiB)"),
    "P06": ("HIGH", "many small writes (below 1 MiB)"),
    "P07": ("HIGH", "requests not aligned in memory"),
    "P08": ("HIGH", "requests not aligned in the file"),
    "P09": ("WARN", "a file read for more bytes than its size: data read again"),
    "P10": ("WARN", "a file written for more bytes than its size: data written again"),
    "P11": ("HIGH", "many random (backwards) reads"),
    "P13": ("HIGH", "many random (backwards) writes"),
    "P15": ("HIGH", "many small reads to shared files"),
    "P16": ("HIGH", "many small writes to shared files"),
    "P17": ("HIGH", "a rank spends more than 30 s in metadata operations"),
    "P18": ("HIGH", "shared file with a straggler rank by bytes"),
    "P19": ("HIGH", "shared file with a straggler rank by time"),
    "P21": ("HIGH", "files written by several ranks with unbalanced bytes"),
    "P22": ("HIGH", "files read by several ranks with unbalanced bytes"),
    "M02": ("HIGH", "many independent MPI-IO reads and no collective ones"),
    "M03": ("HIGH", "many independent MPI-IO writes and no collective ones"),
    "M06": ("WARN", "no non-blocking MPI-IO reads"),
    "M07": ("WARN", "no non-blocking MPI-IO writes"),
    "R01": ("WARN", "all data moved by rank 0 of an MPI job"),
    "F01": ("WARN", "more than 10 files per process"),
}
LEVEL_RANK = {"HIGH": 2, "WARN": 1}

#: Job-row columns the pages read (the per-file table stays in Parquet until one job is opened).
COLUMNS = list(dict.fromkeys(jobs_store.SUMMARY_COLUMNS + ["jobid", "start_ns", "runtime_s", "finding_codes"]))


def codes(text) -> list[str]:
    return [c for c in (text or "").split(",") if c]


def findings(text) -> list[dict]:
    out = []
    for c in codes(text):
        level, what = FINDINGS.get(c, (None, "finding not known to this version of the dashboard"))
        out.append({"code": c, "level": level, "what": what})
    out.sort(key=lambda f: (-LEVEL_RANK.get(f["level"], 0), f["code"]))
    return out


def highest_level(text) -> str | None:
    """HIGH, WARN, or None when the job has neither (its other findings are INFO or OK)."""
    ranks = [LEVEL_RANK.get(FINDINGS.get(c, ("WARN",))[0], 1) for c in codes(text)]
    if not ranks:
        return None
    return "HIGH" if max(ranks) == 2 else "WARN"


def has_jobs(ctx: WebContext) -> bool:
    if not has_component(ctx, jobs_store.COMPONENT):
        return False
    return jobs_store.count_jobs(ctx.store) + jobs_store.count_failed(ctx.store) > 0


def require_jobs(ctx: WebContext) -> None:
    if not has_jobs(ctx):
        raise NotFound(f"No Darshan jobs in the store at {ctx.where}. {HINT}")


def fingerprint(ctx: WebContext) -> tuple:
    """Changes whenever a job or a failed log is stored (rows are only ever added or replaced by newer ones)."""
    j, f = jobs_store.jobs, jobs_store.failed_logs
    with ctx.store.connect() as conn:
        a = conn.execute(sa.select(sa.func.count(), sa.func.max(j.c.ingested_ns))).one()
        b = conn.execute(sa.select(sa.func.count(), sa.func.max(f.c.failed_ns))).one()
    return tuple(a) + tuple(b)


def num(df: pd.DataFrame, col: str) -> np.ndarray:
    return pd.to_numeric(df[col], errors="coerce").to_numpy(np.float64)


def opt_int(v) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def opt_float(v) -> float | None:
    return None if v is None or pd.isna(v) or not np.isfinite(float(v)) else float(v)
