"""Derived cache files in a store's home, written and read without following a link (probe-rollups.bin,
probe-baselines.json, the kept answers). Each caller opens its directory (`open_dir`) and hands its
descriptor here, so every name is resolved inside that directory and a link planted at the file is never
followed: the read refuses it, the write's rename replaces the link itself."""

from __future__ import annotations

import mmap
import os
import secrets
from collections.abc import Iterable
from pathlib import Path


def open_dir(d: Path, create: bool, below: int = 0) -> int:
    """The directory's descriptor, refused (OSError) when it, or any of its `below` parents, is a symbolic link
    (each opened inside the one above it with O_NOFOLLOW). When `create`, those made 0700 and the rest of the
    parents as the umask says."""
    names = [d.name]
    top = d.parent
    for _ in range(below):
        names.insert(0, top.name)
        top = top.parent
    if create:
        top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            if create:
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_in(dfd: int, name: str, chunks: Iterable[bytes]) -> int:
    """Write `chunks` as `name` in the directory `dfd` atomically (a temporary file synced, then renamed over the
    name): the bytes written. OSError when it cannot (the temporary file removed)."""
    # A random part, not only the process id: a temporary file left by a crash (or by an earlier process of the
    # same id, as PID 1 in every container start) must not block the writes after it.
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
    # Opened before the try: when O_EXCL refuses, the name is another's and not ours to remove.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
    try:
        n = 0
        with os.fdopen(fd, "wb") as f:
            for b in chunks:
                n += f.write(b)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        return n
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise


def save(path: Path, body: bytes) -> bool:
    """`write_in` of one file at `path`, its directory created: False when it cannot be written (a read-only home)."""
    try:
        dfd = open_dir(path.parent, create=True)
    except OSError:
        return False
    try:
        write_in(dfd, path.name, [body])
        return True
    except OSError:
        return False
    finally:
        os.close(dfd)


def read_in(dfd: int, name: str, max_bytes: int = -1) -> bytes:
    """`name`'s bytes in the directory `dfd` (at most `max_bytes`), never through a link (OSError)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    with os.fdopen(fd, "rb") as f:
        return f.read(max_bytes)


def map_in(dfd: int, name: str) -> mmap.mmap:
    """`name` in the directory `dfd` mapped read-only, never through a link (OSError; ValueError when empty): the
    page cache's pages instead of a copy (340 MB of probe-rollups.bin at 100 targets x 30 days, 0.16 s of CPU to
    read). The mapping stays valid when the file is replaced by a rename or removed, the only ways `write_in`
    and `store prune` change these files."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    try:
        return mmap.mmap(fd, 0, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
