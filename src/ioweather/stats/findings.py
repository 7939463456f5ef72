"""Findings for one job: Drishti's insight set (drishti-io 0.6) with its defects fixed, plus Carns et al.'s.

Each finding is a dict: `code`, `level` (HIGH, WARN, INFO, OK), `message`,
`evidence` (the numbers it rests on), `threshold` (the values it was tested
against), `cost_s` (the job I/O time it accounts for, stats/costs.py and
docs/darshan.md "Cost models"), `cost_share` / `cost_share_of_runtime`,
`cost_model`, and where there is one, `action` (what to change, for the verdict)
and `fix` (a command). Findings are listed by `cost_s`, most expensive first.
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
import pandas as pd

from ioweather.errors import UserError
from ioweather.stats import costs
from ioweather.stats.job import MiB, cols, effective_ranks, monitored, subset, zero_missing
from ioweather.stats.lustre import lfs_size, lustre_files, ost_count
from ioweather.units import format_bytes, format_seconds

GiB = 1024 * MiB

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
    "M06": ("WARN", "no non-blocking MPI-IO reads"),
    "M07": ("WARN", "no non-blocking MPI-IO writes"),
    "R01": ("WARN", "all data moved by rank 0 of an MPI job"),
    "F01": ("WARN", "more than 10 files per process"),
    "L01": ("HIGH", "a large Lustre file striped over far fewer OSTs than it could use"),
    "L02": ("WARN", "Lustre stripe size not aligned with the dominant request size"),
    "L03": ("WARN", "many small Lustre files on a wide stripe"),
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
    verdict_min_runtime_share: float = 0.01     # ... and this share of the run time

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


def small_request_counts(c: pd.DataFrame, prefix: str, kind: str, small_bytes: int) -> tuple[int, int]:
    """(small requests, all requests) of `kind` (READ/WRITE): see `small_requests`."""
    small, n, _ = small_requests(c, prefix, kind, small_bytes)
    return small, n


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
    edges = [("0_100", 100), ("100_1K", 1024), ("1K_10K", 10 * 1024), ("10K_100K", 100 * 1024),
             ("100K_1M", MiB), ("1M_4M", 4 * MiB), ("4M_10M", 10 * MiB), ("10M_100M", 100 * MiB),
             ("100M_1G", 1024 * MiB), ("1G_PLUS", None)]
    other = "WRITE" if kind == "READ" else "READ"
    c = cols(c)
    small = np.zeros(c.n)
    small_b = 0.0
    total_n = 0.0
    for name, upper in edges:
        v = zero_missing(c, f"{prefix}_SIZE_{kind}_{name}")
        total_n += v.sum()
        if upper is None or upper > small_bytes:
            continue
        if upper < small_bytes:
            small += v
            small_b += v.sum() * costs.BIN_BYTES[name]
            continue
        # the bin whose upper bound is small_bytes: take out the exact-size accesses
        w = zero_missing(c, f"{prefix}_SIZE_{other}_{name}")
        share = np.divide(v, v + w, out=np.zeros(c.n), where=(v + w) > 0)
        exact = np.zeros(c.n)
        for i in range(1, 5):
            a, k = f"{prefix}_ACCESS{i}_ACCESS", f"{prefix}_ACCESS{i}_COUNT"
            if a in c and k in c:
                exact += np.where(c[a].astype(np.int64) == small_bytes, c[k].astype(np.float64), 0.0)
        kept = np.clip(v - np.round(exact * share), 0, v)
        small += kept
        small_b += kept.sum() * costs.BIN_BYTES[name]
    return int(small.sum()), int(total_n), float(small_b)


def job_clock(ch: dict) -> costs.Clock:
    tot = ch["totals"]
    return costs.Clock(io_time_s=float(ch["perf"]["io_time_s"] or 0.0),
                       cumulative_s=float(tot["read_time_s"] + tot["write_time_s"] + tot["meta_time_s"]),
                       runtime_s=float(ch["job"]["runtime_s"] or 0.0))


def job_verdict(findings: list[dict], ch: dict, thresholds: Thresholds | None = None) -> dict:
    """{text, actions, saving_s}: the report's opening line (stats/costs.py `verdict`)."""
    t = thresholds or Thresholds()
    return costs.verdict(findings, job_clock(ch), ch["perf"]["io_fraction_of_runtime"],
                         no_action_fraction=t.io_fraction_no_action, min_cost_s=t.verdict_min_cost_s,
                         min_runtime_share=t.verdict_min_runtime_share)


