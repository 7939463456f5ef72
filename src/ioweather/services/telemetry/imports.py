"""`ioweather import KIND SOURCE...`: each SOURCE read by its importer (sources/telemetry/importers.py),
turned into rows (ingest.py, beside it), written as one import that replaces the earlier one or rolls back
(store/telemetry_imports.py), and summarised. What the new telemetry changes for the jobs' weather is
services/answers/imports.py's (it joins this domain with jobs/). The command only parses arguments and prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ioweather import signals
from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError
from ioweather.services.telemetry.ingest import MAX_NAME, impossible_to_missing, overlong_names, source_writer, to_long
from ioweather.sources.telemetry.importers import importer
from ioweather.store import telemetry_layout as layout
from ioweather.store.telemetry_imports import ImportRun
from ioweather.views.output import progress


@dataclass(frozen=True)
class SourceImport:
    """One SOURCE imported: its rows (`missing_values` of them stored as missing), their span (ISO 8601
    UTC), targets, rows per metric, the data files written and those of an earlier import it replaced,
    how long it took, the input lines the importer could not read, and its notes."""

    source: str
    kind: str
    fs: str
    rows: int
    missing_values: int
    start: str | None
    end: str | None
    targets: int
    metrics: dict[str, int]
    files: int
    replaced_files: int
    seconds: float
    rows_per_s: float | None
    bad_lines: int
    notes: list[str]


@dataclass(frozen=True)
class FailedSource:
    """A SOURCE that could not be imported (nothing of it stored), and why."""

    source: str
    kind: str
    fs: str
    error: str


@dataclass(frozen=True)
class ImportSummary(Answer):
    """The import of every SOURCE of one kind into `fs`: rows in all, sources that failed, each source's."""

    kind: str
    fs: str
    rows: int
    failed: int
    sources: list[SourceImport | FailedSource]

    def to_json(self) -> dict:
        return {**answer_dict(self), "sources": [answer_dict(r) for r in self.sources]}


def _in_range(frame, since_ns: int | None, until_ns: int | None):
    if since_ns is not None:
        frame = frame[frame["time_ns"] >= since_ns]
    if until_ns is not None:
        frame = frame[frame["time_ns"] <= until_ns]
    return frame


def _impossible_notes(counts: dict[str, int]) -> list[str]:
    notes = []
    if counts["infinite"]:
        notes.append(f"{counts['infinite']} infinite values (inf, or too large for a number) stored as missing")
    if counts["interval"]:
        notes.append(f"{counts['interval']} rows with an impossible interval (zero, negative, infinite, "
                     "under a microsecond or over ten years): stored as missing")
    return notes


def import_one(settings, kind: str, source: str, fs: str, *, tz: str | None = None, since_ns: int | None = None,
               until_ns: int | None = None, **options) -> SourceImport:
    """Import one SOURCE with the importer of `kind`; on any failure its rows are removed again.

    `options` are the importer's own (csv: interval, cumulative; lfsdf: at_ns); those another kind
    takes are ignored, so one call shape serves every kind. Returns the source's summary."""
    cls = importer(kind)
    imp = cls(source, tz=tz, since_ns=since_ns, until_ns=until_ns, fs=fs,
              **{k: v for k, v in options.items() if k in cls.option_names()})
    run = ImportRun(settings, fs, source_writer(kind, imp.ident()))
    impossible = {"infinite": 0, "interval": 0}
    overlong, first_overlong = 0, None
    t0 = time.perf_counter()
    try:
        with imp, progress() as bar:
            task = bar.add_task(imp.label(), total=imp.total())
            for chunk in imp.chunks(lambda n: bar.advance(task, n)):
                frame, n_long, name = overlong_names(_in_range(to_long(chunk), since_ns, until_ns))
                overlong, first_overlong = overlong + n_long, first_overlong or name
                frame, counts = impossible_to_missing(frame)
                for k, n in counts.items():
                    impossible[k] += n
                run.write(frame)
        notes = imp.notes + _impossible_notes(impossible)
        if overlong:
            notes.append(f"{overlong} rows left out: target or metric names longer than {MAX_NAME} characters "
                         f"(first: {first_overlong!r})")
        run.finish()
        if run.rows == 0:
            detail = f" ({'; '.join(notes)})" if notes else ""
            where = " in the given time range" if since_ns or until_ns else ""
            raise UserError(f"{source}: no rows to import{where}{detail}")
        replaced = run.commit()
    except BaseException:
        run.rollback()
        raise
    seconds = time.perf_counter() - t0
    return SourceImport(source=imp.display(), kind=kind, **run.summary(), replaced_files=replaced, seconds=seconds,
                        rows_per_s=run.rows / seconds if seconds > 0 else None, bad_lines=imp.bad_lines, notes=notes)


def import_sources(settings, kind: str, sources, fs: str, *,
                   on_error: Callable[[str], None] = lambda m: None, on_note: Callable[[str], None] = lambda m: None,
                   **kw) -> ImportSummary:
    """Each SOURCE on its own: one that fails is reported through `on_error` and leaves nothing
    behind, the others are still imported. SIGTERM (systemd, a scheduler's time limit) rolls an
    import back as Ctrl-C does; kill -9 cannot be caught, and store/telemetry_imports.py makes that
    safe too."""
    with signals.interrupting() as stopping:
        results: list[SourceImport | FailedSource] = []
        failed = 0
        for source in sources:
            try:
                r = import_one(settings, kind, source, fs, **kw)
            except Exception as e:
                if stopping.is_set():  # a library's own interrupt error (DuckDB: "Query interrupted")
                    raise KeyboardInterrupt from None
                if not isinstance(e, UserError):
                    raise
                failed += 1
                on_error(str(e))
                results.append(FailedSource(source=source, kind=kind, fs=fs, error=str(e)))
                continue
            for note in r.notes:
                on_note(note)
            results.append(r)
        rows = sum(r.rows for r in results if isinstance(r, SourceImport))
        return ImportSummary(kind=kind, fs=fs, rows=rows, failed=failed, sources=results)


def check_fs_name(fs: str) -> str:
    """FS if it can name a telemetry data set (letters, digits, '.', '_', '-'), else one line, before any work."""
    return layout.check_fs_name(fs)
