"""Benchmark: what reading symlink targets (`symlink_target_length`) costs the fsstats walk.

    .venv/bin/python benchmarks/bench_fsstats_readlink.py            # 200 k links vs 200 k files
    .venv/bin/python benchmarks/bench_fsstats_readlink.py --per-dir 500 --dirs 20

Two trees of the same shape under --path: one of symlinks (targets of ~30 bytes, as a
build or software tree has them), one of empty regular files with the same names. Each
is walked in this process by the C walker (warm: one untimed walk first, then the best
of --repeat), with getrusage around the walk. A walk does one fstatat per entry in both
trees; the links tree adds one readlinkat per link, so the difference in CPU time per
entry is the price of the target length. CPU time, not wall time, because the machine
is shared: wall time is reported too. The trees are deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import time
from pathlib import Path


def generate(base: Path, dirs: int, per_dir: int) -> None:
    for kind in ("links", "files"):
        for d in range(dirs):
            p = base / kind / f"d{d:04d}"
            p.mkdir(parents=True)
            fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
            try:
                for i in range(per_dir):
                    name = f"e{i:06d}"
                    if kind == "links":
                        os.symlink(f"../../data/run{i:05d}/output.h5", name, dir_fd=fd)
                    else:
                        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
            finally:
                os.close(fd)


def walk_cost(root: Path, threads: int, repeat: int) -> tuple[float, float, int]:
    """Best wall time and the CPU seconds (user + system) of that walk, and the entries."""
    from ioweather._native import walk_core

    walk_core.walk(os.fsencode(root), time.time_ns(), threads, False, [])  # warm the caches
    best = None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        r = walk_core.walk(os.fsencode(root), time.time_ns(), threads, False, [])
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if best is None or cpu < best[1]:
            best = (wall, cpu, r["entries"])
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dirs", type=int, default=100)
    ap.add_argument("--per-dir", type=int, default=2000)
    ap.add_argument("--path", type=Path, default=Path("/tmp/ioweather-bench-readlink"))
    ap.add_argument("--threads", type=int, default=1, help="1 keeps the CPU accounting simple")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    created = not a.path.exists()
    if created:
        t0 = time.perf_counter()
        generate(a.path, a.dirs, a.per_dir)
        print(f"generated 2 x {a.dirs * a.per_dir:,} entries in {time.perf_counter() - t0:.0f} s", flush=True)
    try:
        links = walk_cost(a.path / "links", a.threads, a.repeat)
        files = walk_cost(a.path / "files", a.threads, a.repeat)
        n = a.dirs * a.per_dir
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {a.threads} thread(s), best of {a.repeat}")
        for name, (wall, cpu, entries) in (("symlinks", links), ("empty files", files)):
            print(f"{name:12s} {entries:,} entries: wall {wall:.3f} s, CPU {cpu:.3f} s = {1e6 * cpu / entries:.2f} us/entry")
        extra = (links[1] - files[1]) / n
        print(f"readlinkat: {1e6 * extra:.2f} us of CPU per symlink; a tree of links costs "
              f"{links[1] / files[1]:.2f} x a tree of files")
    finally:
        if created and not a.keep:
            shutil.rmtree(a.path)


if __name__ == "__main__":
    main()
