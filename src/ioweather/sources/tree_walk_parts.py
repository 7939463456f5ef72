"""One content snapshot from many walks: the root's own entries, and each first-level directory
walked apart (on a Dask worker, `fsstats DIR --dask SPEC`), merged into what one walk gives.

Why it is exact: the walker's aggregates are sums (counts, bytes, value sums per log2 bucket,
per owner, per first-level directory) and minima/maxima, so walks of disjoint subtrees add up.
What one walk of DIR does differently from the sum of the parts is done here, each by the
walker's own rule (walk_core.c):

- the root walk skips the first-level directories with an exclude pattern each: they are taken
  out of its `excluded` count again, its one `dir_entries` observation (the root's listing) gets
  them back, and their names enter `name_length` as the root's listing would have entered them;
- a part's walk counts its root once as an entry of its own: the root's listing counted it already;
- all of a part's "projects" (its own first-level directories) are one project of DIR.

Hard links are counted once within a walk (by st_dev, st_ino). Across walks they could be
counted twice: a walk's link-count histogram says whether it met regular files with more than
one link, and when two walks did (the root's own files count as one walk), `shared_links`
says so and the caller walks DIR as one walk instead. An inode other than a regular file with
several names (a hard-linked symlink, FIFO or device) in two parts is not seen by that check:
docs/fsstats.md says so.

Ages are measured from one `snap_ns` given to every walk, so they are those of one walk.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import stat
import time
from dataclasses import dataclass

import numpy as np

from ioweather._native import walk_core
from ioweather.sources.tree_walk import (
    _arrays,
    check_root,
    default_threads,
    display_name,
    owner_name,
    TOTALS,
    WALKER_HISTOGRAMS,
    WalkResult,
)


@dataclass
class Plan:
    root: bytes                      # as given
    root_st: os.stat_result
    parts: list[tuple[bytes, int]]   # (name, st_size) of each first-level directory walked apart
    root_patterns: list[str]         # the user's patterns plus one per part (the root walk skips them)


def escape(name: bytes) -> bytes:
    """`name` as an fnmatch pattern matching only itself (walk_core uses fnmatch without FNM_NOESCAPE)."""
    out = bytearray()
    for c in name:
        if c in b"*?[]\\":
            out += b"\\"
        out.append(c)
    return bytes(out)


@functools.cache
def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def _fnmatch(pattern: bytes, name: bytes) -> bool:
    """libc's fnmatch, as the walker calls it: Python's fnmatch differs ([^...], escapes)."""
    return _libc().fnmatch(pattern, name, 0) == 0


def _split(patterns: list[str]) -> tuple[list[bytes], list[bytes]]:
    """(name patterns, path patterns without leading slashes), as walk_core's add_patterns sorts them."""
    names, paths = [], []
    for p in patterns:
        b = os.fsencode(p)
        if b"/" in b:
            paths.append(b.lstrip(b"/"))
        else:
            names.append(b)
    return names, paths


def plan(directory, *, cross_mounts: bool, exclude) -> Plan | None:
    """The parts of DIR, or None when DIR is walked as one (a symlink, or nothing to split)."""
    raw, st = check_root(directory)
    if stat.S_ISLNK(st.st_mode):
        return None
    patterns = [str(p) for p in exclude]
    names, paths = _split(patterns)
    parts = []
    try:
        entries = sorted(os.scandir(raw), key=lambda e: e.name)
    except OSError:
        return None  # one walk says why, in its words
    for e in entries:
        try:
            est = e.stat(follow_symlinks=False)
        except OSError:
            continue  # the root walk meets it and records the error as one walk would
        if not stat.S_ISDIR(est.st_mode) or (not cross_mounts and est.st_dev != st.st_dev):
            continue
        if any(_fnmatch(p, e.name) for p in names) or any(_fnmatch(p, e.name) for p in paths if b"/" not in p):
            continue
        parts.append((e.name, est.st_size))
    if not parts:
        return None
    root_patterns = patterns + [os.fsdecode(b"/" + escape(name)) for name, _ in parts]
    return Plan(raw, st, parts, root_patterns)


def part_patterns(patterns: list[str], name: bytes) -> list[str]:
    """The user's patterns as seen from the part `name`: name patterns as they are; a path pattern
    whose first component matches `name`, with that component removed (a path pattern of one
    component only ever matched first-level entries, i.e. parts themselves)."""
    out = []
    for p in patterns:
        b = os.fsencode(p)
        if b"/" not in b:
            out.append(p)
            continue
        first, _, rest = b.lstrip(b"/").partition(b"/")
        if rest and _fnmatch(first, name):
            out.append(os.fsdecode(b"/" + rest))
    return out


