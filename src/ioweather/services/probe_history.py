"""The slowdown history: per target, op and interval of a window the slowdown of the chosen statistic
against the target's baseline (the History page's heatmap and its worst intervals).

Computed from the probe cache's rollups (services/probe_cache.py); the page only formats it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ioweather.services.probe_cache import OPS
from ioweather.stats.probe import state
from ioweather.units import ns_to_iso

#: The intervals listed as worst, per target.
WORST_SHOWN = 10


@dataclass
class TargetHistory:
    target: str
    expected_s: np.ndarray  # per op: the baseline's value of the statistic (NaN: no baseline)
    baseline_since_ns: int
    baseline_until_ns: int
    slowdown: np.ndarray  # op × interval, NaN where no sample
    count: np.ndarray  # op × interval
    timeouts: np.ndarray  # op × interval
    worst: list[dict]


def grid(since_ns: int, until_ns: int, interval_s: int) -> tuple[int, int]:
    """The first interval's start (aligned to the epoch) and the number of intervals covering the window."""
    step = interval_s * 10**9
    first = (since_ns // step) * step
    return first, int(-((first - until_ns) // step))


def history(cache, targets: list[str], since_ns: int, until_ns: int, interval_s: int, stat: str, warn: float,
            crit: float) -> tuple[np.ndarray, list[TargetHistory]]:
    """The intervals' starts (ns) and each target's heatmap."""
    step = interval_s * 10**9
    first, columns = grid(since_ns, until_ns, interval_s)
    starts = first + step * np.arange(columns, dtype=np.int64)
    col = "mean_s" if stat == "mean" else f"{stat}_s"
    out = []
    for target in targets:
        base = cache.baseline(target)
        # Like for like on the dashboard: a p99 against the baseline p99 (the median against the median).
        expected = base.expected(stat, "same")
        r = cache.rollups(target, interval_s, since_ns, until_ns)
        sd = np.full((len(OPS), columns), np.nan)
        n = np.zeros((len(OPS), columns), np.int64)
        to = np.zeros((len(OPS), columns), np.int64)
        j = (r["start_ns"] - first) // step
        inside = (j >= 0) & (j < columns)
        oc, j = r["op"][inside], j[inside]
        with np.errstate(invalid="ignore", divide="ignore"):
            sd[oc, j] = r[col][inside] / expected[oc]
        n[oc, j] = r["count"][inside]
        to[oc, j] = r["timeouts"][inside]
        flat = np.where(np.isfinite(sd), sd, -np.inf).ravel()
        worst = []
        for k in np.argsort(-flat, kind="stable")[:WORST_SHOWN]:
            if not np.isfinite(flat[k]):
                break
            o, c = divmod(int(k), columns)
            worst.append({"op": OPS[o], "interval_start": ns_to_iso(int(starts[c])), "slowdown": float(sd[o, c]),
                          "state": state(float(sd[o, c]), warn, crit), "count": int(n[o, c]),
                          "timeouts": int(to[o, c])})
        out.append(TargetHistory(target, expected, base.since_ns, base.until_ns, sd, n, to, worst))
    return starts, out
