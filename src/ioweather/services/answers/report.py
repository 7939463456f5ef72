"""The weekly report (issue 15 item 4): one file system's week on one page, each part linked to its
detail page — probe slowdown climate and its worst episodes, change points, events with their culprit
jobs and cost, benchmark standing, fullness. A part whose data is absent says so instead."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import numpy as np

from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError
from ioweather.services.answers.changes import detect
from ioweather.services.answers.report_kept import ClosedHours, ClosedHoursCache
from ioweather.services.bench.runs import SummaryRow
from ioweather.services.jobs.weather import PROBE_BASELINE_DAYS
from ioweather.services.probe.slowdown import compute_slowdown
from ioweather.stats.bench import summarize
from ioweather.store import bench as bstore
from ioweather.units import check_order, ns_to_iso, to_ns

if TYPE_CHECKING:  # pandas, pyarrow: the module loads them when compute runs
    from ioweather.services.answers.events import Events

CLIMATE_INTERVAL_S = 3600.0
BASELINE_S = PROBE_BASELINE_DAYS * 86400.0
DEFAULT_S = 7 * 86400.0
WORST = 5
_DAY_NS = 86_400 * 10**9


@dataclass(frozen=True)
class ClimateOp:
    """One probe op's hourly slowdowns over every target: median, 95th percentile, worst, how many hours."""

    op: str
    median: float
    p95: float
    worst: float
    intervals: int


@dataclass(frozen=True)
class WorstHour:
    """One of the worst hours: the target, the op, the hour's start (ISO 8601 UTC) and its slowdown."""

    target: str
    op: str
    start: str
    slowdown: float


@dataclass(frozen=True)
class SlowdownClimate:
    """The probes' hourly slowdown climate (`interval_s` per slowdown): per op, and the worst hours."""

    interval_s: float
    ops: list[ClimateOp]
    worst: list[WorstHour]

    def to_json(self) -> dict:
        return {"interval_s": self.interval_s, "ops": [answer_dict(o) for o in self.ops],
                "worst": [answer_dict(w) for w in self.worst]}


@dataclass(frozen=True)
class ChangePoint:
    """A level change of one series (`changes`' Change): when, the levels before and after, their ratio."""

    series: str
    time: str
    before: float
    after: float
    factor: float


@dataclass(frozen=True)
class ChangesPart:
    """The week's change points, or why there are none to show (`reason`); `skipped`: the series too short
    to look at (None, and left out of the JSON, when it could not look)."""

    available: bool
    reason: str | None
    points: list[ChangePoint]
    skipped: int | None = None

    def to_json(self) -> dict:
        doc = {"available": self.available, "reason": self.reason, "points": [answer_dict(p) for p in self.points]}
        return doc if self.skipped is None else {**doc, "skipped": self.skipped}


@dataclass(frozen=True)
class FullTarget:
    """A data target's fullness (fraction) and the days until it is full at its growth (None: not growing)."""

    target: str
    fullness: float
    days_until_full: float | None


@dataclass(frozen=True)
class FullnessPart:
    """The file system's fullness now (fraction), days until full and growth (bytes per second), its fullest
    targets fullest first (the Capacity page's numbers)."""

    fullness: float | None
    days_until_full: float | None
    growth_bps: float | None
    fullest: list[FullTarget]

    def to_json(self) -> dict:
        return {**answer_dict(self), "fullest": [answer_dict(t) for t in self.fullest]}


@dataclass(frozen=True)
class Links:
    """Each part's detail page (a path of the dashboard, with the window where the page takes one)."""

    slowdown: str
    changes: str
    events: str
    bench: str
    fullness: str


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
    slowdown: SlowdownClimate | None
    changes: ChangesPart
    events: Events
    bench: list[SummaryRow] | None
    fullness: FullnessPart | None
    links: Links

    def to_json(self) -> dict:
        return {**answer_dict(self), "bench": None if self.bench is None else [r.to_json() for r in self.bench]}


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
    events = ev.compute(settings, fs, since, until, params, keep=True)
    store = ev.open_if_exists(settings)
    try:
        versions = store.versions() if store is not None else {}
        closed = ClosedHours(store) if "probe" in versions else None
        climate = _climate(store, since, until, closed) if "probe" in versions else None
        bench = _bench(store, fs, to_ns(until)) if "bench" in versions else None
        changes = _changes(store, settings, since, until, closed)
    finally:
        if store is not None:
            store.dispose()
    return Report(fs=fs, start=ns_to_iso(to_ns(since)), end=ns_to_iso(to_ns(until)), query=q, slowdown=climate, changes=changes,
                  events=events, bench=bench, fullness=_fullness(settings, fs, since, until),
                  links=Links(slowdown="/timeline", changes="/history", events=f"/workload?{q}", bench="/bench",
                              fullness=f"/capacity?{q}"))


