"""The one interface of `ioweather import KIND ...` (the recorded-history twin of base.Source).

An importer reads one SOURCE (a file, an archive, a database URL) and yields raw chunks. What the
chunks are is its `target`:
- "telemetry": base.Wide or base.Long chunks of a file system's data set (`import KIND SOURCE...
  --fs FS [--timezone] --since --until`). Counters stay cumulative; the service
  (services/telemetry/imports.py) turns the chunks into rows, filters --since/--until, writes them through
  the store and rolls back on failure.
- "jobs": lists of scheduler job rows, the columns of the store's `sched_jobs` (`import KIND
  [FILE]`, sources/scheduler.py). The service (services/jobs/scheduler.py) stores them in one
  transaction and summarises. Such a kind declares its own --since/--until/--timezone among its
  `options` (their help is its own: sacct's local times, its default window), and reads live
  when `live` and no FILE is given.
What an importer owes the user: a UserError of one line for anything wrong with its input
(files opened with files.open_regular, OS errors worded by errors.from_os_error, library
errors of a damaged file caught where they happen), and notes for what it left out or changed.

A new importer is one module: a subclass of `Importer` with `kind`, `help`, its `options`, and
`open`/`chunks`/`close` (and `target` when it is not telemetry); plus one line in REGISTRY below.
The `import` command makes a click sub-command of each kind from these attributes. This module stays light (no pandas), so that
the command line does not pay for importing every importer to start.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

# kind -> "module in ioweather.sources:class"; imported only when that kind is asked for
REGISTRY = {
    "lmt": "telemetry.lmt:LmtImporter",
    "iostat": "telemetry.iostat_json:IostatImporter",
    "tts": "telemetry.tts:TtsImporter",
    "csv": "telemetry.csv_long:CsvImporter",
    "mmperfmon": "telemetry.mmperfmon:MmperfmonImporter",
    "lfsdf": "telemetry.lfsdf:LfsdfImporter",
    "lctl": "telemetry.lctl:LctlImporter",
    "lctl-params": "telemetry.lctl_source:LctlParamsImporter",
    "slurm": "scheduler:SlurmImporter",
    "nersc-jobsdb": "scheduler:NerscJobsdbImporter",
}


@dataclass(frozen=True)
class Option:
    """An option of one importer kind, beyond those its target gives every kind (telemetry: --fs,
    --timezone, --since, --until)."""

    flag: str                 # "--interval"
    dest: str                 # keyword argument of the importer's constructor
    help: str
    # "duration" (seconds), "time" (unix ns), "since" (unix ns; also a duration ago), "flag" (bool) or "text"
    type: str = "text"
    default: str | None = None  # as typed on the command line ("120s"), shown in --help
    metavar: str | None = None


class Importer:
    """Base of importers. Use as a context manager: `with cls(source, ...) as imp: imp.chunks(...)`."""

    kind: ClassVar[str] = "importer"
    help: ClassVar[str] = ""                 # the sub-command's help; its first line is the short help
    options: ClassVar[tuple[Option, ...]] = ()
    timezone: ClassVar[bool] = True          # whether --timezone (times written without offset) applies
    target: ClassVar[str] = "telemetry"      # what the chunks are: "telemetry" or "jobs" (module docstring)
    live: ClassVar[bool] = False             # "jobs": reads live (sacct) when no FILE is given

    def __init__(self, source: str | None, *, tz: str | None = None, since_ns: int | None = None,
                 until_ns: int | None = None, fs: str | None = None, **options: Any):
        for opt in self.options:
            setattr(self, opt.dest, options.get(opt.dest))
        # after the kind's own options: a kind that declares --since or --timezone itself fills these
        self.source = source
        self.tz = tz
        self.since_ns = since_ns
        self.until_ns = until_ns
        self.fs = fs
        self.notes: list[str] = []
        self.bad_lines = 0

    @classmethod
    def option_names(cls) -> set[str]:
        return {o.dest for o in cls.options}

    def ident(self) -> str:
        """What names this source across imports (its writer name derives from it)."""
        return self.source if "://" in self.source else os.path.abspath(self.source)

    def display(self) -> str:
        """The source as reports show it (a URL without its password)."""
        return self.source

    def label(self) -> str:
        return f"{self.kind} {Path(self.source).name}"

    def open(self) -> None:
        """Check and open the source; raise UserError when it cannot be read."""

    def total(self) -> int | None:
        """Units of progress `chunks` will report (None: unknown until the end)."""
        return None

    def chunks(self, advance: Callable[[int], None]) -> Iterator[Any]:
        """Chunks of the target's kind (Wide or Long; lists of job rows), in any order; `advance(n)`
        reports progress."""
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> Importer:
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def kinds() -> list[str]:
    return list(REGISTRY)


def importer(kind: str) -> type[Importer]:
    """The importer class of `kind` (KeyError for an unknown kind)."""
    module, cls = REGISTRY[kind].split(":")
    return getattr(importlib.import_module(f"ioweather.sources.{module}"), cls)
