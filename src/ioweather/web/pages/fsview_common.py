"""What the admin's file-system pages (servers, metadata, capacity, talkers) share: the file system
and window parameters, availability, and the memo keyed on the dataset's files."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from ioweather.services.telemetry.workload import data_end, dataset_fingerprint, file_systems
from ioweather.web.context import WebContext
from ioweather.web.params import BadRequest, NotFound, Query

HINT = ("Store server-side telemetry with `ioweather collect` (on the servers) or `ioweather import KIND SOURCE "
        "--fs NAME` (LMT, GPFS mmperfmon, lfs df, lctl dl -t, ...), then reload this page.")
MAX_WINDOW_S = 92 * 86400.0


def has_telemetry(ctx: WebContext) -> bool:
    return bool(file_systems(ctx.settings))


def fs_and_window(ctx: WebContext, q: Query, default_window: str) -> tuple[str, list[str], int, int]:
    """(fs, all file systems, since_ns, until_ns): the window ends by default where the data ends."""
    systems = file_systems(ctx.settings)
    if not systems:
        raise NotFound(f"No server-side telemetry in {ctx.settings.parquet_dir / 'telemetry'}. {HINT}")
    fs = q.text("fs", systems[0])
    if fs not in systems:
        raise BadRequest(f"unknown file system {fs!r}; known: {', '.join(systems[:20])}")
    end = data_end(ctx.settings, fs)
    if end is None:
        raise NotFound(f"the telemetry of {fs!r} has no rows. {HINT}")
    now = datetime.now(timezone.utc)
    since_ns, until_ns = q.window(default_window, MAX_WINDOW_S, now, default_until=min(end, now + timedelta(days=1)))
    return fs, systems, since_ns, until_ns


def memo(ctx: WebContext, fs: str, key: tuple, compute):
    return ctx.memo(key, dataset_fingerprint(ctx.settings, fs), compute)
