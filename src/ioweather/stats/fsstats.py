"""Content-snapshot statistics (METHODS.md section 5; seed 002 section IV-A, fsstats).

Pure functions: bucket arrays and totals in, numbers out.

Buckets.  The walker folds every value into bucket k of a fixed array:
- log2 (sizes, capacity, entries per directory, link count): k = bit length of
  the value, i.e. k = 0 holds 0 and k >= 1 holds [2^(k-1), 2^k);
- log2 of whole days (ages): k = 0 holds ages under one day (and timestamps in
  the future), k >= 1 holds [2^(k-1), 2^k) days;
- linear8 (name and symlink target length in bytes): k holds [8k, 8k + 8), as
  fsstats does; the last bucket, k = 64, gathers everything from 512 bytes on
  (Linux caps a symlink target at 4095 bytes, a name at 255).
Every bucket carries the number of items, the sum of their st_size ("bytes", the
weight of the by-bytes CDFs of seed 002 Figs. 8 and 9) and the sum of the values
themselves; age buckets also carry the byte-weighted sum of ages.

Overhead (capacity minus size, per inode) is signed, so it is kept as two
histograms as fsstats keeps it: "positive" (capacity >= size: block rounding,
indirect blocks) and "negative" (size > capacity: holes, compression, data kept
in the inode), both bucketed by the item's *size* (log2), with the overhead
itself as the bucket's value sum; `overhead_histogram` joins them for JSON.

The fsstats CSV layout (fsstats 1.4.5, Unangst & Dayal) uses coarser buckets:
[0, 2) then [2^b, 2^(b+1)) KB or days, and {0, 1} then [2^b, 2^(b+1) - 1] for
integer counts.  Every such bucket is a union of ours, so `fsstats_sections`
rebins exactly instead of estimating.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import numpy as np

from ioweather.units import ns_to_iso

NS_PER_DAY = 86_400 * 10**9
SNAPSHOT_FORMAT = "ioweather-fsstats-snapshot/1"
LOG2, LOG2_DAYS, LINEAR8 = "log2", "log2_days", "linear8"

#: JSON name -> (walker key, bucket scheme, unit)
HISTOGRAMS: dict[str, tuple[str, str, str]] = {
    "file_size": ("file_size", LOG2, "bytes"),
    "capacity": ("capacity", LOG2, "bytes"),
    "dir_entries": ("dir_entries", LOG2, "entries"),
    "name_length": ("name_length", LINEAR8, "bytes"),
    "link_count": ("link_count", LOG2, "links"),
    "atime_age_days": ("atime_age", LOG2_DAYS, "days"),
    "mtime_age_days": ("mtime_age", LOG2_DAYS, "days"),
    "ctime_age_days": ("ctime_age", LOG2_DAYS, "days"),
    "dir_size": ("dir_size", LOG2, "bytes"),
    "symlink_target_length": ("symlink_target_length", LINEAR8, "bytes"),
}
LINEAR8_LAST = 64        # the walker's last linear bucket: everything from 512 bytes on
LINEAR8_LAST_MAX = 4096  # PATH_MAX: no symlink target or name reaches it on Linux


def bucket_bounds(scheme: str, k: int) -> tuple[int, int]:
    """[min, max) of bucket k: in the metric's unit (days for ages)."""
    if scheme == LINEAR8:
        return (8 * k, 8 * k + 8) if k < LINEAR8_LAST else (8 * k, LINEAR8_LAST_MAX)
    return (0, 1) if k == 0 else (1 << (k - 1), 1 << k)


