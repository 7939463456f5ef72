"""Printing results: a rich table for people, JSON for programs.

`--json` output goes to stdout and nothing else does; messages and progress go to stderr.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from ioweather.encoding import to_json  # noqa: F401  handed out with the tables (templating, web errors)
from ioweather.views.json_output import print_json  # noqa: F401  the commands' one import of their output
from ioweather.units import printable

# Piped output (a file, grep, a pager) gets wide tables rather than rich's 80-column truncation.
stdout = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
# Messages carry names users chose (targets, labels, paths): a `[/oops]` in one must print as
# written, not be read as rich markup (a MarkupError, or a silently applied style). Never wrapped: a
# message is one line, however long the path in it (rich wrapped at 80 columns when piped).
stderr = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)


def plain(value: Any) -> Text:
    """`value` as text that rich never reads as markup and a terminal never reads as control sequences
    (units.printable): the one way data reaches a table or a styled line."""
    return value if isinstance(value, Text) else Text(printable(str(value)))


Column = tuple[str, str] | tuple[str, str, Callable[[Any], str]]


def print_table(rows: Iterable[dict], columns: Sequence[Column], *, title: str | None = None,
                row_style: Callable[[dict], str | None] | None = None, empty: str = "no data") -> None:
    """A table of `rows` with `columns` = (key, header[, formatter]). Styles are extra, text carries the meaning.

    A number is never cut: numeric (right-aligned) columns keep their full width, text columns wrap,
    and when the numbers alone do not fit the terminal the rightmost columns are left out, with a
    line on stderr naming them (`--json` has everything)."""
    rows = list(rows)
    if not rows:
        stderr.print(empty)
        return
    cells = [[_cell(row, col) for col in columns] for row in rows]
    numeric = [all(NUMBER.match(r[i].plain) for r in cells) for i in range(len(columns))]
    need = [max([len(col[1])] + [r[i].cell_len for r in cells]) if numeric[i]
            else min(8, max(r[i].cell_len for r in cells)) for i, col in enumerate(columns)]
    keep = len(columns)
    # rich's box: one border at each side and one between columns, a space of padding either side of a cell.
    while keep > 1 and sum(need[:keep]) + 3 * keep + 1 > stdout.width:
        keep -= 1
    table = Table(title=plain(title) if title is not None else None, header_style="bold")
    for i, col in enumerate(columns[:keep]):
        justify = "left" if col[0] in TEXT_KEYS else "right"
        if numeric[i]:
            table.add_column(col[1], justify=justify, no_wrap=True, min_width=need[i])
        else:
            table.add_column(col[1], justify=justify, overflow="fold")
    for row, line in zip(rows, cells):
        table.add_row(*line[:keep], style=row_style(row) if row_style else None)
    stdout.print(table)
    if keep < len(columns):
        stderr.print(f"(columns left out to fit {stdout.width} characters: "
                     f"{', '.join(col[1] for col in columns[keep:])}; widen the terminal or use --json)")


#: Keys of left-aligned columns; the others are right-aligned.
TEXT_KEYS = frozenset(("target", "op", "interval_start", "label", "name", "state", "evidence", "culprits"))
#: A cell that is a number, a time or a formatted quantity ("21,234", "6.27 s", "1.5 KiB", "2026-03-02 10:00",
#: "-"): never cut nor wrapped. Any other column wraps.
NUMBER = re.compile(r"[-+]?(\d|-$|–$)")


def _cell(row: dict, col: Column) -> Text:
    value = row.get(col[0])
    fmt = col[2] if len(col) > 2 else None
    return plain("-" if value is None else (fmt(value) if fmt else value))


def short_time(iso: str) -> str:
    """'2026-11-22T03:40:00.000Z' -> '2026-11-22 03:40:00' for tables (JSON keeps the full form)."""
    return iso.replace("T", " ")[:19]


def interval_time(iso: str, interval_s: float) -> str:
    """A time of a series of `interval_s` intervals for tables: to the second when the intervals are
    shorter than a minute (5-second events start and end within one minute), else to the minute."""
    return short_time(iso) if interval_s < 60 else short_time(iso)[:16]


# A command's -q hides the bars that services draw deep inside their loops, without a flag through each.
_no_progress = ContextVar("no_progress", default=False)


@contextmanager
def no_progress():
    token = _no_progress.set(True)
    try:
        yield
    finally:
        _no_progress.reset(token)


def progress(transient: bool = True, *, sizes: bool = False) -> Progress:
    """A progress bar on stderr (hidden when stderr is not a terminal); `sizes`: counts are bytes (1.5/4.0 GiB)."""
    return Progress(
        TextColumn("{task.description}", markup=False, style="progress.description"), BarColumn(),
        DownloadColumn(binary_units=True) if sizes else MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=stderr, transient=transient,
        disable=not stderr.is_terminal or _no_progress.get(),
    )
