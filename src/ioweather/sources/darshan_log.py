"""Reading Darshan logs (format 3.00-3.41) through PyDarshan: raw records, no statistics.

PyDarshan (the `darshan` package, which bundles libdarshan-util) is the only
parser of the log format used here. We go through its CFFI backend's calls (`darshan_cffi`: the same
declarations and library, without the package's pandas) rather than
`DarshanReport.read_all()` because of traps met on real logs:

- a truncated log reads as a *shorter valid log*: libdarshan-util returns -1 for
  a damaged region and PyDarshan treats it like end-of-records, and the process
  can then abort() inside `darshan_log_close`. We check the header's region map
  against the file size first (the header is the log's only uncompressed part)
  and treat a -1 from `darshan_log_get_record` as an error, not an end;
- records whose id has no name record are silently dropped by PyDarshan; we
  keep them (name None);
- DXT segments become one Python dict per segment in PyDarshan (hundreds of
  bytes each); we copy them as columnar numpy arrays (32 bytes per segment);
- the report must be closed deterministically (`with DarshanReport(...)`): a
  garbage-collection-time close can deadlock.

Record ids are uint64 (hashes; above 2**63 they would be negative as int64).
Counters equal to -1 mean "not monitored by this Darshan version/module"; they
are kept raw here and listed per module in `ModuleRecords.not_monitored`, so
statistics can skip them. A module whose `partial_flag` is set (Darshan ran out
of its record memory) is returned with `partial=True`, never as complete.

Timers that cannot be true (negative, subnormal, or longer than the ranks the
record covers could have spent in the job: big-endian logs and some
libdarshan-util versions decode F_META_TIME / F_MAX_*_TIME as garbage) are set
to 0 and named in `DarshanLog.warnings`, so no sum includes them silently
(`read_log(..., exclude_implausible_times=False)` keeps them raw).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import bz2
import os
import struct
import tempfile
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ioweather.errors import os_error_reason
from ioweather.files import fd_path
from ioweather.units import format_bytes, format_seconds
# the header's check, the log's opening and its hash live apart (no numpy, pandas: `why` hashes a log with them)
from ioweather.sources.darshan_header import (  # noqa: F401  re-exported: the reader's callers import them from here
    HASHED_TRAILER_BYTES, DarshanLogError, DarshanOpenError, _Layout, check_layout, content_hash, open_log)

if TYPE_CHECKING:
    import pandas as pd

#: Modules whose records are a fixed struct of int64 counters + float64 fcounters.
GENERIC_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "DFS", "DAOS")
DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
#: Default cap on DXT segments held in memory (32 bytes each: 8 Mi segments = 256 MiB).
DEFAULT_DXT_MAX_SEGMENTS = 8 * 1024 * 1024
#: Bounds on sizes read from the log before anything is sized from them (garbage in a damaged or
#: byte-swapped log would otherwise allocate terabytes: np.bincount "array is too big", issue 27).
#: 2**23 processes is above the largest machine's core count (Fugaku: 7.6 M); Darshan's heatmap
#: keeps at most a few hundred bins per rank; Lustre allows 2,000 stripes per file.
MAX_NPROCS = 1 << 23
MAX_HEATMAP_BINS = 1 << 20
MAX_STRIPES = 1 << 16
#: Above this a counter (bytes, operations, sizes of one file record) cannot be true: 1 PiB moved,
#: or 10**15 operations, in one job on one file. Keeping sums of such values far from int64's limit
#: is what keeps numpy's overflow warnings away from the user.
MAX_COUNTER = 1 << 50
#: Job times beyond this (2242) overflow int64 nanoseconds soon after: a damaged header.
MAX_EPOCH_S = 1 << 33
SEGMENT_DTYPE = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start_time", "<f8"), ("end_time", "<f8")])


#: Why a log whose reader process died (SIGSEGV, SIGABRT in libdarshan-util) cannot be read;
#: `job`, `jobs ingest` and the Dask workers say the same.
READER_DIED = "the Darshan library failed on its job region (damaged or unsupported log)"


@dataclass
class ModuleRecords:
    """All records of one generic module as arrays: one row per record.

    `counter_values` (int64) and `fcounter_values` (float64) hold one column per
    name in `counter_names` / `fcounter_names`; `ids` are uint64, `ranks` int64
    (-1 = a shared record covering all ranks). `names[i]` is the file name of row
    i, or None when the log has no name record for it. `counters` / `fcounters`
    give the same data in PyDarshan's `to_df()` layout (id, rank, then counters),
    built on first use, so they can be passed to `accumulate_records` unchanged.
    """

    module: str
    version: int
    partial: bool
    ids: np.ndarray
    ranks: np.ndarray
    counter_names: list[str]
    fcounter_names: list[str]
    counter_values: np.ndarray
    fcounter_values: np.ndarray
    names: np.ndarray
    file_rec_ids: np.ndarray | None = None
    not_monitored: list[str] = field(default_factory=list)
    _frames: dict = field(default_factory=dict, repr=False)
    _arrays: dict | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def arrays(self) -> dict[str, np.ndarray]:
        """id, rank and every counter and fcounter name -> its column (views, built once)."""
        if self._arrays is None:
            d = {"id": self.ids, "rank": self.ranks}
            d.update(zip(self.counter_names, self.counter_values.T))
            d.update(zip(self.fcounter_names, self.fcounter_values.T))
            self._arrays = d
        return self._arrays

    def _frame(self, kind: str) -> pd.DataFrame:
        # lazy: pandas, for the frames only (the ingest reads no frame and imports no pandas: ~0.55 s of its
        # serial start)
        import pandas as pd

        if kind not in self._frames:
            names, values = ((self.counter_names, self.counter_values) if kind == "c"
                             else (self.fcounter_names, self.fcounter_values))
            df = pd.DataFrame(values, columns=names, copy=True)
            df.insert(0, "rank", self.ranks)
            df.insert(0, "id", self.ids)
            self._frames[kind] = df
        return self._frames[kind]

    @property
    def counters(self) -> pd.DataFrame:
        return self._frame("c")

    @property
    def fcounters(self) -> pd.DataFrame:
        return self._frame("f")


@dataclass(eq=False)
class LustreLayouts:
    """The LUSTRE records as columns, one row per record (record id, rank): its first component's stripe
    size (-1 without a component) and count, pool name and OST ids as text ("3,4"). Columns, not a
    DataFrame: building the frame (its text columns) and selecting from it cost more than reading the
    records (issue 40); `frame()` gives the table."""

    id: np.ndarray            # uint64
    rank: np.ndarray          # int64
    stripe_size: np.ndarray   # int64
    stripe_count: np.ndarray  # int64
    pool: np.ndarray          # object: str
    ost_ids: np.ndarray       # object: str

    COLUMNS = ("id", "rank", "stripe_size", "stripe_count", "pool", "ost_ids")

    def __len__(self) -> int:
        return len(self.id)

    def frame(self) -> pd.DataFrame:
        # lazy: pandas, as `ModuleRecords._frame`
        import pandas as pd

        return pd.DataFrame({c: getattr(self, c) for c in self.COLUMNS}, columns=list(self.COLUMNS))


@dataclass
class DxtSegments:
    """One DXT module's trace as columns: one row per I/O segment."""

    module: str
    record_id: np.ndarray     # uint64, per segment
    rank: np.ndarray          # int64, per segment
    is_write: np.ndarray      # bool
    offset: np.ndarray        # int64   (the four are views of one 32-byte-per-segment array)
    length: np.ndarray        # int64
    start_time: np.ndarray    # float64 seconds since job start
    end_time: np.ndarray      # float64
    hostnames: dict[int, str] = field(default_factory=dict)  # rank -> host
    truncated: bool = False   # stopped at max_segments

    def __len__(self) -> int:
        return len(self.offset)


