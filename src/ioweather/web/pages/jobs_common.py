"""What the Jobs list and the job page share: whether there are jobs, the columns they read, small converters."""

from __future__ import annotations

import numpy as np

from ioweather.web.context import WebContext
from ioweather.web.params import NotFound

# pandas is imported where used: every page module is imported at the dashboard's start (its memory).

HINT = ("Read Darshan logs into the store with `ioweather jobs ingest PATH...` (files, or directories searched "
        "for *.darshan), then reload this page.")

#: Job-row columns the pages read besides the summary's (the per-file table stays in Parquet until one job is opened).
COLUMNS = ["jobid", "start_ns", "runtime_s", "finding_codes", "verdict"]


def codes(text) -> list[str]:
    return [c for c in (text or "").split(",") if c]


def has_jobs(ctx: WebContext) -> bool:
    from ioweather.services.darshan import has_jobs as stored  # pandas: see pages/__init__.py

    return ctx.settings.store_exists() and stored(ctx.store)


def require_jobs(ctx: WebContext) -> None:
    if not has_jobs(ctx):
        raise NotFound(f"No Darshan jobs in the store at {ctx.where}. {HINT}")


def opt_int(v) -> int | None:
    import pandas as pd

    return None if v is None or pd.isna(v) else int(v)


def opt_float(v) -> float | None:
    import pandas as pd

    return None if v is None or pd.isna(v) or not np.isfinite(float(v)) else float(v)
