"""`ioweather import slurm`, `import nersc-jobsdb`: run an importer of target "jobs" (sources/scheduler.py:
sacct live, a saved file, the NERSC jobs database), store its rows (store/scheduler.py), and say
what happened."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ioweather import signals
from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.jobs.weather import after_import
from ioweather.sources.telemetry.importers import importer
from ioweather.store import open_store
from ioweather.store import scheduler as sched
from ioweather.units import check_timezone, ns_to_iso
from ioweather.views.output import progress


@dataclass(frozen=True)
class JobsImport(Answer):
    """`import slurm|nersc-jobsdb --json`: the source read, its cluster(s), the zone its local times were
    read in, jobs stored (running: no end yet), stored jobs they replaced, the first and last start
    (ISO 8601 UTC; None without jobs), and notes."""

    source: str
    cluster: str
    timezone: str
    jobs: int
    running: int
    replaced: int
    first_start: str | None
    last_start: str | None
    notes: list[str]


def import_jobs(settings, kind: str, source: str | None = None, **options) -> JobsImport:
    """Import the jobs of `source` (None: live, for a kind that can) with the importer of `kind`;
    `options` are the kind's own (slurm: since_ns, until_ns, cluster, tz, timeout_s). Returns the
    import summary. SIGTERM stops it as Ctrl-C does: the rows are stored in one transaction or not at all."""
    if options.get("tz") is not None:
        check_timezone(options["tz"])
    since_ns, until_ns = options.get("since_ns"), options.get("until_ns")
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        raise UserError("--until must be after --since")
    with signals.interrupting():
        with importer(kind)(source, **options) as imp, progress() as bar:
            task = bar.add_task(imp.label(), total=imp.total())
            rows = [row for chunk in imp.chunks(lambda n: bar.advance(task, n)) for row in chunk]
        return _store(settings, rows, imp.notes, imp.ident(), imp.cluster, imp.zone)


def _store(settings, rows: list[dict], notes: list[str], source: str, cluster: str | None, zone: str) -> JobsImport:
    notes = list(notes)
    store = open_store(settings)
    try:
        replaced = sched.replace_jobs(store, rows, source) if rows else 0
        if rows:
            _refresh_weather(store, rows)
    finally:
        store.dispose()
    clusters = sorted({r["cluster"] for r in rows})
    if not rows:
        notes.append("no jobs to import")
    return JobsImport(
        source=source,
        cluster=cluster if cluster is not None else (clusters[0] if len(clusters) == 1 else ",".join(clusters)),
        timezone=zone,
        jobs=len(rows),
        running=sum(r["end_ns"] is None for r in rows),
        replaced=replaced,
        first_start=ns_to_iso(min(r["start_ns"] for r in rows)) if rows else None,
        last_start=ns_to_iso(max(r["start_ns"] for r in rows)) if rows else None,
        notes=notes,
    )


def _refresh_weather(store, rows: list[dict]) -> None:
    """Jobs that ran beside the imported ones have other concurrent jobs now: their weather and verdicts
    are recomputed (and new Darshan jobs get theirs)."""
    now = time.time_ns()
    started = [r for r in rows if r.get("start_ns") is not None]
    if started:
        after_import(store, min(r["start_ns"] for r in started),
                     max(r["end_ns"] if r.get("end_ns") is not None else now for r in started))
