"""Statistics of a file system's targets (OSTs, MDTs, NSD servers): balance, fullness, growth, failover.

Pure functions on numpy arrays. A target x time matrix holds NaN where the target reported nothing
(it did not exist yet, was gone, or its counter was reset: stats/counters.py), never 0.

Imbalance (the servers page). Striping spreads a file system's bytes evenly, so in each time bin
a target's fair share of the bytes moved is 1/N, N = the targets that reported in that bin. A
target is flagged when, for at least LONG_FRACTION of the *busy* bins (those where the file system
moved more than 0 bytes and at least BUSY_FRACTION of its busiest bin's bytes), its share is above RATIO x 1/N ("hot") or below 1/(RATIO x N)
("cold"; an idle target among busy ones is the extreme), and those bins add up to at least LONG_S.
Shares swing widely from one 5-second sample to the next (a big file lands on a few OSTs), so the
bins are at least SHARE_BIN_S long (the caller merges finer ones). RATIO = 2, LONG_FRACTION = 0.5,
BUSY_FRACTION = 0.05, SHARE_BIN_S = 10 min and LONG_S = 1 h are decided defaults (docs/dashboard.md),
shown on the page.
"""

from __future__ import annotations

import numpy as np

RATIO = 2.0
LONG_FRACTION = 0.5
BUSY_FRACTION = 0.05
SHARE_BIN_S = 600.0
LONG_S = 3600.0
GROWTH_WINDOW_S = 7 * 86400.0   # days-until-full fits the last 7 days of the used bytes


def shares(amount: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(T, B) amounts per target and bin (NaN = missing) -> (share of each bin's total, N per bin).
    A bin whose total is 0 has no shares (NaN): nobody's share of nothing is unfair."""
    a = np.asarray(amount, np.float64)
    present = np.isfinite(a)
    n = present.sum(axis=0)
    total = np.nansum(a, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(present & (total > 0), a / total, np.nan)
    return share, n


def imbalance(amount: np.ndarray, ratio: float = RATIO, long_fraction: float = LONG_FRACTION,
              busy_fraction: float = BUSY_FRACTION, min_bins: int = 1) -> dict:
    """Per target: share of all bytes, the fraction of busy bins it was hot or cold in, and its flag
    ("hot", "cold" or None). See the module docstring for the rule."""
    a = np.asarray(amount, np.float64)
    t = a.shape[0]
    share, n = shares(a)
    total = np.nansum(a, axis=0)
    busy = (total > 0) & (total >= busy_fraction * (total.max() if total.size else 0))
    fair = np.where(n > 0, 1.0 / np.maximum(n, 1), np.nan)
    considered = busy[None, :] & np.isfinite(share)
    hot = considered & (share > ratio * fair[None, :])
    cold = considered & (share < fair[None, :] / ratio)
    k = considered.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        hot_frac = np.where(k > 0, hot.sum(axis=1) / k, np.nan)
        cold_frac = np.where(k > 0, cold.sum(axis=1) / k, np.nan)
    grand = np.nansum(a)
    total_share = np.nansum(a, axis=1) / grand if grand > 0 else np.full(t, np.nan)
    hot_long = (hot_frac >= long_fraction) & (hot.sum(axis=1) >= min_bins)
    cold_long = (cold_frac >= long_fraction) & (cold.sum(axis=1) >= min_bins)
    flag = np.where(hot_long, "hot", np.where(cold_long, "cold", ""))
    return {"share": total_share, "hot_fraction": hot_frac, "cold_fraction": cold_frac, "busy_bins": k,
            "flag": [f or None for f in flag.tolist()]}


def fullness(capacity: np.ndarray, free: np.ndarray, avail: np.ndarray | None = None) -> np.ndarray:
    """Used share as `df` prints it: used / (used + available to users), used = capacity - free.
    Without `avail` (LMT, statvfs without f_bavail): used / capacity. NaN where unknown."""
    cap = np.asarray(capacity, np.float64)
    used = cap - np.asarray(free, np.float64)
    denom = cap if avail is None else used + np.asarray(avail, np.float64)
    if avail is not None:
        denom = np.where(np.isfinite(denom), denom, cap)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, used / denom, np.nan)
    return np.where(np.isfinite(out), np.clip(out, 0.0, 1.0), np.nan)


def growth(t_s: np.ndarray, used: np.ndarray, window_s: float = GROWTH_WINDOW_S) -> dict:
    """Least-squares line through the used bytes of the last `window_s` seconds (of the data):
    slope in bytes/s and the points used. Fewer than 2 distinct times: no slope."""
    t = np.asarray(t_s, np.float64)
    u = np.asarray(used, np.float64)
    ok = np.isfinite(t) & np.isfinite(u)
    t, u = t[ok], u[ok]
    if t.size:
        keep = t >= t.max() - window_s
        t, u = t[keep], u[keep]
    if np.unique(t).size < 2:
        return {"slope_bps": None, "points": int(t.size)}
    tc = t - t.mean()
    slope = float((tc * (u - u.mean())).sum() / (tc * tc).sum())
    return {"slope_bps": slope, "points": int(t.size)}


def days_until_full(remaining_bytes: float, slope_bps: float | None) -> float | None:
    """Days until `remaining_bytes` are used up at `slope_bps`; None when not growing (or unknown)."""
    if slope_bps is None or not np.isfinite(slope_bps) or slope_bps <= 0 or not np.isfinite(remaining_bytes):
        return None
    return max(0.0, float(remaining_bytes)) / slope_bps / 86400.0


def failover(nid_by_target: dict[str, str | None]) -> dict:
    """From `lctl dl -t` (target -> the server NID it is connected to): how many targets each NID
    serves and the targets on NIDs serving more than the usual (most common) count, i.e. whose
    failover partner has taken over (pytokio's reading of the same output)."""
    per_nid: dict[str, list[str]] = {}
    for target, nid in nid_by_target.items():
        if nid:
            per_nid.setdefault(nid, []).append(target)
    counts = [len(v) for v in per_nid.values()]
    if not counts:
        return {"usual": None, "per_nid": {}, "overloaded": []}
    values, freq = np.unique(counts, return_counts=True)
    usual = int(values[np.argmax(freq)])
    over = sorted(t for v in per_nid.values() if len(v) > usual for t in v)
    return {"usual": usual, "per_nid": {k: sorted(v) for k, v in sorted(per_nid.items())}, "overloaded": over}
