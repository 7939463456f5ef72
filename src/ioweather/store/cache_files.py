"""Derived cache files in a store's home, written and read without following a link (probe-rollups.bin,
probe-baselines.json, the kept answers). Each caller opens its directory (`open_dir`, or its own
`os.open(..., O_DIRECTORY | O_NOFOLLOW)` where it creates other parents: the kept answers) and hands its
descriptor here, so every name is resolved inside that directory and a link planted at the file is never
followed: the read refuses it, the write's rename replaces the link itself."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def open_dir(d: Path, create: bool) -> int:
    """The directory's descriptor (made 0700, its parents as the umask says, when `create`), refused (OSError)
    when it is a symbolic link."""
    if create:
        d.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    return os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def write_in(dfd: int, name: str, chunks: Iterable[bytes]) -> int:
    """Write `chunks` as `name` in the directory `dfd` atomically (a temporary file synced, then renamed over the
    name): the bytes written. OSError when it cannot (the temporary file removed)."""
    tmp = f".{name}.{os.getpid()}.tmp"
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


def read_in(dfd: int, name: str, max_bytes: int = -1) -> bytes:
    """`name`'s bytes in the directory `dfd` (at most `max_bytes`), never through a link (OSError)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    with os.fdopen(fd, "rb") as f:
        return f.read(max_bytes)
