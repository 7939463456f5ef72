"""Climate vs weather (seed 003 "UMAMI"; METHODS.md section 7): a job's value against its motif's history.

Quartile class of a value against a history (numpy's linear percentiles, the history excluding the
job): 1 when value <= Q1, 2 when <= median, 3 when <= Q3, 4 above. Colours follow the paper: red,
orange, green, blue from class 1 to 4 when bigger is better, the reverse when smaller is better, so
red always means "bad for this job". Box statistics put the whiskers at the 5th and 95th percentiles.
Fraction of peak = a job's performance / the best performance of its motif (the job included: a job
can be its motif's peak, 1.0).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypedDict

import numpy as np

from ioweather.stats import climate as cstats
from ioweather.stats import correlate
from ioweather.units import ns_to_iso

#: Colours of quartile classes 1..4 when bigger is better (reversed when smaller is better).
COLOURS = ("red", "orange", "green", "blue")

#: Whether bigger is better, per metric; a metric not named here has no "bad direction".
#: The tokio-abc names come from its abcconfig.json (`metric_big_is_good`), ours are the job weather's.
DIRECTIONS: dict[str, bool] = {
    "fraction_of_peak": True,
    "darshan_normalized_perf_by_max": True,
    "performance_bps": True,
    "darshan_agg_perf_by_slowest_posix": True,
    "coverage_factor_bw": True, "coverage_factor_read_bw": True, "coverage_factor_write_bw": True,
    "coverage_factor_ops": True, "coverage_factor_read_ops": True, "coverage_factor_write_ops": True,
    "coverage_factor_opens": True, "coverage_factor_stats": True, "coverage_factor_nodehrs": True,
    "contention_bw": False, "contention_read_bw": False, "contention_write_bw": False,
    "contention_ops": False, "contention_read_ops": False, "contention_write_ops": False,
    "contention_opens": False, "contention_stats": False, "contention_nodehrs": False,
    "md_ops_per_s": False, "mds_cpu_pct": False, "oss_cpu_pct": False,
    "fullest_ost_pct": False, "probe_slowdown": False,
    "concurrent_jobs": False, "concurrent_node_hours": False, "missing_fraction": False,
}


def direction(metric: str, table: dict[str, bool] | None = None) -> bool | None:
    """True when bigger is better for `metric`, False when smaller is, None when neither is known."""
    if table and metric in table:
        return table[metric]
    return DIRECTIONS.get(metric)


def _finite(values) -> np.ndarray:
    a = np.asarray(values, dtype=float)
    return a[np.isfinite(a)]


def quartile(value: float | None, history) -> int | None:
    """The quartile class (1-4) of `value` in `history` (NaN ignored); None without a value or history."""
    h = _finite(history)
    if value is None or not math.isfinite(value) or h.size == 0:
        return None
    q1, q2, q3 = np.percentile(h, [25, 50, 75])
    if value <= q1:
        return 1
    if value <= q2:
        return 2
    if value <= q3:
        return 3
    return 4


def colour(quartile_class: int | None, bigger_is_better: bool | None) -> str | None:
    """red/orange/green/blue for classes 1-4 when bigger is better, reversed when smaller is better;
    'grey' when the metric has no direction; None without a class."""
    if quartile_class is None:
        return None
    if bigger_is_better is None:
        return "grey"
    i = quartile_class - 1
    return COLOURS[i] if bigger_is_better else COLOURS[3 - i]


def box(history) -> dict:
    """Box-plot numbers of `history` (NaN ignored): whiskers at the 5th and 95th percentiles."""
    h = _finite(history)
    if h.size == 0:
        return {"n": 0, "p5": None, "q1": None, "median": None, "q3": None, "p95": None, "mean": None}
    p5, q1, med, q3, p95 = np.percentile(h, [5, 25, 50, 75, 95])
    return {"n": int(h.size), "p5": float(p5), "q1": float(q1), "median": float(med), "q3": float(q3),
            "p95": float(p95), "mean": float(h.mean())}


def unusual_in_bad_direction(value: float | None, history, bigger_is_better: bool | None) -> bool:
    """Whether `value` lies outside the history's interquartile range on the bad side."""
    if bigger_is_better is None or value is None or not math.isfinite(value):
        return False
    h = _finite(history)
    if h.size == 0:
        return False
    q1, q3 = np.percentile(h, [25, 75])
    return bool(value < q1) if bigger_is_better else bool(value > q3)


