"""The Probe timeline of one target (web/pages/timeline.py): the samples of a window of up to 6 h, and
over a longer one (up to a day) each 10-minute interval's fastest, median and slowest sample.

A day of 1 Hz samples is 518 k rows: reading and downsampling them took ~0.8 s a request and shipped
1 MiB (issue 21). The 10-minute rollups of completed intervals are already in the probe cache (read
back from the store's pieces, services/probe/pieces.py), so a long window reads as samples only its
partial first and last 10 minutes and the unsettled tail (and the partial ends of the 1 h or 4 h
intervals when the rows below the plot are asked at those); the counts are still those of every
sample in [since, until), and the slowest and fastest sample of each interval stay on the plot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ioweather.encoding import Answer, answer_dict, finite_or_none, iso_ms

from ioweather.services.probe.cache import INTERVALS_S, OPS, Baseline, ProbeCache
from ioweather.services.probe.status import Thresholds, learning_reason
from ioweather.stats.downsample import downsample, split_budget
from ioweather.stats.probe import STATUS_OK, interval_stats
from ioweather.stats.rollups import concat_rollups, rollup_arrays, rollup_rows
from ioweather.store.probe import STATUSES
from ioweather.units import ns_to_iso

#: Windows up to this long show every sample (downsampled keeping extremes past the point budget).
RAW_MAX_NS = 6 * 3600 * 10**9
#: Longer windows show intervals of this length (s): a day is 144 of them per op.
ROLLUP_S = 600
MAX_POINTS = 20_000
INTERVAL_COLUMNS = ("count", "errors", "timeouts", "median_s", "p90_s", "p99_s", "max_s", "slowdown")


@dataclass(frozen=True)
class TimelineInterval:
    """One op's interval below the plot: its start (ISO 8601 UTC), its successful samples, errors and timeouts,
    the quantiles of the successful durations (s; None without two) and its slowdown against `expected_s`."""

    op: str
    interval_start: str
    count: int
    errors: int
    timeouts: int
    median_s: float | None
    p90_s: float | None
    p99_s: float | None
    max_s: float | None
    slowdown: float | None


@dataclass(frozen=True)
class RawSamples:
    """One op's drawn samples of a raw window: each sample's start (ISO 8601 UTC, ms) and duration (s)."""

    time: list[str]
    duration_s: list[float]


@dataclass(frozen=True)
class IntervalSamples:
    """One op's 10-minute intervals over a longer window: each interval's start (ISO 8601 UTC, ms; the
    window's start for the first), its successful samples and their fastest, median and slowest (s)."""

    time: list[str]
    count: list[int]
    min_s: list[float | None]
    median_s: list[float | None]
    max_s: list[float | None]


@dataclass(frozen=True)
class Timeline(Answer):
    """What happened to one target's probe, sample by sample: the Probe timeline page's answer
    (`/api/timeline`). Times ISO 8601 UTC (ms), durations in seconds.

    `samples` per op: raw (`resolution` "raw") each drawn sample's `time` and `duration_s`; over a
    longer window each 10-minute interval's `count`, `min_s`, `median_s` and `max_s`. `failures`:
    raw, each failed sample's `time`, `op`, `status`, `duration_s`; else per interval `errors` and
    `timeouts`. `intervals`: the statistics of each `interval_s` interval and op below the plot, with
    the slowdown of `stat` against the baseline's `expected_s`, None for the ops whose baseline is
    `learning` (the rule of Status and `slowdown`; `learning_reason` says why while any op learns)."""

    target: str
    targets: list[str]
    since: str
    until: str
    interval_s: float
    stat: str
    max_points: int
    resolution: str
    resolution_s: int | None
    samples_total: int
    samples_shown: int
    downsampled: bool
    failures_total: int
    expected_s: dict[str, float | None]
    thresholds: Thresholds
    samples: dict[str, RawSamples | IntervalSamples]
    failures: dict[str, list]
    intervals: list[TimelineInterval]
    learning: dict[str, bool]
    learning_reason: str | None

    def to_json(self) -> dict:
        return {**answer_dict(self), "samples": {op: answer_dict(s) for op, s in self.samples.items()},
                "intervals": [answer_dict(r) for r in self.intervals]}


def timeline(cache: ProbeCache, targets: list[str], target: str, since_ns: int, until_ns: int, interval_s: float,
             stat: str, max_points: int, warn: float, crit: float, now_ns: int | None = None) -> Timeline:
    """`target`'s samples in [since, until) as the page draws them (`targets`: every target, for its menu);
    whether each op's baseline is still learning is judged at `now_ns` (the cache's clock by default)."""
    now = cache.clock() if now_ns is None else now_ns
    raw = until_ns - since_ns <= RAW_MAX_NS
    base = cache.baseline(target)
    learning = base.learning(now)
    t = _drawn(cache, target, since_ns, until_ns, interval_s, stat, max_points, base, learning, raw)
    f = t.failures
    if t.resolution_s is None:
        samples = {op: RawSamples(iso_ms(p["start_ns"]), (p["duration_ns"] / 1e9).tolist())
                   for op, p in zip(OPS, t.points)}
        failures = {"time": iso_ms(f["start_ns"]), "op": [OPS[c] for c in f["op"].tolist()],
                    "status": [STATUSES[c] for c in f["status"].tolist()],
                    "duration_s": (f["duration_ns"] / 1e9).tolist()}
    else:
        samples = {op: IntervalSamples(iso_ms(p["start_ns"]), p["count"].tolist(), finite_or_none(p["min_s"]),
                                       finite_or_none(p["median_s"]), finite_or_none(p["max_s"]))
                   for op, p in zip(OPS, t.points)}
        failures = {"time": iso_ms(f["start_ns"]), "op": [OPS[c] for c in f["op"].tolist()],
                    "errors": f["errors"].tolist(), "timeouts": f["timeouts"].tolist()}
    return Timeline(
        target=target, targets=targets, since=ns_to_iso(since_ns), until=ns_to_iso(until_ns),
        interval_s=t.interval_s, stat=stat, max_points=max_points,
        resolution="raw" if t.resolution_s is None else f"{t.resolution_s // 60} min", resolution_s=t.resolution_s,
        samples_total=t.total, samples_shown=t.shown, downsampled=t.shown < t.total, failures_total=t.failures_total,
        expected_s=dict(zip(OPS, finite_or_none(t.expected_s))), thresholds=Thresholds(warn, crit),
        samples=samples, failures=failures,
        intervals=[TimelineInterval(op=r["op"], interval_start=ns_to_iso(r["interval_start_ns"]),
                                    **{c: r[c] for c in INTERVAL_COLUMNS}) for r in t.intervals],
        learning=dict(zip(OPS, learning.tolist())),
        learning_reason=learning_reason(base, now) if learning.any() else None)


@dataclass
class _Drawn:
    """What the page draws; times in ns, durations in s (in ns for raw samples)."""

    #: None: raw samples; else the length (s) of the intervals `points` summarizes.
    resolution_s: int | None
    #: The interval of `intervals` (a raw-only interval under 10 min becomes 10 min over a long window).
    interval_s: float
    expected_s: np.ndarray
    #: Samples in [since, until), every status, and of them the errors and timeouts.
    total: int
    failures_total: int
    #: Samples drawn as points (with rollups: each interval's fastest and slowest).
    shown: int
    #: Per op code. Raw: start_ns, duration_ns. Rollups: start_ns (clipped to since), count, min_s, median_s, max_s.
    points: list[dict[str, np.ndarray]]
    #: Raw: start_ns, op, status, duration_ns per failed sample. Rollups: start_ns, op, errors, timeouts per interval.
    failures: dict[str, np.ndarray]
    #: `interval_stats` rows of `interval_s` with the op's name and its slowdown against `expected_s`.
    intervals: list[dict]


def _drawn(cache: ProbeCache, target: str, since_ns: int, until_ns: int, interval_s: float, stat: str,
           max_points: int, base: Baseline, learning: np.ndarray, raw: bool) -> _Drawn:
    """The drawn samples and their counts are over the samples in [since, until) only (at most `max_points`
    drawn); the interval statistics have their first interval whole, as `probe stats` and `slowdown` count it
    (whole_intervals), and a partial last one. No slowdown for the ops whose baseline is `learning` (about 1x
    by construction)."""
    # Like for like on the dashboard: a p99 against the baseline p99 (the median against the median).
    expected = base.expected(stat, "same")
    if not raw:
        # No interval under 10 minutes: it would need every sample of the window.
        interval_s = max(interval_s, float(ROLLUP_S))
    step = int(round(interval_s * 1e9))
    first = since_ns - since_ns % step  # the interval statistics' window starts on the first interval's start
    if not raw:
        read = partial(cache.read, target)
        tens = window_rollups(cache, target, ROLLUP_S, since_ns, until_ns, read)
        t = _from_rollups(tens, since_ns)
        stats = tens if int(interval_s) == ROLLUP_S and first == since_ns else window_rollups(
            cache, target, int(interval_s), first, until_ns, read)
    else:
        s = cache.read(target, since_ns, until_ns)
        t = _from_samples(s, since_ns, until_ns, max_points)
        if int(interval_s) in INTERVALS_S:
            def read(lo: int, hi: int) -> dict[str, np.ndarray]:  # the samples before `since` are read only if needed
                return _within(s, lo, hi) if lo >= since_ns else cache.read(target, lo, hi)
            stats = window_rollups(cache, target, int(interval_s), first, until_ns, read)
        else:
            if first < since_ns:  # under 10 minutes of samples before the window
                head = cache.read(target, first, since_ns)
                s = {k: np.concatenate([head[k], v]) for k, v in s.items()}
            stats = rollup_arrays(interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s))
    rows = []
    for r in rollup_rows(stats):
        exp = expected[r["op_code"]]
        value = r["mean_s"] if stat == "mean" else r[f"{stat}_s"]
        rows.append({**r, "op": OPS[r["op_code"]],
                     "slowdown": value / exp if value is not None and np.isfinite(exp) and exp > 0
                     and not learning[r["op_code"]] else None})
    return _Drawn(interval_s=interval_s, expected_s=expected, intervals=rows, **t)


