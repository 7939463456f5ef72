"""Capacity and inodes: statvfs of mounted file systems, and `lfs df` per OST/MDT on Lustre.

statvfs gives one number per mount (f_blocks/f_bfree/f_bavail times f_frsize, f_files,
f_ffree). On Lustre the interesting level is the target: `lfs df` (blocks) and `lfs df -i`
(inodes) list every OST and MDT, which is where a full OST shows up long before the file
system looks full. The parser also reads the archives pytokio keeps of repeated `lfs df` runs,
where each snapshot starts with `BEGIN <unix seconds>`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable

from ioweather.errors import os_error_reason
from ioweather.sources.mounts import parse_mounts
from ioweather.sources.telemetry.base import GAUGE, Sample, Source, SourceError, lustre_fsname, read_text

# File systems worth watching; pseudo file systems (proc, tmpfs, overlay, ...) are not storage.
STORAGE_FSTYPES = {"lustre", "nfs", "nfs4", "gpfs", "xfs", "ext4", "ext3", "btrfs", "zfs", "beegfs", "cephfs",
                   "ceph", "fuse.ceph", "panfs", "wekafs", "orangefs", "pvfs2", "fuse.glusterfs", "glusterfs"}


def parse_lfs_df(text: str, skipped: list | None = None) -> list[tuple[int | None, dict[str, dict[str, int]]]]:
    """`lfs df` / `lfs df -i` output -> [(unix seconds or None, {target: {metric: value}})].

    Blocks give capacity_bytes, free_bytes (total - used: what the target still holds) and
    avail_bytes (what non-root users may still write); inodes give files_total and files_free.
    A UUID too long for its column is printed alone with the numbers on the next line.
    Lines that are none of these (an inactive target, garbage) are appended to `skipped` as
    (line number, text) when it is given.
    """
    snapshots: list[tuple[int | None, dict[str, dict[str, int]]]] = []
    current: dict[str, dict[str, int]] = {}
    when: int | None = None
    inodes = False
    pending: str | None = None

    def flush():
        nonlocal current
        if current:
            snapshots.append((when, current))
        current = {}

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        f = line.split()
        if f[0] == "BEGIN" and len(f) == 2 and f[1].isdigit():
            flush()
            when = int(f[1])
            continue
        if f[0] == "UUID":
            inodes = "Inodes" in f
            continue
        if line.startswith("filesystem summary") or line.startswith("filesystem_summary"):
            continue
        if pending is not None and f[0].isdigit():
            f = [pending] + f
        pending = None
        if len(f) == 1 and f[0].endswith("_UUID"):
            pending = f[0]
            continue
        if len(f) < 5 or not f[0].endswith("_UUID") or not all(x.isdigit() for x in f[1:4]):
            if skipped is not None:  # "OST0003 : inactive device" and the like
                skipped.append((lineno, line))
            continue
        target = f[0][: -len("_UUID")]
        total, used, free = int(f[1]), int(f[2]), int(f[3])
        m = current.setdefault(target, {})
        if inodes:
            m["files_total"], m["files_free"] = total, free
        else:
            m["capacity_bytes"] = total * 1024
            m["free_bytes"] = (total - used) * 1024
            m["avail_bytes"] = free * 1024
    flush()
    return snapshots


def storage_mounts(mounts_text: str) -> list[tuple[str, str]]:
    """[(mount point, fstype)] of storage file systems in /proc/self/mounts."""
    return [(m.point, m.fs_type) for m in parse_mounts(mounts_text) if m.fs_type in STORAGE_FSTYPES]


class Capacity(Source):
    name = "capacity"
    description = "capacity and inodes: statvfs of storage mounts, `lfs df` per OST/MDT"

    def __init__(self, *args, mounts: Iterable[str] | None = None, lfs_timeout_s: float = 10.0, **kw):
        super().__init__(*args, **kw)
        self.mounts = list(mounts) if mounts else None
        self.lfs_timeout_s = lfs_timeout_s

    def _mounts(self) -> list[tuple[str, str]]:
        if self.mounts is not None:
            return [(m, "") for m in self.mounts]
        if str(self.root) != "/":
            return []  # a --proc-root tree describes another machine: its mount points are not here
        try:
            return storage_mounts(read_text(self.path("proc/self/mounts")))
        except OSError:
            return []

    def available(self) -> bool:
        return bool(self._mounts())

    def collect(self) -> list[Sample]:
        mounts = self._mounts()
        if not mounts:
            raise SourceError("no storage file system mounted (give --mounts to watch some)")
        out = []
        lustre = False
        for mount, fstype in mounts:
            lustre = lustre or fstype == "lustre"
            try:
                st = os.statvfs(mount)
            except OSError as e:
                self.warn(f"statvfs {mount}: {os_error_reason(e, mount)}")
                continue
            target = f"{self.host}:{mount}"
            out += [Sample(target, "capacity_bytes", st.f_blocks * st.f_frsize, GAUGE),
                    Sample(target, "free_bytes", st.f_bfree * st.f_frsize, GAUGE),
                    Sample(target, "avail_bytes", st.f_bavail * st.f_frsize, GAUGE),
                    Sample(target, "files_total", st.f_files, GAUGE),
                    Sample(target, "files_free", st.f_ffree, GAUGE)]
        if lustre and shutil.which("lfs"):
            out += self._lfs_df()
        return out

    def _lfs_df(self) -> list[Sample]:
        out = []
        for args in (["lfs", "df"], ["lfs", "df", "-i"]):
            try:
                proc = subprocess.run(args, capture_output=True, text=True, timeout=self.lfs_timeout_s)
            except subprocess.TimeoutExpired:
                self.warn(f"`{' '.join(args)}` did not answer within {self.lfs_timeout_s:g} s")
                continue
            if proc.returncode != 0 and not proc.stdout:
                self.warn(f"`{' '.join(args)}` failed: {proc.stderr.strip()[:200]}")
                continue
            for _, targets in parse_lfs_df(proc.stdout):
                for target, metrics in targets.items():
                    out += [Sample(target, m, v, GAUGE, lustre_fsname(target)) for m, v in metrics.items()]
        return out
