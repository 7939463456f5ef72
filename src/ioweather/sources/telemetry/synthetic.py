"""A Lustre-server-like /proc tree written to disk: for benchmarks, tests, and trying `collect`
without a Lustre server (`ioweather collect --proc-root DIR --sources lustre`).

The files have the exact layout and line format of a Lustre 2.x OSS/MDS (compare
../shared/data/lustre/2.12.9_12); `advance` rewrites the counters as if the targets had moved
data, so consecutive collector ticks see real changes.
"""

from __future__ import annotations

import os
from pathlib import Path

STATS = """snapshot_time             {t:.9f} secs.nsecs
read_bytes                {rops} samples [bytes] 4096 1048576 {rbytes}
write_bytes               {wops} samples [bytes] 4096 1048576 {wbytes}
create                    33 samples [reqs]
destroy                   20 samples [reqs]
statfs                    1626647 samples [reqs]
"""
MD_STATS = """snapshot_time             {t:.9f} secs.nsecs
open                      {n} samples [reqs]
close                     {n} samples [reqs] 1 1 {n}
getattr                   {g} samples [reqs]
statfs                    1525009 samples [reqs]
"""


def _write(path: Path, text: str) -> None:
    """Replace atomically: the kernel's proc files are snapshots, a reader never sees half of one."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write_ost(root: Path, name: str, read_bytes: int, write_bytes: int, t: float = 0.0,
              kbytes_total: int = 213070643200, kbytes_free: int = 200862813184) -> None:
    d = Path(root) / "proc/fs/lustre/obdfilter" / name
    d.mkdir(parents=True, exist_ok=True)
    _write(d / "stats", STATS.format(t=t, rops=read_bytes // 1048576, rbytes=read_bytes,
                                     wops=write_bytes // 1048576, wbytes=write_bytes))
    s = Path(root) / "sys/fs/lustre/obdfilter" / name
    s.mkdir(parents=True, exist_ok=True)
    for fname, value in (("kbytestotal", kbytes_total), ("kbytesfree", kbytes_free), ("kbytesavail", kbytes_free),
                         ("filestotal", 196968431), ("filesfree", 196155091)):
        _write(s / fname, f"{value}\n")


def write_mdt(root: Path, name: str, opens: int, t: float = 0.0) -> None:
    d = Path(root) / "proc/fs/lustre/mdt" / name
    d.mkdir(parents=True, exist_ok=True)
    _write(d / "md_stats", MD_STATS.format(t=t, n=opens, g=2 * opens))


def make_tree(root: Path, n_osts: int, fs: str = "synth", n_mdts: int = 1) -> list[str]:
    """Write n_osts OSTs and n_mdts MDTs; returns the target names."""
    names = []
    for i in range(n_osts):
        names.append(f"{fs}-OST{i:04x}")
        write_ost(root, names[-1], 0, 0)
    for i in range(n_mdts):
        names.append(f"{fs}-MDT{i:04x}")
        write_mdt(root, names[-1], 0)
    return names


def advance(root: Path, names: list[str], step: int, t: float = 0.0) -> None:
    """Counters after `step` ticks: OST i (its index) has read i MiB and written 2*i MiB per tick."""
    for name in names:
        i = int(name[-4:], 16)
        if "-OST" in name:
            write_ost(root, name, step * i * 1048576, step * 2 * i * 1048576, t)
        else:
            write_mdt(root, name, step * 10, t)
