"""One job's I/O characterization from its Darshan records (METHODS.md section 3).

Pure functions: a `DarshanLog` (plain arrays and DataFrames from
`ioweather.sources.darshan_log`) in, numbers out. No file or database access.

Conventions that follow from Darshan's log format:
- a record with rank -1 aggregates all ranks of a shared file (N:1). In a
  single-process job Darshan marks *every* record rank -1; such records are
  treated as rank 0 (unique) for sharing and per-rank views, and left as they are
  for `agg_perf_by_slowest` (which must match libdarshan-util's accumulator);
- counters equal to -1 are "not monitored" and are excluded, never summed;
- totals are taken at the layer that reaches storage, POSIX + STDIO (and DFS, else
  DAOS, for DAOS jobs), so MPI-IO / HDF5 / PnetCDF traffic carried by POSIX is not
  counted twice;
- the job's I/O time is taken at the top layer: each file at the highest interface
  that recorded it (`top_layer_time`), the slowest rank's path over them;
- Darshan's timers are cumulative per rank and can add up to more than the run
  time (threads, overlapping calls): fractions of run time are capped at 1 and
  the raw value is kept.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ioweather.units import ns_to_iso

if TYPE_CHECKING:
    import pandas as pd

MiB = 1024 * 1024

#: Counter-name prefix of each generic module.
PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5F": "H5F", "H5D": "H5D",
          "PNETCDF_FILE": "PNETCDF_FILE", "PNETCDF_VAR": "PNETCDF_VAR", "DFS": "DFS", "DAOS": "DAOS"}
#: Modules for which libdarshan-util defines agg_perf_by_slowest (an accumulator exists).
PERF_MODULES = ("POSIX", "MPI-IO", "STDIO", "DFS", "DAOS")
#: The layer that reaches the file system.
FS_MODULES = ("POSIX", "STDIO")

# Operation counters per module: (reads, writes, opens); each a tuple of counters summed.
_OPS = {
    "POSIX": (("POSIX_READS",), ("POSIX_WRITES",), ("POSIX_OPENS",)),
    "STDIO": (("STDIO_READS",), ("STDIO_WRITES",), ("STDIO_OPENS", "STDIO_FDOPENS")),
    "MPI-IO": (("MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"),
               ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"),
               ("MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS")),
    "H5F": ((), (), ("H5F_OPENS",)),
    "H5D": (("H5D_READS",), ("H5D_WRITES",), ("H5D_OPENS",)),
    "PNETCDF_FILE": ((), (), ("PNETCDF_FILE_OPENS", "PNETCDF_FILE_CREATES")),
    "PNETCDF_VAR": (("PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_NB_READS"),
                    ("PNETCDF_VAR_INDEP_WRITES", "PNETCDF_VAR_COLL_WRITES", "PNETCDF_VAR_NB_WRITES"),
                    ("PNETCDF_VAR_OPENS",)),
    "DFS": (("DFS_READS", "DFS_READXS", "DFS_NB_READS"), ("DFS_WRITES", "DFS_WRITEXS", "DFS_NB_WRITES"),
            ("DFS_OPENS", "DFS_GLOBAL_OPENS")),
    "DAOS": (("DAOS_ARRAY_READS", "DAOS_KV_GETS"), ("DAOS_ARRAY_WRITES", "DAOS_KV_PUTS"),
             ("DAOS_OBJ_OPENS", "DAOS_ARRAY_OPENS", "DAOS_KV_OPENS")),
}

SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")


# ---------------------------------------------------------------------------
# column access: a DataFrame's columns as numpy arrays, converted once per frame.
# (Per-call `df[name]` costs ~20 us; a job touches counters thousands of times,
# and ingest handles thousands of jobs.)

class Cols(dict):
    """Column name -> numpy array, all of length `n`."""

    n: int = 0


# id(frame) -> (weak reference to the frame or records, its columns); DataFrames and ModuleRecords are not
# hashable, so a WeakKeyDictionary cannot hold them. Entries go when the frame is collected.
_CACHE: dict[int, tuple[weakref.ref, Cols]] = {}


def cols(frame) -> Cols:
    """Numpy columns of `frame`: a Cols, a ModuleRecords (counters and fcounters together),
    or a counters/fcounters DataFrame with id and rank first (converted once, cached)."""
    if isinstance(frame, Cols):
        return frame
    got = _CACHE.get(id(frame))
    if got is not None and got[0]() is frame:
        return got[1]
    if hasattr(frame, "arrays"):  # ModuleRecords: ~240 asks a log, each copied its ~90 columns' dict (issue 40)
        out = Cols(frame.arrays())
        out.n = len(frame)
    else:
        out = Cols()
        out.n = len(frame)
        names = list(frame.columns)
        rest = [i for i, n in enumerate(names) if n not in ("id", "rank")]
        if rest:
            block = frame.iloc[:, rest].to_numpy()
            for j, i in enumerate(rest):
                out[names[i]] = block[:, j]
        if "id" in frame.columns:
            out["id"] = frame["id"].to_numpy(np.uint64)
        if "rank" in frame.columns:
            out["rank"] = frame["rank"].to_numpy(np.int64)
    key = id(frame)
    _CACHE[key] = (weakref.ref(frame, lambda _r, k=key: _CACHE.pop(k, None)), out)
    return out


class _Subset(Cols):
    """`subset`'s rows: each column cut from the whole when first asked. A rule reads a few of a module's
    ~90 columns; cutting them all was most of a subset's cost (issue 40). Iterating it cuts the rest first,
    in the whole's order."""

    def __init__(self, whole: Cols, mask: np.ndarray):
        super().__init__()
        self._whole, self._mask, self._cut = whole, mask, False

    def __missing__(self, name: str) -> np.ndarray:
        v = self._whole[name][self._mask]
        dict.__setitem__(self, name, v)
        return v

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or (not self._cut and name in self._whole)

    def get(self, name, default=None):
        return self[name] if name in self else default

    def _all(self) -> None:
        if self._cut:
            return
        got = dict(dict.items(self))
        dict.clear(self)
        for name in self._whole.keys():
            dict.__setitem__(self, name, got.pop(name) if name in got else self._whole[name][self._mask])
        dict.update(self, got)  # columns added to the subset itself
        self._cut = True

    def __iter__(self):
        self._all()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._all()
        return dict.__len__(self)

    def keys(self):
        self._all()
        return dict.keys(self)

    def values(self):
        self._all()
        return dict.values(self)

    def items(self):
        self._all()
        return dict.items(self)


def subset(frame, mask: np.ndarray) -> Cols:
    out = _Subset(cols(frame), mask)
    out.n = int(np.count_nonzero(mask)) if mask.dtype == bool else len(mask)
    return out


def monitored(frame, name: str) -> np.ndarray:
    """Column `name` as float64 with -1 ("not monitored") and missing columns as NaN."""
    c = cols(frame)
    if name not in c:
        return np.full(c.n, np.nan)
    v = c[name].astype(np.float64)
    v[v == -1] = np.nan
    return v


def zero_missing(frame, name: str) -> np.ndarray:
    """Column `name` as float64 with -1 ("not monitored"), NaN and missing columns as 0 (±inf as nan_to_num)."""
    c = cols(frame)
    if name not in c:
        return np.zeros(c.n)
    a = c[name]
    v = a.astype(np.float64)
    if a.dtype.kind in "iu":
        # an integer counter is finite as float64: only its -1s become 0, as monitored + nan_to_num make
        # them (issue 40: the isfinite check was most of ~180 calls a log)
        v[v == -1] = 0.0
        return v
    v[v == -1] = np.nan
    # nan_to_num's own checks cost more than the column (tens of µs, thousands of calls per log)
    return v if np.isfinite(v).all() else np.nan_to_num(v, copy=False)


def zero_missing_block(frame, names: list[str]) -> np.ndarray:
    """`zero_missing` of each of `names`, as the rows of one (len(names), n) float64 array: one conversion for
    integer counters (a histogram's ten bins were ten calls, issue 40), row i equal to zero_missing(frame, names[i])."""
    c = cols(frame)
    got = [c[n] if n in c else None for n in names]
    if not names or any(v is None or v.dtype.kind not in "iu" for v in got):
        # -1 and missing as NaN, then NaN as 0 and ±inf as nan_to_num makes them: a row that is all finite is
        # left as it is, as zero_missing leaves it
        out = monitored_block(c, names)
        return out if np.isfinite(out).all() else np.nan_to_num(out, copy=False)
    out = np.array(got, dtype=np.float64)
    out[out == -1] = 0.0
    return out


def nan_sum(v: np.ndarray) -> float:
    """np.nansum of a 1-d float array, to the last bit, without its copy and checks when nothing is NaN (the
    characterization and rules sum ~50 counter columns per log, issue 40): NaN only ever comes from one."""
    s = v.sum()
    return s if s == s else np.where(np.isnan(v), 0.0, v).sum()


def monitored_block(frame, names: list[str]) -> np.ndarray:
    """`monitored` of each of `names` as the rows of one (len(names), n) float64 array (a missing column a
    row of NaN): one conversion, not one call per column (issue 40)."""
    c = cols(frame)
    got = [c[n] if n in c else None for n in names]
    if names and not any(v is None for v in got):
        # every column present: one conversion (np.full and a store per row cost more than the values, issue 40)
        out = np.array(got, dtype=np.float64)
    else:
        out = np.empty((len(names), c.n))
        for i, v in enumerate(got):
            out[i] = np.nan if v is None else v
    out[out == -1] = np.nan
    return out


