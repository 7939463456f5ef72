"""Change points of the long series the store keeps: did an upgrade or a failing OST change anything?

Series (each named `kind:key`, the name `ioweather changes --series` filters on):
- `probe:<target>:<op>`  median duration of each 10-minute interval (the probe cache's rollups),
  compared in log space with the daily cycle taken out;
- `bench:<motif>:<direction>:<fs>`  fraction of peak of each benchmark run, in log space;
- `jobs:<motif>:<fs>`  fraction of peak of each imported per-job feature row (tokio-abc), in log space;
- `workload:<fs>`  total bytes per day (read + written) from the telemetry store.

The detector and its penalty are stats/changepoints.py's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from itertools import chain
import multiprocessing
import os
import shlex
import threading

import numpy as np

from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.runtime.defaults import CHANGE_KINDS as KINDS
from ioweather.services.bench.runs import runs_table
from ioweather.services.probe.slowdown import known_targets
from ioweather.services.answers.umami import FEATURE_PERF
from ioweather.services.telemetry.workload import daily_totals, file_systems
from ioweather.stats.changepoints import MIN_SEGMENT, PENALTY_PER_LOG_N, change_points, load_libraries  # noqa: F401 (re-exported)
from ioweather.units import ns_to_iso
from ioweather.services.probe.cache import CHANGE_INTERVAL_S, CHANGE_PERIOD_NS, ProbeCache
from ioweather.store.probe import OPS
from ioweather.store import bench as bstore

PROBE_INTERVAL_S = CHANGE_INTERVAL_S


def _probe_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:
    yield from _probe_items(ProbeCache(store), known_targets(store, target), since_ns, until_ns)


def _probe_items(cache, targets, since_ns: int, until_ns: int) -> Iterator[tuple]:
    for t in targets:
        for op, (times, medians) in zip(OPS, cache.change_series(t, since_ns, until_ns)):
            yield f"probe:{t}:{op}", times, medians, True, "median_s", CHANGE_PERIOD_NS


def _bench_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:

    if not bstore.has_runs(store):
        return
    df = runs_table(store, fs=target)
    df = df[(df["start_ns"].astype("int64") >= since_ns) & (df["start_ns"].astype("int64") < until_ns)]
    for (motif, direction, fs), g in df.groupby(["motif", "direction", "fs"], sort=True, dropna=False):
        yield (f"bench:{motif}:{direction}:{fs}", g["start_ns"].to_numpy(np.int64),
               g["fraction_of_peak"].to_numpy(float), True, "fraction_of_peak", None)


def _jobs_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:
    # lazy: pandas, pyarrow via stats.abc_features, loaded only when this runs
    from ioweather.stats.abc_features import epoch_s
    # lazy: pandas, pyarrow via store.job_features, loaded only when this runs
    from ioweather.store import job_features as fstore

    if not fstore.sets(store):
        return
    df = fstore.load(store, columns=None)
    if df.empty or FEATURE_PERF not in df:
        return
    start_ns = (epoch_s(df["_datetime_start"]) * 1e9).round()
    df = df.assign(_start_ns=start_ns)[(start_ns >= since_ns) & (start_ns < until_ns)]
    if target:
        df = df[df["_file_system"].astype(str) == target]
    for (motif, fs), g in df.sort_values("_start_ns").groupby(["_benchmark_id", "_file_system"], sort=True):
        yield (f"jobs:{motif}:{fs}", g["_start_ns"].to_numpy(np.int64), g[FEATURE_PERF].to_numpy(float), True,
               "fraction_of_peak", None)


def _workload_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:
    for fs in file_systems(settings):
        if target and fs != target:
            continue
        days, total = daily_totals(settings, fs, since_ns, until_ns)
        yield f"workload:{fs}", days, total, False, "bytes_per_day", None


_SOURCES: dict[str, Callable] = {"probe": _probe_series, "bench": _bench_series, "jobs": _jobs_series,
                                 "workload": _workload_series}


#: Below this many points in all (about 20 year-long series) the search runs in this process: a
#: worker process costs ~1 s to start (it imports ruptures), more than it saves on less.
POOL_MIN_POINTS = 1_000_000
#: Series handed to the workers ahead of their results: bounds the memory of a long run.
_AHEAD_PER_WORKER = 4


def _search_one(values, times, log, period, penalty_per_log_n, min_segment):
    """change_points on one series; a series too short to tell gives its reason (str), not an error."""
    try:
        return change_points(values, log=log, penalty_per_log_n=penalty_per_log_n, min_segment=min_segment,
                             times_ns=times, period_ns=period)
    except UserError as e:
        return str(e)


def default_workers() -> int:
    return max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 8))


def search(items, *, penalty_per_log_n: float = PENALTY_PER_LOG_N, min_segment: int = MIN_SEGMENT,
           workers: int | None = None, pool_min_points: int = POOL_MIN_POINTS) -> Iterator[tuple]:
    """(name, times, stat, changes or reason) for each (name, times, values, log, stat, period) of
    `items`, in their order. The series are independent: past `pool_min_points` points they are
    searched by `workers` processes (default: the CPUs this process may use), fed as `items` is read;
    a process with threads of its own (the dashboard) searches them itself.
    """
    workers = default_workers() if workers is None else workers
    if threading.active_count() > 1:
        workers = 1  # fork copies one thread of a threaded process (the dashboard): no pool there
    args = (penalty_per_log_n, min_segment)
    it = iter(items)
    head, points = [], 0
    if workers > 1:
        for item in it:
            head.append(item)
            points += len(item[2])
            if points >= pool_min_points:
                break
    if workers <= 1 or points < pool_min_points:
        for name, times, values, log, stat, period in chain(head, it):
            yield name, times, stat, _search_one(values, times, log, period, *args)
        return
    yield from _pooled(chain(head, it), args, workers)


def _pooled(items, args, workers: int) -> Iterator[tuple]:
    # lazy: ruptures, scipy, loaded only when this runs
    import ruptures  # noqa: F401  (imported once, here: the forked workers inherit it)

    ctx = multiprocessing.get_context("fork")
    pending: deque = deque()
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        for name, times, values, log, stat, period in items:
            pending.append((name, times, stat, pool.submit(_search_one, values, times, log, period, *args)))
            while len(pending) >= _AHEAD_PER_WORKER * workers:
                name_, times_, stat_, fut = pending.popleft()
                yield name_, times_, stat_, fut.result()
        while pending:
            name_, times_, stat_, fut = pending.popleft()
            yield name_, times_, stat_, fut.result()


@dataclass(frozen=True)
class Change:
    """One change point: where the level of `series` (its `statistic`) went from `level_before` to
    `level_after` (`factor` = after / before), `time` the first interval of the new level (ISO 8601 UTC)."""

    series: str
    statistic: str
    time: str
    level_before: float
    level_after: float
    factor: float


@dataclass(frozen=True)
class SkippedSeries:
    """A series too short (or too flat) to tell, and why."""

    series: str
    reason: str


@dataclass(frozen=True)
class Changes(Answer):
    """`ioweather changes`: every change point of the series examined in [since, until), by time then
    series; the search's penalty and shortest level; the series skipped, with their reason."""

    since: str
    until: str
    series_examined: int
    penalty_per_log_n: float
    min_segment: int
    changes: list[Change]
    skipped: list[SkippedSeries]

    def to_json(self) -> dict:
        return {**super().to_json(), "changes": [asdict(c) for c in self.changes],
                "skipped": [asdict(s) for s in self.skipped]}


