"""Findings for one job: Drishti's insight set (drishti-io 0.6) with its defects fixed, plus Carns et al.'s,
and the MPI-IO and slow-rank diagnoses of issue 27 (M08-M10, B01/B02).

Each finding is a dict: `code`, `level` (HIGH, WARN, INFO, OK: at most its code's level in
`FINDINGS`, set from its cost by costs.attach), `message`, `evidence` (the numbers it rests on),
`threshold` (the values it was tested against), `cost_s` (the job I/O time it accounts for,
stats/costs.py and docs/darshan.md "Cost models"), `cost_share` / `cost_share_of_runtime` /
`cost_core_hours`, `worth` (cost over the verdict's bar), `combined_s` (its saving after the findings
listed before it), `cost_model`, and where there is one, `action` (what to change, for the verdict)
and `fix` (a command). Findings are listed by `cost_s`, most expensive first. The rules are one
table (`RULES`) of functions of the job (`Job`).
Thresholds come from `Thresholds` (defaults = Drishti's, METHODS.md section 3.1,
plus minimum volumes so that trivial jobs get no finding) and can be overridden
from a TOML or JSON file.

Defects of the reference implementation that are fixed here:
- "small" means strictly below 1 MiB. Darshan's 100K_1M size bin includes
  requests of exactly 1 MiB (its bound is `< 1048577`), so the exact-1-MiB
  requests recorded in the common-access counters are subtracted from that bin;
- P09/P10 ("redundant traffic") test what their message says: a file read
  (written) for more bytes than its highest offset + 1;
- P17 tests metadata time per *rank* (own files summed per rank, plus an even
  share of each shared file's metadata time), not per file record;
- pandas 3 compatible (no chained assignment).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

import numpy as np

from ioweather.errors import UserError
from ioweather.stats import costs
from ioweather.stats.costs import LEVELS, severity  # noqa: F401 (re-exported: the levels are the costs')
from ioweather.stats.job import (LAYERS, PREFIX, SIZE_BINS, Cols, MiB, assign_mounts, cols, distinct, effective_ranks, fs_records,
                                  layer_rows, library_mask, member, module_rows, monitored, monitored_block,
                                  n_distinct, nan_sum, nan_sums, rank_sums, shared_rank_rows, slowest_path,
                                  storage_modules, stream_mask, subset, unique_first_inverse, zero_missing,
                                  zero_missing_block)
from ioweather.stats.lustre import lfs_size, lustre_file_columns, ost_count
from ioweather.units import format_bytes, format_seconds
# The rules' revision: bump it with any change of a finding's level, cost or message (stats/rules_revision.py
# says why it lives there: the light paths compare it without this module's numpy and pandas).
from ioweather.stats.rules_revision import RULES_REVISION  # noqa: F401 (re-exported: `jobs ingest` stamps rows with it)

#: The levels that ask for action: `jobs ingest` stores these codes per job (`finding_codes`).
ACTIONABLE = ("HIGH", "WARN")

#: Every finding's level and what it means in a few words (the messages of `job_findings` add the
#: numbers). The one table of levels: the report, the store's `finding_codes` and the dashboard,
#: which has only the stored codes, all read it.
FINDINGS = {
    "T00": ("INFO", "the job moved no data through POSIX or STDIO"),
    "T01": ("OK", "I/O is a small share of the run time: no action needed"),
    "S01": ("HIGH", "more than 10 % of the bytes through STDIO (fopen/fwrite)"),
    "M01": ("INFO", "an MPI job that does not use MPI-IO (a design note: not costed, not an action)"),
    "P01": ("INFO", "write-operation intensive"),
    "P02": ("INFO", "read-operation intensive"),
    "P03": ("INFO", "write-volume intensive"),
    "P04": ("INFO", "read-volume intensive"),
    "P05": ("HIGH", "many small reads (below 1 MiB)"),
    "P06": ("HIGH", "many small writes (below 1 MiB)"),
    "P07": ("HIGH", "requests not aligned in memory"),
    "P08": ("HIGH", "requests not aligned in the file"),
    "P09": ("WARN", "a file read for more bytes than its size: data read again"),
    "P10": ("WARN", "a file written for more bytes than its size: data written again"),
    "P11": ("HIGH", "many non-sequential reads (at or before the previous one's end)"),
    "P12": ("OK", "reads sequential, or too few non-sequential ones to matter"),
    "P13": ("HIGH", "many non-sequential writes (at or before the previous one's end)"),
    "P14": ("OK", "writes sequential, or too few non-sequential ones to matter"),
    "P15": ("HIGH", "many small reads to shared files"),
    "P16": ("HIGH", "many small writes to shared files"),
    "P17": ("HIGH", "a rank spends more than 30 s in metadata operations"),
    "P18": ("HIGH", "shared file with a straggler rank by bytes"),
    "P19": ("HIGH", "shared file with a straggler rank by time"),
    "P21": ("HIGH", "files written by several ranks with unbalanced bytes"),
    "P22": ("HIGH", "files read by several ranks with unbalanced bytes"),
    "M02": ("HIGH", "many independent MPI-IO reads and no collective ones"),
    "M03": ("HIGH", "many independent MPI-IO writes and no collective ones"),
    "M04": ("OK", "collective MPI-IO reads used"),
    "M05": ("OK", "collective MPI-IO writes used"),
    "M06": ("INFO", "no non-blocking MPI-IO reads (not costed: the compute phases are unknown)"),
    "M07": ("INFO", "no non-blocking MPI-IO writes (not costed: the compute phases are unknown)"),
    "R01": ("WARN", "all data moved by rank 0 of an MPI job"),
    "F01": ("WARN", "more than 10 files per process"),
    "L01": ("HIGH", "a large Lustre file striped over far fewer OSTs than it could use"),
    "L02": ("WARN", "Lustre stripe size not aligned with the dominant request size"),
    "L03": ("WARN", "many small Lustre files on a wide stripe"),
    "M08": ("HIGH", "MPI-IO time far above the POSIX time of the same files (MPI-IO overhead)"),
    "M09": ("HIGH", "collective buffering reads back what it writes (read-modify-write)"),
    "M10": ("HIGH", "shared-file MPI-IO on NFS"),
    "M11": ("HIGH", "collective MPI-IO calls too small to gain from collective buffering"),
    "B01": ("HIGH", "a slow rank with balanced bytes: it waited on a slow target, not on more work"),
    "B02": ("HIGH", "a slow rank that moved more bytes than the others: unbalanced work"),
    "B03": ("HIGH", "a slow rank whose extra time is a small file written slowly (a log), not its share of the data"),
    "Y01": ("HIGH", "a sync (fsync, fdatasync, MPI_File_sync) after most writes"),
    "D01": ("INFO", "impossible counters: the log is damaged, and no finding rests on the damaged records"),
}


def describe_codes(codes: list[str]) -> list[dict]:
    """Stored finding codes as {code, level, what}, most severe first (level None: a code written
    by a newer ioweather)."""
    out = []
    for c in codes:
        level, what = FINDINGS.get(c, (None, "finding not known to this version of ioweather"))
        out.append({"code": c, "level": level, "what": what})
    out.sort(key=lambda f: (-severity(f["level"]), f["code"]))
    return out


def highest_level(codes: list[str]) -> str | None:
    """The most severe level among stored codes (HIGH or WARN), None when there are none.

    A code this version does not know counts as WARN: only actionable codes are stored.
    """
    levels = [FINDINGS.get(c, ("WARN",))[0] for c in codes]
    return max(levels, key=severity) if levels else None


@dataclass(frozen=True)
class Thresholds:
    imbalance_operations: float = 0.1       # P01/P02 |writes - reads| / ops
    imbalance_size: float = 0.3             # P21/P22 (max - min) / max bytes across ranks
    small_bytes: int = 1 * MiB              # requests strictly below this are small
    small_requests: float = 0.1             # P05/P06/P15/P16 share of small requests
    small_requests_absolute: int = 1000
    misaligned_requests: float = 0.1        # P07/P08
    metadata_time_rank_s: float = 30.0      # P17
    random_operations: float = 0.2          # P11/P13
    random_operations_absolute: int = 1000
    stragglers: float = 0.15                # P18/P19
    stdio_share: float = 0.1                # S01
    collective_operations_absolute: int = 1000   # M02/M03 (independent ops)
    files_per_process: float = 10.0         # F01 (Carns et al.: up to 100 files per process)
    io_fraction_no_action: float = 0.05     # T01: I/O below this share of run time
    # minimum volumes: below them a finding does not fire (trivial jobs get "nothing worth changing")
    min_bytes: int = 16 * MiB               # S01, M01, R01, P03/P04 (bytes moved), P09/P10 (bytes moved again)
    min_operations: int = 1000              # P01/P02, P07/P08 (misaligned requests), M06/M07 (MPI-IO requests)
    min_files: int = 100                    # F01
    lustre_large_file_bytes: int = 1024 * MiB   # L01: files at least this large (highest offset + 1)
    lustre_stripe_shortfall: float = 4.0    # L01: stripe count below the usable count / this
    lustre_osts: int = 0                    # the file system's OST count; 0: highest OST index in the log + 1
    lustre_small_file_bytes: int = 1 * MiB  # L03: files smaller than this ...
    lustre_small_files: int = 100           # L03: ... at least this many of them with stripe count > 1
    verdict_min_cost_s: float = 1.0         # the verdict names findings costing at least this ...
    verdict_min_runtime_share: float = 0.05     # ... and this share of the run time (T01's 5 %) ...
    verdict_min_core_hours: float = 100.0   # ... or this many core-hours (seconds × processes)
    verdict_band: float = 0.5               # a finding within this factor under the bar is WARN, further down INFO
    mpiio_overhead_share: float = 0.25      # M08/M10: MPI-IO time above POSIX time, share of the MPI-IO time
    rmw_bytes_ratio: float = 2.0            # M09: POSIX bytes at least this many times the MPI-IO bytes ...
    rmw_write_excess: float = 0.1           # ... or POSIX writing this share more than MPI-IO was given (holes) ...
    rmw_min_switches: int = 100             # ... or many small reads, with at least this many read/write switches
    min_collective_calls: int = 100         # M11: collective calls (per rank) before their size is judged
    syncs_per_write: float = 0.1            # Y01: syncs per write on the synced files ...
    min_syncs: int = 100                    # ... and at least this many syncs

    @classmethod
    def from_mapping(cls, data, where: str) -> "Thresholds":
        """Overrides from a parsed table (flat keys, or under a `thresholds` table), checked;
        `where` names their origin in messages. The file is read by sources/thresholds_file.py, for services.jobs.darshan.load_thresholds."""
        if not isinstance(data, dict):
            raise UserError(f"{where}: expected a table of name = value")
        data = data.get("thresholds", data)
        known = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise UserError(f"{where}: unknown threshold(s) {', '.join(unknown)}; known: {', '.join(known)}")
        values = {}
        for k, v in data.items():
            # (not v >= 0: TOML's nan and inf are floats; a NaN threshold silences its rule, an int one crashed)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
                raise UserError(f"{where}: {k} must be a non-negative finite number, got {v!r}")
            values[k] = int(v) if known[k] in ("int", int) else float(v)
        return cls(**values)

    def as_dict(self) -> dict:
        return asdict(self)


def _f(code, message, evidence, threshold=None, *, cost: float = 0.0, model: str = "not costed",
       action: str | None = None, fix: str | None = None, overlaps: tuple[str, ...] = ()) -> dict:
    """A finding; `cost` in seconds of job I/O time (see stats/costs.py), `overlaps`: codes whose
    cost counts the same time (the verdict names only one of them)."""
    out = {"code": code, "level": FINDINGS[code][0], "message": message, "evidence": evidence,
           "threshold": threshold or {}, "cost_s": float(cost), "cost_model": model}
    if action:
        out["action"] = action
    if fix:
        out["fix"] = fix
    if overlaps:
        out["overlaps"] = list(overlaps)
    return out


def _share(a: float, b: float) -> float:
    return float(a / b) if b else 0.0


def small_requests(c, prefix: str, kind: str, small_bytes: int) -> tuple[int, int, float]:
    """(small requests, all requests, estimated bytes in the small ones) of `kind` from the size histogram.

    Bins wholly below `small_bytes` count fully. From the bin that contains
    `small_bytes` (Darshan's 100K_1M includes exactly 1 MiB), each record's
    accesses of exactly `small_bytes` found in its common-access counters are
    removed. Those counters mix reads and writes, so they are split in
    proportion to the record's read and write counts in that bin, and the
    result is clipped to the bin's count. Bytes: each small request counted at
    its bin's representative size (costs.BIN_BYTES).
    """
    c = cols(c)
    hist = zero_missing_block(c, _size_bins(prefix, kind) + _size_bins(prefix, "WRITE" if kind == "READ" else "READ"))
    return _small_counts(hist[:len(SIZE_EDGES)], hist[len(SIZE_EDGES):], lambda: _exact_accesses(c, prefix, small_bytes),
                         c.n, small_bytes)


#: Darshan's request-size bins and each one's upper bound (exclusive; 100K_1M includes exactly 1 MiB, see above)
SIZE_EDGES = tuple(zip(SIZE_BINS, (100, 1024, 10 * 1024, 100 * 1024, MiB, 4 * MiB, 10 * MiB, 100 * MiB, 1024 * MiB,
                                   None), strict=True))


def _size_bins(prefix: str, kind: str) -> list[str]:
    return [f"{prefix}_SIZE_{kind}_{name}" for name, _ in SIZE_EDGES]


def _exact_accesses(c: Cols, prefix: str, small_bytes: int) -> np.ndarray:
    """Per record: its accesses of exactly `small_bytes` in the common-access counters (reads and writes)."""
    exact = np.zeros(c.n)
    for i in range(1, 5):
        a, k = f"{prefix}_ACCESS{i}_ACCESS", f"{prefix}_ACCESS{i}_COUNT"
        if a in c and k in c:
            exact += np.where(c[a].astype(np.int64) == small_bytes, c[k].astype(np.float64), 0.0)
    return exact


def _small_counts(hist: np.ndarray, other: np.ndarray, exact, n: int, small_bytes: int) -> tuple[int, int, float]:
    """`small_requests` from the rows of one kind's size bins (`hist`, zero_missing, in SIZE_EDGES' order), the
    other kind's (`other`), and `exact()`, the per-record exact-size accesses (`_exact_accesses`, asked only
    when the bin bounded by `small_bytes` holds requests)."""
    small = np.zeros(n)
    small_b = 0.0
    total_n = 0.0
    # each row summed as its own 1-d sum (C-contiguous rows: numpy's pairwise sum per row), one call
    for j, ((name, upper), v_sum) in enumerate(zip(SIZE_EDGES, hist.sum(axis=1).tolist())):
        total_n += v_sum
        if upper is None or upper > small_bytes:
            continue
        v = hist[j]
        if upper < small_bytes:
            small += v
            small_b += v_sum * costs.BIN_BYTES[name]
            continue
        if not v.any():  # nothing in the bin to take the exact-size accesses out of: it adds 0
            continue
        # the bin whose upper bound is small_bytes: take out the exact-size accesses
        w = other[j]
        share = np.divide(v, v + w, out=np.zeros(n), where=(v + w) > 0)
        kept = np.clip(v - np.round(exact() * share), 0, v)
        small += kept
        small_b += kept.sum() * costs.BIN_BYTES[name]
    return int(small.sum()), int(total_n), float(small_b)


def job_clock(ch: dict) -> costs.Clock:
    tot, perf = ch["totals"], ch["perf"]
    fs = perf.get("fs_io_time_s")
    return costs.Clock(io_time_s=float(perf["io_time_s"] or 0.0),
                       cumulative_s=float(tot["read_time_s"] + tot["write_time_s"] + tot["meta_time_s"]),
                       runtime_s=float(ch["job"]["runtime_s"] or 0.0),
                       fs_io_time_s=None if fs is None else float(fs),
                       nprocs=max(int(ch["job"]["nprocs"] or 1), 1))


def job_worth(t: Thresholds) -> costs.Worth:
    return costs.Worth(min_cost_s=t.verdict_min_cost_s, min_runtime_share=t.verdict_min_runtime_share,
                       min_core_hours=t.verdict_min_core_hours, band=t.verdict_band)


def job_verdict(findings: list[dict], ch: dict, thresholds: Thresholds | None = None) -> dict:
    """{text, actions, saving_s}: the report's opening line (stats/costs.py `verdict`); `saving_s` is
    the named findings' combined saving, never above `perf.io_time_s`."""
    t = thresholds or Thresholds()
    return costs.verdict(findings, job_clock(ch), ch["perf"]["io_fraction_of_runtime"], worth=job_worth(t),
                         partial=ch["job"].get("partial_modules") or None, damage=ch["job"].get("damage"))


