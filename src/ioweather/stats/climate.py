"""A job's climate in one pass over its motif's history, for many jobs at once (seed 003 "UMAMI";
METHODS.md section 7): per metric the quartile class of the job's value, whether it is unusual in the
bad direction, and Pearson's r of the metric with performance over the history, with its p-value.

The definitions are those of stats/umami.py and stats/correlate.py, computed on a (history x
metrics) matrix instead of one metric at a time:

- percentiles: numpy's default ("linear") method on the finite values of each column, with numpy's
  own interpolation formula (tested equal to `np.percentile`);
- r: over the pairs where both the metric and performance are finite; fewer than 3 pairs or a
  constant side give no r (NaN here, None in documents);
- p: two-sided, as `scipy.stats.pearsonr` computes it: r follows a symmetric beta distribution on
  [-1, 1] with a = b = n/2 - 1 under the null, so p = 2 I_{(1-|r|)/2}(a, a) (the regularized
  incomplete beta function, `scipy.special.betainc`; tested equal to pearsonr). scipy.special is
  imported on the first p-value only: `umami JOB` reads stored values and never needs it.
"""

from __future__ import annotations

import numpy as np


def linear_percentiles(x: np.ndarray, qs) -> np.ndarray:
    """Percentiles `qs` (0-100) of the finite values of each column of `x` (len(qs) x columns);
    NaN for a column without a finite value. Equal to `np.percentile(col[np.isfinite(col)], qs)`."""
    a = np.array(x, dtype=float, ndmin=2, copy=True)
    a[~np.isfinite(a)] = np.nan
    a.sort(axis=0)  # NaN sort last
    c = np.isfinite(a).sum(axis=0)
    out = np.full((len(qs), a.shape[1]), np.nan)
    has = c > 0
    if not has.any():
        return out
    cols = np.flatnonzero(has)
    for k, q in enumerate(qs):
        h = (c[cols] - 1) * (float(q) / 100.0)
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, c[cols] - 1)
        t = h - lo
        va, vb = a[lo, cols], a[hi, cols]
        diff = vb - va
        # numpy's _lerp: from the nearer end, so t = 1 gives b exactly
        out[k, cols] = np.where(t >= 0.5, vb - diff * (1 - t), va + diff * t)
    return out


def pearson_p(r, n) -> np.ndarray:
    """Two-sided p-value of Pearson's r over n pairs (scipy.stats.pearsonr's); NaN where r is NaN."""
    # lazy: scipy, loaded only when this runs
    from scipy.special import betainc

    r = np.asarray(r, dtype=float)
    n = np.asarray(n, dtype=float)
    ab = n / 2 - 1
    with np.errstate(invalid="ignore"):
        p = 2 * betainc(ab, ab, np.clip((1 - np.abs(r)) / 2, 0, 0.5))
    return np.where(np.isfinite(r), np.clip(p, 0.0, 1.0), np.nan)


def pearson_columns(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n, r) of each column of `x` with `y` over their finite pairs; r NaN when n < 3 or a side is constant."""
    x = np.array(x, dtype=float, ndmin=2)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)[:, None]
    n = ok.sum(axis=0)
    nn = np.maximum(n, 1)
    xs = np.where(ok, x, 0.0)
    ys = np.where(ok, y[:, None], 0.0)
    dx = np.where(ok, x - xs.sum(axis=0) / nn, 0.0)
    dy = np.where(ok, y[:, None] - ys.sum(axis=0) / nn, 0.0)
    sxx, syy = (dx * dx).sum(axis=0), (dy * dy).sum(axis=0)
    # constant side: max == min over the pairs (a sum of squares can round above 0 for equal values)
    const = (np.where(ok, x, -np.inf).max(axis=0) == np.where(ok, x, np.inf).min(axis=0)) | \
            (np.where(ok, y[:, None], -np.inf).max(axis=0) == np.where(ok, y[:, None], np.inf).min(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip((dx * dy).sum(axis=0) / np.sqrt(sxx * syy), -1.0, 1.0)
    r = np.where((n >= 3) & ~const & np.isfinite(r), r, np.nan)
    return n, r


def quartile_classes(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Class 1-4 of each value against (Q1, median, Q3) columns `q` (3 x metrics); 0 where unknown."""
    v = np.asarray(values, dtype=float)
    cls = np.where(v <= q[0], 1, np.where(v <= q[1], 2, np.where(v <= q[2], 3, 4)))
    return np.where(np.isfinite(v) & np.isfinite(q[0]), cls, 0)


def unusual(values: np.ndarray, q: np.ndarray, bigger_is_better: np.ndarray) -> np.ndarray:
    """Outside the IQR on the bad side: below Q1 when bigger is better, above Q3 when smaller is
    (`bigger_is_better`: 1, 0, or -1 for no direction)."""
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        bad = np.where(bigger_is_better == 1, v < q[0], v > q[2])
    return bad & (bigger_is_better >= 0) & np.isfinite(v) & np.isfinite(q[0])


def expanding(x: np.ndarray, perf_col: int, prefix: np.ndarray, rows, bigger_is_better: np.ndarray,
              correlate: bool = True) -> dict:
    """The climate of each job `rows[i]` of a motif against its history `x[:prefix[rows[i]]]` (jobs
    sorted by start; the prefix ends before the first job that started with or after it).

    x: jobs x metrics (NaN where unknown), column `perf_col` is performance (fraction of peak).
    Returns arrays (len(rows) x metrics): quartile (0 = none), unusual, n, r, p, and `history_n`
    (finite performance values in the history), box (5 x len(rows) x metrics: p5, q1, median, q3, p95),
    mean and count of the finite history values. Without `correlate`, n, r and p are left out (NaN, 0)."""
    x = np.asarray(x, dtype=float)
    rows = np.asarray(rows, dtype=np.int64)
    m = x.shape[1]
    k = len(rows)
    out = {"quartile": np.zeros((k, m), np.int64), "unusual": np.zeros((k, m), bool),
           "n": np.zeros((k, m), np.int64), "r": np.full((k, m), np.nan), "history_n": np.zeros(k, np.int64),
           "box": np.full((5, k, m), np.nan), "mean": np.full((k, m), np.nan), "count": np.zeros((k, m), np.int64)}
    for i, j in enumerate(rows):
        h = x[: prefix[j]]
        if h.shape[0] == 0:
            continue
        box = linear_percentiles(h, [5, 25, 50, 75, 95])
        out["box"][:, i, :] = box
        q = box[1:4]
        out["quartile"][i] = quartile_classes(x[j], q)
        out["unusual"][i] = unusual(x[j], q, bigger_is_better)
        if correlate:
            n, r = pearson_columns(h, h[:, perf_col])
            r[perf_col] = np.nan
            out["n"][i], out["r"][i] = n, r
        fin = np.isfinite(h)
        out["count"][i] = fin.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["mean"][i] = np.where(fin, h, 0.0).sum(axis=0) / out["count"][i]
        out["history_n"][i] = int(np.isfinite(h[:, perf_col]).sum())
    out["p"] = pearson_p(out["r"], out["n"]) if correlate and np.isfinite(out["r"]).any() else np.full((k, m), np.nan)
    return out
