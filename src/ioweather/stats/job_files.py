"""One job's view from the archive's per-file table (one row per file and module, `stats.job.file_columns`).

The Jobs dashboard page shows an ingested job without reading its log again: these
functions rebuild, from the stored rows, the per-interface and per-mount parts of
`stats.job.characterize` (the same sums over the same records, so the numbers equal
`ioweather job LOG --json`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ioweather.stats.job import FS_MODULES, LUSTRE_FILE_COLUMNS, lustre_summary

SUMS = ("bytes_read", "bytes_written", "reads", "writes", "opens", "read_time_s", "write_time_s", "meta_time_s")


def per_module(files: pd.DataFrame) -> list[dict]:
    """Per module: files, bytes, operations and cumulative times (all ranks), largest volume first."""
    if not len(files):
        return []
    g = files.groupby("module", sort=False)
    agg = g[list(SUMS)].sum()
    agg["files"] = g["record_id"].nunique()
    rows = []
    for mod, r in agg.iterrows():
        row = {"module": str(mod), "files": int(r["files"])}
        for k in SUMS:
            row[k] = float(r[k]) if k.endswith("_s") else int(r[k])
        rows.append(row)
    rows.sort(key=lambda r: -(r["bytes_read"] + r["bytes_written"]))
    return rows


def per_mount(files: pd.DataFrame) -> list[dict]:
    """Per mount point at the file-system layer (POSIX + STDIO), as `stats.job.mounts_summary`, with the
    Lustre layout when the table has it (parts written before it was stored lack the columns)."""
    fs = files[files["module"].isin(FS_MODULES)]
    if not len(fs):
        return []
    mount = fs["mount"].fillna("").astype(str)
    fstype = fs["fs_type"].fillna("").astype(str)
    g = fs.assign(_m=mount, _t=fstype).groupby(["_m", "_t"], sort=False)
    agg = g.agg(files=("record_id", "nunique"), bytes_read=("bytes_read", "sum"), bytes_written=("bytes_written", "sum"))
    rows = [{"mount": m or None, "fs_type": t or None, "files": int(r["files"]), "bytes_read": int(r["bytes_read"]),
             "bytes_written": int(r["bytes_written"])} for (m, t), r in agg.iterrows()]
    if all(c in fs.columns for c in LUSTRE_FILE_COLUMNS):
        lu = fs.assign(_m=mount, _t=fstype)
        lu = lu[lu["stripe_count"].notna()].drop_duplicates("record_id")
        for row in rows:
            sel = lu[(lu["_m"] == (row["mount"] or "")) & (lu["_t"] == (row["fs_type"] or ""))]
            if len(sel):
                row["lustre"] = lustre_summary(sel["record_id"].to_numpy(np.uint64), sel["stripe_size"].to_numpy(),
                                               sel["stripe_count"].to_numpy(), sel["ost_ids"])
    rows.sort(key=lambda r: -(r["bytes_read"] + r["bytes_written"]))
    return rows


def top_files(files: pd.DataFrame, n: int = 20) -> list[dict]:
    """The `n` (file, module) rows that moved the most bytes."""
    if not len(files):
        return []
    moved = files["bytes_read"].to_numpy(np.int64) + files["bytes_written"].to_numpy(np.int64)
    order = np.argsort(-moved, kind="stable")[:n]
    out = []
    for i in order:
        r = files.iloc[int(i)]
        out.append({"name": None if pd.isna(r["name"]) else str(r["name"]), "module": str(r["module"]),
                    "sharing": str(r["sharing"]), "nranks": int(r["nranks"]), "bytes_read": int(r["bytes_read"]),
                    "bytes_written": int(r["bytes_written"]), "read_time_s": float(r["read_time_s"]),
                    "write_time_s": float(r["write_time_s"]), "meta_time_s": float(r["meta_time_s"]),
                    "mount": (str(r["mount"]) or None) if not pd.isna(r["mount"]) else None})
    return out
