"""The file systems a store holds telemetry for: the `telemetry/fs=NAME` directories, listed.

Apart from store/job_telemetry.py (which re-exports it) because a directory listing needs neither numpy nor
pyarrow: `why JOB` asks it on every call, also for a job whose file system has no telemetry (issue 40).
"""

from __future__ import annotations

from pathlib import Path


def known_fs(parquet_dir: Path) -> list[str]:
    d = Path(parquet_dir) / "telemetry"
    return sorted(p.name[3:] for p in d.glob("fs=*") if p.is_dir()) if d.is_dir() else []
