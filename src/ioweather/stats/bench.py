"""Regression benchmark statistics (METHODS.md section 6; seed 004 section 3 and Table 2; seed 003).

Per motif, direction and file system (a *group*):

- the histogram of run durations (seed 004 Fig. 3: 100 bins over the observed range);
- optimum = the shortest duration, "a good estimate of the ideal case, where the probe had no
  interference at all"; mean = the average duration;
- contention = mean / optimum (Table 2's "ratio": 141 / 80 = 1.76 for /scratch reads);
- fraction of peak of a run = its bandwidth / the best bandwidth of the group (seed 003: "the
  performance of a job divided by the maximum performance observed for all jobs of the same I/O
  motif ... and whether the job did reads or writes");
- the last run's standing = the share of the group's runs whose bandwidth is at or below it
  (1 = the best run ever, 1/n = the worst);
- regression = the last K runs all have a fraction of peak below a threshold (one slow run is
  weather; K in a row is climate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ioweather.stats.umami import fraction_of_peak as _fraction_of_peak

if TYPE_CHECKING:
    import pandas as pd

GROUP = ["motif", "direction", "fs"]
HIST_BINS = 100


def contention(mean_s: float, optimum_s: float) -> float | None:
    """mean / optimum (seed 004 Table 2's ratio); None when the optimum is not positive."""
    if optimum_s is None or not np.isfinite(optimum_s) or optimum_s <= 0 or mean_s is None or not np.isfinite(mean_s):
        return None
    return float(mean_s) / float(optimum_s)


def histogram(durations, bins: int = HIST_BINS) -> dict:
    """{"edges_s", "counts", "optimum_s"} of the finite durations (empty lists without any)."""
    d = np.asarray(durations, float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return {"edges_s": [], "counts": [], "optimum_s": None}
    lo, hi = float(d.min()), float(d.max())
    if hi <= lo:
        hi = lo + max(abs(lo) * 1e-6, 1e-9)  # one value: one bin around it
    counts, edges = np.histogram(d, bins=bins, range=(lo, hi))
    return {"edges_s": edges.tolist(), "counts": counts.astype(int).tolist(), "optimum_s": lo}


def fraction_of_peak(bw_bps, keys) -> np.ndarray:
    """bandwidth / best bandwidth of the same group key, per run; NaN without a bandwidth."""
    return _fraction_of_peak(bw_bps, keys)


def standing(last: float, values) -> float | None:
    """Share of `values` (the last included) at or below `last`; None when `last` is unknown."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if last is None or not np.isfinite(last) or v.size == 0:
        return None
    return float(np.count_nonzero(v <= last)) / v.size


def regression(fractions, k: int, threshold: float) -> bool:
    """True when there are at least k fractions and the last k are all below `threshold`."""
    f = np.asarray(fractions, float)
    if k < 1 or f.size < k:
        return False
    tail = f[-k:]
    return bool(np.all(np.isfinite(tail)) and np.all(tail < threshold))


def with_fraction_of_peak(df: "pd.DataFrame") -> "pd.DataFrame":
    """`df` (columns motif, direction, fs, bw_bps) with `fraction_of_peak` added."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd

    out = df.copy()
    if out.empty:
        out["fraction_of_peak"] = pd.Series(dtype=float)
        return out
    code = out.groupby(GROUP, sort=False, dropna=False).ngroup().to_numpy()
    out["fraction_of_peak"] = fraction_of_peak(out["bw_bps"].to_numpy(float), code)
    return out


def summarize(df: "pd.DataFrame", k: int = 3, threshold: float = 0.5) -> list[dict]:
    """One row per group of `df` (motif, direction, fs, start_ns, duration_s, bw_bps; any order):
    runs, optimum_s, mean_s, contention, best_bps, last run's start, duration, bandwidth, fraction
    of peak and standing, and whether the last `k` runs are all below `threshold` of peak."""
    if df.empty:
        return []
    df = with_fraction_of_peak(df).sort_values("start_ns", kind="stable")
    rows = []
    for (motif, direction, fs), g in df.groupby(GROUP, sort=True):
        dur = g["duration_s"].to_numpy(float)
        ok = np.isfinite(dur) & (dur > 0)
        if not ok.any():
            continue
        optimum, mean = float(dur[ok].min()), float(dur[ok].mean())
        bw = g["bw_bps"].to_numpy(float)
        frac = g["fraction_of_peak"].to_numpy(float)
        best = float(np.nanmax(bw)) if np.isfinite(bw).any() else None
        last = g.iloc[-1]
        rows.append({"motif": motif, "direction": direction, "fs": fs, "runs": int(ok.sum()),
                     "optimum_s": optimum, "mean_s": mean, "contention": contention(mean, optimum),
                     "best_bps": best, "last_start_ns": int(last["start_ns"]),
                     "last_duration_s": _f(last["duration_s"]), "last_bps": _f(last["bw_bps"]),
                     "last_fraction_of_peak": _f(last["fraction_of_peak"]),
                     "last_standing": standing(_f(last["bw_bps"]), bw),
                     "last_k": [_f(x) for x in frac[-k:]],
                     "regression": regression(frac, k, threshold)})
    return rows


def summary_row(group: dict, tail: list[tuple], at_or_below: int | None, k: int = 3,
                threshold: float = 0.5) -> dict | None:
    """`summarize`'s row of one group from its aggregates, as the store keeps them (group: motif,
    direction, fs, runs = runs with a positive duration, optimum_s, total_s = their sum, n_bw = runs
    with a bandwidth, best_bps), its `tail` (the last k runs' (start_ns, duration_s, bw_bps), newest
    first) and `at_or_below` (how many bandwidths are at or below the newest run's). None when no run
    of the group has a positive duration, as `summarize` leaves such a group out."""
    runs = int(group["runs"] or 0)
    if runs == 0 or not tail:
        return None
    optimum, mean = float(group["optimum_s"]), float(group["total_s"]) / runs
    best = _f(group["best_bps"])
    peak = best if best is not None and best > 0 else None
    frac = [None if peak is None or _f(bw) is None else float(bw) / peak for _, _, bw in reversed(tail)]
    start, duration, bw = tail[0]
    n_bw = int(group["n_bw"] or 0)
    return {"motif": group["motif"], "direction": group["direction"], "fs": group["fs"], "runs": runs,
            "optimum_s": optimum, "mean_s": mean, "contention": contention(mean, optimum), "best_bps": best,
            "last_start_ns": int(start), "last_duration_s": _f(duration), "last_bps": _f(bw),
            "last_fraction_of_peak": frac[-1],
            "last_standing": at_or_below / n_bw if at_or_below is not None and n_bw else None,
            "last_k": frac, "regression": regression([np.nan if f is None else f for f in frac], k, threshold)}


def _f(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


def check_state(last_fractions, k: int, warn: float, crit: float) -> str:
    """Nagios state of a group: CRITICAL when its last k runs are all below crit of peak, WARNING
    when all below warn, OK otherwise (also with fewer than k runs: no trend yet)."""
    if regression(last_fractions, k, crit):
        return "CRITICAL"
    if regression(last_fractions, k, warn):
        return "WARNING"
    return "OK"