def histogram(raw: dict, scheme: str, unit: str) -> dict:
    """One histogram for JSON: summary (count, min, max, mean) and the buckets from the
    first to the last non-empty one.

    `raw` holds arrays `count`, `bytes`, `sum` (and `wsum` for ages, in ns and ns*bytes)
    and scalars `n`, `min`, `max` in raw units (ns for ages).
    """
    count = np.asarray(raw["count"], dtype=np.uint64)
    nbytes = np.asarray(raw["bytes"], dtype=np.uint64)
    ages = scheme == LOG2_DAYS
    scale = NS_PER_DAY if ages else 1
    sums = np.asarray(raw["sum"], dtype=np.float64 if ages else np.uint64)
    n = int(raw["n"])
    total = float(sums.sum()) if ages else int(sums.sum())
    out: dict = {"unit": unit, "count": n,
                 "min": _unit(raw["min"], scale), "max": _unit(raw["max"], scale),
                 "mean": (total / scale / n) if n else None, "buckets": []}
    nz = np.flatnonzero(count)
    if not len(nz):
        return out
    for k in range(int(nz[0]), int(nz[-1]) + 1):
        lo, hi = bucket_bounds(scheme, k)
        b = {"min": lo, "max": hi, "count": int(count[k]), "bytes": int(nbytes[k]),
             "sum": float(sums[k]) / scale if ages else int(sums[k])}
        if ages:
            b["byte_days"] = float(raw["wsum"][k]) / scale
        out["buckets"].append(b)
    return out


def _unit(v, scale):
    if v is None:
        return None
    return v / scale if scale != 1 else int(v)


def overhead_histogram(pos: dict, neg: dict) -> dict:
    """Capacity minus size of every regular file, directory and symlink (each inode once), from
    the walker's positive and negative overhead histograms (raw, as `histogram` takes them).

    Buckets are the items' sizes (log2 bytes, as `file_size`); each has `count` and `bytes`
    (Σ st_size) of its items, `sum` (Σ capacity − size, signed), and the two sides as fsstats
    prints them: `positive_count`/`positive_sum` (Σ capacity − size where capacity >= size) and
    `negative_count`/`negative_sum` (Σ size − capacity where size > capacity).  The summary
    (`count`, `min`, `max`, `mean`) is of the signed overhead; `positive` and `negative` give
    each side's `count`, `sum`, `min` and `max` (magnitudes).
    """
    sides = {}
    for name, raw in (("positive", pos), ("negative", neg)):
        count = np.asarray(raw["count"], dtype=np.uint64)
        sides[name] = {"count": count, "bytes": np.asarray(raw["bytes"], dtype=np.uint64),
                       "sum": np.asarray(raw["sum"], dtype=np.uint64),
                       "summary": {"count": int(raw["n"]), "sum": int(np.asarray(raw["sum"], dtype=np.uint64).sum()),
                                   "min": None if raw["min"] is None else int(raw["min"]),
                                   "max": None if raw["max"] is None else int(raw["max"])}}
    p, n = sides["positive"], sides["negative"]
    ps, ns = p["summary"], n["summary"]
    total = ps["count"] + ns["count"]
    out: dict = {"unit": "bytes", "bucketed_by": "size", "count": total,
                 "min": -ns["max"] if ns["count"] else ps["min"],
                 "max": ps["max"] if ps["count"] else -ns["min"],
                 "mean": (ps["sum"] - ns["sum"]) / total if total else None,
                 "positive": ps, "negative": ns, "buckets": []}
    count = p["count"] + n["count"]
    nz = np.flatnonzero(count)
    for k in range(int(nz[0]), int(nz[-1]) + 1) if len(nz) else ():
        lo, hi = bucket_bounds(LOG2, k)
        out["buckets"].append({"min": lo, "max": hi, "count": int(count[k]), "bytes": int(p["bytes"][k] + n["bytes"][k]),
                               "sum": int(p["sum"][k]) - int(n["sum"][k]),
                               "positive_count": int(p["count"][k]), "positive_sum": int(p["sum"][k]),
                               "negative_count": int(n["count"][k]), "negative_sum": int(n["sum"][k])})
    return out


def histograms(raw_by_walker_key: dict) -> dict:
    """All histograms of a walk, keyed by their JSON names."""
    out = {name: histogram(raw_by_walker_key[key], scheme, unit) for name, (key, scheme, unit) in HISTOGRAMS.items()}
    out["overhead"] = overhead_histogram(raw_by_walker_key["overhead_positive"], raw_by_walker_key["overhead_negative"])
    return out


def compact_counts(count: np.ndarray | None, nbytes: np.ndarray | None) -> dict | None:
    """Per-directory log2 size histogram as short lists (trailing empty buckets dropped)."""
    if count is None:
        return None
    nz = np.flatnonzero(count)
    end = int(nz[-1]) + 1 if len(nz) else 0
    return {"count": [int(x) for x in count[:end]], "bytes": [int(x) for x in nbytes[:end]]}


