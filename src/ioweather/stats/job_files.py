"""One job's view from the archive's per-file table (one row per file and module, `stats.job.file_columns`).

The Jobs dashboard page shows an ingested job without reading its log again: these
functions rebuild, from the stored rows, the per-interface and per-mount parts of
`stats.job.characterize` (the same sums over the same records, so the numbers equal
`ioweather job LOG --json`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ioweather.stats.job import FS_MODULES, LUSTRE_FILE_COLUMNS, lustre_summary

if TYPE_CHECKING:
    import pandas as pd

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


#: Files listed by the job page, `jobs show` and the HTML report of `ioweather job`.
TOP_FILES = 25


def top_files(files, n: int = TOP_FILES) -> list[dict]:
    """The `n` (file, module) rows that moved the most bytes, ties in table order.

    `files`: the per-file table as a DataFrame read from the archive's Parquet (`record_id`) or as
    `stats.job.file_columns`' arrays (`id`), so the CLI's report and the dashboard rank one way."""
    ids = files["record_id"] if "record_id" in files else files["id"]
    if not len(ids):
        return []
    col = {k: np.asarray(files[k]) for k in ("name", "module", "sharing", "nranks", "bytes_read", "bytes_written",
                                              "read_time_s", "write_time_s", "meta_time_s", "mount")}
    ids = np.asarray(ids)
    moved = col["bytes_read"].astype(np.int64) + col["bytes_written"].astype(np.int64)
    return [{"name": _text(col["name"][i]), "record_id": int(ids[i]), "module": str(col["module"][i]),
             "sharing": str(col["sharing"][i]), "nranks": int(col["nranks"][i]),
             "bytes_read": int(col["bytes_read"][i]), "bytes_written": int(col["bytes_written"][i]),
             "moved_bytes": int(moved[i]), "read_time_s": float(col["read_time_s"][i]),
             "write_time_s": float(col["write_time_s"][i]), "meta_time_s": float(col["meta_time_s"][i]),
             "mount": _text(col["mount"][i])}
            for i in (int(j) for j in np.argsort(-moved, kind="stable")[:n])]


def top_file(files) -> str | None:
    """The name of the file that moved the most bytes (None when nothing moved): the job row's `top_file`."""
    top = top_files(files, 1)
    return top[0]["name"] if top and top[0]["moved_bytes"] > 0 else None


def _text(v) -> str | None:
    """A name or mount as text; None for a missing one (None, NaN from Parquet, or empty)."""
    return None if v is None or (isinstance(v, float) and np.isnan(v)) or v == "" else str(v)
