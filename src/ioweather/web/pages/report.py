"""Report: one file system's week on one page (issue 15 item 4) — the document of `ioweather report
--json` (services/answers/report.py) for the same file system and window, each part linked to its detail page.
The Workload page's events link here, to the event's row (#event-<start>). The page adds only the list of
file systems of its form."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

from ioweather.errors import StoreError, UserError
from ioweather.services.answers.report import compute, DEFAULT_S, inputs_version
from ioweather.services.telemetry.workload import file_systems
from ioweather.web.context import WebContext
from ioweather.web.pages.workload import event_options
from ioweather.web.pages.fsview_common import coverages, fs_and_window, MAX_WINDOW_S, without_data
from ioweather.web.params import BadRequest, Query
from ioweather.web.registry import Page


def has_telemetry(ctx: WebContext) -> bool:
    return bool(file_systems(ctx.settings))


def report_data(ctx: WebContext, params) -> dict:
    # lazy: pandas, pyarrow via services.answers.events, loaded only when this runs
    from ioweather.services.answers import events as ev
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry.fsview import data_window
    q = Query(params, ("fs", "since", "until", "resample", "smooth", "min_amplitude"))
    fs, systems, since_ns, until_ns, span = fs_and_window(ctx, q, "7d", "io")
    empty = without_data(fs, systems, span)
    if empty:
        return empty
    resample, smooth_s, min_amp = event_options(q)
    # the report's window as `report` takes it (all its parts' data, not the byte counters' alone), from the
    # kept coverage of the file system
    cov = coverages(ctx, [fs])[fs]
    asked = None
    if q.text("since") is not None or q.text("until") is not None:
        end = data_window(ctx.settings, fs, None, None, 0.0, cov)[1]
        asked = q.window("7d", MAX_WINDOW_S, datetime.now(timezone.utc),
                         default_until=datetime.fromtimestamp(end / 1e9, timezone.utc))
    since_ns, until_ns = data_window(ctx.settings, fs, *(asked or (None, None)), DEFAULT_S, cov)
    span = dataclasses.replace(span, since_ns=since_ns, until_ns=until_ns, covered_s=(until_ns - since_ns) / 1e9)
    since, until = (datetime.fromtimestamp(x / 1e9, timezone.utc) for x in (since_ns, until_ns))

    def run() -> dict:
        try:
            return compute(ctx.settings, fs, since, until, ev.Params(resample, smooth_s, min_amp)).to_json()
        except StoreError:
            raise
        except UserError as e:
            raise BadRequest(str(e)) from None

    key = ("report", fs, since_ns, until_ns, resample, smooth_s, min_amp)

    def version() -> tuple:
        return inputs_version(ctx.settings, ctx.store if ctx.settings.store_exists() else None, fs, since_ns,
                              until_ns)
    # kept (also across a restart: a minute of computation at a center's size) while none of its inputs changed;
    # the version read again once computed, as event_probes.kept_window_slowdowns does: an answer whose inputs
    # changed midway is of neither version, and is not kept under either
    # the form's file systems (presentation), then the answer
    return {"fs_all": systems, "span": span.to_json(), "report": ctx.kept(key, version(), run, version)}


PAGE = Page(slug="report", title="Report", data=report_data, template="report.html", available=has_telemetry,
            order=55, description="A file system's week: slowdown climate, change points, events with their "
                                  "culprit jobs and cost, benchmark standing, fullness.")
