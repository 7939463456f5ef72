"""Lustre striping per file, from Darshan's LUSTRE module joined with the POSIX records (findings L01-L03).

Darshan records each Lustre file's layout (stripe count, stripe size, OST indices) but
not the file system's OST count: the highest OST index seen in the log + 1 is used as
a lower bound unless the `lustre_osts` threshold gives the real count.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ioweather.stats.job import cols, monitored, zero_missing


def ost_count(lustre: pd.DataFrame) -> int:
    """Highest OST index in the log's Lustre records + 1 (0 when none): a lower bound of the file system's count."""
    top = -1
    for s in lustre["ost_ids"]:
        for o in str(s).split(","):
            if o:
                top = max(top, int(o))
    return top + 1


#: A shared file whose slowest rank moved at least this share of its bytes was moved by that one rank.
ONE_RANK_SHARE = 0.99


def _movers(moved: float, slowest_bytes: float, nprocs: int) -> int:
    """A lower bound of the ranks that moved a shared file's bytes, from Darshan's slowest-rank counter:
    1 when that rank moved ONE_RANK_SHARE of them, else ceil(bytes / its bytes)."""
    if not np.isfinite(slowest_bytes) or slowest_bytes <= 0:
        return nprocs
    if slowest_bytes >= ONE_RANK_SHARE * moved:
        return 1
    return int(np.ceil(moved / slowest_bytes))


def lfs_size(n: int) -> str:
    """A stripe size as `lfs setstripe -S` takes it: 4M, 64K, or bytes."""
    for unit, k in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return str(n)


def lustre_files(log) -> pd.DataFrame | None:
    """One row per POSIX file with a Lustre layout: name, stripe_count, stripe_size, size (highest
    offset + 1), bytes moved, ops, ranks (that opened it), movers (lower bound of the ranks that moved
    its bytes), top_rank (the rank that moved most), wall time (slowest rank), cumulative read+write
    and metadata time, dominant request size. None when the log has no Lustre or POSIX records."""
    lu, posix = log.lustre, log.records.get("POSIX")
    if lu is None or not len(lu) or posix is None or not len(posix):
        return None
    c = cols(posix)
    nprocs = max(int(log.nprocs), 1)
    layout = lu.drop_duplicates("id").set_index("id")
    ids = c["id"]
    keep = np.isin(ids, layout.index.to_numpy(np.uint64))
    if not keep.any():
        return None
    rank = c["rank"]
    moved = zero_missing(c, "POSIX_BYTES_READ") + zero_missing(c, "POSIX_BYTES_WRITTEN")
    rw = zero_missing(c, "POSIX_F_READ_TIME") + zero_missing(c, "POSIX_F_WRITE_TIME")
    meta = zero_missing(c, "POSIX_F_META_TIME")
    slow_t = monitored(c, "POSIX_F_SLOWEST_RANK_TIME")
    slow_b = monitored(c, "POSIX_SLOWEST_RANK_BYTES")
    slow_r = monitored(c, "POSIX_SLOWEST_RANK")
    size = np.fmax(monitored(c, "POSIX_MAX_BYTE_READ"), monitored(c, "POSIX_MAX_BYTE_WRITTEN")) + 1
    ops = zero_missing(c, "POSIX_READS") + zero_missing(c, "POSIX_WRITES")
    acc = zero_missing(c, "POSIX_ACCESS1_ACCESS")
    df = pd.DataFrame({"id": ids, "rank": rank, "name": posix.names, "moved": moved, "rw": rw, "meta": meta,
                       "slow_t": slow_t, "slow_b": slow_b, "slow_r": slow_r, "size": size, "ops": ops,
                       "access": acc})[keep]
    rows = []
    for fid, g in df.groupby("id", sort=False):
        shared = bool((g["rank"] < 0).any())
        b = float(g["moved"].sum())
        if shared:
            r = g[g["rank"] < 0].iloc[0]
            wall = r["slow_t"] if np.isfinite(r["slow_t"]) and r["slow_t"] > 0 else float(r["rw"] + r["meta"])
            movers = _movers(b, r["slow_b"], nprocs)
            top = int(r["slow_r"]) if np.isfinite(r["slow_r"]) else None
            nranks = nprocs
        else:
            per = g["rw"] + g["meta"]
            wall = float(per.max())
            movers = int((g["moved"] > 0).sum())
            top = int(g["rank"].iloc[int(np.argmax(g["moved"].to_numpy()))])
            nranks = int(g["rank"].nunique())
        lay = layout.loc[fid]
        rows.append({"id": fid, "name": g["name"].iloc[0], "shared": shared, "nranks": nranks,
                     "movers": max(min(movers, nranks), 1 if b > 0 else 0), "top_rank": top,
                     "stripe_count": int(lay["stripe_count"]), "stripe_size": int(lay["stripe_size"]),
                     "size": float(np.nanmax(g["size"].to_numpy())) if np.isfinite(g["size"]).any() else 0.0,
                     "bytes": b, "ops": float(g["ops"].sum()), "wall_s": float(wall),
                     "rw_s": float(g["rw"].sum()), "meta_s": float(g["meta"].sum()),
                     "access": int(g["access"].iloc[int(np.argmax(g["ops"].to_numpy()))])})
    return pd.DataFrame(rows)
