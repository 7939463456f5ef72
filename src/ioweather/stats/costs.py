"""What each finding costs: an estimate of the job I/O time it accounts for (docs/darshan.md, "Cost models").

Darshan's timers are cumulative over ranks; the time a job waits for I/O is the
slowest rank's path at the top layer (`perf.io_time_s`, Carns et al.). Models that
start from cumulative storage-layer time convert it with `Clock.wall`: the saving is
assumed to be spread over ranks as the job's I/O is, so it shrinks the storage
layer's slowest path by the same share. Models that start from a wall-clock quantity
(a shared file's slowest rank, the slowest rank's excess over the mean, MPI-IO's
path minus POSIX's) use it directly. Every model is an estimate for ranking and for
the verdict, not a prediction to the second.

Savings compound rather than add (`combine`), and a finding's level follows its cost
against the bar of `Worth` (seconds, share of the run, core-hours): docs/darshan.md,
"Costs that add up" and "Severity and the verdict".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ioweather.units import format_seconds

#: A finding's levels, most severe first (a finding's declared level in stats.findings.FINDINGS, lowered by `level_for`).
LEVELS = ("HIGH", "WARN", "INFO", "OK")
#: A representative request size per Darshan size bin (the arithmetic midpoint; 1G_PLUS: 1 GiB).
BIN_BYTES = {"0_100": 50, "100_1K": 562, "1K_10K": 5632, "10K_100K": 56320, "100K_1M": 576000,
             "1M_4M": 2621440, "4M_10M": 7340032, "10M_100M": 57671680, "100M_1G": 576716800, "1G_PLUS": 1 << 30}
#: Lustre: one stripe per this many bytes of file is the most striping a file can use well.
BYTES_PER_STRIPE = 1 << 30


@dataclass(frozen=True)
class Clock:
    """The job's times that every cost is measured against."""

    io_time_s: float      # slowest rank's I/O path at the top layer (perf.io_time_s), seconds
    cumulative_s: float   # read + write + metadata time summed over the storage layer's records and ranks
    runtime_s: float
    #: the slowest path at the storage layer (perf.fs_io_time_s): what cumulative storage-layer seconds
    #: become on the clock; None: the same as io_time_s
    fs_io_time_s: float | None = None
    nprocs: int = 1

    def wall(self, cumulative_s: float) -> float:
        """Cumulative (rank-summed) storage-layer seconds as seconds of the job's I/O time: scaled by the
        storage layer's own slowest path, so that time spent above it (MPI-IO) is not credited to them."""
        base = self.io_time_s if self.fs_io_time_s is None else self.fs_io_time_s
        if self.cumulative_s <= 0 or cumulative_s <= 0:
            return 0.0
        return float(cumulative_s) * base / self.cumulative_s

    def core_hours(self, seconds: float) -> float:
        """Seconds of the job's I/O time as core-hours: every process waits for them."""
        return float(seconds) * max(int(self.nprocs), 1) / 3600.0


@dataclass(frozen=True)
class Worth:
    """The bar a saving must reach to be worth changing the job for (docs/darshan.md, "Severity").

    A saving is measured against it by `ratio`: at least `min_cost_s`, and either `min_runtime_share`
    of the run or `min_core_hours` (seconds × processes), so a 65,536-process job's 200 s matter at
    0.6 % of its run. The ratio is continuous in the saving: near-identical jobs get near-identical
    ratios, and a finding just under the bar (within `band`) is WARN, not dropped.
    """

    min_cost_s: float = 1.0
    min_runtime_share: float = 0.05
    min_core_hours: float = 100.0
    band: float = 0.5

    def floor_s(self, clock: Clock) -> float:
        """The smallest saving, in seconds, that reaches the bar."""
        by_run = self.min_runtime_share * clock.runtime_s
        if self.min_core_hours > 0:
            by_run = min(by_run, self.min_core_hours * 3600.0 / max(clock.nprocs, 1))
        return max(self.min_cost_s, by_run)

    def ratio(self, cost_s: float, clock: Clock) -> float:
        """`cost_s` over the bar (`floor_s`): 1 or more is worth changing."""
        if cost_s <= 0:
            return 0.0
        # a bar of 0 (thresholds set to 0, a log without a run time) makes any saving worth it;
        # a microsecond keeps the ratio finite for JSON
        return cost_s / max(self.floor_s(clock), 1e-6)


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