#: POSIX columns `Job.pz` converts together: the MPI-IO rules read these together on every log with MPI-IO
_PZ_TOGETHER = {n: names for names in (("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_READS", "POSIX_WRITES"),
                                       ("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME")) for n in names}


@dataclass
class Job:
    """What every rule reads: the log, its characterization, the thresholds and the clock."""

    log: object
    ch: dict
    t: Thresholds
    clock: costs.Clock
    nprocs: int
    _posix: object = None
    #: what several rules read, computed once (`_mpiio_files`, `_rmw`)
    cache: dict = field(default_factory=dict)

    @property
    def moved(self) -> float:
        tot = self.ch["totals"]
        return tot["bytes_read"] + tot["bytes_written"]

    def pz(self, name: str) -> np.ndarray:
        """`zero_missing` of a POSIX column over all the records, made once a job (read-only): the MPI-IO rules
        cut the records of their files from it (each value as zero_missing of the cut records gives it)."""
        key = ("pz", name)
        if key not in self.cache:
            c = cols(self.log.records["POSIX"])
            if name in _PZ_TOGETHER:
                # the columns read together converted in one block (row i is zero_missing of names[i])
                names = _PZ_TOGETHER[name]
                block = zero_missing_block(c, list(names))
                block.setflags(write=False)
                for i, n in enumerate(names):
                    self.cache[("pz", n)] = block[i]
            else:
                v = zero_missing(c, name)
                v.setflags(write=False)
                self.cache[key] = v
        return self.cache[key]

    @property
    def px(self) -> "_Posix | None":
        """The POSIX records' columns and sums (None without POSIX records), built once."""
        posix = self.log.records.get("POSIX")
        if posix is None or not len(posix):
            return None
        if self._posix is None:
            self._posix = _posix_context(posix, self.t, self.nprocs, self.clock)
            # what only the shared-file rules read (`_Posix.collective_ids`, `one_local_disk`), made when asked
            self._posix.mpiio, self._posix.mounts = self.log.records.get("MPI-IO"), self.log.mounts
            self._posix.nnodes = self.ch["job"]["nnodes"]
        return self._posix


def job_findings(log, ch: dict, thresholds: Thresholds | None = None) -> list[dict]:
    """All findings for a job, most expensive first, levels set from their costs (costs.attach).
    `ch` is `stats.job.characterize(log)`."""
    t = thresholds or Thresholds()
    clock = job_clock(ch)
    j = Job(log=log, ch=ch, t=t, clock=clock, nprocs=max(int(log.nprocs), 1))
    out: list[dict] = []
    for rule in RULES:
        out += rule(j)
    costs.attach(out, clock, job_worth(t))
    if any((f.get("worth") or 0) >= 1 and f["level"] in ACTIONABLE for f in out):
        # a small share of a long or wide run can still be worth changing: T01 would contradict it
        out = [f for f in out if f["code"] != "T01"]
    return out


def _time_share(j: Job) -> list[dict]:
    """T01 I/O a small share of the run (dropped by job_findings when a finding is worth changing anyway), T00 no data"""
    out = []
    t, ch = j.t, j.ch
    frac = ch["perf"]["io_fraction_of_runtime"]
    if frac is not None and j.moved > 0 and frac < t.io_fraction_no_action:
        out.append(_f("T01", f"I/O took {100 * frac:.1f}% of the run time (< {100 * t.io_fraction_no_action:g}%): "
                      "no action needed, even where the findings below point at inefficient access",
                      {"io_time_s": ch["perf"]["io_time_s"], "runtime_s": ch["job"]["runtime_s"], "io_fraction": frac},
                      {"io_fraction_no_action": t.io_fraction_no_action}, model="informational"))
    if j.moved == 0:
        out.append(_f("T00", "the job moved no data through POSIX, STDIO, DFS or DAOS", {"bytes": 0},
                      model="informational"))
    return out


def _damaged(j: Job) -> list[dict]:
    """D01 records with impossible counters (stats/damage.py), already left out of the log the rules read"""
    d = j.ch["job"].get("damage")
    if not d:
        return []
    return [_f("D01", f"damaged log: {d['records']:,} of {d['of']:,} {d['module']} records hold impossible counters "
               f"({'; '.join(f'{k}: {v:,}' for k, v in d['relations'].items())}"
               + (f"; e.g. {d['example']}" if d["example"] else "") + "): they are left out, and no finding rests on them",
               d, model="informational")]


def _stdio(j: Job) -> list[dict]:
    """S01 STDIO share"""
    t, moved = j.t, j.moved
    stdio = j.ch["interfaces"].get("STDIO", {})
    sb = (stdio.get("bytes_read") or 0) + (stdio.get("bytes_written") or 0)
    if moved and _share(sb, moved) > t.stdio_share and sb >= t.min_bytes:
        flushed = _stdio_flushes(j)
        if flushed is not None:
            return [flushed]
        return [_f("S01", f"{100 * sb / moved:.0f}% of the bytes ({format_bytes(sb)}) go through STDIO "
                   "(fopen/fread/fwrite): buffered stream I/O is slow for large data; use POSIX or MPI-IO",
                   {"stdio_bytes": sb, "total_bytes": moved, "share": sb / moved},
                   {"stdio_share": t.stdio_share, "min_bytes": t.min_bytes},
                   cost=_stdio_cost(j.ch, sb, j.clock), model="stdio-vs-posix-rate",
                   action="move the STDIO data to POSIX or MPI-IO")]
    return []


#: glibc gives a stream on a file a buffer of the file's st_blksize: 4 KiB on the file systems seen here
STDIO_BUFFER = 4096


def _stdio_flushes(j: Job) -> dict | None:
    """S01 costed when the streams are flushed more often than their buffer fills: each fflush is a write()
    to the kernel, where an unflushed stream makes one per buffer (STDIO_BUFFER). As in Y01's model, the
    time per kernel call is the records' write time (which Darshan's fflush wrapper adds to) over their calls:
    the saving is the share of calls that buffering removes. Lines of a few hundred bytes are per-call bound,
    so this is the right order; None when no stream is flushed more often than its buffer fills."""
    stdio = j.log.records.get("STDIO")
    if stdio is None or not len(stdio):
        return None
    c = cols(stdio)
    flushes = zero_missing(c, "STDIO_FLUSHES")
    writes = zero_missing(c, "STDIO_WRITES")
    buffered = np.ceil(zero_missing(c, "STDIO_BYTES_WRITTEN") / STDIO_BUFFER)
    sel = (flushes > buffered) & (writes > 0)
    n_flush = float(flushes[sel].sum())
    if n_flush < j.t.min_syncs:
        return None
    t_w = zero_missing(c, "STDIO_F_WRITE_TIME")[sel]
    calls = np.maximum(flushes[sel], buffered[sel])
    cost = j.clock.wall(float((t_w * (1 - buffered[sel] / calls)).sum()))
    n_w, b = float(writes[sel].sum()), float(zero_missing(c, "STDIO_BYTES_WRITTEN")[sel].sum())
    return _f("S01", f"{int(n_flush):,} fflush calls for {int(n_w):,} STDIO writes of {format_bytes(b / n_w)} on average "
              f"({int(sel.sum())} stream(s), {format_seconds(float(t_w.sum()))} of write time summed over ranks): "
              f"each flush is a call into the kernel where the stream's {format_bytes(STDIO_BUFFER)} buffer would "
              "make one per buffer; flush at the end or per record batch, or write through POSIX in large blocks",
              {"flushes": int(n_flush), "writes": int(n_w), "bytes": b, "streams": int(sel.sum()),
               "write_time_s": float(t_w.sum()), "buffer_bytes": STDIO_BUFFER},
              {"min_syncs": j.t.min_syncs}, cost=cost, model="flush-per-write",
              action=f"drop the fflush after each write ({int(n_flush):,} calls): let the stream buffer",
              # a sync after each flush (Y01) waits on the device, not in these calls; small writes are these calls
              overlaps=("P06", "P16"))


def _no_mpiio(j: Job) -> list[dict]:
    """M01 no MPI-IO in an MPI job"""
    # DFS/DAOS jobs (the libraries, or files on a dfuse mount) talk to their object store, which MPI-IO's
    # ROMIO drivers do not improve on
    if j.nprocs <= 1 or j.log.records.get("MPI-IO") is not None or j.moved < j.t.min_bytes:
        return []  # (the mounts are looked up only for a job the rest would flag)
    daos = any(len(j.log.records.get(m, ())) for m in ("DFS", "DAOS"))
    posix = j.log.records.get("POSIX")
    if not daos and posix is not None and len(posix):
        daos = any("daos" in str(x).lower() for x in set(assign_mounts(posix.names, j.log.mounts)[1].tolist()))
    if not daos:
        return [_f("M01", f"an MPI job ({j.nprocs} processes) that moved {format_bytes(j.moved)} without MPI-IO: "
                   "collective buffering and data sieving are not available to it",
                   {"nprocs": j.nprocs, "bytes": j.moved}, {"min_bytes": j.t.min_bytes}, model="design note")]
    return []


def _syncs(j: Job) -> list[dict]:
    """Y01 a sync after most writes: Darshan counts fsync/fdatasync in POSIX_FSYNCS/FDSYNCS and their
    time in POSIX_F_WRITE_TIME; the writes may be POSIX's or STDIO's to the same file (fflush + fsync)"""
    posix, t = j.log.records.get("POSIX"), j.t
    if posix is None or not len(posix):
        return []
    c = cols(posix)
    syncs = zero_missing(c, "POSIX_FSYNCS") + zero_missing(c, "POSIX_FDSYNCS")
    sel = syncs > 0
    n_sync = float(syncs.sum())
    if n_sync < t.min_syncs:
        return []
    writes = float(zero_missing(c, "POSIX_WRITES")[sel].sum())
    stdio = j.log.records.get("STDIO")
    if stdio is not None and len(stdio):
        sc = cols(stdio)
        writes += float(zero_missing(sc, "STDIO_WRITES")[member(sc["id"], c["id"][sel])].sum())
    if writes <= 0 or n_sync / writes < t.syncs_per_write:
        return []
    # each sync waits for what the writes before it left in the page cache; one per file at the end
    # would wait once for all of it: the time of the synced records but one sync's share is the saving
    t_w = zero_missing(c, "POSIX_F_WRITE_TIME")[sel]
    cost = j.clock.wall(float((t_w * (1 - 1 / syncs[sel])).sum()))
    mpi_syncs = 0
    mpiio = j.log.records.get("MPI-IO")
    if mpiio is not None and len(mpiio):
        # MPI_File_sync's own time lands in MPIIO_F_WRITE_TIME with the writes': only the fsyncs it
        # makes below (POSIX) are costed here, a lower bound
        mpi_syncs = int(zero_missing(cols(mpiio), "MPIIO_SYNCS").sum())
    how = f" ({mpi_syncs:,} MPI_File_sync calls)" if mpi_syncs else ""
    return [_f("Y01", f"{int(n_sync):,} syncs{how} on {n_distinct(c['id'][sel])} file(s) for {int(writes):,} "
               f"writes ({n_sync / writes:.2f} per write), {format_seconds(float(t_w.sum()))} of write and sync time "
               "summed over ranks: each sync waits for the device; sync once per file at the end, or per checkpoint",
               {"syncs": int(n_sync), "writes": int(writes), "syncs_per_write": n_sync / writes,
                "mpiio_syncs": mpi_syncs, "sync_files_write_time_s": float(t_w.sum())},
               {"syncs_per_write": t.syncs_per_write, "min_syncs": t.min_syncs},
               cost=cost, model="sync-per-write",
               action=f"drop the sync after each write ({int(n_sync):,} " + ("MPI_File_sync/fsync" if mpi_syncs else
                                                                             "fsync") + " calls): sync once at the end",
               # the small writes' time is mostly the syncs after them; MPI-IO's time above POSIX waits in them too
               overlaps=("P06", "P16", "M03", "M08", "M11"))]


def _posix_rules(j: Job) -> list[dict]:
    """P01-P22: the POSIX rules (POSIX_RULES), in order"""
    x = j.px
    return [f for rule in POSIX_RULES for f in rule(x)] if x is not None else []