@dataclass
class DarshanLog:
    path: str
    log_version: str
    jobid: int
    uid: int
    nprocs: int
    start_time_s: float
    end_time_s: float
    runtime_s: float
    exe: str
    metadata: dict[str, str]
    mounts: list[tuple[str, str]]               # (mount point, fs type)
    modules: dict[str, dict]                    # name -> {version, partial, bytes}
    records: dict[str, ModuleRecords]
    lustre: LustreLayouts | None = None         # one row per (record id, rank): stripe settings
    dxt: dict[str, DxtSegments] = field(default_factory=dict)
    heatmaps: dict[str, dict] = field(default_factory=dict)   # module -> {bin_width_s, read (ranks x bins), write}
    node_names: list[str] = field(default_factory=list)       # DXT hostnames, when present
    node_names_source: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: optional regions (DXT, heatmap) that could not be read: module -> reason; the rest of the log stands
    damaged: dict[str, str] = field(default_factory=dict)

    @property
    def partial_modules(self) -> list[str]:
        return sorted(m for m, info in self.modules.items() if info.get("partial"))


# ---------------------------------------------------------------------------
# bounds on what the compressed regions inflate to, before libdarshan-util inflates them

#: A region (name records, a module's records) may inflate to at most this many times its compressed
#: size, and to INFLATE_FLOOR whatever its size. The public logs (tests/darshan_support.all_real_logs, 50
#: logs) inflate 3-22x overall and at most 29x for a region over 1 KiB (52x for a 107-byte one): 128x
#: leaves four times that. A 1.6 MB POSIX region of 1.5 GiB of zeros cost `job` 5.1 GB (issue 41).
INFLATE_RATIO = 128
INFLATE_FLOOR = 16 << 20
#: libdarshan-util reads the job region into 4,096 bytes: the job struct, then the executable's
#: command line and the mount table as text, which it keeps in DARSHAN_EXE_LEN + 1 bytes.
JOB_RECORD_BYTES = 4096
#: Deflate's most: a match of 258 bytes coded in 2 bits (zlib's technical notes: "the limit is 1032:1"),
#: each zlib stream's header and trailer only adding input. A zlib region of n bytes inflates to at most
#: DEFLATE_MAX_RATIO * n (+ one match, for slack), so one below INFLATE_FLOOR / 1032 (16 KiB) need not be
#: inflated to be counted (issue 40: the count inflated every region of every log twice, 7 % of an ingest).
#: bzip2 has no such bound worth using (a run of 45 million bytes in a few): its regions are counted.
DEFLATE_MAX_RATIO = 1032
DEFLATE_MATCH = 258
EXE_LEN = JOB_RECORD_BYTES - 1080 - 1


def _inflater(comp: int):
    if comp == 0:
        return zlib.decompressobj()
    if comp == 1:
        return bz2.BZ2Decompressor()
    return None


#: The first bytes of a stream given to its inflater, doubled while the stream goes on: a region holds one
#: stream per writer (2,048 on a log of as many ranks), and zlib copies the input left after a stream's end
#: (`unused_data`), so feeding a whole MiB at each stream's start copied the region's rest once per stream
#: (issue 40: 7.5 ms to count a 134 KB name region, ~20 MB/s)
FIRST_PIECE = 512


def _inflate(fd: int, off: int, ln: int, comp: int, limit: int, piece: int = FIRST_PIECE) -> tuple[int, bytes]:
    """(bytes the region inflates to, counted up to `limit` + 1; its first JOB_RECORD_BYTES), streamed
    from the file 1 MiB at a time: a region holds one compressed stream per writer, one after another.
    A damaged stream ends the count there (libdarshan-util says so as it reads). `piece`: the input
    given to a stream's first call (`FIRST_PIECE`)."""
    d = _inflater(comp)
    if d is None:  # stored: as long as it is
        return ln, os.pread(fd, min(ln, JOB_RECORD_BYTES), off)
    head, total, at, end = b"", 0, off, off + ln
    buf, pos, size = memoryview(b""), 0, piece  # the bytes read, and the first not given to an inflater
    while total <= limit:
        if comp == 1 and not d.eof and not d.needs_input:
            data = b""  # bzip2 holds input it has not inflated yet
        else:
            if pos >= len(buf):
                if at >= end:
                    break
                buf, pos = memoryview(os.pread(fd, min(1 << 20, end - at), at)), 0
                if not buf:
                    break
                at += len(buf)
            data = buf[pos:pos + size]
            pos += len(data)
            size = min(2 * size, 1 << 20)
        try:
            out = d.decompress(data, min(1 << 20, limit + 1 - total))
        except (zlib.error, OSError, EOFError, ValueError):
            break
        total += len(out)
        if len(head) < JOB_RECORD_BYTES:
            head += out[:JOB_RECORD_BYTES - len(head)]
        # input given and not used (zlib stopped at the output's limit, or the stream ended) is given again
        back = (d.unused_data if d.eof else d.unconsumed_tail if comp == 0 else b"")
        if back:
            if len(back) <= pos:
                pos -= len(back)
            else:  # bzip2 held it since the previous MiB read
                buf, pos = memoryview(bytes(back) + bytes(buf[pos:])), 0
        if d.eof:
            d, size = _inflater(comp), piece
    return total, head


