"""The current state of each probe target: shared by the Status page, `/metrics` and `slowdown --check`,
so the dashboard, Prometheus and a Nagios check can never disagree."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ioweather.encoding import Answer, answer_dict, iso_ms
from ioweather.stats.probe import DEGRADED, SEVERE, state
from ioweather.stats.status import climates as climates_of, target_state, window_slowdown
from ioweather.stats.status import learning_reason as _learning_reason, learning_span, min_history_s
from ioweather.store.probe import latest_runs, runs as probe_runs
from ioweather.store.probe_aggregates import last_sample_ns
from ioweather.units import ns_to_iso
from ioweather.services.probe.cache import OPS, ProbeCache, ProbeRun
from ioweather.services.runtime.fs_names import probes_on
from ioweather.services.probe.light_check import (  # noqa: F401 (the constants: re-exported)
    ABANDON_AFTER_S, STALE_MIN_S, STALE_PERIODS, abandoned, stale_after_s)

#: The window whose median decides the state (METHODS.md section 1).
WINDOW_S = 600.0
SPARK_WINDOW_S = 3600.0
SPARK_STEP_S = 60.0


@dataclass(frozen=True)
class Thresholds(Answer):
    """The slowdowns from which a target is degraded (`warn`) and severely degraded (`crit`)."""

    warn: float
    crit: float


@dataclass(frozen=True)
class Climate(Answer):
    """An op's past 10-minute slowdowns over the baseline's window, as box-plot numbers (`stats.status.climate`),
    and the percentile of the current slowdown among them; all None under `n_intervals` < 6."""

    n_intervals: int
    p01: float | None
    q1: float | None
    median: float | None
    q3: float | None
    p99: float | None
    percentile_now: float | None


@dataclass(frozen=True)
class OpStatus:
    """One op of a Status card: the window's counts, its statistic (`value_s`) over the baseline's
    (`expected_s`), the `slowdown` (None while the op's baseline learns) and its `state`."""

    op: str
    count: int
    errors: int
    timeouts: int
    value_s: float | None
    expected_s: float | None
    slowdown: float | None
    learning: bool
    state: str
    #: Not computed for `slowdown --check` (with_climate=False): then absent from the JSON.
    climate: Climate | None = None

    def to_json(self) -> dict:
        d = answer_dict(self)
        if self.climate is None:
            del d["climate"]
        return d


@dataclass(frozen=True)
class BaselineInfo(Answer):
    """The baseline a card compares with: its window (ISO 8601 UTC), when it was computed, the successful
    samples it holds, how much history (s) of its span (s), a site's `reference` period or the rolling window,
    and whether any op still learns (`learning_span`: the badge's words)."""

    since: str
    until: str
    computed_at: str
    samples: int
    history_s: float
    span_s: float
    reference: bool
    learning: bool
    learning_span: str


@dataclass(frozen=True)
class Sparkline(Answer):
    """The last hour: per op the median slowdown of each `interval_s` step starting at `time` (None without a
    sample), `points` the non-empty values."""

    interval_s: float
    points: int
    time: list[str]
    slowdown: dict[str, list[float | None]]


@dataclass(frozen=True)
class TargetStatus:
    """One Status card (`target_status`): the target's state and why, its probe run, its newest sample and
    when it counts as stale or abandoned, its baseline, and one `OpStatus` per op."""

    target: str
    state: str
    reason: str
    stat: str
    expected: str
    expected_label: str
    window_s: float
    host: str | None
    fs: str | None
    interval_s: float | None
    last_sample: str | None
    last_sample_age_s: float | None
    stale_after_s: float
    abandoned: bool
    baseline: BaselineInfo
    ops: list[OpStatus]
    #: Not computed for `slowdown --check` (spark=False): then absent from the JSON.
    sparkline: Sparkline | None = None

    def worst(self) -> float | None:
        """The largest slowdown of the ops that have one (`slowdown --check`'s perfdata)."""
        values = [o.slowdown for o in self.ops if o.slowdown is not None]
        return max(values) if values else None

    def to_json(self) -> dict:
        d = answer_dict(self)
        d["ops"] = [o.to_json() for o in self.ops]
        if self.sparkline is None:
            del d["sparkline"]
        return d


@dataclass(frozen=True)
class Status(Answer):
    """Is the file system slow right now: the Status page's answer (`/api/status`). One card per
    target (`target_status`: state, slowdown per op over the last `window_s` seconds, the last hour,
    the 30-day climate), and `overall`, the worst state of the targets that still report. Times are
    ISO 8601 UTC; `generated_at` is None, `targets` empty and `message` says why when there is no
    probe data. `fs`: the file system asked for (None: every target), whose targets alone are shown
    (fs_names.probes_on), and `fs_note` says which they are."""

    generated_at: str | None
    overall: str
    message: str | None
    thresholds: Thresholds
    window_s: float
    baseline_s: float
    targets: list[TargetStatus]
    fs: str | None = None
    fs_note: str | None = None

    def to_json(self) -> dict:
        d = answer_dict(self)
        d["targets"] = [t.to_json() for t in self.targets]
        return d


def status(cache: ProbeCache, targets: list[str], *, warn: float, crit: float, baseline_s: float,
           fs: str | None = None, fs_map: list[tuple[str, str]] = ()) -> Status:
    """The state of `targets` now (the cache's clock); with `fs`, of those of them on that file system
    (fs_names.probes_on: their directories by the fs-map `fs_map`, else the name their runs recorded)."""
    now = ns_to_iso(cache.clock())
    # one query for the page, not one a card; a card takes a ProbeRun, as cache.latest_run gives it (the
    # dicts of the store made every card with a run fail: 'dict' object has no attribute 'interval_s')
    runs = {t: ProbeRun(**r) for t, r in latest_runs(cache.store).items()}
    note = None
    if fs is not None:
        dirs: dict[str, set[str]] = {}
        for r in probe_runs(cache.store):
            dirs.setdefault(r["target"], set()).add(r["directory"])
        on = probes_on(targets, dirs, {t: r.fs for t, r in runs.items()}, [], fs, fs_map)
        others = sorted({runs[t].fs or "?" for t in targets if t not in on and t in runs})
        note = (f"{len(on)} of {len(targets)} probe targets probe {fs}" if on else f"no probe target probes {fs}") + \
            (f"; the others probe {', '.join(others)}" if others else "") + "."
        targets = on
    with cache.reading_recent(targets):  # what arrived since the last answer, of every target in one read
        cards = [target_status(cache, t, warn=warn, crit=crit, run=runs.get(t)) for t in targets]
    return Status(generated_at=now, overall=overall_of(cards), message=None, thresholds=Thresholds(warn, crit),
                  window_s=WINDOW_S, baseline_s=baseline_s, targets=cards, fs=fs, fs_note=note)


def no_status(message: str, *, warn: float, crit: float, baseline_s: float, fs: str | None = None) -> Status:
    """The answer without probe data, `message` saying why: it reads nothing (a missing store stays missing)."""
    return Status(generated_at=None, overall="unknown", message=message, thresholds=Thresholds(warn, crit),
                  window_s=WINDOW_S, baseline_s=baseline_s, targets=[], fs=fs,
                  fs_note=None if fs is None else f"no probe target probes {fs}: the store holds no probe data.")


def learning_reason(base, now_ns: int) -> str:
    """Why a rolling baseline's slowdowns are not judged yet at `now_ns`: how much history it holds of how
    much it needs (the Status card's and the History page's words)."""
    span_s = (base.until_ns - base.since_ns) / 1e9
    return _learning_reason(float(np.max(base.history_s(now_ns))), span_s, min_history_s(span_s), base.min_samples())


def target_status(cache: ProbeCache, target: str, *, warn: float = DEGRADED, crit: float = SEVERE,
                  window_s: float = WINDOW_S, stat: str = "median", expected: str = "same", spark: bool = True,
                  with_climate: bool = True, now_ns: int | None = None, run: ProbeRun | None | bool = False) -> TargetStatus:
    """Everything the Status card shows for `target` (seconds, ISO times).

    `expected`: what `stat` is divided by, the baseline's median or ("same") its own `stat`; the two
    agree for the median. Ops whose rolling baseline is still learning get no slowdown. `run`: the target's
    latest run when the caller looked it up (None: it has none), else looked up here."""
    now = cache.clock() if now_ns is None else now_ns
    if run is False:
        run = cache.latest_run(target)
    since = now - int(max(window_s, SPARK_WINDOW_S if spark else 0) * 1e9)
    # The window, the sparkline, the climate's unfinished rollups and a baseline computed here all read the
    # last hour: once.
    with cache.sharing_reads(target, since):
        base = cache.baseline(target)
        recent = cache.read(target, since, None)
        # The newest sample after the reads, never before them: samples only arrive, so it is at least as new
        # as what was read. Looked up first, a probe's flush between the two made a card count 25 samples
        # and say "no samples yet" (watch's first seconds; a CI run of test_watch).
        # The read is of every run from `since` on: its newest start is the newest sample, without a lookup.
        last = int(recent["start_ns"].max()) if len(recent["start_ns"]) else last_sample_ns(cache.store, target)
        age_s = None if last is None else max(0.0, (now - last) / 1e9)
        win_start = now - int(window_s * 1e9)
        denominator = base.expected(stat, expected)
        rows = window_slowdown(recent["op"], recent["start_ns"], recent["duration_ns"], recent["status"],
                               win_start, window_s, denominator, stat)
        learning = base.learning(now)
        history = base.history_s(now)
        slowdowns = [r["slowdown"] if (r := rows.get(code)) and not learning[code] else None for code in range(len(OPS))]
        climates = [None] * len(OPS)
        if with_climate:
            # sorted once per settled interval by the cache: the climate's month of 10-minute values
            past = cache.rollup_values(target, 600, *cache.baseline_window(now),
                                       "mean_s" if stat == "mean" else f"{stat}_s")
            climates = [Climate(**c) for c in climates_of(
                [np.asarray(past[code] / denominator[code] if np.isfinite(denominator[code]) else [])
                 for code in range(len(OPS))], slowdowns)]
        ops = []
        for code, op in enumerate(OPS):
            r = rows.get(code)
            sd = slowdowns[code]
            ops.append(OpStatus(op=op, count=r["count"] if r else 0, errors=r["errors"] if r else 0,
                                timeouts=r["timeouts"] if r else 0, value_s=r["value_s"] if r else None,
                                expected_s=None if not np.isfinite(denominator[code]) else float(denominator[code]),
                                slowdown=sd, learning=bool(learning[code]),
                                state="learning" if learning[code] else state(sd, warn, crit), climate=climates[code]))
        span_s = (base.until_ns - base.since_ns) / 1e9
        learn = learning_reason(base, now) if learning.any() else None
        st, reason = target_state([{"op": o.op, "slowdown": o.slowdown, "timeouts": o.timeouts} for o in ops], age_s,
                                  stale_after_s(run.interval_s if run else None), warn, crit, learn)
        if learn and st not in ("learning", "stale", "unknown"):
            reason += "; " + ", ".join(o.op for o in ops if o.learning) + ": " + learn
        held_s = float(np.max(history)) if np.isfinite(np.max(history)) else span_s
        return TargetStatus(
            target=target, state=st, reason=reason, stat=stat, expected=expected,
            expected_label=expected_label(stat, expected), window_s=window_s,
            host=run.host if run else None, fs=run.fs if run else None,
            interval_s=run.interval_s if run else None,
            last_sample=ns_to_iso(last) if last is not None else None, last_sample_age_s=age_s,
            stale_after_s=stale_after_s(run.interval_s if run else None),
            abandoned=abandoned(age_s, run.started_ns if run else None, now),
            baseline=BaselineInfo(since=ns_to_iso(base.since_ns), until=ns_to_iso(base.until_ns),
                                  computed_at=ns_to_iso(base.computed_ns), samples=int(base.samples.sum()),
                                  history_s=held_s, span_s=span_s, reference=base.reference,
                                  learning=bool(learning.any()),
                                  # the badge's words, as learning_reason writes them ("0 min of 30 d", not "55.2 s of 30d")
                                  learning_span=learning_span(held_s, span_s)),
            ops=ops,
            sparkline=_sparkline(cache, target, since, now, base.expected_s, run.interval_s if run else 1.0)
            if spark else None)


def _sparkline(cache: ProbeCache, target: str, since: int, now: int, expected: np.ndarray,
               period_s: float) -> Sparkline:
    """Median slowdown of each op per minute over the last hour (per 5 or 10 minutes for slow probes,
    so that each point is a median of several samples), of the samples from `since` on."""
    step_s = next((x for x in (SPARK_STEP_S, 300.0, 600.0) if x >= 6 * period_s), 600.0)
    step = int(step_s * 1e9)
    t0 = ((now - int(SPARK_WINDOW_S * 1e9)) // step) * step
    times = list(range(t0, now + 1, step))
    codes, starts, medians = cache.recent_medians(target, max(since, t0), step_s)  # the hour's ended minutes kept
    # by arrays, not a loop over the (op, minute) groups: 360 a card, 36,000 for a Status page of 100 targets
    col = (starts - t0) // step
    exp = np.asarray(expected, np.float64)[codes]
    with np.errstate(invalid="ignore"):
        drawn = (col >= 0) & (col < len(times)) & np.isfinite(medians) & np.isfinite(exp) & (exp > 0)
    value = np.zeros((len(OPS), len(times)))
    filled = np.zeros((len(OPS), len(times)), bool)
    value[codes[drawn], col[drawn]] = medians[drawn] / exp[drawn]
    filled[codes[drawn], col[drawn]] = True
    series = {op: [v if f else None for v, f in zip(value[code].tolist(), filled[code].tolist())]
              for code, op in enumerate(OPS)}
    points = int(filled.sum())
    return Sparkline(interval_s=step_s, points=points, time=iso_ms(times), slowdown=series)


def expected_label(stat: str, expected: str) -> str:
    """What a slowdown is, in words: 'median / baseline median', 'p99 / baseline p99'."""
    return f"{stat} / baseline {stat if expected == 'same' else 'median'}"


def overall_of(targets: list[TargetStatus]) -> str:
    """The Status header: the worst state of the targets that still report or stopped less than a day ago
    (a forgotten trial probe is no permanent "stale"); of them all when every one is abandoned."""
    judged = [t.state for t in targets if not t.abandoned]
    return overall(judged or [t.state for t in targets])


def overall(states: list[str]) -> str:
    """The worst state of several targets (stale and unknown rank as "needs attention")."""
    for s in ("severely degraded", "stale", "degraded", "unknown", "learning", "normal"):
        if s in states:
            return s
    return "unknown"
