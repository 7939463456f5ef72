"""Whether the store holds any Darshan job: the dashboard's navigation asks it for every page.

Apart from services/jobs/darshan.py, which loads pandas and pyarrow (~0.3 s): a dashboard of a store
without telemetry (a probe's own, `ioweather watch`) paid that import in its first page after a start
(issue 40), for a count.
"""

from __future__ import annotations

from ioweather.store import jobs as jobs_store


def has_jobs(store) -> bool:
    """Whether the store holds any job or failed log (without creating the jobs tables)."""
    if jobs_store.COMPONENT.name not in store.versions():
        return False
    return jobs_store.count_jobs(store) + jobs_store.count_failed(store) > 0
