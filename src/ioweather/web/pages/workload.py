"""Workload: one file system's server-side telemetry — daily rates, burstiness, idle periods, power spectrum,
events over the aggregate signal (METHODS.md section 4; seeds 002 and 004).

The answer is `services.telemetry.workload.workload_view`: its `result` is `ioweather workload --json` for the same
file system, window and options (the command's own `compute`), beside it what the plots draw from the same
data: the aggregate signal (`plotted_signal`: `stats.workload.aggregate_signal`, as the HTML report draws it,
downsampled keeping each bucket's extremes) and the daily mean rates. The page adds only its form's fields
(the file systems, the window and options as asked, the offered resamples, how many events it lists).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone

from ioweather.errors import StoreError, UserError
from ioweather.services.telemetry.workload import (DEFAULT_IDLE_THRESHOLD, DEFAULT_MIN_AMPLITUDE, DEFAULT_SMOOTH_S,
                                         check_options, dataset_fingerprint, file_systems, workload_view)
from ioweather.units import format_bytes, parse_rate
from ioweather.web.context import WebContext
from ioweather.web.pages.fsview_common import fs_and_window, without_data
from ioweather.web.params import BadRequest, Query, format_seconds_short
from ioweather.web.registry import Page

HINT = ("Store server-side telemetry with `ioweather collect` (this machine) or `ioweather import KIND SOURCE "
        "--fs NAME` (LMT, iostat, pytokio TTS, GPFS mmperfmon, lfs df, CSV), then reload this page.")
#: Offered in the form; any other positive duration is taken, as `workload --resample` takes it, and
#: compute() refuses one shorter than the sampling interval with the command's own message.
RESAMPLES_S = (5.0, 10.0, 60.0, 300.0, 600.0, 3600.0)
#: The one limit the command does not have: a page's arrays stay in the server's memo (92 days at 5 s
#: is 1.6 million intervals; 92 days at 1 s would be 8 million).
MAX_INTERVALS = 2_000_000
DEFAULT_WINDOW = "7d"
MAX_POINTS = 20000
MAX_EVENTS_SHOWN = 200
ACF_MAX_LAG_S = 86400.0


def has_telemetry(ctx: WebContext) -> bool:
    return bool(file_systems(ctx.settings))


def load_libraries() -> None:
    """Import what the page's first answer needs beyond the server's start (scipy.signal for the
    autocorrelation and spectrum, pandas and pyarrow's datasets for the telemetry): ~1.3 s that the first
    Workload view paid (issue 40). The server calls it before it listens when the store has telemetry;
    imported in the background instead, it held the GIL beside the first requests and made them slower
    (docs/benchmarks.md). A server that runs long loads scipy anyway (the change marks' libraries)."""
    # lazy: scipy, pandas, pyarrow, loaded only when this runs
    import pandas  # noqa: F401
    import pyarrow.dataset  # noqa: F401
    from scipy import signal  # noqa: F401


def event_options(q: Query) -> tuple[float, float, float]:
    """resample, smooth and min_amplitude of the query, checked as `ioweather workload` checks them."""
    resample = q.duration("resample", "60s")
    smooth_s = q.duration("smooth", format_seconds_short(DEFAULT_SMOOTH_S))
    min_amp = _rate_param(q, "min_amplitude", f"{DEFAULT_MIN_AMPLITUDE / (1 << 30):g}GiB/s")
    try:
        check_options(resample, smooth_s, min_amp, flag=lambda name: name.replace("-", "_"))
    except UserError as e:
        raise BadRequest(str(e)) from None
    return resample, smooth_s, min_amp


def _rate_param(q: Query, name: str, default: str) -> float:
    raw = q.text(name, default)
    try:
        v = parse_rate(raw)
    except (UserError, ValueError):
        raise BadRequest(f"{name} must be a rate such as 1GiB/s or 500MiB/s, got {raw!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise BadRequest(f"{name} must be a positive rate, got {raw!r}")
    return v


def _check_intervals(since_ns: int, until_ns: int, resample_s: float) -> None:
    n = (until_ns - since_ns) / 1e9 / resample_s
    if n > MAX_INTERVALS:
        raise BadRequest(f"resample {format_seconds_short(resample_s)} over {format_seconds_short((until_ns - since_ns) / 1e9)} "
                         f"makes {n:,.0f} intervals; the page computes at most {MAX_INTERVALS:,} (choose a shorter "
                         "window or a longer resample; `ioweather workload` has no such limit)")


def workload_data(ctx: WebContext, params) -> dict:
    q = Query(params, ("fs", "since", "until", "resample", "smooth", "min_amplitude"))
    fs, systems, since_ns, until_ns, span = fs_and_window(ctx, q, DEFAULT_WINDOW, "io")
    empty = without_data(fs, systems, span)
    if empty:
        return empty
    resample, smooth_s, min_amp = event_options(q)
    _check_intervals(since_ns, until_ns, resample)
    since, until = (datetime.fromtimestamp(x / 1e9, timezone.utc) for x in (since_ns, until_ns))

    def run() -> dict:
        try:
            view = workload_view(ctx.settings, fs, since, until, resample, DEFAULT_IDLE_THRESHOLD, smooth_s, min_amp,
                                 ACF_MAX_LAG_S, MAX_POINTS)
        except StoreError:
            raise
        except UserError as e:  # a window without data, a resample shorter than the sampling: the request's
            raise BadRequest(str(e)) from None
        return {"since": view.result.start, "until": view.result.end, "view": view.to_json()}

    key = ("workload", fs, since_ns, until_ns, resample, smooth_s, min_amp)
    # computed from the file system's telemetry alone: kept (also across a restart) while its files are the same
    got = ctx.kept(key, dataset_fingerprint(ctx.settings, fs), run)
    # the form's fields (presentation), then the answer
    return {"fs": fs, "fs_all": systems, "since": got["since"], "until": got["until"],
            "resample_s": resample, "resamples_s": RESAMPLES_S, "smooth_s": smooth_s, "min_amplitude_bps": min_amp,
            "min_amplitude": f"{format_bytes(min_amp)}/s".replace(" ", ""), "max_events_shown": MAX_EVENTS_SHOWN, "span": span.to_json(),
            **got["view"]}


PAGE = Page(slug="workload", script="workload.js", title="Workload", data=workload_data,
            template="workload.html", available=has_telemetry, order=50,
            description="Server-side telemetry of a file system: daily rates, burstiness, idle periods, "
                        "power spectrum, I/O events.")