def _mpiio_collective(j: Job) -> list[dict]:
    """M02-M07 collective and non-blocking MPI-IO; M02/M03 cost what the small requests they would
    aggregate cost (the P05/P06 model), and are not given to one process (nothing to aggregate across)"""
    out = []
    mpiio, t = j.log.records.get("MPI-IO"), j.t
    if mpiio is None or not len(mpiio):
        return out
    c = cols(mpiio)
    for kind, code_coll, code_ok, code_nb, code_small in (("READS", "M02", "M04", "M06", "P05"),
                                                          ("WRITES", "M03", "M05", "M07", "P06")):
        indep = int(nan_sum(monitored(c, f"MPIIO_INDEP_{kind}")))
        coll = int(nan_sum(monitored(c, f"MPIIO_COLL_{kind}")))
        nb = int(nan_sum(monitored(c, f"MPIIO_NB_{kind}")))
        word = kind.lower()[:-1]
        if coll == 0 and indep > t.collective_operations_absolute and j.nprocs > 1:
            cost = _small_cost(j.px, "READ" if kind == "READS" else "WRITE") if j.px is not None else 0.0
            again = _sieved_again(j, c, kind)
            cost = max(cost, again)
            sieved = (f" (data sieving: the ranks {'read' if kind == 'READS' else 'wrote'} bytes of the shared "
                      f"file again, ~{format_seconds(again)}; a collective call moves each byte once)"
                      if again > 0 and again >= cost else "")
            consec = _consecutive_share(j, c, kind)
            evidence = {"independent": indep, "collective": coll}
            if not sieved and consec is not None and consec >= CONSECUTIVE_OWN_STRETCH:
                # Each rank's next request starts where its last ended: the ranks' pieces of one call lie in
                # separate stretches, so two-phase I/O finds nothing adjacent to merge (ROMIO then passes
                # the calls through): only larger calls cut the count.
                message = (f"{indep:,} independent MPI-IO {word}s and no collective ones; each rank {word}s its own "
                           f"stretch of the file ({consec:.0%} consecutive), so collective calls would have nothing "
                           f"to merge: make each call larger")
                action = f"make each MPI-IO {word} larger (buffer a rank's consecutive pieces into one call)"
                evidence["consecutive_share"] = round(consec, 4)
            else:
                message = (f"{indep} independent MPI-IO {word}s and no collective ones{sieved}: "
                           f"use MPI_File_{word}_all so MPI-IO can aggregate requests")
                action = f"use collective MPI-IO {word}s (MPI_File_{word}_all)"
            out.append(_f(code_coll, message, evidence,
                          {"collective_operations_absolute": t.collective_operations_absolute},
                          cost=cost, model="small-requests" if cost > again else "redundant-bytes",
                          action=action,
                          overlaps=(code_small, "P15" if code_small == "P05" else "P16",
                                    "P09" if code_small == "P05" else "P10")))
        elif coll > 0:
            out.append(_f(code_ok, f"collective MPI-IO {word}s used ({coll:,} collective, {indep:,} independent)",
                          {"independent": indep, "collective": coll}, model="informational"))
        if nb == 0 and (indep + coll) >= t.min_operations:
            out.append(_f(code_nb, f"no non-blocking MPI-IO {word}s among {indep + coll:,}: MPI_File_i{word} "
                          "could overlap I/O with computation", {"nonblocking": nb, "blocking": indep + coll},
                          {"min_operations": t.min_operations},
                          model="not costed: Darshan does not record the compute phases I/O could overlap"))
    return out


#: The share of consecutive POSIX requests (each starting where the rank's last one ended) above which a
#: rank is taken to move its own stretch of the shared file, that collective calls would not merge.
CONSECUTIVE_OWN_STRETCH = 0.9


def _consecutive_share(j: Job, mc: Cols, kind: str) -> float | None:
    """Consecutive POSIX reads (or writes) ÷ all of them on the files MPI-IO accessed (None: no POSIX
    record of them, or no request)."""
    posix = j.log.records.get("POSIX")
    if posix is None or not len(posix):
        return None
    pc = cols(posix)
    sel = member(pc["id"], mc["id"])
    if not sel.any():
        return None
    return _consec(subset(pc, sel), "READ" if kind == "READS" else "WRITE")


def _consec(pc: Cols, kind: str) -> float | None:
    """Consecutive POSIX requests of `kind` (READ/WRITE) ÷ all of them in the records `pc` (None: none)."""
    n = float(zero_missing(pc, f"POSIX_{kind}S").sum())
    return float(zero_missing(pc, f"POSIX_CONSEC_{kind}S").sum()) / n if n > 0 else None


def _sieved_again(j: Job, mc: Cols, kind: str) -> float:
    """Wall seconds the POSIX layer spends moving again bytes of the files MPI-IO accessed independently
    (P09/P10's measure: bytes beyond the highest offset + 1, at the record's own rate). ROMIO's independent
    data sieving reads, and writes back, the whole region a rank's strided request spans, the other ranks'
    pieces in it included, so on a shared file the ranks move the same bytes again; a collective call's
    aggregators move each byte of the region once (two-phase I/O, Thakur et al.): these seconds are what
    collective calls remove."""
    posix = j.log.records.get("POSIX")
    if posix is None or not len(posix):
        return 0.0
    pc = cols(posix)
    sel = member(pc["id"], mc["id"])
    if not sel.any():
        return 0.0
    sc = subset(pc, sel)
    b_col, m_col, t_col = (("POSIX_BYTES_READ", "POSIX_MAX_BYTE_READ", "POSIX_F_READ_TIME") if kind == "READS"
                           else ("POSIX_BYTES_WRITTEN", "POSIX_MAX_BYTE_WRITTEN", "POSIX_F_WRITE_TIME"))
    b, m = zero_missing(sc, b_col), zero_missing(sc, m_col)
    extra = np.clip(b - (m + 1), 0, None)
    return j.clock.wall(costs.redundant_saving(extra, b, zero_missing(sc, t_col)))


def _rank0_shared(log) -> tuple[float, float] | None:
    """(bytes, seconds) of rank 0 on the shared files (rank −1 records at the storage layer) when it moved
    all of their bytes, by Darshan's rank counters (`shared_rank_rows`) at the layer the ranks called: a
    file's MPI-IO split over its POSIX one, which is ROMIO's aggregators'. (0, 0) without shared bytes;
    None when another rank moved some, or a shared file has no rank counters to tell."""
    fs = fs_records(log)
    sh = (fs["rank"] < 0) & ((fs["bytes_read"] + fs["bytes_written"]) > 0) & ~fs["stream"]
    if not sh.any():
        return 0.0, 0.0
    rows = shared_rank_rows(log)
    row_of = {(m, int(f)): k for k, (m, f, ok) in enumerate(zip(rows["module"], rows["id"], rows["ranked"])) if ok}
    b = t = 0.0
    for i in np.flatnonzero(sh):
        fid = int(fs["id"][i])
        # each file's row at the layer the ranks called: its MPI-IO one, unless that moved nothing (opened
        # through MPI-IO, written through POSIX), where 0 >= 0 would hand rank 0 every byte of the POSIX one
        k = row_of.get(("MPI-IO", fid))
        if k is None or not rows["bytes"][k] > 0:
            k = row_of.get((fs["module"][i], fid))
        if k is None or not rows["bytes"][k] > 0:
            return None
        if rows["slowest_rank"][k] == 0 and rows["slowest_bytes"][k] >= rows["bytes"][k]:
            t += float(rows["slowest_time"][k])
        elif rows["fastest_rank"][k] == 0 and rows["fastest_bytes"][k] >= rows["bytes"][k]:
            t += float(rows["fastest_time"][k])
        else:
            return None
        b += float(fs["bytes_read"][i] + fs["bytes_written"][i])
    return b, t


def _rank0(j: Job) -> list[dict]:
    """R01 rank-0-only I/O (Carns et al., section V), on its own files and the shared files (`_rank0_shared`)"""
    t, ch, nprocs, moved = j.t, j.ch, j.nprocs, j.moved
    if nprocs <= 1 or moved < t.min_bytes:  # one process, or too little data: no per-rank bytes to read
        return []
    pr_bytes = _own_bytes_per_rank(j.log, nprocs)
    shared = _rank0_shared(j.log) if pr_bytes is not None else None
    if shared is not None:
        pr_bytes = pr_bytes.copy()
        pr_bytes[0] += shared[0]
        if pr_bytes.sum() > 0 and pr_bytes[0] == pr_bytes.sum():
            # the node count unknown (no host names in the log), the processes bound the spread: an upper bound
            k = ch["job"]["nnodes"] or nprocs
            unit = "nodes" if ch["job"]["nnodes"] else "processes"
            cost, device, ev = j.clock.io_time_s * (1 - 1 / k), "", {}
            fs = fs_records(j.log)
            moved_any = (fs["bytes_read"] + fs["bytes_written"]) > 0
            _, fst = assign_mounts(fs["name"][moved_any], j.log.mounts)
            requests = float((fs["reads"] + fs["writes"])[moved_any].sum())
            if _all_local(fst) and (ch["job"]["nnodes"] or 1) <= 1 \
                    and pr_bytes[0] >= t.small_bytes * max(requests, 1.0):
                # one node's local disk and large requests (as P18/B02): rank 0's stream already has the device
                # every rank would queue on, and the ranks' bandwidths do not add up there; spreading its bytes
                # saves at most what the best rate in the log allows, rank 0's own
                t0 = float(rank_sums(fs, nprocs)["time"][0]) + shared[1]
                rate = pr_bytes[0] / t0 if t0 > 0 else 0.0
                cost = min(cost, float(costs.one_device_excess(j.clock.io_time_s, pr_bytes[0], rate)))
                device = (f"; on one node's local disk ({', '.join(sorted({str(x) for x in fst if x}))}) with requests of "
                          f"{format_bytes(pr_bytes[0] / max(requests, 1.0))} on average, the other ranks would stream "
                          f"into the same device, whose bandwidth does not add up over ranks: spreading saves at most "
                          f"{format_seconds(cost)}")
                ev = {"one_device": True, "rank0_time_s": t0}
            return [_f("R01", f"all I/O ({format_bytes(moved)}, {format_seconds(j.clock.io_time_s)}) is done by "
                       f"rank 0 of {nprocs} processes: the other ranks wait, and bandwidth is bounded by one "
                       f"process on one node{device}",
                       {"rank0_bytes": int(pr_bytes[0]), "nprocs": nprocs, "nnodes": ch["job"]["nnodes"],
                        "spread_over": int(k), "spread_unit": unit, **ev},
                       {"min_bytes": t.min_bytes, "small_bytes": t.small_bytes}, cost=cost, model="rank0-over-nodes",
                       action=f"spread the I/O of rank 0 over the job's {k} {unit} (each writes its part)")]
    return []


def _files_per_process(j: Job) -> list[dict]:
    """F01 many files per process, counting the user's data files only (not the interpreter's
    modules and libraries that a Python or shared-library start-up opens)"""
    t, nprocs = j.t, j.nprocs
    # the data files are at most the storage layer's records: too few of them, nothing to count
    records = sum(len(j.log.records.get(mod, ())) for mod in storage_modules(j.log))
    if records < t.min_files or records / nprocs <= t.files_per_process:
        return []
    files, meta, libs = _data_files(j.log)
    if files >= t.min_files and files / nprocs > t.files_per_process:
        fpp = files / nprocs
        mean_meta = meta / nprocs
        return [_f("F01", f"{files} data files for {nprocs} process(es) ({fpp:.0f} per process): "
                   "metadata cost grows with the file count; aggregate into fewer files",
                   {"files": files, "nprocs": nprocs, "files_per_process": fpp, "library_files_left_out": libs},
                   {"files_per_process": t.files_per_process, "min_files": t.min_files},
                   cost=mean_meta * (1 - t.files_per_process / fpp), model="metadata-per-file",
                   action=f"aggregate the {files} data files into fewer (≤ {t.files_per_process:g} per process)",
                   overlaps=("P17", "L03"))]
    return []


def _data_files(log) -> tuple[int, float, int]:
    """(user data files, their metadata seconds over all ranks, library files left out) at the storage layer."""
    ids, meta, lib_ids = [], 0.0, set()
    for mod in storage_modules(log):
        rec = log.records.get(mod)
        if rec is None or not len(rec):
            continue
        m = module_rows(rec)  # its meta_time: the module's F_META_TIME as zero_missing reads it
        lib = library_mask(rec.names)
        lib_ids.update(m["id"][lib].tolist())
        ids.append(m["id"][~lib])
        meta += float(m["meta_time"][~lib].sum())
    return (n_distinct(np.concatenate(ids)) if ids else 0), meta, len(lib_ids)


def _lustre(j: Job) -> list[dict]:
    """L01-L03 Lustre striping (the per-file table only for a log where one of them can fire)"""
    lu = j.log.lustre
    if lu is None or not len(lu) or j.px is None or not _lustre_may_fire(j.px, lu, j.t):
        return []
    return _lustre_findings(j.log, j.t, j.clock)


def _lustre_may_fire(x: _Posix, lu, t: Thresholds) -> bool:
    """Whether L01-L03 can fire, from bounds over all POSIX records (a Lustre file's are some of them) and all
    Lustre records (`lu`, a file's layout is one of them): L01 a record's highest offset + 1 at least
    lustre_large_file_bytes, L03 at least lustre_small_files layouts on more than one OST, L02 a dominant
    request of 64 KiB or more misaligned with a stripe size, and the records' bytes at least min_bytes."""
    if t.lustre_large_file_bytes <= 0 or t.lustre_small_files <= 0 \
            or np.count_nonzero(lu.stripe_count > 1) >= t.lustre_small_files:
        return True
    if (np.fmax(x.mon("POSIX_MAX_BYTE_READ"), x.mon("POSIX_MAX_BYTE_WRITTEN")) + 1 >= t.lustre_large_file_bytes).any():
        return True
    # L02: a file's dominant request is one of its records' and its stripe size one of the layouts': some pair
    # of those must be misaligned (neither a multiple of the other)
    acc = distinct(zero_missing(x.c, "POSIX_ACCESS1_ACCESS").astype(np.int64))
    acc, z = acc[acc >= 64 * 1024], distinct(lu.stripe_size)
    z = z[z > 0]
    if not len(acc) or not len(z) or not ((acc[:, None] % z != 0) & (z % acc[:, None] != 0)).any():
        return False
    moved = np.nan_to_num(x.mon("POSIX_BYTES_READ")) + np.nan_to_num(x.mon("POSIX_BYTES_WRITTEN"))
    # (a file's bytes are a sum of some of these: the margin covers a rounding of its sum above theirs)
    return float(np.maximum(moved, 0.0).sum()) * (1 + 1e-9) >= t.min_bytes


# ---------------------------------------------------------------------------
# MPI-IO: overhead above the file system, read-modify-write, NFS (docs/darshan.md)

