"""When is the disk full: the one forecast behind the Capacity page, the Report page and `report --json`.

It depends on the data only, never on the window a surface draws: a least-squares line through each
data target's used bytes (capacity - free, at the readings' own times, one reading per target per
FORECAST_STEP_NS) over the GROWTH_WINDOW_S before the last capacity reading at or before `until`.
The file system's growth is the sum of its data targets' (a line fitted to a sum is the sum of the
lines fitted to its parts), and its room the sum of theirs, so when every target grows the file
system's days until full lie between its targets' fewest and most. (Three surfaces used to fit the
bins of their own windows: a day said 82.8 days, two days "not growing", and the file system's line,
fitted to other bins than its targets', 53.9 days while each target was 3,093 days or more from full.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ioweather.stats import targets as T
from ioweather.store import telemetry_targets as Q

FORECAST_STEP_NS = 600 * 10**9   # a week of readings at this step: about 1,000 points per target
_METRICS = ("capacity_bytes", "free_bytes", "avail_bytes")


@dataclass(frozen=True)
class TargetForecast:
    target: str
    used_bytes: float
    room_bytes: float            # available to users (avail), else free
    growth_bps: float | None     # None: fewer than two readings in the growth window
    days_until_full: float | None  # None: not growing, or unknown
    points: int


@dataclass(frozen=True)
class Forecast:
    end_ns: int | None           # the last capacity reading the fit ends at (None: no capacity data)
    window_s: float
    targets: dict[str, TargetForecast]
    used_bytes: float | None
    room_bytes: float | None
    growth_bps: float | None
    days_until_full: float | None
    points: int


def is_data_target(name: str) -> bool:
    """OSTs (and statvfs mounts), not MDTs: an MDT's space is not where files' data goes."""
    return "-MDT" not in name


def forecast(settings, fs: str, until_ns: int) -> Forecast:
    """Days until full per data target and for the file system, from the data before `until_ns`."""
    last = Q.last_before(settings, fs, until_ns, metrics=("free_bytes",))
    last = last[np.isfinite(last["value"].to_numpy(float))] if not last.empty else last
    if last.empty:
        return Forecast(None, T.GROWTH_WINDOW_S, {}, None, None, None, None, 0)
    end_ns = int(last["time_ns"].max())
    since_ns = end_ns - int(T.GROWTH_WINDOW_S * 1e9)
    g = Q.gauge_bins(settings, fs, since_ns, end_ns + 1, FORECAST_STEP_NS, metrics=_METRICS)
    out: dict[str, TargetForecast] = {}
    for target, rows in g.groupby("target", sort=True):
        if not is_data_target(target):
            continue
        by = {m: d.set_index("bin").sort_index() for m, d in rows.groupby("metric")}
        if "free_bytes" not in by or "capacity_bytes" not in by:
            continue
        free = by["free_bytes"]
        # capacity rarely changes and may be read less often than free: the last one known at each reading
        cap = by["capacity_bytes"]["value"].reindex(free.index.union(by["capacity_bytes"].index)).sort_index().ffill().bfill()
        used = cap.reindex(free.index).to_numpy(float) - free["value"].to_numpy(float)
        t_s = free["time_ns"].to_numpy(np.int64) / 1e9
        ok = np.isfinite(used)
        if not ok.any():
            continue
        gr = T.growth(t_s[ok], used[ok])
        avail = by.get("avail_bytes")
        avail = avail["value"].to_numpy(float) if avail is not None else np.array([])
        avail = avail[np.isfinite(avail)]
        room = float(avail[-1]) if avail.size else float(free["value"].to_numpy(float)[-1])
        out[target] = TargetForecast(target, float(used[ok][-1]), room, gr["slope_bps"],
                                     T.days_until_full(room, gr["slope_bps"]), gr["points"])
    if not out:
        return Forecast(end_ns, T.GROWTH_WINDOW_S, {}, None, None, None, None, 0)
    slopes = [f.growth_bps for f in out.values() if f.growth_bps is not None]
    growth = float(sum(slopes)) if slopes else None
    room = float(sum(f.room_bytes for f in out.values()))
    return Forecast(end_ns, T.GROWTH_WINDOW_S, out, float(sum(f.used_bytes for f in out.values())), room, growth,
                    T.days_until_full(room, growth), sum(f.points for f in out.values()))
