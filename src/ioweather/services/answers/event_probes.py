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
            ops = probe_pieces.baseline(self.store, target, since, until, time.time_ns())
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
            self._expected[key] = expected
        return super().expected(target, day)


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
        lo, hi = int(since[group].min()), int(until[group].max())
        for t in probes.targets:
            s = probe.read_samples(probes.store, t, since_ns=lo, until_ns=hi)
            if not len(s["op"]):
                continue
            medians, present = jws.window_medians(s["op"], s["start_ns"], s["duration_ns"], s["status"], len(OPS),
                                                  since[group], until[group])
            for k in np.flatnonzero(present):
                i = group[k]
                with np.errstate(invalid="ignore", divide="ignore"):
                    ratio = medians[k] / probes.expected(t, int(since[i]) // _DAY_NS)
                for code in np.flatnonzero(np.isfinite(ratio)):
                    ratios[i].setdefault(OPS[code], []).append(float(ratio[code]))
    return [jws.op_slowdowns(r)[0] for r in ratios]


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