def nan_sums(block: np.ndarray) -> np.ndarray:
    """`nan_sum` of each row of a C-contiguous 2-d float array: the same values summed by the same pairwise sum
    (numpy sums each contiguous row as it sums a 1-d array)."""
    return np.where(np.isnan(block), 0.0, block).sum(axis=1)


def total(frame, names: Iterable[str]) -> float | None:
    """Sum of the monitored values of `names` over all rows; None when none is present/monitored."""
    c = cols(frame)
    present = [n for n in names if n in c]
    if not present:
        return None
    v = monitored_block(c, present)
    if np.isnan(v).all():
        return None
    return float(sum(nan_sums(v).tolist()))


#: Below this many values a Python set answers np.unique's and np.isin's questions in a fraction of their time:
#: numpy 2's hashed unique and isin's sort cost 20-40 µs even on 5 values, and a log asks ~25 times (issue 40).
SMALL_SET = 1024
#: Integers: above this many, a sort answers them (np.sort, np.unique with return_index, np.searchsorted) faster
#: than a set: ~5 µs against ~30 on 128 record ids, ~40 against ~400 on 1,000 (the set's Python ints and dict
#: per value; issue 40). Text and other objects keep SMALL_SET: numpy sorts them as slowly as a set holds them.
SMALL_INTS = 32


