"""Data files and page-cache states of the io-model benchmark (METHODS.md section 2.1).

- `discard`: no file; reads come from /dev/zero, writes go to /dev/null (the memcpy bound).
- `cached`: the whole file is in the page cache: pre-read, then verified page by
  page with mincore(2) (`iomodel_core.resident_pages`).
- `uncached`: none of the file is in the page cache: fsync(2) (dirty pages cannot be
  dropped), posix_fadvise(POSIX_FADV_DONTNEED), verified with mincore. A file system
  may ignore the hint (tmpfs always does; Lustre sometimes does, which is why the
  paper retried until the cache had shrunk), so the eviction is retried a few times.
  Writing `3` to /proc/sys/vm/drop_caches is the last resort, used only when the
  user is root AND passed --drop-caches: it empties the page cache of the whole node.
  When eviction cannot be verified the run stops with a message saying what is missing.

Data files are reused between runs (as the paper did) when they already have the
right size; their content is the file offset of every 8-byte word, so any block read
back can be checked against the offset it claims to come from.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ioweather._native import load
from ioweather.errors import UserError, from_os_error, os_error_reason

DISCARD, CACHED, UNCACHED = "discard", "cached", "uncached"
CACHE_STATES = (DISCARD, CACHED, UNCACHED)
DROP_CACHES = "/proc/sys/vm/drop_caches"
EVICT_ATTEMPTS = 5
_CHUNK = 4 << 20


def core():
    return load("iomodel_core")


def data_file_name(proc: int) -> str:
    return f"iomodel.{proc}.dat"


def open_data_file(path: Path) -> int:
    """Read-write descriptor of a data file; never follows a symlink planted under our name."""
    try:
        return os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise from_os_error(path, e, "open") from None


def ensure_data_file(path: Path, length: int, on_progress: Callable[[int], None] | None = None) -> bool:
    """Create `path` with `length` bytes of offset-encoded content unless it already has that size.

    Returns True when the file was (re)written. Free space is checked first; a file
    left half-written by a full disk is removed.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise from_os_error(path, e, "inspect") from None
    if st is not None:
        if not (st.st_mode & 0o170000 == 0o100000):
            raise UserError(f"{path} exists and is not a regular file; remove it or use another --dir")
        if st.st_size == length:
            return False
    sv = os.statvfs(path.parent)
    free = sv.f_bavail * sv.f_frsize + (st.st_size if st is not None else 0)
    if free < length:
        raise UserError(f"not enough space in {path.parent} for a {length} B data file ({free} B free)")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise from_os_error(path, e, "create") from None
    try:
        done = 0
        while done < length:
            n = min(_CHUNK, length - done)
            words = np.arange(done // 8, (done + n + 7) // 8, dtype="<u8") * 8
            chunk = memoryview(words.view(np.uint8))[: n]
            while chunk:
                w = os.write(fd, chunk)
                chunk = chunk[w:]
            done += n
            if on_progress:
                on_progress(done)
        os.fsync(fd)
    except OSError as e:
        os.close(fd)
        os.unlink(path)
        raise from_os_error(path, e, "write") from None
    os.close(fd)
    return True


def residency(fd: int, length: int, path: Path) -> tuple[int, int]:
    """(resident pages, total pages) of the file, or a UserError saying why it cannot be known."""
    size = os.fstat(fd).st_size
    if size != length:
        raise UserError(f"{path} changed size ({size} B instead of {length} B): another process is using it")
    try:
        return core().resident_pages(fd, length)
    except OSError as e:
        raise UserError(f"cannot verify the page-cache state of {path}: mmap/mincore failed ({os_error_reason(e)}), "
                        "so residency cannot be checked on this file system") from None


def pre_read(fd: int, length: int) -> None:
    os.posix_fadvise(fd, 0, length, os.POSIX_FADV_WILLNEED)
    buf = bytearray(_CHUNK)
    off = 0
    while off < length:
        n = os.preadv(fd, [buf], off)
        if n <= 0:
            break
        off += n


@dataclass
class CacheInfo:
    """How the state was reached, kept with the run's metadata."""

    resident_pages: int = 0
    total_pages: int = 0
    pre_read: bool = False
    evict_attempts: int = 0
    dropped_caches: bool = False

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def make_cached(fd: int, length: int, path: Path) -> CacheInfo:
    """Bring the whole file into the page cache and verify it (pre-read only when pages are missing)."""
    info = CacheInfo()
    res, total = residency(fd, length, path)
    if res < total:
        pre_read(fd, length)
        info.pre_read = True
        res, total = residency(fd, length, path)
    info.resident_pages, info.total_pages = res, total
    if res < total:
        raise UserError(f"cannot make {path} cached: only {res} of {total} pages are in the page cache after "
                        "pre-reading it (not enough free memory, or the file system bypasses the page cache); "
                        "use a smaller --file-size")
    return info


def check_drop_caches_allowed(drop_caches: bool) -> None:
    if drop_caches and os.geteuid() != 0:
        raise UserError(f"--drop-caches needs root (you are uid {os.geteuid()}): it empties the page cache of the whole node")


def make_uncached(fd: int, length: int, path: Path, *, drop_caches: bool = False) -> CacheInfo:
    """Evict the file from the page cache and verify that no page is left."""
    if not hasattr(os, "posix_fadvise"):
        raise UserError("uncached needs posix_fadvise, which this platform lacks")
    info = CacheInfo()
    os.fsync(fd)
    res, total = residency(fd, length, path)
    while res > 0 and info.evict_attempts < EVICT_ATTEMPTS:
        if info.evict_attempts:
            time.sleep(0.05 * info.evict_attempts)  # let writeback finish (Lustre returns before it has)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        info.evict_attempts += 1
        res, total = residency(fd, length, path)
    if res > 0 and drop_caches:
        check_drop_caches_allowed(True)
        os.sync()
        try:
            with open(DROP_CACHES, "w") as f:
                f.write("3\n")
        except OSError as e:
            raise from_os_error(DROP_CACHES, e, "write") from None
        info.dropped_caches = True
        res, total = residency(fd, length, path)
    info.resident_pages, info.total_pages = res, total
    if res > 0:
        tried = "fsync + posix_fadvise(DONTNEED)" + (" and drop_caches" if drop_caches else "")
        if drop_caches:
            hint = "the file system keeps these pages even then (tmpfs cannot evict); use a directory on a disk or network file system"
        elif os.geteuid() == 0:
            hint = "the file system ignores the hint (tmpfs does); add --drop-caches to empty the node's page cache, or use another --dir"
        else:
            hint = ("the file system ignores the hint (tmpfs does); use a directory on a disk or network file system, "
                    "or run as root with --drop-caches")
        raise UserError(f"cannot make {path} uncached: {res} of {total} pages still in the page cache after {tried}; {hint}")
    return info
