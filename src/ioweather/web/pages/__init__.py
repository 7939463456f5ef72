"""The dashboard's pages, one module each, in navigation order.

The extension point of the dashboard: a feature's page is one module here, listed
in PAGE_MODULES, defining

    PAGE = Page(slug="jobs", script="jobs.js", title="Jobs", data=jobs_data,
                template="jobs.html", available=has_jobs, description=...)

- `data(ctx, params)` asks the feature's service (never the store, stats or
  sources: the import contract in pyproject.toml refuses it; the number a page
  shows is the one its command prints), validates `params` with `ioweather.web.params.Query`
  (bad values raise BadRequest -> 400) and returns a JSON-ready dict: seconds
  with `_s`, bytes with `_bytes`, ISO 8601 UTC times. That dict is the
  `/api/<slug>` answer and what the template renders.
- `available(ctx)` is cheap (a count or an existence check) and returns False
  when there is nothing to show: the page is then hidden from the navigation and
  its URLs answer 404 with a hint on how to get the data.
- Labels from data (job names, file paths, executable names) reach HTML only
  through Jinja's autoescaping and JSON only through `|tojson`; scripts set
  text with `textContent`, never `innerHTML`.
- The template extends `base.html`, which embeds the dict as the `page-data`
  JSON block; `static/<script>` (loaded before `static/ioweather.js`) draws the
  plots from it, passing labels from data through `lib.text` before Plotly sees
  them (no CDN: plotly.js is served from the installed plotly package).
- `available` of the pages over other features' stores must not create their
  tables: the services' `has_...` functions check the schema versions first.
- Every module here is imported when the dashboard starts, so a page imports the
  services that need pandas, pyarrow or scipy inside its `data` function, not at
  the top: those three cost ~150 MB of the server's memory before any request
  (issue 21; tests/test_web.py checks that importing the app loads none of them).

A listed module that is not importable (its feature not merged yet) is skipped,
as `ioweather.cli` does for commands.
"""

from __future__ import annotations

import importlib

from ioweather.web.registry import Page

PAGE_MODULES = [
    "ioweather.web.pages.status",
    "ioweather.web.pages.timeline",
    "ioweather.web.pages.history",
    "ioweather.web.pages.jobs",
    "ioweather.web.pages.job",
    "ioweather.web.pages.workload",
    "ioweather.web.pages.report",
    "ioweather.web.pages.servers",
    "ioweather.web.pages.metadata",
    "ioweather.web.pages.capacity",
    "ioweather.web.pages.talkers",
    "ioweather.web.pages.contents",
    "ioweather.web.pages.factors",
    "ioweather.web.pages.bench",
]


def load_pages() -> list[Page]:
    pages = []
    for name in PAGE_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        pages.append(module.PAGE)
    return sorted(pages, key=lambda p: p.order)
