"""The dashboard's Jinja environment (autoescaped, strict) with its filters, and HTML rendering with the
navigation every page shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jinja2
from starlette.responses import HTMLResponse

from ioweather import __version__
from ioweather.units import format_age, format_bytes, format_seconds
from ioweather.views.output import to_json
from ioweather.web.params import format_seconds_short

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATE_SYMBOLS = {"normal": "✓", "degraded": "▲", "severely degraded": "✖", "stale": "○", "unknown": "?",
                 "learning": "…"}


def _num(v, digits: int = 0) -> str:
    """12345.678 -> '12,346' (digits=0), '–' for None: counts and rates in tables."""
    return "–" if v is None else f"{v:,.{digits}f}"


def _ago(s: float | None) -> str:
    return "never" if s is None else f"{format_age(s)} ago"


FILTERS: dict[str, Callable] = {
    "secs": format_seconds,
    "ratio": lambda v: "–" if v is None else f"{v:.2f}×",
    "dur": format_seconds_short,
    "pct": lambda v: "–" if v is None else f"{v:.0f}%",
    "cls": lambda s: str(s).replace(" ", "-"),
    "symbol": lambda s: STATE_SYMBOLS.get(s, "?"),
    "ago": _ago,
    "bytes": format_bytes,
    "num": _num,
    "share": lambda v: "–" if v is None else f"{100 * v:.1f}%",
}


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    # |tojson escapes <, >, & and ' for <script> blocks; to_json also turns NaN into null (JSON has no NaN).
    env.policies["json.dumps_function"] = lambda obj, **_: to_json(obj)
    env.filters.update(FILTERS)
    return env


class Renderer:
    """HTML responses from templates, with the navigation (`nav()`: the pages to list) and the version."""

    def __init__(self, env: jinja2.Environment, nav: Callable[[], list]):
        self.env = env
        self.nav = nav

    def __call__(self, template: str, status_code: int = 200, **values) -> HTMLResponse:
        values.setdefault("nav", self.nav())
        values.setdefault("version", __version__)
        values.setdefault("api_url", None)
        return HTMLResponse(self.env.get_template(template).render(**values), status_code=status_code)