def _first_of_runs(s: np.ndarray) -> np.ndarray:
    """True at each value of the sorted 1-d `s` that differs from the one before it."""
    keep = np.empty(len(s), bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return keep


def distinct(a: np.ndarray) -> np.ndarray:
    """np.unique(a) of a 1-d integer array: its distinct values sorted, in its dtype. Many integers: sorted and
    each run's first kept (numpy 2's np.unique hashes them, then sorts what it kept: ~200 µs on a 2,048-rank
    log's record ids, a sort ~35 µs; issue 40)."""
    if a.dtype.kind not in "iu":
        return np.unique(a)
    if len(a) > SMALL_INTS:
        s = np.sort(a)
        return s[_first_of_runs(s)]
    return np.array(sorted(set(a.tolist())), dtype=a.dtype)


def n_distinct(a: np.ndarray) -> int:
    """np.unique(a).size of a 1-d integer array."""
    if a.dtype.kind not in "iu":
        return int(np.unique(a).size)
    if len(a) > SMALL_INTS:
        return int(np.count_nonzero(_first_of_runs(np.sort(a))))
    return len(set(a.tolist()))


def unique_first(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(a, return_index=True) of a 1-d integer array: the distinct values sorted and the first row of
    each."""
    if len(a) > SMALL_INTS or a.dtype.kind not in "iu":
        return np.unique(a, return_index=True)
    first: dict = {}
    for i, x in enumerate(a.tolist()):
        first.setdefault(x, i)
    values = sorted(first)
    return np.array(values, dtype=a.dtype), np.array([first[x] for x in values], dtype=np.intp)


def unique_first_inverse(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """np.unique(a, return_index=True, return_inverse=True) of a 1-d integer array: the distinct values sorted,
    the first row of each, and each row's place among them."""
    if len(a) > SMALL_INTS or a.dtype.kind not in "iu":
        return np.unique(a, return_index=True, return_inverse=True)
    values, first = unique_first(a)
    place = {x: i for i, x in enumerate(values.tolist())}
    return values, first, np.fromiter(map(place.__getitem__, a.tolist()), np.intp, count=len(a))


def _hashes_as_numpy_compares(a: np.ndarray) -> bool:
    """True when a set's membership of `a`'s values is numpy's equality: integers and text. Not floats, nor an
    object array holding anything else: a set finds the very NaN object it holds (identity before equality),
    numpy's == never does."""
    if a.dtype.kind in "iuU":
        return True
    return a.dtype.kind == "O" and all(isinstance(x, (str, int)) for x in a.tolist())


def member(a: np.ndarray, values) -> np.ndarray:
    """np.isin(a, values) of 1-d arrays, by a set when both hold integers or text only (`_hashes_as_numpy_compares`)."""
    values = values if isinstance(values, np.ndarray) else np.asarray(values)
    if (len(a) > SMALL_INTS or len(values) > SMALL_INTS) and a.dtype == values.dtype and a.dtype.kind in "iu":
        # integers of one type: each looked up in the sorted values (np.isin hashes both sides first, issue 40)
        if not len(values):
            return np.zeros(len(a), bool)
        v = np.sort(values)
        return v[np.minimum(np.searchsorted(v, a), len(v) - 1)] == a
    if len(a) > SMALL_SET or len(values) > SMALL_SET or not (_hashes_as_numpy_compares(a)
                                                               and _hashes_as_numpy_compares(values)):
        return np.isin(a, values)
    return np.fromiter(map(set(values.tolist()).__contains__, a.tolist()), bool, count=len(a))


def effective_ranks(ranks: np.ndarray, nprocs: int) -> np.ndarray:
    """Ranks with the single-process convention applied: in a 1-process job rank -1 means rank 0."""
    r = np.asarray(ranks, dtype=np.int64)
    return np.where(r < 0, 0, r) if nprocs <= 1 else r


# ---------------------------------------------------------------------------
# Darshan's derived metric, reproduced exactly

def agg_perf_by_slowest(counters, fcounters, module: str, nprocs: int) -> dict:
    """libdarshan-util's `darshan_accumulator` derived metrics for one module (POSIX, MPI-IO, STDIO, DFS, DAOS).

    total_bytes = sum(BYTES_READ + BYTES_WRITTEN); shared records (rank < 0) add
    their F_SLOWEST_RANK_TIME to a shared time; other records add META+READ+WRITE
    time to their rank; the slowest rank is the first one with the largest sum.
    agg_time_by_slowest = slowest rank's time + shared time, and
    agg_perf_by_slowest = total_bytes / MiB / agg_time (0 when the time is 0).
    Reference: darshan-util/darshan-logutils-accumulator.c and each module's
    `log_record_metrics` (Darshan 3.4.1+), as called by PyDarshan's
    `accumulate_records(rec_dict, module, nprocs)`.
    """
    c, f, p = cols(counters), cols(fcounters), PREFIX[module]
    total_bytes = int(c[f"{p}_BYTES_READ"].astype(np.int64).sum() + c[f"{p}_BYTES_WRITTEN"].astype(np.int64).sum())
    rank = c["rank"]
    shared = rank < 0
    io = f[f"{p}_F_META_TIME"] + f[f"{p}_F_READ_TIME"] + f[f"{p}_F_WRITE_TIME"]
    if shared.any():
        shared_time = float(f[f"{p}_F_SLOWEST_RANK_TIME"][shared].sum())
        rank, io = rank[~shared], io[~shared]
    else:  # every record a rank's own (an empty sum is 0.0)
        shared_time = 0.0
    per_rank = np.bincount(rank, weights=io, minlength=max(nprocs, 1))
    slowest_rank, slowest_time = 0, 0.0
    if per_rank.size and per_rank.max() > 0:
        slowest_rank = int(np.argmax(per_rank))  # first maximum, as the C loop's strict '>'
        slowest_time = float(per_rank[slowest_rank])
    agg_time = slowest_time + shared_time
    return {"total_bytes": total_bytes, "shared_io_total_time_by_slowest": shared_time,
            "slowest_rank_io_total_time": slowest_time, "slowest_rank": slowest_rank,
            "agg_time_by_slowest": agg_time,
            "agg_perf_by_slowest": (total_bytes / MiB) / agg_time if agg_time else 0.0}


# ---------------------------------------------------------------------------
# interfaces and totals

#: module -> its interface totals' (key, counters) in the summary's order, and their distinct counters
_INTERFACE_GROUPS: dict[str, tuple[tuple, tuple[str, ...]]] = {}
#: (module, which of its counters a log holds) -> `_interface_layout`'s answer
_INTERFACE_LAYOUTS: dict[tuple, tuple[list[str], list[tuple[str, list[int]]]]] = {}


def _interface_layout(module: str, c: Cols) -> tuple[list[str], list[tuple[str, list[int]]]]:
    """(the counters of `module`'s totals that `c` holds, in order of first use; each total's key and its
    counters' rows among them): made once per module and set of counters present, not per log."""
    got = _INTERFACE_GROUPS.get(module)
    if got is None:
        p = PREFIX[module]
        reads, writes, opens = _OPS.get(module, ((), (), ()))
        groups = (("bytes_read", (f"{p}_BYTES_READ",)), ("bytes_written", (f"{p}_BYTES_WRITTEN",)), ("reads", reads),
                  ("writes", writes), ("opens", opens), ("read_time_s", (f"{p}_F_READ_TIME",)),
                  ("write_time_s", (f"{p}_F_WRITE_TIME",)), ("meta_time_s", (f"{p}_F_META_TIME",)))
        got = _INTERFACE_GROUPS[module] = (groups, tuple(dict.fromkeys(n for _, g in groups for n in g)))
    groups, candidates = got
    key = (module, tuple(n in c for n in candidates))
    layout = _INTERFACE_LAYOUTS.get(key)
    if layout is None:
        names = [n for n, present in zip(candidates, key[1]) if present]
        row = {n: i for i, n in enumerate(names)}
        layout = _INTERFACE_LAYOUTS[key] = (names, [(k, [row[n] for n in g if n in row]) for k, g in groups])
    return layout


def interface_summary(rec, nprocs: int) -> tuple[dict, dict | None]:
    """(per-module volumes, operations and times: the keys of the `interfaces` JSON object; the module's
    `agg_perf_by_slowest` or None). The characterization reports POSIX's perf twice (its interface and the
    job's perf): made once."""
    c, f = cols(rec), cols(rec)
    # the eight totals from one block of their columns (issue 40), each as `total` makes it
    names, layout = _interface_layout(rec.module, c)
    block = monitored_block(c, names)
    nan = np.isnan(block)  # once for both: each row's sum as nan_sums makes it
    unmonitored, sums = nan.all(axis=1).tolist(), np.where(nan, 0.0, block).sum(axis=1).tolist()

    def tot(at: list[int]) -> float | None:
        if not at or all(unmonitored[i] for i in at):
            return None
        return float(sum(sums[i] for i in at))

    out = {key: tot(at) for key, at in layout}
    out.update({
        "files": n_distinct(c["id"]),
        "records": c.n,
        "partial": rec.partial,
    })
    for k in ("bytes_read", "bytes_written", "reads", "writes", "opens"):
        if out[k] is not None:
            out[k] = int(out[k])
    perf = None
    if rec.module in PERF_MODULES:
        perf = agg_perf_by_slowest(c, f, rec.module, nprocs) if c.n else None
        out["agg_perf_by_slowest_mibps"] = perf["agg_perf_by_slowest"] if perf is not None else None
    if rec.not_monitored:
        out["not_monitored"] = list(rec.not_monitored)
    return out, perf


#: id(records) -> (weak reference to them, their `module_rows`): the characterization and the findings ask
#: for the same module's rows about ten times per log (issue 40). Entries go when the records are collected.
_ROWS: dict[int, tuple[weakref.ref, Cols]] = {}


def module_rows(rec) -> Cols:
    """Module-neutral numeric columns of one module's records (missing or -1 counters as 0 / NaN).

    Made once per records object (a log's modules are not changed once read; `stats.damage` makes new
    ones): the computed columns are read-only, so a caller that would change them in place fails loudly."""
    if not hasattr(rec, "arrays"):
        return _module_rows(rec)
    key = id(rec)
    got = _ROWS.get(key)
    if got is not None and got[0]() is rec:
        return got[1]
    out = _module_rows(rec)
    for k, v in out.items():
        if k not in ("id", "rank"):  # the records' own arrays
            v.setflags(write=False)
    _ROWS[key] = (weakref.ref(rec, lambda _r, k=key: _ROWS.pop(k, None)), out)
    return out


#: (id(log), what, nprocs) -> (weak reference to the log, its rows): the characterization and the findings
#: ask for a log's `fs_records`, `layer_rows` and `shared_rank_rows` two or three times each (issue 40).
_PER_LOG: dict[tuple, tuple[weakref.ref, Cols]] = {}


def _per_log(log, what: str, nprocs: int, make) -> Cols:
    """`make()`'s rows of `log`, made once per log object (a log is not changed once read): its columns are
    fresh arrays made read-only, so a caller that would change them in place fails loudly; each caller gets
    its own dict of them (a column it adds is its own)."""
    key = (id(log), what, nprocs)
    got = _PER_LOG.get(key)
    if got is not None and got[0]() is log:
        rows = got[1]
    else:
        rows = make()
        try:
            ref = weakref.ref(log, lambda _r, k=key: _PER_LOG.pop(k, None))
        except TypeError:  # an object without weak references (a test's stand-in): not kept
            return rows
        for v in rows.values():
            v.setflags(write=False)
        _PER_LOG[key] = (ref, rows)
    out = Cols(rows.items())
    out.n = rows.n
    return out


def _module_rows(rec) -> Cols:
    c, p = cols(rec), PREFIX[rec.module]
    reads, writes, opens = _OPS.get(rec.module, ((), (), ()))
    # the counters in one block and the timers in another (issue 40: ~16 conversions a module before), each row
    # as zero_missing or monitored makes it
    counts = zero_missing_block(c, [f"{p}_BYTES_READ", f"{p}_BYTES_WRITTEN", *reads, *writes, *opens])
    timers = monitored_block(c, [f"{p}_F_READ_TIME", f"{p}_F_WRITE_TIME", f"{p}_F_META_TIME",
                                 f"{p}_F_SLOWEST_RANK_TIME", f"{p}_F_OPEN_START_TIMESTAMP",
                                 f"{p}_F_READ_END_TIMESTAMP", f"{p}_F_WRITE_END_TIMESTAMP"])
    times = timers[:3] if np.isfinite(timers[:3]).all() else np.nan_to_num(timers[:3])
    z = np.zeros(c.n)
    at = 2

    def ops(names) -> np.ndarray:
        nonlocal at
        total = z
        for row in counts[at:at + len(names)]:
            total = total + row
        at += len(names)
        return total

    out = Cols(
        id=c["id"], rank=c["rank"], bytes_read=counts[0], bytes_written=counts[1],
        reads=ops(reads), writes=ops(writes), opens=ops(opens),
        read_time=times[0], write_time=times[1], meta_time=times[2],
        slowest_time=timers[3], open_start=timers[4], io_end=np.fmax(timers[5], timers[6]),
    )
    out.n = c.n
    return out


#: Files a program's start-up opens, not its data: Python modules and byte code, shared libraries,
#: system and installed-software trees, interpreter library directories, and STDIO streams (<STDOUT>).
_LIBRARY = re.compile(r"(\.pyc|\.pyo|\.py|\.pth|\.so(\.\d+)*|\.a)$"
                      r"|/(site|dist)-packages/|/__pycache__/|/lib(64)?/python\d[\d.]*/|/conda/pkgs/"
                      r"|^/(usr|opt|etc|proc|sys|dev|lib|lib64|bin|sbin)/|^<")


def library_mask(names) -> np.ndarray:
    """True for the names that are interpreter or library files (`_LIBRARY`), not the user's data."""
    if len(_LIBRARY_MEMO) > _MOUNT_MEMO_NAMES:
        _LIBRARY_MEMO.clear()
    # one dict lookup per name, the pattern only for a name not answered before; the answers made an array at
    # the end (issue 40: a numpy store per name was most of the call on a log of 2,000 files)
    return np.array(_memo_lookup(names, _LIBRARY_MEMO, lambda n: bool(_LIBRARY.search(n)) if isinstance(n, str)
                                 and n else False), dtype=bool)


def _memo_lookup(names, memo: dict, compute) -> list:
    """Each name's answer: one dict lookup per name, `compute(name)` only for a name `memo` has not answered (a
    name repeated in `names` is computed once)."""
    names = names.tolist() if isinstance(names, np.ndarray) else list(names)
    hits = list(map(memo.get, names))
    if None in hits:
        for i, hit in enumerate(hits):
            if hit is None:
                n = names[i]
                hit = memo.get(n)
                if hit is None:
                    hit = memo[n] = compute(n)
                hits[i] = hit
    return hits


#: name -> whether it is a library file: the rules ask for the same names several times per log, and the
#: logs of one program share most of them (issue 40). Emptied past _MOUNT_MEMO_NAMES names.
_LIBRARY_MEMO: dict = {}


def storage_modules(log) -> tuple[str, ...]:
    """The modules whose records reach storage: POSIX and STDIO, and DFS (else DAOS, which DFS calls)
    for DAOS jobs, whose bytes never pass through POSIX."""
    has = [m for m in ("DFS", "DAOS") if len(log.records.get(m, ()))]
    return FS_MODULES + tuple(has[:1])


def fs_records(log) -> Cols:
    """The storage layer's records (`storage_modules`: POSIX, STDIO, DFS or DAOS) in one set of
    module-neutral columns (plus `module`, `name` and `stream`: `stream_mask` of the names, which the span,
    the per-rank sums and R01 each leave out); made once per log (`_per_log`)."""
    return _per_log(log, "fs", 0, lambda: _fs_records(log))


def _fs_records(log) -> Cols:
    parts = [(mod, log.records[mod]) for mod in storage_modules(log) if mod in log.records and len(log.records[mod])]
    if not parts:
        out = Cols({k: np.zeros(0) for k in ("bytes_read", "bytes_written", "reads", "writes", "opens", "read_time",
                                             "write_time", "meta_time", "slowest_time", "open_start", "io_end")})
        out.update(id=np.zeros(0, np.uint64), rank=np.zeros(0, np.int64), module=np.zeros(0, object),
                   name=np.zeros(0, object), stream=np.zeros(0, bool))
        return out
    rows = [module_rows(rec) for _, rec in parts]
    out = Cols({k: np.concatenate([r[k] for r in rows]) for k in rows[0]})
    out["module"] = np.concatenate([np.full(len(rec), mod, dtype=object) for mod, rec in parts])
    out["name"] = np.concatenate([rec.names for _, rec in parts])
    out["stream"] = stream_mask(out["name"])
    out.n = len(out["id"])
    return out


def rank0_io_span(fs: Cols) -> tuple[float, float] | None:
    """Rank 0's I/O span in seconds from the job's start: the first open to the last read or write end
    (Darshan's F_OPEN_START and F_READ_END/F_WRITE_END timestamps) of the storage records that moved bytes and
    are rank 0's own or shared (rank -1: reduced over the ranks), the standard streams left out (`fs_records`'
    stream: rank 0 printing while the job computes is not its I/O, and a span stretched over it would price a device's
    crowd while the job was not using the device). None when no such record has both."""
    moved = ((fs["bytes_read"] + fs["bytes_written"]) > 0) & (fs["rank"] <= 0) & ~fs["stream"]
    start, end = fs["open_start"][moved], fs["io_end"][moved]
    start, end = start[np.isfinite(start)], end[np.isfinite(end)]
    if not start.size or not end.size or end.max() <= start.min():
        return None
    return float(start.min()), float(end.max())


def totals(fs: Cols) -> dict:
    return {"bytes_read": int(fs["bytes_read"].sum()), "bytes_written": int(fs["bytes_written"].sum()),
            "files": n_distinct(fs["id"]),
            "read_time_s": float(fs["read_time"].sum()), "write_time_s": float(fs["write_time"].sum()),
            "meta_time_s": float(fs["meta_time"].sum())}


# ---------------------------------------------------------------------------
# sharing

def _sharing_codes(ids: np.ndarray, ranks: np.ndarray, nprocs: int) -> tuple[np.ndarray, ...]:
    """(unique ids, first row of each, each row's place among them, nranks, class code) with class (its name
    _SHARING_NAMES[code]) 'shared' (2: a rank -1 record, or every rank has its own record), 'partially_shared'
    (1: several ranks, not all) or 'unique' (0: one rank). `ranks` must already follow the single-process
    convention (see effective_ranks)."""
    uniq, first, inv = unique_first_inverse(ids)
    k = len(uniq)
    if k == len(ids):
        # one record per file (most small logs): each file's one rank, counted as the general case counts it
        has_all = ranks[first] < 0
        nranks = np.where(has_all, nprocs, np.ones(k, np.intp))
    else:
        has_all = np.zeros(k, bool)
        has_all[inv[ranks < 0]] = True
        width = int(max(nprocs, ranks.max(initial=0) + 1)) + 2
        ukey = distinct(inv.astype(np.int64) * width + (ranks + 1))
        nranks = np.where(has_all, nprocs, np.bincount(ukey // width, minlength=k))
    shared = has_all | ((nranks >= nprocs) & (nprocs > 1))
    # the class names taken from an object array by code: numpy's nested where on text made fixed-width strings
    # first, then Python ones (~3 calls a log, issue 40)
    return uniq, first, inv, nranks, np.where(shared, 2, nranks > 1)


#: _sharing_codes' class names by code: 0 unique, 1 partially shared, 2 shared
_SHARING_NAMES = np.array(["unique", "partially_shared", "shared"], dtype=object)


def file_sharing(fs: Cols, nprocs: int) -> Cols:
    """One row per file (record id) at the file-system layer: id, nranks, sharing, bytes."""
    ranks = effective_ranks(fs["rank"], nprocs)
    uniq, _, inv, nranks, code = _sharing_codes(fs["id"], ranks, nprocs)
    out = Cols(id=uniq, nranks=nranks, sharing=_SHARING_NAMES[code],
               bytes=np.bincount(inv, weights=fs["bytes_read"] + fs["bytes_written"], minlength=len(uniq)))
    out.n = len(uniq)
    return out


def sharing_summary(per_file: Cols) -> dict:
    out = {}
    for cls in ("unique", "shared", "partially_shared"):
        sel = per_file["sharing"] == cls
        out[cls] = int(sel.sum())
        out[f"{cls}_bytes"] = int(per_file["bytes"][sel].sum())
    return out


# ---------------------------------------------------------------------------
# access pattern (POSIX counters)

#: access_pattern's size bins: the reads', then the writes'
_HISTOGRAM_BINS = tuple(f"POSIX_SIZE_{kind}_{b}" for kind in ("READ", "WRITE") for b in SIZE_BINS)


def access_pattern(rec) -> dict:
    """Size histograms, the 4 most common access sizes and the pattern fractions of POSIX.

    Records with a counter of -1 are left out of that counter's numerator and
    denominator (not monitored), so a fraction is over the records that have it.
    """
    out = {"read_histogram": None, "write_histogram": None, "common_sizes": [],
           "seq_fraction": None, "consec_fraction": None,
           "file_not_aligned_fraction": None, "mem_not_aligned_fraction": None}
    if rec is None or not len(rec):
        return out
    c = cols(rec)
    pattern = ("POSIX_SEQ_READS", "POSIX_SEQ_WRITES", "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES",
               "POSIX_FILE_NOT_ALIGNED", "POSIX_MEM_NOT_ALIGNED")
    # both histograms' bins and the pattern counters in one block, each bin's row summed as its own 1-d sum
    block = monitored_block(c, [*_HISTOGRAM_BINS, *pattern])
    sums = nan_sums(block[:len(_HISTOGRAM_BINS)])
    for i, key in enumerate(("read_histogram", "write_histogram")):
        out[key] = {b: int(x) for b, x in zip(SIZE_BINS, sums[i * len(SIZE_BINS):(i + 1) * len(SIZE_BINS)].tolist())}
    out["common_sizes"] = common_access_sizes(c, "POSIX")
    reads, writes = zero_missing_block(c, ["POSIX_READS", "POSIX_WRITES"])
    ops = reads + writes
    counted = dict(zip(pattern, block[len(_HISTOGRAM_BINS):]))

    keys = ("seq_fraction", "consec_fraction", "file_not_aligned_fraction", "mem_not_aligned_fraction")
    pat = block[len(_HISTOGRAM_BINS):]
    if not np.isnan(pat).any():
        # every record has every pattern counter (`frac`'s ok all True): the four numerators as the rows of one
        # block, each made as frac makes it (0 + the first + the second) and summed as its own 1-d sum
        den = ops.sum()
        num = pat[[0, 2, 4, 5]] + 0
        num[0] += pat[1]
        num[1] += pat[3]
        out.update(zip(keys, (float(v / den) if den > 0 else None for v in num.sum(axis=1).tolist())))
        return out

    def frac(*names):
        num = sum(counted[n] for n in names)
        ok = ~np.isnan(num)
        den = ops[ok].sum()
        return float(num[ok].sum() / den) if den > 0 else None

    out.update(zip(keys, (frac("POSIX_SEQ_READS", "POSIX_SEQ_WRITES"), frac("POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES"),
                          frac("POSIX_FILE_NOT_ALIGNED"), frac("POSIX_MEM_NOT_ALIGNED"))))
    return out


def common_access_sizes(counters, prefix: str, n: int = 4) -> list[dict]:
    """The n most common access sizes over all records (ACCESS1..4 counters summed by size)."""
    c = cols(counters)
    sizes = [c[f"{prefix}_ACCESS{i}_ACCESS"] for i in range(1, 5) if f"{prefix}_ACCESS{i}_ACCESS" in c]
    counts = [c[f"{prefix}_ACCESS{i}_COUNT"] for i in range(1, 5) if f"{prefix}_ACCESS{i}_COUNT" in c]
    if not sizes or len(sizes) != len(counts):
        return []
    s, k = np.concatenate(sizes).astype(np.int64), np.concatenate(counts).astype(np.int64)
    if len(s) <= SMALL_INTS:
        # a few records: tallied in a dict as bincount adds them (each count as a float onto 0.0, in order), then
        # sorted as the lexsort below sorts them (numpy's calls cost more than the values, issue 40)
        tally: dict[int, float] = {}
        for size, count in zip(s.tolist(), k.tolist()):
            if count > 0 and size >= 0:
                tally[size] = tally.get(size, 0.0) + count
        return [{"size_bytes": size, "count": int(t)}
                for size, t in sorted(tally.items(), key=lambda st: (-st[1], st[0]))[:n]]
    keep = (k > 0) & (s >= 0)
    if not keep.any():
        return []
    us, _, inv = unique_first_inverse(s[keep])
    tot = np.bincount(inv, weights=k[keep])
    order = np.lexsort((us, -tot))[:n]  # by count, descending; ties by size
    return [{"size_bytes": int(us[i]), "count": int(tot[i])} for i in order]


# ---------------------------------------------------------------------------
# per-rank view and Carns' MiB/s/CN

def rank_sums(fs: Cols, nprocs: int) -> Cols:
    """Bytes and I/O time per rank from non-shared records (shared records have no per-rank split): rank, bytes,
    time, meta_time as arrays, without a DataFrame made each time (issue 40: 7 % of an ingest)."""
    ranks = effective_ranks(fs["rank"], nprocs)
    own = ranks >= 0
    n = max(nprocs, int(ranks.max()) + 1 if own.any() else 1)
    r = ranks[own]
    b = (fs["bytes_read"] + fs["bytes_written"])[own]
    t = (fs["read_time"] + fs["write_time"] + fs["meta_time"])[own]
    out = Cols({"rank": np.arange(n), "bytes": np.bincount(r, weights=b, minlength=n),
                "time": np.bincount(r, weights=t, minlength=n),
                "meta_time": np.bincount(r, weights=fs["meta_time"][own], minlength=n)})
    out.n = n
    return out


def data_rank_sums(fs: Cols, nprocs: int) -> Cols:
    """`rank_sums` of the ranks' own data files: the standard streams (`fs_records`' stream) left out, as R01's
    bytes and the shared files' split leave them. A rank that printed did none of the job's I/O, yet its <STDOUT> is
    often its own record: mpi-io-test's rank 0 made "1 rank with I/O" of a job whose data is one shared file,
    and runtime_heatmap_inactive_ranks' 20 printing ranks a 69 % time imbalance of nothing but their prints."""
    return rank_sums(subset(fs, ~fs["stream"]), nprocs)


def per_rank_with_shared(log) -> tuple[pd.DataFrame, str]:
    """(bytes and I/O time per rank including shared files, how the shared part was split).

    Own files as perf.imbalance reads them (`data_rank_sums`, standard streams left out: the chart draws the
    report's numbers). Each shared file at the storage layer (`shared_rank_rows`' POSIX and STDIO rows; an MPI-IO
    row's bytes are those of its POSIX one) gives its slowest and fastest rank's bytes and time
    (Darshan's rank counters) to those ranks and splits the rest evenly over the job's other ranks: exact for
    the two named ranks, an estimate for the rest; evenly over all ranks where the record has no rank counters.
    """
    # lazy: pandas, for the chart's frame only (the ingest imports no pandas: ~0.55 s of its serial start)
    import pandas as pd

    nprocs = max(int(log.nprocs), 1)
    pr = pd.DataFrame(data_rank_sums(fs_records(log), nprocs))
    rows = shared_rank_rows(log)
    rows = subset(rows, member(rows["module"], FS_MODULES))
    if not rows.n:
        return pr, "own files only (no shared files)"
    # float: the even split of the rest is fractional (an int64 column cannot take it in place)
    by, tm = pr["bytes"].to_numpy(dtype=np.float64, copy=True), pr["time"].to_numpy(dtype=np.float64, copy=True)
    for i in range(rows.n):
        named = {}
        if rows["ranked"][i]:
            for who in ("slowest", "fastest"):
                named.setdefault(int(rows[f"{who}_rank"][i]), (rows[f"{who}_bytes"][i], rows[f"{who}_time"][i]))
        others = np.zeros(len(by), bool)
        others[:nprocs] = True
        for r, (rb, rt) in named.items():
            by[r] += rb
            tm[r] += rt
            others[r] = False
        k = int(others.sum())
        if k:
            by[others] += max(rows["bytes"][i] - sum(x[0] for x in named.values()), 0.0) / k
            tm[others] += max(rows["time"][i] - sum(x[1] for x in named.values()), 0.0) / k
    out = pr.assign(bytes=by, time=tm)
    how = ("shared files split by Darshan's slowest/fastest-rank counters (other ranks: the rest, evenly)"
           if rows["ranked"].any() else "shared files split evenly over the ranks (no rank counters in the log)")
    return out, how


#: The modules whose shared (rank −1) records carry Darshan's rank counters, in the report's order. Darshan's
#: shared-file reduction keeps, of every rank's read + write + metadata time on the file, the least
#: (FASTEST_RANK, its bytes and time) and the most (SLOWEST_RANK ...), and the population variance of every
#: rank's time and bytes over the job's ranks (F_VARIANCE_RANK_TIME/BYTES: darshan-runtime's
#: `*_shared_record_variance`, a reduction of (n, T, S) over the module's communicator, S / n).
SPLIT_MODULES = ("POSIX", "MPI-IO", "STDIO")
#: A shared record under MPI-IO is the user's split; the same file's POSIX one is ROMIO's (its aggregators).
_SPLIT_ABOVE = {"POSIX": "MPI-IO", "STDIO": "MPI-IO"}


def stream_mask(names) -> np.ndarray:
    """True for the standard streams: Darshan's <STDIN>, <STDOUT> and <STDERR>, and in an anonymized log their
    hashed names, digits without a path (PyDarshan's data_access_by_filesystem reads such a name as "probably an
    anonymized STD.. stream"). They have no mount, and they are not the job's data: Darshan's STDIO module opens
    all three on every rank at start-up (darshan-stdio.c, stdio_runtime_initialize), so in a job of several
    processes each is often a shared (rank −1) record whoever printed, and as often the printing ranks' own
    (rank 0's <STDOUT> in the mpi-io-test release logs, 20 ranks' in runtime_heatmap_inactive_ranks)."""
    names = names.tolist() if isinstance(names, np.ndarray) else list(names)
    # a plain str (every name a log holds) by slicing, not by method calls: ~2x faster per name (issue 40)
    return np.array([n[:1] == "<" or n.isdigit() if type(n) is str else isinstance(n, str)
                     and (n.startswith("<") or n.isdigit()) for n in names], dtype=bool).reshape(len(names))


def shared_rank_rows(log) -> Cols:
    """Darshan's rank counters of the shared files: the one reading of them (the report's split, R01, the
    per-rank chart). One row per shared record (rank −1) of `SPLIT_MODULES` in a job of several processes,
    standard streams left out (`stream_mask`: rank 0 prints, which is no split of the data): `module`, `id`,
    `name`, `bytes` and `time` (summed over ranks), `ranked` (Darshan recorded the slowest and the fastest rank,
    both ranks of the job), `slowest_rank`, `slowest_bytes`, `slowest_time`, `fastest_rank`, `fastest_bytes`,
    `fastest_time` (-1 and 0 where not `ranked`; a counter not monitored reads 0), `var_bytes`, `var_time`
    (NaN: not monitored) and `top` (no MPI-IO shared record of the same file above it).
    Made once per log (`_per_log`). The streams are masked here, not taken from `fs_records`' `stream` column:
    that covers the storage modules only, and these rows include MPI-IO's records."""
    return _per_log(log, "shared", 0, lambda: _shared_rank_rows(log))


def _shared_rank_rows(log) -> Cols:
    nprocs = max(int(log.nprocs), 1)
    keys = ("module", "id", "name", "bytes", "time", "ranked", "slowest_rank", "slowest_bytes", "slowest_time",
            "fastest_rank", "fastest_bytes", "fastest_time", "var_bytes", "var_time", "top")
    parts, mods = [], []
    for mod in SPLIT_MODULES:
        rec = log.records.get(mod)
        if nprocs < 2 or rec is None or not len(rec):
            continue
        c, p = cols(rec), PREFIX[mod]
        # the names of the shared records only: a log's records are mostly per rank (issue 40's cost of loops)
        at = np.flatnonzero(c["rank"] < 0)
        if not at.size:
            continue
        at = at[~stream_mask(rec.names[at])]
        if not at.size:
            continue
        # one block of the counters read as 0 where missing, one of those read as NaN (issue 40), each made of
        # every record and then cut to the shared ones: both read each value alone, and two cuts cost less than
        # a cut per column (~13 a module)
        br, bw, rt, wt, mt, sb, st, fb, ft = zero_missing_block(c, [
            f"{p}_BYTES_READ", f"{p}_BYTES_WRITTEN", f"{p}_F_READ_TIME", f"{p}_F_WRITE_TIME", f"{p}_F_META_TIME",
            f"{p}_SLOWEST_RANK_BYTES", f"{p}_F_SLOWEST_RANK_TIME", f"{p}_FASTEST_RANK_BYTES",
            f"{p}_F_FASTEST_RANK_TIME"])[:, at]
        sr, fr, var_b, var_t = monitored_block(c, [f"{p}_SLOWEST_RANK", f"{p}_FASTEST_RANK",
                                                   f"{p}_F_VARIANCE_RANK_BYTES", f"{p}_F_VARIANCE_RANK_TIME"])[:, at]
        # both ranks within the job (NaN and ±inf compare false)
        ranked = (sr >= 0) & (sr < nprocs) & (fr >= 0) & (fr < nprocs)

        def named(v):
            return np.where(ranked, v, 0.0)
        mods.append(mod)
        parts.append({
            "module": np.full(at.size, mod, dtype=object), "id": np.asarray(c["id"][at], np.uint64),
            "name": rec.names[at],
            "bytes": br + bw, "time": rt + wt + mt, "ranked": ranked,
            "slowest_rank": np.where(ranked, sr, -1).astype(np.int64), "slowest_bytes": named(sb),
            "slowest_time": named(st),
            "fastest_rank": np.where(ranked, fr, -1).astype(np.int64), "fastest_bytes": named(fb),
            "fastest_time": named(ft), "var_bytes": var_b, "var_time": var_t,
        })
    if not parts:
        out = Cols({k: np.zeros(0, object if k in ("module", "name") else bool if k in ("top", "ranked")
                                else np.int64 if k.endswith("_rank") else np.float64) for k in keys})
        out.n = 0
        return out
    # one module's rows are its part's own fresh arrays
    out = Cols(parts[0] if len(parts) == 1 else {k: np.concatenate([q[k] for q in parts]) for k in parts[0]})
    out.n = len(out["id"])
    top = np.ones(out.n, bool)
    if any(above in mods for above in _SPLIT_ABOVE.values()):  # else no row has a record above it
        for mod, above in _SPLIT_ABOVE.items():
            sel = out["module"] == mod
            if sel.any():
                top[sel] = ~member(out["id"][sel], out["id"][out["module"] == above])
    out["top"] = top
    return out


def _spread_of(hi: float, lo: float) -> float | None:
    """(max − min) / max of one pair of finite floats; None where both are 0 (or it is not finite)."""
    m = max(hi, lo)
    return _none(abs(hi - lo) / m) if m > 0 else None


def _cv(var: np.ndarray, total: np.ndarray, nprocs: int) -> float | None:
    """Σ standard deviations / Σ means over the files whose variance Darshan recorded: the files'
    coefficients of variation over the ranks, weighted by their mean per rank (None: none recorded)."""
    ok = np.isfinite(var) & (var >= 0)
    mean = total[ok].sum() / nprocs
    return float(np.sqrt(var[ok]).sum() / mean) if ok.any() and mean > 0 else None


def _none(v) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def shared_splits(rows: Cols, nprocs: int) -> list[dict]:
    """Per module with shared records (`shared_rank_rows`): how far apart its ranks were. The worst file is
    the one whose slowest rank took the most seconds longer than its fastest; `bytes` and `time` are that
    file's (max − min) / max of the two ranks' bytes and seconds (as `imbalance` reads own files);
    `bytes_cv`/`time_cv` every shared file's spread over all ranks from Darshan's variances (`_cv`).
    The bytes' spread is the code's (the system moves no byte between ranks): `job diff` compares it. So
    `bytes_cv` reads only the files the ranks called at this layer (`top`): a POSIX record under an MPI-IO
    one is split by ROMIO's aggregators, which hints and the stripe count choose, not the code."""
    out = []
    if not rows["ranked"].any():  # no module has a ranked row
        return out
    for mod in SPLIT_MODULES:
        sel = (rows["module"] == mod) & rows["ranked"]
        if not sel.any():
            continue
        r = subset(rows, sel)
        gap_t = r["slowest_time"] - r["fastest_time"]
        gap_b = np.abs(r["slowest_bytes"] - r["fastest_bytes"])
        w = int(np.lexsort((gap_b, gap_t))[-1])
        sb, fb, st, ft = (float(r[k][w]) for k in ("slowest_bytes", "fastest_bytes", "slowest_time", "fastest_time"))
        out.append({"module": mod, "files": int(r.n), "file": r["name"][w],
                    "slowest_rank": int(r["slowest_rank"][w]), "slowest_bytes": int(sb), "slowest_time_s": st,
                    "fastest_rank": int(r["fastest_rank"][w]), "fastest_bytes": int(fb), "fastest_time_s": ft,
                    "bytes": _spread_of(sb, fb), "time": _spread_of(st, ft),
                    "bytes_cv": _cv(r["var_bytes"][r["top"]], r["bytes"][r["top"]], nprocs),
                    "time_cv": _cv(r["var_time"], r["time"], nprocs)})
    return out


def shared_file_time(fs: Cols, ranks: np.ndarray) -> np.ndarray:
    """Time of the slowest rank on each shared record (rank -1).

    Darshan's F_SLOWEST_RANK_TIME where monitored and positive; otherwise Carns
    et al.'s estimate, the elapsed time from the first open to the last I/O.
    """
    shared = ranks < 0
    slow = fs["slowest_time"][shared]
    elapsed = (fs["io_end"] - fs["open_start"])[shared]
    elapsed = np.where(np.isfinite(elapsed) & (elapsed > 0), elapsed, 0.0)
    return np.where(np.isfinite(slow) & (slow > 0), slow, elapsed)


def carns_mibps(fs: Cols, nprocs: int, pr: Cols | None = None) -> tuple[float | None, float, int | None]:
    """(aggregate MiB/s, I/O time of the slowest process, slowest rank) at the file-system layer.

    MiB/s = sum over ranks of bytes read+written / max over ranks of (t_md + t_r + t_w)
    (Carns et al. 2011, eq. 1), the slowest process being the slowest path through
    its own files plus the time of each shared file. Single-process jobs count
    their rank -1 records as rank 0's own files.
    """
    if not fs.n:
        return None, 0.0, None
    pr = rank_sums(fs, nprocs) if pr is None else pr
    times = pr["time"]
    slowest = int(times.argmax()) if len(times) and times.max() > 0 else None
    t = (float(times.max()) if len(times) else 0.0) + float(shared_file_time(fs, effective_ranks(fs["rank"], nprocs)).sum())
    b = float(fs["bytes_read"].sum() + fs["bytes_written"].sum())
    return ((b / MiB) / t if t > 0 else None), t, slowest


# ---------------------------------------------------------------------------
# time at the top layer

#: Interfaces from the top down. A file's time is taken at the highest of these that recorded it
#: (MPI-IO time contains the POSIX time it causes; HDF5/PnetCDF time contains the MPI-IO time).
LAYERS = ("HDF5", "PnetCDF", "MPI-IO", "POSIX", "DFS", "DAOS")
LAYER_MODULES = {"HDF5": ("H5D", "H5F"), "PnetCDF": ("PNETCDF_VAR", "PNETCDF_FILE"), "MPI-IO": ("MPI-IO",),
                 "POSIX": ("POSIX", "STDIO"), "DFS": ("DFS",), "DAOS": ("DAOS",)}
#: A library layer counts for a file only where its dataset/variable records name the file (their
#: FILE_REC_ID): H5F and PNETCDF_FILE alone hold open/close time, not the reads and writes.
_DATA_MODULE = {"HDF5": "H5D", "PnetCDF": "PNETCDF_VAR"}
#: Modules without a slowest-rank timer: a shared record's time is its mean per rank.
_NO_SLOWEST = ("H5F", "PNETCDF_FILE")


def layer_rows(log, nprocs: int) -> Cols:
    """One row per record of every timed layer: `key` (the file's record id), `layer` (index in
    LAYERS), `module`, effective `rank`, `time` (read + write + metadata, seconds) and `shared`
    (the record's slowest-rank time when it is a shared record, else 0).

    DAOS records are left out when DFS is present: DFS calls DAOS, so its time already holds them.
    Made once per (log, nprocs) (`_per_log`).
    """
    return _per_log(log, "layers", nprocs, lambda: _layer_rows(log, nprocs))


def _layer_rows(log, nprocs: int) -> Cols:
    parts = []
    for li, layer in enumerate(LAYERS):
        if layer == "DAOS" and len(log.records.get("DFS", ())):
            continue
        data_mod = _DATA_MODULE.get(layer)
        data = log.records.get(data_mod) if data_mod else None
        if data_mod and (data is None or not len(data) or data.file_rec_ids is None):
            continue
        for mod in LAYER_MODULES[layer]:
            rec = log.records.get(mod)
            if rec is None or not len(rec):
                continue
            m = module_rows(rec)
            key = rec.file_rec_ids if mod == data_mod else m["id"]
            t = m["read_time"] + m["write_time"] + m["meta_time"]
            if mod == "PNETCDF_FILE":
                t = t + zero_missing(rec, "PNETCDF_FILE_F_WAIT_TIME")
            ranks = effective_ranks(m["rank"], nprocs)
            shared = np.zeros(len(t))
            sh = ranks < 0
            if sh.any():
                shared[sh] = (t[sh] / max(nprocs, 1) if mod in _NO_SLOWEST
                              else shared_file_time(m, ranks))
            parts.append((np.asarray(key, np.uint64), np.full(len(t), li, np.int64),
                          np.full(len(t), mod, dtype=object), ranks, t, shared))
    out = Cols({name: (np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, dt))
                for i, (name, dt) in enumerate((("key", np.uint64), ("layer", np.int64), ("module", object),
                                                ("rank", np.int64), ("time", np.float64),
                                                ("shared", np.float64)))})
    out.n = len(out["key"])
    keep = np.ones(out.n, bool)
    for li, layer in enumerate(LAYERS):
        rec = log.records.get(_DATA_MODULE.get(layer, ""))
        if rec is not None and len(rec) and rec.file_rec_ids is not None:
            # a library file record whose file has no dataset/variable record is not the top layer
            sel = out["layer"] == li
            keep[sel] = member(out["key"][sel], rec.file_rec_ids)
    if not keep.all():
        out = subset(out, keep)
    return out


def slowest_path(ranks: np.ndarray, time: np.ndarray, shared: np.ndarray, nprocs: int) -> tuple[float, int | None, np.ndarray]:
    """(I/O time, slowest rank, per-rank own time): the slowest rank's time on its own records plus the
    slowest-rank time of every shared record, as libdarshan-util's `agg_time_by_slowest` adds them."""
    own = ranks >= 0
    n = max(nprocs, int(ranks[own].max()) + 1 if own.any() else 1)
    per = np.bincount(ranks[own], weights=time[own], minlength=n)
    slowest = int(per.argmax()) if per.size and per.max() > 0 else None
    return float((per.max() if per.size else 0.0) + shared[~own].sum()), slowest, per


def top_layer_time(rows: Cols, nprocs: int) -> dict:
    """The job's I/O time at the top layer: each file's records at the highest layer that recorded it,
    then the slowest path over ranks (`slowest_path`). Also each layer alone, and which layers the
    slowest path's seconds come from."""
    if not rows.n:
        return {"io_time_s": 0.0, "slowest_rank": None, "layer": None, "by_layer_s": {}, "layers": {},
                "per_rank": np.zeros(max(nprocs, 1))}
    lay = rows["layer"]
    if lay.min() == lay.max():
        # one layer (most logs: POSIX and STDIO): every record is at its file's top
        r, t, s, in_lay = rows["rank"], rows["time"], rows["shared"], lay[:1]
    else:
        uk, _, inv = unique_first_inverse(rows["key"])
        top = np.full(len(uk), len(LAYERS), np.int64)
        np.minimum.at(top, inv, lay)
        at_top = lay == top[inv]
        r, t, s, lay = rows["rank"][at_top], rows["time"][at_top], rows["shared"][at_top], lay[at_top]
        in_lay = distinct(lay)
    io_time, slowest, per = slowest_path(r, t, s, nprocs)
    by_layer = {}
    for li in in_lay:
        sel = lay == li
        own = sel & (r == (slowest if slowest is not None else -2))
        by_layer[LAYERS[li]] = float(t[own].sum() + s[sel & (r < 0)].sum())
    layers = {}
    if len(by_layer) == 1 and len(lay) == rows.n:
        # one layer, every record at the top: that layer's own path is the one above
        layers[next(iter(by_layer))] = {"io_time_s": io_time, "slowest_rank": slowest}
    for li in (distinct(rows["layer"]) if not layers else ()):
        sel = rows["layer"] == li
        lt, lr, _ = slowest_path(rows["rank"][sel], rows["time"][sel], rows["shared"][sel], nprocs)
        layers[LAYERS[li]] = {"io_time_s": lt, "slowest_rank": lr}
    # the layer most of the slowest path's seconds come from (a job's few STDIO log writes do not
    # make it a POSIX job, nor does an MPI-IO open make a STDIO-bound job an MPI-IO one)
    main = max(by_layer, key=lambda k: (by_layer[k], -LAYERS.index(k))) if by_layer else LAYERS[int(lay.min())]
    return {"io_time_s": io_time, "slowest_rank": slowest, "layer": main, "by_layer_s": by_layer,
            "layers": layers, "per_rank": per}


def mibps_per_node(mibps: float | None, nnodes: int | None) -> float | None:
    """Carns et al.'s MiB/s/CN: aggregate MiB/s divided by the number of compute nodes."""
    if mibps is None or not nnodes:
        return None
    return mibps / nnodes


def node_count(log_nodes: int | None, nprocs: int, cores_per_node: int | None) -> tuple[int | None, str | None]:
    """(nnodes, source): from the log when it names its hosts, else ceil(nprocs / cores_per_node)."""
    if log_nodes:
        return int(log_nodes), "log"
    if cores_per_node:
        return int(-(-max(nprocs, 1) // cores_per_node)), "cores_per_node"
    return None, None


def imbalance(values: np.ndarray) -> float | None:
    """(max - min) / max over ranks that did any I/O; None with fewer than 2 such ranks."""
    v = np.asarray(values, dtype=np.float64)
    v = v[v > 0]
    if v.size < 2:
        return None
    return float((v.max() - v.min()) / v.max())


# ---------------------------------------------------------------------------
# mounts

def assign_mounts(names: np.ndarray, mounts: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    """Longest mount-point prefix of each file name (and its fs type); '' when none matches.

    Each distinct name is looked up once, and each directory once: its parent directories are walked up
    in a dict of mount points until one is a mount point or a directory already answered (the files of
    one directory cost one lookup; sorting the names to find the distinct ones cost more, issue 40).
    """
    if not len(names):
        return np.array([], dtype=object), np.array([], dtype=object)
    hits = _mount_hits(names, mounts)
    mp = np.empty(len(hits), dtype=object)
    ft = np.empty(len(hits), dtype=object)
    mp[:] = [h[0] for h in hits]
    ft[:] = [h[1] for h in hits]
    return mp, ft


def _mount_hits(names, mounts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`assign_mounts`' answer as one (mount point, fs type) per name: one dict lookup per name, the walk only
    for a name not answered before."""
    found, dirs, table = _mount_memo(mounts)

    def walk(n):
        hit = None
        # _mount_of's first two steps inline (a file whose directory is answered: most of them)
        if isinstance(n, str) and n.startswith("/") and n != "/":
            hit = table.get(n) or dirs.get(n.rsplit("/", 1)[0] or "/")
        return _mount_of(n, table, dirs) if hit is None else hit

    return _memo_lookup(names, found, walk)


_NO_MOUNT = ("", "")
#: The answers per mount table: a log's modules and rules ask for the same names several times, and the logs of
#: one machine share a table, though not in a row (1,000 public logs: 29 tables, a change of table between 772
#: neighbours; one memo for the last table only walked each log's names again, issue 40). Emptied past
#: _MOUNT_MEMO_NAMES names over all tables.
_MOUNT_MEMO: dict = {}
_MOUNT_MEMO_NAMES = 100_000


def _mount_memo(mounts: list[tuple[str, str]]) -> tuple[dict, dict, dict]:
    """(name -> answer, directory -> answer, mount point -> (point, type)) for this mount table."""
    last = _MOUNT_MEMO.get("last")
    if last is not None and last[0] is mounts:  # the same list object: a log's own table, asked ~5 times a log
        memo = last[1]
    else:
        key = tuple(mounts)
        tables = _MOUNT_MEMO.setdefault("tables", {})
        memo = tables.get(key)
        if memo is None:
            memo = tables[key] = ({}, {}, {point.rstrip("/") or "/": (point, fstype) for point, fstype in mounts})
        _MOUNT_MEMO["last"] = (mounts, memo)
    if len(memo[0]) + len(memo[1]) > _MOUNT_MEMO_NAMES or (
            memo is not _MOUNT_MEMO.get("counted") and sum(len(f) + len(d) for f, d, _ in
                                                           _MOUNT_MEMO["tables"].values()) > _MOUNT_MEMO_NAMES):
        for f, d, _ in _MOUNT_MEMO["tables"].values():
            f.clear()
            d.clear()
    _MOUNT_MEMO["counted"] = memo
    return memo


def _mount_of(name, table: dict, dirs: dict) -> tuple[str, str]:
    """(mount point, fs type) of the longest mount point holding `name` (itself one, or a parent directory)."""
    if not isinstance(name, str) or not name.startswith("/"):
        return _NO_MOUNT
    hit = table.get(name)
    if hit is not None:
        return hit
    if name == "/":
        return _NO_MOUNT
    path = name.rsplit("/", 1)[0] or "/"
    walked = []
    while True:
        hit = dirs.get(path)
        if hit is not None:
            break
        walked.append(path)
        hit = table.get(path)
        if hit is not None:
            break
        if path == "/":
            hit = _NO_MOUNT
            break
        path = path.rsplit("/", 1)[0] or "/"
    for d in walked:
        dirs[d] = hit
    return hit


def mounts_summary(fs: Cols, mounts: list[tuple[str, str]], lustre) -> list[dict]:
    """Files and bytes per mount, with the Lustre layouts (sources.darshan_log.LustreLayouts) of its files."""
    if not fs.n:
        return []
    # each record's (mount point, type) numbered in order of first appearance: integer masks per mount, not a
    # text key per record compared as objects (issue 40)
    hits = _mount_hits(fs["name"], mounts)
    groups: dict[tuple[str, str], int] = {pair: i for i, pair in enumerate(dict.fromkeys(hits))}
    code = np.fromiter(map(groups.__getitem__, hits), np.intp, count=len(hits))
    rows = []
    lu_ids = lustre.id if lustre is not None and len(lustre) else None
    if lu_ids is not None:
        lu_size, lu_count, lu_osts = lustre.stripe_size, lustre.stripe_count, lustre.ost_ids
    for (mount, fstype), i in groups.items():
        sel = code == i
        ids = distinct(fs["id"][sel])
        row = {"mount": mount or None, "fs_type": fstype or None, "files": int(ids.size),
               "bytes_read": int(fs["bytes_read"][sel].sum()), "bytes_written": int(fs["bytes_written"][sel].sum())}
        if lu_ids is not None:
            on = member(lu_ids, ids)
            if on.any():
                row["lustre"] = lustre_summary(lu_ids[on], lu_size[on], lu_count[on], lu_osts[on])
        rows.append(row)
    rows.sort(key=lambda r: -(r["bytes_read"] + r["bytes_written"]))
    return rows


def lustre_summary(ids: np.ndarray, stripe_size: np.ndarray, stripe_count: np.ndarray, ost_ids) -> dict:
    """A mount's Lustre layout from its files' layouts (the CLI's from the log, the dashboard's from the
    per-file table): files, most common stripe size and count, every count, distinct OSTs used."""
    stripe_count = np.asarray(stripe_count, np.int64)
    return {"files": n_distinct(np.asarray(ids)), "stripe_size_bytes": _mode(np.asarray(stripe_size, np.int64)),
            "stripe_count": _mode(stripe_count), "stripe_counts": sorted(set(stripe_count.tolist())),
            "osts": len({o for o in ",".join(str(s) for s in ost_ids).split(",") if o})}


def _mode(v: np.ndarray) -> int | None:
    v = v[v >= 0]
    if not len(v):
        return None
    if len(v) <= SMALL_INTS:
        # the smallest of the most frequent values, as np.unique's sorted counts' argmax gives it
        counts: dict[int, int] = {}
        for x in v.tolist():
            counts[x] = counts.get(x, 0) + 1
        most = max(counts.values())
        return int(min(x for x, k in counts.items() if k == most))
    u, k = np.unique(v, return_counts=True)
    return int(u[np.argmax(k)])


# ---------------------------------------------------------------------------
# the whole job

def characterize(log, *, cores_per_node: int | None = None) -> dict:
    """Everything `ioweather job --json` reports except findings (see stats.findings)."""
    nprocs = max(int(log.nprocs), 1)
    fs = fs_records(log)
    summaries = {m: interface_summary(r, nprocs) for m, r in log.records.items()}
    interfaces = {m: got[0] for m, got in summaries.items()}
    per_file = file_sharing(fs, nprocs)
    pr = rank_sums(fs, nprocs)
    mibps, fs_io_time, _ = carns_mibps(fs, nprocs, pr)
    # Carns' slowest path counts every record (its bytes do too); the imbalance the ranks' data alone
    own = data_rank_sums(fs, nprocs) if fs["stream"].any() else pr  # no stream: the same sums
    span = rank0_io_span(fs)
    top = top_layer_time(layer_rows(log, nprocs), nprocs)
    io_time, slowest = top["io_time_s"], top["slowest_rank"]
    nnodes, nsrc = node_count(len(log.node_names) or None, nprocs, cores_per_node)
    posix = log.records.get("POSIX")
    # interface_summary's, as agg_perf_by_slowest(posix, posix, "POSIX", nprocs) makes it
    darshan_perf = summaries["POSIX"][1] if posix is not None and len(posix) else None
    runtime = float(log.runtime_s)
    frac = io_time / runtime if runtime > 0 else None
    reason = None
    if mibps is None:
        reason = "no I/O time at the storage layer (POSIX/STDIO/DFS/DAOS)"
    elif nnodes is None:
        reason = "node count unknown: the log names no hosts; pass --cores-per-node N"
    perf = {
        "agg_perf_by_slowest_mibps": darshan_perf["agg_perf_by_slowest"] if darshan_perf else None,
        "agg_time_by_slowest_s": darshan_perf["agg_time_by_slowest"] if darshan_perf else None,
        "mibps": mibps,
        # the time the job waited for I/O: each file at its top layer, the slowest rank's path
        "io_time_s": io_time,
        "io_time_layer": top["layer"],
        "io_time_by_layer_s": top["by_layer_s"],
        "layers": top["layers"],
        # Carns et al.'s slowest path at the storage layer: what `mibps` divides by
        "fs_io_time_s": fs_io_time,
        "io_fraction_of_runtime": min(frac, 1.0) if frac is not None else None,
        "io_time_exceeds_runtime": bool(frac is not None and frac > 1.0),
        "mibps_per_node": mibps_per_node(mibps, nnodes) if reason is None else None,
        "mibps_per_node_reason": reason,
        "nnodes_source": nsrc,
        "slowest_rank": slowest,
        # per rank at the storage layer, where every rank's own data files are (a shared MPI-IO record has no ranks)
        "imbalance": {"bytes": imbalance(own["bytes"]), "time": imbalance(own["time"]),
                      "ranks_with_io": int((own["bytes"] > 0).sum()),
                      # the shared files, which Darshan reduces to one record per file: its rank counters
                      "shared": shared_splits(shared_rank_rows(log), nprocs)},
        "rank0_io_span": None if span is None else [log.start_time_s + span[0], log.start_time_s + span[1]],
    }
    return {
        "job": {"jobid": log.jobid, "uid": log.uid, "exe": log.exe, "nprocs": log.nprocs, "nnodes": nnodes,
                "start": ns_to_iso(int(log.start_time_s * 1e9)), "end": ns_to_iso(int(log.end_time_s * 1e9)),
                "runtime_s": runtime, "log_version": log.log_version, "partial_modules": log.partial_modules},
        "interfaces": interfaces,
        "totals": totals(fs),
        "sharing": sharing_summary(per_file),
        "access": access_pattern(posix),
        "perf": perf,
        "mounts": mounts_summary(fs, log.mounts, log.lustre),
    }


FILE_TABLE_COLUMNS = ["module", "id", "name", "nranks", "sharing", "bytes_read", "bytes_written", "reads", "writes",
                      "opens", "read_time_s", "write_time_s", "meta_time_s", "mount", "fs_type",
                      "stripe_count", "stripe_size", "ost_ids"]
#: The per-file table's Lustre layout (None for files without one); absent from Parquet parts
#: written before they were added, which readers must tolerate.
LUSTRE_FILE_COLUMNS = ("stripe_count", "stripe_size", "ost_ids")


#: file_columns' sums per file: (module_rows' column, the table's column)
_FILE_SUMS = (("bytes_read", "bytes_read"), ("bytes_written", "bytes_written"), ("reads", "reads"),
              ("writes", "writes"), ("opens", "opens"), ("read_time", "read_time_s"), ("write_time", "write_time_s"),
              ("meta_time", "meta_time_s"))


def file_columns(log) -> dict[str, np.ndarray]:
    """One row per (file, module) for every generic module: the archive's per-file table, as columns."""
    nprocs = max(int(log.nprocs), 1)
    parts = []
    for mod, rec in log.records.items():
        if not len(rec):
            continue
        m = module_rows(rec)
        ranks = effective_ranks(m["rank"], nprocs)
        uniq, first, inv, nranks, code = _sharing_codes(m["id"], ranks, nprocs)
        part = {"module": np.full(len(uniq), mod, dtype=object), "id": uniq, "name": rec.names[first],
                "nranks": nranks.astype(np.int64), "sharing": _SHARING_NAMES[code]}
        if len(uniq) == len(inv):
            # one record per file: each file's sum is its record's value added to bincount's 0.0 (one gather of
            # the eight columns, not eight bincounts)
            sums = np.array([m[src] for src, _ in _FILE_SUMS])[:, first] + 0.0
            part.update(zip((dst for _, dst in _FILE_SUMS), sums))
        else:
            for src, dst in _FILE_SUMS:
                part[dst] = np.bincount(inv, weights=m[src], minlength=len(uniq))
        parts.append(part)
    if not parts:
        empty = {c: np.zeros(0, dtype=object) for c in FILE_TABLE_COLUMNS}
        empty["id"] = np.zeros(0, np.uint64)
        return empty
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    for k in ("bytes_read", "bytes_written", "reads", "writes", "opens"):
        data[k] = data[k].astype(np.int64)
    data["mount"], data["fs_type"] = assign_mounts(data["name"], log.mounts)
    data.update(_lustre_columns(data["id"], log.lustre))
    return {c: data[c] for c in FILE_TABLE_COLUMNS}


def first_layouts(lustre) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct record ids of the Lustre layouts, sources.darshan_log.LustreLayouts, sorted; the row of
    each id's first record): a file's layout is its first record's."""
    return unique_first(lustre.id)


def _lustre_columns(ids: np.ndarray, lustre) -> dict[str, np.ndarray]:
    """Each row's Lustre stripe count, size and OST list (object arrays, None where the file has none): its
    id's first record's."""
    out = {c: np.full(len(ids), None, dtype=object) for c in LUSTRE_FILE_COLUMNS}
    if lustre is None or not len(lustre):
        return out
    lay_ids, first = first_layouts(lustre)
    pos = np.minimum(np.searchsorted(lay_ids, ids), len(lay_ids) - 1)
    hit = lay_ids[pos] == ids
    src = first[pos[hit]]
    out["stripe_count"][hit] = lustre.stripe_count[src].tolist()
    out["stripe_size"][hit] = lustre.stripe_size[src].tolist()
    out["ost_ids"][hit] = [str(v) for v in lustre.ost_ids[src]]
    return out


#: The job row (store/jobs.py, one per ingested log) <-> `characterize`'s dict: (stored column, dotted
#: path in the characterization, kind). kind "" = the same value both ways; "list" = a list stored
#: comma-joined; "time" = an ISO time stored as unix ns, taken from the log's header at full precision
#: when the row is built (the ISO text has milliseconds), so it maps one way: row -> characterization.
#: The only definition of these names: the ingest builds rows with `row_fields`, the job page and
#: `jobs show` read them back with `characterization_fields`.
ROW_MAP = (
    ("jobid", "job.jobid", ""), ("uid", "job.uid", ""), ("exe", "job.exe", ""), ("nprocs", "job.nprocs", ""),
    ("nnodes", "job.nnodes", ""), ("start_ns", "job.start", "time"), ("end_ns", "job.end", "time"),
    ("runtime_s", "job.runtime_s", ""), ("log_version", "job.log_version", ""),
    ("partial_modules", "job.partial_modules", "list"),
    *((c, f"totals.{c}", "") for c in ("bytes_read", "bytes_written", "files", "read_time_s", "write_time_s",
                                        "meta_time_s")),
    ("unique_files", "sharing.unique", ""), ("shared_files", "sharing.shared", ""),
    ("partially_shared_files", "sharing.partially_shared", ""), ("unique_bytes", "sharing.unique_bytes", ""),
    ("shared_bytes", "sharing.shared_bytes", ""), ("partially_shared_bytes", "sharing.partially_shared_bytes", ""),
    ("agg_perf_by_slowest_mibps", "perf.agg_perf_by_slowest_mibps", ""), ("mibps", "perf.mibps", ""),
    ("io_time_s", "perf.io_time_s", ""), ("io_fraction", "perf.io_fraction_of_runtime", ""),
    ("seq_fraction", "access.seq_fraction", ""),
)


def _get(d: dict, path: str):
    for k in path.split("."):
        if d is None:
            return None
        d = d.get(k)
    return d


def row_fields(ch: dict) -> dict:
    """The job row's columns that come from the characterization `ch` (not the "time" ones)."""
    out = {}
    for col, path, kind in ROW_MAP:
        if kind == "time":
            continue
        v = _get(ch, path)
        out[col] = ",".join(v) if kind == "list" else v
    return out


def characterization_fields(row: dict) -> dict:
    """The parts of `characterize`'s dict a stored job row holds ({"job": {...}, "totals": {...}, ...}),
    under the characterization's names; None stays None (a column the row did not store)."""
    out: dict = {}
    for col, path, kind in ROW_MAP:
        v = row.get(col)
        if kind == "list":
            v = [c for c in (v or "").split(",") if c]
        elif kind == "time":
            v = None if v is None else ns_to_iso(int(v))
        section, key = path.split(".")
        out.setdefault(section, {})[key] = v
    return out
