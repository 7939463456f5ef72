"""One walk of a directory tree: the raw material of a content snapshot (METHODS.md section 5).

The walk itself is the C core `ioweather._native.walk_core` (threads, GIL released,
never following symlinks, one file system unless asked, hard links once by
(st_dev, st_ino), errors counted and the first 100 kept). This module checks the
root, calls the walker and hands back its fixed-size aggregates as numpy arrays;
`ioweather.stats.fsstats` turns them into histograms, summaries and CDFs.

Names are bytes on POSIX and need not be UTF-8: they are kept as bytes down here
and shown with `display_name` (invalid bytes as \\xNN escapes).
"""

from __future__ import annotations

import os
import pwd
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ioweather._native import walk_core
from ioweather.errors import UserError, os_error_reason

#: the walker's counters, in the order reports list them
TOTALS = ("files", "dirs", "symlinks", "other", "bytes", "capacity_bytes", "errors", "hardlinks_deduplicated",
          "excluded", "skipped_mounts", "entries")


def default_threads() -> int:
    """Threads that keep a local disk busy and hide a network file system's latency.

    Metadata calls on Lustre/NFS/GPFS wait on the network, so more threads than
    cores pay off there; on a warm local cache two per core is already the ceiling
    (docs/benchmarks/fsstats.md).
    """
    return max(4, min(16, 2 * (os.cpu_count() or 1)))


def display_name(name: bytes) -> str:
    """A file name for people and JSON: UTF-8 where valid, \\xNN for the other bytes."""
    return name.decode("utf-8", "backslashreplace")


@dataclass
class WalkResult:
    root: str                    # absolute path as shown to people
    snapshot_time_ns: int        # the one "now" every age is measured from
    walk_s: float
    threads: int
    cross_mounts: bool
    exclude: list[str]
    totals: dict[str, int]
    histograms: dict[str, dict]  # metric -> count/bytes/sum[/wsum] arrays + n/min/max
    owners: list[dict]           # uid, user, files, bytes, capacity_bytes
    top_dirs: list[dict]         # name, files, bytes, capacity_bytes, dirs, newest_mtime_ns, size_count, size_bytes
    errors: list[dict]           # path, op, errno, error
    root_is_symlink: bool = False
    symlink_target: str | None = None
    notes: list[str] = field(default_factory=list)