#: File systems on one local device: the ranks' requests queue on it (M08's floor is their summed time).
LOCAL_FS = ("ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "zfs", "rootfs")


def _all_local(fstype) -> bool:
    """Whether the files of file-system types `fstype` (assign_mounts') are on a node's local disk: every
    one with a mount (the standard streams, <STDOUT> and <STDERR>, have none and do not decide: a job's
    stdout once made a clean run on one disk look like one on a server), and at least one."""
    known = [str(x).lower() for x in set(np.asarray(fstype, dtype=object).tolist()) if x]
    return bool(known) and all(x in LOCAL_FS for x in known)

#: MPI-IO requests at least this large (mean per call) gain nothing from collective buffering.
LARGE_MPIIO_REQUEST = 4 * MiB


#: MPI-IO hints for a ROMIO_HINTS file (one "key value" a line) or Cray MPICH's MPICH_MPIIO_HINTS.
def _romio_fix(hints: dict[str, object]) -> str:
    kv = ":".join(f"{k}={v}" for k, v in hints.items())
    return f'export MPICH_MPIIO_HINTS="*:{kv}"  (or a ROMIO_HINTS file: ' + "; ".join(f"{k} {v}" for k, v in hints.items()) + ")"


def _mpiio_files(j: Job) -> dict | None:
    """The files MPI-IO recorded, split into NFS and other mounts: per group the slowest-path time at
    MPI-IO and at the layer below (POSIX, same files, `slowest_path`), bytes, collective ops, names."""
    if "mpiio_files" not in j.cache:
        j.cache["mpiio_files"] = _mpiio_groups(j)
    return j.cache["mpiio_files"]


def _mpiio_groups(j: Job) -> dict | None:
    mpiio = j.log.records.get("MPI-IO")
    if mpiio is None or not len(mpiio):
        return None
    c = cols(mpiio)
    _, fstype = assign_mounts(mpiio.names, j.log.mounts)
    is_nfs = {x: str(x).lower().startswith("nfs") for x in set(fstype.tolist())}
    nfs = np.array([is_nfs[x] for x in fstype.tolist()], bool)
    rows = layer_rows(j.log, j.nprocs)
    # the layer's index, not its module's name: LAYER_MODULES puts MPI-IO alone in its layer and POSIX with
    # STDIO in theirs (an integer compare, not two object ones per group)
    is_m, is_p = rows["layer"] == _MPIIO_LAYER, rows["layer"] == _POSIX_LAYER
    # a file whose POSIX records hold far fewer bytes than MPI-IO moved was written past POSIX (a
    # driver that Darshan's POSIX module does not see): its MPI-IO time has no layer below to compare
    rows_m = module_rows(mpiio)
    seen = _posix_sees(j, rows_m)
    posix = j.log.records.get("POSIX")
    pcol = cols(posix) if posix is not None and len(posix) else None
    out = {}
    for group, sel in (("other", ~nfs & seen), ("nfs", nfs & seen)):
        if not sel.any():
            continue
        keys = distinct(c["id"][sel])
        in_g = member(rows["key"], keys)
        m, p = in_g & is_m, in_g & is_p
        t_m, _, _ = slowest_path(rows["rank"][m], rows["time"][m], rows["shared"][m], j.nprocs)
        t_p, _, _ = slowest_path(rows["rank"][p], rows["time"][p], rows["shared"][p], j.nprocs)
        sc, mr = subset(c, sel), subset(rows_m, sel)
        ranks = effective_ranks(sc["rank"], j.nprocs)
        # each column's sum once (the same numpy sums, added in the same order as before)
        rt, wt, mt = mr["read_time"].sum(), mr["write_time"].sum(), mr["meta_time"].sum()
        br, bw = mr["bytes_read"].sum(), mr["bytes_written"].sum()
        n_r, n_w = mr["reads"].sum(), mr["writes"].sum()
        # MPI_File_open/close/set_view/sync are collective: their time is the ranks waiting for each
        # other, which no hint changes; only the data calls' share of the MPI-IO path is compared
        m_cum = float(rt + wt + mt)
        data_share = float(rt + wt) / m_cum if m_cum > 0 else 1.0
        # on a local disk (one device) the ranks' POSIX requests queue on it: a collective call waits for
        # all of them, so the ranks' summed POSIX time is the floor, not the slowest rank's
        psel = member(pcol["id"], keys) if pcol is not None else None
        pc = subset(pcol, psel) if psel is not None else None

        def pz(name: str, psel=psel) -> np.ndarray:  # zero_missing(pc, name)
            return j.pz(name)[psel]
        p_rw = float(pz("POSIX_F_READ_TIME").sum() + pz("POSIX_F_WRITE_TIME").sum()) if pc is not None else 0.0
        local = _all_local(fstype[sel])
        floor = max(t_p, p_rw) if local else t_p
        m_n = float(n_r + n_w)
        m_b = float(br + bw)
        out[group] = {
            "keys": keys, "mpiio_time_s": t_m, "posix_time_s": t_p, "overhead_s": max(t_m * data_share - floor, 0.0),
            "data_share": data_share, "local_disk": local, "posix_floor_s": floor,
            "bytes": m_b,
            "coll_writes": float(zero_missing(sc, "MPIIO_COLL_WRITES").sum()),
            "coll_reads": float(zero_missing(sc, "MPIIO_COLL_READS").sum()),
            "write_bytes": float(bw), "read_bytes": float(br),
            "writes": float(n_w), "reads": float(n_r),
            "bytes_carrying_size": _bytes_carrying_size(j, c, sel),
            "shared": bool((ranks < 0).any() or n_distinct(ranks) > 1),
            # a shared record's collective counters sum every rank's calls: a call of the job is
            # that many of them
            "participants": int(j.nprocs if (ranks < 0).any() else max(n_distinct(ranks), 1)),
            "name": next((n for n in mpiio.names[sel] if n), None),
            "passed_through": _passed_through(pc, pz, sc, m_n, m_b, j.nprocs),
        }
    return out


def _passed_through(pc: Cols | None, pz, mc: Cols, m_n: float, m_b: float, nprocs: int) -> bool:
    """Did ROMIO hand each MPI-IO call of these files to the file system as it was, by the rank that made it?
    Then POSIX made as many requests as MPI-IO, moved the same bytes, and every rank that called MPI-IO made its
    own POSIX requests: no aggregator wrote for the others, so collective buffering was not applied (ROMIO's
    default romio_cb_write=automatic skips it for calls whose ranks' pieces do not interleave, as one contiguous
    block per rank) and no buffering hint can recover time. With buffering, the aggregators' requests follow
    the file domains and cb_buffer_size, and the other ranks make none. `pz(name)`: zero_missing of `pc`'s column."""
    if pc is None or not pc.n or m_n <= 0:
        return False
    p_n = float(pz("POSIX_READS").sum() + pz("POSIX_WRITES").sum())
    p_b = float(pz("POSIX_BYTES_READ").sum() + pz("POSIX_BYTES_WRITTEN").sum())
    if p_n != m_n or p_b != m_b:
        return False
    p_ranks, m_ranks = effective_ranks(pc["rank"], nprocs), effective_ranks(mc["rank"], nprocs)
    if (p_ranks < 0).any():
        # a shared record: Darshan keeps the fastest rank's bytes; a rank that made no POSIX request moved none
        shared = p_ranks < 0
        return bool((pz("POSIX_FASTEST_RANK_BYTES")[shared] > 0).all())
    return not (m_ranks < 0).any() and set(m_ranks.tolist()) <= set(p_ranks.tolist())


#: MPI-IO's four most common access sizes, then their counts
_ACCESS_COUNTERS = [f"MPIIO_ACCESS{i}_ACCESS" for i in range(1, 5)] + [f"MPIIO_ACCESS{i}_COUNT" for i in range(1, 5)]
#: `layer_rows`' layer of MPI-IO's records, and of POSIX's and STDIO's
_MPIIO_LAYER, _POSIX_LAYER = LAYERS.index("MPI-IO"), LAYERS.index("POSIX")


def _bytes_carrying_size(j: Job, c: Cols, sel: np.ndarray) -> float | None:
    """The call size that carries most of the bytes, from MPI-IO's four most common access sizes (per
    record, summed over records): a few tiny calls (HDF5's metadata writes beside its dataset's 4 MiB
    collective ones) drag the mean call size down but carry no bytes. None without those counters, or when
    no size carries half of the bytes they count. `c`: the MPI-IO records, `sel`: the group's rows of them."""
    by_size: dict[float, float] = {}
    # the eight counters of every record in one conversion, once a job, cut to the group (zero_missing is per
    # value: the cut of the whole's block is the block of the cut), read as Python floats (the same doubles,
    # the same products)
    if "mpiio_access" not in j.cache:
        j.cache["mpiio_access"] = zero_missing_block(c, _ACCESS_COUNTERS)
    block = j.cache["mpiio_access"]
    block = (block if sel.all() else block[:, sel]).tolist()
    for sizes, counts in zip(block[:4], block[4:]):
        for size, n in zip(sizes, counts):
            if size > 0 and n > 0:
                by_size[size] = by_size.get(size, 0.0) + size * n
    total = sum(by_size.values())
    if total <= 0:
        return None
    size, b = max(by_size.items(), key=lambda kv: kv[1])
    return size if b >= 0.5 * total else None


def _posix_sees(j: Job, mc: Cols) -> np.ndarray:
    """Per MPI-IO record (`module_rows`): do the file's POSIX records hold at least half of the bytes MPI-IO moved?"""
    m_b = mc["bytes_read"] + mc["bytes_written"]
    posix = j.log.records.get("POSIX")
    if posix is None or not len(posix):
        return m_b <= 0
    return _posix_bytes_of(j, cols(posix)["id"], mc["id"]) >= 0.5 * m_b


def _posix_bytes_of(j: Job, p_id: np.ndarray, m_id: np.ndarray) -> np.ndarray:
    """Per MPI-IO record id of `m_id`: the bytes its file's POSIX records (ids `p_id`) moved, added record by record.
    Each POSIX record is placed among MPI-IO's distinct ids (no unique of POSIX's more numerous ids): a file's
    records are added in row order, as a bincount over POSIX's own distinct ids added them."""
    p_b = j.pz("POSIX_BYTES_READ") + j.pz("POSIX_BYTES_WRITTEN")
    mk = distinct(m_id)
    at = np.minimum(np.searchsorted(mk, p_id), len(mk) - 1)
    hit = mk[at] == p_id
    per = np.bincount(at[hit], weights=p_b[hit], minlength=len(mk))
    return per[np.searchsorted(mk, m_id)]


def _stripe_count(log, keys) -> int | None:
    lu = log.lustre
    if lu is None or not len(lu):
        return None
    sel = lu.stripe_count[member(lu.id, keys)]
    return int(sel.max()) if len(sel) else None


def _mpiio_overhead(j: Job) -> list[dict]:
    """M08 MPI-IO overhead (top layer minus the layer below, slowest paths), M11 collective calls too small
    to gain from collective buffering, M10 shared-file MPI-IO on NFS. The share of the overhead that M09
    puts on collective buffering's read-modify-write (the holes it reads and writes back) is M09's."""
    groups = _mpiio_files(j)
    if not groups:
        return []
    out, t = [], j.t
    g = groups.get("other")
    coll = (g["coll_writes"] + g["coll_reads"]) if g else 0.0
    # a collective call of the job: the bytes of every rank's part of it (MPIIO_COLL_* count each rank's call)
    per_call = g["bytes"] * g["participants"] / coll if g and coll > 0 else None
    small_calls = per_call is not None and coll >= 0.5 * (g["writes"] + g["reads"]) and per_call < t.small_bytes \
        and coll / g["participants"] >= t.min_collective_calls
    if g and g["mpiio_time_s"] > 0 and g["overhead_s"] >= t.mpiio_overhead_share * g["mpiio_time_s"] \
            and (g["bytes"] >= t.min_bytes or small_calls):
        rmw = _rmw(j)
        rmw_s = min(rmw["overhead_s"], g["overhead_s"]) if rmw else 0.0
        stripes = _stripe_count(j.log, g["keys"])
        one_ost = stripes == 1
        if small_calls and not one_ost:
            out.append(_small_collective(j, g, per_call, rmw_s))
        else:
            out.append(_overhead(j, g, stripes, rmw_s))
    g = groups.get("nfs")
    g = groups.get("nfs")
    if g and g["shared"] and g["bytes"] >= t.min_bytes:
        out.append(_f("M10", f"shared-file MPI-IO on NFS ({format_bytes(g['bytes'])}, e.g. {g['name'] or 'unnamed'}): "
                      "ROMIO locks every request on NFS and NFS does not cache shared writes coherently, so it is "
                      f"slow (MPI-IO {format_seconds(g['mpiio_time_s'])} against POSIX {format_seconds(g['posix_time_s'])}"
                      "): write to the parallel file system", {"mpiio_time_s": g["mpiio_time_s"],
                                                                "posix_time_s": g["posix_time_s"],
                                                                "overhead_s": g["overhead_s"], "mpiio_bytes": g["bytes"],
                                                                "example_file": g["name"]},
                      {"min_bytes": t.min_bytes}, cost=g["overhead_s"], model="mpiio-overhead",
                      action="write the shared MPI-IO files to the parallel file system, not NFS"))
    return out


#: The rate at which collective buffering moves a byte into an aggregator's buffer and out of it: a
#: conservative memory-copy and intra-node exchange rate (an upper bound on what buffering costs a byte).
CB_COPY_RATE = float(1 << 30)


def _overhead(j: Job, g: dict, stripes: int | None, rmw_s: float) -> dict:
    """M08 on the files of `g` (`_mpiio_files`): the overhead less what M09 puts on read-modify-write,
    and, where the lever is a hint, only what the hint can recover."""
    t = j.t
    one_ost = stripes == 1
    aggregators = stripes if stripes and stripes > 1 else j.ch["job"]["nnodes"]
    # Only what the hints change is advised. ROMIO already gives collective calls collective buffering
    # with one aggregator per OST (Lustre driver) or per node and a 16 MiB buffer: naming those values
    # again recovers nothing. What a hint can change: turning buffering off where requests are large.
    hints, why, layout = {}, [], []
    for word, key in (("write", "writes"), ("read", "reads")):
        n, b = g[key], g[f"{word}_bytes"]
        if n <= 0 or b <= 0:
            continue
        coll = g[f"coll_{key}"] / n
        # the common access sizes do not say which are reads: used only when the file is read or written, not both
        size = (g["bytes_carrying_size"] or b / n) if g["reads" if key == "writes" else "writes"] <= 0 else b / n
        if size and size >= LARGE_MPIIO_REQUEST:
            hints[f"romio_cb_{word}"] = "disable"
            if not g["passed_through"]:
                why.append(f"{word}s move most of their bytes in calls of {format_bytes(size)}: collective buffering "
                           "only adds a copy and an exchange, turn it off")
        else:
            layout.append(f"{word}s average {format_bytes(b / n)}, {100 * coll:.0f} % collective")
    overhead = max(g["overhead_s"] - rmw_s, 0.0)
    cost = overhead
    if hints and g["passed_through"]:
        # nothing was buffered, so turning buffering off changes nothing: the time above POSIX is the ranks
        # waiting in the calls (the lab's large-collective control at a load of 5-18: 1 s claimed, the copy bound)
        hints, cost = {}, 0.0 if not layout else cost
        why.append("ROMIO already passed each call to the file system as it was (POSIX made the same requests, "
                   "every rank its own: collective buffering was not applied), so no hint recovers this time; it "
                   "is ranks waiting for each other in the calls: an imbalance, or a busy node")
    elif hints and not layout and not one_ost:
        # ROMIO exchanges every rank's offsets in each collective call whatever romio_cb_write says
        # (ADIOI_GEN_WriteStridedColl's MPI_Allgather, before it checks the hint): turning buffering off
        # removes only the copy through the aggregators' buffers, each byte in and out once at no less than
        # CB_COPY_RATE per aggregator; the rest is ranks waiting for each other (an imbalance, a busy node)
        exchange = 2.0 * g["bytes"] / (max(aggregators or 1, 1) * CB_COPY_RATE)
        cost = min(overhead, exchange)
        if cost < overhead:
            why.append(f"of the {format_seconds(overhead)}, turning it off recovers at most the copy and exchange of "
                       f"the bytes (~{format_seconds(cost)}); the rest is ranks waiting for each other in the "
                       "collective calls (ROMIO exchanges offsets in every one), which no hint recovers: an "
                       "imbalance, or a busy node")
    ev = {"mpiio_time_s": g["mpiio_time_s"], "posix_time_s": g["posix_time_s"], "overhead_s": g["overhead_s"],
          "data_call_share": g["data_share"], "local_disk": g["local_disk"], "posix_floor_s": g["posix_floor_s"],
          "ratio": g["mpiio_time_s"] / g["posix_time_s"] if g["posix_time_s"] > 0 else None,
          "collective_ops": int(g["coll_writes"] + g["coll_reads"]), "mpiio_bytes": g["bytes"],
          "lustre_stripe_count": stripes, "aggregators": aggregators, "read_modify_write_s": rmw_s}
    if layout:
        why.append("; ".join(layout) + ": collective buffering is already on"
                   + (f" with {aggregators} aggregators (one per " + ("OST" if stripes and stripes > 1 else "node")
                      + ")" if aggregators else "") + ", so no hint recovers this time; it is the exchange of "
                   "small, scattered pieces: lay the file out so that each rank's part is contiguous and "
                   "stripe-aligned, and make fewer, larger collective calls")
    if one_ost:
        why.append("the files are on one OST, so there is one aggregator (their number follows the stripe "
                   "count): stripe them wider first")
    levers = (["stripe the files wider (one OST means one aggregator)"] if one_ost else []) \
        + (["turn collective buffering off (" + ", ".join(f"{k}={v}" for k, v in hints.items()) + ")"] if hints
           else []) \
        + (["lay the file out contiguously per rank and make fewer, larger collective calls"] if layout else [])
    return _f("M08", f"MPI-IO takes {format_seconds(g['mpiio_time_s'])} on the slowest path against "
              f"{format_seconds(g['posix_time_s'])} of POSIX time for the same files: "
              f"{format_seconds(g['overhead_s'])} of its data calls is spent in MPI-IO above the file system"
              + (" (the summed POSIX time of the ranks, which queue on one local disk, is the floor)"
                 if g["local_disk"] and g["posix_floor_s"] > g["posix_time_s"] else "") + " (aggregation, "
              f"data exchange, locking, and waiting in collective calls for the slowest rank: fix an "
              f"imbalance first); " + "; ".join(why), ev,
              {"mpiio_overhead_share": t.mpiio_overhead_share, "min_bytes": t.min_bytes},
              cost=cost, model="mpiio-overhead", fix=_romio_fix(hints) if hints else None,
              action=" and ".join(levers),
              # on a one-OST file the lever is the stripe count, which L01 and the stragglers' advice name too
              overlaps=("L01", "P18", "P19") if one_ost else ())


def _small_collective(j: Job, g: dict, per_call: float, rmw_s: float) -> dict:
    """M11 collective calls too small to gain: each collective call of the job moves less than one large
    request (`small_bytes`) across all its ranks, so merging its pieces cannot make a large request, and
    the call's fixed cost (ROMIO allgathers every rank's offsets and exchanges the data through the
    aggregators, MPIIO_COLL_WRITES/READS counting each rank's call) is spent for nothing. Cost: MPI-IO's
    time above POSIX on those files (M08's measure), less M09's share, times the share of the calls that
    calls of `small_bytes` would not need: 1 - per_call / small_bytes."""
    t = j.t
    calls = (g["coll_writes"] + g["coll_reads"]) / g["participants"]
    overhead = max(g["overhead_s"] - rmw_s, 0.0)
    cost = overhead * max(0.0, 1.0 - per_call / t.small_bytes)
    return _f("M11", f"{calls:,.0f} collective MPI-IO calls move {format_bytes(per_call)} each across their "
              f"{g['participants']} ranks (below {format_bytes(t.small_bytes)}): collective buffering cannot merge "
              f"them into a large request, and each call pays its exchange and synchronization; MPI-IO takes "
              f"{format_seconds(g['mpiio_time_s'])} on the slowest path against {format_seconds(g['posix_time_s'])} "
              "of POSIX time for the same files. Buffer in memory and make fewer, larger collective calls "
              f"(at least {format_bytes(t.small_bytes)} per call across the ranks), or write each rank's contiguous "
              "part with independent calls",
              {"collective_calls": calls, "bytes_per_call": per_call, "ranks": g["participants"],
               "mpiio_time_s": g["mpiio_time_s"], "posix_time_s": g["posix_time_s"], "overhead_s": g["overhead_s"],
               "read_modify_write_s": rmw_s, "mpiio_bytes": g["bytes"]},
              {"small_bytes": t.small_bytes, "min_collective_calls": t.min_collective_calls,
               "mpiio_overhead_share": t.mpiio_overhead_share},
              cost=cost, model="mpiio-overhead",
              action=f"make fewer, larger collective calls ({calls:,.0f} of {format_bytes(per_call)}: buffer in "
              f"memory to at least {format_bytes(t.small_bytes)} per call)",
              overlaps=("M08",))


def _rmw(j: Job) -> dict | None:
    """Collective buffering's (or data sieving's) read-modify-write on the files MPI-IO writes, once per job.

    ROMIO writes a region that has holes (bytes no rank writes) by reading the region, merging the pieces
    and writing the whole region back (two-phase over holes, or independent data sieving): on those files
    POSIX then makes reads MPI-IO never asked for (POSIX_READS above MPIIO_READS; at the end of a new file
    they return nothing, POSIX_SIZE_READ_0_100), alternating with the writes (POSIX_RW_SWITCHES), and
    writes more bytes than MPI-IO was given (POSIX_BYTES_WRITTEN above MPIIO_BYTES_WRITTEN: the holes
    written back). Any write excess is evidence, as nothing else in MPI-IO writes bytes it was not given;
    `rmw_write_excess` (10 %) keeps a few rewritten headers out. The cost: the POSIX time of the reads not
    asked for and of the bytes written back, plus the holes' share of MPI-IO's time above POSIX on those
    files (the aggregators read, merge and exchange the whole region, holes included: the time scales with
    the bytes POSIX writes, of which the excess is the holes'). None: no read-modify-write."""
    if "rmw" in j.cache:
        return j.cache["rmw"]
    j.cache["rmw"] = None
    mpiio, posix = j.log.records.get("MPI-IO"), j.log.records.get("POSIX")
    if mpiio is None or not len(mpiio) or posix is None or not len(posix):
        return None
    t = j.t
    mr = module_rows(mpiio)
    if float(mr["bytes_written"].sum()) < t.min_bytes:  # the first condition below, before the POSIX records are cut
        return None
    mc = cols(mpiio)
    keys = distinct(mc["id"])
    pc_all = cols(posix)
    sel = member(pc_all["id"], keys)
    if not sel.any():
        return None
    pc = subset(pc_all, sel)

    def pz(name: str) -> np.ndarray:  # zero_missing(pc, name)
        return j.pz(name)[sel]
    m_bw, m_br, m_reads = float(mr["bytes_written"].sum()), float(mr["bytes_read"].sum()), float(mr["reads"].sum())
    p_bw, p_br = float(pz("POSIX_BYTES_WRITTEN").sum()), float(pz("POSIX_BYTES_READ").sum())
    p_reads = float(pz("POSIX_READS").sum())
    switches = float(pz("POSIX_RW_SWITCHES").sum())
    tiny = float(pz("POSIX_SIZE_READ_0_100").sum() + pz("POSIX_SIZE_READ_100_1K").sum())
    extra_b, extra_n = max(p_br - m_br, 0.0), max(p_reads - m_reads, 0.0)
    ratio = (p_br + p_bw) / (m_br + m_bw) if m_br + m_bw > 0 else 0.0
    written_back = max(p_bw - m_bw, 0.0)
    # interleaved: each read not asked for is followed by the write it prepares (2 switches), so a job with
    # few such reads needs only as many switches as reads
    if not (m_bw >= t.min_bytes and switches >= min(t.rmw_min_switches, extra_n) and extra_n > 0
            and (written_back >= t.rmw_write_excess * m_bw or ratio >= t.rmw_bytes_ratio
                 or tiny >= t.small_requests_absolute)):
        return None
    t_read = float(pz("POSIX_F_READ_TIME").sum())
    t_write = float(pz("POSIX_F_WRITE_TIME").sum())
    read_share = max(extra_b / p_br if p_br > 0 else 0.0, extra_n / p_reads if p_reads > 0 else 0.0)
    write_share = written_back / p_bw if p_bw > 0 else 0.0
    posix_s = j.clock.wall(t_read * min(read_share, 1.0) + t_write * write_share)
    g = (_mpiio_files(j) or {}).get("other")
    # The holes' share of the bytes, for large collective calls too. Giving them all of the time above POSIX beyond
    # the copy through the buffers (M08's bound) came from a pair whose bad run was loaded and its twin idle; in
    # one minute (the lab's pair, five runs at load 12-19) that claimed 1.1-2.2x the saving, the bytes 0.75-1.4x:
    # the twin's calls wait for cores as long (docs/validation.md, "collective-rmw in one minute")
    overhead_s = g["overhead_s"] * write_share if g else 0.0
    readers = pc["rank"][(pz("POSIX_READS") > 0) & (pz("POSIX_WRITES") > 0)]
    j.cache["rmw"] = {"m_bw": m_bw, "m_br": m_br, "p_bw": p_bw, "p_br": p_br, "extra_n": extra_n, "extra_b": extra_b,
                      "tiny": tiny, "switches": switches, "ratio": ratio, "written_back": written_back,
                      "write_share": write_share, "posix_s": posix_s, "overhead_s": overhead_s,
                      "readers": int(len(np.unique(readers)))}
    return j.cache["rmw"]


def _read_modify_write(j: Job) -> list[dict]:
    """M09 collective buffering's read-modify-write (`_rmw`): named with its evidence, costed, and the levers
    ROMIO and the I/O libraries offer"""
    r = _rmw(j)
    if r is None:
        return []
    t = j.t
    lib = ("; in PnetCDF, post the writes with ncmpi_iput_vara and flush them with one ncmpi_wait_all"
           if len(j.log.records.get("PNETCDF_FILE", ())) or len(j.log.records.get("PNETCDF_VAR", ())) else "")
    lib += ("; in HDF5, collective metadata (H5Pset_all_coll_metadata_ops, H5Pset_coll_metadata_write)"
            if len(j.log.records.get("H5F", ())) else "")
    hints = {"romio_ds_write": "disable", "cb_buffer_size": 64 * MiB}
    above = (f"; {format_seconds(r['overhead_s'])} of MPI-IO's time above POSIX is the aggregators handling the "
             f"holes ({100 * r['write_share']:.0f} % of the bytes POSIX wrote)") if r["overhead_s"] > 0 else ""
    return [_f("M09", f"collective buffering reads back what it writes: on the files MPI-IO wrote "
               f"({format_bytes(r['m_bw'])}), POSIX made {int(r['extra_n']):,} reads MPI-IO did not ask for "
               f"({int(r['tiny']):,} of them under 1 KiB; {format_bytes(r['extra_b'])} in all) with "
               f"{int(r['switches']):,} read/write switches, wrote {format_bytes(r['written_back'])} more than MPI-IO "
               f"was given and moved {r['ratio']:.1f}× the MPI-IO bytes: ROMIO reads each region before writing "
               f"the holes in it back{above}. Write whole regions (no holes: each rank's part contiguous, or the "
               f"gaps filled), or set romio_ds_write=disable and a larger cb_buffer_size{lib}",
               {"mpiio_bytes_written": r["m_bw"], "mpiio_bytes_read": r["m_br"], "posix_bytes_written": r["p_bw"],
                "posix_bytes_read": r["p_br"], "extra_reads": int(r["extra_n"]), "small_reads": int(r["tiny"]),
                "rw_switches": int(r["switches"]), "posix_over_mpiio_bytes": r["ratio"],
                "bytes_written_back": r["written_back"], "posix_time_s": r["posix_s"],
                "mpiio_overhead_s": r["overhead_s"], "ranks_reading_and_writing": r["readers"]},
               {"rmw_bytes_ratio": t.rmw_bytes_ratio, "rmw_write_excess": t.rmw_write_excess,
                "rmw_min_switches": t.rmw_min_switches, "small_requests_absolute": t.small_requests_absolute,
                "min_bytes": t.min_bytes},
               cost=r["posix_s"] + r["overhead_s"], model="read-modify-write", fix=_romio_fix(hints),
               action="stop collective buffering's read-modify-write (write whole regions without holes, or "
               "romio_ds_write=disable and a larger cb_buffer_size" + (", non-blocking aggregated writes" if lib else "")
               + ")",
               # its extra reads are small POSIX reads: P05/P15 count the same seconds; the bytes it writes back
               # are written again (P10), which independent sieving's collective cure (M03) also removes
               overlaps=("P05", "P15", "P10", "M03"))]


# ---------------------------------------------------------------------------
# a slow rank: more work, or a slow target?

def _rank_time_imbalance(j: Job) -> list[dict]:
    """B01/B02: the slowest rank's I/O time far above the mean rank's (own files, storage layer). When its
    bytes are no more than the others' (B01) it waited on something (a slow or busy OST, a contended
    server): balancing the ranks would not help; when it moved more (B02) the work is unbalanced."""
    t, nprocs = j.t, j.nprocs
    if nprocs < 2:
        return []
    fs = fs_records(j.log)
    pr = rank_sums(fs, nprocs)
    tm, by = pr["time"], pr["bytes"]
    active = (tm > 0) | (by > 0)
    if active.sum() < 2 or by.sum() < t.min_bytes:
        return []
    slow = int(np.argmax(tm))
    mean_t, mean_b = float(tm[active].mean()), float(by[active].mean())
    excess = float(tm[slow]) - mean_t
    if tm[slow] <= 0 or excess / tm[slow] <= t.stragglers:
        return []
    byte_excess = (by[slow] - mean_b) / by[slow] if by[slow] > 0 else 0.0
    ev = {"slowest_rank": slow, "slowest_time_s": float(tm[slow]), "mean_time_s": mean_t,
          "slowest_bytes": float(by[slow]), "mean_bytes": mean_b, "ranks": int(active.sum())}
    thr = {"stragglers": t.stragglers, "imbalance_size": t.imbalance_size, "min_bytes": t.min_bytes}
    # the slowest rank's own path is on the clock already: its excess over the mean rank is the wait
    cost = excess
    overlaps = ("P18", "P19", "P21", "P22", "B01", "B02", "B03")
    mine = effective_ranks(fs["rank"], nprocs) == slow
    rec_t = (fs["read_time"] + fs["write_time"] + fs["meta_time"])[mine]
    if rec_t.size:
        k = int(np.argmax(rec_t))
        rec_b = float((fs["bytes_read"] + fs["bytes_written"])[mine][k])
        # most of the excess on one file holding a sliver of the rank's bytes: a log or a progress file
        # written slowly (a flush or sync per line), not the rank's share of the data
        if rec_t[k] >= 0.5 * excess and rec_b <= 0.01 * by[slow] and rec_b < t.min_bytes:
            name = fs["name"][mine][k] or "unnamed"
            n_ops = int((fs["reads"] + fs["writes"])[mine][k])
            per_op = f", {format_seconds(rec_t[k] / n_ops)} per request" if n_ops else ""
            return [_f("B03", f"rank {slow} spent {format_seconds(tm[slow])} in I/O against a mean of "
                       f"{format_seconds(mean_t)}, and {format_seconds(rec_t[k])} of it on one small file, {name} "
                       f"({fs['module'][mine][k]}, {format_bytes(rec_b)} in {n_ops:,} requests{per_op}): the excess is "
                       "this file written slowly (a log: a flush or sync per line, on a shared file system), not the "
                       "rank's share of the data; buffer it and write it less often, or to node-local storage",
                       {**ev, "file": name, "file_time_s": float(rec_t[k]), "file_bytes": rec_b, "file_requests": n_ops},
                       thr, cost=min(float(rec_t[k]), excess), model="straggler",
                       action=f"buffer rank {slow}'s small file {name} ({format_seconds(rec_t[k])} for "
                       f"{format_bytes(rec_b)}) and write it less often",
                       overlaps=tuple(c for c in overlaps if c != "B03"))]
    if byte_excess <= t.imbalance_size:
        osts = _rank_osts(j.log, slow)
        _, fstype = assign_mounts(fs["name"][mine], j.log.mounts)
        moved = ((fs["bytes_read"] + fs["bytes_written"]) > 0)[mine]
        if _all_local(fstype[moved]) \
                and (j.ch["job"]["nnodes"] or 1) <= 1:
            # one node's local disk is one device every rank queues on (as in _mpiio_files): the slowest
            # rank's excess is its place in that queue, not a slow target it could avoid; no lever, no cost
            return [_f("B01", f"rank {slow} spent {format_seconds(tm[slow])} in I/O against a mean of "
                       f"{format_seconds(mean_t)} with balanced bytes, on a local disk ("
                       f"{', '.join(sorted({str(x) for x in fstype[moved] if x}))}) that all ranks share: its excess is "
                       "its place in the device's queue, not a slow target to avoid", {**ev, "osts": osts}, thr,
                       model="informational")
                    | {"level": "INFO"}]
        lustre = osts or any(str(x).lower().startswith("lustre") for x in fstype)
        kinds = sorted({str(x) for x in fstype if x}) or ["an unknown file system"]
        where = (f" Its files sit on OST(s) {osts}: check them (lfs check osts, the server weather during the run)"
                 if osts else " Check the OSTs of its files (lfs getstripe) and the server weather during the run"
                 if lustre else f" Its files are on {', '.join(kinds)}: check that server's load (the weather) "
                 "during the run")
        cure = ("; restripe its files over more OSTs or avoid the slow one(s) (lfs setstripe -o / a pool), rather "
                "than rebalancing ranks" if lustre else "; rebalancing the ranks would not help")
        return [_f("B01", f"rank {slow} spent {format_seconds(tm[slow])} in I/O against a mean of "
                   f"{format_seconds(mean_t)}, but moved {format_bytes(by[slow])} against a mean of "
                   f"{format_bytes(mean_b)}: the bytes are balanced, so it waited on a slow target or contention, "
                   f"not on more work.{where}{cure}",
                   {**ev, "osts": osts}, thr, cost=cost, model="straggler",
                   action=f"find what rank {slow} waited on (" + (f"its OSTs{': ' + osts if osts else ''}" if lustre
                                                                    else "its file system's server") + "), not rebalance",
                   overlaps=tuple(c for c in overlaps if c != "B01"))]
    # one node's local disk and the slow rank's requests large: its stream fills the device every rank queues
    # on, so spreading its bytes saves only what the device's best rate in the log allows (as P18)
    moved_any = (fs["bytes_read"] + fs["bytes_written"]) > 0
    _, fst = assign_mounts(fs["name"][moved_any], j.log.mounts)
    requests = float((fs["reads"] + fs["writes"])[mine].sum())
    device = ""
    if _all_local(fst) and (j.ch["job"]["nnodes"] or 1) <= 1 \
            and by[slow] >= t.small_bytes * max(requests, 1.0):
        rates = np.where(tm[active] > 0, by[active] / np.where(tm[active] > 0, tm[active], 1.0), 0.0)
        cost = min(cost, float(costs.one_device_excess(tm[slow], by[active].sum(), rates.max())))
        device = (f"; on one node's local disk ({', '.join(sorted({str(x) for x in fst if x}))}) with requests of "
                  f"{format_bytes(by[slow] / max(requests, 1.0))} on average, every rank streams into the same device, "
                  f"whose bandwidth does not add up over ranks: balancing saves at most {format_seconds(cost)}")
        ev = {**ev, "one_device": True}
    elif _all_local(fst) and (j.ch["job"]["nnodes"] or 1) <= 1 and active.sum() > 1:
        # small requests on one node's disk: the ranks' streams add up, as far as the device lets them; the other
        # ranks, each writing beside all of them, show how far (costs.concurrent_excess)
        others = active & (np.arange(len(tm)) != slow) & (tm > 0) \
            & costs.beside_ok(by, by[active].sum(), int(active.sum()))
        with np.errstate(over="ignore"):  # a damaged record's time can be tiny beside its bytes: no rate then
            rates = by[others] / tm[others]
        beside = float(rates[np.isfinite(rates)].max()) if np.isfinite(rates).any() else 0.0
        bound = float(costs.concurrent_excess(tm[slow], by[active].sum(), beside, int(active.sum())))
        if beside > 0 and bound < cost:
            cost = bound
            device = (f"; on one node's local disk ({', '.join(sorted({str(x) for x in fst if x}))}) the fastest of "
                      f"the other ranks got {format_bytes(beside)}/s while all wrote, so {int(active.sum())} balanced ranks move "
                      f"the bytes no faster than {format_bytes(beside * int(active.sum()))}/s: balancing saves at "
                      f"most {format_seconds(cost)}")
            ev = {**ev, "beside_rate": beside}
    return [_f("B02", f"rank {slow} spent {format_seconds(tm[slow])} in I/O against a mean of "
               f"{format_seconds(mean_t)} and moved {format_bytes(by[slow])} against a mean of "
               f"{format_bytes(mean_b)}: the work is unbalanced; spread the bytes evenly over the ranks{device}",
               ev, {**thr, "small_bytes": t.small_bytes}, cost=cost, model="straggler", action=f"balance the bytes across ranks (rank {slow} moves "
               f"{by[slow] / mean_b:.1f}× the mean)" if mean_b > 0 else "balance the bytes across ranks",
               overlaps=tuple(c for c in overlaps if c != "B02"))]


def _rank_osts(log, rank: int) -> str:
    """The OSTs of the files `rank` opened itself (Darshan's Lustre records are per rank), as text."""
    lu = log.lustre
    if lu is None or not len(lu):
        return ""
    osts = sorted({int(o) for v in lu.ost_ids[lu.rank == rank] for o in str(v).split(",")
                   if o.strip().lstrip("-").isdigit()})
    if not osts:
        return ""
    return ", ".join(str(o) for o in osts[:8]) + (f" and {len(osts) - 8} more" if len(osts) > 8 else "")


def _stdio_cost(ch: dict, sb: float, clock: costs.Clock) -> float:
    st, px = ch["interfaces"].get("STDIO", {}), ch["interfaces"].get("POSIX", {})
    t_stdio = sum(st.get(k) or 0.0 for k in ("read_time_s", "write_time_s", "meta_time_s"))
    pb = (px.get("bytes_read") or 0) + (px.get("bytes_written") or 0)
    pt = (px.get("read_time_s") or 0.0) + (px.get("write_time_s") or 0.0)
    if pb <= 0 or pt <= 0:
        return 0.0  # no POSIX rate to compare with
    return clock.wall(max(0.0, t_stdio - sb / (pb / pt)))


def _lustre_findings(log, t: Thresholds, clock: costs.Clock) -> list[dict]:
    """L01-L03. Which files each rule selects is decided on the per-file arrays; the rows the messages show
    are read from them as the per-file DataFrame gave them (`_LustreRows`), only for a rule that
    fires (issue 40: the table, the OST count and a stripe target per file were 9 % of an ingest; building the
    DataFrame where a rule fired, 60 % of the rules' time on the public Lustre logs)."""
    a = lustre_file_columns(log)
    if a is None or not len(a["id"]):
        return []
    out = []

    size, count = a["size"], a["stripe_count"]
    # L01: large files on far fewer OSTs than they could use
    large = size >= t.lustre_large_file_bytes
    osts = t.lustre_osts or (ost_count(log.lustre) if large.any() else 0)
    target = np.zeros(len(size), np.int64)  # only a large file's is compared
    for i in np.flatnonzero(large):
        target[i] = costs.stripe_target(size[i], osts)
    l01 = large & (count * t.lustre_stripe_shortfall < target)
    if l01.any():
        big = _LustreRows(a, l01, target=target)
        saving = np.array([costs.striping_saving(w_s, n, tg) for w_s, n, tg in
                           zip(big.values("wall_s"), big.values("stripe_count"), big.values("target"))])
        w = big.iloc[int(np.argmax(saving))]
        one = w["movers"] == 1 and w["bytes"] > 0
        who = (f"all of its bytes moved by one rank (rank {w['top_rank']})" if one
               else f"moved by at least {w['movers']} of its {w['nranks']} ranks")
        where = _setstripe_target([w["name"]], log.mounts)
        fix = f"lfs setstripe -c {int(w['target'])} -S {lfs_size(max(int(w['stripe_size']), MiB))} {where}"
        out.append(_f("L01", f"{len(big)} large Lustre file(s) striped over too few OSTs; worst: "
                      f"{w['name'] or 'unnamed'} ({format_bytes(w['size'])}, {format_bytes(w['bytes'])} moved, "
                      f"{format_seconds(w['wall_s'])}) on {w['stripe_count']} OST(s) of ≥ {osts}, {who}. Before "
                      f"creating it: {fix}" + ("; and write it from several ranks (collective MPI-IO)" if one else "")
                      + _other_files(big, saving, int(np.argmax(saving))),
                      {"files": int(len(big)), "worst_file": w["name"], "size_bytes": float(w["size"]),
                       "bytes": float(w["bytes"]), "stripe_count": int(w["stripe_count"]),
                       "usable_stripe_count": int(w["target"]), "fs_osts": osts, "ranks_moving": int(w["movers"]),
                       "top_rank": _plain(w["top_rank"]), "file_time_s": float(w["wall_s"])},
                      {"lustre_large_file_bytes": t.lustre_large_file_bytes,
                       "lustre_stripe_shortfall": t.lustre_stripe_shortfall, "lustre_osts": t.lustre_osts},
                      cost=float(saving.sum()), model="striping", fix=fix,
                      action=(f"stripe the {format_bytes(w['size'])} file {w['name'] or ''} over {int(w['target'])} "
                              f"OSTs, not {w['stripe_count']}" + (", and share its I/O out from the one rank that "
                                                                  "does it all" if one else "") + f" ({fix})"),
                      overlaps=("P18", "P19")))
    # L02: stripe size vs dominant request size
    acc = a["access"]
    z = a["stripe_size"]
    ok = (acc >= 64 * 1024) & (z > 0) & (a["bytes"] >= t.min_bytes)
    mis = ok & (acc % np.maximum(z, 1) != 0) & (z % np.maximum(acc, 1) != 0)
    if mis.any():
        m = _LustreRows(a, mis)
        saving = sum(costs.misaligned_saving(rw, 1.0, acc_, ss) for rw, acc_, ss in
                     zip(m.values("rw_s"), m.values("access"), m.values("stripe_size")))
        w = m.iloc[int(np.argmax(m.column("bytes")))]
        fix = (f"lfs setstripe -S {lfs_size(int(w['access']))} {_setstripe_target([w['name']], log.mounts)}" if w["access"] % (64 * 1024) == 0 else None)
        out.append(_f("L02", f"{int(mis.sum())} Lustre file(s) whose dominant request size does not divide into "
                      f"their stripe size, nor the reverse (worst: {w['name'] or 'unnamed'}, requests of "
                      f"{format_bytes(w['access'])} on {format_bytes(w['stripe_size'])} stripes): requests straddle "
                      "OSTs; " + (f"use {fix}" if fix else "make the request size a multiple of the stripe size"),
                      {"files": int(mis.sum()), "worst_file": w["name"], "request_bytes": int(w["access"]),
                       "stripe_size_bytes": int(w["stripe_size"])}, {"min_bytes": t.min_bytes},
                      cost=clock.wall(saving), model="misaligned", fix=fix,
                      action="align the Lustre stripe size with the request size"))
    # L03: many small files on a wide stripe
    l03 = (size < t.lustre_small_file_bytes) & (count > 1)
    if l03.any() and int(l03.sum()) >= t.lustre_small_files:  # (lustre_small_files = 0: not on no file at all)
        small = _LustreRows(a, l03)
        # the mean and sum pandas takes of the table's columns: the sum of the counts as float64 over their number,
        # the NaN-skipping sum of the seconds (each numpy's pairwise sum of the same contiguous values)
        c_mean = float(small.column("stripe_count").sum(dtype=np.float64) / np.float64(len(small)))
        where = _setstripe_target(small.values("name"), log.mounts)
        fix = f"lfs setstripe -c 1 {where}"
        out.append(_f("L03", f"{len(small)} Lustre files smaller than {format_bytes(t.lustre_small_file_bytes)} "
                      f"are striped over {c_mean:.0f} OSTs on average: each open and close talks to every OST; {fix}",
                      {"files": int(len(small)), "mean_stripe_count": c_mean},
                      {"lustre_small_file_bytes": t.lustre_small_file_bytes, "lustre_small_files": t.lustre_small_files},
                      cost=clock.wall(float(nan_sum(small.column("meta_s"))) * (1 - 1 / c_mean)), model="small-files-striping",
                      fix=fix, action=f"put the small files on one stripe: {fix}", overlaps=("F01", "P17")))
    return out


class _LustreRows:
    """The rows `mask` selects of `lustre_file_columns`' arrays (plus columns given as keywords), read as the
    per-file DataFrame of them gave them to L01-L03: `iloc[i]` a row of numpy scalars with a missing
    name as NaN (pandas 3 makes the names a string column, whose missing value is NaN), `values` a column as
    itertuples gives it (Python numbers), `column` the numpy column."""

    def __init__(self, columns: dict[str, np.ndarray], mask: np.ndarray, **extra: np.ndarray):
        self._cols, self._at = {**columns, **extra}, np.flatnonzero(mask)

    def __len__(self) -> int:
        return len(self._at)

    def column(self, name: str) -> np.ndarray:
        return self._cols[name][self._at]

    def values(self, name: str) -> list:
        v = self.column(name).tolist()
        return [np.nan if x is None else x for x in v] if name == "name" else v

    @property
    def iloc(self) -> _LustreRows:
        return self

    def __getitem__(self, i: int) -> dict:
        k = self._at[i]
        row = {c: v[k] for c, v in self._cols.items()}
        if row["name"] is None:
            row["name"] = np.nan
        return row


def _plain(v):
    """A numpy scalar as the Python number it holds (an int stays an int, a float a float), else `v`: the
    report crosses a pickle to `job`'s parent, which would import numpy (~0.1 s) to read one numpy int."""
    return v.item() if hasattr(v, "item") else v


def _other_files(big, saving: np.ndarray, worst: int, n: int = 3) -> str:
    """The other files L01 costs, each with its saving: a second slow file must not hide behind the worst."""
    rest = [i for i in np.argsort(-saving) if i != worst][:n]
    if not rest:
        return ""
    parts = [f"{big.iloc[i]['name'] or 'unnamed'} ({format_bytes(big.iloc[i]['size'])} on "
             f"{big.iloc[i]['stripe_count']} OST(s), {format_seconds(big.iloc[i]['wall_s'])}, saves "
             f"~{format_seconds(saving[i])})" for i in rest]
    return "; also " + ", ".join(parts)


def _setstripe_target(names, mounts: list[tuple[str, str]]) -> str:
    """What `lfs setstripe` should name for these files: the directory holding most of them (new files
    take its layout). Never a mount root, whose layout every user of the file system inherits: for
    files directly under one, the file itself (setstripe on a new name creates it with the layout)."""
    names = [str(n) for n in names if n and "/" in str(n)]
    if not names:
        return "<directory of the file>"
    dirs = [n.rsplit("/", 1)[0] or "/" for n in names]
    top = max(dict.fromkeys(dirs), key=dirs.count)
    roots = {m.rstrip("/") or "/" for m, _ in mounts} | {"/"}
    if top in roots:
        return next(n for n, d in zip(names, dirs) if d == top)
    return top


def _own_bytes_per_rank(log, nprocs: int) -> np.ndarray | None:
    parts = []
    for mod in ("POSIX", "STDIO"):
        rec = log.records.get(mod)
        if rec is None or not len(rec):
            continue
        m = module_rows(rec)
        r = effective_ranks(m["rank"], nprocs)
        b = m["bytes_read"] + m["bytes_written"]
        keep = (r >= 0) & (b > 0)
        # <STDOUT>/<STDERR> writes are not data I/O (the names of the kept records only)
        at = np.flatnonzero(keep)
        keep[at] = ~stream_mask(rec.names[at])
        parts.append((r[keep], b[keep]))
    if not parts:
        return None
    r = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    if not len(r):
        return np.zeros(nprocs)
    return np.bincount(r, weights=b, minlength=nprocs)


@dataclass
class _Posix:
    """What the POSIX rules read: the records' columns (`c`), the job's sums, the thresholds and the clock."""

    c: object
    posix: object
    t: Thresholds
    nprocs: int
    clock: costs.Clock
    ranks: np.ndarray
    shared_mask: np.ndarray
    reads: float
    writes: float
    br: float
    bw: float
    t_read: float
    t_write: float
    #: the log's MPI-IO records, its mounts and node count: `collective_ids` and `one_local_disk` read them
    mpiio: object = None
    mounts: list = field(default_factory=list)
    nnodes: int | None = None
    #: what several rules read, made once (`small`, `shared_c`; issue 40)
    memo: dict = field(default_factory=dict, repr=False)
    #: `monitored` of _POSIX_COLUMNS (one read-only row each), and each row's NaN-skipping sum: read by `mon`, `sum`
    block: np.ndarray = field(default=None, repr=False)
    block_sums: np.ndarray = field(default=None, repr=False)

    @property
    def collective_ids(self) -> np.ndarray | None:
        """Record ids of the files MPI-IO wrote or read collectively (their POSIX I/O is done by aggregators);
        None without MPI-IO records."""
        if "collective_ids" not in self.memo:
            ids = None
            if self.mpiio is not None and len(self.mpiio):
                mc = cols(self.mpiio)
                coll = zero_missing(mc, "MPIIO_COLL_WRITES") + zero_missing(mc, "MPIIO_COLL_READS")
                ids = distinct(mc["id"][coll > 0])
            self.memo["collective_ids"] = ids
        return self.memo["collective_ids"]

    @property
    def one_local_disk(self) -> bool:
        """Every file on one node's local disk (LOCAL_FS): one device all ranks queue on."""
        if "one_local_disk" not in self.memo:
            self.memo["one_local_disk"] = (self.nnodes or 1) <= 1 \
                and _all_local(assign_mounts(self.posix.names, self.mounts)[1])
        return self.memo["one_local_disk"]

    def mon(self, column: str) -> np.ndarray:
        """`monitored` of one of _POSIX_COLUMNS (-1 as NaN)."""
        return self.block[_POSIX_INDEX[column]]

    def sum(self, column: str) -> float:
        """The records' NaN-skipping sum of one of _POSIX_COLUMNS."""
        return float(self.block_sums[_POSIX_INDEX[column]])

    def _sizes(self, shared: bool) -> np.ndarray:
        """Both kinds' size bins (READ's then WRITE's, SIZE_EDGES' order) of the records or the shared ones, in one
        block converted once and cut for the shared records (each value as `small_requests` reads it)."""
        if "sizes" not in self.memo:
            self.memo["sizes"] = zero_missing_block(self.c, _size_bins("POSIX", "READ") + _size_bins("POSIX", "WRITE"))
        if not shared:
            return self.memo["sizes"]
        if "shared_sizes" not in self.memo:
            self.memo["shared_sizes"] = self.memo["sizes"][:, self.shared_mask]
        return self.memo["shared_sizes"]

    def may_be_small(self, kind: str, shared: bool = False) -> bool:
        """Whether `small(kind, shared)` can pass P05/P06's (P15/P16's) thresholds: its small requests are at most
        the requests in the bins up to the one bounded by `small_bytes` (the exact-size ones not taken out)."""
        sizes, k, t = self._sizes(shared), len(SIZE_EDGES), self.t
        row_sums = sizes[:k] if kind == "READ" else sizes[k:]
        total_n, upper = 0.0, 0.0
        for (_, bound), v_sum in zip(SIZE_EDGES, row_sums.sum(axis=1).tolist()):
            total_n += v_sum
            if bound is not None and bound <= t.small_bytes:
                upper += v_sum
        upper *= 1 + 1e-9  # (a margin for the rounding of counts beyond 2**53)
        return bool(total_n) and upper / total_n > t.small_requests and upper > t.small_requests_absolute

    def small(self, kind: str, shared: bool = False) -> tuple[int, int, float]:
        """`small_requests` of `kind` over the records (`shared`: over the shared records)."""
        key = ("small", kind, shared)
        if key not in self.memo:
            sizes, k = self._sizes(shared), len(SIZE_EDGES)
            read, write = sizes[:k], sizes[k:]
            hist, other = (read, write) if kind == "READ" else (write, read)
            self.memo[key] = _small_counts(hist, other, lambda: self._exact(shared), sizes.shape[1], self.t.small_bytes)
        return self.memo[key]

    def _exact(self, shared: bool) -> np.ndarray:
        if "exact" not in self.memo:
            self.memo["exact"] = _exact_accesses(self.c, "POSIX", self.t.small_bytes)
        return self.memo["exact"][self.shared_mask] if shared else self.memo["exact"]

    def shared_c(self):
        """The shared records' columns (`shared_mask`)."""
        if "shared_c" not in self.memo:
            self.memo["shared_c"] = subset(self.c, self.shared_mask)
        return self.memo["shared_c"]

    @property
    def f(self):
        return self.c

    @property
    def ops(self) -> float:
        return self.reads + self.writes


#: The POSIX columns the rules read as `monitored` (-1 as NaN), converted once a log (`_Posix.mon`)
_POSIX_COLUMNS = ("POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_F_READ_TIME",
                  "POSIX_F_WRITE_TIME", "POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN", "POSIX_SEQ_READS",
                  "POSIX_SEQ_WRITES", "POSIX_MEM_NOT_ALIGNED", "POSIX_FILE_NOT_ALIGNED")
_POSIX_INDEX = {name: i for i, name in enumerate(_POSIX_COLUMNS)}


def _posix_context(posix, t: Thresholds, nprocs: int, clock: costs.Clock) -> _Posix:
    c = cols(posix)
    block = monitored_block(c, list(_POSIX_COLUMNS))
    block.setflags(write=False)
    # each row's nan_sum (a row summed as its own 1-d sum)
    sums = nan_sums(block)
    sums.setflags(write=False)
    reads, writes, br, bw, t_read, t_write = (float(sums[_POSIX_INDEX[k]]) for k in (
        "POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_F_READ_TIME",
        "POSIX_F_WRITE_TIME"))
    return _Posix(c=c, posix=posix, t=t, nprocs=nprocs, clock=clock, ranks=c["rank"],
                  shared_mask=(c["rank"] < 0) & (nprocs > 1), reads=reads, writes=writes, br=br, bw=bw,
                  t_read=t_read, t_write=t_write, block=block, block_sums=sums)


def _small_cost(x: _Posix, kind: str) -> float:
    """Wall seconds the small requests of `kind` (READ/WRITE) cost: the P05/P06 model, which M02/M03 share."""
    small, n, small_b = x.small(kind)
    t_kind, b_kind = (x.t_read, x.br) if kind == "READ" else (x.t_write, x.bw)
    return x.clock.wall(costs.small_request_saving(t_kind, n, small, b_kind, small_b, x.t.small_bytes))


def _intensity(x: _Posix) -> list[dict]:
    """P01/P02 operation intensity, P03/P04 volume intensity"""
    out = []
    t, reads, writes, br, bw = x.t, x.reads, x.writes, x.br, x.bw
    ops = x.ops
    if ops >= t.min_operations and abs(writes - reads) / ops > t.imbalance_operations:
        code, what = ("P01", "write") if writes > reads else ("P02", "read")
        out.append(_f(code, f"the job is {what}-operation intensive ({int(writes):,} writes, {int(reads):,} reads)",
                      {"reads": int(reads), "writes": int(writes)},
                      {"imbalance_operations": t.imbalance_operations, "min_operations": t.min_operations},
                      model="informational"))
    if br + bw >= t.min_bytes and abs(bw - br) / (br + bw) > t.imbalance_operations:
        code, what = ("P03", "write") if bw > br else ("P04", "read")
        out.append(_f(code, f"the job is {what}-volume intensive ({format_bytes(bw)} written, {format_bytes(br)} read)",
                      {"bytes_read": int(br), "bytes_written": int(bw)},
                      {"imbalance_operations": t.imbalance_operations, "min_bytes": t.min_bytes}, model="informational"))
    return out


def _small_requests_rule(x: _Posix) -> list[dict]:
    """P05/P06 small requests (all files), P15/P16 on shared files"""
    out = []
    c, t, clock, br, bw = x.c, x.t, x.clock, x.br, x.bw
    t_read, t_write, shared_mask = x.t_read, x.t_write, x.shared_mask
    for kind, code, code_sh, b_kind, t_col in (("READ", "P05", "P15", br, "POSIX_F_READ_TIME"),
                                               ("WRITE", "P06", "P16", bw, "POSIX_F_WRITE_TIME")):
        # (each count is made only where a bound of it passes the thresholds)
        small, n, small_b = x.small(kind) if x.may_be_small(kind) else (0, 0, 0.0)
        word = kind.lower()
        t_kind = t_read if kind == "READ" else t_write
        thr = {"small_bytes": t.small_bytes, "small_requests": t.small_requests,
               "small_requests_absolute": t.small_requests_absolute}
        if n and small / n > t.small_requests and small > t.small_requests_absolute:
            cost = _small_cost(x, kind)
            # a rank that moves its own consecutive stretch gains nothing from collective calls (nothing to merge)
            own = (_consec(c, kind) or 0.0) >= CONSECUTIVE_OWN_STRETCH
            how = ("buffering in the process" if x.nprocs <= 1 else
                   "buffering in each process" if own else "buffering, MPI-IO collective")
            out.append(_f(code, f"{small:,} of {n:,} {word}s ({100 * small / n:.0f}%) are smaller than "
                          f"{format_bytes(t.small_bytes)}: aggregate them into larger requests ({how})",
                          {"small": small, "total": n, "share": small / n, "small_bytes_estimate": small_b}, thr,
                          cost=cost, model="small-requests", action=f"aggregate the {small:,} small {word}s",
                          overlaps=(code_sh, "M02" if kind == "READ" else "M03", "P11" if kind == "READ" else "P13")))
        if shared_mask.any() and x.may_be_small(kind, shared=True):
            sc = x.shared_c()
            small_s, n_s, small_bs = x.small(kind, shared=True)
            if n_s and small_s / n_s > t.small_requests and small_s > t.small_requests_absolute:
                b_s = float(nan_sum(monitored(sc, f"POSIX_BYTES_{'READ' if kind == 'READ' else 'WRITTEN'}")))
                t_s = float(nan_sum(monitored(sc, t_col)))
                cost_s = clock.wall(costs.small_request_saving(t_s, n_s, small_s, b_s, small_bs, t.small_bytes))
                own_s = (_consec(sc, kind) or 0.0) >= CONSECUTIVE_OWN_STRETCH
                lever = ("each rank's are consecutive, its own stretch, so collective calls would have nothing to "
                         "merge: make each request larger" if own_s else "use collective MPI-IO on shared files")
                out.append(_f(code_sh, f"{small_s:,} of {n_s:,} {word}s to shared files are smaller than "
                              f"{format_bytes(t.small_bytes)}: {lever}",
                              {"small": small_s, "total": n_s, "share": small_s / n_s}, thr,
                              cost=cost_s, model="small-requests",
                              action=(f"make the small shared-file {word}s larger" if own_s else
                                      f"use collective MPI-IO for the small shared-file {word}s"),
                              overlaps=(code, "M02" if kind == "READ" else "M03")))
    return out


def _misalignment(x: _Posix) -> list[dict]:
    """P07/P08 misalignment"""
    out = []
    c, t, clock, br, bw = x.c, x.t, x.clock, x.br, x.bw
    t_read, t_write, ops = x.t_read, x.t_write, x.ops
    mem, fil = x.sum("POSIX_MEM_NOT_ALIGNED"), x.sum("POSIX_FILE_NOT_ALIGNED")
    if ops:
        unit = None
        for code, val, what in (("P07", mem, "memory"), ("P08", fil, "file")):
            if val / ops > t.misaligned_requests and val >= t.min_operations:
                if unit is None:  # the median only for a finding that shows it
                    align = monitored(c, "POSIX_FILE_ALIGNMENT")
                    unit = float(np.nanmedian(align)) if np.isfinite(align).any() else 0.0
                cost, model = 0.0, "not costed: memory alignment costs a copy, usually negligible next to the I/O"
                if code == "P08":
                    cost = clock.wall(costs.misaligned_saving(t_read + t_write, val / ops, (br + bw) / ops, unit))
                    model = "misaligned"
                out.append(_f(code, f"{100 * val / ops:.0f}% of requests ({int(val):,}) are not aligned in {what}"
                              + (f" (to the file's {format_bytes(unit)} alignment)" if what == "file" and unit else ""),
                              {"misaligned": int(val), "total": int(ops), "share": val / ops,
                               **({"alignment_bytes": unit} if code == "P08" else {})},
                              {"misaligned_requests": t.misaligned_requests, "min_operations": t.min_operations},
                              cost=cost, model=model,
                              action="align the requests to the file system's block/stripe" if code == "P08" else None))
    return out


def _redundant_traffic(x: _Posix) -> list[dict]:
    """P09/P10 redundant traffic: more bytes than the highest offset touched"""
    out = []
    f, t, clock = x.f, x.t, x.clock
    for kind, code, bytes_col, max_col, t_col in (
            ("read", "P09", "POSIX_BYTES_READ", "POSIX_MAX_BYTE_READ", "POSIX_F_READ_TIME"),
            ("written", "P10", "POSIX_BYTES_WRITTEN", "POSIX_MAX_BYTE_WRITTEN", "POSIX_F_WRITE_TIME")):
        b, m = x.mon(bytes_col), x.mon(max_col)
        ok = ~np.isnan(b) & ~np.isnan(m) & (b > 0)
        extra = np.where(ok, b - (m + 1), 0.0)
        red = extra > 0
        if red.any() and extra[red].sum() >= t.min_bytes:
            cost = clock.wall(costs.redundant_saving(np.where(red, extra, 0.0), np.nan_to_num(b),
                                                     zero_missing(f, t_col)))
            out.append(_f(code, f"{int(red.sum())} file record(s) {kind} more bytes than their size "
                          f"(highest offset + 1): {format_bytes(extra[red].sum())} {kind} again; cache or reuse the data",
                          {"files": int(red.sum()), "redundant_bytes": int(extra[red].sum())},
                          {"min_bytes": t.min_bytes}, cost=cost, model="redundant-bytes",
                          action=f"avoid the {format_bytes(extra[red].sum())} {kind} again"))
    return out


def _non_sequential(x: _Posix) -> list[dict]:
    """P11-P14 non-sequential access: Darshan counts a request as sequential when it starts after the previous one's last byte, so the rest went back to or before that byte (random access, or re-reading the same offset)"""
    out = []
    t, clock, t_read, t_write = x.t, x.clock, x.t_read, x.t_write
    for kind, code_bad, code_ok, t_kind, b_kind, small in (("READS", "P11", "P12", t_read, x.br, ("P05", "P15")),
                                                           ("WRITES", "P13", "P14", t_write, x.bw, ("P06", "P16"))):
        n, seq = x.mon(f"POSIX_{kind}"), x.mon(f"POSIX_SEQ_{kind}")
        ok = ~np.isnan(n) & ~np.isnan(seq)
        total_n = float(n[ok].sum())
        rand = float((n[ok] - seq[ok]).sum())
        word = kind.lower()[:-1]
        if not total_n:
            continue
        share = rand / total_n
        thr = {"random_operations": t.random_operations, "random_operations_absolute": t.random_operations_absolute}
        ev = {"random": int(rand), "total": int(total_n), "share": share}
        if share > t.random_operations and rand > t.random_operations_absolute:
            out.append(_f(code_bad, f"{int(rand):,} of {int(total_n):,} {word}s ({100 * share:.0f}%) are not "
                          "sequential: they start at or before the previous request's last byte (random access, "
                          "or the same data again)", ev, thr,
                          cost=clock.wall(costs.random_saving(t_kind, total_n, rand, b_kind, t.small_bytes)),
                          model="random", action=f"make the {word}s sequential (sort or batch them by offset, so "
                          "that adjacent ones merge)",
                          # the saving is the merging of small requests: the small-request findings' seconds
                          overlaps=small))
        elif share > t.random_operations:
            out.append(_f(code_ok, f"{100 * share:.0f}% of the {word}s are not sequential, but only {int(rand):,} "
                          f"of them (≤ {t.random_operations_absolute:,}): too few to matter", ev, thr,
                          model="informational"))
        else:
            out.append(_f(code_ok, f"{word}s are sequential ({100 * (1 - share):.0f}% of {int(total_n):,})",
                          ev, thr, model="informational"))
    return out


def _metadata_per_rank(x: _Posix) -> list[dict]:
    """P17 metadata time per rank"""
    out = []
    t, nprocs, ranks = x.t, x.nprocs, x.ranks
    own = ranks >= 0 if nprocs > 1 else np.ones(len(ranks), bool)
    meta = module_rows(x.posix)["meta_time"]  # the module's timer with -1 and NaN as 0, made once a log
    r_eff = effective_ranks(ranks, nprocs)
    per_rank_meta = np.bincount(r_eff[own], weights=meta[own], minlength=nprocs) if own.any() else np.zeros(nprocs)
    if nprocs > 1:
        per_rank_meta = per_rank_meta + meta[~own].sum() / nprocs
    slow_ranks = np.flatnonzero(per_rank_meta > t.metadata_time_rank_s)
    if len(slow_ranks):
        out.append(_f("P17", f"{len(slow_ranks)} rank(s) spend more than {t.metadata_time_rank_s:g} s in "
                      f"metadata operations (open/stat/seek/sync; worst: rank {int(per_rank_meta.argmax())}, "
                      f"{format_seconds(per_rank_meta.max())})",
                      {"ranks": int(len(slow_ranks)), "max_rank": int(per_rank_meta.argmax()),
                       "max_meta_time_s": float(per_rank_meta.max())},
                      {"metadata_time_rank_s": t.metadata_time_rank_s},
                      cost=float(per_rank_meta.max()), model="metadata-per-rank",
                      action="cut the opens/stats/syncs of the slowest rank", overlaps=("F01", "L03")))
    return out


def _shared_stragglers(x: _Posix) -> list[dict]:
    """P18/P19 stragglers on shared files"""
    out = []
    c, t, nprocs, posix = x.c, x.t, x.nprocs, x.posix
    shared_mask = x.shared_mask
    if shared_mask.any():
        sc = subset(c, shared_mask)
        # the counters read, monitored (-1 as NaN) and with NaN as 0, from one block (issue 40)
        names_read = ("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_SLOWEST_RANK_BYTES", "POSIX_FASTEST_RANK_BYTES",
                      "POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME", "POSIX_F_SLOWEST_RANK_TIME",
                      "POSIX_F_FASTEST_RANK_TIME", "POSIX_READS", "POSIX_WRITES")
        block = monitored_block(sc, list(names_read))
        zeroed = np.where(np.isnan(block), 0.0, block)
        if not np.isfinite(zeroed).all():  # ±inf as nan_to_num makes them (its own checks cost more than the block)
            zeroed = np.nan_to_num(block)
        mon, zero = dict(zip(names_read, block)), dict(zip(names_read, zeroed))
        tb = zero["POSIX_BYTES_READ"] + zero["POSIX_BYTES_WRITTEN"]
        db = np.abs(mon["POSIX_SLOWEST_RANK_BYTES"] - mon["POSIX_FASTEST_RANK_BYTES"])
        tt = zero["POSIX_F_READ_TIME"] + zero["POSIX_F_WRITE_TIME"] + zero["POSIX_F_META_TIME"]
        slowest_t = zero["POSIX_F_SLOWEST_RANK_TIME"]
        dt = np.abs(mon["POSIX_F_SLOWEST_RANK_TIME"] - mon["POSIX_F_FASTEST_RANK_TIME"])
        ratios = {}
        for code, d, tot_ in (("P18", db, tb), ("P19", dt, tt)):
            ok = ~np.isnan(d) & (tot_ > 0)
            ratios[code] = np.where(ok, d / np.where(tot_ > 0, tot_, 1), 0.0)
        if not any((r > t.stragglers).any() for r in ratios.values()):
            return out  # no straggler: the bounds below are not needed
        names = posix.names[shared_mask]
        excess = np.clip(slowest_t - tt / max(nprocs, 1), 0.0, None)    # costs.straggler_excess, per file
        # one node's local disk and large requests: one rank's stream fills the device, so spreading the bytes
        # saves only what the device's best rate in the log allows (costs.one_device_excess)
        ops = zero["POSIX_READS"] + zero["POSIX_WRITES"]
        one_device = x.one_local_disk & (tb >= t.small_bytes * np.maximum(ops, 1))
        if one_device.any():
            def rate(b, tm):
                b, tm = zero[b], zero[tm]
                return np.where(tm > 0, b / np.where(tm > 0, tm, 1.0), 0.0)
            best = np.maximum(rate("POSIX_SLOWEST_RANK_BYTES", "POSIX_F_SLOWEST_RANK_TIME"),
                              rate("POSIX_FASTEST_RANK_BYTES", "POSIX_F_FASTEST_RANK_TIME"))
            excess = np.where(one_device, np.minimum(excess, costs.one_device_excess(slowest_t, tb, best)), excess)
        # one node's disk and small requests: the ranks' streams add up as far as the device let them while all
        # wrote, which the fastest rank's rate shows (costs.concurrent_excess)
        beside_bound = x.one_local_disk & ~one_device
        fr, ft = zero["POSIX_FASTEST_RANK_BYTES"], zero["POSIX_F_FASTEST_RANK_TIME"]
        with np.errstate(over="ignore"):  # a damaged record's time can be tiny beside its bytes: no rate then
            beside = np.where(ft > 0, fr / np.where(ft > 0, ft, 1.0), 0.0)
        beside = np.where(np.isfinite(beside), beside, 0.0)
        beside_bound &= (beside > 0) & costs.beside_ok(fr, tb, nprocs)
        if beside_bound.any():
            bounded = np.where(beside_bound, costs.concurrent_excess(slowest_t, tb, beside, nprocs), excess)
            beside_bound &= bounded < excess
            excess = np.minimum(excess, bounded)
        for code, what in (("P18", "bytes"), ("P19", "time")):
            ratio = ratios[code]
            bad = ratio > t.stragglers
            if bad.any():
                worst = int(np.argmax(ratio))
                # a time straggler whose bytes are balanced waited on its target: rebalancing cannot help
                waited = code == "P19" and ratios["P18"][worst] <= t.stragglers
                # under collective buffering the rank that moves a file's bytes is an aggregator: ROMIO
                # chose it, so the fix is more aggregators, not a different decomposition
                aggregated = x.collective_ids is not None and int(sc["id"][worst]) in set(x.collective_ids.tolist())
                if (aggregated or waited) and x.one_local_disk:
                    # one node's local disk is one device every rank queues on (B01's reading): ROMIO's one
                    # aggregator per node writes for the others, which would queue there too; and a rank that
                    # took longer for the same bytes waited for its place in that queue, not on a slow target
                    why = ("the straggler is ROMIO's aggregator, and the other ranks would queue on the same device"
                           if aggregated else "its bytes are balanced: the slow rank's excess is its place in the "
                           "device's queue, not a slow target to avoid")
                    out.append(_f(code, f"{int(bad.sum())} shared file(s) with a straggler rank by {what}, on one "
                                  f"node's local disk: {why}; nothing to change",
                                  {"files": int(bad.sum()), "max_ratio": float(ratio[worst]),
                                   "worst_file": names[worst]}, {"stragglers": t.stragglers}, model="informational")
                               | {"level": "INFO"})
                    continue
                action = ("find what the slow rank waited on in the shared file (a slow or busy OST: lfs getstripe "
                          "the file, the server weather during the run); its bytes are balanced" if waited
                          else "give the collectively written file more aggregators (a wider Lustre stripe, which "
                          "sets their number on Cray MPI-IO and ROMIO's Lustre driver, or the cb_nodes hint)"
                          if aggregated else "balance the shared-file I/O across ranks")
                if code == "P18":
                    hi_b, lo_b = mon["POSIX_SLOWEST_RANK_BYTES"][worst], mon["POSIX_FASTEST_RANK_BYTES"][worst]
                    spread = (f"its slowest rank moved {format_bytes(hi_b)} and its fastest {format_bytes(lo_b)}, "
                              f"of {format_bytes(tb[worst])} in all")
                else:
                    hi_t, lo_t = mon["POSIX_F_SLOWEST_RANK_TIME"][worst], mon["POSIX_F_FASTEST_RANK_TIME"][worst]
                    spread = (f"its slowest rank took {format_seconds(hi_t)} and its fastest {format_seconds(lo_t)}, "
                              f"of {format_seconds(tt[worst])} summed over ranks")
                # each bound's reason once, the saving (all the bad files') once after them
                device = (f"; on one node's local disk with requests of {format_bytes(t.small_bytes)} or more, every "
                          "rank streams into the same device, whose bandwidth does not add up over ranks"
                          ) if one_device[bad].any() else ""
                side = beside_bound & bad
                if side.any():
                    k = int(np.argmax(np.where(side, tb, -1.0)))
                    device += (f"; on one node's local disk with smaller requests the ranks' streams add up as far as "
                               f"the device lets them: the fastest rank got {format_bytes(beside[k])}/s beside the "
                               f"others, so {nprocs} balanced ranks move the bytes no faster than "
                               f"{format_bytes(beside[k] * nprocs)}/s")
                if device:
                    device += f": balancing saves at most {format_seconds(float(excess[bad].sum()))}"
                out.append(_f(code, f"{int(bad.sum())} shared file(s) with a straggler rank by {what}; worst: "
                              f"{names[worst] or 'unnamed'}: {spread}{device}",
                              {"files": int(bad.sum()), "max_ratio": float(ratio[worst]), "worst_file": names[worst],
                               "one_device_files": int(one_device[bad].sum()),
                               **({"beside_files": int(side.sum())} if side.any() else {})},
                              {"stragglers": t.stragglers, "small_bytes": t.small_bytes},
                              cost=float(excess[bad].sum()), model="straggler",
                              action=action, overlaps=("P19" if code == "P18" else "P18", "L01", "B01", "B02")))
    return out


def _rank_imbalance(x: _Posix) -> list[dict]:
    """P21/P22 imbalance across ranks of non-shared files (files opened by several ranks separately)"""
    out = []
    c, f, t, nprocs, ranks = x.c, x.f, x.t, x.nprocs, x.ranks
    if nprocs > 1:
        own = ranks >= 0
        ids = c["id"][own]
        if len(ids):
            uniq, _, inv = unique_first_inverse(ids)
            nr = np.bincount(distinct(inv.astype(np.int64) * (nprocs + 1) + ranks[own]) // (nprocs + 1),
                             minlength=len(uniq))
            multi = nr[inv] > 1
            if not multi.any():  # no file of several ranks' own records: nothing to compare
                return out
            rec_t = (zero_missing(f, "POSIX_F_READ_TIME") + zero_missing(f, "POSIX_F_WRITE_TIME")
                     + zero_missing(f, "POSIX_F_META_TIME"))[own][multi]
            for code, col, word in (("P21", "POSIX_BYTES_WRITTEN", "written"), ("P22", "POSIX_BYTES_READ", "read")):
                v = zero_missing(c, col)[own][multi]
                g = inv[multi]
                if not len(g):
                    break
                hi = np.full(len(uniq), -np.inf)
                lo = np.full(len(uniq), np.inf)
                np.maximum.at(hi, g, v)
                np.minimum.at(lo, g, v)
                t_hi = np.zeros(len(uniq))
                np.maximum.at(t_hi, g, rec_t)
                t_sum = np.bincount(g, weights=rec_t, minlength=len(uniq))
                ok = np.isfinite(hi) & (hi > 0)
                ratio = np.where(ok, (hi - lo) / np.where(ok, hi, 1), 0.0)
                bad = ratio > t.imbalance_size
                if bad.any():
                    out.append(_f(code, f"{int(bad.sum())} file(s) accessed by several ranks with unbalanced bytes "
                                  f"{word} (max - min up to {100 * ratio[bad].max():.0f}% of max): spread the data evenly",
                                  {"files": int(bad.sum()), "max_ratio": float(ratio[bad].max())},
                                  {"imbalance_size": t.imbalance_size},
                                  cost=costs.straggler_excess(t_hi[bad], t_sum[bad], nr[bad]), model="straggler",
                                  action=f"balance the bytes {word} across ranks",
                                  overlaps=("P22" if code == "P21" else "P21", "B01", "B02")))
    return out


#: The POSIX rules, in the order their findings are listed (before the ranking by cost).
POSIX_RULES = (_intensity, _small_requests_rule, _misalignment, _redundant_traffic, _non_sequential,
               _metadata_per_rank, _shared_stragglers, _rank_imbalance)


#: Every rule, in the order its findings are listed before the ranking by cost. A rule is a function
#: of the job (`Job`) returning findings; rules share no state but what `Job` computes once.
RULES = (_time_share, _damaged, _stdio, _no_mpiio, _syncs, _posix_rules, _mpiio_collective, _mpiio_overhead, _read_modify_write,
         _rank_time_imbalance, _rank0, _files_per_process, _lustre)