def detect(store, settings, since_ns: int, until_ns: int, *, kinds=KINDS, target: str | None = None,
           series: str | None = None, penalty_per_log_n: float = PENALTY_PER_LOG_N,
           min_segment: int = MIN_SEGMENT, workers: int | None = None, probe_cache: ProbeCache | None = None) -> Changes:
    """The change points of every series of `kinds` in [since, until) (a series too short to tell is
    `skipped`, with the reason); `probe_cache`: the probe series' (a new one's by default)."""
    unknown = [k for k in kinds if k not in _SOURCES]
    if unknown:
        raise UserError(f"unknown series kind {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    def source(kind):
        if kind == "probe" and probe_cache is not None:
            return _probe_items(probe_cache, known_targets(store, target), since_ns, until_ns)
        return _SOURCES[kind](store, settings, since_ns, until_ns, target)

    items = (s for kind in kinds for s in source(kind) if not series or series in s[0])
    changes, skipped, looked = [], [], 0
    for name, times, stat, found in search(items, penalty_per_log_n=penalty_per_log_n, min_segment=min_segment,
                                           workers=workers):
        looked += 1
        if isinstance(found, str):
            skipped.append(SkippedSeries(name, found))
            continue
        for c in found:
            changes.append(Change(name, stat, ns_to_iso(int(times[c.index])), c.level_before, c.level_after, c.factor))
    return Changes(ns_to_iso(since_ns), ns_to_iso(until_ns), looked, penalty_per_log_n, min_segment,
                   sorted(changes, key=lambda c: (c.time, c.series)), skipped)


#: The span over which the pages look for the probe's level changes: a level is told from what
#: lies on either side of it, so an hour on the timeline is seen within 30 days around it (half of
#: them after it when the data goes on), as `ioweather changes` over those 30 days sees it.
PAGE_CONTEXT_S = 30 * 86400


@dataclass(frozen=True)
class ProbeMark:
    """A probe level change marked on the Timeline and History pages (a `Change` of `probe:target:op`)."""

    series: str
    target: str
    op: str
    statistic: str
    time: str
    level_before: float
    level_after: float
    factor: float


@dataclass(frozen=True)
class SkippedProbeSeries:
    target: str
    op: str
    reason: str


@dataclass(frozen=True)
class ProbeMarks(Answer):
    """/api/timeline/changes and /api/history/changes: the probe's level changes in a page's window,
    searched over [since, until); `until_settled`: `until` is the end of the last 10-minute interval
    settled when asked (the window reaches the present; else it is 15 days after the window's end);
    `command` the `ioweather changes` line that finds the same changes."""

    since: str
    until: str
    until_settled: bool
    penalty_per_log_n: float
    min_segment: int
    command: str
    points: list[ProbeMark]
    skipped: list[SkippedProbeSeries]

    def to_json(self) -> dict:
        return {**super().to_json(), "points": [asdict(p) for p in self.points],
                "skipped": [asdict(s) for s in self.skipped]}


def probe_marks(cache, targets, since_ns: int, until_ns: int, now_ns: int, *,
                context_s: int = PAGE_CONTEXT_S) -> ProbeMarks:
    """The probe's level changes that start inside [since, until), per target and op, for the marks
    of the timeline and history pages; `cache` is the page's ProbeCache (its rollups and its kept
    searches are reused: `ProbeCache.level_changes`).

    Detected over [context since, context until): until + context_s / 2 rounded up to the 10-minute
    grid, at most the end of the last settled interval at `now_ns` (ended more than the cache's lag
    ago: its samples no longer change), back to context_s before that or to `since` when the window is
    longer. Ending at a settled interval makes the answer a function of settled data: the same until the
    next interval settles (so each target's search is kept that long instead of being made again at every
    request: 600 series of 2-3.5 ms for 100 targets), and `command`, the `ioweather changes` line printed
    with it, finds the same changes with the same levels whenever it is run.
    """
    step = PROBE_INTERVAL_S * 10**9
    settled = _settled(cache, now_ns)
    end = min(-(-(until_ns + context_s * 10**9 // 2) // step) * step, settled)
    start = min(since_ns, end - context_s * 10**9) // step * step
    points, skipped = [], []
    for target in targets:
        found = cache.level_changes(target, start, end, penalty_per_log_n=PENALTY_PER_LOG_N, min_segment=MIN_SEGMENT)
        skipped += [SkippedProbeSeries(target, s.op, s.reason) for s in found.skipped]
        for c in found.changes:
            if c.at_ns + step > since_ns and c.at_ns < until_ns:  # the interval of the new level meets the window
                points.append(ProbeMark(f"probe:{target}:{c.op}", target, c.op, "median_s", ns_to_iso(c.at_ns),
                                        c.level_before, c.level_after, c.factor))
    one = f" --target {shlex.quote(targets[0])}" if len(targets) == 1 else ""
    return ProbeMarks(ns_to_iso(start), ns_to_iso(end), end == settled, PENALTY_PER_LOG_N, MIN_SEGMENT,
                      f"ioweather changes --kind probe{one} --since {ns_to_iso(start)} --until {ns_to_iso(end)}",
                      sorted(points, key=lambda p: (p.time, p.target, p.op)), skipped)


def _settled(cache, now_ns: int) -> int:
    """The end of the last 10-minute interval that had settled at `now_ns` (ended more than the cache's lag before)."""
    step = PROBE_INTERVAL_S * 10**9
    return (now_ns - cache.lag_ns) // step * step


def keep_marks(cache, now_ns: int) -> float:
    """Search every target over the window the pages' default views share (History's 7 days, Timeline's
    hour: both end at the last settled interval, so both search [settled - 30 days, settled)), so that
    the first view after a restart, or after an interval settles, finds the searches kept. Returns the
    seconds until the next interval settles (the dashboard's warm-up calls it again then)."""
    for target in cache.targets():
        cache.pause()  # the dashboard's pages being answered first
        if cache.stop_event.is_set():  # the server is stopping
            break
        probe_marks(cache, [target], now_ns - 3600 * 10**9, now_ns, now_ns)
    step = PROBE_INTERVAL_S * 10**9
    return max(1.0, (_settled(cache, now_ns) + step + cache.lag_ns - now_ns) / 1e9)
