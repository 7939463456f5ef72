"""The Status rules in plain Python (no numpy): a slowdown's state, when a rolling baseline has learned
enough to judge by, the words of its learning, a target's state and reason from its ops' rows.

`slowdown --check` judges with these without loading numpy (issue 40: cron asks every minute), and
stats/status.py and stats/probe.py re-export them, so the Status page, `/metrics` and the check apply
one rule."""

from __future__ import annotations

import math

from ioweather.stats.probe_spec import DEGRADED, MIN_BASELINE_S, MIN_BASELINE_SAMPLES, SEVERE
from ioweather.units import format_age

_RANK = {"normal": 0, "degraded": 1, "severely degraded": 2}

#: The probe's default period: one sample of each op per second (`probe run --period`).
PROBE_PERIOD_S = 1.0
#: Of the samples a baseline window holds at one per period, the share it needs before it judges.
MIN_SAMPLE_SHARE = 0.5


def state(slowdown_value: float | None, degraded: float = DEGRADED, severe: float = SEVERE) -> str:
    """`normal` below `degraded`, `degraded` from it, `severely degraded` from `severe`; `unknown` without data."""
    if slowdown_value is None or not math.isfinite(slowdown_value):
        return "unknown"
    if slowdown_value >= severe:
        return "severely degraded"
    if slowdown_value >= degraded:
        return "degraded"
    return "normal"


def min_history_s(baseline_span_s: float | None = None) -> float:
    """The history a rolling baseline needs before its slowdowns are judged: `MIN_BASELINE_S`, or 95 % of a
    shorter baseline window (`--baseline 12h`), which could otherwise never hold 24 h and would learn forever."""
    if baseline_span_s is None or not math.isfinite(baseline_span_s):
        return MIN_BASELINE_S
    return min(MIN_BASELINE_S, 0.95 * baseline_span_s)


def min_samples(baseline_span_s: float | None = None, period_s: float = PROBE_PERIOD_S) -> int:
    """The successful samples per op a rolling baseline needs before its slowdowns are judged:
    `MIN_BASELINE_SAMPLES`, or half of what a shorter window holds at one sample per `period_s` (a 5-minute
    baseline at 1 Hz holds 300: it needs 150, where 1,000 could never be reached). With `min_history_s`,
    the learning rule (docs/probe.md, "Learning")."""
    if baseline_span_s is None or not math.isfinite(baseline_span_s):
        return MIN_BASELINE_SAMPLES
    return max(1, min(MIN_BASELINE_SAMPLES, int(MIN_SAMPLE_SHARE * baseline_span_s / period_s)))


def learning_reason(history_s: float, baseline_s: float, min_s: float = MIN_BASELINE_S,
                    min_samples: int = MIN_BASELINE_SAMPLES) -> str:
    """'learning the baseline (5 h of 30 d; slowdowns from 24 h and 1,000 samples per op)'."""
    return (f"learning the baseline ({learning_span(history_s, baseline_s)}; "
            f"slowdowns from {_span(min_s)} and {min_samples:,} samples per op)")


def _span(s: float) -> str:
    """A learning span as every surface writes it (the Status badge said "55.2 s of 30d" where its text said
    "0 min of 30 d"): whole days, hours, minutes or seconds, rounded down."""
    if s >= 2 * 86400 and s % 86400 == 0:
        return f"{s / 86400:g} d"
    return f"{int(s // 3600)} h" if s >= 3600 else f"{int(s // 60)} min" if s >= 60 else f"{int(max(s, 0))} s"


def learning_span(history_s: float, baseline_s: float) -> str:
    """'5 h of 30 d': how much of its window a learning baseline holds."""
    return f"{_span(history_s)} of {_span(baseline_s)}"


def target_state(op_rows: list[dict], age_s: float | None, stale_after_s: float,
                 warn: float = DEGRADED, crit: float = SEVERE, learning: str | None = None) -> tuple[str, str]:
    """(state, one-line reason) of a target from its ops' window rows (`slowdown`, `timeouts`, `op`).

    `learning`: the reason to give when no op has a slowdown because the baseline is still learning."""
    if age_s is None:
        return "unknown", "no samples yet"
    if age_s > stale_after_s:
        return "stale", f"no sample for {format_age(age_s)} (probe stopped or hung?)"
    worst = None
    for r in op_rows:
        if r.get("slowdown") is not None and (worst is None or r["slowdown"] > worst["slowdown"]):
            worst = r
    timeouts = sum(r.get("timeouts") or 0 for r in op_rows)
    if worst is None:
        if timeouts:
            return "degraded", f"{timeouts} timed-out operations and no completed ones to compare"
        if learning:
            return "learning", learning
        return "unknown", "no completed operations in the window, or no baseline yet"
    st = state(worst["slowdown"], warn, crit)
    reason = f"worst: {worst['op']} {worst['slowdown']:.2f}× usual"
    if timeouts:
        slow = [r["op"] for r in op_rows if r.get("timeouts")]
        reason += f"; {timeouts} timeouts ({', '.join(slow)})"
        if _RANK[st] < _RANK["degraded"]:
            st = "degraded"
    return st, reason


def quantile_ranks(n: int, q: float) -> tuple[int, int]:
    """The two 0-based ranks numpy's linear quantile `q` of n sorted values interpolates between."""
    lo = int(math.floor((n - 1) * q))
    return lo, min(lo + 1, n - 1)


def median_between(n: int, a_ns: int, b_ns: int) -> float:
    """The median (s) of n durations from its two middle order statistics (ns): numpy's linear quantile
    on seconds, bit for bit (stats.status.median_of_durations' formula)."""
    lo, _ = quantile_ranks(n, 0.5)
    a, b = a_ns / 1e9, b_ns / 1e9
    return float(a + ((n - 1) * 0.5 - lo) * (b - a))
