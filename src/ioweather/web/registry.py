"""A page of the dashboard: its HTML, its JSON twin, and whether it has anything to show.

The registry is how the dashboard grows: a feature adds one module under
`ioweather.web.pages` that defines `PAGE = Page(...)` and lists it in
`ioweather.web.pages.PAGE_MODULES`. `available(ctx)` decides whether the page
appears in the navigation: a page without data is hidden, never shown empty.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from starlette.datastructures import QueryParams

from ioweather.web.context import WebContext


@dataclass(frozen=True)
class Page:
    #: URL segment: HTML at /<slug>, JSON at /api/<slug>.
    slug: str
    title: str
    #: Builds the JSON twin; the HTML page renders the very same dict. Raises BadRequest/NotFound.
    data: Callable[[WebContext, QueryParams], dict]
    #: Jinja template (in ioweather/web/templates) that renders `data`.
    template: str
    #: True when the store holds what the page shows; hidden from the navigation otherwise.
    available: Callable[[WebContext], bool]
    #: One sentence for the navigation tooltip and the /api index.
    description: str = ""
    order: int = 100
    #: Script in ioweather/web/static that draws the page's plots (loaded before ioweather.js; see docs/dashboard.md).
    script: str | None = None
    #: False for pages reached from another page only (one job from the job list): never in the navigation.
    in_nav: bool = True
    #: JSON the page fetches after it is drawn, at /api/<slug>/<name> with the page's own query: what
    #: may be slow to compute first (the change-point marks load ruptures and scipy, ~0.7 s once per
    #: process) is not on the page's path.
    parts: Mapping[str, Callable[[WebContext, QueryParams], dict]] = field(default_factory=dict)
    #: > 0 for a page whose answer is "now" by the probe cache's clock: an answer is served for this long (s) of
    #: that clock once computed, its JSON and HTML made once, and kept computed in the background while the page
    #: is asked for (web/latest.py).
    fresh_s: float = 0.0

    def part_paths(self) -> dict[str, str]:
        """{name: URL path} of the page's parts."""
        return {name: f"/api/{self.slug}/{name}" for name in self.parts}