def cdf(hist: dict, weight: str = "count") -> tuple[np.ndarray, np.ndarray]:
    """Cumulative fraction of items (weight="count") or of bytes (weight="bytes") at or below
    each bucket's upper bound: the curves of seed 002 Figs. 8 and 9.  Empty when nothing counted."""
    buckets = hist["buckets"]
    x = np.array([b["max"] for b in buckets], dtype=np.float64)
    w = np.array([b[weight] for b in buckets], dtype=np.float64)
    total = w.sum()
    if not len(w) or total <= 0:
        return x, np.zeros_like(x)
    return x, np.cumsum(w) / total


def cdf_from_log2(count: Iterable[int], nbytes: Iterable[int], weight: str = "count") -> tuple[np.ndarray, np.ndarray]:
    """The same CDF from a compact log2 histogram (a first-level directory's file sizes)."""
    c = np.asarray(list(count), dtype=np.float64)
    b = np.asarray(list(nbytes), dtype=np.float64)
    w = c if weight == "count" else b
    x = np.array([bucket_bounds(LOG2, k)[1] for k in range(len(c))], dtype=np.float64)
    total = w.sum()
    return (x, np.cumsum(w) / total) if total > 0 else (x, np.zeros_like(x))


def fraction_below(hist: dict, limit: float, weight: str = "count") -> float | None:
    """Share (0..1) of items or bytes in buckets whose upper bound is <= limit
    (exact when `limit` is a bucket bound, e.g. "86% of files are under 1 MiB")."""
    x, y = cdf(hist, weight)
    if not len(x) or y[-1] == 0:
        return None
    i = np.searchsorted(x, limit, side="right") - 1
    return float(y[i]) if i >= 0 else 0.0


def largest_bucket(hist: dict) -> dict | None:
    """The most popular bucket (seed 002: "the most popular size range was 64 KiB to 128 KiB")."""
    if not hist["buckets"]:
        return None
    return max(hist["buckets"], key=lambda b: b["count"])


# ---------------------------------------------------------------- fsstats CSV

#: fsstats 1.4.5's print_report order and Histo.pm rules, read in a copy of fsstats 1.4.5 that was
#: adapted to read its entries from PostgreSQL (same VERSION, print_report and Histo.pm); among them
#: the overhead quirk: Histo::add buckets the two overhead histograms by the item's size.
#: section title, histogram, value divisor, unit text, fsstats bucket style, what a row counts:
#: "items" (count, value sum), "KB" (kilobytes, KB-weighted value sum: the age "(KB)" sections),
#: "positive" / "negative" (one side of the overhead histogram, rows by item size)
FSSTATS_SECTIONS = [
    ("file size", "file_size", 1024, "KB", "float", "items"),
    ("capacity used", "capacity", 1024, "KB", "float", "items"),
    ("positive overhead", "overhead", 1024, "KB", "float", "positive"),
    ("negative overhead", "overhead", 1024, "KB", "float", "negative"),
    ("directory size (entries)", "dir_entries", 1, "ents", "int", "items"),
    ("directory size", "dir_size", 1024, "KB", "float", "items"),
    ("filename length", "name_length", 1, "chars", "linear", "items"),
    ("link count", "link_count", 1, "links", "int", "items"),
    ("symlink target length", "symlink_target_length", 1, "chars", "linear", "items"),
    ("mtime (files)", "mtime_age_days", 1, "days", "days", "items"),
    ("mtime (KB)", "mtime_age_days", 1, "days", "days", "KB"),
    ("ctime (files)", "ctime_age_days", 1, "days", "days", "items"),
    ("ctime (KB)", "ctime_age_days", 1, "days", "days", "KB"),
    ("atime (files)", "atime_age_days", 1, "days", "days", "items"),
    ("atime (KB)", "atime_age_days", 1, "days", "days", "KB"),
]
FSSTATS_NAME_MAX = 127  # fsstats' name and symlink length histograms stop here; longer ones go to one "over" row


