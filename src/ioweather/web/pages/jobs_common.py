"""What the Jobs list and the job page share: whether there are jobs, the columns they read, small converters."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ioweather.store import jobs as jobs_store
from ioweather.web.context import WebContext
from ioweather.web.pages.common import has_component
from ioweather.web.params import NotFound

# pandas is imported where used: every page module is imported at the dashboard's start (its memory).
if TYPE_CHECKING:
    import pandas as pd

HINT = ("Read Darshan logs into the store with `ioweather jobs ingest PATH...` (files, or directories searched "
        "for *.darshan), then reload this page.")

#: Job-row columns the pages read (the per-file table stays in Parquet until one job is opened).
COLUMNS = list(dict.fromkeys(jobs_store.SUMMARY_COLUMNS + ["jobid", "start_ns", "runtime_s", "finding_codes",
                                                                   "verdict"]))


def codes(text) -> list[str]:
    return [c for c in (text or "").split(",") if c]


def has_jobs(ctx: WebContext) -> bool:
    if not has_component(ctx, jobs_store.COMPONENT):
        return False
    return jobs_store.count_jobs(ctx.store) + jobs_store.count_failed(ctx.store) > 0


def require_jobs(ctx: WebContext) -> None:
    if not has_jobs(ctx):
        raise NotFound(f"No Darshan jobs in the store at {ctx.where}. {HINT}")


def num(df: pd.DataFrame, col: str) -> np.ndarray:
    import pandas as pd

    return pd.to_numeric(df[col], errors="coerce").to_numpy(np.float64)


def opt_int(v) -> int | None:
    import pandas as pd

    return None if v is None or pd.isna(v) else int(v)


def opt_float(v) -> float | None:
    import pandas as pd

    return None if v is None or pd.isna(v) or not np.isfinite(float(v)) else float(v)
