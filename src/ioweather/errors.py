"""Errors a user can act on.

Anything raised as `UserError` reaches the terminal as one line on stderr and a
non-zero exit code, never as a traceback (ARCHITECTURE.md, CLI contract).
`from_os_error` is the one place an `OSError` becomes such a line, so that the same
failure reads the same in every command.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path


class UserError(Exception):
    """Bad input or an environment problem, explained in one line."""

    exit_code = 2


class StoreError(UserError):
    """The store cannot be opened, read or written."""


class StoreDamaged(StoreError):
    """The store's database or Parquet files are damaged; `ioweather store check` tells what."""


class SchemaTooNew(StoreError):
    """The database was written by a newer ioweather."""


# Reasons in our words where the C library's are unclear to someone who is not a
# programmer ("Is a directory" about what?) or hide the action to take (disk full).
_REASONS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "it is a directory",
    errno.ENOSPC: "disk full (no space left on device)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EIO: "I/O error reported by the device or file system",
    errno.EROFS: "read-only file system",
    errno.EEXIST: "it already exists",
    errno.ENAMETOOLONG: "file name too long",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "too many open files",
    errno.ESTALE: "stale file handle (the file was removed on the server)",
}


def _first_ancestor(path: Path, bad) -> Path | None:
    """The highest ancestor of `path` for which `bad(ancestor)` holds, if any."""
    for p in reversed(path.parents):
        if bad(p):
            return p
    return None


def _is_symlink_not_loop(p: Path) -> bool:
    """`p` is a symlink (dangling or not) that is not part of a loop of links."""
    try:
        if not p.is_symlink():
            return False
        os.stat(p)
    except OSError as e:
        return e.errno != errno.ELOOP
    return True


def os_error_reason(exc: Exception, path: str | os.PathLike | None = None) -> str:
    """Why `exc` happened, in a few lower-case words (no path prefix, no full stop).

    `path` (the file the caller was working on) lets ENOENT, ENOTDIR and ELOOP name
    the part of the path that is at fault; it is only inspected after the failure.
    """
    code = getattr(exc, "errno", None)  # Arrow raises errors that are not OSErrors as well
    if not code:  # raised by a library (e.g. Arrow) without an errno: its own first line
        text = str(exc).strip()
        return text.splitlines()[0] if text else type(exc).__name__
    p = Path(os.fsdecode(path)) if path is not None else None
    if code == errno.ENOENT:
        missing = p and _first_ancestor(p, lambda a: not a.exists())
        return f"no such directory {missing}" if missing else "no such file or directory"
    if code in (errno.ENOTDIR, errno.ELOOP) and p is not None and _is_symlink_not_loop(p):
        # O_NOFOLLOW answers ELOOP for a symlink in the last place, O_DIRECTORY|O_NOFOLLOW ENOTDIR.
        return "it is a symlink, which ioweather never follows"
    if code == errno.ENOTDIR:
        blocker = p and _first_ancestor(p, lambda a: a.exists() and not a.is_dir())
        return f"{blocker} is not a directory" if blocker else "not a directory"
    if code == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop)"
    if code in _REASONS:
        return _REASONS[code]
    text = os.strerror(code)
    return text[:1].lower() + text[1:]


def from_os_error(path: str | os.PathLike, exc: Exception, what: str, *, hint: str | None = None,
                  cls: type[UserError] = UserError) -> UserError:
    """`cannot WHAT PATH: REASON[; HINT]` as a `cls` (a UserError) for `raise ... from None`.

    `what` is the action that failed ("read", "write snapshot", "create probe directory").
    """
    msg = f"cannot {what} {os.fsdecode(path)}: {os_error_reason(exc, path)}"
    return cls(f"{msg}; {hint}" if hint else msg)
