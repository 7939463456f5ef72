"""`ioweather import KIND SOURCE...` of a telemetry kind, and what it changes for the jobs.

The import itself is the telemetry domain's (services/telemetry/imports.py); new telemetry then changes
the weather of the jobs whose window it covers (services/jobs/weather.py), so that answer joins two
domains and lives here, above both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ioweather import signals
from ioweather.encoding import Answer, answer_dict
from ioweather.services.jobs.weather import after_import
from ioweather.services.telemetry import imports as telemetry_imports
from ioweather.services.telemetry.imports import ImportSummary, SourceImport
from ioweather.services.telemetry.imports import check_fs_name  # noqa: F401  the command checks --fs first
from ioweather.store import open_store
from ioweather.store.jobs import COMPONENT
from ioweather.units import parse_time, to_ns


@dataclass(frozen=True)
class WeatherRefresh:
    """The jobs' weather after an import (services.jobs.weather.refresh_all): Darshan jobs in the store,
    computed now, kept, skipped, and of those computed the ones whose window the import's span covers."""

    jobs: int
    computed: int
    kept: int
    skipped: int
    overlapped: int


@dataclass(frozen=True)
class TelemetryImport(Answer):
    """`import KIND SOURCE... --json`: the import (`ImportSummary`'s fields), then the jobs' weather it
    changed (None when nothing was imported or the store holds no Darshan jobs) and the retention note
    (None when nothing was imported)."""

    imported: ImportSummary
    job_weather: WeatherRefresh | None
    retention: str | None

    def to_json(self) -> dict:
        return {**self.imported.to_json(), "job_weather": None if self.job_weather is None else answer_dict(self.job_weather),
                "retention": self.retention}


def import_sources(settings, kind: str, sources, fs: str, *,
                   on_error: Callable[[str], None] = lambda m: None, on_note: Callable[[str], None] = lambda m: None,
                   **kw) -> TelemetryImport:
    """services.telemetry.imports.import_sources, then the weather of the jobs the imported span covers
    (`job_weather`: None when nothing was imported). SIGTERM stops the refresh as it stops the import."""
    with signals.interrupting():
        done = telemetry_imports.import_sources(settings, kind, sources, fs, on_error=on_error, on_note=on_note, **kw)
        spans = [(to_ns(parse_time(r.start)), to_ns(parse_time(r.end))) for r in done.sources
                 if isinstance(r, SourceImport) and r.rows and r.start and r.end]
        span = (fs, min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
        weather = _refresh_job_weather(settings, span) if done.rows else None
        return TelemetryImport(imported=done, job_weather=None if weather is None else WeatherRefresh(**weather),
                               retention=RETENTION_NOTE if done.rows else None)


#: Said once per import (issue 38 item 3): the retention settings never remove history brought in on purpose.
RETENTION_NOTE = ("imported history is kept until `ioweather store prune --older-than AGE` removes it; "
                  "the retention settings (IOWEATHER_RETAIN_TELEMETRY) bound only what collect records live")


def _refresh_job_weather(settings, span: tuple[str, int, int] | None = None) -> dict | None:
    """New telemetry changes the weather of the jobs whose window it covers (METHODS.md section 7):
    those are recomputed now, with their verdicts, so that the Jobs list does not show an answer
    from before the import. {jobs, computed, kept, skipped}; None when the store holds no Darshan jobs
    (a telemetry-only store is not created or extended here). `collect` does not do this on every
    flush: `umami JOB` and the next import or ingest find the changed windows by their signatures."""
    if not settings.store_exists():
        return None
    store = open_store(settings)
    try:
        if COMPONENT.name not in store.versions():
            return None
        refreshed = after_import(store, span=span)
        return None if refreshed is None else refreshed.to_json()
    finally:
        store.dispose()