def job_findings(log, ch: dict, thresholds: Thresholds | None = None) -> list[dict]:
    """All findings for a job, most expensive first. `ch` is `stats.job.characterize(log)`."""
    t = thresholds or Thresholds()
    clock = job_clock(ch)
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
                      {"io_fraction_no_action": t.io_fraction_no_action}, model="informational"))
    if moved == 0:
        out.append(_f("T00", "the job moved no data through POSIX or STDIO", {"bytes": 0}, model="informational"))

    # --- S01 STDIO share
    stdio = ch["interfaces"].get("STDIO", {})
    sb = (stdio.get("bytes_read") or 0) + (stdio.get("bytes_written") or 0)
    if moved and _share(sb, moved) > t.stdio_share and sb >= t.min_bytes:
        out.append(_f("S01", f"{100 * sb / moved:.0f}% of the bytes ({format_bytes(sb)}) go through STDIO "
                      "(fopen/fread/fwrite): buffered stream I/O is slow for large data; use POSIX or MPI-IO",
                      {"stdio_bytes": sb, "total_bytes": moved, "share": sb / moved},
                      {"stdio_share": t.stdio_share, "min_bytes": t.min_bytes},
                      cost=_stdio_cost(ch, sb, clock), model="stdio-vs-posix-rate",
                      action="move the STDIO data to POSIX or MPI-IO"))

    # --- M01 no MPI-IO in an MPI job
    if nprocs > 1 and mpiio is None and moved >= t.min_bytes:
        out.append(_f("M01", f"an MPI job ({nprocs} processes) that moved {format_bytes(moved)} without MPI-IO: "
                      "collective buffering and data sieving are not available to it",
                      {"nprocs": nprocs, "bytes": moved}, {"min_bytes": t.min_bytes}, model="design note"))

    small_cost = {}
    if posix is not None and len(posix):
        found, small_cost = _posix_findings(log, ch, posix, t, nprocs, clock)
        out += found

    # --- MPI-IO collective / non-blocking
    if mpiio is not None and len(mpiio):
        c = cols(mpiio)
        for kind, code_coll, code_ok, code_nb, code_small in (("READS", "M02", "M04", "M06", "P05"),
                                                              ("WRITES", "M03", "M05", "M07", "P06")):
            indep = int(np.nansum(monitored(c, f"MPIIO_INDEP_{kind}")))
            coll = int(np.nansum(monitored(c, f"MPIIO_COLL_{kind}")))
            nb = int(np.nansum(monitored(c, f"MPIIO_NB_{kind}")))
            word = kind.lower()[:-1]
            if coll == 0 and indep > t.collective_operations_absolute:
                out.append(_f(code_coll, f"{indep} independent MPI-IO {word}s and no collective ones: "
                              f"use MPI_File_{word}_all so MPI-IO can aggregate requests",
                              {"independent": indep, "collective": coll},
                              {"collective_operations_absolute": t.collective_operations_absolute},
                              cost=small_cost.get(code_small, 0.0), model="small-requests",
                              action=f"use collective MPI-IO {word}s (MPI_File_{word}_all)",
                              overlaps=(code_small, "P15" if code_small == "P05" else "P16")))
            elif coll > 0:
                out.append(_f(code_ok, f"collective MPI-IO {word}s used ({coll:,} collective, {indep:,} independent)",
                              {"independent": indep, "collective": coll}, model="informational"))
            if nb == 0 and (indep + coll) >= t.min_operations:
                out.append(_f(code_nb, f"no non-blocking MPI-IO {word}s among {indep + coll:,}: MPI_File_i{word} "
                              "could overlap I/O with computation", {"nonblocking": nb, "blocking": indep + coll},
                              {"min_operations": t.min_operations},
                              model="not costed: Darshan does not record the compute phases I/O could overlap"))

    # --- R01 rank-0-only I/O (Carns et al., section V)
    pr_bytes = _own_bytes_per_rank(log, nprocs)
    if nprocs > 1 and moved >= t.min_bytes and pr_bytes is not None:
        shared_bytes = ch["sharing"]["shared_bytes"]
        if shared_bytes == 0 and pr_bytes.sum() > 0 and pr_bytes[0] == pr_bytes.sum():
            k = ch["job"]["nnodes"] or 1
            out.append(_f("R01", f"all I/O ({format_bytes(moved)}) is done by rank 0 of {nprocs} processes: "
                          "the other ranks wait, and bandwidth is bounded by one node",
                          {"rank0_bytes": int(pr_bytes[0]), "nprocs": nprocs, "nnodes": ch["job"]["nnodes"]},
                          {"min_bytes": t.min_bytes}, cost=clock.io_time_s * (1 - 1 / k), model="rank0-over-nodes",
                          action=f"spread the I/O over the job's {k} nodes"))

    # --- F01 many files per process
    files = tot["files"]
    if files >= t.min_files and files / nprocs > t.files_per_process:
        fpp = files / nprocs
        mean_meta = tot["meta_time_s"] / nprocs
        out.append(_f("F01", f"{files} files for {nprocs} process(es) ({fpp:.0f} per process): "
                      "metadata cost grows with the file count; aggregate into fewer files",
                      {"files": files, "nprocs": nprocs, "files_per_process": fpp},
                      {"files_per_process": t.files_per_process, "min_files": t.min_files},
                      cost=mean_meta * (1 - t.files_per_process / fpp), model="metadata-per-file",
                      action=f"aggregate the {files} files into fewer (≤ {t.files_per_process:g} per process)",
                      overlaps=("P17", "L03")))

    out += _lustre_findings(log, t, clock)
    return costs.attach(out, clock)


