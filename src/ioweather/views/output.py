"""Printing results: a rich table for people, JSON for programs.

`--json` output goes to stdout and nothing else does; messages and progress go to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ioweather.encoding import to_json

# Piped output (a file, grep, a pager) gets wide tables rather than rich's 80-column truncation.
stdout = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
# Messages carry names users chose (targets, labels, paths): a `[/oops]` in one must print as
# written, not be read as rich markup (a MarkupError, or a silently applied style).
stderr = Console(stderr=True, markup=False, highlight=False)


def plain(value: Any) -> Text:
    """`value` as text that rich never reads as markup: the one way data reaches a table or a styled line."""
    return value if isinstance(value, Text) else Text(str(value))


def print_json(obj: Any) -> None:
    sys.stdout.write(to_json(obj) + "\n")
    sys.stdout.flush()


Column = tuple[str, str] | tuple[str, str, Callable[[Any], str]]


def print_table(rows: Iterable[dict], columns: Sequence[Column], *, title: str | None = None,
                row_style: Callable[[dict], str | None] | None = None, empty: str = "no data") -> None:
    """A table of `rows` with `columns` = (key, header[, formatter]). Styles are extra, text carries the meaning."""
    rows = list(rows)
    if not rows:
        stderr.print(empty)
        return
    table = Table(title=plain(title) if title is not None else None, header_style="bold")
    for col in columns:
        left = col[0] in ("target", "op", "interval_start", "label", "name", "state")
        table.add_column(col[1], justify="left" if left else "right", no_wrap=True)
    for row in rows:
        cells = []
        for col in columns:
            value = row.get(col[0])
            fmt = col[2] if len(col) > 2 else None
            cells.append(plain("-" if value is None else (fmt(value) if fmt else value)))
        table.add_row(*cells, style=row_style(row) if row_style else None)
    stdout.print(table)


def short_time(iso: str) -> str:
    """'2026-11-22T03:40:00.000Z' -> '2026-11-22 03:40:00' for tables (JSON keeps the full form)."""
    return iso.replace("T", " ")[:19]


def progress(transient: bool = True) -> Progress:
    """A progress bar on stderr (hidden when stderr is not a terminal)."""
    return Progress(
        TextColumn("{task.description}", markup=False, style="progress.description"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=stderr, transient=transient,
        disable=not stderr.is_terminal,
    )
