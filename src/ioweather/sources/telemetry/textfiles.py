"""Text members of a recorded history: a plain file, a .gz, a tar/.tgz (of plain or .gz files) or a
directory of them — the forms pytokio's archives of `mmperfmon` and `lfs df` output come in.

What arrives is the text of each member, in order. Archives copied off a full disk or interrupted
mid-transfer are common, so a truncated or corrupt gzip/tar stream does not lose what came before
it: the member's text up to its last complete line is kept and the damage is described in
`Member.damage` (a line cut in the middle could hold a cut number, so it is dropped). The
format is found from the bytes, not the name: a `.txt` that is really gzip is read as gzip.
"""

from __future__ import annotations

import os
import tarfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ioweather.errors import UserError, from_os_error
from ioweather.files import open_regular
from ioweather.sources.telemetry.base import Long

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
# what a damaged gzip or tar stream raises while being read
_DAMAGE = (EOFError, zlib.error, tarfile.ReadError, OSError)


@dataclass
class TextImport(Long):
    """Rows of a text importer, and how many lines of the input it could not read."""

    bad_lines: int = 0


@dataclass
class Member:
    name: str
    text: str
    damage: str | None = None  # why the text stops early, when it does


def _read_all(stream, what: str) -> tuple[bytes, str | None]:
    """All bytes of `stream`; on damage, those before it and a one-line reason."""
    parts: list[bytes] = []
    try:
        while True:
            b = stream.read(_CHUNK)
            if not b:
                return b"".join(parts), None
            parts.append(b)
    except _DAMAGE as e:
        data = b"".join(parts)
        return data, f"{what} is truncated or corrupt after {len(data):,} bytes ({e})"


def _gunzip(raw: bytes, name: str) -> tuple[bytes, str | None]:
    """Decompress gzip bytes (several concatenated members too). zlib, not GzipFile: GzipFile
    raises on a truncated stream before handing out the data it did decompress."""
    out: list[bytes] = []
    data = raw
    while data[:2] == _GZIP_MAGIC:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(data))
        except zlib.error as e:
            return b"".join(out), f"{name} is corrupt after {sum(map(len, out)):,} bytes ({e})"
        if not d.eof:
            return b"".join(out), f"{name} is truncated after {sum(map(len, out)):,} bytes"
        data = d.unused_data
    return b"".join(out), None


def _decode(name: str, raw: bytes, damage: str | None) -> Member:
    if raw[:2] == _GZIP_MAGIC:  # a .gz inside a tar, or a gzip with any name
        raw, more = _gunzip(raw, name)
        damage = damage or more
    text = raw.decode("utf-8", errors="replace")
    if damage and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    return Member(name, text, damage)


def _is_tar(f) -> bool:
    try:
        with tarfile.open(fileobj=f, mode="r:*") as t:
            return t.next() is not None
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        return False
    finally:
        f.seek(0)


def _tar_members(f, label: str) -> Iterator[Member]:
    with tarfile.open(fileobj=f, mode="r:*") as t:
        while True:
            try:
                info = t.next()
            except _DAMAGE as e:
                yield Member(label, "", f"{label} is truncated or corrupt after its last complete member ({e})")
                return
            if info is None:
                return
            if not info.isfile():
                continue
            member = t.extractfile(info)
            raw, damage = _read_all(member, f"{label}:{info.name}")
            yield _decode(f"{label}:{info.name}", raw, damage)
            if damage:
                return  # the stream is broken: nothing after this member can be trusted


def _members_of_file(path: Path, name: str) -> Iterator[Member]:
    """The members of one file, opened once as a regular file (a FIFO or a device is refused, never
    waited on) and read through that descriptor."""
    with open_regular(path) as f:
        try:
            if _is_tar(f):
                yield from _tar_members(f, path.name)
            else:
                yield _decode(name, f.read(), None)
        except OSError as e:
            raise from_os_error(path, e, "read") from None


def read_members(source: str | os.PathLike) -> Iterator[Member]:
    """The text members of `source` (file, .gz, tar/.tgz or directory), in name order for directories."""
    path = Path(source)
    if path.is_dir():
        # Symlinks inside the directory are not followed (files or directories): a directory of
        # archives may be writable by others, and a link planted there must not make us read its target.
        files = sorted(Path(root) / n for root, _, names in os.walk(path)
                       for n in names if not os.path.islink(os.path.join(root, n))
                       and os.path.isfile(os.path.join(root, n)))
        if not files:
            raise UserError(f"{source}: empty directory (symlinks inside are not followed)")
        for p in files:
            yield from _members_of_file(p, str(p.relative_to(path)))
        return
    if not path.exists():
        raise UserError(f"{source}: no such file or directory")
    yield from _members_of_file(path, path.name)
