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
from ioweather.stats.status import baseline_stats_from, learning_ops, min_history_s, min_samples
from ioweather.store.probe_light import OPS

_DAY_NS = 86_400 * 10**9


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