def inputs_version(settings, store, fs: str, since_ns: int, until_ns: int) -> tuple:
    """Changes whenever anything the report of `fs` over [since, until) is computed from does: the file
    system's telemetry files (events, job_stats, fullness, change points), the probe samples of the window and
    of the month before it that its baselines read (`_probe_marker`), the jobs and failed logs,
    the scheduler's jobs and the benchmark runs. `store`: the caller's open store, None when there is none.
    Three to seven aggregate statements and the telemetry directory's listing: what a kept report is keyed by
    (the Report page's; its first computation at a center's size is a minute)."""
    # lazy: pyarrow via services.telemetry.workload, loaded only when this runs
    from ioweather.services.telemetry.workload import dataset_fingerprint
    from ioweather.store import jobs as jobs_store
    from ioweather.store import scheduler as sched_store

    parts: list = [dataset_fingerprint(settings, fs)]
    versions = store.versions() if store is not None else {}
    lo = (since_ns // _DAY_NS - PROBE_BASELINE_DAYS - 1) * _DAY_NS
    today = time.time_ns() // _DAY_NS * _DAY_NS
    for name, marker in (("probe", lambda: _probe_marker(store, lo, until_ns, today)),
                         ("darshan", lambda: jobs_store.change_marker(store)),
                         ("scheduler", lambda: sched_store.change_marker(store)),
                         ("bench", lambda: bstore.change_marker(store))):
        parts.append((name, marker()) if name in versions else None)
    return tuple(parts)


def _probe_marker(store, lo: int, until_ns: int, today: int) -> tuple:
    """The probe samples' marker of [lo, until): the days before today by their day pieces
    (store.probe_pieces.days_marker: not the hour pieces the pages build and prune around their windows, which
    changed it with every other page's request on a live store), today's hours by every piece."""
    # lazy: sqlalchemy via store.probe_pieces, loaded only when this runs
    from ioweather.store import probe_pieces

    closed = probe_pieces.days_marker(store, lo, min(until_ns, today))
    return closed if until_ns <= today else (closed, probe_pieces.window_marker(store, today, until_ns))


def _climate(store, since, until, closed: ClosedHours) -> SlowdownClimate | None:
    """Per op, the median and 95th percentile of the hourly slowdowns over every target; the worst hours."""
    try:
        rows = compute_slowdown(store, None, CLIMATE_INTERVAL_S, "median", BASELINE_S, since, until,
                                readers=closed.reader)
    except UserError:
        return None
    rows = [r for r in rows if r.slowdown is not None and np.isfinite(r.slowdown)]
    if not rows:
        return None
    by_op: dict[str, list[float]] = {}
    for r in rows:
        by_op.setdefault(r.op, []).append(r.slowdown)
    ops = [ClimateOp(op, float(np.median(v)), float(np.percentile(v, 95)), float(max(v)), len(v))
           for op, v in sorted(by_op.items())]
    worst = sorted(rows, key=lambda r: -r.slowdown)[:WORST]
    return SlowdownClimate(CLIMATE_INTERVAL_S, ops,
                           [WorstHour(r.target, r.op, r.interval_start, r.slowdown) for r in worst])


def _changes(store, settings, since, until, closed: ClosedHours | None) -> ChangesPart:
    """The week's level changes (services.answers.changes.detect over the window, every kind of series)."""
    if store is None:
        return ChangesPart(False, "change points: not available (no store)", [])
    found = detect(store, settings, to_ns(since), to_ns(until),
                   probe_cache=ClosedHoursCache(closed) if closed is not None else None)
    return ChangesPart(True, None, [ChangePoint(c.series, c.time, c.level_before, c.level_after, c.factor)
                                    for c in found.changes], len(found.skipped))


def _bench(store, fs: str, until_ns: int) -> list[SummaryRow] | None:
    """The standing at the window's end: every run of `fs` before it (the peak is the history's), none
    after it; a report of a past week does not show next week's runs as its last."""
    df = bstore.results_frame(store, fs=fs, columns=["motif", "direction", "fs", "start_ns", "duration_s", "bw_bps"])
    rows = [SummaryRow.of(r) for r in summarize(df[df["start_ns"] < until_ns])]
    return rows or None


def _fullness(settings, fs: str, since, until) -> FullnessPart | None:
    # lazy: pandas, pyarrow via services.telemetry.fsview, loaded only when this runs
    from ioweather.services.telemetry.fsview import capacity

    c = capacity(settings, fs, to_ns(since), to_ns(until), top=5)
    f = c.fs_fullness
    if not f.get("fullness"):
        return None
    last = f["now"]["fullness"] if f.get("now") else None  # the Capacity page's "now" and last point
    fullest = [r for r in c.targets if r["target"] in c.fullest]
    return FullnessPart(last, f.get("days_until_full"), f.get("growth_bps"),
                        [FullTarget(r["target"], r["fullness"], r["days_until_full"])
                         for r in sorted(fullest, key=lambda r: -r["fullness"])])
