"""Coverage factor and contention of a job (seed 003; METHODS.md section 7).

    CF(j) = what job j moved (Darshan) / what the file system's servers moved in j's window

per direction (bytes read, written, both), per operation kind (read and write ops, opens, stats)
and for node-hours (the job's / every concurrent job's). The window is the job's run plus a 5 s tail,
and it begins where the telemetry interval the job started in begins (`job_overlap_s`).
Two variants: over every server target of the file system (pytokio's), and over the job's own
targets when its Darshan Lustre records name them (the paper's). A CF above 1.2 means clock skew or
missing samples: flagged and excluded from statistics (tokio-abcutils drops them the same way).
contention = 1 - CF.

A server amount of 0 or missing gives no CF (None), never 0 or infinity: "no data" is not "no
competition".
"""

from __future__ import annotations

import math

import numpy as np

#: The tail added after a job's end: server counters lag the client's last write.
TAIL_S = 5.0
#: Above this, a CF is an artefact (clock skew, missing server samples), not a measurement.
CF_MAX_PLAUSIBLE = 1.2

#: CF name -> (job amount key, server amount key); names as tokio-abcutils derives them.
KINDS = {
    "bw": ("bytes", "bytes"),
    "read_bw": ("bytes_read", "bytes_read"),
    "write_bw": ("bytes_written", "bytes_written"),
    "ops": ("ops", "ops"),
    "read_ops": ("read_ops", "read_ops"),
    "write_ops": ("write_ops", "write_ops"),
    "opens": ("opens", "opens"),
    "stats": ("stats", "stats"),
    "nodehrs": ("node_hours", "node_hours"),
}


def coverage_factor(job_amount: float | None, fs_amount: float | None) -> float | None:
    """job / fs, or None when either is missing or the file system's amount is not positive."""
    if job_amount is None or fs_amount is None:
        return None
    j, f = float(job_amount), float(fs_amount)
    if not (math.isfinite(j) and math.isfinite(f)) or f <= 0 or j < 0:
        return None
    return j / f


def implausible(cf: float | None) -> bool:
    return cf is not None and cf > CF_MAX_PLAUSIBLE


def contention(cf: float | None) -> float | None:
    return None if cf is None else 1.0 - cf


def with_totals(amounts: dict) -> dict:
    """`amounts` plus bytes = read + written and ops = read_ops + write_ops where both halves are known."""
    out = dict(amounts)
    for total, (a, b) in (("bytes", ("bytes_read", "bytes_written")), ("ops", ("read_ops", "write_ops"))):
        if out.get(total) is None and out.get(a) is not None and out.get(b) is not None:
            out[total] = out[a] + out[b]
    return out


def coverage_factors(job: dict, fs: dict) -> dict:
    """{coverage_factor_K, contention_K, coverage_factor_K_flagged} for every kind K both sides know.

    A flagged CF (> 1.2) is reported with its flag; statistics must leave it out (`implausible`)."""
    job, fs = with_totals(job), with_totals(fs)
    out: dict = {}
    for kind, (jk, fk) in KINDS.items():
        if jk not in job or fk not in fs:
            continue
        cf = coverage_factor(job[jk], fs[fk])
        out[f"coverage_factor_{kind}"] = cf
        out[f"contention_{kind}"] = contention(cf)
        out[f"coverage_factor_{kind}_flagged"] = implausible(cf)
    return out


def overlap_s(start_ns, interval_s, since_ns: int, until_ns: int) -> np.ndarray:
    """Seconds of each interval [start, start + interval_s) that fall inside [since, until)."""
    s = np.asarray(start_ns, dtype=np.int64)
    e = s + np.round(np.asarray(interval_s, dtype=float) * 1e9).astype(np.int64)
    lo = np.maximum(s, since_ns)
    hi = np.minimum(e, until_ns)
    return np.clip(hi - lo, 0, None) / 1e9


def job_overlap_s(start_ns, interval_s, since_ns: int, until_ns: int) -> np.ndarray:
    """Seconds of each interval [start, start + interval_s) a job's window [since, until) counts: the part
    inside it, except that the interval the job started in counts whole. Telemetry cannot tell where in
    an interval its amount was moved; spreading it evenly assumes a steady rate, which is wrong at the
    job's start: its bytes there all come after it. A 2 GiB job starting 0.41 s into a 1 s interval
    wrote 1.23 GB before the next tick was read (0.24 s late); 59 % of it counted, the window held
    fewer bytes than the job wrote, and its coverage factor (1.25) was flagged as clock skew. The
    interval's bytes of others before the start count too: the job's share is then a lower bound,
    as the 5 s tail at the end makes it already."""
    s = np.asarray(start_ns, dtype=np.int64)
    e = s + np.round(np.asarray(interval_s, dtype=float) * 1e9).astype(np.int64)
    # an interval that ends after `since` counts from its own start; one that ends before counts nothing
    lo = np.where(e > since_ns, s, since_ns)
    hi = np.minimum(e, until_ns)
    return np.clip(hi - lo, 0, None) / 1e9


def window_amount(start_ns, interval_s, value, since_ns: int, until_ns: int) -> float | None:
    """What counters moved in a job's window [since, until): each interval's amount times the share of it
    the window counts (`job_overlap_s`: amounts are spread evenly over their interval, and the interval
    the job started in counts whole). None when no valid interval overlaps."""
    v = np.asarray(value, dtype=float)
    iv = np.asarray(interval_s, dtype=float)
    ov = job_overlap_s(start_ns, iv, since_ns, until_ns)
    ok = np.isfinite(v) & (v >= 0) & (iv > 0) & (ov > 0)
    if not ok.any():
        return None
    return float(np.sum(v[ok] * ov[ok] / iv[ok]))


def inside_amount(start_ns, interval_s, value, since_ns: int, until_ns: int) -> float:
    """What the readings lying wholly inside [since, until) moved: the only amounts that were surely moved
    while a job ran. A reading that also covers time before or after the run may have moved all of its
    bytes there; at the readings' resolution nothing in it can be placed inside the run."""
    s = np.asarray(start_ns, dtype=np.int64)
    iv = np.asarray(interval_s, dtype=float)
    v = np.asarray(value, dtype=float)
    e = s + np.round(iv * 1e9).astype(np.int64)
    ok = np.isfinite(v) & (v >= 0) & (iv > 0) & (s >= since_ns) & (e <= until_ns)
    return float(np.sum(v[ok]))


def resolved_cost(io_time_s: float, job_amount: float, inside: float, window_cf: float) -> tuple[float, float]:
    """(low, high) seconds of the coverage factor's system share at the readings' resolution. high is
    io × (1 − CF) over the job's window (the start's whole reading and the tail included: every byte
    that may have competed); low is the same with only the others' bytes surely inside the run, the
    readings wholly inside it less all of the job's own bytes (they may all lie there): io × (1 − J /
    max(J, inside)). A low of ~0 with a high above it is a share the readings cannot tell from 0."""
    io = max(0.0, float(io_time_s))
    high = io * (1.0 - min(1.0, max(0.0, float(window_cf))))
    j = max(0.0, float(job_amount))
    low = 0.0 if inside <= j or inside <= 0 else io * (1.0 - j / inside)
    return min(low, high), high