def walk_at(path: bytes, snap_ns: int, *, threads: int | None, cross_mounts: bool, patterns: list[str]) -> WalkResult:
    """One walk of `path` with ages from `snap_ns` (tree_walk.walk, with the snapshot time given)."""
    threads = threads or default_threads()
    shown = display_name(os.path.abspath(path))
    t0 = time.perf_counter()
    r = walk_core.walk(path, snap_ns, threads, cross_mounts, [os.fsencode(p) for p in patterns], None, 0.5)
    owners = [{"uid": uid, "user": owner_name(uid), "files": f, "bytes": b, "capacity_bytes": c}
              for uid, (f, b, c) in r["owners"].items()]
    top_dirs = [{"name": display_name(name), "files": files, "bytes": nbytes, "capacity_bytes": cap, "dirs": dirs,
                 "newest_mtime_ns": newest,
                 "size_count": None if sc is None else np.frombuffer(sc, np.uint64),
                 "size_bytes": None if sb is None else np.frombuffer(sb, np.uint64)}
                for name, files, nbytes, cap, dirs, newest, sc, sb in r["top"]]
    errors = [{"path": display_name(path.rstrip(b"/") + b"/" + rel if rel else path), "op": op, "errno": err,
               "error": os.strerror(err)} for rel, op, err in r["error_list"]]
    return WalkResult(root=shown, snapshot_time_ns=snap_ns, walk_s=time.perf_counter() - t0, threads=threads,
                      cross_mounts=cross_mounts, exclude=list(patterns), totals={k: r[k] for k in TOTALS},
                      histograms={k: _arrays(v) for k, v in r["histograms"].items()},
                      owners=owners, top_dirs=top_dirs, errors=errors)


def unopened(path: bytes, snap_ns: int, err: int, *, threads: int, cross_mounts: bool) -> WalkResult:
    """What one walk records of a first-level directory it cannot open: the directory itself (its
    inode, as the root's listing accounts it: walk_core's account_inode) and an "open" error."""
    nb = walk_core.LOG2_BUCKETS
    st = os.lstat(path)
    cap, size = st.st_blocks * 512, max(st.st_size, 0)
    hists = {}
    for k, h in walk_core_empty_histograms(nb).items():
        hists[k] = h
    side = "overhead_positive" if cap >= size else "overhead_negative"
    _observe(hists[side], size.bit_length(), abs(cap - size), size)
    _observe(hists["dir_size"], size.bit_length(), size, size)
    totals = dict.fromkeys(TOTALS, 0)
    totals.update(dirs=1, capacity_bytes=cap, errors=1, entries=1)
    name = path.rstrip(b"/").rsplit(b"/", 1)[-1]
    return WalkResult(root=display_name(path), snapshot_time_ns=snap_ns, walk_s=0.0, threads=threads,
                      cross_mounts=cross_mounts, exclude=[], totals=totals, histograms=hists,
                      owners=[{"uid": st.st_uid, "user": owner_name(st.st_uid), "files": 0, "bytes": 0,
                               "capacity_bytes": cap}],
                      top_dirs=[{"name": display_name(name), "files": 0, "bytes": 0, "capacity_bytes": cap, "dirs": 1,
                                 "newest_mtime_ns": None, "size_count": np.zeros(nb, np.uint64),
                                 "size_bytes": np.zeros(nb, np.uint64)}],
                      errors=[{"path": display_name(path), "op": "open", "errno": err, "error": os.strerror(err)}])


def walk_core_empty_histograms(nb: int) -> dict:
    out = {}
    for k in WALKER_HISTOGRAMS:
        age = k.endswith("_age")
        out[k] = {"n": 0, "min": None, "max": None, "count": np.zeros(nb, np.uint64), "bytes": np.zeros(nb, np.uint64),
                  "sum": np.zeros(nb, np.float64 if age else np.uint64)}
        if age:
            out[k]["wsum"] = np.zeros(nb, np.float64)
    return out


def _observe(h: dict, k: int, value: int, size: int) -> None:
    """walk_core's hist_add_int."""
    h["count"][k] += 1
    h["bytes"][k] += np.uint64(size)
    h["sum"][k] += np.uint64(value)
    h["n"] += 1
    h["min"] = value if h["min"] is None else min(h["min"], value)
    h["max"] = value if h["max"] is None else max(h["max"], value)


def entered_only_root(root: WalkResult) -> bool:
    """Whether the root walk listed the root alone (a first-level directory that appeared since the
    plan was entered: then the parts do not add up to DIR)."""
    return root.histograms["dir_entries"]["n"] <= 1