def random_saving(t_kind: float, n: float, n_random: float, b_kind: float, large_bytes: float) -> float:
    """Cumulative seconds saved by making the non-sequential requests sequential.

    Darshan counts a request as sequential (POSIX_SEQ_READS/WRITES) when it starts after the previous
    one's last byte; the others cannot be merged with their neighbours, by read-ahead, the block layer's
    merging or the application's own buffer. Sorted by offset, each run of them can be issued as requests
    of `large_bytes` (the small-request bar): as in `small_request_saving`, every request is assumed to take
    t_kind / n (latency-bound), and the non-sequential ones of mean size S = b_kind / n become S / large as
    many: saving = t_kind / n * n_random * (1 - S / large_bytes), 0 for requests of `large_bytes` or more.
    Their order then costs only a positioning, which flash and parallel file systems hide behind the
    transfer: it is not credited (a disk with heads would pay a seek per request: a lower bound there)."""
    if n <= 0 or t_kind <= 0 or n_random <= 0 or large_bytes <= 0:
        return 0.0
    mean = b_kind / n if b_kind > 0 else 0.0
    return t_kind / n * min(n_random, n) * max(0.0, 1.0 - mean / large_bytes)


def redundant_saving(extra_bytes: np.ndarray, bytes_moved: np.ndarray, t_kind: np.ndarray) -> float:
    """Cumulative seconds spent moving bytes again: each record's extra bytes at its own rate."""
    ok = (extra_bytes > 0) & (bytes_moved > 0) & (t_kind > 0)
    return float((extra_bytes[ok] / bytes_moved[ok] * t_kind[ok]).sum())


def straggler_excess(slowest: np.ndarray, total_time: np.ndarray, ranks: np.ndarray | float) -> float:
    """Wall seconds the job waits for stragglers: per file, the slowest rank's time minus
    the mean rank's time (total time / ranks that share it), summed."""
    mean = total_time / np.maximum(ranks, 1)
    return float(np.clip(slowest - mean, 0, None).sum())


def one_device_excess(slowest_s: np.ndarray, total_bytes: np.ndarray, rank_rate: np.ndarray) -> np.ndarray:
    """Per file (or job), the most a straggler's wait can shrink when every rank queues on one device whose
    bandwidth one rank's large requests already fill (one node's local disk): spread evenly, the bytes still
    cross that device, no faster than the best rate the log shows, the job's own aggregate
    (total_bytes / slowest_s) or the fastest single rank's (`rank_rate`, its bytes over its time):
    slowest_s - total_bytes / that rate, 0 when the aggregate was already the best. Ranks' bandwidths add
    only where each rank's requests are latency-bound (small), which this bound is not for."""
    t = np.asarray(slowest_s, dtype=float)
    b = np.asarray(total_bytes, dtype=float)
    rate = np.maximum(np.where(t > 0, b / np.where(t > 0, t, 1.0), 0.0), np.nan_to_num(np.asarray(rank_rate, float)))
    return np.clip(t - np.where(rate > 0, b / np.where(rate > 0, rate, 1.0), t), 0.0, None)


#: A rank's rate stands for what one stream got with every stream on the device only when the rank moved at least
#: this share of a balanced rank's bytes: a rank that read a header, or spent its time opening files, has a rate
#: of its metadata, not of the device, and would bound the saving to 0 (`concurrent_excess`)
BESIDE_MIN_SHARE = 1 / 8


def beside_ok(rank_bytes, total_bytes, streams) -> np.ndarray:
    """Whether a rank that moved `rank_bytes` of `total_bytes` over `streams` ranks moved enough for its rate to
    show the device's (BESIDE_MIN_SHARE of a balanced share)."""
    return np.asarray(rank_bytes, dtype=float) * np.asarray(streams, dtype=float) \
        >= BESIDE_MIN_SHARE * np.asarray(total_bytes, dtype=float)


def concurrent_excess(slowest_s: np.ndarray, total_bytes: np.ndarray, beside_rate: np.ndarray,
                      streams: np.ndarray | float) -> np.ndarray:
    """Per file (or job), the most a straggler's wait can shrink when the ranks' requests are latency-bound (small)
    on one device: one stream does not fill it, so the ranks' bandwidths add up, but only as far as the device
    lets them. A rank that wrote while all the others did (the fastest of a shared file, or any rank but the
    slowest: they started together and stopped first) got `beside_rate` (its bytes over its time) with every
    stream on the device; balanced, `streams` ranks move the bytes no faster than streams x that rate:
    slowest_s - total_bytes / (streams x beside_rate), 0 when the job already did; no bound (slowest_s) where the
    rate is 0 or unknown. The caller checks the rank moved enough to show the device's rate (`beside_ok`). Where
    one rank's requests fill the device, `one_device_excess`."""
    t = np.asarray(slowest_s, dtype=float)
    rate = np.nan_to_num(np.asarray(beside_rate, dtype=float)) * np.asarray(streams, dtype=float)
    b = np.asarray(total_bytes, dtype=float)
    return np.clip(t - np.where(rate > 0, b / np.where(rate > 0, rate, 1.0), 0.0), 0.0, None)