def check_inflation(path: str, fd: int, layout: _Layout, lengths: set[int] | None = None) -> bytes:
    """Refuse a log whose name or module region inflates beyond INFLATE_RATIO times its size (at least
    INFLATE_FLOOR), before libdarshan-util inflates it whole; and one whose job region inflates beyond
    the 4,096 bytes libdarshan-util reads of it (the real logs' hold at most 4,095): it then reads the
    rest as the name records and aborts the process with a double free.

    `lengths`: only the module regions of these compressed lengths are counted (`modules_read`).
    Returns the job region's bytes (`read_job_text` reads them: inflated once)."""
    # the whole region at once, as libdarshan-util reads it: a damaged stream gives what it gave before
    total, job = _inflate(fd, *layout.job, layout.comp, JOB_RECORD_BYTES, piece=1 << 20)
    if total > JOB_RECORD_BYTES:
        raise DarshanLogError(f"{path}: corrupt Darshan log: its job region inflates beyond the "
                              f"{JOB_RECORD_BYTES:,} bytes a job region holds")
    check_regions(path, fd, layout, lambda what, ln: what == "name records" or lengths is None or ln in lengths)
    return job


def check_regions(path: str, fd: int, layout: _Layout, which) -> None:
    """check_inflation's count of the regions `which(what, compressed length)` selects."""
    for what, off, ln in layout.regions:
        if not which(what, ln):
            continue
        limit = max(INFLATE_FLOOR, INFLATE_RATIO * ln)
        if layout.comp == 0 and DEFLATE_MAX_RATIO * ln + DEFLATE_MATCH <= limit:
            continue  # deflate cannot reach the limit from so few bytes: inflating them to count is waste
        total, _ = _inflate(fd, off, ln, layout.comp, limit)
        if total > limit:
            raise DarshanLogError(f"{path}: corrupt Darshan log: its {what} region of {format_bytes(ln)} inflates "
                                  f"beyond {format_bytes(limit)} ({INFLATE_RATIO}x, the most a real log's does): "
                                  "refused unread")


def modules_read(modules: dict, names: list[str]) -> set[int]:
    """The compressed lengths of the regions of `names` (`modules`: PyDarshan's log_get_modules).
    Only the modules about to be read are counted before libdarshan-util reads them: it never inflates
    another (issue 40: counting the DXT, heatmap and APMPI regions an ingest does not read was half of
    the counting), and the generic modules are counted as they are read (`_read_fixed`). By length, as
    libdarshan-util renumbers an old format's modules (a region of another module with the same length
    is counted too: never fewer than those read)."""
    return {int(modules[m]["len"]) for m in names if m in modules}


@dataclass
class _JobText:
    exe: str
    mounts: list[tuple[str, str]]
    warnings: list[str]


def read_job_text(raw: bytes, layout: _Layout) -> _JobText:
    """The executable's command line and the mount table, read here rather than by libdarshan-util: it
    reads a table with no NUL in its 3,015 bytes past its buffer, and a line it cannot parse
    leaves its entries uninitialised, which PyDarshan then decodes (issue 41: `job` read such a log,
    `jobs ingest` refused it with a different byte each run); PyDarshan refuses a whole log for an
    executable name that is not UTF-8. Parsed as libdarshan-util does (`%s\\t%s`: the type, then the
    mount point; sorted longest mount point first), an unparsable line skipped, bytes that are not UTF-8
    replaced, each said in the warnings. `raw`: the job region's first JOB_RECORD_BYTES (check_inflation)."""
    # a long mount table fills the buffer with no NUL on real logs too: its last line is cut there
    text = raw[layout.job_struct:layout.job_struct + EXE_LEN].split(b"\0", 1)[0]
    warnings = []
    lines = text.split(b"\n")
    table = [line.split(None, 2)[:2] for line in lines[1:]]
    good = [(path, kind) for kind, path in (t for t in table if len(t) == 2)]
    if len(good) < len(table):
        warnings.append(f"{len(table) - len(good)} malformed mount table line(s) skipped (damaged job region)")
    # valid UTF-8 as a whole: so is each piece cut from it at ASCII bytes (issue 40: checking each of ~80
    # mount names one by one was 15 % of reading a small log)
    if not _utf8(text):
        if not _utf8(lines[0]):
            warnings.append("the executable's name is not valid UTF-8: its undecodable bytes are shown as U+FFFD")
        if not all(_utf8(x) for m in good for x in m):
            warnings.append("the mount table is not valid UTF-8: its undecodable bytes are shown as U+FFFD")
    good.sort(key=lambda m: -len(m[0]))  # libdarshan-util's order (a stable sort), longest mount point first
    exe = lines[0] if len(lines) > 1 else b""  # libdarshan-util's: the name ends at a newline, or is empty
    return _JobText(exe=_text(exe), mounts=[(p.decode("utf-8", "replace"), k.decode("utf-8", "replace"))
                                            for p, k in good], warnings=warnings)


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


# ---------------------------------------------------------------------------
# C stderr capture: libdarshan-util prints its errors with fprintf(stderr)

#: (pid, file) of this process' capture file: made once, emptied after each read (issue 40: a TemporaryFile
#: per log cost ~0.1 ms, 2 % of an ingest's per-log work). Per pid: a pool's forked workers must not share
#: the parent's file (one offset for all of them).
_CAPTURE: list = [None, None]


def _capture_fd() -> int:
    if _CAPTURE[0] != os.getpid():
        _CAPTURE[:] = [os.getpid(), tempfile.TemporaryFile(buffering=0)]
    return _CAPTURE[1].fileno()


@contextlib.contextmanager
def _captured_c_stderr(sink: list[str]):
    """Redirect fd 2 to this process' capture file for the duration, appending its lines to `sink`."""
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to capture
        yield
        return
    fd = _capture_fd()
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        end = os.lseek(fd, 0, os.SEEK_CUR)
        raw = os.pread(fd, end, 0) if end else b""
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        text = raw.decode("utf-8", "replace")
        # keep libdarshan-util's own messages only (a progress bar on another thread may
        # write to fd 2 meanwhile)
        sink.extend(line.strip() for line in text.splitlines()
                    if line.strip().lower().startswith(("error", "warning")) or "darshan" in line.lower())


def _raw(ffi):
    """The cffi backend under PyDarshan's `ffi` (its `string`/`cast` without the wrapper's per-call work: the
    names' and layouts' loops call them once a record); the `ffi` itself where it has none (an API-mode build)."""
    return getattr(ffi, "_backend", ffi)


