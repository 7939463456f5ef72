"""The dashboard's page answers kept across a restart (issue 40 item 4): a derived cache in the store's home.

A page whose answer is computed from a whole dataset (Workload's 7 days of a file system's telemetry, ~2 s at a
center's size; the Report) is kept in the server's memory while the data's fingerprint is unchanged
(web/context.py `WebContext.memo`), and was computed again by the first view after every restart. Here the
answer's JSON document is written when it is computed and read back by the next process while the same
fingerprint holds, so the first view after a restart is a file read. Never the source of truth:

- derived: the document a page computed from the store, identified by the page's key and the fingerprint
  (`version`) of everything it was computed from (the caller's: a file system's telemetry files, sizes and
  times; the probe pieces; the jobs' marker); an entry read back under another key, version, store or format,
  truncated or damaged (a CRC-32 of the payload), is ignored (and overwritten when computed again);
- bounded: at most MAX_FILES entries (the least recently written go first) and MAX_BYTES a document (a bigger
  one is not kept);
- written atomically (a temporary file in the same directory, then rename), never through a symbolic link (the
  directory and the files are opened with O_NOFOLLOW; a link planted at either is not followed);
- removed by `store prune` (services/runtime/retention.py) when it removes anything.

Layout of an entry: MAGIC, the header's length (u8), the header (JSON: format, store, key, version, payload
length), the payload (the document as JSON text, UTF-8), its CRC-32 (u4). Nothing in it is executed.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from pathlib import Path

from ioweather.store import cache_files

DIR = "answers"
MAGIC = b"IOWANSW\x01"
VERSION = 1
MAX_FILES = 32
MAX_BYTES = 32 << 20


def dir_of(home: Path) -> Path:
    """Where the entries live: the store's home's cache directory (beside probe-rollups.bin)."""
    return Path(home) / "cache" / DIR


def _name(store: str, key: str) -> str:
    return hashlib.sha256(f"{store}\0{key}".encode()).hexdigest()[:32] + ".bin"


def encode(store: str, key: str, version: str, text: str) -> bytes:
    payload = text.encode()
    header = json.dumps({"format": VERSION, "store": store, "key": key, "version": version,
                         "bytes": len(payload)}).encode()
    return MAGIC + len(header).to_bytes(8, "little") + header + payload + zlib.crc32(payload).to_bytes(4, "little")


def decode(data: bytes, store: str, key: str, version: str) -> str | None:
    """The document's JSON text of a whole, undamaged entry written for the same store, key and version."""
    try:
        if data[:len(MAGIC)] != MAGIC:
            return None
        n = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
        start = len(MAGIC) + 8 + n
        header = json.loads(data[len(MAGIC) + 8:start])
        if (header.get("format"), header.get("store"), header.get("key"), header.get("version")) != \
                (VERSION, store, key, version):
            return None
        size = int(header["bytes"])
        if len(data) != start + size + 4:
            return None  # truncated (or grown)
        payload = memoryview(data)[start:start + size]
        if zlib.crc32(payload) != int.from_bytes(data[-4:], "little"):
            return None  # damaged
        return bytes(payload).decode()
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def load(home: Path, store: str, key: str, version: str) -> str | None:
    """The kept document (JSON text) of `key` at `version`, None without a valid one."""
    try:
        dfd = cache_files.open_dir(dir_of(home), create=False, below=1)
    except OSError:
        return None
    try:
        data = cache_files.read_in(dfd, _name(store, key), MAX_BYTES + (1 << 16))
    except OSError:
        return None
    finally:
        os.close(dfd)
    return decode(data, store, key, version)


def save(home: Path, store: str, key: str, version: str, text: str) -> bool:
    """Keep `text` as `key`'s document at `version` (replacing the previous one); False when not kept (too big, a
    link in the way, a read-only home). The oldest entries beyond MAX_FILES are removed."""
    data = encode(store, key, version, text)
    if len(data) > MAX_BYTES:
        return False
    try:
        dfd = cache_files.open_dir(dir_of(home), create=True, below=1)
    except OSError:
        return False
    try:
        cache_files.write_in(dfd, _name(store, key), [data])
        _bound(dfd)
        return True
    except OSError:
        return False
    finally:
        os.close(dfd)


def _bound(dfd: int) -> None:
    entries = []
    for name in os.listdir(dfd):
        if name.endswith(".bin"):
            try:
                entries.append((os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mtime_ns, name))
            except OSError:
                pass
    for _, name in sorted(entries)[:-MAX_FILES]:
        try:
            os.unlink(name, dir_fd=dfd)
        except OSError:
            pass


def remove(home: Path) -> int:
    """Delete every entry (`store prune`): how many there were."""
    try:
        dfd = cache_files.open_dir(dir_of(home), create=False, below=1)
    except OSError:
        return 0
    n = 0
    try:
        for name in os.listdir(dfd):
            if name.endswith(".bin") or name.endswith(".tmp"):
                try:
                    os.unlink(name, dir_fd=dfd)
                    n += name.endswith(".bin")
                except OSError:
                    pass
    finally:
        os.close(dfd)
    return n
