"""`/metrics`: probe numbers in the Prometheus exposition format (prometheus_client).

Exported (labels in parentheses), all in base units:

- `ioweather_probe_duration_seconds` histogram (target, op): durations of successful
  operations stored since this server started;
- `ioweather_probe_errors_total`, `ioweather_probe_timeouts_total` counters (target, op);
- `ioweather_slowdown_ratio` gauge (target, op, stat, expected): stat over the last 10 minutes /
  the same stat over the baseline (`expected="same"`, like for like: a p99 against the usual
  p99), or for the median / the baseline median (`expected="median"`, the paper's definition),
  the numbers of the dashboard; absent for an op whose baseline is still learning;
- `ioweather_probe_expected_seconds` gauge (target, op): the baseline median itself;
- `ioweather_baseline_learning` gauge (target, op): 1 while the op's rolling baseline holds less
  than 24 h or 1,000 samples (no slowdown is exported then), 0 after;
- `ioweather_probe_last_sample_timestamp_seconds` gauge (target): alert on
  `time() - ioweather_probe_last_sample_timestamp_seconds > 60` for a stopped probe;
- `ioweather_store_up` gauge: 0 when the store could not be read;
- `ioweather_bench_bandwidth_bytes_per_second`, `ioweather_bench_fraction_of_peak` gauges (motif,
  direction, fs): the last regression benchmark run of each series (services/bench/runs.py).

Histogram and counters are process-lifetime counters, as in any instrumented
program: every known (target, op) series is exported from the first scrape with zero
counts (Prometheus' advice: a series that appears late breaks rate() over it), and they
count the probe samples that *start* at or after the moment the server started and
are at least `LAG_S` (90 s) old, i.e. the first non-zero counts appear ~90 s after a
start, counted in the database (`store.probe_aggregates`) over only the samples
that settled since the previous scrape. Prometheus' rate()/increase() and
histogram_quantile() over rate() handle the reset at a restart; over a range in which
Prometheus saw no increase (counters flat since its first scrape, a stopped probe)
histogram_quantile() is NaN, 0/0, by Prometheus' definition, not a missing export. Counting a
month of history instead would cost a minute of database time at the first scrape
(46 M rows for 3 targets at 1 Hz) for numbers that rate() discards anyway.
They trail real time by `LAG_S` (90 s) so that a sample stored late (batched
writes, a timed-out op recorded at its deadline) is counted exactly once; each
run has its own watermark, so a run that appears later (a restarted probe flushing
its buffer) is counted in full from the server's start.

The slowdown gauges need the 30-day baseline; while it is being computed (the first
minutes after a start on a big store) they are left out rather than making the
scrape wait past Prometheus' timeout.
"""

from __future__ import annotations

import threading

import numpy as np
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

from ioweather.errors import UserError
from ioweather.stats.probe import SLOWDOWN_STATS
from ioweather.stats.status import window_slowdown
from ioweather.store.probe_aggregates import bucket_counts, last_sample_ns
from ioweather.services.bench.runs import metric_families as bench_metric_families
from ioweather.services.probe.cache import OPS, ProbeCache
from ioweather.services.probe.status import WINDOW_S

#: Bucket bounds (s): 1-2.5-5 per decade from 1 µs (a cached stat) to 60 s (the default timeout).
BUCKETS_S = tuple(float(f"{m}e{e}") for e in range(-6, 1) for m in ("1", "2.5", "5")) + (10.0, 30.0, 60.0)

__all__ = ["ProbeMetrics", "CONTENT_TYPE_LATEST"]


def _zero(n_edges: int) -> dict:
    return {"le": np.zeros(n_edges + 1, np.int64), "sum_ns": 0, "count": 0, "errors": 0, "timeouts": 0}