def fraction_of_peak(performance, motifs: Sequence[Hashable]) -> np.ndarray:
    """performance / max(performance of the same motif), element-wise; NaN where the performance is
    missing or the motif's peak is not positive."""
    perf = np.asarray(performance, dtype=float)
    keys = np.asarray([hash_key(m) for m in motifs], dtype=object)
    out = np.full(perf.shape, np.nan)
    for k in set(keys.tolist()):
        sel = keys == k
        vals = perf[sel]
        ok = np.isfinite(vals)
        if not ok.any():
            continue
        peak = vals[ok].max()
        if peak > 0:
            out[sel] = vals / peak
    return out


def hash_key(m: Hashable):
    """A motif key usable in a set (lists become tuples)."""
    return tuple(m) if isinstance(m, list) else m


#: How many jobs of the same motif a verdict needs (the job excluded).
MIN_HISTORY = 10

#: Words for a metric in the verdict; the number shown is the value of the metric named.
CAUSES = {
    "coverage_factor_bw": "bandwidth contention", "contention_bw": "bandwidth contention",
    "coverage_factor_read_bw": "read bandwidth contention", "contention_read_bw": "read bandwidth contention",
    "coverage_factor_write_bw": "write bandwidth contention", "contention_write_bw": "write bandwidth contention",
    "coverage_factor_ops": "IOPS contention", "contention_ops": "IOPS contention",
    "coverage_factor_opens": "open(2) contention", "contention_opens": "open(2) contention",
    "coverage_factor_stats": "stat(2) contention", "contention_stats": "stat(2) contention",
    "md_ops_per_s": "metadata load", "fs_ave_mds_cpu": "metadata server load", "mds_cpu_pct": "metadata server load",
    "fs_ave_oss_cpu": "data server load", "oss_cpu_pct": "data server load",
    "fullest_ost_pct": "a full OST", "fshealth_ost_most_full_pct": "a full OST",
    "probe_slowdown": "a slow file system (probes)", "concurrent_jobs": "many concurrent jobs",
    "jobsdb_concurrent_jobs": "many concurrent jobs",
}
QUARTILE_WORDS = {1: "bottom quartile", 2: "second quartile", 3: "third quartile", 4: "top quartile"}


