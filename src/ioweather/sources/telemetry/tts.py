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

from collections.abc import Iterator

import numpy as np

from ioweather.errors import UserError
from ioweather.sources.telemetry.base import AMOUNT, GAUGE, Wide

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


def _columns(ds) -> list[str]:
    cols = ds.attrs.get("columns")
    if cols is None:
        return [f"column{i}" for i in range(ds.shape[1])]
    return [c.decode() if isinstance(c, bytes) else str(c) for c in cols]


def _values(ds) -> np.ndarray:
    v = np.asarray(ds[...], dtype=np.float64)
    return np.where((v == 0) & np.signbit(v), np.nan, v)  # -0.0: never filled


class TtsFile:
    def __init__(self, path: str):
        import h5py

        try:
            self.h5 = h5py.File(path, "r")
        except FileNotFoundError:
            raise UserError(f"TTS file {path!r} not found") from None
        except OSError as e:
            raise UserError(f"{path} is not an HDF5 file ({e})") from None
        self.path = path
        self.skipped: list[str] = []

    def close(self) -> None:
        self.h5.close()

    def groups(self) -> list[str]:
        import h5py

        return [name for name, g in self.h5.items() if isinstance(g, h5py.Group) and "timestamps" in g]

    def chunks(self) -> Iterator[tuple[str, list[Wide]]]:
        """(group name, [Wide, ...]) per group that has timestamps."""
        groups = self.groups()
        if not groups:
            raise UserError(f"{self.path} is not a TOKIO time series file (no group with 'timestamps')")
        for gname in groups:
            g = self.h5[gname]
            t = np.asarray(g["timestamps"][...], dtype=np.int64)
            if t.size == 0:
                continue
            step = float(np.median(np.diff(t))) if t.size > 1 else None
            times = t * 1_000_000_000
            out: list[Wide] = []
            for name, ds in g.items():
                if name == "timestamps" or getattr(ds, "ndim", 0) != 2 or ds.shape[0] != t.size:
                    continue
                cols = _columns(ds)
                if gname == "fullness":
                    continue  # combined below: used and total -> capacity and free
                if name in DATASETS:
                    metric, kind, per_second = DATASETS[name]
                elif gname.startswith("md") and name in MD_DATASETS:
                    metric, kind, per_second = f"md_{MD_DATASETS[name]}", AMOUNT, False
                else:
                    self.skipped.append(f"{gname}/{name}")
                    continue
                vals = _values(ds)
                if per_second and step:
                    vals = vals * step
                out.append(Wide(metric, kind, times, cols, vals, step,
                                interval_s=np.full(t.size, step or np.nan) if kind == AMOUNT else None))
            if gname == "fullness":
                out += self._fullness(g, times, step)
            yield gname, out

    def _fullness(self, g, times, step) -> list[Wide]:
        out = []
        if "bytes" in g and "bytestotal" in g:  # KiB used and KiB total
            used, total = _values(g["bytes"]), _values(g["bytestotal"])
            cols = _columns(g["bytestotal"])
            out += [Wide("capacity_bytes", GAUGE, times, cols, total, step, scale=1024.0),
                    Wide("free_bytes", GAUGE, times, cols, total - used, step, scale=1024.0)]
        if "inodes" in g and "inodestotal" in g:
            used, total = _values(g["inodes"]), _values(g["inodestotal"])
            cols = _columns(g["inodestotal"])
            out += [Wide("files_total", GAUGE, times, cols, total, step),
                    Wide("files_free", GAUGE, times, cols, total - used, step)]
        return out