def multi_linked_files(w: WalkResult) -> int:
    """Regular files with two or more links that walk `w` met (log2 buckets 2 and up: nlink >= 2)."""
    return int(w.histograms["link_count"]["count"][2:].sum())


def shared_links(root: WalkResult, parts: list[WalkResult]) -> bool:
    """Whether two of the walks met multiply-linked regular files: then they may share an inode."""
    return sum(multi_linked_files(w) > 0 for w in [root, *parts]) >= 2


def _add_hist(a: dict, b: dict) -> dict:
    out = {k: a[k] + b[k] for k in ("count", "bytes", "sum") + (("wsum",) if "wsum" in a else ())}
    out["n"] = a["n"] + b["n"]
    mins = [x for x in (a["min"], b["min"]) if x is not None]
    maxs = [x for x in (a["max"], b["max"]) if x is not None]
    out["min"] = min(mins) if mins else None
    out["max"] = max(maxs) if maxs else None
    return out


def _log2_bucket(v: int) -> int:
    return v.bit_length()


def merge(p: Plan, root: WalkResult, parts: list[WalkResult], *, threads: int, walk_s: float,
          exclude: list[str]) -> WalkResult:
    """One walk's result from the root walk and the parts' walks (in `p.parts` order)."""
    nb = walk_core.LOG2_BUCKETS
    totals = dict(root.totals)
    totals["excluded"] -= len(parts)
    for w in parts:
        for k in TOTALS:
            totals[k] += w.totals[k]
        totals["entries"] -= 1  # its root: an entry of the root's listing, counted there
    hists = {k: {kk: (vv.copy() if isinstance(vv, np.ndarray) else vv) for kk, vv in h.items()}
             for k, h in root.histograms.items()}
    de = hists["dir_entries"]
    if de["n"] == 1:  # the root's listing (the only one: every directory below is a part), counted again with them
        seen = de["min"]
        k = _log2_bucket(seen)
        de["count"][k] -= 1
        de["bytes"][k] -= np.uint64(p.root_st.st_size)
        de["sum"][k] -= np.uint64(seen)
        de["n"], de["min"], de["max"] = 0, None, None
        _observe(de, _log2_bucket(seen + len(parts)), seen + len(parts), p.root_st.st_size)
    elif de["n"] > 1:
        raise ValueError("the root walk entered a directory: it must list the root alone (see entered_only_root)")
    for name, size in p.parts:  # the parts' names, as the root's listing enters a directory's name
        _observe(hists["name_length"], min(len(name) // 8, nb - 1), len(name), size)
    for w in parts:
        for k, h in w.histograms.items():
            hists[k] = _add_hist(hists[k], h)
    owners: dict[int, dict] = {}
    for w in [root, *parts]:
        for o in w.owners:
            cur = owners.setdefault(o["uid"], {"uid": o["uid"], "user": o["user"], "files": 0, "bytes": 0,
                                               "capacity_bytes": 0})
            for k in ("files", "bytes", "capacity_bytes"):
                cur[k] += o[k]
    top_dirs = list(root.top_dirs)
    for (name, _), w in zip(p.parts, parts):
        newest = [d["newest_mtime_ns"] for d in w.top_dirs if d["newest_mtime_ns"] is not None]
        fs = w.histograms["file_size"]
        top_dirs.append({"name": display_name(name), "files": sum(d["files"] for d in w.top_dirs),
                         "bytes": sum(d["bytes"] for d in w.top_dirs),
                         "capacity_bytes": sum(d["capacity_bytes"] for d in w.top_dirs),
                         "dirs": sum(d["dirs"] for d in w.top_dirs), "newest_mtime_ns": max(newest) if newest else None,
                         "size_count": fs["count"].copy(), "size_bytes": fs["bytes"].copy()})
    notes = []
    if len(top_dirs) > walk_core.TOP_HIST_MAX:  # as one walk: no per-project size histograms at all
        for d in top_dirs:
            d["size_count"] = d["size_bytes"] = None
        notes.append(f"{len(top_dirs) - 1} first-level directories: per-directory size histograms are kept "
                     f"only up to {walk_core.TOP_HIST_MAX}")
    errors = [e for w in [root, *parts] for e in w.errors][:walk_core.MAX_ERRORS_LISTED]
    return WalkResult(root=root.root, snapshot_time_ns=root.snapshot_time_ns, walk_s=walk_s, threads=threads,
                      cross_mounts=root.cross_mounts, exclude=list(exclude), totals=totals, histograms=hists,
                      owners=list(owners.values()), top_dirs=top_dirs, errors=errors, notes=notes)
