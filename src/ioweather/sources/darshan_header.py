"""A Darshan log's identity and header, without its reader: the header's check against the file
(`check_layout`), the log opened as a regular file (`open_log`) and its content hash (`content_hash`).

Apart from sources/darshan_log.py (which re-exports them) because they need neither PyDarshan nor numpy
nor pandas: `why JOB` hashes a stored job's log to know it unchanged, and needs no log reader when the
store holds the job's facts (issue 40: importing the reader's module cost `why` ~0.3 s of pandas).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from ioweather.errors import UserError, os_error_reason
from ioweather.files import display_path, fd_path, open_regular

#: Oldest and newest log format this reader knows (libdarshan-util 3.4/3.5 reads both ends).
MIN_FORMAT, MAX_FORMAT = (3, 0), (3, 41)
DARSHAN_MAGIC = 6567223


class DarshanLogError(UserError):
    """A file that is not a readable Darshan 3.x log; the message says why.

    Exit status 1: the file was opened and is not a log we can read (damaged, unsupported).
    """

    exit_code = 1


class DarshanOpenError(DarshanLogError):
    """The file could not be opened as a regular file (missing, permission, a FIFO...): exit 2,
    as every command's file errors."""

    exit_code = 2


# ---------------------------------------------------------------------------
# header check (hand-written: see darshan_log's docstring for why)

@dataclass
class _Layout:
    version: str
    regions: list[tuple[str, int, int]]   # (what, offset, length)
    header_bytes: int = 0
    comp: int = 0                          # the regions' compression: 0 zlib, 1 bzip2, 2 none
    job: tuple[int, int] = (0, 0)          # the job region (offset, length): from the header's end to the names
    job_struct: int = 1080                 # bytes of the job struct before the executable and mount table

    @property
    def end(self) -> int:
        """Where the last region ends: libdarshan-util reads nothing beyond (on real logs, the file size)."""
        return max([self.header_bytes] + [off + ln for _, off, ln in self.regions])


def _format_tuple(version: str) -> tuple[int, int] | None:
    try:
        major, minor = version.split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def check_layout(path: str | os.PathLike, *, open_path: str | None = None) -> _Layout:
    """Validate a log's uncompressed header against the file; raise DarshanLogError with the reason.

    Layouts (little- or big-endian, by the magic number): version[8], magic int64,
    then for formats < 3.41 the name map at byte 24 and 16 module maps from byte 40;
    for 3.41 the name map at byte 32 and 64 module maps from byte 48. Each map is
    (offset uint64, length uint64). The check is that every region lies in the file.
    """
    p = Path(open_path or path)  # open_path: the already opened, checked file (files.fd_path)
    try:
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(2048)
    except OSError as e:
        # `cannot ACTION PATH: REASON`, as every file error (README); a batch ingest strips the path
        raise DarshanOpenError(f"cannot read {path}: {os_error_reason(e, path)}") from None
    if size == 0:
        raise DarshanLogError(f"{path}: empty file (0 bytes), not a Darshan log")
    if head[:2] == b"\x1f\x8b" or head[:3] == b"BZh":
        # Darshan 2.x compressed the whole file; its first bytes are the version string.
        try:
            opener = gzip.open if head[:2] == b"\x1f\x8b" else bz2.open
            with opener(p, "rb") as f:
                inner = f.read(8)
        except Exception:
            inner = b""
        if inner[:2] == b"2.":
            v = inner.split(b"\0")[0].decode("ascii", "replace")
            raise DarshanLogError(f"{path}: Darshan {v} log (format 2.x) is not readable by PyDarshan; "
                                  "convert it with darshan-convert from Darshan 3 first")
        raise DarshanLogError(f"{path}: compressed file that is not a Darshan log")
    if len(head) < 16:
        raise DarshanLogError(f"{path}: truncated Darshan log ({size} bytes, shorter than its header)")
    version = head[:8].split(b"\0")[0].decode("ascii", "replace")
    vt = _format_tuple(version)
    endian = "<"
    if struct.unpack_from("<q", head, 8)[0] != DARSHAN_MAGIC:
        if struct.unpack_from(">q", head, 8)[0] == DARSHAN_MAGIC:
            endian = ">"
        elif vt is not None and vt[0] == 2:
            raise DarshanLogError(f"{path}: Darshan {version} log (format 2.x) is not readable by PyDarshan; "
                                  "convert it with darshan-convert from Darshan 3 first")
        else:
            raise DarshanLogError(f"{path}: not a Darshan log (bad magic number)")
    if vt is None or vt[0] != 3:
        if vt is not None and vt[0] == 2:
            raise DarshanLogError(f"{path}: Darshan {version} log (format 2.x) is not readable by PyDarshan; "
                                  "convert it with darshan-convert from Darshan 3 first")
        raise DarshanLogError(f"{path}: unknown Darshan log format {version!r}")
    if vt > MAX_FORMAT:
        raise DarshanLogError(f"{path}: Darshan log format {version} is newer than this reader supports "
                              f"({MIN_FORMAT[0]}.{MIN_FORMAT[1]:02d}-{MAX_FORMAT[0]}.{MAX_FORMAT[1]}); upgrade the darshan package")
    name_at, mods_at, nmods = (32, 48, 64) if vt >= (3, 41) else (24, 40, 16)
    need = mods_at + 16 * nmods
    if len(head) < need:
        raise DarshanLogError(f"{path}: truncated Darshan log ({size} bytes, shorter than its header)")
    regions = [("name records", *struct.unpack_from(endian + "QQ", head, name_at))]
    for i in range(nmods):
        off, ln = struct.unpack_from(endian + "QQ", head, mods_at + 16 * i)
        if ln:
            regions.append((f"module {i}", off, ln))
    for what, off, ln in regions:
        if off + ln > size:
            raise DarshanLogError(f"{path}: truncated Darshan log: {what} region ends at byte {off + ln} "
                                  f"but the file has {size} bytes")
    job_at = need + 4 * nmods  # the maps, then one uint32 version per module
    return _Layout(version=version, regions=regions, header_bytes=need, comp=head[16],
                   job=(job_at, max(0, regions[0][1] - job_at)), job_struct=1080 if vt >= (3, 41) else 1064)