def _num(x: float) -> str:
    """Two significant decimals, never an exponent (verdicts are read by people)."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.2f}"


def verdict(performance: dict | None, culprit_rows: list[dict], history_n: int, min_history: int = MIN_HISTORY) -> str:
    """One line with its numbers: the system (the top culprit), your code, not enough history, or no data.

    performance: the row of the performance metric ({metric, value, quartile}); culprit_rows ranked."""
    if history_n < min_history:
        return f"not enough history ({history_n} similar jobs; need {min_history})"
    if performance is None or performance.get("value") is None:
        return "no data: the job's performance is unknown"
    q = performance.get("quartile")
    if culprit_rows and q in (1, 2):  # the system is blamed only for a job that ran below its motif's median
        c = culprit_rows[0]
        cause = CAUSES.get(c["metric"], c["metric"])
        return (f"the system: {cause} ({c['metric'].replace('_', ' ')} {_num(c['value'])}, "
                f"{QUARTILE_WORDS.get(c.get('quartile'), 'unranked')}, r = {c['r']:.2f} with performance)")
    perf = f"{performance['metric'].replace('_', ' ')} {_num(performance['value'])}"
    if q == 1:
        return (f"your code (or an unmeasured cause): performance is in the bottom quartile of this motif "
                f"({perf}, {history_n} similar jobs) and no measured system metric was both unusual and "
                f"correlated; see findings")
    return (f"your code: performance is usual for this motif ({perf}, {QUARTILE_WORDS.get(q, 'unranked')} "
            f"of {history_n} similar jobs); see findings")


# ----------------------------------------------------------------------------- climate vs weather
# The answer of one job against its motif's history, shared by services.answers.umami (imported feature rows)
# and services.jobs.weather (jobs of our store, benchmark runs): here so that neither imports the other.

class MetricRow(TypedDict, total=False):
    """One metric of a UMAMI answer: the job's value, its quartile class (1-4) in the history and the
    colour of that, Pearson's r and p with performance over the history (n pairs), their strength,
    whether the value is unusual in the bad direction, the history's box (p5, q1, median, q3, p95,
    mean, n) and series (ISO UTC times, values); r_fs, p_fs, n_fs over the whole file system
    (imported feature rows only)."""

    metric: str
    label: str
    value: float | None
    quartile: int | None
    colour: str | None
    bigger_is_better: bool | None
    n: int
    r: float | None
    p: float | None
    strength: str
    unusual: bool
    box: dict
    history: dict
    r_fs: float | None
    p_fs: float | None
    n_fs: int


class _Weather(Protocol):
    """What an answer's weather gives its JSON: services.jobs.weather.Weather or FeatureWeather."""

    def answer_json(self) -> dict: ...


@dataclass(frozen=True)
class Umami:
    """The answer to "was this job's I/O slow because of the system or its code?" (seed 003, METHODS.md
    section 7): the job's value of each metric against its motif's history (the jobs of the same motif
    that started before it), the culprits (metrics unusual for this job and historically correlated
    with performance) and the one-line verdict. `start` is ISO 8601 UTC; `history_jobs` the history's
    jobs with a performance; `source` what kind of job ("darshan", "scheduler", "bench", "job features
    (<set>)"); `fs` the file system of our telemetry the weather is of (None for an imported feature
    row, whose JSON then has no `fs` key, as always); `weather` what the file system did in its window.

    `to_json()` is `umami JOB --json`, the job page's climate panel (through views.umami_report) and
    the HTML report."""

    job: str
    motif: str
    start: str | None
    history_jobs: int
    verdict: str
    culprits: list[str]
    metrics: list[MetricRow]
    source: str | None = None
    fs: str | None = None
    weather: _Weather | None = None

    def to_json(self) -> dict:
        out = {"job": self.job, "motif": self.motif, "start": self.start, "history_jobs": self.history_jobs,
               "verdict": self.verdict, "culprits": list(self.culprits), "metrics": [dict(m) for m in self.metrics],
               "source": self.source}
        if self.fs is not None:
            out["fs"] = self.fs
        out["weather"] = None if self.weather is None else self.weather.answer_json()
        return out


def climate_columns(metrics: list[str], perf: str) -> list[str]:
    """The columns of the history matrices `climate` reads: the metrics, then performance unless among them."""
    return list(metrics) + ([perf] if perf not in metrics else [])