def _fsstats_bucket(style: str, lo: int) -> int | None:
    """fsstats bucket of our bucket starting at `lo` (None: fsstats' "over max" row)."""
    if style == "float":       # bytes -> KB: [0, 2) KB then [2^b, 2^(b+1)) KB; ours starting at 2^(b+10) bytes
        return 0 if lo < 2048 else lo.bit_length() - 11
    if style in ("int", "days"):  # {0, 1} (or [0, 2) days) then [2^b, 2^(b+1))
        return 0 if lo < 2 else lo.bit_length() - 1
    return None if lo > FSSTATS_NAME_MAX else lo // 8  # linear 8 up to 127


def _fsstats_bounds(style: str, b: int) -> tuple[int, int]:
    if style == "linear":
        return 8 * b, 8 * b + 7
    if style == "int":
        return (0, 1) if b == 0 else (1 << b, (1 << (b + 1)) - 1)
    return (0, 2) if b == 0 else (1 << b, 1 << (b + 1))  # float-valued histograms print [min, max)


def fsstats_sections(hists: dict) -> list[dict]:
    """The histogram sections of fsstats' CSV, rebinned exactly from our buckets.

    Each section: title, unit, count, average, min, max, rows of
    (bucket min, bucket max, count, fraction, cumulative fraction, value sum,
    fraction, cumulative fraction) where "value sum" is fsstats' "val count"
    (the sum of the values in the bucket, in the section's unit).  The "(KB)"
    age sections count kilobytes instead of files, as fsstats does; the overhead
    sections' rows are the items' sizes and their values the overhead.  A
    histogram the snapshot does not have (one saved by an older version) is left out.
    """
    out = []
    for title, key, div, unit, style, weight in FSSTATS_SECTIONS:
        if key not in hists:
            continue
        h = hists[key]
        rows: dict[int | None, list[float]] = {}
        for b in h["buckets"]:
            fb = _fsstats_bucket(style, b["min"])
            acc = rows.setdefault(fb, [0.0, 0.0])
            if weight == "KB":
                acc[0] += b["bytes"] / 1024
                acc[1] += b["byte_days"] / 1024
            elif weight in ("positive", "negative"):
                acc[0] += b[f"{weight}_count"]
                acc[1] += b[f"{weight}_sum"] / div
            else:
                acc[0] += b["count"]
                acc[1] += b["sum"] / div
        count = sum(v[0] for v in rows.values())
        total = sum(v[1] for v in rows.values())
        table, c, d = [], 0.0, 0.0
        for fb in sorted((k for k in rows if k is not None)) + ([None] if None in rows else []):
            x, y = rows[fb]
            if not x and not y:
                continue
            c += x
            d += y
            lo, hi = (FSSTATS_NAME_MAX, -1) if fb is None else _fsstats_bounds(style, fb)
            table.append((lo, hi, x, x / count if count else 0.0, c / count if count else 0.0,
                          y, y / total if total else 0.0, d / total if total else 0.0))
        mn, mx = (h[weight]["min"], h[weight]["max"]) if weight in ("positive", "negative") else (h["min"], h["max"])
        out.append({"title": title, "unit": unit, "count": count,
                    "average": (total / count) if count else 0.0,
                    "min": (mn / div) if mn is not None else 0, "max": (mx / div) if mx is not None else 0,
                    "rows": table})
    return out


def fsstats_overhead(total_bytes: int, capacity_bytes: int) -> float:
    """fsstats' "percent overhead": the share of the capacity used that is not data (a fraction)."""
    return (capacity_bytes - total_bytes) / capacity_bytes if capacity_bytes else 0.0


# ---------------------------------------------------------------- growth

def _change(a: float, b: float) -> tuple[float, float | None]:
    d = b - a
    return d, (100.0 * d / a if a else None)


def _grow_rows(rows_a: list[dict], rows_b: list[dict], key: str, extra: tuple[str, ...],
               d_bytes: float, d_files: float) -> list[dict]:
    ia = {r[key]: r for r in rows_a}
    ib = {r[key]: r for r in rows_b}
    out = []
    for k in list(ia) + [k for k in ib if k not in ia]:
        a, b = ia.get(k), ib.get(k)
        row = {key: k}
        for e in extra:
            row[e] = (b or a).get(e)
        for m in ("bytes", "files", "capacity_bytes"):
            va, vb = (a or {}).get(m, 0) or 0, (b or {}).get(m, 0) or 0
            ch, pct = _change(va, vb)
            row.update({f"{m}_a": va, f"{m}_b": vb, f"{m}_change": ch, f"{m}_change_pct": pct})
        row["share_of_bytes_change_pct"] = 100.0 * row["bytes_change"] / d_bytes if d_bytes else None
        row["share_of_files_change_pct"] = 100.0 * row["files_change"] / d_files if d_files else None
        row["status"] = "new" if a is None else "gone" if b is None else "both"
        out.append(row)
    out.sort(key=lambda r: (-abs(r["bytes_change"]), -abs(r["files_change"]), str(r[key])))
    return out