def _stdio_cost(ch: dict, sb: float, clock: costs.Clock) -> float:
    st, px = ch["interfaces"].get("STDIO", {}), ch["interfaces"].get("POSIX", {})
    t_stdio = sum(st.get(k) or 0.0 for k in ("read_time_s", "write_time_s", "meta_time_s"))
    pb = (px.get("bytes_read") or 0) + (px.get("bytes_written") or 0)
    pt = (px.get("read_time_s") or 0.0) + (px.get("write_time_s") or 0.0)
    if pb <= 0 or pt <= 0:
        return 0.0  # no POSIX rate to compare with
    return clock.wall(max(0.0, t_stdio - sb / (pb / pt)))


def _lustre_findings(log, t: Thresholds, clock: costs.Clock) -> list[dict]:
    files = lustre_files(log)
    if files is None or not len(files):
        return []
    out = []
    osts = t.lustre_osts or ost_count(log.lustre)
    # L01: large files on far fewer OSTs than they could use
    target = np.array([costs.stripe_target(s, osts) for s in files["size"]])
    big = files[(files["size"] >= t.lustre_large_file_bytes)
                & (files["stripe_count"] * t.lustre_stripe_shortfall < target)].assign(target=target[
                    ((files["size"] >= t.lustre_large_file_bytes)
                     & (files["stripe_count"] * t.lustre_stripe_shortfall < target)).to_numpy()])
    if len(big):
        saving = np.array([costs.striping_saving(r.wall_s, r.stripe_count, r.target) for r in big.itertuples()])
        w = big.iloc[int(np.argmax(saving))]
        one = w["movers"] == 1 and w["bytes"] > 0
        who = (f"all of its bytes moved by one rank (rank {w['top_rank']})" if one
               else f"moved by at least {w['movers']} of its {w['nranks']} ranks")
        where = _dir(w["name"])
        fix = f"lfs setstripe -c {int(w['target'])} -S {lfs_size(max(int(w['stripe_size']), MiB))} {where}"
        out.append(_f("L01", f"{len(big)} large Lustre file(s) striped over too few OSTs; worst: "
                      f"{w['name'] or 'unnamed'} ({format_bytes(w['size'])}, {format_bytes(w['bytes'])} moved, "
                      f"{format_seconds(w['wall_s'])}) on {w['stripe_count']} OST(s) of ≥ {osts}, {who}. Before "
                      f"creating it: {fix}" + ("; and write it from several ranks (collective MPI-IO)" if one else ""),
                      {"files": int(len(big)), "worst_file": w["name"], "size_bytes": float(w["size"]),
                       "bytes": float(w["bytes"]), "stripe_count": int(w["stripe_count"]),
                       "usable_stripe_count": int(w["target"]), "fs_osts": osts, "ranks_moving": int(w["movers"]),
                       "top_rank": w["top_rank"], "file_time_s": float(w["wall_s"])},
                      {"lustre_large_file_bytes": t.lustre_large_file_bytes,
                       "lustre_stripe_shortfall": t.lustre_stripe_shortfall, "lustre_osts": t.lustre_osts},
                      cost=float(saving.sum()), model="striping", fix=fix,
                      action=(f"stripe the {format_bytes(w['size'])} file {w['name'] or ''} over {int(w['target'])} "
                              f"OSTs, not {w['stripe_count']}" + (", and share its I/O out from the one rank that "
                                                                  "does it all" if one else "") + f" ({fix})"),
                      overlaps=("P18", "P19")))
    # L02: stripe size vs dominant request size
    acc = files["access"].to_numpy(np.int64)
    z = files["stripe_size"].to_numpy(np.int64)
    ok = (acc >= 64 * 1024) & (z > 0) & (files["bytes"].to_numpy() >= t.min_bytes)
    mis = ok & (acc % np.maximum(z, 1) != 0) & (z % np.maximum(acc, 1) != 0)
    if mis.any():
        m = files[mis]
        saving = sum(costs.misaligned_saving(r.rw_s, 1.0, r.access, r.stripe_size) for r in m.itertuples())
        w = m.iloc[int(np.argmax(m["bytes"].to_numpy()))]
        fix = (f"lfs setstripe -S {lfs_size(int(w['access']))} {_dir(w['name'])}" if w["access"] % (64 * 1024) == 0 else None)
        out.append(_f("L02", f"{int(mis.sum())} Lustre file(s) whose dominant request size does not divide into "
                      f"their stripe size, nor the reverse (worst: {w['name'] or 'unnamed'}, requests of "
                      f"{format_bytes(w['access'])} on {format_bytes(w['stripe_size'])} stripes): requests straddle "
                      "OSTs; " + (f"use {fix}" if fix else "make the request size a multiple of the stripe size"),
                      {"files": int(mis.sum()), "worst_file": w["name"], "request_bytes": int(w["access"]),
                       "stripe_size_bytes": int(w["stripe_size"])}, {"min_bytes": t.min_bytes},
                      cost=clock.wall(saving), model="misaligned", fix=fix,
                      action="align the Lustre stripe size with the request size"))
    # L03: many small files on a wide stripe
    small = files[(files["size"] < t.lustre_small_file_bytes) & (files["stripe_count"] > 1)]
    if len(small) >= t.lustre_small_files:
        c_mean = float(small["stripe_count"].mean())
        where = _dir(small["name"].iloc[0])
        fix = f"lfs setstripe -c 1 {where}"
        out.append(_f("L03", f"{len(small)} Lustre files smaller than {format_bytes(t.lustre_small_file_bytes)} "
                      f"are striped over {c_mean:.0f} OSTs on average: each open and close talks to every OST; {fix}",
                      {"files": int(len(small)), "mean_stripe_count": c_mean},
                      {"lustre_small_file_bytes": t.lustre_small_file_bytes, "lustre_small_files": t.lustre_small_files},
                      cost=clock.wall(float(small["meta_s"].sum()) * (1 - 1 / c_mean)), model="small-files-striping",
                      fix=fix, action=f"put the small files on one stripe: {fix}", overlaps=("F01", "P17")))
    return out


