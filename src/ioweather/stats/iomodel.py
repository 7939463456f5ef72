"""Per-configuration summary of io-model durations: what `iomodel run` prints after measuring."""

from __future__ import annotations

import numpy as np


def summarize_durations(durations_ns: np.ndarray, size: int) -> dict:
    """count, median/p99/mean duration (s) and throughput = bytes moved / time spent in the calls (B/s).

    The throughput is the paper's Table 1 "mean throughput": total bytes over total
    time, not the mean of per-call rates (which small fast calls would dominate).
    Quantiles are numpy's default linear interpolation (R type 7).
    """
    d = np.asarray(durations_ns, dtype=np.float64) * 1e-9
    n = int(d.size)
    if n == 0:
        return {"count": 0, "median_s": None, "p99_s": None, "mean_s": None, "throughput_bps": None}
    median, p99 = np.quantile(d, [0.5, 0.99])
    total = float(d.sum())
    return {"count": n, "median_s": float(median), "p99_s": float(p99), "mean_s": total / n,
            "throughput_bps": n * size / total if total > 0 else None}
