"""The one interface of `ioweather import KIND SOURCE...` (the recorded-history twin of base.Source).

An importer reads one SOURCE (a file, an archive, a database URL) and yields raw chunks (base.Wide
or base.Long): counters stay cumulative, the service (services/telemetry.py) turns the chunks
into rows, filters --since/--until, writes them through the store and rolls back on failure.
What an importer owes the user: a UserError of one line for anything wrong with its input
(files opened with files.open_regular, OS errors worded by errors.from_os_error, library
errors of a damaged file caught where they happen), and notes for what it left out or changed.

A new importer is one module: a subclass of `Importer` with `kind`, `help`, its `options`, and
`open`/`chunks`/`close`; plus one line in REGISTRY below. The `import` command makes a click
sub-command of each kind from these attributes. This module stays light (no pandas), so that
the command line does not pay for importing every importer to start.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

# kind -> "module in sources/telemetry:class"; imported only when that kind is asked for
REGISTRY = {
    "lmt": "lmt:LmtImporter",
    "iostat": "iostat_json:IostatImporter",
    "tts": "tts:TtsImporter",
    "csv": "csv_long:CsvImporter",
    "mmperfmon": "mmperfmon:MmperfmonImporter",
    "lfsdf": "lfsdf:LfsdfImporter",
    "lctl": "lctl:LctlImporter",
    "lctl-params": "lctl_source:LctlParamsImporter",
}


@dataclass(frozen=True)
class Option:
    """An option of one importer kind, beyond those every kind has (--fs, --since, --until)."""

    flag: str                 # "--interval"
    dest: str                 # keyword argument of the importer's constructor
    help: str
    type: str = "text"        # "duration" (seconds), "time" (unix ns), "flag" (bool) or "text"


class Importer:
    """Base of importers. Use as a context manager: `with cls(source, ...) as imp: imp.chunks(...)`."""

    kind: ClassVar[str] = "importer"
    help: ClassVar[str] = ""                 # the sub-command's help; its first line is the short help
    options: ClassVar[tuple[Option, ...]] = ()
    timezone: ClassVar[bool] = True          # whether --timezone (times written without offset) applies

    def __init__(self, source: str, *, tz: str | None = None, since_ns: int | None = None,
                 until_ns: int | None = None, fs: str | None = None, **options: Any):
        self.source = source
        self.tz = tz
        self.since_ns = since_ns
        self.until_ns = until_ns
        self.fs = fs
        self.notes: list[str] = []
        self.bad_lines = 0
        for opt in self.options:
            setattr(self, opt.dest, options.get(opt.dest))

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
        """Wide or Long chunks, in any order; `advance(n)` reports progress."""
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
    return getattr(importlib.import_module(f"{__package__}.{module}"), cls)
