"""The weekly report (issue 15 item 4): one file system's week on one page, each part linked to its
detail page — probe slowdown climate and its worst episodes, change points, events with their culprit
jobs and cost, benchmark standing, fullness. A part whose data is absent says so instead."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.answers.changes import detect
from ioweather.services.probe.slowdown import compute_slowdown
from ioweather.stats.bench import summarize
from ioweather.store import bench as bstore
from ioweather.units import check_order, ns_to_iso, to_ns

if TYPE_CHECKING:  # pandas, pyarrow: the module loads them when compute runs
    from ioweather.services.answers.events import Events

CLIMATE_INTERVAL_S = 3600.0
BASELINE_S = 30 * 86400.0
DEFAULT_S = 7 * 86400.0
WORST = 5


@dataclass(frozen=True)
class Report(Answer):
    """A file system's week: `report --json` and the `report` of /api/report. Times ISO 8601 UTC.

    `slowdown` (the probes' hourly slowdown climate, ratios), `bench` (the benchmark standing at the
    window's end) and `fullness` (fractions, bytes per second, days) are None when their data is
    absent; `changes` says when it could not look; `events` is `services.answers.events.compute`'s answer;
    `links` point each part at its detail page, `query` is the window as those pages take it."""

    fs: str
    start: str
    end: str
    query: str
    slowdown: dict | None
    changes: dict
    events: Events
    bench: list[dict] | None
    fullness: dict | None
    links: dict


def compute(settings, fs: str, since: datetime | None, until: datetime | None, params=None) -> Report:
    """The report over [since, until) (default: the 7 days before the end of the file system's data; the
    window cut to the time its data covers: services.telemetry.fsview.data_window, as the page takes it)."""
    # lazy: pandas, pyarrow via services.answers.events, loaded only when this runs
    from ioweather.services.answers import events as ev
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry.fsview import data_window

    if since is not None and until is not None:
        check_order(since, until)
    since, until = (datetime.fromtimestamp(t / 1e9, timezone.utc) for t in data_window(
        settings, fs, to_ns(since) if since else None, to_ns(until) if until else None, DEFAULT_S))
    check_order(since, until)
    params = params or ev.Params()
    q = f"fs={fs}&since={ns_to_iso(to_ns(since))}&until={ns_to_iso(to_ns(until))}"
    events = ev.compute(settings, fs, since, until, params)
    store = ev.open_if_exists(settings)
    try:
        versions = store.versions() if store is not None else {}
        climate = _climate(store, since, until) if "probe" in versions else None
        bench = _bench(store, fs, to_ns(until)) if "bench" in versions else None
        changes = _changes(store, settings, since, until)
    finally:
        if store is not None:
            store.dispose()
    return Report(fs=fs, start=ns_to_iso(to_ns(since)), end=ns_to_iso(to_ns(until)), query=q, slowdown=climate, changes=changes,
                  events=events, bench=bench, fullness=_fullness(settings, fs, since, until),
                  links={"slowdown": "/timeline", "changes": "/history", "events": f"/workload?{q}",
                         "bench": "/bench", "fullness": f"/capacity?{q}"})


def _climate(store, since, until) -> dict | None:
    """Per op, the median and 95th percentile of the hourly slowdowns over every target; the worst hours."""
    try:
        rows = compute_slowdown(store, None, CLIMATE_INTERVAL_S, "median", BASELINE_S, since, until)
    except UserError:
        return None
    rows = [r for r in rows if r.slowdown is not None and np.isfinite(r.slowdown)]
    if not rows:
        return None
    by_op: dict[str, list[float]] = {}
    for r in rows:
        by_op.setdefault(r.op, []).append(r.slowdown)
    ops = [{"op": op, "median": float(np.median(v)), "p95": float(np.percentile(v, 95)), "worst": float(max(v)),
            "intervals": len(v)} for op, v in sorted(by_op.items())]
    worst = sorted(rows, key=lambda r: -r.slowdown)[:WORST]
    return {"interval_s": CLIMATE_INTERVAL_S, "ops": ops,
            "worst": [{"target": r.target, "op": r.op, "start": r.interval_start, "slowdown": r.slowdown}
                      for r in worst]}


def _changes(store, settings, since, until) -> dict:
    """The week's level changes (services.answers.changes.detect over the window, every kind of series)."""
    if store is None:
        return {"available": False, "reason": "change points: not available (no store)", "points": []}
    found = detect(store, settings, to_ns(since), to_ns(until))
    return {"available": True, "reason": None,
            "points": [{"series": c.series, "time": c.time, "before": c.level_before,
                        "after": c.level_after, "factor": c.factor} for c in found.changes],
            "skipped": len(found.skipped)}


def _bench(store, fs: str, until_ns: int) -> list[dict] | None:
    """The standing at the window's end: every run of `fs` before it (the peak is the history's), none
    after it; a report of a past week does not show next week's runs as its last."""
    df = bstore.results_frame(store, fs=fs, columns=["motif", "direction", "fs", "start_ns", "duration_s", "bw_bps"])
    rows = summarize(df[df["start_ns"] < until_ns])
    for r in rows:
        r["last_start"] = ns_to_iso(r.pop("last_start_ns"))
    return rows or None


def _fullness(settings, fs: str, since, until) -> dict | None:
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry.fsview import capacity

    c = capacity(settings, fs, to_ns(since), to_ns(until), top=5)
    f = c.fs_fullness
    if not f.get("fullness"):
        return None
    last = f["now"]["fullness"] if f.get("now") else None  # the Capacity page's "now" and last point
    fullest = [r for r in c.targets if r["target"] in c.fullest]
    return {"fullness": last, "days_until_full": f.get("days_until_full"), "growth_bps": f.get("growth_bps"),
            "fullest": [{"target": r["target"], "fullness": r["fullness"], "days_until_full": r["days_until_full"]}
                        for r in sorted(fullest, key=lambda r: -r["fullness"])]}
