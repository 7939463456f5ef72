"""pytokio's TOKIO Time Series (TTS) HDF5 files -> Wide chunks, read with h5py.

A TTS file has groups (datatargets, dataservers, mdtargets, mdservers, fullness, ...), each
with a `timestamps` dataset (unix seconds, left-aligned: row i covers [t_i, t_i + step)) and
2-D datasets (time x column) whose `columns` attribute names the targets. -0.0 marks a value
never filled (missing); NaN too.

Units: the dataset name says what the numbers are, not its `units` attribute. pytokio labels
datatargets/readbytes 'bytes/sec', yet it holds bytes per timestep (it is the LMT counter's
delta: ../shared/data/tokio/snx11025_2018-01-28.hdf5 against the LMT database of the same
five minutes); *rates datasets hold bytes per second and are multiplied by the step here.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Iterator

import h5py
import numpy as np

from ioweather.errors import UserError
from ioweather.files import fd_path, open_regular
from ioweather.isolation import ChildDied, call_isolated
from ioweather.sources.darshan_log import DEFLATE_MAX_RATIO, INFLATE_FLOOR
from ioweather.sources.telemetry.base import AMOUNT, GAUGE, Wide
from ioweather.sources.telemetry.importers import Importer

# dataset name -> (metric, kind, multiply by step?)
DATASETS = {
    "readbytes": ("read_bytes", AMOUNT, False), "writebytes": ("write_bytes", AMOUNT, False),
    "readrates": ("read_bytes", AMOUNT, True), "writerates": ("write_bytes", AMOUNT, True),
    "readops": ("read_ops", AMOUNT, False), "writeops": ("write_ops", AMOUNT, False),
    "readoprates": ("read_ops", AMOUNT, True), "writeoprates": ("write_ops", AMOUNT, True),
    "cpuload": ("cpu_pct", GAUGE, False), "memused": ("mem_used_pct", GAUGE, False),
}
MD_DATASETS = {"opens": "open", "closes": "close", "mknods": "mknod", "links": "link", "unlinks": "unlink",
               "mkdirs": "mkdir", "rmdirs": "rmdir", "renames": "rename", "getattrs": "getattr",
               "setattrs": "setattr", "getxattrs": "getxattr", "setxattrs": "setxattr", "statfss": "statfs",
               "syncs": "sync"}


# what h5py raises on a file whose structure is damaged or not what pytokio writes
_DAMAGE = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError, OverflowError, AttributeError)


def _name(c) -> str:
    """bytes, or str with lone surrogates (h5py's escape of bytes that are not UTF-8), as text that
    the store and the JSON output can write."""
    return (c.decode(errors="replace") if isinstance(c, bytes) else str(c)).encode(errors="replace").decode()


#: The `columns` attribute's names are variable-length strings: each element's length is a 32-bit
#: number in the attribute, and HDF5 allocates (and h5py copies) that many bytes before it finds the
#: string's heap entry missing. 8 bytes of 0xff there cost 4 GiB and 6-11 s per name (issue 41), and
#: HDF5 has no call that gives the lengths without reading them. So they are read from the object
#: header's bytes (_claimed_name_bytes; the strings live uncompressed in the file, so their sum cannot
#: exceed its size), and where the header is not of the plain form that h5py writes by default, the
#: names are read in a forked child whose address space may grow by at most this much over the parent's:
#: a real file's names take a few KiB (snx11025: 248 targets); 256 MiB holds a million names of 64 bytes.
NAMES_MEMORY = 256 << 20
_ATTRIBUTE, _CONTINUATION, _VLEN = 0x0C, 0x10, 9  # HDF5 message types and datatype class
_OTHER = -1  # an attribute message of another name


def _u(b: bytes, at: int, n: int) -> int:
    return int.from_bytes(b[at:at + n], "little")


def _attr_claim(body: bytes, so: int, sl: int, attr: bytes) -> int | None:
    """Bytes of variable-length data that attribute message BODY claims if it is ATTR's (_OTHER if not;
    None where its form is not understood here). SO, SL: the file's sizes of an address and a length."""
    ver = body[0] if body else 0
    if ver == 1:
        at, pad = 8, (lambda n: (n + 7) & ~7)
    elif ver in (2, 3) and not body[1] & 3:  # shared datatype or dataspace: elsewhere in the file
        at, pad = (8 if ver == 2 else 9), (lambda n: n)
    else:
        return None
    nsize, dtsize, dssize = _u(body, 2, 2), _u(body, 4, 2), _u(body, 6, 2)
    if body[at:at + nsize].rstrip(b"\0") != attr:
        return _OTHER
    at += pad(nsize)
    dt, ds = body[at:at + dtsize], body[at + pad(dtsize):at + pad(dtsize) + dssize]
    at += pad(dtsize) + pad(dssize)
    if dt and dt[0] & 0x0F != _VLEN:
        return 0  # fixed-size elements (pytokio's names are 16-byte strings): all in the header, read already
    if len(dt) < 16 or len(ds) < 4:  # a variable-length type describes its base type after its 8 bytes
        return None
    if ds[0] == 1:
        rank, dims_at, kind = ds[1], 8, 1
    elif ds[0] == 2:
        rank, dims_at, kind = ds[1], 4, ds[3]
    else:
        return None
    n = 0 if kind == 2 else 1
    for i in range(rank):
        n *= _u(ds, dims_at + sl * i, sl)
    size = 4 + so + 4  # on disk: the length, then the global heap id (an address and an index)
    data = body[at:at + n * size]
    if len(ds) < dims_at + sl * rank or len(data) < n * size:
        return None
    return sum(_u(data, i * size, 4) for i in range(n)) * _u(dt, 12, 4)  # elements x the base type's size


