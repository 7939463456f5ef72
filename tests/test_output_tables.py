"""Issue 20, item 13: a human table never cuts a number; text wraps, and columns that cannot fit are
left out with a line saying which."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ioweather.units import format_bytes, format_seconds
from ioweather.views import output

ROWS = [{"name": "a rather long label that has to wrap somewhere", "count": 21_234_567, "time_s": 6.27e-5,
         "size": 123456789012, "when": "2026-11-22 03:40:00"},
        {"name": "b", "count": 7, "time_s": 1234.5, "size": 1, "when": "2026-11-22 03:50:00"}]
COLS = [("name", "name"), ("count", "n", lambda v: f"{v:,}"), ("time_s", "time", format_seconds),
        ("size", "size", format_bytes), ("when", "time (UTC)")]


def render(width: int, monkeypatch) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(output, "stdout", Console(file=out, width=width, soft_wrap=True))
    monkeypatch.setattr(output, "stderr", Console(file=err, width=200, markup=False))
    output.print_table(ROWS, COLS)
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("width", [200, 90, 70, 50, 30])
def test_numbers_are_never_cut(width, monkeypatch):
    text, err = render(width, monkeypatch)
    assert "…" not in text
    shown = [c[1] for c in COLS if f" {c[1]} " in text.splitlines()[1]]
    for row in ROWS:
        for key, header, *fmt in COLS[1:]:
            if header in shown:
                assert (fmt[0](row[key]) if fmt else row[key]) in text, (width, key)
    left_out = [c[1] for c in COLS if c[1] not in shown]
    if left_out:
        assert err.strip() == (f"(columns left out to fit {width} characters: {', '.join(left_out)}; "
                               "widen the terminal or use --json)")
    else:
        assert err == ""
    assert all(len(line) <= width for line in text.splitlines())


def test_wide_terminal_shows_everything_on_one_line_each(monkeypatch):
    text, err = render(200, monkeypatch)
    assert err == "" and "a rather long label that has to wrap somewhere" in text and "21,234,567" in text
    assert "62.7 µs" in text and "115.0 GiB" in text and "20.6 min" in text
