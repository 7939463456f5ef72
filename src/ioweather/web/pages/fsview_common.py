"""What the admin's file-system pages (servers, metadata, capacity, talkers) share: the file system
and window parameters, availability, and the memo keyed on the dataset's files."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ioweather.services.telemetry.workload import dataset_fingerprint, file_systems
from ioweather.units import parse_duration
from ioweather.web.context import WebContext
from ioweather.web.params import NotFound, Query

HINT = ("Store server-side telemetry with `ioweather collect` (on the servers) or `ioweather import KIND SOURCE "
        "--fs NAME` (LMT, GPFS mmperfmon, lfs df, lctl dl -t, ...), then reload this page.")
MAX_WINDOW_S = 92 * 86400.0


def has_telemetry(ctx: WebContext) -> bool:
    return bool(file_systems(ctx.settings))


def coverages(ctx: WebContext, systems: list[str]) -> dict[str, dict]:
    """Each file system's kinds of data and their spans (services.telemetry.fsview.coverage), kept while its files
    are unchanged, also across a restart (`WebContext.kept`: a year of 100 targets' spans was ~0.7 s of CPU of the
    first view of every telemetry page after a restart, issue 40)."""
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry.fsview import coverage

    def kept(fs: str) -> dict[str, tuple]:
        doc = ctx.kept(("coverage", fs), dataset_fingerprint(ctx.settings, fs),
                       lambda: {kind: [int(x) for x in v] for kind, v in coverage(ctx.settings, fs).items()})
        return {kind: tuple(v) for kind, v in doc.items()}

    return {fs: kept(fs) for fs in systems}


def fs_and_window(ctx: WebContext, q: Query, default_window: str, kind: str = "io"):
    """(fs, all file systems, since_ns, until_ns, span): by default the first file system holding the
    page's `kind` of data and the last `default_window` of that data; an asked window is cut to the time
    the data covers (services.telemetry.fsview.pick_span). A file system without such data is shown with a note
    naming those that have it, never an error: a link in the navigation always answers."""
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry.fsview import window_of

    systems = file_systems(ctx.settings)
    if not systems:
        raise NotFound(f"No server-side telemetry in {ctx.settings.parquet_dir / 'telemetry'}. {HINT}")
    covs = coverages(ctx, systems)
    fs = q.fs(systems, next((f for f in systems if kind in covs[f]), systems[0]))
    spans = [v for v in covs[fs].values()]
    if not spans:
        raise NotFound(f"the telemetry of {fs!r} has no rows. {HINT}")
    first, end = min(v[0] for v in spans), max(v[1] for v in spans)
    own = covs[fs].get(kind)
    asked = None
    if q.text("since") is not None or q.text("until") is not None:
        now = datetime.now(timezone.utc)
        default_until = datetime.fromtimestamp((own or (first, end))[1] / 1e9, timezone.utc)
        asked = q.window(default_window, MAX_WINDOW_S, now, default_until=min(default_until, now + timedelta(days=1)))
    default_s = parse_duration(default_window)
    span = window_of(ctx.settings, fs, kind, covs, asked, default_s, overall=(max(first, end - int(default_s * 1e9)), end))
    return fs, systems, span.since_ns, span.until_ns, span


def memo(ctx: WebContext, fs: str, key: tuple, compute):
    return ctx.memo(key, dataset_fingerprint(ctx.settings, fs), compute)


def without_data(fs: str, systems: list[str], span) -> dict | None:
    """The page's answer when `fs` holds none of the page's data in the window: the form, the note and
    the file systems that have such data (rendered by fs_none.html), never an error; else None."""
    if span.data_since is not None:  # an asked window without data is drawn as asked, its note above it
        return None
    doc = span.to_json()
    return {"fs": fs, "fs_all": systems, "since": doc["since"], "until": doc["until"], "span": doc,
            "no_data": span.note}


def with_span(doc: dict, span) -> dict:
    """A page's answer with the window it shows and the data's own span beside it (a hint the page adds)."""
    return {**doc, "span": span.to_json()}
