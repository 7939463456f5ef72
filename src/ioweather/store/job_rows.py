"""What a job row holds before the store sees it: the interfaces whose bytes it keeps, and its values as the
drivers take them. A module of its own, without SQLAlchemy: the ingest's workers make rows, and the parent forks
them before it imports SQLAlchemy (services/jobs/ingest.py, issue 40)."""

from __future__ import annotations

#: Interfaces whose bytes are kept per job (column prefix in `jobs`).
INTERFACE_COLUMNS = {"POSIX": "posix", "STDIO": "stdio", "MPI-IO": "mpiio", "H5D": "h5d",
                     "PNETCDF_VAR": "pnetcdf", "DFS": "dfs", "DAOS": "daos"}


def job_row_values(row: dict) -> dict:
    """Normalize numpy scalars to Python for the drivers."""
    # lazy: numpy, loaded only when a log was read (a re-ingest of an unchanged archive loads none of it)
    import numpy as np

    out = {}
    for k, v in row.items():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not np.isfinite(v):
            v = None
        out[k] = v
    return out
