"""The current state of each probe target: shared by the Status page, `/metrics` and `slowdown --check`,
so the dashboard, Prometheus and a Nagios check can never disagree."""

from __future__ import annotations

import numpy as np

from ioweather.stats.probe import DEGRADED, SEVERE, interval_stats, state
from ioweather.stats.status import climate, target_state, window_slowdown
from ioweather.store.probe_aggregates import last_sample_ns
from ioweather.units import ns_to_iso
from ioweather.services.probe_cache import OPS, ProbeCache

#: The window whose median decides the state (METHODS.md section 1).
WINDOW_S = 600.0
SPARK_WINDOW_S = 3600.0
SPARK_STEP_S = 60.0
#: A target is stale when its newest sample is older than this many probe periods (and at least a minute):
#: the probe stores samples every 5 s, so a healthy one is never more than a few seconds behind.
STALE_PERIODS, STALE_MIN_S = 10, 60.0


def stale_after_s(interval_s: float | None) -> float:
    return max(STALE_MIN_S, STALE_PERIODS * (interval_s or 1.0))


def target_status(cache: ProbeCache, target: str, *, warn: float = DEGRADED, crit: float = SEVERE,
                  window_s: float = WINDOW_S, stat: str = "median", spark: bool = True, with_climate: bool = True,
                  now_ns: int | None = None) -> dict:
    """Everything the Status card shows for `target`, as JSON-ready values (seconds, ISO times)."""
    now = cache.clock() if now_ns is None else now_ns
    run = cache.latest_run(target)
    last = last_sample_ns(cache.store, target)
    age_s = None if last is None else max(0.0, (now - last) / 1e9)
    base = cache.baseline(target)
    since = now - int(max(window_s, SPARK_WINDOW_S if spark else 0) * 1e9)
    recent = cache.read(target, since, None)
    win_start = now - int(window_s * 1e9)
    rows = window_slowdown(recent["op"], recent["start_ns"], recent["duration_ns"], recent["status"],
                           win_start, window_s, base.expected_s, stat)
    ops = []
    for code, op in enumerate(OPS):
        r = rows.get(code)
        sd = r["slowdown"] if r else None
        ops.append({"op": op, "count": r["count"] if r else 0, "errors": r["errors"] if r else 0,
                    "timeouts": r["timeouts"] if r else 0, "value_s": r["value_s"] if r else None,
                    "expected_s": None if not np.isfinite(base.expected_s[code]) else float(base.expected_s[code]),
                    "slowdown": sd, "state": state(sd, warn, crit)})
    st, reason = target_state(ops, age_s, stale_after_s(run["interval_s"] if run else None), warn, crit)
    out = {
        "target": target, "state": st, "reason": reason, "stat": stat, "window_s": window_s,
        "host": run["host"] if run else None, "interval_s": run["interval_s"] if run else None,
        "last_sample": ns_to_iso(last) if last is not None else None, "last_sample_age_s": age_s,
        "stale_after_s": stale_after_s(run["interval_s"] if run else None),
        "baseline": {"since": ns_to_iso(base.since_ns), "until": ns_to_iso(base.until_ns),
                     "computed_at": ns_to_iso(base.computed_ns), "samples": int(base.samples.sum())},
        "ops": ops,
    }
    if spark:
        out["sparkline"] = _sparkline(recent, now, base.expected_s, run["interval_s"] if run else 1.0)
    if with_climate:
        roll = cache.rollups(target, 600, now - int(cache.baseline_s * 1e9), now)
        for code, o in enumerate(ops):
            sel = roll["op"] == code
            values = roll["median_s"][sel] / base.expected_s[code] if np.isfinite(base.expected_s[code]) else []
            o["climate"] = climate(np.asarray(values), o["slowdown"])
    return out


def _sparkline(s: dict, now: int, expected: np.ndarray, period_s: float) -> dict:
    """Median slowdown of each op per minute over the last hour (per 5 or 10 minutes for slow probes,
    so that each point is a median of several samples)."""
    step_s = next((x for x in (SPARK_STEP_S, 300.0, 600.0) if x >= 6 * period_s), 600.0)
    step = int(step_s * 1e9)
    t0 = ((now - int(SPARK_WINDOW_S * 1e9)) // step) * step
    times = list(range(t0, now + 1, step))
    series = {op: [None] * len(times) for op in OPS}
    sel = s["start_ns"] >= t0
    for r in interval_stats(s["op"][sel], s["start_ns"][sel], s["duration_ns"][sel], s["status"][sel], step_s):
        i = (r["interval_start_ns"] - t0) // step
        exp = expected[r["op_code"]]
        if 0 <= i < len(times) and r["median_s"] is not None and np.isfinite(exp) and exp > 0:
            series[OPS[r["op_code"]]][i] = r["median_s"] / exp
    points = sum(v is not None for values in series.values() for v in values)
    return {"interval_s": step_s, "points": points, "time": [ns_to_iso(t) for t in times], "slowdown": series}


def overall(states: list[str]) -> str:
    """The worst state of several targets (stale and unknown rank as "needs attention")."""
    for s in ("severely degraded", "stale", "degraded", "unknown", "normal"):
        if s in states:
            return s
    return "unknown"
