"""The dashboard's Jinja environment (views/templating.py's, autoescaped and strict, with the dashboard's
templates and its `dur` filter) and HTML rendering with the navigation every page shows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import jinja2
from starlette.responses import HTMLResponse

from ioweather import __version__
from ioweather.services.runtime.defaults import LEARNING_RULE
from ioweather.views import templating
from ioweather.web.params import format_seconds_short

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATE_SYMBOLS = {"normal": "✓", "degraded": "▲", "severely degraded": "✖", "stale": "○", "unknown": "?",
                 "learning": "…"}
#: The dashboard's own filters, besides the shared ones of views/templating.py.
FILTERS: dict[str, Callable] = {
    "dur": format_seconds_short,  # durations as the forms take them back
    "cls": lambda s: str(s).replace(" ", "-"),
    "symbol": lambda s: STATE_SYMBOLS.get(s, "?"),
}


def environment() -> jinja2.Environment:
    env = templating.environment(TEMPLATES)
    env.filters.update(FILTERS)
    env.globals["learning_rule"] = LEARNING_RULE  # the rule's words, as `slowdown` says them
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
        values.setdefault("parts", {})
        return HTMLResponse(self.env.get_template(template).render(**values), status_code=status_code)