def _dir(name) -> str:
    """The directory of a file name, for `lfs setstripe` (the layout of new files comes from it)."""
    if not name or "/" not in str(name):
        return "<directory of the file>"
    return str(name).rsplit("/", 1)[0] or "/"


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
    #: Costs of P05/P06 (set by their rule), which the MPI-IO collective findings reuse.
    small_cost: dict = field(default_factory=dict)

    @property
    def f(self):
        return self.c

    @property
    def ops(self) -> float:
        return self.reads + self.writes


def _posix_findings(log, ch, posix, t: Thresholds, nprocs: int, clock: costs.Clock) -> tuple[list[dict], dict]:
    """The POSIX rules in order, and the costs of P05/P06."""
    c = cols(posix)
    x = _Posix(c=c, posix=posix, t=t, nprocs=nprocs, clock=clock, ranks=c["rank"],
               shared_mask=(c["rank"] < 0) & (nprocs > 1),
               reads=float(np.nansum(monitored(c, "POSIX_READS"))), writes=float(np.nansum(monitored(c, "POSIX_WRITES"))),
               br=float(np.nansum(monitored(c, "POSIX_BYTES_READ"))), bw=float(np.nansum(monitored(c, "POSIX_BYTES_WRITTEN"))),
               t_read=float(np.nansum(monitored(c, "POSIX_F_READ_TIME"))),
               t_write=float(np.nansum(monitored(c, "POSIX_F_WRITE_TIME"))))
    out = []
    for rule in POSIX_RULES:
        out += rule(x)
    return out, x.small_cost


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
        small, n, small_b = small_requests(c, "POSIX", kind, t.small_bytes)
        word = kind.lower()
        t_kind = t_read if kind == "READ" else t_write
        thr = {"small_bytes": t.small_bytes, "small_requests": t.small_requests,
               "small_requests_absolute": t.small_requests_absolute}
        cost = clock.wall(costs.small_request_saving(t_kind, n, small, b_kind, small_b, t.small_bytes))
        x.small_cost[code] = cost
        if n and small / n > t.small_requests and small > t.small_requests_absolute:
            out.append(_f(code, f"{small:,} of {n:,} {word}s ({100 * small / n:.0f}%) are smaller than "
                          f"{format_bytes(t.small_bytes)}: aggregate them into larger requests (buffering, MPI-IO collective)",
                          {"small": small, "total": n, "share": small / n, "small_bytes_estimate": small_b}, thr,
                          cost=cost, model="small-requests", action=f"aggregate the {small:,} small {word}s",
                          overlaps=(code_sh, "M02" if kind == "READ" else "M03")))
        if shared_mask.any():
            sc = subset(c, shared_mask)
            small_s, n_s, small_bs = small_requests(sc, "POSIX", kind, t.small_bytes)
            if n_s and small_s / n_s > t.small_requests and small_s > t.small_requests_absolute:
                b_s = float(np.nansum(monitored(sc, f"POSIX_BYTES_{'READ' if kind == 'READ' else 'WRITTEN'}")))
                t_s = float(np.nansum(monitored(sc, t_col)))
                cost_s = clock.wall(costs.small_request_saving(t_s, n_s, small_s, b_s, small_bs, t.small_bytes))
                out.append(_f(code_sh, f"{small_s:,} of {n_s:,} {word}s to shared files are smaller than "
                              f"{format_bytes(t.small_bytes)}: use collective MPI-IO on shared files",
                              {"small": small_s, "total": n_s, "share": small_s / n_s}, thr,
                              cost=cost_s, model="small-requests",
                              action=f"use collective MPI-IO for the small shared-file {word}s",
                              overlaps=(code, "M02" if kind == "READ" else "M03")))
    return out


