"""Test helpers: real Darshan logs, and copies of them with one name record changed.

`rename_records` rewrites a real log's (zlib-compressed) name-record region and
shifts the regions after it, so a test can get a genuine log whose file names
contain `<script>`, spaces or non-ASCII characters. Little-endian logs of format
3.10-3.41 only (what the tests use).
"""

from __future__ import annotations

import glob
import os
import struct
import zlib
from pathlib import Path

import pytest

def _find_shared() -> Path:
    """../shared beside the repository (CI), or beside its parent (a git worktree under wt/), or $IOWEATHER_SHARED."""
    root = Path(__file__).resolve().parents[1]
    for cand in (os.environ.get("IOWEATHER_SHARED"), root.parent / "shared", root.parent.parent / "shared"):
        if cand and (Path(cand) / "testdata").is_dir():
            return Path(cand)
    return root.parent / "shared"


SHARED = _find_shared()
TESTDATA_LOGS = SHARED / "testdata" / "darshan"
DATA_LOGS = SHARED / "data" / "darshan"


def all_real_logs() -> list[Path]:
    """Every Darshan log the project may test on: shared test data, shared data, PyDarshan's examples."""
    paths = sorted(Path(p) for p in glob.glob(str(TESTDATA_LOGS / "*.darshan")))
    paths += sorted(Path(p) for p in glob.glob(str(DATA_LOGS / "*" / "*.darshan")))
    paths += sorted(Path(p) for p in glob.glob(str(SHARED / "data" / "tokio" / "*.darshan")))
    return paths + pydarshan_example_logs()


@pytest.fixture(scope="module", autouse=True)
def need_darshan_logs():
    """Import into a test module to skip it (with the reason) when ../shared is absent."""
    if not TESTDATA_LOGS.is_dir():
        pytest.skip(f"shared Darshan logs not found at {TESTDATA_LOGS}")


def pydarshan_example_logs() -> list[Path]:
    import darshan.examples

    base = Path(darshan.examples.__file__).parent
    return sorted(base.glob("*/*.darshan"))


def rename_records(src: Path, dst: Path, renames: dict[str, str | bytes | None]) -> None:
    """Copy log `src` to `dst`, replacing each name record equal to a key of `renames` by its value
    (None removes the name record, leaving its records without a name; bytes are written as they are)."""
    data = bytearray(Path(src).read_bytes())
    version = data[:8].split(b"\0")[0].decode()
    name_at, mods_at, nmods = (32, 48, 64) if version >= "3.41" else (24, 40, 16)
    name_off, name_len = struct.unpack_from("<QQ", data, name_at)
    raw = zlib.decompress(bytes(data[name_off:name_off + name_len]))
    out, pos, hit = bytearray(), 0, 0
    while pos < len(raw):
        rec_id = raw[pos:pos + 8]
        end = raw.index(b"\0", pos + 8)
        name = raw[pos + 8:end].decode("utf-8")
        if name in renames:
            name = renames[name]
            hit += 1
        if name is not None:
            out += rec_id + (name if isinstance(name, bytes) else name.encode("utf-8")) + b"\0"
        pos = end + 1
    if hit != len(renames):
        raise ValueError(f"only {hit} of {len(renames)} names found in {src}")
    new_region = zlib.compress(bytes(out))
    delta = len(new_region) - name_len
    tail_start = name_off + name_len
    new = data[:name_off] + new_region + data[tail_start:]
    struct.pack_into("<QQ", new, name_at, name_off, len(new_region))
    for i in range(nmods):
        off, ln = struct.unpack_from("<QQ", new, mods_at + 16 * i)
        if ln and off >= tail_start:
            struct.pack_into("<QQ", new, mods_at + 16 * i, off + delta, ln)
    Path(dst).write_bytes(bytes(new))


def names_of(path: Path) -> list[str]:
    from ioweather.sources.darshan_log import read_log

    log = read_log(path)
    return sorted({n for r in log.records.values() for n in r.names if n})


def inflate_dxt(src: Path, dst: Path, factor: int, module_index: int = 9) -> None:
    """Copy a (format 3.21, little-endian) log with its DXT_POSIX region repeated `factor` times.

    The region is one zlib stream of records (104-byte header + 32-byte segments);
    repeating the whole stream gives a genuine log with `factor` times the segments.
    """
    import struct
    import zlib

    data = bytearray(src.read_bytes())
    at = 40 + 16 * module_index
    off, ln = struct.unpack_from("<QQ", data, at)
    raw = zlib.decompress(bytes(data[off:off + ln]))
    dst.write_bytes(bytes(_swap_region(data, 40, 16, module_index, zlib.compress(raw * factor, 1))))


def _swap_region(data: bytearray, table_at: int, nmods: int, index: int, new: bytes) -> bytearray:
    """`data` with module region `index` replaced by `new`; the region table (`nmods` (offset, length)
    pairs at `table_at`) updated, as the regions after it move by the size difference."""
    at = table_at + 16 * index
    off, ln = struct.unpack_from("<QQ", data, at)
    out = data[:off] + new + data[off + ln:]
    struct.pack_into("<QQ", out, at, off, len(new))
    for i in range(nmods):
        o, l = struct.unpack_from("<QQ", out, table_at + 16 * i)
        if l and o > off:
            struct.pack_into("<QQ", out, table_at + 16 * i, o + len(new) - ln, l)
    return out


LOGS = all_real_logs() if TESTDATA_LOGS.is_dir() else []
LOG_IDS = [f"{p.parent.name}/{p.name[:50]}" for p in LOGS]


def damage_counters(src: Path, dst: Path, changes: dict[int, dict[str, int]]) -> None:
    """Copy a (format 3.41, little-endian) log with some POSIX counters overwritten: {record index: {name: value}}.

    The POSIX region (module 1) is one zlib stream of records: id and rank (16 bytes), the int64 counters
    and the float64 fcounters in PyDarshan's order. A real log damaged in place, as a flipped block or a
    buggy writer leaves it: only the numbers change, the layout stays valid.
    """
    import darshan.backend.cffi_backend as backend

    data = bytearray(Path(src).read_bytes())
    assert data[:8].split(b"\0")[0].decode() >= "3.41", "format 3.41 logs only"
    names = backend.counter_names("POSIX")
    size = 16 + 8 * len(names) + 8 * len(backend.fcounter_names("POSIX"))
    at = 48 + 16 * 1
    off, ln = struct.unpack_from("<QQ", data, at)
    # one zlib stream per writer (rank) in a row: each is re-compressed on its own
    streams, rest = [], bytes(data[off:off + ln])
    while rest:
        d = zlib.decompressobj()
        streams.append(bytearray(d.decompress(rest)))
        rest = d.unused_data
    assert all(len(r) % size == 0 for r in streams), "whole POSIX records in every stream"
    where = [(k, j) for k, r in enumerate(streams) for j in range(len(r) // size)]
    for i, counters in changes.items():
        k, j = where[i]
        for name, value in counters.items():
            struct.pack_into("<q", streams[k], j * size + 16 + 8 * names.index(name), value)
    Path(dst).write_bytes(bytes(_swap_region(data, 48, 64, 1, b"".join(zlib.compress(bytes(r)) for r in streams))))