#: Pseudo-file systems: "regular" files there block (/proc/kmsg) or are not data (issue 32 item 4).
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def open_log(path: str | os.PathLike, *, follow_symlinks: bool = True, within: str | None = None):
    """The log opened if it is a regular file (a FIFO or a device would hang libdarshan-util forever).

    `follow_symlinks=False` opens with O_NOFOLLOW: a file listed by a directory scan and replaced
    by a link before it is opened is refused, not read. Where the opened file really is comes from
    the descriptor (no race with a rename): never under /proc, /sys or /dev, and inside `within`
    (a real path: the scanned directory) when given, so neither a link nor a directory swapped in
    on the way leaves the scanned tree.
    """
    path = os.fspath(path)
    try:
        f = open_regular(path, follow_symlinks=follow_symlinks)
    except UserError as e:
        reason = str(e).split(": ", 1)[-1]
        if not follow_symlinks and os.path.islink(path):
            reason = "it is a symlink (replaced after the directory scan?), which is not followed"
        # `cannot ACTION PATH: REASON`, as every file error (README); a batch ingest strips the path
        raise DarshanOpenError(f"cannot read {path}: {reason}") from None
    try:
        real = os.readlink(fd_path(f))
    except OSError:  # no /proc: nothing to check against
        return f
    why = None
    if any(_inside(real, r) for r in PSEUDO_ROOTS):
        why = f"it is {display_path(real)}, in a pseudo-file system"
    elif within is not None and not _inside(real, within):
        why = f"it leads to {display_path(real)}, outside the scanned directory {display_path(within)}"
    if why:
        f.close()
        raise DarshanOpenError(f"cannot read {path}: {why}")
    return f


#: Bytes after a log's last region that are hashed too: appended bytes change a log's identity (a
#: copy with a trailer is another job), but a sparse 10 GiB tail is not read.
HASHED_TRAILER_BYTES = 1 << 20


def content_hash(path: str | os.PathLike, chunk: int = 1 << 20, *, opened=None, layout: _Layout | None = None) -> str:
    """SHA-256 (hex) of a log's bytes: the identity of a log for idempotent ingest.

    The header is checked first (`check_layout`): a 10 GiB sparse file named x.darshan is refused
    in microseconds instead of hashed for 20 s (issue 32 item 8). Then the bytes up to the last
    region libdarshan-util reads are hashed, plus at most HASHED_TRAILER_BYTES after it; when the
    file goes on beyond that, its size is hashed too. On a real log the last region ends at the end
    of the file: the hash is that of the whole file, as before.
    """
    path = os.fspath(path)
    if opened is None:
        with open_log(path) as f:
            return content_hash(path, chunk, opened=f, layout=layout)
    if layout is None:
        layout = check_layout(path, open_path=fd_path(opened))
    h = hashlib.sha256()
    fd = opened.fileno()
    size = os.fstat(fd).st_size
    at, end = 0, min(size, layout.end + HASHED_TRAILER_BYTES)
    while at < end:
        block = os.pread(fd, min(chunk, end - at), at)
        if not block:
            break
        h.update(block)
        at += len(block)
    if size > end:
        h.update(f"\0size={size}".encode())
    return h.hexdigest()
