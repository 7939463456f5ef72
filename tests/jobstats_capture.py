"""An `lctl get_param obdfilter.*.job_stats mdt.*.job_stats` capture of a center's size: `jobs` job ids
on `osts` OSTs and one MDT, in the layout of the real job_stats files (Lustre 2.10, the
HewlettPackard/lustre_exporter fixtures in ../shared/testdata/lustre-procfs: `- job_id:`,
`snapshot_time:`, read_bytes/write_bytes with samples, unit, min, max, sum, then one line per
operation with its samples). Used by tests/test_jobstats_scale.py and benchmarks/bench_jobstats.py.

Every job has a row on the MDT and on 1 to 4 OSTs (a file per OST it wrote: Lustre's default
stripe count is 1, and a job's files land on consecutive OSTs from a random one); its bytes are
log-uniform between 4 KiB and 64 GiB per OST, so a target's sums stay below 2^53 (a float64 holds
them exactly: the exposition's numbers are floats). Seeded: the same arguments give the same text.
"""

from __future__ import annotations

import random

OST_OPS = ("getattr", "setattr", "punch", "sync", "destroy", "create", "statfs", "get_info", "set_info", "quotactl")
MDT_OPS = ("open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr", "getxattr",
           "setxattr", "statfs", "sync", "samedir_rename", "crossdir_rename")
SNAPSHOT = 1510782606


def _line(name: str, samples: int, unit: str, mmm: tuple[int, int, int] | None = None) -> str:
    head = f"  {name + ':':<17}{{ samples: {samples:11d}, unit: {unit:>5}"
    if mmm is None:
        return head + " }"
    return head + f", min: {mmm[0]:7d}, max: {mmm[1]:7d}, sum: {mmm[2]:15d} }}"


def _job_id(rng: random.Random, i: int) -> str:
    # Slurm job ids mostly; jobid_var=procname_uid gives `exe.uid` on some sites
    if i % 10 == 9:
        return f"{rng.choice(('cp', 'dd', 'rsync', 'tar', 'python3'))}.{1000 + i}"
    return str(4_200_000 + i)


def _bytes_row(rng: random.Random, busy: bool) -> tuple[int, tuple[int, int, int]]:
    if not busy:
        return 0, (0, 0, 0)
    size = rng.choice((4096, 65536, 1 << 20, 4 << 20))
    n = max(1, int(2 ** rng.uniform(0, 24)))  # up to 16 Mi I/Os of up to 4 MiB: 64 GiB
    lo = min(size, 4096 * rng.randint(1, 4))
    return n, (lo, size, lo + (n - 1) * size)


def capture(jobs: int = 10_000, osts: int = 100, seed: int = 40, fs: str = "ai400") -> str:
    rng = random.Random(seed)
    ids = [_job_id(rng, i) for i in range(jobs)]
    on: list[list[str]] = [[] for _ in range(osts)]
    for job in ids:
        first, width = rng.randrange(osts), min(osts, rng.choice((1, 1, 1, 2, 4)))  # a job is listed once per OST
        for k in range(width):
            on[(first + k) % osts].append(job)
    out: list[str] = []
    for t in range(osts):
        out += [f"obdfilter.{fs}-OST{t:04x}.job_stats=", "job_stats:"]
        for job in on[t]:
            out += [f"- job_id:          {job}", f"  snapshot_time:   {SNAPSHOT + rng.randrange(600)}"]
            for name, busy in (("read_bytes", rng.random() < 0.5), ("write_bytes", rng.random() < 0.8)):
                n, mmm = _bytes_row(rng, busy)
                out.append(_line(name, n, "bytes", mmm))
            out += [_line(op, rng.choice((0, 0, 0, 1, 2, rng.randrange(1000))), "reqs") for op in OST_OPS]
    out += [f"mdt.{fs}-MDT0000.job_stats=", "job_stats:"]
    for job in ids:
        out += [f"- job_id:          {job}", f"  snapshot_time:   {SNAPSHOT + rng.randrange(600)}"]
        out += [_line(op, rng.choice((0, 0, 1, rng.randrange(100_000))), "reqs") for op in MDT_OPS]
    return "\n".join(out) + "\n"
