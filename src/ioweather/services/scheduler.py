"""Importing scheduler jobs: run sacct or read a saved file / the NERSC jobs database, parse
(sources/scheduler.py), store (store/scheduler.py), and say what happened."""

from __future__ import annotations

import os
import time

from ioweather.errors import UserError
from ioweather.sources import scheduler as src
from ioweather.store import open_store
from ioweather.store import scheduler as sched
from ioweather.units import ns_to_iso

#: --since default for a live import without one.
DEFAULT_SINCE_S = 24 * 3600


def import_slurm(settings, file: str | None = None, *, since_ns: int | None = None, until_ns: int | None = None,
                 cluster: str | None = None, tz: str | None = None,
                 sacct_timeout_s: float = src.SACCT_TIMEOUT_S) -> dict:
    """Live from sacct over [since, until) (default: the last 24 h), or from a saved file (then
    --since/--until keep only the jobs that ran in that window). Returns the import summary."""
    zone = tz or src.local_zone()
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        raise UserError("--until must be after --since")
    if file is None:
        now = time.time_ns()
        until = until_ns if until_ns is not None else now
        since = since_ns if since_ns is not None else until - DEFAULT_SINCE_S * 1_000_000_000
        parsed = src.run_sacct(since, until, tz=zone, cluster=cluster, timeout_s=sacct_timeout_s)
        source = "sacct"
    else:
        parsed = src.read_sacct_file(file, tz=zone, cluster=cluster)
        parsed.rows = _in_window(parsed.rows, since_ns, until_ns, parsed.notes)
        source = f"sacct-file:{os.path.abspath(file)}"
    return _store(settings, parsed, source, cluster, zone)


def import_nersc_jobsdb(settings, path: str) -> dict:
    parsed = src.read_nersc_jobsdb(path)
    return _store(settings, parsed, f"nersc-jobsdb:{os.path.abspath(path)}", None, "UTC (unix times)")


def _in_window(rows: list[dict], since_ns, until_ns, notes: list[str]) -> list[dict]:
    if since_ns is None and until_ns is None:
        return rows
    now = time.time_ns()
    kept = [r for r in rows
            if (until_ns is None or r["start_ns"] < until_ns)
            and (since_ns is None or (r["end_ns"] if r["end_ns"] is not None else now) > since_ns)]
    if len(kept) < len(rows):
        notes.append(f"{len(rows) - len(kept)} jobs outside --since/--until left out")
    return kept


def _store(settings, parsed: src.Parsed, source: str, cluster: str | None, zone: str) -> dict:
    notes = list(parsed.notes)
    store = open_store(settings)
    try:
        replaced = sched.replace_jobs(store, parsed.rows, source) if parsed.rows else 0
        if parsed.rows:
            _refresh_weather(store, parsed.rows)
    finally:
        store.dispose()
    clusters = sorted({r["cluster"] for r in parsed.rows})
    if not parsed.rows:
        notes.append("no jobs to import")
    return {
        "source": source,
        "cluster": cluster if cluster is not None else (clusters[0] if len(clusters) == 1 else ",".join(clusters)),
        "timezone": zone,
        "jobs": len(parsed.rows),
        "running": sum(r["end_ns"] is None for r in parsed.rows),
        "replaced": replaced,
        "first_start": ns_to_iso(min(r["start_ns"] for r in parsed.rows)) if parsed.rows else None,
        "last_start": ns_to_iso(max(r["start_ns"] for r in parsed.rows)) if parsed.rows else None,
        "notes": notes,
    }


def _refresh_weather(store, rows: list[dict]) -> None:
    """Jobs that ran beside the imported ones have other concurrent jobs now: their weather and verdicts
    are recomputed (and new Darshan jobs get theirs)."""
    from ioweather.services.job_weather import after_import

    now = time.time_ns()
    started = [r for r in rows if r.get("start_ns") is not None]
    if started:
        after_import(store, min(r["start_ns"] for r in started),
                     max(r["end_ns"] if r.get("end_ns") is not None else now for r in started))
