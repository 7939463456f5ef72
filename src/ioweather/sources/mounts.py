"""Mount points, from the kernel's mount table: the one reader for the probe, io-model and the capacity source."""

from __future__ import annotations

import os
import re

#: /proc/self/mounts writes space, tab, newline and backslash in names as octal escapes.
_ESCAPE = re.compile(r"\\([0-7]{3})")


def parse_mounts(text: str) -> list[tuple[str, str]]:
    """[(mount point, file system type)] of /proc/self/mounts' text, in the table's order."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            out.append((_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), f[1]), f[2]))
    return out


def read_mounts(path: str = "/proc/self/mounts") -> list[tuple[str, str]]:
    """This process's mount table; empty when it cannot be read (no /proc: callers fall back to '/')."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return parse_mounts(f.read())
    except OSError:
        return []


def mount_of(path: str | os.PathLike, mounts: list[tuple[str, str]] | None = None) -> tuple[str, str]:
    """(mount point, file system type) holding `path`: the longest mount point that contains it.

    The last entry wins among equal mount points, as the kernel's does (a mount over a mount).
    """
    real = os.path.realpath(path)
    best = ("/", "unknown")
    for mnt, fstype in read_mounts() if mounts is None else mounts:
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
            best = (mnt, fstype)
    return best
