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

from collections.abc import Callable, Iterator

import numpy as np

from ioweather.errors import UserError
from ioweather.stats.changepoints import MIN_SEGMENT, PENALTY_PER_LOG_N, change_points
from ioweather.units import ns_to_iso

KINDS = ("probe", "bench", "jobs", "workload")
PROBE_INTERVAL_S = 600
DAY_NS = 86400 * 10**9


def _probe_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:
    from ioweather.services.probe_cache import ProbeCache
    from ioweather.services.slowdown import known_targets
    from ioweather.store.probe import OPS

    cache = ProbeCache(store)
    for t in known_targets(store, target):
        r = cache.rollups(t, PROBE_INTERVAL_S, since_ns, until_ns)
        for code, op in enumerate(OPS):
            sel = r["op"] == code
            yield f"probe:{t}:{op}", r["start_ns"][sel], r["median_s"][sel], True, "median_s", DAY_NS


def _bench_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:
    from ioweather.services.bench import runs_table
    from ioweather.store import bench as bstore

    if not bstore.has_runs(store):
        return
    df = runs_table(store, fs=target)
    df = df[(df["start_ns"].astype("int64") >= since_ns) & (df["start_ns"].astype("int64") < until_ns)]
    for (motif, direction, fs), g in df.groupby(["motif", "direction", "fs"], sort=True, dropna=False):
        yield (f"bench:{motif}:{direction}:{fs}", g["start_ns"].to_numpy(np.int64),
               g["fraction_of_peak"].to_numpy(float), True, "fraction_of_peak", None)


def _jobs_series(store, settings, since_ns: int, until_ns: int, target: str | None) -> Iterator[tuple]:
    from ioweather.services.umami import FEATURE_PERF
    from ioweather.stats.abc_features import epoch_s
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
    from ioweather.services.workload import daily_totals, file_systems

    for fs in file_systems(settings):
        if target and fs != target:
            continue
        days, total = daily_totals(settings, fs, since_ns, until_ns)
        yield f"workload:{fs}", days, total, False, "bytes_per_day", None


_SOURCES: dict[str, Callable] = {"probe": _probe_series, "bench": _bench_series, "jobs": _jobs_series,
                                 "workload": _workload_series}


def detect(store, settings, since_ns: int, until_ns: int, *, kinds=KINDS, target: str | None = None,
           series: str | None = None, penalty_per_log_n: float = PENALTY_PER_LOG_N,
           min_segment: int = MIN_SEGMENT) -> dict:
    """{"changes": [...], "skipped": [...]} for every series of `kinds` in [since, until).

    A change: series, statistic, time (ISO, the first interval of the new level), level_before,
    level_after, factor. A series too short to tell is listed in `skipped` with the reason.
    """
    unknown = [k for k in kinds if k not in _SOURCES]
    if unknown:
        raise UserError(f"unknown series kind {', '.join(unknown)}; choose from {', '.join(KINDS)}")
    changes, skipped, looked = [], [], 0
    for kind in kinds:
        for name, times, values, log, stat, period in _SOURCES[kind](store, settings, since_ns, until_ns, target):
            if series and series not in name:
                continue
            looked += 1
            try:
                found = change_points(values, log=log, penalty_per_log_n=penalty_per_log_n, min_segment=min_segment,
                                      times_ns=times, period_ns=period)
            except UserError as e:
                skipped.append({"series": name, "reason": str(e)})
                continue
            for c in found:
                changes.append({"series": name, "statistic": stat, "time": ns_to_iso(int(times[c.index])),
                                "level_before": c.level_before, "level_after": c.level_after, "factor": c.factor})
    return {"since": ns_to_iso(since_ns), "until": ns_to_iso(until_ns), "series_examined": looked,
            "penalty_per_log_n": penalty_per_log_n, "min_segment": min_segment,
            "changes": sorted(changes, key=lambda c: (c["time"], c["series"])), "skipped": skipped}
