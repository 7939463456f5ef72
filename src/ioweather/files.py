"""Opening the files users name, and writing the files we produce, without hanging or following links.

Log directories are often world-writable: anyone can plant a FIFO (which blocks a reader
forever), a device (`/dev/zero` never ends) or a symlink to a file they may not read
(`/etc/shadow`) where ioweather expects a log. So inputs are opened non-blocking and must
be regular files *on the opened descriptor* (no race between a check and the open), and
outputs are written beside their destination and renamed over it, refusing a symlink there.
Below every layer: sources, store and services all use it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ioweather.errors import UserError, from_os_error

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def kind_of(mode: int) -> str:
    """'a FIFO (named pipe)', 'a directory', ... for a file that is not regular."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | os.PathLike, *, follow_symlinks: bool = True, what: str = "read") -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file; a one-line UserError otherwise.

    O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer; the type is
    then checked on the descriptor itself, and blocking mode restored for the regular file.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise from_os_error(path, e, what) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserError(f"cannot {what} {os.fsdecode(path)}: it is {kind_of(mode)}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def fd_path(f: BinaryIO) -> str:
    """A path that names exactly the already opened file `f`, for libraries that only take paths
    (libdarshan-util, HDF5): they then read the file that was checked, not whatever the name
    points to a moment later."""
    return f"/proc/self/fd/{f.fileno()}"


def display_path(path: str | os.PathLike) -> str:
    """`path` as text that can be stored and printed: file names are bytes on Linux, and a name
    that is not UTF-8 (os.fsdecode's surrogates) cannot be encoded for SQLite, HTML or a terminal.
    Undecodable bytes read as `\\xNN`; the original stays recoverable where it matters (the
    store keys paths by the hash of their bytes, `store.jobs.path_hash`)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def read_regular_text(path: str | os.PathLike, *, what: str = "read", encoding: str = "utf-8") -> str:
    with open_regular(path, what=what) as f:
        try:
            return f.read().decode(encoding)
        except OSError as e:
            raise from_os_error(path, e, what) from None


def check_destination(path: str | os.PathLike, *, what: str = "write") -> None:
    """A one-line UserError if write_atomic would refuse `path`; for commands that check their
    outputs before a long run rather than after it."""
    path = Path(path)
    if path.is_symlink():
        raise UserError(f"cannot {what} {path}: it is a symlink, which ioweather never follows")
    if path.is_dir():
        raise UserError(f"cannot {what} {path}: it is a directory")


def write_atomic(path: str | os.PathLike, data: str | bytes, *, what: str = "write") -> None:
    """Write `data` to `path` whole or not at all, never through a symlink at `path`.

    The bytes go to a new temporary file in the same directory (O_EXCL|O_NOFOLLOW, so nothing
    planted there is followed or overwritten), which then replaces `path` in one rename: readers
    see the old file or the new one, and a crash or a full disk leaves the old one.
    """
    path = Path(path)
    check_destination(path, what=what)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.EEXIST:  # a leftover of a killed run of ours, or something planted: never reuse it
            raise UserError(f"cannot {what} {path}: {tmp} is in the way (remove it)") from None
        raise from_os_error(path, e, what) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise from_os_error(path, e, what) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