def window_rollups(cache: ProbeCache, target: str, interval_s: int, since_ns: int, until_ns: int,
                   read: Callable[[int, int], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Rollups of the intervals [since, until) touches, over the samples in it only: whole intervals from
    the cache (only their unsettled tail is read), the window's partial first and last from `read(lo, hi)`."""
    step = interval_s * 10**9
    a, b = -(-since_ns // step) * step, (until_ns // step) * step
    if a < b:
        parts, ends = [cache.rollups(target, interval_s, a, b)], [(since_ns, a), (b, until_ns)]
    else:  # inside one interval, or across one boundary
        parts, ends = [], [(since_ns, min(a, until_ns)), (min(a, until_ns), until_ns)]
    for lo, hi in ends:
        if lo < hi:
            s = read(lo, hi)
            parts.append(rollup_arrays(interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s)))
    return concat_rollups(parts)


def _within(s: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
    sel = (s["start_ns"] >= lo) & (s["start_ns"] < hi)
    return {k: v[sel] for k, v in s.items()}


def _from_samples(s: dict[str, np.ndarray], since_ns: int, until_ns: int, max_points: int) -> dict:
    """Successful samples per op and the failures as their own series, sharing one point budget."""
    ok = s["status"] == STATUS_OK
    bad = np.flatnonzero(~ok)
    series = [np.flatnonzero(ok & (s["op"] == code)) for code in range(len(OPS))] + [bad]
    budget = split_budget([len(ix) for ix in series], max_points)
    kept = [ix[downsample(s["start_ns"][ix], s["duration_ns"][ix], n, since_ns, until_ns)] if len(ix) else ix
            for ix, n in zip(series, budget)]
    points = [{"start_ns": s["start_ns"][k], "duration_ns": s["duration_ns"][k]} for k in kept[:-1]]
    failures = {c: s[c][kept[-1]] for c in ("start_ns", "op", "status", "duration_ns")}
    return {"resolution_s": None, "total": len(ok), "failures_total": len(bad),
            "shown": sum(len(k) for k in kept), "points": points, "failures": failures}


def _from_rollups(r: dict[str, np.ndarray], since_ns: int) -> dict:
    """Per op and interval: count, fastest, median and slowest successful sample; failures counted."""
    start = np.maximum(r["start_ns"], since_ns)
    points = []
    for code in range(len(OPS)):
        sel = (r["op"] == code) & (r["count"] > 0)
        points.append({"start_ns": start[sel], **{c: r[c][sel] for c in ("count", "min_s", "median_s", "max_s")}})
    failed = r["errors"] + r["timeouts"]
    bad = failed > 0
    return {"resolution_s": ROLLUP_S, "total": int(r["count"].sum() + failed.sum()),
            "failures_total": int(failed.sum()), "shown": int(np.minimum(r["count"], 2).sum()), "points": points,
            "failures": {"start_ns": start[bad], "op": r["op"][bad], "errors": r["errors"][bad],
                         "timeouts": r["timeouts"][bad]}}
