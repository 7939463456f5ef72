"""What each finding costs: an estimate of the job I/O time it accounts for (docs/darshan.md, "Cost models").

Darshan's timers are cumulative over ranks; the time a job waits for I/O is the
slowest rank's path (`perf.io_time_s`, Carns et al.). Models that start from
cumulative time convert it with `Clock.wall`: the saving is assumed to be spread
over ranks as the job's I/O is, so it shrinks the slowest path by the same
share. Models that start from a wall-clock quantity (a shared file's slowest
rank, the slowest rank's excess over the mean) use it directly. Every model is
an estimate for ranking and for the verdict, not a prediction to the second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ioweather.units import format_seconds

#: A representative request size per Darshan size bin (the arithmetic midpoint; 1G_PLUS: 1 GiB).
BIN_BYTES = {"0_100": 50, "100_1K": 562, "1K_10K": 5632, "10K_100K": 56320, "100K_1M": 576000,
             "1M_4M": 2621440, "4M_10M": 7340032, "10M_100M": 57671680, "100M_1G": 576716800, "1G_PLUS": 1 << 30}
#: Share of a random request's time that sequential access would save (read-ahead and seek).
RANDOM_PENALTY = 0.5
#: Lustre: one stripe per this many bytes of file is the most striping a file can use well.
BYTES_PER_STRIPE = 1 << 30


@dataclass(frozen=True)
class Clock:
    """The job's times that every cost is measured against."""

    io_time_s: float      # slowest rank's I/O path (own files + shared files), seconds
    cumulative_s: float   # read + write + metadata time summed over POSIX/STDIO records and ranks
    runtime_s: float

    def wall(self, cumulative_s: float) -> float:
        """Cumulative (rank-summed) seconds as seconds of the job's I/O time."""
        if self.cumulative_s <= 0 or cumulative_s <= 0:
            return 0.0
        return float(cumulative_s) * self.io_time_s / self.cumulative_s


def small_request_saving(t_kind: float, n: float, n_small: float, b_total: float, b_small: float,
                         small_bytes: int) -> float:
    """Cumulative seconds saved by issuing the small requests' bytes as large requests.

    Every request of this kind is assumed to take the same time (t_kind / n: latency-bound);
    the same bytes sent at the job's own large-request size S_L (its mean large request, or
    `small_bytes` when it made none) would need b_small / S_L requests:
    saving = t_kind / n * (n_small - b_small / S_L), never below 0.
    """
    if n <= 0 or n_small <= 0 or t_kind <= 0:
        return 0.0
    n_large, b_large = n - n_small, b_total - b_small
    s_large = b_large / n_large if n_large > 0 and b_large > 0 else float(small_bytes)
    s_large = max(s_large, float(small_bytes))
    return max(0.0, t_kind / n * (n_small - b_small / s_large))


def misaligned_saving(t_rw: float, share: float, request: float, unit: float) -> float:
    """Cumulative seconds lost to requests that cross an alignment unit (a block or stripe).

    An unaligned request of size S touches at most one more unit of size A than an
    aligned one: its time grows by at most m / (S + m), m = min(S, A) (<= 50 %).
    """
    if t_rw <= 0 or share <= 0 or request <= 0 or unit <= 0:
        return 0.0
    m = min(request, unit)
    return t_rw * min(share, 1.0) * m / (request + m)


def random_saving(t_kind: float, n: float, n_random: float) -> float:
    """Cumulative seconds saved by making the non-sequential requests sequential:
    RANDOM_PENALTY of their share of the time."""
    if n <= 0 or t_kind <= 0:
        return 0.0
    return RANDOM_PENALTY * t_kind * min(n_random / n, 1.0)


def redundant_saving(extra_bytes: np.ndarray, bytes_moved: np.ndarray, t_kind: np.ndarray) -> float:
    """Cumulative seconds spent moving bytes again: each record's extra bytes at its own rate."""
    ok = (extra_bytes > 0) & (bytes_moved > 0) & (t_kind > 0)
    return float((extra_bytes[ok] / bytes_moved[ok] * t_kind[ok]).sum())