def _misalignment(x: _Posix) -> list[dict]:
    """P07/P08 misalignment"""
    out = []
    c, t, clock, br, bw = x.c, x.t, x.clock, x.br, x.bw
    t_read, t_write, ops = x.t_read, x.t_write, x.ops
    mem = float(np.nansum(monitored(c, "POSIX_MEM_NOT_ALIGNED")))
    fil = float(np.nansum(monitored(c, "POSIX_FILE_NOT_ALIGNED")))
    if ops:
        align = monitored(c, "POSIX_FILE_ALIGNMENT")
        unit = float(np.nanmedian(align)) if np.isfinite(align).any() else 0.0
        for code, val, what in (("P07", mem, "memory"), ("P08", fil, "file")):
            if val / ops > t.misaligned_requests and val >= t.min_operations:
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
    c, f, t, clock = x.c, x.f, x.t, x.clock
    for kind, code, bytes_col, max_col, t_col in (
            ("read", "P09", "POSIX_BYTES_READ", "POSIX_MAX_BYTE_READ", "POSIX_F_READ_TIME"),
            ("written", "P10", "POSIX_BYTES_WRITTEN", "POSIX_MAX_BYTE_WRITTEN", "POSIX_F_WRITE_TIME")):
        b = monitored(c, bytes_col)
        m = monitored(c, max_col)
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
    c, t, clock, t_read, t_write = x.c, x.t, x.clock, x.t_read, x.t_write
    for kind, code_bad, code_ok, t_kind in (("READS", "P11", "P12", t_read), ("WRITES", "P13", "P14", t_write)):
        n = monitored(c, f"POSIX_{kind}")
        seq = monitored(c, f"POSIX_SEQ_{kind}")
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
                          cost=clock.wall(costs.random_saving(t_kind, total_n, rand)), model="random",
                          action=f"make the {word}s sequential (sort or batch them by offset)"))
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
    f, t, nprocs, ranks = x.f, x.t, x.nprocs, x.ranks
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
    c, f, t, nprocs, posix = x.c, x.f, x.t, x.nprocs, x.posix
    shared_mask = x.shared_mask
    if shared_mask.any():
        sc, sf = subset(c, shared_mask), subset(f, shared_mask)
        tb = np.nan_to_num(monitored(sc, "POSIX_BYTES_READ")) + np.nan_to_num(monitored(sc, "POSIX_BYTES_WRITTEN"))
        db = np.abs(monitored(sc, "POSIX_SLOWEST_RANK_BYTES") - monitored(sc, "POSIX_FASTEST_RANK_BYTES"))
        tt = (np.nan_to_num(monitored(sf, "POSIX_F_READ_TIME")) + np.nan_to_num(monitored(sf, "POSIX_F_WRITE_TIME"))
              + np.nan_to_num(monitored(sf, "POSIX_F_META_TIME")))
        slowest_t = np.nan_to_num(monitored(sf, "POSIX_F_SLOWEST_RANK_TIME"))
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
                              {"stragglers": t.stragglers},
                              cost=costs.straggler_excess(slowest_t[bad], tt[bad], nprocs), model="straggler",
                              action="balance the shared-file I/O across ranks",
                              overlaps=("P19" if code == "P18" else "P18", "L01")))
    return out


def _rank_imbalance(x: _Posix) -> list[dict]:
    """P21/P22 imbalance across ranks of non-shared files (files opened by several ranks separately)"""
    out = []
    c, f, t, nprocs, ranks = x.c, x.f, x.t, x.nprocs, x.ranks
    if nprocs > 1:
        own = ranks >= 0
        ids = c["id"][own]
        if len(ids):
            uniq, inv = np.unique(ids, return_inverse=True)
            nr = np.bincount(np.unique(inv.astype(np.int64) * (nprocs + 1) + ranks[own]) // (nprocs + 1),
                             minlength=len(uniq))
            multi = nr[inv] > 1
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
                                  overlaps=("P22" if code == "P21" else "P21",)))
    return out


#: The POSIX rules, in the order their findings are listed (before the ranking by cost).
POSIX_RULES = (_intensity, _small_requests_rule, _misalignment, _redundant_traffic, _non_sequential,
               _metadata_per_rank, _shared_stragglers, _rank_imbalance)