def _claimed_name_bytes(fd: int, obj, attr: bytes = b"columns") -> int | None:
    """What OBJ's attribute ATTR claims of variable-length data, read from OBJ's version-1 object header
    (the form h5py writes by default); None for another form or where the header does not say."""
    plist = obj.file.id.get_create_plist()
    (so, sl), base = plist.get_sizes(), plist.get_userblock()  # HDF5's addresses start after the user block
    addr = h5py.h5o.get_info(obj.id).addr
    head = os.pread(fd, 16, base + addr)
    if len(head) < 16 or head[0] != 1:
        return None
    blocks, seen = [(base + addr + 16, _u(head, 8, 4))], 0
    while blocks and seen < 64:
        at, length = blocks.pop()
        seen += 1
        buf = os.pread(fd, min(length, 1 << 20), at)
        pos = 0
        while pos + 8 <= len(buf):
            mtype, msize = _u(buf, pos, 2), _u(buf, pos + 2, 2)
            body = buf[pos + 8:pos + 8 + msize]
            pos += 8 + msize
            if mtype == _CONTINUATION:
                blocks.append((base + _u(body, 0, so), _u(body, so, sl)))
            elif mtype == _ATTRIBUTE and (claim := _attr_claim(body, so, sl, attr)) != _OTHER:
                return claim
    return None


def _check_claim(ds, path: str, size: int) -> None:
    """Refuse DS when what its shape and type claim cannot be in a file of SIZE bytes: stored whole, a
    dataset holds at most the file's bytes; filtered, at most what deflate inflates them to (its most,
    DEFLATE_MAX_RATIO); and INFLATE_FLOOR whatever the file's size. Past that, a damaged dataspace (or a
    chunked dataset's dimensions) has h5py allocate and fill it all before any check, and the names of
    a dataset without `columns` are made one per column."""
    if not isinstance(ds, h5py.Dataset) or not ds.shape:
        return  # not data, or one value: reading it costs nothing
    claimed = int(np.prod(ds.shape, dtype=object)) * ds.dtype.itemsize
    ratio = DEFLATE_MAX_RATIO if ds.id.get_create_plist().get_nfilters() else 1
    if claimed > max(INFLATE_FLOOR, ratio * size):
        raise UserError(f"{path}: damaged: {_name(ds.name)} claims {' x '.join(map(str, ds.shape))} values of "
                        f"{ds.dtype.itemsize} bytes, more than its {size} bytes hold"
                        + (f" even inflated {ratio} times" if ratio > 1 else ""))


def _names(ds, path: str, size: int) -> list[str]:
    _check_claim(ds, path, size)
    cols = ds.attrs.get("columns")
    if cols is None:
        return [f"column{i}" for i in range(ds.shape[1])]
    names = [_name(c) for c in np.atleast_1d(cols)]
    if len(names) != ds.shape[1]:
        raise ValueError(f"{ds.name} has {ds.shape[1]} columns but names {len(names)}")
    return names


def _capped(fn, *args):
    """FN(*ARGS) with the address space allowed to grow by NAMES_MEMORY at most: for the forked child."""
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = used + NAMES_MEMORY
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    return fn(*args)


_LAST_S = 9_223_372_036  # 2262-04-11: the last second an int64 of ns holds