def _backend():
    """libdarshan-util's binding: PyDarshan's declarations and library without the `darshan` package's import
    (its pandas: darshan_cffi says why)."""
    # lazy: libdarshan-util (CFFI's parse of its declarations), loaded only when a log is read
    from ioweather.sources import darshan_cffi

    return darshan_cffi


def _name_records(b, log) -> dict[int, str]:
    """record id -> name, as PyDarshan's `log_get_name_records` (the same C call, the same strict UTF-8
    decoding, the same order). The C array of (id, name pointer) pairs is read whole: the ids as one numpy
    array, the pointers as one list (`ffi.unpack`), each name copied and freed by a C-level `map`, and the
    names decoded as one text (issue 40: a CFFI item and two attribute reads per name were half of the loop;
    a name cannot hold NUL, so the text splits back into the names, and a name that is not UTF-8 is decoded
    alone again for PyDarshan's own error)."""
    ffi, lib = b.ffi, b.libdutil
    nrecs = ffi.new("struct darshan_name_record **")
    cnt = ffi.new("int *")
    lib.darshan_log_get_name_records(log["handle"], nrecs, cnt)
    arr, free, n = nrecs[0], lib.darshan_free, cnt[0]
    out: dict[int, str] = {}
    if n > 0:
        pair, char_pp = _name_record_layout(ffi)
        ids = np.frombuffer(ffi.buffer(arr, pair * n), np.uint64)[0::2].tolist()
        names = ffi.unpack(ffi.cast(char_pp, arr), 2 * n)[1::2]
        try:
            # the backend's own string (ffi.string is a Python wrapper around it)
            texts = list(map(_raw(ffi).string, names))
        finally:
            for name in names:
                free(name)
        try:
            decoded = b"\0".join(texts).decode("utf-8").split("\0")
        except UnicodeDecodeError:
            decoded = [t.decode("utf-8") for t in texts]  # raises PyDarshan's error: the first bad name's
        out = dict(zip(ids, decoded))
    free(arr)
    log["name_records"] = out
    return out


@functools.lru_cache(maxsize=4)
def _name_record_layout(ffi) -> tuple[int, object]:
    """(the size of a name record, the `char **` type), the record checked to be a 64-bit id then a pointer."""
    rec = "struct darshan_name_record"
    if (ffi.sizeof(rec) != 16 or ffi.offsetof(rec, "id") != 0 or ffi.offsetof(rec, "name") != 8
            or ffi.sizeof("void *") != 8):
        raise RuntimeError("libdarshan-util's name record is not the layout this reader knows")
    return 16, ffi.typeof("char **")


@functools.lru_cache(maxsize=64)
def _struct_dtype(ffi, ctype: str, n_counters: int, n_fcounters: int, with_file_rec: bool) -> np.dtype:
    """A numpy dtype that views the C record struct in place (offsets from CFFI)."""
    names = ["id", "rank", "counters", "fcounters"]
    formats = ["<u8", "<i8", ("<i8", (n_counters,)), ("<f8", (n_fcounters,))]
    offsets = [0, 8, ffi.offsetof(ctype, "counters"), ffi.offsetof(ctype, "fcounters")]
    if with_file_rec:
        names.append("file_rec_id")
        formats.append("<u8")
        offsets.append(ffi.offsetof(ctype, "file_rec_id"))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": ffi.sizeof(ctype)})


def _iter_raw(b, log, mod_name: str, path: str, errors: list[str]):
    """Yield a `void **` buffer per record of `mod_name`; raise on a damaged region."""
    ffi, lib = b.ffi, b.libdutil
    idx = log["modules"][mod_name]["idx"] if log["modules"] else None
    if idx is None:
        return
    while True:
        buf = ffi.new("void **")
        r = lib.darshan_log_get_record(log["handle"], idx, buf)
        if r < 0:
            detail = f" ({errors[-1]})" if errors else ""
            raise DarshanLogError(f"{path}: corrupt Darshan log: cannot read {mod_name} records{detail}")
        if r == 0:
            return
        try:
            yield buf
        finally:
            lib.darshan_free(buf[0])


def _refused(path: str, mod_name: str, ln: int, limit: int) -> DarshanLogError:
    """A region whose records, as read, hold more than `limit` bytes (check_regions' word for it)."""
    return DarshanLogError(f"{path}: corrupt Darshan log: its {mod_name} region of {format_bytes(ln)} inflates "
                           f"beyond {format_bytes(limit)} ({INFLATE_RATIO}x, the most a real log's does): refused")


