"""ioweather's one Jinja environment: autoescaped (a file, target, job or user name reaches HTML
only escaped), strict (a misspelt value is an error, not an empty cell), with the number filters
every page and report shares. The CLI's self-contained reports (`fsstats --html`, `workload --html`,
`jobs summary --html`) render templates under views/templates/ through `render`; the dashboard's
environment (web/templating.py) is this one with its own templates in front."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path

import jinja2

from ioweather.units import format_age, format_bytes, format_number, format_seconds
from ioweather.views.why_cells import system_time
from ioweather.encoding import to_json

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _num(v, digits: int = 0) -> str:
    """12345.678 -> '12,346' (digits=0), '–' for None: counts and rates in tables."""
    return "–" if v is None else f"{v:,.{digits}f}"


def _sig(v) -> str:
    """A level (3e-6 s or 2e9 B/s) as the CLI's tables write it (`units.format_number`: four significant
    digits, never an exponent), '–' when missing like the other filters."""
    return "–" if v is None or not math.isfinite(v) else format_number(v)


def _ago(s: float | None) -> str:
    return "never" if s is None else f"{format_age(s)} ago"


FILTERS: dict[str, Callable] = {
    "secs": format_seconds,
    "ratio": lambda v: "–" if v is None else f"{v:.2f}×",
    "pct": lambda v: "–" if v is None else f"{v:.0f}%",
    "ago": _ago,
    "bytes": format_bytes,
    "rate": lambda v: "–" if v is None else f"{format_bytes(v)}/s",
    "sig": _sig,
    "num": _num,
    "share": lambda v: "–" if v is None else f"{100 * v:.1f}%",
    "system_time": system_time,
}


def environment(*template_dirs: Path, **options) -> jinja2.Environment:
    """The environment over `template_dirs` (searched first) and views/templates/; `options` go to Jinja."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([*template_dirs, TEMPLATES]), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, **options)
    # |tojson escapes <, >, & and ' for <script> blocks; to_json also turns NaN into null (JSON has no NaN).
    env.policies["json.dumps_function"] = lambda obj, **_: to_json(obj)
    env.filters.update(FILTERS)
    return env


@functools.cache
def _reports() -> jinja2.Environment:
    # an unknown value (a log without a uid, a module without read counts) is an empty cell, not "None"
    return environment(finalize=lambda v: "" if v is None else v)


def render(template: str, **values) -> str:
    """A report page of views/templates/; figures made here (SVG, PNG data URLs) are passed as
    markupsafe.Markup, everything else is escaped."""
    return _reports().get_template(template).render(**values)