class ProbeMetrics:
    """Builds the exposition from the store, keeping cumulative counts between scrapes."""

    def __init__(self, cache: ProbeCache, window_s: float = WINDOW_S, count_since_ns: int | None = None):
        self.cache = cache
        self.window_s = window_s
        #: Samples before this are not counted (default: now, i.e. the server's start).
        self.count_since_ns = cache.clock() if count_since_ns is None else count_since_ns
        self.edges_ns = [int(round(b * 1e9)) for b in BUCKETS_S]
        self._counts: dict[str, tuple[dict[int, int], dict[str, dict]]] = {}
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def exposition(self) -> bytes:
        with self._lock:  # concurrent scrapes would otherwise count the same new samples twice
            return generate_latest(self.registry)

    # -- cumulative counts -----------------------------------------------------
    def _advance(self, target: str) -> dict[str, dict]:
        """Add the samples that settled since the last scrape. Watermarks are per run, so the samples
        of a run that appears later (a restarted probe flushing its buffer, an import) all count."""
        marks, ops = self._counts.get(target, ({}, {}))
        settled = self.cache.clock() - self.cache.lag_ns
        if settled <= self.count_since_ns or (marks and settled <= min(marks.values())):
            return ops
        new, ids = bucket_counts(self.cache.store, target, self.edges_ns, marks, settled, self.count_since_ns)
        for op, n in new.items():
            have = ops.setdefault(op, _zero(len(self.edges_ns)))
            for k in ("sum_ns", "count", "errors", "timeouts"):
                have[k] += n[k]
            have["le"] += n["le"]
        self._counts[target] = ({rid: settled for rid in ids}, ops)
        return ops

    # -- prometheus_client collector protocol ---------------------------------------
    def collect(self):
        hist = HistogramMetricFamily("ioweather_probe_duration_seconds",
                                     "Duration of successful probe operations.", labels=["target", "op"])
        errors = CounterMetricFamily("ioweather_probe_errors", "Probe operations that failed.", labels=["target", "op"])
        timeouts = CounterMetricFamily("ioweather_probe_timeouts",
                                       "Probe operations that did not return within their deadline.",
                                       labels=["target", "op"])
        ratio = GaugeMetricFamily("ioweather_slowdown_ratio",
                                  f"Statistic of the last {self.window_s:g} s of durations divided by the baseline's "
                                  "median (expected=median) or the same statistic (expected=same).",
                                  labels=["target", "op", "stat", "expected"])
        learning = GaugeMetricFamily("ioweather_baseline_learning",
                                     "1 while the op's rolling baseline is too young to judge by (no slowdown then).",
                                     labels=["target", "op"])
        expected = GaugeMetricFamily("ioweather_probe_expected_seconds",
                                     "Baseline median duration of the op (the slowdown's denominator).",
                                     labels=["target", "op"])
        last = GaugeMetricFamily("ioweather_probe_last_sample_timestamp_seconds",
                                 "Start time of the target's newest stored sample (unix seconds).", labels=["target"])
        up = 1
        try:
            targets = self.cache.targets()
        except UserError:
            targets, up = [], 0
        for target in targets:
            try:
                self._collect_target(target, hist, errors, timeouts, ratio, expected, last, learning)
            except UserError:
                up = 0  # one unreadable target must not hide the others
        yield from (hist, errors, timeouts, ratio, expected, learning, last)
        yield from bench_metric_families(self.cache.store)
        yield GaugeMetricFamily("ioweather_store_up", "1 if every probe target could be read from the store.", value=up)

    def _collect_target(self, target, hist, errors, timeouts, ratio, expected, last, learning) -> None:
        counted = self._advance(target)
        for op in OPS:
            c = counted.get(op) or _zero(len(self.edges_ns))
            cum = np.cumsum(c["le"])
            buckets = [(floatToGoString(b), int(n)) for b, n in zip(BUCKETS_S, cum[:-1])] + [("+Inf", int(cum[-1]))]
            hist.add_metric([target, op], buckets, sum_value=c["sum_ns"] / 1e9)
            errors.add_metric([target, op], c["errors"])
            timeouts.add_metric([target, op], c["timeouts"])
        ts = last_sample_ns(self.cache.store, target)
        if ts is not None:
            last.add_metric([target], ts / 1e9)
        base = self.cache.baseline(target, wait=False)
        if base is None:
            return
        now = self.cache.clock()
        since = now - int(self.window_s * 1e9)
        s = self.cache.read(target, since, None)
        young = base.learning(now)
        for code, op in enumerate(OPS):
            learning.add_metric([target, op], float(young[code]))
            if np.isfinite(base.expected_s[code]):
                expected.add_metric([target, op], float(base.expected_s[code]))
        # One pass of interval statistics gives every statistic's value (window_slowdown per stat would
        # recompute them six times); the numbers are those of the Status page (same rows, same baseline).
        rows = window_slowdown(s["op"], s["start_ns"], s["duration_ns"], s["status"], since, self.window_s,
                               base.expected_s, "median", all_stats=True)
        for stat in SLOWDOWN_STATS:
            kind = "median" if stat == "median" else "same"
            denominator = base.expected(stat, kind)
            for code, r in rows.items():
                value = r["values"][stat]
                if young[code] or value is None or not np.isfinite(denominator[code]) or denominator[code] <= 0:
                    continue
                ratio.add_metric([target, OPS[code], stat, kind], value / denominator[code])