def growth(a: dict, b: dict, *, movers: int = 10) -> dict:
    """Growth from snapshot `a` to snapshot `b` (seed 002 Table IV): usage and file count,
    their change in percent, overall and per first-level directory and owner, each
    part's share of the overall change, the daily rate, and the largest movers.

    `a` and `b` are snapshot documents (as `snapshot_document` builds them).
    """
    interval_s = _iso_seconds(b["snapshot_time"]) - _iso_seconds(a["snapshot_time"])
    total = {}
    for m in ("bytes", "files", "capacity_bytes", "dirs", "symlinks", "other"):
        ch, pct = _change(a[m], b[m])
        total.update({f"{m}_a": a[m], f"{m}_b": b[m], f"{m}_change": ch, f"{m}_change_pct": pct})
    days = interval_s / 86400
    per_day = {"files_per_day": total["files_change"] / days if days > 0 else None,
               "bytes_per_day": total["bytes_change"] / days if days > 0 else None}
    top = _grow_rows(a.get("top_dirs", []), b.get("top_dirs", []), "name", (), total["bytes_change"],
                     total["files_change"])
    own = _grow_rows(a.get("owners", []), b.get("owners", []), "uid", ("user",), total["bytes_change"],
                     total["files_change"])

    def largest(rows, key, metric):
        ranked = sorted(rows, key=lambda r: (-abs(r[f"{metric}_change"]), str(r[key])))
        return [r[key] for r in ranked[:movers] if r[f"{metric}_change"]]

    return {"interval_s": interval_s, "total": total, **per_day, "top_dirs": top, "owners": own,
            "largest_movers": {"top_dirs_by_bytes": largest(top, "name", "bytes"),
                               "top_dirs_by_files": largest(top, "name", "files"),
                               "owners_by_bytes": largest(own, "uid", "bytes"),
                               "owners_by_files": largest(own, "uid", "files")}}


def _iso_seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def snapshot_document(walk, *, host: str, version: str) -> dict:
    """The snapshot as saved and printed with --json: totals, histograms, owners, first-level
    directories, errors.  `walk` is a `sources.tree_walk.WalkResult` (duck-typed)."""
    snap = walk.snapshot_time_ns
    t = walk.totals
    doc = {
        "format": SNAPSHOT_FORMAT,
        "root": walk.root,
        "root_is_symlink": walk.root_is_symlink,
        "symlink_target": walk.symlink_target,
        "snapshot_time": ns_to_iso(snap),
        "host": host,
        "ioweather_version": version,
        "threads": walk.threads,
        "cross_mounts": walk.cross_mounts,
        "exclude": list(walk.exclude),
        "walk_s": walk.walk_s,
        "entries": t["entries"],
        "entries_per_s": t["entries"] / walk.walk_s if walk.walk_s > 0 else None,
        **{k: t[k] for k in ("files", "dirs", "symlinks", "other", "bytes", "capacity_bytes", "errors",
                             "hardlinks_deduplicated", "excluded", "skipped_mounts")},
        "error_list": list(walk.errors),
        "notes": list(walk.notes),
        "histograms": histograms(walk.histograms),
        "owners": sorted(walk.owners, key=lambda o: (-o["bytes"], -o["files"], o["uid"])),
        "top_dirs": sorted(
            ({"name": d["name"], "files": d["files"], "bytes": d["bytes"], "capacity_bytes": d["capacity_bytes"],
              "dirs": d["dirs"],
              "newest_mtime": ns_to_iso(d["newest_mtime_ns"]) if d["newest_mtime_ns"] is not None else None,
              "file_size_log2": compact_counts(d["size_count"], d["size_bytes"])}
             for d in walk.top_dirs),
            key=lambda d: (-d["bytes"], -d["files"], d["name"])),
    }
    return doc
