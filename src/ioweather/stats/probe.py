"""Interval statistics and the slowdown factor of probe samples (METHODS.md section 1, seed 001).

Inputs are plain arrays (op code, start time in ns, duration in ns, status code)
as returned by `ioweather.store.probe.read_samples`; outputs are lists of dicts
with the JSON contract's keys (durations in seconds with `_s`).
"""

from __future__ import annotations

import numpy as np

from ioweather.stats.grouped import mean_sorted, quantile_sorted, sort_groups

from ioweather.stats.probe_spec import DEGRADED, SEVERE, SLOWDOWN_STATS, STAT_QUANTILES  # noqa: F401 (re-exported)
from ioweather.stats.status_rules import state  # noqa: F401 (re-exported)

STATUS_OK, STATUS_ERROR, STATUS_TIMEOUT = 0, 1, 2


def _group_keys(op: np.ndarray, start_ns: np.ndarray, interval_s: float) -> tuple[np.ndarray, int, int]:
    """One int64 key per sample that sorts by (op, interval): op in the top bits, the interval's
    index counted from the first interval in the low 48 bits. Returns (keys, step_ns, first_index)."""
    step = int(round(interval_s * 1e9))
    if step <= 0:
        raise ValueError("interval must be positive")
    idx = np.asarray(start_ns, np.int64) // step
    first = int(idx.min()) if len(idx) else 0
    rel = idx - first
    if len(rel) and int(rel.max()) >= 1 << 48:
        raise ValueError("time range too long for this interval")
    return (np.asarray(op).astype(np.int64) << 48) | rel, step, first


def _split_key(key: int, step: int, first: int) -> tuple[int, int]:
    return key >> 48, ((key & ((1 << 48) - 1)) + first) * step


def interval_stats(op: np.ndarray, start_ns: np.ndarray, duration_ns: np.ndarray, status: np.ndarray,
                   interval_s: float) -> list[dict]:
    """Per (op, interval): count, errors, timeouts, min/q1/median/q3/p90/p95/p99/max/mean of successful durations.

    `count` is the number of successful samples the statistics describe; errors and
    timeouts are counted separately. Quantiles need at least 2 samples (else None).
    """
    key, step, first = _group_keys(op, start_ns, interval_s)
    out: dict[int, dict] = {}
    ok = np.asarray(status) == STATUS_OK
    keys, starts, counts, v = sort_groups(key[ok], np.asarray(duration_ns, np.int64)[ok])
    v = v / 1e9
    stats = {name: quantile_sorted(v, starts, counts, q) for name, q in STAT_QUANTILES.items()}
    # min and max are meaningful for a single sample; report them even then.
    for name, idx in (("min", starts), ("max", starts + counts - 1)):
        stats[name] = np.where(counts > 0, v[np.minimum(idx, len(v) - 1)] if len(v) else np.nan, np.nan)
    means = mean_sorted(v, starts, counts)
    for i, k in enumerate(keys.tolist()):
        row = {"count": int(counts[i]), "errors": 0, "timeouts": 0, "mean_s": float(means[i])}
        row.update({f"{name}_s": float(stats[name][i]) for name in STAT_QUANTILES})
        out[k] = row
    for code, field in ((STATUS_ERROR, "errors"), (STATUS_TIMEOUT, "timeouts")):
        sel = np.asarray(status) == code
        if sel.any():
            ks, cs = np.unique(key[sel], return_counts=True)
            for k, c in zip(ks.tolist(), cs.tolist()):
                row = out.setdefault(k, _empty_row())
                row[field] = int(c)
    rows = []
    for k in sorted(out):
        op_code, b = _split_key(k, step, first)
        rows.append({"op_code": op_code, "interval_start_ns": b, **_nan_to_none(out[k])})
    return rows


def interval_medians(op: np.ndarray, start_ns: np.ndarray, duration_ns: np.ndarray, status: np.ndarray,
                     interval_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(op codes, interval starts in ns, median s) of the (op, interval) groups with a successful sample:
    `interval_stats`' `median_s` (the same grouping and quantile, so the same numbers; NaN under 2 samples)
    without its other statistics and per-row dicts, which were most of a Status card's sparkline."""
    key, step, first = _group_keys(op, start_ns, interval_s)
    ok = np.asarray(status) == STATUS_OK
    keys, starts, counts, v = sort_groups(key[ok], np.asarray(duration_ns, np.int64)[ok])
    median = quantile_sorted(v / 1e9, starts, counts, STAT_QUANTILES["median"])
    keys = np.asarray(keys, np.int64)
    return keys >> 48, ((keys & ((1 << 48) - 1)) + first) * step, np.asarray(median, np.float64)


def _empty_row() -> dict:
    row = {"count": 0, "errors": 0, "timeouts": 0, "mean_s": None}
    row.update({f"{name}_s": None for name in STAT_QUANTILES})
    return row


def _nan_to_none(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()}


def baseline_medians(op: np.ndarray, duration_ns: np.ndarray, status: np.ndarray, n_ops: int) -> np.ndarray:
    """The expected duration (s) of each op code: the median of its successful samples (NaN if none)."""
    ok = np.asarray(status) == STATUS_OK
    op, dur = np.asarray(op)[ok], np.asarray(duration_ns)[ok]
    out = np.full(n_ops, np.nan)
    for code in np.unique(op):
        # In seconds before the median (as every other statistic here): for an even count the
        # mean of the two middle values then rounds the same way as in the dashboard's cache.
        # np.median partitions: O(n), no full sort.
        out[int(code)] = np.median(dur[op == code] / 1e9)
    return out


def slowdown(op: np.ndarray, start_ns: np.ndarray, duration_ns: np.ndarray, status: np.ndarray,
             interval_s: float, expected_s: np.ndarray, stat: str = "median") -> list[dict]:
    """Per (op, interval): stat(successful durations) / expected[op] (METHODS.md section 1).

    `expected_s[op_code]` comes from `baseline_medians` over the baseline window.
    A slowdown below 1 means faster than usual. The statistic describes completed
    operations; errors and timeouts of the interval are reported beside it, so a
    hung mount shows as timeouts rather than as a made-up duration.
    """
    if stat not in SLOWDOWN_STATS:
        raise ValueError(f"unknown statistic {stat!r}; choose one of {', '.join(SLOWDOWN_STATS)}")
    return slowdown_rows(interval_stats(op, start_ns, duration_ns, status, interval_s), expected_s, stat)


def slowdown_rows(rows: list[dict], expected_s: np.ndarray, stat: str = "median") -> list[dict]:
    """`slowdown` from `interval_stats` rows however they were obtained (stored rollups, issue 21)."""
    out = []
    for r in rows:
        value = r["mean_s"] if stat == "mean" else r[f"{stat}_s"]
        exp = expected_s[r["op_code"]] if r["op_code"] < len(expected_s) else np.nan
        sd = value / exp if value is not None and np.isfinite(exp) and exp > 0 else None
        out.append({"op_code": r["op_code"], "interval_start_ns": r["interval_start_ns"], "count": r["count"],
                    "errors": r["errors"], "timeouts": r["timeouts"], "stat": stat, "value_s": value,
                    "expected_s": float(exp) if np.isfinite(exp) else None, "slowdown": sd})
    return out