def crowded_device_saving(io_s: float, moved: float, rank_rate: float, device_rate: float,
                          streams: int) -> tuple[float, float]:
    """(m, seconds saved) of spreading one rank's stream over `streams` ranks on a device others write to,
    by per-stream fair sharing (docs/validation.md, "one-rank-io on a crowded disk, measured"): the device (the
    job's one device, not its host's every disk and volume) delivered `device_rate` bytes/s to every writer over
    the rank's I/O span (not the job's window: a crowd while it computed takes nothing), of which its one stream had
    `rank_rate`, so m = (device − rank) / rank other streams' worth of load; k streams take k / (k + m) of
    it, and the saving is io_s − moved / (device · k / (k + m)). On a device nobody else used (device rate
    at most the rank's) m = 0 and the saving is the one-device bound's (`one_device_excess`)."""
    if rank_rate <= 0 or device_rate <= 0 or moved <= 0 or streams < 1:
        return 0.0, 0.0
    m = max(0.0, device_rate / rank_rate - 1.0)
    rate = max(rank_rate, device_rate * streams / (streams + m))
    return m, max(0.0, io_s - moved / rate)


def stripe_target(size: float, osts: int) -> int:
    """The stripe count a file of `size` bytes can use: one stripe per BYTES_PER_STRIPE, at most `osts`."""
    return int(max(1, min(osts, math.ceil(size / BYTES_PER_STRIPE))))


def striping_saving(t_file: float, stripes: int, target: int) -> float:
    """Wall seconds saved by striping over `target` OSTs instead of `stripes`: the file's I/O is
    assumed bandwidth-bound on its OSTs, so its time scales as stripes / target."""
    if t_file <= 0 or target <= stripes or stripes <= 0:
        return 0.0
    return t_file * (1.0 - stripes / target)


#: Cost models that are not a saving estimate: such findings are never HIGH.
UNCOSTED = ("informational", "design note")


def is_costed(f: dict) -> bool:
    m = f.get("cost_model") or "not costed"
    return m not in UNCOSTED and not m.startswith("not costed")


def attach(findings: list[dict], clock: Clock, worth: Worth | None = None) -> list[dict]:
    """Give every finding `cost_s` (clipped to [0, io_time_s]), `cost_share` (of the I/O time),
    `cost_share_of_runtime`, `cost_core_hours` and `worth` (cost over the bar); set its level from
    its cost (`level_for`); list them by cost, most expensive first (severity, then code, on ties);
    then give each `combined_s` (`combine`). A finding's `cost_s` is set by its producer."""
    worth = worth or Worth()
    for f in findings:
        # no finding can account for more than the I/O time there is
        c = min(max(float(f.get("cost_s") or 0.0), 0.0), clock.io_time_s)
        f["cost_s"] = c
        f["cost_share"] = c / clock.io_time_s if clock.io_time_s > 0 else 0.0
        f["cost_share_of_runtime"] = c / clock.runtime_s if clock.runtime_s > 0 else 0.0
        f["cost_core_hours"] = clock.core_hours(c)
        f.setdefault("cost_model", "not costed")
        f["worth"] = worth.ratio(c, clock) if is_costed(f) else None
        f["level"] = level_for(f["level"], f["worth"], worth.band)
    findings.sort(key=lambda f: (-f["cost_s"], -severity(f["level"]), f["code"]))
    combine(findings, clock.io_time_s)
    return findings


def severity(level: str | None) -> int:
    """HIGH 4, WARN 3, INFO 2, OK 1; 0 for no level (a code this version does not know)."""
    return len(LEVELS) - LEVELS.index(level) if level in LEVELS else 0


def level_for(declared: str, worth: float | None, band: float) -> str:
    """A finding's level from the most it can be (`declared`, stats.findings.FINDINGS) and its cost.

    Uncosted (worth None): HIGH becomes WARN, as only a cost makes a finding HIGH. Costed: as declared
    at or above the bar (worth >= 1), WARN within `band` below it, INFO further down.
    """
    if declared not in ("HIGH", "WARN"):
        return declared
    if worth is None:
        return "WARN"
    if worth >= 1:
        return declared
    return "WARN" if worth >= band else "INFO"


