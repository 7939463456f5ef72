"""Which metrics matter: Pearson's r between performance and each metric (seed 003 section
"Correlating Different Data Sources"; METHODS.md section 7), and a job's culprits.

r and its two-sided p-value are scipy.stats.pearsonr's on the pairs where both values are finite
(tokio-abcutils drops NaN per pair the same way). Strength: "strong" when p < 0.01, "weak" when
p < 0.05, else "none"; fewer than 3 pairs or a constant side give no r (strength "none", r None).
Culprits: metrics unusual for the job in their bad direction (outside the IQR of its motif's
history) that correlate with performance (p < 0.05), ranked by |r|.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

STRONG_P = 0.01
WEAK_P = 0.05
#: |r| above this reads as a moderate correlation (the paper's bold cells).
MODERATE_R = 0.3


def strength(p: float | None) -> str:
    if p is None or not math.isfinite(p):
        return "none"
    if p < STRONG_P:
        return "strong"
    if p < WEAK_P:
        return "weak"
    return "none"


def pearson(x, y) -> dict:
    """{n, r, p, strength} of the finite pairs of x and y."""
    # lazy: scipy, loaded only when this runs
    from scipy import stats

    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = int(a.size)
    if n < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"n": n, "r": None, "p": None, "strength": "none"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nearly-constant input: scipy warns, the numbers stand
        res = stats.pearsonr(a, b)
    r, p = float(res[0]), float(res[1])
    if not math.isfinite(r):
        return {"n": n, "r": None, "p": None, "strength": "none"}
    return {"n": n, "r": r, "p": p, "strength": strength(p)}


def correlation_rows(performance, metrics: dict[str, np.ndarray]) -> list[dict]:
    """[{metric, n, r, p, strength}] of `performance` against each metric, strongest evidence first
    (smallest p, then largest |r|; metrics without r last, by name)."""
    rows = [{"metric": name, **pearson(values, performance)} for name, values in metrics.items()]
    return sorted(rows, key=lambda r: (r["p"] is None, r["p"] if r["p"] is not None else 0.0,
                                       -abs(r["r"] or 0.0), r["metric"]))


def culprits(metric_rows: list[dict]) -> list[dict]:
    """The rows with `unusual` true and strength weak or strong, ranked by |r| (largest first)."""
    hits = [r for r in metric_rows if r.get("unusual") and r.get("strength") in ("strong", "weak")
            and r.get("r") is not None]
    # on a tie (contention_K = 1 - coverage_factor_K has the same |r|) the coverage factor comes first
    return sorted(hits, key=lambda r: (-round(abs(r["r"]), 12), r["metric"].startswith("contention_")))