def owner_name(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return None


def _arrays(raw: dict) -> dict:
    out = {"n": raw["n"], "min": raw["min"], "max": raw["max"],
           "count": np.frombuffer(raw["count"], np.uint64), "bytes": np.frombuffer(raw["bytes"], np.uint64)}
    if "wsum" in raw:  # ages: sums of ns as float64
        out["sum"] = np.frombuffer(raw["sum"], np.float64)
        out["wsum"] = np.frombuffer(raw["wsum"], np.float64)
    else:
        out["sum"] = np.frombuffer(raw["sum"], np.uint64)
    return out


#: the walker's histograms (ages carry float sums)
WALKER_HISTOGRAMS = ("file_size", "capacity", "link_count", "atime_age", "mtime_age", "ctime_age", "dir_entries",
                     "name_length", "dir_size", "symlink_target_length", "overhead_positive", "overhead_negative")


def _symlink_histograms(st: os.stat_result, target_len: int | None) -> dict:
    """The walker's histograms for a walk that met only one symlink (a DIR that is a link):
    its target length and its overhead, bucketed as walk_core does."""
    nb = walk_core.LOG2_BUCKETS
    out = {}
    for k in WALKER_HISTOGRAMS:
        out[k] = {"n": 0, "min": None, "max": None, "count": np.zeros(nb, np.uint64), "bytes": np.zeros(nb, np.uint64),
                  "sum": np.zeros(nb, np.float64 if k.endswith("_age") else np.uint64)}
        if k.endswith("_age"):
            out[k]["wsum"] = np.zeros(nb, np.float64)

    def add(key: str, bucket: int, value: int) -> None:
        h = out[key]
        h["count"][bucket] += 1
        h["bytes"][bucket] += st.st_size
        h["sum"][bucket] += value
        h["n"], h["min"], h["max"] = 1, value, value

    if target_len is not None:
        add("symlink_target_length", min(target_len // 8, nb - 1), target_len)
    cap = st.st_blocks * 512
    side = "overhead_positive" if cap >= st.st_size else "overhead_negative"
    add(side, st.st_size.bit_length(), abs(cap - st.st_size))
    return out


def check_root(path: str | bytes) -> tuple[bytes, os.stat_result]:
    """The root as bytes and its lstat, or a UserError saying why it cannot be walked."""
    raw = os.fsencode(path)
    if not raw:
        raise UserError("DIR is empty")
    if b"\0" in raw:
        raise UserError("DIR contains a NUL byte")
    shown = display_name(raw)
    try:
        st = os.lstat(raw)
    except OSError as e:
        raise UserError(f"{shown}: {os_error_reason(e, raw)}") from None
    if not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
        raise UserError(f"{shown} is not a directory (fsstats walks a directory tree)")
    return raw, st


def walk(path: str | bytes, *, threads: int | None = None, cross_mounts: bool = False, exclude: Sequence[str] = (),
         progress: Callable[[int, int, int], None] | None = None, interval: float = 0.5,
         _hook=None, _fd_budget: int = -1, _no_openat2: bool = False) -> WalkResult:
    """Walk the tree at `path` once and return its aggregates.

    `path` itself is never followed if it is a symlink: the result then describes
    the link (one symlink) and says so in `notes`; a trailing slash (`link/`) walks
    the target instead, as with `ls` and `find`.  `exclude` patterns without a `/`
    match an entry's name anywhere; with a `/` they match the path below the root
    (shell wildcards, `*` does not cross `/`).  Excluded entries are neither counted
    nor entered.  `progress(entries, errors, dirs_queued)` is called every
    `interval` seconds.  The underscore arguments are test seams.
    """
    raw, st = check_root(path)
    threads = threads or default_threads()
    if threads < 1 or threads > 1024:
        raise UserError(f"--threads must be between 1 and 1024, got {threads}")
    shown = display_name(os.path.abspath(raw))
    patterns = [str(p) for p in exclude]
    for p in patterns:
        if not p.strip("/"):
            raise UserError(f"empty --exclude pattern {p!r}")
    snap_ns = time.time_ns()
    if stat.S_ISLNK(st.st_mode):
        return _symlink_result(raw, st, shown, snap_ns, threads, cross_mounts, patterns)

    t0 = time.perf_counter()
    try:
        r = walk_core.walk(raw, snap_ns, threads, cross_mounts, [os.fsencode(p) for p in patterns], progress, interval,
                           _hook=_hook, _fd_budget=_fd_budget, _no_openat2=_no_openat2)
    except PermissionError:
        raise UserError(f"{shown}: permission denied (cannot read the directory)") from None
    except OSError as e:
        raise UserError(f"{shown}: cannot open: {os_error_reason(e, raw)}") from None
    walk_s = time.perf_counter() - t0

    owners = [{"uid": uid, "user": owner_name(uid), "files": f, "bytes": b, "capacity_bytes": c}
              for uid, (f, b, c) in r["owners"].items()]
    top_dirs = []
    for name, files, nbytes, cap, dirs, newest, sc, sb in r["top"]:
        top_dirs.append({"name": display_name(name), "files": files, "bytes": nbytes, "capacity_bytes": cap, "dirs": dirs,
                         "newest_mtime_ns": newest,
                         "size_count": None if sc is None else np.frombuffer(sc, np.uint64),
                         "size_bytes": None if sb is None else np.frombuffer(sb, np.uint64)})
    errors = [{"path": display_name(raw.rstrip(b"/") + b"/" + rel if rel else raw), "op": op, "errno": err,
               "error": os.strerror(err)} for rel, op, err in r["error_list"]]
    notes = []
    if len(top_dirs) > r["top_hist_max"]:
        notes.append(f"{len(top_dirs) - 1} first-level directories: per-directory size histograms are kept "
                     f"only up to {r['top_hist_max']}")
    return WalkResult(root=shown, snapshot_time_ns=snap_ns, walk_s=walk_s, threads=threads, cross_mounts=cross_mounts,
                      exclude=patterns, totals={k: r[k] for k in TOTALS},
                      histograms={k: _arrays(v) for k, v in r["histograms"].items()},
                      owners=owners, top_dirs=top_dirs, errors=errors, notes=notes)


def _symlink_result(raw: bytes, st: os.stat_result, shown: str, snap_ns: int, threads: int, cross_mounts: bool,
                    patterns: list[str]) -> WalkResult:
    try:
        raw_target = os.readlink(raw)
    except OSError:
        raw_target = None
    target = None if raw_target is None else display_name(raw_target)
    totals = dict.fromkeys(TOTALS, 0)
    totals.update(symlinks=1, entries=1, capacity_bytes=st.st_blocks * 512)
    note = (f"{shown} is a symbolic link{f' to {target}' if target else ''}: reported on the link itself, "
            f"not followed (give '{shown}/' to walk its target)")
    return WalkResult(root=shown, snapshot_time_ns=snap_ns, walk_s=0.0, threads=threads, cross_mounts=cross_mounts,
                      exclude=patterns, totals=totals,
                      histograms=_symlink_histograms(st, None if raw_target is None else len(raw_target)),
                      owners=[{"uid": st.st_uid, "user": owner_name(st.st_uid), "files": 0, "bytes": 0,
                               "capacity_bytes": st.st_blocks * 512}],
                      top_dirs=[], errors=[], root_is_symlink=True, symlink_target=target, notes=[note])