def straggler_excess(slowest: np.ndarray, total_time: np.ndarray, ranks: np.ndarray | float) -> float:
    """Wall seconds the job waits for stragglers: per file, the slowest rank's time minus
    the mean rank's time (total time / ranks that share it), summed."""
    mean = total_time / np.maximum(ranks, 1)
    return float(np.clip(slowest - mean, 0, None).sum())


def stripe_target(size: float, osts: int) -> int:
    """The stripe count a file of `size` bytes can use: one stripe per BYTES_PER_STRIPE, at most `osts`."""
    return int(max(1, min(osts, math.ceil(size / BYTES_PER_STRIPE))))


def striping_saving(t_file: float, stripes: int, target: int) -> float:
    """Wall seconds saved by striping over `target` OSTs instead of `stripes`: the file's I/O is
    assumed bandwidth-bound on its OSTs, so its time scales as stripes / target."""
    if t_file <= 0 or target <= stripes or stripes <= 0:
        return 0.0
    return t_file * (1.0 - stripes / target)


def attach(findings: list[dict], clock: Clock) -> list[dict]:
    """Give every finding `cost_s` (0 when not costed), `cost_share` (of the I/O time) and
    `cost_share_of_runtime` (cost_s clipped to [0, io_time_s]); list them by cost, most expensive first (severity, then code, on ties).
    A finding's `cost_s` is set by its producer; the shares are derived here."""
    from ioweather.stats.findings import severity

    for f in findings:
        # no finding can account for more than the I/O time there is
        c = min(max(float(f.get("cost_s") or 0.0), 0.0), clock.io_time_s)
        f["cost_s"] = c
        f["cost_share"] = c / clock.io_time_s if clock.io_time_s > 0 else 0.0
        f["cost_share_of_runtime"] = c / clock.runtime_s if clock.runtime_s > 0 else 0.0
        f.setdefault("cost_model", "not costed")
    findings.sort(key=lambda f: (-f["cost_s"], -severity(f["level"]), f["code"]))
    return findings


def verdict(findings: list[dict], clock: Clock, io_fraction: float | None, *, no_action_fraction: float,
            min_cost_s: float, min_runtime_share: float, max_actions: int = 3) -> dict:
    """The one-line verdict: the top actions by cost (skipping findings that count the same time
    as one already named: `overlaps`), or "nothing worth changing"."""
    share = "-" if io_fraction is None else f"{100 * io_fraction:.1f} %"
    nothing = {"text": f"I/O is {share} of the run time: nothing worth changing", "actions": [], "saving_s": 0.0}
    if io_fraction is None or io_fraction < no_action_fraction:
        return nothing
    floor = max(min_cost_s, min_runtime_share * clock.runtime_s)
    taken: list[dict] = []
    covered: set[str] = set()
    for f in findings:
        if len(taken) == max_actions:
            break
        if f["level"] not in ("HIGH", "WARN") or f["cost_s"] < floor or f["code"] in covered:
            continue
        taken.append(f)
        covered.add(f["code"])
        covered.update(f.get("overlaps", ()))
    if not taken:
        return {"text": f"I/O is {share} of the run time, but no finding accounts for {format_seconds(floor)} "
                        "or more of it: nothing to change that the counters can point at", "actions": [], "saving_s": 0.0}
    saving = sum(f["cost_s"] for f in taken)
    parts = [f"{f.get('action') or f['message']} (saves ~{format_seconds(f['cost_s'])}, "
             f"{100 * f['cost_share']:.0f} % of the I/O time)" for f in taken]
    text = f"I/O is {share} of the run time; " + "; then ".join(parts)
    return {"text": text, "actions": [f["code"] for f in taken], "saving_s": saving}


