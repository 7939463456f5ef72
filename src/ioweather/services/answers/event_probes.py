"""The probes' baselines of the events' slowdowns (services/answers/events.py) from the store's pieces.

`services.jobs.weather.ProbeBaselines` computes each (target, day)'s baseline — the median of the 30 days
of successful samples before the day, and the learning rule — from every raw sample of those days: at a
center's size (100 targets at 1 Hz) the Report's first answer read 1.5 G archived samples and had not
finished after 9 minutes (docs/benchmarks.md, issue 40). The store's pieces (services/probe/pieces.py: per
completed hour and day, histograms and sorted durations) give the same count, oldest sample and order
statistics exactly, so the same medians and the same learning verdicts, from a few slices. This lives
above the probe and jobs domains, which import neither of each other.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ioweather.services.jobs.weather import PROBE_BASELINE_DAYS, ProbeBaselines
from ioweather.stats import job_weather as jws
from ioweather.stats.status import baseline_stats_from, learning_ops, min_history_s, min_samples
from ioweather.store.probe_light import OPS
from ioweather.store.sqlite_reads import door

_DAY_NS = 86_400 * 10**9
#: The longest span of windows read at once per target (`window_slowdowns`): 8 days at 1 Hz, ~4 M rows.
GROUP_NS = 8 * _DAY_NS


class PiecesBaselines(ProbeBaselines):
    """`ProbeBaselines` whose rolling baselines come from the pieces where the store keeps them (SQLite);
    a reference period, or a store without pieces, is computed from the samples as before."""

    def expected(self, target: str, day: int) -> np.ndarray:
        # lazy: sqlalchemy via services.probe.pieces: a store without probes never asks (`why` reads with sqlite3)
        from ioweather.services.probe import pieces as probe_pieces

        key = (target, -1 if self.reference else day)
        if key not in self._expected and self.reference is None and probe_pieces.enabled(self.store):
            since, until = (day - PROBE_BASELINE_DAYS) * _DAY_NS, day * _DAY_NS
            self._expected[key] = _expected(probe_pieces.baseline(self.store, target, since, until, time.time_ns()),
                                            until)
        return super().expected(target, day)

    def prepare(self, target: str, days) -> None:
        """The baselines of `target` on these UTC days at once (`services.probe.pieces.day_baselines`)."""
        # lazy: sqlalchemy via services.probe.pieces: a store without probes never asks (`why` reads with sqlite3)
        from ioweather.services.probe import pieces as probe_pieces

        todo = sorted({int(d) for d in days} - {d for t, d in self._expected if t == target})
        if self.reference is not None or not todo or not probe_pieces.enabled(self.store):
            return
        got = probe_pieces.day_baselines(self.store, target, todo, PROBE_BASELINE_DAYS, time.time_ns())
        for day, ops in got.items():
            self._expected[(target, day)] = _expected(ops, day * _DAY_NS)


def _expected(ops, until: int) -> np.ndarray:
    """Per op code, the baseline's median (s) from its pieces' order statistics, NaN while it learns."""
    n_ops = len(OPS)
    expected = np.full(n_ops, np.nan)
    count = np.zeros(n_ops, np.int64)
    first = np.full(n_ops, until, np.int64)
    for code, o in enumerate(ops):
        expected[code] = baseline_stats_from(o.n, o.sum_ns, o.order_ns)["median"] if o.n else np.nan
        count[code] = o.n
        if o.first_ok_ns >= 0:
            first[code] = o.first_ok_ns
    # stats.status.learning_at's rule on the same counts and oldest successful samples
    learning = learning_ops(count, (until - first) / 1e9, min_history_s(PROBE_BASELINE_DAYS * 86400.0),
                            min_samples(PROBE_BASELINE_DAYS * 86400.0))
    expected[learning] = np.nan
    return expected


def window_slowdowns(probes: ProbeBaselines, windows: list[tuple[int, int]]) -> list[float | None]:
    """`services.jobs.weather._probe_slowdown(probes, since, until)[0]` of every (since, until) of `windows`,
    each target's samples read once over all of them instead of once per window: a week's 191 events at a
    center's size (100 targets at 1 Hz) read a day's file 19,100 times, ~20 minutes (issue 40), now 100 reads of
    the week. One target's samples are in memory at a time (a week at 1 Hz: 3.6 M rows)."""
    if not windows:
        return []
    since = np.array([w[0] for w in windows], np.int64)
    until = np.array([w[1] for w in windows], np.int64)
    ratios: list[dict[str, list[float]]] = [{} for _ in windows]
    probe = door(probes.store, "probe")
    for group in _groups(since, until):
        ranges = _merged(since[group], until[group])
        for t in probes.targets:
            s = probe.read_windows(probes.store, t, ranges)
            if not len(s["op"]):
                continue
            medians, present = jws.window_medians(s["op"], s["start_ns"], s["duration_ns"], s["status"], len(OPS),
                                                  since[group], until[group])
            if isinstance(probes, PiecesBaselines):
                probes.prepare(t, since[group][present] // _DAY_NS)
            for k in np.flatnonzero(present):
                i = group[k]
                with np.errstate(invalid="ignore", divide="ignore"):
                    ratio = medians[k] / probes.expected(t, int(since[i]) // _DAY_NS)
                for code in np.flatnonzero(np.isfinite(ratio)):
                    ratios[i].setdefault(OPS[code], []).append(float(ratio[code]))
    return [jws.op_slowdowns(r)[0] for r in ratios]


def kept_window_slowdowns(settings, probes: ProbeBaselines, windows: list[tuple[int, int]],
                          now_ns: int | None = None) -> list[float | None]:
    """`window_slowdowns`, those of the windows that ended before today (UTC) kept across calls and restarts
    (store/kept_answers.py) under the marker of those closed days' day pieces and of their baselines' month
    (`store.probe_pieces.days_marker`): a live store's new samples recompute only today's windows, a new or
    moved event only its own. Rolling baselines only (a reference period is computed each time).

    A late sample moves that marker only by deleting its day's pieces, so every day a kept window reads (its
    own and its baselines' month) has its day pieces built first, and a window is kept only when all of them
    are there; the marker is read once they are built, and the answer kept only if it has not moved meanwhile."""
    # lazy: sqlalchemy via store.probe_pieces, loaded only when this runs
    from ioweather.services.probe import pieces as probe_pieces
    from ioweather.services.runtime.stores import keep_answer, kept_answer
    from ioweather.store import probe_pieces as pieces_store

    windows = [(int(a), int(b)) for a, b in windows]
    now = now_ns if now_ns is not None else time.time_ns()
    today = now // _DAY_NS * _DAY_NS
    closed = [w for w in windows if w[1] <= today]
    if probes.reference is not None or not closed or not pieces_store.enabled(probes.store):
        return window_slowdowns(probes, windows)
    lo = (min(a for a, _ in closed) // _DAY_NS - PROBE_BASELINE_DAYS) * _DAY_NS
    days = set().union(*map(_read_days, closed))
    probe_pieces.build_days(probes.store, probes.targets, days)
    key = f"event-probe-slowdowns {lo} {today}"

    def marker() -> str:
        return repr(pieces_store.days_marker(probes.store, lo, today))

    version = marker()
    # after the marker: a day's pieces deleted before it was read are missing here, after it they move it
    have = pieces_store.whole_days(probes.store, probes.targets, min(days), max(days) + _DAY_NS)
    whole = days.intersection(*have.values())
    text = kept_answer(settings, key, version)
    kept = {(a, b): s for (a, b), s in json.loads(text)} if text else {}
    todo = [w for w in windows if w not in kept]
    got = dict(zip(todo, window_slowdowns(probes, todo)))
    new = {w: s for w, s in got.items() if w[1] <= today and _read_days(w) <= whole}
    if new and marker() == version:
        keep_answer(settings, key, version, json.dumps([[list(w), s] for w, s in {**kept, **new}.items()]))
    return [got[w] if w in got else kept[w] for w in windows]


def _read_days(window: tuple[int, int]) -> set[int]:
    """The starts of the UTC days whose samples `window_slowdowns` reads for `window`: its own and the
    PROBE_BASELINE_DAYS before its first (the rolling baseline's)."""
    first, last = window[0] // _DAY_NS, (window[1] - 1) // _DAY_NS
    return {d * _DAY_NS for d in range(first - PROBE_BASELINE_DAYS, last + 1)}


def _merged(since: np.ndarray, until: np.ndarray) -> list[tuple[int, int]]:
    """The union of the windows [since[i], until[i]) as sorted, disjoint ranges."""
    out: list[list[int]] = []
    for a, b in sorted(zip(since.tolist(), until.tolist())):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _groups(since: np.ndarray, until: np.ndarray) -> list[np.ndarray]:
    """The windows' indices in groups spanning at most GROUP_NS each (by start): what one read of a target holds."""
    order = np.argsort(since, kind="stable")
    groups, cur, lo, hi = [], [], 0, 0
    for i in order:
        if cur and max(hi, int(until[i])) - lo > GROUP_NS:
            groups.append(np.array(cur))
            cur = []
        if not cur:
            lo, hi = int(since[i]), int(until[i])
        cur.append(int(i))
        hi = max(hi, int(until[i]))
    groups.append(np.array(cur))
    return groups
