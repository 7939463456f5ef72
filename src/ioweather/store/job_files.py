"""Where the Darshan jobs' per-file parts live (Parquet under the home): a module of its own, without SQLAlchemy,
for the readers of those parts that never touch the job table's rows through it (`why`, store/job_telemetry.py)."""

from __future__ import annotations

from pathlib import Path


def files_dir(parquet_dir: Path) -> Path:
    return Path(parquet_dir) / "jobs"


def is_part_name(name: str) -> bool:
    """A name in `files_dir` that is a part or a part being written: removed by the next ingest when no job
    row names it (store.jobs.remove_orphan_parts)."""
    return name.endswith(".parquet") or name.endswith(".tmp")
