"""Findings for one job: Drishti's insight set (drishti-io 0.6) with its defects fixed, plus Carns et al.'s.

Each finding is a dict: `code`, `level` (HIGH, WARN, INFO, OK), `message`,
`evidence` (the numbers it rests on) and `threshold` (the values it was tested
against). Thresholds come from `Thresholds` (defaults = Drishti's, METHODS.md
section 3.1) and can be overridden from a TOML or JSON file.

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

from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from ioweather.errors import UserError
from ioweather.units import format_bytes
from ioweather.stats.job import MiB, cols, effective_ranks, monitored, subset, zero_missing

LEVELS = ("HIGH", "WARN", "INFO", "OK")  # most severe first
#: The levels that ask for action: `jobs ingest` stores these codes per job (`finding_codes`).
ACTIONABLE = ("HIGH", "WARN")

#: Every finding's level and what it means in a few words (the messages of `job_findings` add the
#: numbers). The one table of levels: the report, the store's `finding_codes` and the dashboard,
#: which has only the stored codes, all read it.
FINDINGS = {
    "T00": ("INFO", "the job moved no data through POSIX or STDIO"),
    "T01": ("OK", "I/O is a small share of the run time: no action needed"),
    "S01": ("HIGH", "more than 10 % of the bytes through STDIO (fopen/fwrite)"),
    "M01": ("WARN", "an MPI job that does not use MPI-IO"),
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
    "P11": ("HIGH", "many random (backwards) reads"),
    "P12": ("OK", "reads mostly sequential"),
    "P13": ("HIGH", "many random (backwards) writes"),
    "P14": ("OK", "writes mostly sequential"),
    "P15": ("HIGH", "many small reads to shared files"),
    "P16": ("HIGH", "many small writes to shared files"),
    "P17": ("HIGH", "a rank spends more than 30 s in metadata operations"),
    "P18": ("HIGH", "shared file with a straggler rank by bytes"),
    "P19": ("HIGH", "shared file with a straggler rank by time"),
    "P21": ("HIGH", "files written by several ranks with unbalanced bytes"),
    "P22": ("HIGH", "files read by several ranks with unbalanced bytes"),
    "M02": ("HIGH", "many independent MPI-IO reads and no collective ones"),
    "M03": ("HIGH", "many independent MPI-IO writes and no collective ones"),
    "M06": ("WARN", "no non-blocking MPI-IO reads"),
    "M07": ("WARN", "no non-blocking MPI-IO writes"),
    "R01": ("WARN", "all data moved by rank 0 of an MPI job"),
    "F01": ("WARN", "more than 10 files per process"),
}


def severity(level: str | None) -> int:
    """HIGH 4, WARN 3, INFO 2, OK 1; 0 for no level (a code this version does not know)."""
    return len(LEVELS) - LEVELS.index(level) if level in LEVELS else 0


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

    @classmethod
    def from_mapping(cls, data, where: str) -> "Thresholds":
        """Overrides from a parsed table (flat keys, or under a `thresholds` table), checked;
        `where` names their origin in messages. The file is read by sources/thresholds_file.py."""
        if not isinstance(data, dict):
            raise UserError(f"{where}: expected a table of name = value")
        data = data.get("thresholds", data)
        known = {f.name: f.type for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise UserError(f"{where}: unknown threshold(s) {', '.join(unknown)}; known: {', '.join(known)}")
        values = {}
        for k, v in data.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise UserError(f"{where}: {k} must be a non-negative number, got {v!r}")
            values[k] = int(v) if known[k] in ("int", int) else float(v)
        return cls(**values)

    def as_dict(self) -> dict:
        return asdict(self)


def _f(code, message, evidence, threshold=None) -> dict:
    return {"code": code, "level": FINDINGS[code][0], "message": message, "evidence": evidence,
            "threshold": threshold or {}}


def _share(a: float, b: float) -> float:
    return float(a / b) if b else 0.0


def small_request_counts(c: pd.DataFrame, prefix: str, kind: str, small_bytes: int) -> tuple[int, int]:
    """(small requests, all requests) of `kind` (READ/WRITE) from the size histogram.

    Bins wholly below `small_bytes` count fully. From the bin that contains
    `small_bytes` (Darshan's 100K_1M includes exactly 1 MiB), each record's
    accesses of exactly `small_bytes` found in its common-access counters are
    removed. Those counters mix reads and writes, so they are split in
    proportion to the record's read and write counts in that bin, and the
    result is clipped to the bin's count.
    """
    edges = [("0_100", 100), ("100_1K", 1024), ("1K_10K", 10 * 1024), ("10K_100K", 100 * 1024),
             ("100K_1M", MiB), ("1M_4M", 4 * MiB), ("4M_10M", 10 * MiB), ("10M_100M", 100 * MiB),
             ("100M_1G", 1024 * MiB), ("1G_PLUS", None)]
    other = "WRITE" if kind == "READ" else "READ"
    c = cols(c)
    small = np.zeros(c.n)
    total_n = 0.0
    for name, upper in edges:
        v = zero_missing(c, f"{prefix}_SIZE_{kind}_{name}")
        total_n += v.sum()
        if upper is None or upper > small_bytes:
            continue
        if upper < small_bytes:
            small += v
            continue
        # the bin whose upper bound is small_bytes: take out the exact-size accesses
        w = zero_missing(c, f"{prefix}_SIZE_{other}_{name}")
        share = np.divide(v, v + w, out=np.zeros(c.n), where=(v + w) > 0)
        exact = np.zeros(c.n)
        for i in range(1, 5):
            a, k = f"{prefix}_ACCESS{i}_ACCESS", f"{prefix}_ACCESS{i}_COUNT"
            if a in c and k in c:
                exact += np.where(c[a].astype(np.int64) == small_bytes, c[k].astype(np.float64), 0.0)
        small += np.clip(v - np.round(exact * share), 0, v)
    return int(small.sum()), int(total_n)


def job_findings(log, ch: dict, thresholds: Thresholds | None = None) -> list[dict]:
    """All findings for a job. `ch` is `stats.job.characterize(log)`."""
    t = thresholds or Thresholds()
    out: list[dict] = []
    nprocs = max(int(log.nprocs), 1)
    posix = log.records.get("POSIX")
    mpiio = log.records.get("MPI-IO")
    tot = ch["totals"]
    moved = tot["bytes_read"] + tot["bytes_written"]

    # --- T01 / OK when I/O is a small share of the run
    frac = ch["perf"]["io_fraction_of_runtime"]
    if frac is not None and moved > 0 and frac < t.io_fraction_no_action:
        out.append(_f("T01", f"I/O took {100 * frac:.1f}% of the run time (< {100 * t.io_fraction_no_action:g}%): "
                      "no action needed, even where the findings below point at inefficient access",
                      {"io_time_s": ch["perf"]["io_time_s"], "runtime_s": ch["job"]["runtime_s"], "io_fraction": frac},
                      {"io_fraction_no_action": t.io_fraction_no_action}))
    if moved == 0:
        out.append(_f("T00", "the job moved no data through POSIX or STDIO", {"bytes": 0}))

    # --- S01 STDIO share
    stdio_bytes = ch["interfaces"].get("STDIO", {})
    sb = (stdio_bytes.get("bytes_read") or 0) + (stdio_bytes.get("bytes_written") or 0)
    if moved and _share(sb, moved) > t.stdio_share:
        out.append(_f("S01", f"{100 * sb / moved:.0f}% of the bytes go through STDIO (fopen/fread/fwrite): "
                      "buffered stream I/O is slow for large data; use POSIX or MPI-IO",
                      {"stdio_bytes": sb, "total_bytes": moved, "share": sb / moved}, {"stdio_share": t.stdio_share}))

    # --- M01 no MPI-IO in an MPI job
    if nprocs > 1 and mpiio is None and moved > 0:
        out.append(_f("M01", f"an MPI job ({nprocs} processes) that does not use MPI-IO: collective buffering "
                      "and data sieving are not available to it", {"nprocs": nprocs}))

    if posix is not None and len(posix):
        out += _posix_findings(log, ch, posix, t, nprocs)

    # --- MPI-IO collective / non-blocking
    if mpiio is not None and len(mpiio):
        c = cols(mpiio)
        for kind, code_coll, code_nb in (("READS", "M02", "M06"), ("WRITES", "M03", "M07")):
            indep = int(np.nansum(monitored(c, f"MPIIO_INDEP_{kind}")))
            coll = int(np.nansum(monitored(c, f"MPIIO_COLL_{kind}")))
            nb = int(np.nansum(monitored(c, f"MPIIO_NB_{kind}")))
            word = kind.lower()[:-1]
            if coll == 0 and indep > t.collective_operations_absolute:
                out.append(_f(code_coll, f"{indep} independent MPI-IO {word}s and no collective ones: "
                              f"use MPI_File_{word}_all so MPI-IO can aggregate requests",
                              {"independent": indep, "collective": coll},
                              {"collective_operations_absolute": t.collective_operations_absolute}))
            if nb == 0 and (indep + coll) > 0:
                out.append(_f(code_nb, f"no non-blocking MPI-IO {word}s: MPI_File_i{word} could overlap I/O "
                              "with computation", {"nonblocking": nb, "blocking": indep + coll}))

    # --- R01 rank-0-only I/O (Carns et al., section V)
    pr_bytes = _own_bytes_per_rank(log, nprocs)
    if nprocs > 1 and moved > 0 and pr_bytes is not None:
        shared_bytes = ch["sharing"]["shared_bytes"]
        if shared_bytes == 0 and pr_bytes.sum() > 0 and pr_bytes[0] == pr_bytes.sum():
            out.append(_f("R01", f"all I/O is done by rank 0 of {nprocs} processes: the other ranks wait, "
                          "and bandwidth is bounded by one node", {"rank0_bytes": int(pr_bytes[0]), "nprocs": nprocs}))

    # --- F01 many files per process
    files = tot["files"]
    if files and files / nprocs > t.files_per_process:
        out.append(_f("F01", f"{files} files for {nprocs} process(es) ({files / nprocs:.0f} per process): "
                      "metadata cost grows with the file count; aggregate into fewer files",
                      {"files": files, "nprocs": nprocs, "files_per_process": files / nprocs},
                      {"files_per_process": t.files_per_process}))

    # T01 first: it tells the reader how much the rest matters
    out.sort(key=lambda f: (f["code"] != "T01", -severity(f["level"]), f["code"]))
    return out


def _own_bytes_per_rank(log, nprocs: int) -> np.ndarray | None:
    parts = []
    for mod in ("POSIX", "STDIO"):
        rec = log.records.get(mod)
        if rec is None or not len(rec):
            continue
        p = "POSIX" if mod == "POSIX" else "STDIO"
        c = cols(rec)
        r = effective_ranks(c["rank"], nprocs)
        b = zero_missing(c, f"{p}_BYTES_READ") + zero_missing(c, f"{p}_BYTES_WRITTEN")
        keep = (r >= 0) & (b > 0)
        # <STDOUT>/<STDERR> writes are not data I/O
        names = rec.names
        keep &= np.array([not (n or "").startswith("<") for n in names], dtype=bool)
        parts.append((r[keep], b[keep]))
    if not parts:
        return None
    r = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    if not len(r):
        return np.zeros(nprocs)
    return np.bincount(r, weights=b, minlength=nprocs)


def _posix_findings(log, ch, posix, t: Thresholds, nprocs: int) -> list[dict]:
    out = []
    c = f = cols(posix)
    reads = float(np.nansum(monitored(c, "POSIX_READS")))
    writes = float(np.nansum(monitored(c, "POSIX_WRITES")))
    br = float(np.nansum(monitored(c, "POSIX_BYTES_READ")))
    bw = float(np.nansum(monitored(c, "POSIX_BYTES_WRITTEN")))
    ops = reads + writes

    # P01/P02 operation intensity, P03/P04 volume intensity
    if ops and abs(writes - reads) / ops > t.imbalance_operations:
        code, what = ("P01", "write") if writes > reads else ("P02", "read")
        out.append(_f(code, f"the job is {what}-operation intensive ({int(writes)} writes, {int(reads)} reads)",
                      {"reads": int(reads), "writes": int(writes)}, {"imbalance_operations": t.imbalance_operations}))
    if br + bw and abs(bw - br) / (br + bw) > t.imbalance_operations:
        code, what = ("P03", "write") if bw > br else ("P04", "read")
        out.append(_f(code, f"the job is {what}-volume intensive ({bw:.0f} bytes written, {br:.0f} read)",
                      {"bytes_read": int(br), "bytes_written": int(bw)}, {"imbalance_operations": t.imbalance_operations}))

    # P05/P06 small requests (all files), P15/P16 on shared files
    ranks = c["rank"]
    shared_mask = (ranks < 0) & (nprocs > 1)
    for kind, code, code_sh in (("READ", "P05", "P15"), ("WRITE", "P06", "P16")):
        small, n = small_request_counts(c, "POSIX", kind, t.small_bytes)
        word = kind.lower()
        thr = {"small_bytes": t.small_bytes, "small_requests": t.small_requests,
               "small_requests_absolute": t.small_requests_absolute}
        if n and small / n > t.small_requests and small > t.small_requests_absolute:
            out.append(_f(code, f"{small} of {n} {word}s ({100 * small / n:.0f}%) are smaller than "
                          f"{format_bytes(t.small_bytes)}: aggregate them into larger requests (buffering, MPI-IO collective)",
                          {"small": small, "total": n, "share": small / n}, thr))
        if shared_mask.any():
            small_s, n_s = small_request_counts(subset(c, shared_mask), "POSIX", kind, t.small_bytes)
            if n_s and small_s / n_s > t.small_requests and small_s > t.small_requests_absolute:
                out.append(_f(code_sh, f"{small_s} of {n_s} {word}s to shared files are smaller than "
                              f"{format_bytes(t.small_bytes)}: use collective MPI-IO on shared files",
                              {"small": small_s, "total": n_s, "share": small_s / n_s}, thr))

    # P07/P08 misalignment
    mem = float(np.nansum(monitored(c, "POSIX_MEM_NOT_ALIGNED")))
    fil = float(np.nansum(monitored(c, "POSIX_FILE_NOT_ALIGNED")))
    if ops:
        for code, val, what in (("P07", mem, "memory"), ("P08", fil, "file")):
            if val / ops > t.misaligned_requests:
                out.append(_f(code, f"{100 * val / ops:.0f}% of requests are not aligned in {what}"
                              + (" (to the file system block/stripe)" if what == "file" else ""),
                              {"misaligned": int(val), "total": int(ops), "share": val / ops},
                              {"misaligned_requests": t.misaligned_requests}))

    # P09/P10 redundant traffic: more bytes than the highest offset touched
    for kind, code, bytes_col, max_col in (("read", "P09", "POSIX_BYTES_READ", "POSIX_MAX_BYTE_READ"),
                                          ("written", "P10", "POSIX_BYTES_WRITTEN", "POSIX_MAX_BYTE_WRITTEN")):
        b = monitored(c, bytes_col)
        m = monitored(c, max_col)
        ok = ~np.isnan(b) & ~np.isnan(m) & (b > 0)
        extra = np.where(ok, b - (m + 1), 0.0)
        red = extra > 0
        if red.any():
            out.append(_f(code, f"{int(red.sum())} file record(s) {kind} more bytes than their size "
                          f"(highest offset + 1): {extra[red].sum():.0f} bytes {kind} again; cache or reuse the data",
                          {"files": int(red.sum()), "redundant_bytes": int(extra[red].sum())}))

    # P11-P14 random access
    for kind, code_bad, code_ok in (("READS", "P11", "P12"), ("WRITES", "P13", "P14")):
        n = monitored(c, f"POSIX_{kind}")
        seq = monitored(c, f"POSIX_SEQ_{kind}")
        ok = ~np.isnan(n) & ~np.isnan(seq)
        total_n = float(n[ok].sum())
        rand = float((n[ok] - seq[ok]).sum())
        word = kind.lower()[:-1]
        if not total_n:
            continue
        thr = {"random_operations": t.random_operations, "random_operations_absolute": t.random_operations_absolute}
        if rand / total_n > t.random_operations and rand > t.random_operations_absolute:
            out.append(_f(code_bad, f"{int(rand)} of {int(total_n)} {word}s ({100 * rand / total_n:.0f}%) go to "
                          "a lower offset than the previous one (random access)",
                          {"random": int(rand), "total": int(total_n), "share": rand / total_n}, thr))
        else:
            out.append(_f(code_ok, f"{word}s are mostly sequential ({100 * (1 - rand / total_n):.0f}%)",
                          {"random": int(rand), "total": int(total_n), "share": rand / total_n}, thr))

    # P17 metadata time per rank
    own = ranks >= 0 if nprocs > 1 else np.ones(len(ranks), bool)
    meta = np.nan_to_num(monitored(f, "POSIX_F_META_TIME"))
    r_eff = effective_ranks(ranks, nprocs)
    per_rank_meta = np.bincount(r_eff[own], weights=meta[own], minlength=nprocs) if own.any() else np.zeros(nprocs)
    if nprocs > 1:
        per_rank_meta = per_rank_meta + meta[~own].sum() / nprocs
    slow_ranks = np.flatnonzero(per_rank_meta > t.metadata_time_rank_s)
    if len(slow_ranks):
        out.append(_f("P17", f"{len(slow_ranks)} rank(s) spend more than {t.metadata_time_rank_s:g} s in "
                      f"metadata operations (open/stat/seek/sync; worst: rank {int(per_rank_meta.argmax())}, "
                      f"{per_rank_meta.max():.1f} s)",
                      {"ranks": int(len(slow_ranks)), "max_rank": int(per_rank_meta.argmax()),
                       "max_meta_time_s": float(per_rank_meta.max())},
                      {"metadata_time_rank_s": t.metadata_time_rank_s}))

    # P18/P19 stragglers on shared files
    if shared_mask.any():
        sc, sf = subset(c, shared_mask), subset(f, shared_mask)
        tb = np.nan_to_num(monitored(sc, "POSIX_BYTES_READ")) + np.nan_to_num(monitored(sc, "POSIX_BYTES_WRITTEN"))
        db = np.abs(monitored(sc, "POSIX_SLOWEST_RANK_BYTES") - monitored(sc, "POSIX_FASTEST_RANK_BYTES"))
        tt = (np.nan_to_num(monitored(sf, "POSIX_F_READ_TIME")) + np.nan_to_num(monitored(sf, "POSIX_F_WRITE_TIME"))
              + np.nan_to_num(monitored(sf, "POSIX_F_META_TIME")))
        dt = np.abs(monitored(sf, "POSIX_F_SLOWEST_RANK_TIME") - monitored(sf, "POSIX_F_FASTEST_RANK_TIME"))
        names = posix.names[shared_mask]
        for code, d, tot_, what in (("P18", db, tb, "bytes"), ("P19", dt, tt, "time")):
            ok = ~np.isnan(d) & (tot_ > 0)
            ratio = np.where(ok, d / np.where(tot_ > 0, tot_, 1), 0.0)
            bad = ratio > t.stragglers
            if bad.any():
                worst = int(np.argmax(ratio))
                out.append(_f(code, f"{int(bad.sum())} shared file(s) with a straggler rank by {what}: the slowest "
                              f"and fastest rank differ by {100 * ratio[worst]:.0f}% of the file's total {what} "
                              f"(worst: {names[worst] or 'unnamed'})",
                              {"files": int(bad.sum()), "max_ratio": float(ratio[worst]), "worst_file": names[worst]},
                              {"stragglers": t.stragglers}))

    # P21/P22 imbalance across ranks of non-shared files (files opened by several ranks separately)
    if nprocs > 1:
        own = ranks >= 0
        ids = c["id"][own]
        if len(ids):
            uniq, inv = np.unique(ids, return_inverse=True)
            nr = np.bincount(np.unique(inv.astype(np.int64) * (nprocs + 1) + ranks[own]) // (nprocs + 1),
                             minlength=len(uniq))
            multi = nr[inv] > 1
            for code, col, word in (("P21", "POSIX_BYTES_WRITTEN", "written"), ("P22", "POSIX_BYTES_READ", "read")):
                v = zero_missing(c, col)[own][multi]
                g = inv[multi]
                if not len(g):
                    break
                hi = np.full(len(uniq), -np.inf)
                lo = np.full(len(uniq), np.inf)
                np.maximum.at(hi, g, v)
                np.minimum.at(lo, g, v)
                ok = np.isfinite(hi) & (hi > 0)
                ratio = (hi[ok] - lo[ok]) / hi[ok]
                bad = ratio[ratio > t.imbalance_size]
                if len(bad):
                    out.append(_f(code, f"{len(bad)} file(s) accessed by several ranks with unbalanced bytes "
                                  f"{word} (max - min up to {100 * bad.max():.0f}% of max): spread the data evenly",
                                  {"files": int(len(bad)), "max_ratio": float(bad.max())},
                                  {"imbalance_size": t.imbalance_size}))
    return out
