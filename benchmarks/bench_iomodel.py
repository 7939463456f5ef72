"""io-model timing overhead: median 1-byte /dev/zero read through `ioweather iomodel run`
against a bare C loop (clock_gettime / read / clock_gettime) compiled here with gcc.

Target (issue 4): ratio <= 1.3. Both are run alternately, ROUNDS times each, in the
same process tree, so machine noise hits both; the reported median is the median of
the per-round medians.

Second part, when strace is installed: system calls per operation, counted
differentially (a run of 2N ops minus a run of N ops, so start-up calls cancel):
the bare loop and the benchmark must both show exactly 1 (the read) per op.

    .venv/bin/python benchmarks/bench_iomodel.py [--ops 200000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BARE_C = r"""
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int64_t ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static int cmp(const void *a, const void *b) { int64_t x = *(const int64_t *)a, y = *(const int64_t *)b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    long n = atol(argv[1]);
    int fd = open("/dev/zero", O_RDONLY);
    static char buf[4096];
    int64_t *d = malloc(n * sizeof *d);
    for (long i = 0; i < n; i++) d[i] = 0;           /* touch the result array first, as iomodel does */
    for (long i = 0; i < n; i++) {
        int64_t t0 = ns();
        if (read(fd, buf, 1) != 1) return 1;
        int64_t t1 = ns();
        d[i] = t1 - t0;
    }
    qsort(d, n, sizeof *d, cmp);
    printf("%.1f\n", n % 2 ? (double)d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2.0);
    return 0;
}
"""


def iomodel_cmd(out: Path, ops: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ioweather", "iomodel", "run", "--cache", "discard", "--op", "R", "--sizes", "1",
            "--mem-layout", "off0", "--file-layout", "seq", "--mem-size", "1MiB", "--repeats", str(ops),
            "--seed", "1", "--out", str(out), "--json", *extra]


def iomodel_median_ns(tmp: Path, ops: int, *extra: str) -> float:
    p = subprocess.run(iomodel_cmd(tmp / "b.parquet", ops, *extra), capture_output=True, text=True, check=True,
                       env={**os.environ, "IOWEATHER_HOME": str(tmp / "home")})
    return json.loads(p.stdout)["configurations"][0]["median_s"] * 1e9


def bare_median_ns(exe: Path, ops: int) -> float:
    return float(subprocess.run([str(exe), str(ops)], capture_output=True, text=True, check=True).stdout)


def syscalls(cmd: list[str], tmp: Path) -> int:
    """Total system calls of a command and its children (strace -f -c)."""
    summary = tmp / "strace.txt"
    subprocess.run(["strace", "-f", "-c", "-o", str(summary), *cmd], capture_output=True, check=True,
                   env={**os.environ, "IOWEATHER_HOME": str(tmp / "home")})
    for line in summary.read_text().splitlines():
        if line.rstrip().endswith("total"):
            return int(line.split()[3])
    raise RuntimeError(f"no total in {summary}")


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    src = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    return {"cpu": cpu, "cpus": os.cpu_count(), "kernel": os.uname().release,
            "clocksource": src.read_text().strip() if src.exists() else "?",
            "loadavg": open("/proc/loadavg").read().split()[:3]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    gcc = shutil.which("gcc")
    if not gcc:
        print("gcc not found: cannot build the baseline", file=sys.stderr)
        return 2
    print("machine:", json.dumps(machine()))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "bare.c").write_text(BARE_C)
        exe = tmp / "bare"
        subprocess.run([gcc, "-O2", "-std=gnu11", "-o", str(exe), str(tmp / "bare.c")], check=True)
        bare, tool, seek = [], [], []
        for _ in range(args.rounds):
            bare.append(bare_median_ns(exe, args.ops))
            tool.append(iomodel_median_ns(tmp, args.ops))
            seek.append(iomodel_median_ns(tmp, args.ops, "--time-seek"))
        b, t, s = statistics.median(bare), statistics.median(tool), statistics.median(seek)
        print(f"1-byte /dev/zero read, {args.ops} ops x {args.rounds} rounds (median of round medians)")
        print(f"  bare C loop              {b:8.1f} ns   rounds: {', '.join(f'{x:.0f}' for x in bare)}")
        print(f"  iomodel run              {t:8.1f} ns   rounds: {', '.join(f'{x:.0f}' for x in tool)}")
        print(f"  iomodel run --time-seek  {s:8.1f} ns   rounds: {', '.join(f'{x:.0f}' for x in seek)}")
        print(f"ratio iomodel / bare C = {t / b:.3f}   (target <= 1.3)  {'OK' if t / b <= 1.3 else 'FAIL'}")
        print(f"ratio iomodel --time-seek / bare C = {s / b:.3f}   (information: lseek + offset inside the region)")
        ok = t / b <= 1.3
        if shutil.which("strace"):
            n = 20_000
            per_op_bare = (syscalls([str(exe), str(2 * n)], tmp) - syscalls([str(exe), str(n)], tmp)) / n
            per_op_tool = (syscalls(iomodel_cmd(tmp / "s.parquet", 2 * n), tmp)
                           - syscalls(iomodel_cmd(tmp / "s.parquet", n), tmp)) / n
            print(f"system calls per op (strace -f -c, run of {2 * n} minus run of {n}): "
                  f"bare C {per_op_bare:.4f}, iomodel {per_op_tool:.4f}")
            ok = ok and abs(per_op_tool - 1) < 0.01
        else:
            print("strace not installed: system-call count skipped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
