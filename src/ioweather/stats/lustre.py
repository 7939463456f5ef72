"""Lustre striping per file, from Darshan's LUSTRE module joined with the POSIX records (findings L01-L03).

Darshan records each Lustre file's layout (stripe count, stripe size, OST indices) but
not the file system's OST count: the highest OST index seen in the log + 1 is used as
a lower bound unless the `lustre_osts` threshold gives the real count.
"""

from __future__ import annotations

import numpy as np

from ioweather.stats.job import (cols, distinct, first_layouts, member, monitored, monitored_block, unique_first_inverse,
                                  zero_missing, zero_missing_block)


def ost_count(lustre) -> int:
    """Highest OST index in the log's Lustre records (sources.darshan_log.LustreLayouts) + 1 (0 when none): a lower
    bound of the file system's count."""
    # each distinct list once: a file's records on every rank repeat its list (1.4 ms a log of thousands of records)
    ids = [o for v in dict.fromkeys(map(str, lustre.ost_ids.tolist())) for o in v.split(",") if o]
    return max(-1, max(map(int, ids), default=-1)) + 1


#: A shared file whose slowest rank moved at least this share of its bytes was moved by that one rank.
ONE_RANK_SHARE = 0.99


def lfs_size(n: int) -> str:
    """A stripe size as `lfs setstripe -S` takes it: 4M, 64K, or bytes."""
    for unit, k in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def lustre_file_columns(log) -> dict[str, np.ndarray] | None:
    """One row per POSIX file with a Lustre layout: name, stripe_count, stripe_size, size (highest
    offset + 1), bytes moved, ops, ranks (that opened it), movers (lower bound of the ranks that moved
    its bytes), top_rank (the rank that moved most), wall time (slowest rank), cumulative read+write
    and metadata time, dominant request size. None when the log has no Lustre or POSIX records.

    Files in the order of their first POSIX record. A file's records (one per rank, or one shared
    record of rank -1) are reduced over all files at once: a log of thousands of Lustre files took a
    DataFrame lookup per file and counter before (issue 40). Sums follow numpy's own summation
    (`_group_sums`), so the times are the same to the last bit as a per-file `sum()`."""
    lu, posix = log.lustre, log.records.get("POSIX")
    if lu is None or not len(lu) or posix is None or not len(posix):
        return None
    c = cols(posix)
    nprocs = max(int(log.nprocs), 1)
    lay_ids, lay_first = first_layouts(lu)
    ids = np.asarray(c["id"], dtype=np.uint64)
    keep = member(ids, lay_ids)
    if not keep.any():
        return None
    rows = np.flatnonzero(keep)
    # group the kept records by file, files in order of first appearance, records in their order
    uniq, first, inv = unique_first_inverse(ids[rows])
    order_of = np.empty(len(uniq), np.int64)
    order_of[np.argsort(first, kind="stable")] = np.arange(len(uniq))
    g = order_of[inv.ravel()]
    srt = np.argsort(g, kind="stable")
    rows, g = rows[srt], g[srt]
    n_files = len(uniq)
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    counts = np.diff(np.r_[starts, len(g)])

    def col(name: str) -> np.ndarray:
        return zero_missing(c, name)[rows]

    rank = np.asarray(c["rank"], dtype=np.int64)[rows]
    # the counters in one block, the highest offsets in another (one conversion each, issue 40)
    br, bw, n_r, n_w, acc = zero_missing_block(c, ["POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_READS",
                                                   "POSIX_WRITES", "POSIX_ACCESS1_ACCESS"])[:, rows]
    moved = br + bw
    rw = col("POSIX_F_READ_TIME") + col("POSIX_F_WRITE_TIME")
    meta = col("POSIX_F_META_TIME")
    ops = n_r + n_w
    max_r, max_w = monitored_block(c, ["POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN"])[:, rows]
    size = np.fmax(max_r, max_w) + 1
    b, ops_sum, rw_sum, meta_sum = _group_sums(np.vstack([moved, ops, rw, meta]), starts, counts)
    file_size = np.fmax.reduceat(size, starts)
    file_size[np.isnan(file_size)] = 0.0

    # not shared: records of single ranks
    per = rw + meta
    wall = np.maximum.reduceat(per, starts)
    movers = np.add.reduceat((moved > 0).astype(np.int64), starts)
    top = rank[_first_argmax(moved, g, starts)].astype(np.float64)
    # the distinct (file, rank) pairs, each one integer key
    low = int(rank.min())
    span = int(rank.max()) - low + 1
    nranks = np.bincount(distinct(g * span + (rank - low)) // span, minlength=n_files)
    # shared: the file's first record of rank -1 holds the slowest rank's time, bytes and rank
    is_sh = rank < 0
    shared = np.logical_or.reduceat(is_sh, starts)
    if shared.any():
        sh_rows = np.flatnonzero(is_sh)
        sh_files, pick, _ = unique_first_inverse(g[sh_rows])
        r = sh_rows[pick]
        slow_t = monitored(c, "POSIX_F_SLOWEST_RANK_TIME")[rows[r]]
        slow_b = monitored(c, "POSIX_SLOWEST_RANK_BYTES")[rows[r]]
        slow_r = monitored(c, "POSIX_SLOWEST_RANK")[rows[r]]
        wall[sh_files] = np.where(np.isfinite(slow_t) & (slow_t > 0), slow_t, rw[r] + meta[r])
        movers[sh_files] = _movers_of(b[sh_files], slow_b, nprocs)
        top[sh_files] = np.where(np.isfinite(slow_r), np.trunc(slow_r), np.nan)
        nranks[sh_files] = nprocs
    movers = np.maximum(np.minimum(movers, nranks), (b > 0).astype(np.int64))
    file_ids = ids[rows[starts]]
    layout = lay_first[np.searchsorted(lay_ids, file_ids)]
    names = np.asarray(posix.names, dtype=object)[rows[starts]]
    return {
        "id": _ids_column(file_ids), "name": names, "shared": shared, "nranks": nranks.astype(np.int64),
        "movers": movers.astype(np.int64), "top_rank": _ranks_column(top), "stripe_count":
        lu.stripe_count[layout], "stripe_size": lu.stripe_size[layout],
        "size": file_size, "bytes": b, "ops": ops_sum, "wall_s": wall, "rw_s": rw_sum, "meta_s": meta_sum,
        "access": acc[_first_argmax(ops, g, starts)].astype(np.int64)}


def _group_sums(values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums of each row of `values` over the contiguous groups beginning at `starts`, each group's
    equal to `values[:, group].sum(axis=1)`: reduceat adds in sequence while sum() adds pairwise, so
    groups of 3 or more records (files opened by several ranks, a few per log) are summed one by one."""
    out = np.add.reduceat(values, starts, axis=1)
    for i in np.flatnonzero(counts > 2):
        out[:, i] = values[:, starts[i]:starts[i] + counts[i]].sum(axis=1)
    return out


def _first_argmax(v: np.ndarray, g: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per contiguous group of `v` (group ids `g`, beginning at `starts`), the index of its first maximum."""
    at_max = v == np.maximum.reduceat(v, starts)[g]
    hits = np.flatnonzero(at_max)
    return hits[np.searchsorted(hits, starts)]


def _movers_of(moved: np.ndarray, slowest_bytes: np.ndarray, nprocs: int) -> np.ndarray:
    """Lower bounds of the ranks that moved each shared file's bytes, from Darshan's slowest-rank counter:
    1 when that rank moved ONE_RANK_SHARE of them, else ceil(bytes / its bytes); `nprocs` when unknown."""
    ok = np.isfinite(slowest_bytes) & (slowest_bytes > 0)
    safe = np.where(ok, slowest_bytes, 1.0)
    many = np.ceil(np.divide(moved, safe, out=np.zeros_like(moved), where=ok))
    return np.where(~ok, nprocs, np.where(slowest_bytes >= ONE_RANK_SHARE * moved, 1, many)).astype(np.int64)


def _ids_column(ids: np.ndarray) -> np.ndarray:
    """Record ids typed as the per-file rows made them (Python ints in a DataFrame): int64 when all fit."""
    return ids.astype(np.int64) if not len(ids) or ids.max() < 2**63 else ids


def _ranks_column(top: np.ndarray):
    """Top ranks as a per-file list of ints or None would make them in a DataFrame: int64 when all are
    known, float64 with NaN when some are, objects (None) when none is."""
    known = np.isfinite(top)
    if known.all():
        return top.astype(np.int64)
    if not known.any():
        return np.full(len(top), None, dtype=object)
    return top
