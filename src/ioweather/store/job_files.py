"""Where the Darshan jobs' per-file parts live (Parquet under the home): a module of its own, without SQLAlchemy,
for the readers of those parts that never touch the job table's rows through it (`why`, store/job_telemetry.py)."""

from __future__ import annotations

from pathlib import Path


def files_dir(parquet_dir: Path) -> Path:
    return Path(parquet_dir) / "jobs"