def _read_fixed(b, log, mod_name: str, dt: np.dtype, path: str, errors: list[str]) -> np.ndarray:
    """Every record of a fixed-size module, read by libdarshan-util straight into one array of `dt`.

    libdarshan-util 3.5's readers of the generic modules fill a buffer they are given instead of
    malloc'ing one (`if(*buf_p == NULL) malloc`), and write all of it: the current format is read in
    whole (sizeof the struct), an older one is converted in a zeroed scratch struct copied in whole.
    So one zeroed array holds them all with no allocation, copy and free per record (issue 40: those
    were 9 % of an ingest); a slot is never reused, so no field can be a previous record's. A record
    that failed (-1) or the end (0) leaves its slot unused.

    Its region is counted here, not inflated beforehand (`check_regions`): records beyond
    INFLATE_RATIO times the compressed length (at least INFLATE_FLOOR) refuse the log as the count
    would, once that much is held and before more is (issue 40: the count inflated each region
    twice)."""
    ffi, lib = b.ffi, b.libdutil
    info = log["modules"][mod_name] if log["modules"] else None
    idx = info["idx"] if info else None
    size = dt.itemsize
    ln = int(info["len"]) if info else 0
    limit = max(INFLATE_FLOOR, INFLATE_RATIO * ln)
    out = np.zeros(0, dtype=dt)
    if idx is None:
        return out
    handle, get = log["handle"], lib.darshan_log_get_record
    buf = ffi.new("void **")
    n, cap = 0, 64
    out = np.zeros(cap, dtype=dt)
    base = ffi.cast("char *", out.ctypes.data)
    while True:
        if n == cap:
            if n * size > limit:
                raise _refused(path, mod_name, ln, limit)
            cap = min(cap * 4, limit // size + 2)
            grown = np.zeros(cap, dtype=dt)
            grown[:n] = out
            out, base = grown, ffi.cast("char *", grown.ctypes.data)
        buf[0] = base + n * size
        r = get(handle, idx, buf)
        if r < 0:
            detail = f" ({errors[-1]})" if errors else ""
            raise DarshanLogError(f"{path}: corrupt Darshan log: cannot read {mod_name} records{detail}")
        if r == 0:
            return out[:n]
        n += 1


def _read_generic(b, log, mod_name: str, info: dict, names: dict, path: str, errors: list[str]) -> ModuleRecords:
    ffi = b.ffi
    ctype = b._structdefs[mod_name].replace(" **", "")
    cn = b.counter_names(mod_name) or []
    fcn = b.fcounter_names(mod_name) or []
    with_file_rec = mod_name in ("H5D", "PNETCDF_VAR")
    dt = _struct_dtype(ffi, ctype, len(cn), len(fcn), with_file_rec)
    arr = _read_fixed(b, log, mod_name, dt, path, errors)
    ids = arr["id"].astype(np.uint64)
    ranks = arr["rank"].astype(np.int64)
    # copies, never views: np.frombuffer's array is read-only, and a view of a one-record log is
    # contiguous, so ascontiguousarray would hand it on read-only to exclude_implausible (issue 27)
    cvals = np.array(arr["counters"].reshape(len(arr), len(cn)), copy=True)
    fvals = np.array(arr["fcounters"].reshape(len(arr), len(fcn)), copy=True)
    not_monitored = []
    if len(arr):
        # a column is all -1 only if its first row is: the whole column compared for those only (issue 40:
        # comparing every value was a third of this function beyond the C reading)
        for col_names, vals in ((cn, cvals), (fcn, fvals)):
            cols = np.flatnonzero(vals[0] == -1)
            if len(cols):
                cols = cols[(vals[:, cols] == -1).all(axis=0)]
            not_monitored += [col_names[j] for j in cols]
    name_arr = np.array(list(map(names.get, ids.tolist())), dtype=object)  # tolist: Python ints in one call
    return ModuleRecords(module=mod_name, version=info["ver"], partial=bool(info["partial_flag"]),
                         ids=ids, ranks=ranks, counter_names=list(cn), fcounter_names=list(fcn),
                         counter_values=cvals, fcounter_values=fvals, names=name_arr,
                         file_rec_ids=arr["file_rec_id"].astype(np.uint64) if with_file_rec else None,
                         not_monitored=not_monitored)


@functools.lru_cache(maxsize=4)
def _lustre_layout(ffi) -> tuple[struct.Struct, struct.Struct, int]:
    """(the record's head: id, rank, num_comps, num_stripes, comps and ost_ids pointers; a component's
    seven counters and pool name; the component's size), checked against CFFI's offsets."""
    rec, comp = "struct darshan_lustre_record", "struct darshan_lustre_component"
    head = struct.Struct("=QqqqQQ")
    at = [ffi.offsetof(rec, f) for f in ("base_rec", "num_comps", "num_stripes", "comps", "ost_ids")]
    one = struct.Struct("=7q16s")
    if (at != [0, 16, 24, 32, 40] or ffi.sizeof(rec) != head.size or ffi.sizeof("void *") != 8
            or ffi.offsetof(comp, "pool_name") != 56 or ffi.sizeof(comp) != one.size):
        raise RuntimeError("libdarshan-util's Lustre record is not the layout this reader knows")
    return head, one, one.size


def _read_lustre(b, log, path: str, errors: list[str], comp: int) -> LustreLayouts:
    """One row per LUSTRE record: its first component's stripe size, count and pool, its OST ids as text.

    Each record is malloc'd by libdarshan-util (its size varies: `_read_fixed` cannot hold them); the
    loop copies its head and first component out as bytes in one CFFI call each and decodes them
    with `struct` (issue 40: a CFFI attribute read per field was most of reading the Lustre layouts);
    the columns are made at the end.

    Its region is counted as it is read, as `_read_fixed` counts its own: each record's bytes (its head,
    components and OST ids), the log refused once they pass INFLATE_RATIO times the compressed length
    (at least INFLATE_FLOOR). Not inflated beforehand (issue 40: inflating its one stream per rank
    first was 6 ms of a 2,048-rank log's read). `comp`: the log's compression (check_regions' deflate
    bound: a small zlib region cannot reach the limit, and is not counted)."""
    ffi, lib = b.ffi, b.libdutil
    cn = b.counter_names("LUSTRE_COMP")
    i_size = cn.index("LUSTRE_COMP_STRIPE_SIZE") if "LUSTRE_COMP_STRIPE_SIZE" in cn else None
    i_count = cn.index("LUSTRE_COMP_STRIPE_COUNT") if "LUSTRE_COMP_STRIPE_COUNT" in cn else None
    head_t, comp_t, comp_size = _lustre_layout(ffi)
    rows = []  # per record: (id, rank, stripe size, stripe count, pool, OST ids)
    # a pool's 16 bytes -> its name, an OST list's bytes -> its text: a log's files share a few of each (issue 40:
    # the join per record was a third of the loop)
    pool_text: dict[bytes, str] = {}
    ost_text: dict[bytes, str] = {}
    info = log["modules"]["LUSTRE"] if log["modules"] else None
    idx = info["idx"] if info else None
    ln = int(info["len"]) if info else 0
    limit, held = max(INFLATE_FLOOR, INFLATE_RATIO * ln), 0
    counted = not (comp == 0 and DEFLATE_MAX_RATIO * ln + DEFLATE_MATCH <= limit)
    handle, get, free = log["handle"], lib.darshan_log_get_record, lib.darshan_free
    # the backend's own cast (ffi.cast is a Python wrapper around it: ~0.3 µs a record)
    buffer, cast, null = ffi.buffer, _raw(ffi).cast, ffi.NULL
    head_unpack, head_size, comp_unpack = head_t.unpack, head_t.size, comp_t.unpack
    holder = ffi.new("void **")
    rec_t = ffi.typeof("struct darshan_lustre_record *")
    while idx is not None:
        holder[0] = null  # NULL: libdarshan-util mallocs the record (a given buffer is not sized for it)
        r = get(handle, idx, holder)
        if r < 0:
            detail = f" ({errors[-1]})" if errors else ""
            raise DarshanLogError(f"{path}: corrupt Darshan log: cannot read LUSTRE records{detail}")
        if r == 0:
            break
        p = holder[0]
        try:
            rid, rank, ncomp, nstripes, _, _ = head_unpack(buffer(p, head_size))
            if counted:
                held += head_size + (ncomp * comp_size if ncomp > 0 else 0) + (8 * nstripes if nstripes > 0 else 0)
                if held > limit:
                    raise _refused(path, "LUSTRE", ln, limit)
            if ncomp > 0:
                rec = cast(rec_t, p)
                c = comp_unpack(buffer(rec.comps, comp_size))
                size = c[i_size] if i_size is not None else -1
                count = (c[i_count] or 0) if i_count is not None else 0
                pool = pool_text.get(c[7])
                if pool is None:
                    pool = pool_text[c[7]] = c[7].split(b"\0", 1)[0].decode("utf-8", "replace")
                # the OST list holds num_stripes ids: a garbage stripe count must not read past it
                n_ost = min(count, nstripes, MAX_STRIPES)
                if n_ost > 0:
                    raw = buffer(rec.ost_ids, 8 * n_ost)[:]
                    osts = ost_text.get(raw)
                    if osts is None:
                        osts = ost_text[raw] = ",".join(map(str, struct.unpack(f"={n_ost}q", raw)))
                else:
                    osts = ""
            else:  # no component: no stripe count, so no OST read
                size, count, pool, osts = -1, 0, "", ""
            rows.append((rid, rank, size, count, pool, osts))
        finally:
            free(p)
    ids, ranks, sizes, counts, pools, osts = zip(*rows) if rows else ((),) * 6
    return LustreLayouts(id=np.array(ids, np.uint64), rank=np.array(ranks, np.int64),
                         stripe_size=np.array(sizes, np.int64), stripe_count=np.array(counts, np.int64),
                         pool=np.array(pools, object), ost_ids=np.array(osts, object))


def _read_dxt(b, log, mod_name: str, path: str, errors: list[str], max_segments: int) -> DxtSegments:
    ffi = b.ffi
    header = ffi.sizeof("struct dxt_file_record")
    parts, rec_ids, ranks, counts_w, counts_r = [], [], [], [], []
    hosts: dict[int, str] = {}
    total = 0
    truncated = False
    for buf in _iter_raw(b, log, mod_name, path, errors):
        rec = ffi.cast("struct dxt_file_record **", buf)[0]
        w, r = int(rec.write_count), int(rec.read_count)
        if w < 0 or r < 0:
            raise DarshanLogError(f"{path}: corrupt Darshan log: {mod_name} record with {w} writes and {r} reads")
        if total + w + r > max_segments:
            truncated = True
            break
        rank = int(rec.base_rec.rank)
        hosts.setdefault(rank, ffi.string(rec.hostname).decode("utf-8", "replace"))
        if w + r:
            raw = ffi.buffer(ffi.cast("char *", buf[0]) + header, SEGMENT_DTYPE.itemsize * (w + r))
            parts.append(np.frombuffer(raw, dtype=SEGMENT_DTYPE).copy())
        rec_ids.append(np.uint64(rec.base_rec.id))
        ranks.append(rank)
        counts_w.append(w)
        counts_r.append(r)
        total += w + r
    seg = np.concatenate(parts) if parts else np.zeros(0, dtype=SEGMENT_DTYPE)
    del parts  # peak is two copies of the segments (parts + seg) for a moment, then one
    per_rec = np.array(counts_w, dtype=np.int64) + np.array(counts_r, dtype=np.int64)
    # within each record, write segments come first, then read segments
    is_write = np.concatenate([np.r_[np.ones(w, bool), np.zeros(r, bool)] for w, r in zip(counts_w, counts_r)]) \
        if counts_w else np.zeros(0, bool)
    return DxtSegments(module=mod_name,
                       record_id=np.repeat(np.array(rec_ids, dtype=np.uint64), per_rec),
                       rank=np.repeat(np.array(ranks, dtype=np.int64), per_rec),
                       is_write=is_write, offset=seg["offset"], length=seg["length"],
                       start_time=seg["start_time"], end_time=seg["end_time"],
                       hostnames=hosts, truncated=truncated)


_HEATMAP_NAMES = {16592106915301738621: "POSIX", 3989511027826779520: "STDIO", 3668870418325792824: "MPI-IO",
                  1597927878319380788: "DFS", 4131494093108637317: "DAOS"}


def _read_heatmaps(b, log, path: str, errors: list[str]) -> dict[str, dict]:
    ffi = b.ffi
    per_mod: dict[str, dict] = {}
    for buf in _iter_raw(b, log, "HEATMAP", path, errors):
        rec = ffi.cast("struct darshan_heatmap_record **", buf)[0]
        mod = _HEATMAP_NAMES.get(int(rec.base_rec.id), str(int(rec.base_rec.id)))
        n = int(rec.nbins)
        if not 0 <= n <= MAX_HEATMAP_BINS:  # sizes the copy below: garbage would read past the record
            raise DarshanLogError(f"{path}: corrupt Darshan log: heatmap record with {n} bins")
        wb = np.frombuffer(ffi.buffer(rec.write_bins, 8 * n), dtype=np.int64).copy()
        rb = np.frombuffer(ffi.buffer(rec.read_bins, 8 * n), dtype=np.int64).copy()
        d = per_mod.setdefault(mod, {"bin_width_s": float(rec.bin_width_seconds), "ranks": [], "read": [], "write": []})
        d["ranks"].append(int(rec.base_rec.rank))
        d["read"].append(rb)
        d["write"].append(wb)
    out = {}
    for mod, d in per_mod.items():
        nb = max(len(x) for x in d["read"]) if d["read"] else 0
        pad = lambda rows: np.array([np.pad(x, (0, nb - len(x))) for x in rows], dtype=np.int64)  # noqa: E731
        out[mod] = {"bin_width_s": d["bin_width_s"], "ranks": np.array(d["ranks"], dtype=np.int64),
                    "read": pad(d["read"]), "write": pad(d["write"])}
    return out


#: Slack on "longer than the job": Darshan's run time is whole seconds in older formats.
RUNTIME_SLACK_S = 1.0
_TINY = np.finfo(np.float64).tiny


def exclude_implausible(records: dict[str, ModuleRecords], runtime_s: float, nprocs: int) -> list[str]:
    """Set timers that cannot be true to 0, in place; one warning per (module, counter).

    A timer (an fcounter ending in _TIME, not a timestamp) is implausible when it is
    negative (other than -1, "not monitored"), a non-zero subnormal (a byte-swapped
    double), or longer than the time the ranks it covers had: the run time for
    per-rank maxima (F_MAX_*, F_FASTEST/SLOWEST_RANK_TIME) and per-rank records,
    run time x nprocs for the cumulative timers of a shared (rank -1) record.
    Must run before `ModuleRecords.arrays()` is first called (its views see the change anyway).
    """
    warnings = []
    for mod, rec in records.items():
        if not len(rec):
            continue
        timers, per_rank = _timer_columns(tuple(rec.fcounter_names))
        if not len(timers):
            continue
        # every timer of every record at once (issue 40: a loop of ~8 numpy calls per timer was 4 % of an
        # ingest); the loop below visits only the timers with a bad value, in the columns' order
        v = rec.fcounter_values[:, timers]
        # below the smallest normal double and neither 0 nor -1: negative (other than -1) or subnormal, and
        # NaN neither (the same cells as `(v < 0) & (v != -1) | (v != 0) & (abs(v) < tiny)`, in fewer passes)
        bad = (v < _TINY) & (v != 0) & (v != -1)
        if runtime_s > 0:
            longest = runtime_s + RUNTIME_SLACK_S
            shared = rec.ranks < 0
            if shared.any():  # a shared record's cumulative timers: the run time of every rank it covers
                covered = np.where(shared, max(nprocs, 1), 1).astype(np.float64)
                bad |= v > np.where(per_rank, longest, (longest * covered)[:, None])
            else:
                bad |= v > longest
        for k in np.flatnonzero(bad.any(axis=0)):
            j, b = timers[k], bad[:, k]
            col = rec.fcounter_values[:, j]
            sample = float(col[b][np.argmax(np.abs(col[b]))])
            warnings.append(f"{mod}: {int(b.sum())} value(s) of {rec.fcounter_names[j]} excluded as implausible "
                            f"(negative, denormal or longer than the job; e.g. {format_seconds(sample)})")
            col[b] = 0.0
    return warnings


@functools.lru_cache(maxsize=64)
def _timer_columns(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(the columns of the timers: fcounters ending in _TIME, whether each is a per-rank maximum)."""
    timers = [j for j, n in enumerate(names) if n.endswith("_TIME")]
    return (np.array(timers, np.intp),
            np.array([("_MAX_" in names[j] or "_FASTEST_RANK_" in names[j] or "_SLOWEST_RANK_" in names[j])
                      for j in timers], bool))


def _signed_counter(name: str) -> bool:
    """Counters that may be negative: ranks (-1: none), modes, strides (offset differences)."""
    return name.endswith(("_RANK", "_MODE")) or "STRIDE" in name


@functools.lru_cache(maxsize=64)
def _counter_kinds(names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(may be negative (`_signed_counter`), may hold any 64-bit value (a record id: *_RENAMED_FROM)) per counter."""
    return (np.array([_signed_counter(n) for n in names], bool),
            np.array([n.endswith("_RENAMED_FROM") for n in names], bool))


def exclude_implausible_counters(records: dict[str, ModuleRecords]) -> list[str]:
    """Set integer counters that cannot be true to 0, in place; one warning per (module, counter).

    Implausible: above MAX_COUNTER in magnitude, or below -1 ("not monitored") for a count,
    a byte total or a size. Run before any sum: garbage near 2**63 overflows int64 sums.
    """
    warnings = []
    for mod, rec in records.items():
        if not len(rec):
            continue
        # every counter of every record at once; the loop below visits only the counters with a bad value
        signed, any_value = _counter_kinds(tuple(rec.counter_names))
        vals = rec.counter_values
        # a counter with a bad value has its largest above the bound, or its least below -bound (or below
        # -1 when it cannot be negative): two reductions, not a mask of every value (issue 40)
        hi, lo = vals.max(axis=0), vals.min(axis=0)
        for j in np.flatnonzero(((hi > MAX_COUNTER) | (lo < -MAX_COUNTER) | ((lo < -1) & ~signed)) & ~any_value):
            name = rec.counter_names[j]
            v = rec.counter_values[:, j]
            bad = (v > MAX_COUNTER) | (v < -MAX_COUNTER) | ((v < -1) & ~signed[j])
            sample = int(v[bad][np.argmax(np.abs(v[bad]))])
            warnings.append(f"{mod}: {int(bad.sum())} value(s) of {name} excluded as implausible "
                            f"(negative or beyond any job; e.g. {sample:,})")
            v[bad] = 0
    return warnings


def bound_ranks(records: dict[str, ModuleRecords], nprocs: int) -> tuple[int, list[str]]:
    """(nprocs, warnings): the header's process count if possible, records of impossible ranks dropped.

    Arrays are sized by nprocs and by the highest rank (per-rank sums), so a damaged header
    (nprocs 0, negative or 2**40) or record (rank 2**40) must not reach them. A count outside
    1..MAX_NPROCS is replaced by the highest rank seen + 1; a record whose rank is below -1
    (shared) or not below the process count is dropped.
    """
    warnings = []
    if not 1 <= nprocs <= MAX_NPROCS:
        seen = [int(r.ranks[(r.ranks >= 0) & (r.ranks < MAX_NPROCS)].max(initial=0)) for r in records.values()]
        fixed = max(seen, default=0) + 1
        warnings.append(f"the header's process count {nprocs:,} is impossible (damaged log); "
                        f"using {fixed:,}, from the highest rank in the records")
        nprocs = fixed
    for mod, rec in list(records.items()):
        ok = (rec.ranks >= -1) & (rec.ranks < nprocs)
        if not ok.all():
            warnings.append(f"{mod}: {int((~ok).sum())} record(s) with a rank outside -1..{nprocs - 1} "
                            "dropped (damaged log)")
            records[mod] = _subset(rec, ok)
    return nprocs, warnings


def _subset(rec: ModuleRecords, keep: np.ndarray) -> ModuleRecords:
    return ModuleRecords(module=rec.module, version=rec.version, partial=rec.partial, ids=rec.ids[keep],
                         ranks=rec.ranks[keep], counter_names=rec.counter_names, fcounter_names=rec.fcounter_names,
                         counter_values=rec.counter_values[keep], fcounter_values=rec.fcounter_values[keep],
                         names=rec.names[keep],
                         file_rec_ids=None if rec.file_rec_ids is None else rec.file_rec_ids[keep],
                         not_monitored=rec.not_monitored)


def _optional(read, module: str, damaged: dict[str, str]):
    """`read()` for an optional region (DXT, heatmap): a damaged one is recorded in `damaged`
    (module -> reason) and gives None instead of failing the whole log."""
    try:
        return read()
    except DarshanLogError as e:
        damaged[module] = str(e).split(": ", 1)[-1]
        return None


def read_log(path: str | os.PathLike, *, dxt: bool = True, heatmaps: bool = True, lustre: bool = True,
             dxt_max_segments: int = DEFAULT_DXT_MAX_SEGMENTS, exclude_implausible_times: bool = True,
             opened=None, layout: _Layout | None = None) -> DarshanLog:
    """Read one Darshan 3.x log (`opened`: the file already opened by `open_log`).

    Raises DarshanLogError (a UserError) with a one-line reason.

    `dxt=False` skips the DXT trace modules and `lustre=False` the Lustre striping
    records (the archive needs neither);
    at most `dxt_max_segments` DXT segments are kept (the rest is dropped and
    `DxtSegments.truncated` set), which bounds memory at 32 bytes per segment.
    `layout`: check_layout's answer for `opened`, when the caller already has it (the ingest hashes first).
    """
    path = os.fspath(path)
    if opened is not None:  # the caller opened and checked it (open_log); read that file, not the name
        return _read_log(path, fd_path(opened), dxt=dxt, heatmaps=heatmaps, lustre=lustre,
                         dxt_max_segments=dxt_max_segments, exclude_implausible_times=exclude_implausible_times,
                         layout=layout)
    with open_log(path) as f:
        return _read_log(path, fd_path(f), dxt=dxt, heatmaps=heatmaps, lustre=lustre,
                         dxt_max_segments=dxt_max_segments, exclude_implausible_times=exclude_implausible_times)



def _read_log(path: str, open_path: str, *, dxt: bool, heatmaps: bool, lustre: bool, dxt_max_segments: int,
              exclude_implausible_times: bool, layout: _Layout | None = None) -> DarshanLog:
    layout = layout or check_layout(path, open_path=open_path)
    with open(open_path, "rb") as f:
        # the job and name regions now; a module's before its records are read (modules_read)
        text = read_job_text(check_inflation(path, f.fileno(), layout, lengths=set()), layout)
    b = _backend()
    errors: list[str] = list(text.warnings)
    with _captured_c_stderr(errors):
        # not DarshanReport: it reads the executable and the mount table through libdarshan-util
        # (read_job_text says why not)
        log = b.log_open(open_path)
        if not log["handle"]:
            raise DarshanLogError(f"{path}: corrupt Darshan log: libdarshan-util cannot open it"
                                  + (f" ({errors[0]})" if errors else ""))
        try:
            try:
                job = b.log_get_job(log)
                # as DarshanReport did: a start time no date can hold (year 36812) is a damaged job region
                for k in ("start_time_sec", "end_time_sec"):
                    datetime.datetime.fromtimestamp(job[k])
            except (OSError, ValueError, OverflowError) as e:
                raise DarshanLogError(f"{path}: corrupt Darshan log: its job region cannot be read "
                                      f"({os_error_reason(e)})") from None
            try:
                modules_raw = b.log_get_modules(log)
            except RuntimeError:  # a module without a name (PyDarshan's string() of NULL)
                raise DarshanLogError(f"{path}: corrupt Darshan log: libdarshan-util cannot open it"
                                      + (f" ({errors[0]})" if errors else "")) from None
            # the generic modules' regions are counted as they are read (_read_fixed)
            # and the Lustre records' (_read_lustre)
            wanted = [*(DXT_MODULES if dxt else ()), *(["HEATMAP"] if heatmaps else [])]
            lengths = modules_read(modules_raw, wanted)
            if lengths:
                with open(open_path, "rb") as f:
                    check_regions(path, f.fileno(), layout, lambda what, ln: what != "name records" and ln in lengths)
            names = _name_records(b, log)
            records: dict[str, ModuleRecords] = {}
            for mod in GENERIC_MODULES:
                if mod in modules_raw:
                    records[mod] = _read_generic(b, log, mod, modules_raw[mod], names, path, errors)
            lustre_df = _read_lustre(b, log, path, errors, layout.comp) if lustre and "LUSTRE" in modules_raw else None
            dxt_out, damaged = {}, {}
            if dxt:
                budget = dxt_max_segments
                for mod in DXT_MODULES:
                    if mod in modules_raw:
                        got = _optional(lambda m=mod: _read_dxt(b, log, m, path, errors, budget), mod, damaged)
                        if got is not None:
                            dxt_out[mod] = got
                            budget -= len(got)
            hm = {}
            if heatmaps and "HEATMAP" in modules_raw:
                hm = _optional(lambda: _read_heatmaps(b, log, path, errors), "HEATMAP", damaged) or {}
            # Node names: only DXT records carry a hostname we can trust across logs. (APMPI has
            # MPI_PROCESSOR_NAME, but libdarshan-util parses its header record through a
            # process-wide static flag, so only the first APMPI log read in a process is right.)
            nodes, nodes_src = [], None
            if not nodes and dxt_out:
                hosts = set()
                for seg in dxt_out.values():
                    hosts.update(h for h in seg.hostnames.values() if h)
                if hosts:
                    nodes, nodes_src = sorted(hosts), "DXT"
        finally:
            b.log_close(log)
    exe, mounts = text.exe, text.mounts
    if names == {} and any(len(r) for r in records.values()):
        errors.append("log has records but no name records")
    modules = {m: {"version": int(i["ver"]), "partial": bool(i["partial_flag"]), "bytes": int(i["len"])}
               for m, i in modules_raw.items()}
    warnings = [e for e in errors if e]
    warnings += [f"{mod}: {why}; left out, the rest of the log is read" for mod, why in damaged.items()]
    start = job["start_time_sec"] + job.get("start_time_nsec", 0) / 1e9
    end = job["end_time_sec"] + job.get("end_time_nsec", 0) / 1e9
    runtime = float(job["run_time"])
    if not (0 <= start <= MAX_EPOCH_S and 0 <= end <= MAX_EPOCH_S and 0 <= runtime <= MAX_EPOCH_S):
        # nanoseconds of year 8000 overflow int64 in the store and in every time axis
        warnings.append(f"the header's start and end times ({job['start_time_sec']}, {job['end_time_sec']}) "
                        "are impossible (damaged log); the job's times are unknown (0)")
        start = end = runtime = 0.0
    nprocs, rank_warnings = bound_ranks(records, int(job["nprocs"]))
    warnings += rank_warnings
    warnings += exclude_implausible_counters(records)
    if exclude_implausible_times:
        warnings += exclude_implausible(records, runtime, nprocs)
    for mod, rec in records.items():
        unnamed = rec.names.tolist().count(None)
        if unnamed:
            warnings.append(f"{mod}: {unnamed} records have no name record (kept, name unknown)")
    return DarshanLog(path=path, log_version=job.get("log_ver") or layout.version, jobid=int(job["jobid"]),
                      uid=int(job["uid"]), nprocs=nprocs, start_time_s=float(start), end_time_s=float(end),
                      runtime_s=runtime, exe=exe, metadata=dict(job.get("metadata") or {}),
                      mounts=mounts, modules=modules, records=records, lustre=lustre_df, dxt=dxt_out, heatmaps=hm,
                      node_names=nodes, node_names_source=nodes_src, warnings=warnings, damaged=damaged)
