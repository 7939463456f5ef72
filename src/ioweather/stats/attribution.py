"""Events to jobs (issue 15, seed 004 section 7): which jobs ran during an I/O event, what share of
its bytes each one explains, and the compute exposed to it. Pure functions on arrays.

Join. `sweep_join` pairs every event with the jobs whose run overlaps it, in time proportional to
the pairs found plus the sort (events in start order, jobs added once from a sorted array, dropped
for good once they end before the current event starts): a month of events against 100,000 jobs
never builds the events x jobs cross product (docs/benchmarks.md).

Shares (one event; its intervals are the workload series' bins):

* job_stats (exact): Lustre's own per-job byte counters over the event ÷ the event's bytes.
* Darshan: the log's bytes spread evenly over the job's run (DXT and heatmap timing is not kept by
  ingest), the part falling in each interval, never more than the servers moved in it.
* overlap: what the servers moved in each interval and Darshan does not explain is split among the
  other jobs running in it, in proportion to the fraction of the interval each ran. A job alone for
  most of its bytes is a confident culprit; one of many is not (`alone_fraction`).
"""

from __future__ import annotations

import numpy as np

#: Confidence of an overlap share from the fraction of its bytes moved while the job ran alone.
CONFIDENCE_CUTS = ((0.9, "high"), (0.5, "medium"))


def sweep_join(ev_start, ev_end, job_start, job_end) -> tuple[np.ndarray, np.ndarray]:
    """(event index, job index) of every pair whose half-open runs overlap (start < other's end and
    end > other's start), grouped by event in start order, jobs in start order within an event."""
    es, ee = np.asarray(ev_start, np.int64), np.asarray(ev_end, np.int64)
    js, je = np.asarray(job_start, np.int64), np.asarray(job_end, np.int64)
    order = np.argsort(js, kind="stable")
    js_sorted, je_sorted = js[order], je[order]
    active = np.empty(0, np.int64)  # positions in `order`, increasing
    added = 0
    out_e, out_j = [], []
    for i in np.argsort(es, kind="stable"):
        k = int(np.searchsorted(js_sorted, ee[i], "left"))
        if k > added:
            active = np.concatenate([active, np.arange(added, k, dtype=np.int64)])
            added = k
        # later events start later: a job ended by this event's start never overlaps another
        active = active[je_sorted[active] > es[i]]
        hit = active[js_sorted[active] < ee[i]]
        if len(hit):
            out_e.append(np.full(len(hit), i, np.int64))
            out_j.append(order[hit])
    if not out_e:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_e), np.concatenate(out_j)


def coverage_matrix(edges_ns: np.ndarray, job_start, job_end) -> np.ndarray:
    """[job, interval] fraction of each interval (between consecutive `edges_ns`) a job ran."""
    e = np.asarray(edges_ns, np.int64)
    s = np.asarray(job_start, np.int64)[:, None]
    t = np.asarray(job_end, np.int64)[:, None]
    lo, hi = e[None, :-1], e[None, 1:]
    ran = np.minimum(t, hi) - np.maximum(s, lo)
    return np.clip(ran, 0, None) / (hi - lo)


def event_shares(edges_ns, moved, job_start, job_end, darshan_bps) -> dict:
    """Bytes of one event explained by each candidate job (Darshan, else time overlap).

    edges_ns: the event's interval edges (n+1); moved: bytes the servers moved per interval (NaN =
    unknown, explained by nobody); darshan_bps: per job, its log's bytes ÷ its run time, NaN without a
    log. Returns {"bytes": per job, "darshan": bool per job, "alone_fraction": per job, "event_bytes":
    the known bytes}."""
    m = np.asarray(moved, np.float64)
    known = np.where(np.isfinite(m), m, 0.0)
    rate = np.asarray(darshan_bps, np.float64)
    has_log = np.isfinite(rate)
    cov = coverage_matrix(edges_ns, job_start, job_end)
    width_s = np.diff(np.asarray(edges_ns, np.int64)) / 1e9
    claimed = np.where(has_log[:, None], np.nan_to_num(rate)[:, None] * cov * width_s[None, :], 0.0)
    total_claim = claimed.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(total_claim > known, known / total_claim, 1.0)
    claimed *= scale[None, :]
    rest = known - claimed.sum(axis=0)
    others = np.where(has_log[:, None], 0.0, cov)
    weight = others.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        split = np.where(weight > 0, others / weight, 0.0) * rest[None, :]
    got = claimed.sum(axis=1) + split.sum(axis=1)
    alone = (split * (others == weight[None, :])).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        alone_fraction = np.where(got > 0, alone / got, 0.0)
    return {"bytes": got, "darshan": has_log, "alone_fraction": np.where(has_log, np.nan, alone_fraction),
            "event_bytes": float(known.sum())}


def confidence(method: str, alone_fraction: float | None = None) -> str:
    """exact (job_stats), medium (Darshan's bytes with even timing), else from how alone the job ran."""
    if method == "job_stats":
        return "exact"
    if method == "darshan":
        return "medium"
    for cut, label in CONFIDENCE_CUTS:
        if alone_fraction is not None and alone_fraction >= cut:
            return label
    return "low"


def rank(shares, nnodes) -> np.ndarray:
    """Order of jobs best first: larger share, then more nodes (the tie-break), then input order."""
    s = np.asarray(shares, np.float64)
    n = np.nan_to_num(np.asarray(nnodes, np.float64), nan=0.0)
    return np.lexsort((np.arange(len(s)), -n, -np.nan_to_num(s, nan=-1.0)))


def exposed_core_hours(overlap_s, cores, io_time_s=None, run_s=None) -> np.ndarray:
    """Core-hours each exposed job spent during an event: cores x overlap, or, where the job's Darshan
    I/O time is known, cores x the part of that I/O time falling in the overlap (spread evenly over the
    run, never more than the overlap). An upper bound on what contention cost: exposed is not slowed."""
    ov = np.asarray(overlap_s, np.float64)
    hours = ov / 3600.0
    if io_time_s is not None:
        io = np.asarray(io_time_s, np.float64)
        run = np.asarray(run_s, np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            in_io = np.minimum(ov, io * ov / run) / 3600.0
        hours = np.where(np.isfinite(in_io) & (run > 0), in_io, hours)
    return np.asarray(cores, np.float64) * hours
