"""Timing fidelity of the probe's C core (issue 3).

Median latency of a 1-byte read of /dev/zero measured through the C core
(`timed_pread`, called from Python as the probe does) against a plain C loop
compiled with gcc in this same run. Targets: ratio <= 1.3 (issue 3), <= 1.1 (issue 21).

    python benchmarks/bench_probe_timing.py [--n 200000] [--no-rt]

On a shared machine other processes' load moves both medians by 50-100 %; as root the
benchmark therefore runs itself and the C loop under SCHED_FIFO on one CPU (--no-rt: not).

Why the C core stays ~1.2x (measured, issue 21): the gap is the kernel's read path being
cold after the interpreter ran between two calls. A 0-byte pread just before the timed one
warms it (1.06x here), but on NFS that call revalidates the file's attributes, so the timed
read would no longer include what a real first read pays: the probe keeps the honest number.
"""

import argparse
import os
import subprocess
import tempfile

import numpy as np
from realtime import realtime

from ioweather._native import probe_core

C_LOOP = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static long long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static int cmp(const void *a, const void *b) { long long x = *(long long *)a, y = *(long long *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int n = atoi(argv[1]); char c; long long *d = malloc(sizeof(long long) * n);
    int fd = open("/dev/zero", O_RDONLY);
    for (int i = 0; i < n; i++) { long long t0 = ns(); if (pread(fd, &c, 1, 0) != 1) return 1; d[i] = ns() - t0; }
    qsort(d, n, sizeof(long long), cmp);
    printf("%lld\n", d[n / 2]);
    return 0;
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--no-rt", action="store_true", help="do not ask for SCHED_FIFO on one CPU")
    args = ap.parse_args()
    rt = "normal scheduling" if args.no_rt else realtime()
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = os.path.join(tmp, "loop.c"), os.path.join(tmp, "loop")
        open(src, "w").write(C_LOOP)
        subprocess.run(["gcc", "-O2", "-o", exe, src], check=True)
        fd = os.open("/dev/zero", os.O_RDONLY)
        buf = bytearray(1)
        results = []
        for _ in range(5):  # interleave rounds so machine noise hits both sides alike
            c_median = int(subprocess.run([exe, str(args.n)], capture_output=True, text=True, check=True).stdout)
            core = np.fromiter((probe_core.timed_pread(fd, buf, 0)[1] for _ in range(args.n)), np.int64, args.n)
            results.append((float(np.median(core)), c_median))
        os.close(fd)
    core_med = np.median([r[0] for r in results])
    c_med = np.median([r[1] for r in results])
    ratio = core_med / c_med
    print(f"1-byte pread(/dev/zero), n={args.n} x 5 rounds: C core median {core_med:.0f} ns, "
          f"plain C loop median {c_med:.0f} ns, ratio {ratio:.2f}, {rt}; target <= 1.3 (issue 3) "
          f"{'PASS' if ratio <= 1.3 else 'FAIL'}, <= 1.1 (issue 21) {'PASS' if ratio <= 1.1 else 'FAIL'}")


if __name__ == "__main__":
    main()
