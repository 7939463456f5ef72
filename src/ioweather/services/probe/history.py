"""The slowdown history: per target, op and interval of a window the slowdown of the chosen statistic
against the target's baseline (the History page's heatmap and its worst intervals).

Computed from the probe cache's rollups (services/probe/cache.py); the page only formats it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ioweather.encoding import Answer, answer_dict, finite_or_none, iso_ms
from ioweather.services.probe.cache import OPS
from ioweather.services.probe.status import Thresholds, learning_reason
from ioweather.stats.probe import state
from ioweather.units import ns_to_iso

#: The intervals listed as worst, per target.
WORST_SHOWN = 10


@dataclass(frozen=True)
class WorstInterval(Answer):
    """One of a target's slowest intervals: the op, the interval's start (ISO 8601 UTC), its slowdown and state,
    its successful samples and timeouts."""

    op: str
    interval_start: str
    slowdown: float
    state: str
    count: int
    timeouts: int


@dataclass(frozen=True)
class Window(Answer):
    """The baseline's window [since, until) (ISO 8601 UTC)."""

    since: str
    until: str


@dataclass(frozen=True)
class TargetHistory:
    """One target's heatmap: rows are `History.ops`, columns `History.time`."""

    target: str
    #: Per op: the baseline's value of the statistic (s); None without a baseline.
    expected_s: dict[str, float | None]
    baseline: Window
    #: op × interval: the statistic over the baseline's; None where no sample or while the op's baseline learns.
    slowdown: list[list[float | None]]
    count: list[list[int]]
    timeouts: list[list[int]]
    #: The WORST_SHOWN slowest intervals, slowest first (of the ops whose baseline has learned).
    worst: list[WorstInterval]
    #: Per op: True while its rolling baseline is learning (the rule of Status, /metrics and `slowdown`):
    #: its intervals are not judged, as `slowdown --json` gives them `state` "learning" and no slowdown.
    learning: dict[str, bool]
    #: Why, while any op learns ('learning the baseline (1 h of 30 d; ...)'); None once every op has learned.
    learning_reason: str | None

    def to_json(self) -> dict:
        return {**answer_dict(self), "worst": [w.to_json() for w in self.worst]}


@dataclass(frozen=True)
class History:
    """How much slower than usual was each op, per interval of a window: the Slowdown history page's
    answer (`/api/history`). Intervals of `interval_s` seconds aligned to the epoch start at `time`
    (ISO 8601 UTC) and cover [since, until); the slowdown is `stat` over the baseline's `stat`."""

    since: str
    until: str
    interval_s: int
    stat: str
    thresholds: Thresholds
    targets_all: list[str]
    #: The one target asked for, None for all of them.
    target: str | None
    ops: list[str]
    time: list[str]
    targets: list[TargetHistory]

    def to_json(self) -> dict:
        return {**answer_dict(self), "targets": [t.to_json() for t in self.targets]}


def grid(since_ns: int, until_ns: int, interval_s: int) -> tuple[int, int]:
    """The first interval's start (aligned to the epoch) and the number of intervals covering the window."""
    step = interval_s * 10**9
    first = (since_ns // step) * step
    return first, int(-((first - until_ns) // step))


def history(cache, targets_all: list[str], one: str | None, since_ns: int, until_ns: int, interval_s: int, stat: str,
            warn: float, crit: float, now_ns: int | None = None) -> History:
    """Each target's heatmap over [since, until): `one`, or every target when it is None; whether each op's
    baseline is still learning is judged at `now_ns` (the cache's clock by default), as the Status card does."""
    now = cache.clock() if now_ns is None else now_ns
    first, columns = grid(since_ns, until_ns, interval_s)
    starts = first + interval_s * 10**9 * np.arange(columns, dtype=np.int64)
    chosen = [one] if one else targets_all
    with cache.reading_recent(chosen):  # the unfinished intervals' samples of every target in one read
        out = [_target_history(cache, target, since_ns, until_ns, interval_s, stat, warn, crit, now, starts)
               for target in chosen]
    return History(ns_to_iso(since_ns), ns_to_iso(until_ns), interval_s, stat, Thresholds(warn, crit),
                   targets_all, one, list(OPS), iso_ms(starts), out)


def _target_history(cache, target: str, since_ns: int, until_ns: int, interval_s: int, stat: str, warn: float,
                    crit: float, now: int, starts: np.ndarray) -> TargetHistory:
    step = interval_s * 10**9
    columns = len(starts)
    first = int(starts[0]) if columns else grid(since_ns, until_ns, interval_s)[0]
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
    col = "mean_s" if stat == "mean" else f"{stat}_s"
    with np.errstate(invalid="ignore", divide="ignore"):
        sd[oc, j] = r[col][inside] / expected[oc]
    n[oc, j] = r["count"][inside]
    to[oc, j] = r["timeouts"][inside]
    learning = base.learning(now)
    # An interval compared with a baseline made mostly of itself is about 1x by construction: not judged.
    sd[learning] = np.nan
    flat = np.where(np.isfinite(sd), sd, -np.inf).ravel()
    worst = []
    for k in np.argsort(-flat, kind="stable")[:WORST_SHOWN]:
        if not np.isfinite(flat[k]):
            break
        o, c = divmod(int(k), columns)
        worst.append(WorstInterval(OPS[o], ns_to_iso(int(starts[c])), float(sd[o, c]),
                                   state(float(sd[o, c]), warn, crit), int(n[o, c]), int(to[o, c])))
    return TargetHistory(
        target, dict(zip(OPS, finite_or_none(expected))),
        Window(ns_to_iso(base.since_ns), ns_to_iso(base.until_ns)),
        _rows_or_none(sd), n.tolist(), to.tolist(), worst,
        dict(zip(OPS, learning.tolist())), learning_reason(base, now) if learning.any() else None)


def _rows_or_none(a: np.ndarray) -> list[list[float | None]]:
    """`[finite_or_none(row) for row in a]` without a Python test per value (101,400 for 100 targets' week)."""
    out = a.astype(object)
    out[~np.isfinite(a)] = None
    return out.tolist()