def climate(job: dict, starts: np.ndarray, h: np.ndarray, metrics: list[str], perf: str,
            directions: dict | None = None, labels: dict | None = None, fs_h: np.ndarray | None = None,
            stored: dict | None = None) -> Umami:
    """The UMAMI document of one job against its history (same motif, the job excluded), given as arrays
    so that answering for a job of our store needs no pandas: `starts` (ns) and `h` (jobs x
    climate_columns(metrics, perf)); `fs_h` the same columns over the whole file system, for r_fs.

    job: {"id", "motif", "start_ns", "values": {metric: value}}. `stored`: {"n", "r", "p": {metric: ...}},
    the correlations a batch kept for this job over this same history (job_weather.update_climates):
    used instead of computing them, so that answering needs no scipy."""
    cols = climate_columns(metrics, perf)
    order = np.argsort(starts, kind="stable")
    starts, h = np.asarray(starts)[order], np.asarray(h, dtype=float).reshape(len(order), len(cols))[order]
    v = np.array([number_or_none(job["values"].get(m)) if number_or_none(job["values"].get(m)) is not None else np.nan for m in cols])
    big = [direction(m, directions) for m in cols]
    res = cstats.expanding(np.vstack([h, v[None, :]]), cols.index(perf), np.append(np.zeros(len(h), np.int64), len(h)),
                           [len(h)], _direction_codes(big), correlate=stored is None)
    if stored is not None:
        res["n"][0] = [stored["n"].get(m, 0) or 0 for m in cols]
        res["r"][0] = [np.nan if stored["r"].get(m) is None else stored["r"][m] for m in cols]
        res["p"][0] = [np.nan if stored["p"].get(m) is None else stored["p"][m] for m in cols]
    times = [ns_to_iso(int(t)) for t in starts]
    fs_corr = None
    if fs_h is not None:
        fn, fr = cstats.pearson_columns(fs_h, fs_h[:, cols.index(perf)])
        fs_corr = (fn, fr, cstats.pearson_p(fr, fn) if np.isfinite(fr).any() else np.full(len(cols), np.nan))
    rows = metric_rows(res, 0, cols[:len(metrics)], v, big, perf, labels)
    for c, (m, row) in enumerate(zip(metrics, rows)):
        row["box"] = _box(res, 0, c)
        row["history"] = {"time": times, "value": [None if not np.isfinite(x) else float(x) for x in h[:, c]]}
        if fs_corr is not None and m != perf:
            row.update({"r_fs": _num_or_none(fs_corr[1][c]), "p_fs": _num_or_none(fs_corr[2][c]), "n_fs": int(fs_corr[0][c])})
    n = int(res["history_n"][0])
    verdict, found = verdict_of(rows, perf, n)
    return Umami(job=job["id"], motif=job["motif"], start=ns_to_iso(job["start_ns"]) if job.get("start_ns") else None,
                 history_jobs=n, verdict=verdict, culprits=[r["metric"] for r in found], metrics=rows)


def _direction_codes(big: list) -> np.ndarray:
    return np.array([-1 if b is None else int(bool(b)) for b in big])


def _num_or_none(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def metric_rows(res: dict, i: int, metrics: list[str], values: np.ndarray, big: list, perf: str,
                labels: dict | None = None) -> list[dict]:
    """The metric rows of job `i` of a `stats.climate.expanding` result (value, quartile, colour, r, p,
    strength, unusual): what the verdict and every view of the job read."""
    rows = []
    for c, m in enumerate(metrics):
        q = int(res["quartile"][i, c]) or None
        is_perf = m == perf
        r = None if is_perf else _num_or_none(res["r"][i, c])
        p = None if r is None else _num_or_none(res["p"][i, c])
        rows.append({"metric": m, "label": (labels or {}).get(m, m), "value": _num_or_none(values[c]), "quartile": q,
                     "colour": colour(q, big[c]), "bigger_is_better": big[c],
                     "n": int(res["n"][i, c]) if not is_perf else int(res["count"][i, c]), "r": r, "p": p,
                     "strength": correlate.strength(p), "unusual": bool(res["unusual"][i, c]) and not is_perf})
    return rows


def verdict_of(rows: list[dict], perf: str, history_n: int) -> tuple[str, list[dict]]:
    """The verdict line and the culprits (ranked) of a job's metric rows."""
    perf_row = next((r for r in rows if r["metric"] == perf), None)
    found = correlate.culprits(rows)
    return verdict(perf_row, found, history_n), found


def _box(res: dict, i: int, c: int) -> dict:
    n = int(res["count"][i, c])
    if n == 0:
        return {"n": 0, "p5": None, "q1": None, "median": None, "q3": None, "p95": None, "mean": None}
    b = res["box"][:, i, c]
    return {"n": n, "p5": float(b[0]), "q1": float(b[1]), "median": float(b[2]), "q3": float(b[3]),
            "p95": float(b[4]), "mean": float(res["mean"][i, c])}


def number_or_none(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None
