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
from collections.abc import Callable, Iterator

import h5py
import numpy as np

from ioweather.errors import UserError
from ioweather.files import fd_path, open_regular
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


def _name(c) -> str:
    """bytes, or str with lone surrogates (h5py's escape of bytes that are not UTF-8), as text that
    the store and the JSON output can write."""
    return (c.decode(errors="replace") if isinstance(c, bytes) else str(c)).encode(errors="replace").decode()


def _columns(ds) -> list[str]:
    cols = ds.attrs.get("columns")
    if cols is None:
        return [f"column{i}" for i in range(ds.shape[1])]
    names = [_name(c) for c in np.atleast_1d(cols)]
    if len(names) != ds.shape[1]:
        raise ValueError(f"{ds.name} has {ds.shape[1]} columns but names {len(names)}")
    return names


def _values(ds) -> np.ndarray:
    v = np.asarray(ds[...], dtype=np.float64)
    return np.where((v == 0) & np.signbit(v), np.nan, v)  # -0.0: never filled


# what h5py raises on a file whose structure is damaged or not what pytokio writes
_DAMAGE = (OSError, RuntimeError, KeyError, ValueError, TypeError, IndexError, OverflowError, AttributeError)
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

    def _times(self, g) -> tuple[np.ndarray, np.ndarray]:
        """(unix seconds of the rows kept, which rows): a time an int64 of ns cannot hold is dropped."""
        raw = np.asarray(g["timestamps"][...], dtype=np.float64)
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
            cols = _columns(ds)
            if gname == "fullness":
                continue  # combined below: used and total -> capacity and free
            if name in DATASETS:
                metric, kind, per_second = DATASETS[name]
            elif gname.startswith("md") and name in MD_DATASETS:
                metric, kind, per_second = f"md_{MD_DATASETS[name]}", AMOUNT, False
            else:
                self.skipped.append(_name(f"{gname}/{name}"))
                continue
            vals = _values(ds)[keep]
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
            used, total = _values(g["bytes"])[keep], _values(g["bytestotal"])[keep]
            cols = _columns(g["bytestotal"])
            out += [Wide("capacity_bytes", GAUGE, times, cols, total, step, scale=1024.0),
                    Wide("free_bytes", GAUGE, times, cols, total - used, step, scale=1024.0)]
        if "inodes" in g and "inodestotal" in g:
            used, total = _values(g["inodes"])[keep], _values(g["inodestotal"])[keep]
            cols = _columns(g["inodestotal"])
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