class TtsFile:
    """One TTS file, opened as a regular file (a FIFO or a directory is refused, not waited on);
    HDF5 reads it through the descriptor's /proc path, so it reads the file that was checked."""

    def __init__(self, path: str):
        if not os.path.lexists(path):
            raise UserError(f"TTS file {path!r} not found")
        self.file = open_regular(path, what="read TTS file")
        try:
            self.h5 = h5py.File(fd_path(self.file), "r")
        except _DAMAGE as e:
            self.file.close()
            raise UserError(f"{path} is not an HDF5 file ({e})") from None
        self.path = path
        self.size = os.fstat(self.file.fileno()).st_size
        self.skipped: list[str] = []
        self.bad_times = 0

    def close(self) -> None:
        try:
            self.h5.close()
        finally:
            self.file.close()

    def damaged(self, e: Exception) -> UserError:
        return UserError(f"{self.path}: damaged or not a TOKIO time series file ({type(e).__name__}: {e})")

    def groups(self) -> list[str]:
        try:
            return [name for name, g in self.h5.items() if isinstance(g, h5py.Group) and "timestamps" in g]
        except _DAMAGE as e:
            raise self.damaged(e) from None

    def chunks(self) -> Iterator[tuple[str, list[Wide]]]:
        """(group name, [Wide, ...]) per group that has timestamps."""
        groups = self.groups()
        if not groups:
            raise UserError(f"{self.path} is not a TOKIO time series file (no group with 'timestamps')")
        for gname in groups:
            try:
                out = self._group(gname)
            except _DAMAGE as e:
                raise self.damaged(e) from None
            if out is not None:
                yield gname, out

    def _columns(self, ds) -> list[str]:
        """DS's column names, read here when its header shows that they fit in the file (refused when it
        shows they do not), else in a forked child under the NAMES_MEMORY cap."""
        try:
            h5py.h5a.open(ds.id, b"columns")
        except KeyError:  # no attribute, or one HDF5 cannot open: _names' attrs.get() takes both for none
            claim = 0
        else:
            claim = _claimed_name_bytes(self.file.fileno(), ds)
        if claim is not None and claim > self.size:
            raise UserError(f"{self.path}: damaged: the 'columns' attribute of {_name(ds.name)} claims {claim} "
                            f"bytes of names, more than its {self.size} bytes hold")
        if claim is not None:
            return _names(ds, self.path, self.size)
        try:
            return call_isolated(_capped, _names, ds, self.path, self.size)
        except (ChildDied, MemoryError) as e:
            raise UserError(f"{self.path}: damaged: the 'columns' attribute of {_name(ds.name)} claims names "
                            f"beyond {NAMES_MEMORY >> 20} MiB ({e})") from None

    def _read(self, ds) -> np.ndarray:
        _check_claim(ds, self.path, self.size)
        return np.asarray(ds[...], dtype=np.float64)

    def _values(self, ds) -> np.ndarray:
        v = self._read(ds)
        return np.where((v == 0) & np.signbit(v), np.nan, v)  # -0.0: never filled

    def _times(self, g) -> tuple[np.ndarray, np.ndarray]:
        """(unix seconds of the rows kept, which rows): a time an int64 of ns cannot hold is dropped."""
        raw = self._read(g["timestamps"])
        if raw.ndim != 1:
            raise ValueError(f"timestamps of {g.name} have {raw.ndim} dimensions")
        ok = (raw >= 0) & (raw < _LAST_S)  # NaN compares False
        self.bad_times += int((~ok).sum())
        return raw[ok].astype(np.int64), ok

    def _group(self, gname: str) -> list[Wide] | None:
        g = self.h5[gname]
        t, keep = self._times(g)
        if t.size == 0:
            return None
        step = float(np.median(np.diff(t))) if t.size > 1 else None
        times = t * 1_000_000_000
        out: list[Wide] = []
        for name, ds in g.items():
            if name == "timestamps" or getattr(ds, "ndim", 0) != 2 or ds.shape[0] != keep.size:
                continue
            cols = self._columns(ds)
            if gname == "fullness":
                continue  # combined below: used and total -> capacity and free
            if name in DATASETS:
                metric, kind, per_second = DATASETS[name]
            elif gname.startswith("md") and name in MD_DATASETS:
                metric, kind, per_second = f"md_{MD_DATASETS[name]}", AMOUNT, False
            else:
                self.skipped.append(_name(f"{gname}/{name}"))
                continue
            vals = self._values(ds)[keep]
            if per_second and step:
                vals = vals * step
            out.append(Wide(metric, kind, times, cols, vals, step,
                            interval_s=np.full(t.size, step or np.nan) if kind == AMOUNT else None))
        if gname == "fullness":
            out += self._fullness(g, times, step, keep)
        return out

    def _fullness(self, g, times, step, keep) -> list[Wide]:
        out = []
        if "bytes" in g and "bytestotal" in g:  # KiB used and KiB total
            used, total = self._values(g["bytes"])[keep], self._values(g["bytestotal"])[keep]
            cols = self._columns(g["bytestotal"])
            out += [Wide("capacity_bytes", GAUGE, times, cols, total, step, scale=1024.0),
                    Wide("free_bytes", GAUGE, times, cols, total - used, step, scale=1024.0)]
        if "inodes" in g and "inodestotal" in g:
            used, total = self._values(g["inodes"])[keep], self._values(g["inodestotal"])[keep]
            cols = self._columns(g["inodestotal"])
            out += [Wide("files_total", GAUGE, times, cols, total, step),
                    Wide("files_free", GAUGE, times, cols, total - used, step)]
        return out


class TtsImporter(Importer):
    kind = "tts"

    def open(self) -> None:
        self.file = TtsFile(self.source)

    def total(self) -> int:
        return len(self.file.groups())

    def chunks(self, advance: Callable[[int], None]) -> Iterator[Wide]:
        for _, wides in self.file.chunks():
            yield from wides
            advance(1)
        if self.file.skipped:
            self.notes.append(f"datasets without a metric mapping skipped: {', '.join(self.file.skipped)}")
        if self.file.bad_times:
            self.notes.append(f"{self.file.bad_times} rows with impossible timestamps (before 1970, after 2262 "
                              "or not a number) skipped")

    def close(self) -> None:
        if getattr(self, "file", None) is not None:
            self.file.close()