def combine(findings: list[dict], io_time_s: float) -> float:
    """Each finding's `combined_s`: what it saves after the findings listed before it, and the total.

    Savings of different causes compound, they do not add: fixing one leaves less time for the next.
    In list order (by cost): saved = remaining × cost_share; remaining -= saved, starting from
    remaining = io_time_s, so the total never exceeds the I/O time. A finding that counts the same
    seconds as one already taken (its code in that one's `overlaps`) saves nothing more
    (`combined_s` 0, `overlapped_by` names it); uncosted and informational findings get None.
    """
    remaining = float(io_time_s)
    owner: dict[str, str] = {}
    for f in findings:
        f.pop("overlapped_by", None)
        if not is_costed(f) or f["cost_s"] <= 0:
            f["combined_s"] = None if not is_costed(f) else 0.0
            continue
        if f["code"] in owner:
            f["combined_s"] = 0.0
            f["overlapped_by"] = owner[f["code"]]
            continue
        saved = remaining * min(f["cost_share"], 1.0)
        f["combined_s"] = saved
        remaining -= saved
        for c in f.get("overlaps", ()):
            owner.setdefault(c, f["code"])
    return float(io_time_s) - remaining


def verdict(findings: list[dict], clock: Clock, io_fraction: float | None, *, worth: Worth,
            partial: list[str] | None = None, damage: dict | None = None, max_actions: int = 3) -> dict:
    """The one-line verdict: the findings worth changing (cost at or above the bar, `Worth`), by cost,
    at most `max_actions`, skipping those that count time already named (`overlaps`), and their
    combined saving (`combine`: never above the I/O time); or "nothing worth changing", naming the
    closest finding when one is within the band below the bar. Findings come from `attach`."""
    share = "-" if io_fraction is None else f"{100 * io_fraction:.1f} %"
    # a truncated DXT trace leaves the counters whole: only the timeline is short
    counters = [m for m in partial or () if not m.startswith("DXT")]
    traces = [m for m in partial or () if m.startswith("DXT")]
    note = (f" (partial log: {', '.join(counters)} ran out of Darshan's record memory, so the counters are "
            "lower bounds)") if counters else ""
    note += f" (the {', '.join(traces)} trace is truncated; the counters are complete)" if traces else ""
    if damage:
        note += (f" (damaged log: {damage['records']:,} of {damage['of']:,} {damage['module']} records with impossible "
                 "counters" + (f", e.g. {damage['example']}" if damage.get("example") else "") + ", left out)")
    taken: list[dict] = []
    covered: set[str] = set()
    for f in findings:
        if len(taken) == max_actions:
            break
        if f["level"] not in ("HIGH", "WARN") or (f.get("worth") or 0.0) < 1 or f["code"] in covered:
            continue
        taken.append(f)
        covered.add(f["code"])
        covered.update(f.get("overlaps", ()))
    if not taken:
        close = [f for f in findings if f["level"] in ("HIGH", "WARN") and (f.get("worth") or 0.0) > 0]
        closest = (f"; closest: {close[0].get('action') or close[0]['message']} (~{format_seconds(close[0]['cost_s'])}, "
                   f"under the bar of {format_seconds(worth.floor_s(clock))})") if close else ""
        text = f"I/O is {share} of the run time: nothing worth changing{closest}"
        return {"text": text + note, "actions": [], "saving_s": 0.0}
    remaining = clock.io_time_s
    for f in taken:
        remaining -= remaining * min(f["cost_share"], 1.0)
    saving = clock.io_time_s - remaining
    parts = [f"{f.get('action') or f['message']} (saves ~{format_seconds(f['cost_s'])}, "
             f"{100 * f['cost_share']:.0f} % of the I/O time{_core_hours_text(f)})" for f in taken]
    text = f"I/O is {share} of the run time; " + "; then ".join(parts)
    if len(taken) > 1:
        text += (f"; together ~{format_seconds(saving)} ({100 * saving / clock.io_time_s:.0f} % of the I/O time: "
                 "overlapping savings combined, not added)")
    return {"text": text + note, "actions": [f["code"] for f in taken], "saving_s": saving}


def _core_hours_text(f: dict) -> str:
    ch = f.get("cost_core_hours") or 0.0
    return f", ~{ch:,.0f} core-hours" if ch >= 1 else ""
