"""Mount points, from the kernel's mount table: the one reader for the probe, benchmarks, io-model and the
capacity source."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

#: /proc/self/mounts writes space, tab, newline and backslash in names as octal escapes.
_ESCAPE = re.compile(r"\\([0-7]{3})")


class Mount(NamedTuple):
    point: str
    fs_type: str
    #: what is mounted: a device (`/dev/vda1`), a server's export (`nfs1:/export/home`), a Lustre
    #: file system (`10.0.0.1@tcp:/scratch`), or a pseudo name (`tmpfs`)
    source: str


def _unescape(field: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> list[Mount]:
    """The mounts of /proc/self/mounts' text, in the table's order."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 3:
            out.append(Mount(_unescape(f[1]), f[2], _unescape(f[0])))
    return out


def read_mounts(path: str = "/proc/self/mounts") -> list[Mount]:
    """This process's mount table; empty when it cannot be read (no /proc: callers fall back to '/')."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return parse_mounts(f.read())
    except OSError:
        return []


def mount_entry(path: str | os.PathLike, mounts: list[Mount] | None = None) -> Mount:
    """The mount holding `path`: the longest mount point that contains it.

    The last entry wins among equal mount points, as the kernel's does (a mount over a mount).
    """
    real = os.path.realpath(path)
    best = Mount("/", "unknown", "")
    for m in read_mounts() if mounts is None else mounts:
        if (real == m.point or real.startswith(m.point.rstrip("/") + "/")) and len(m.point) >= len(best.point):
            best = m
    return best


def mount_of(path: str | os.PathLike, mounts: list[Mount] | None = None) -> tuple[str, str]:
    """(mount point, file system type) holding `path` (`mount_entry`)."""
    m = mount_entry(path, mounts)
    return m.point, m.fs_type
