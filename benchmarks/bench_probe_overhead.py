"""CPU and memory overhead of `ioweather probe run` at a 1 s interval (issue 3).

Runs the real daemon for --seconds, samples its CPU time (user+sys from
/proc/PID/stat) after a warm-up, and subtracts the time spent inside the timed
system calls (the baseline: the measured work itself, from the stored samples).
Targets: < 1 % of one core beyond the timed calls, < 80 MB RSS, no missed period.

    python benchmarks/bench_probe_overhead.py [--seconds 60]
"""

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_peak_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, IOWEATHER_HOME=f"{tmp}/home")
        cmd = [sys.executable, "-m", "ioweather"]
        subprocess.run(cmd + ["probe", "init", f"{tmp}/p", "--file-size", "256MiB", "--pool", "100"], env=env,
                       check=True, capture_output=True)
        proc = subprocess.Popen(cmd + ["probe", "run", f"{tmp}/p", "--interval", "1s", "-q"], env=env,
                                stderr=subprocess.DEVNULL)
        time.sleep(args.warmup)
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        start_ns = time.time_ns()
        time.sleep(args.seconds)
        c1, t1 = cpu_seconds(proc.pid), time.monotonic()
        end_ns = time.time_ns()
        rss = rss_peak_mb(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        con = sqlite3.connect(f"{tmp}/home/ioweather.sqlite")
        timed, n = con.execute("SELECT sum(duration_ns), count(*) FROM probe_samples WHERE start_ns BETWEEN ? AND ?",
                               (start_ns, end_ns)).fetchone()
        starts = [r[0] for r in con.execute(
            "SELECT start_ns FROM probe_samples WHERE op='data_write' AND start_ns BETWEEN ? AND ? ORDER BY start_ns",
            (start_ns, end_ns))]
    wall = t1 - t0
    used = c1 - c0
    beyond = max(0.0, used - (timed or 0) / 1e9)
    gaps = [(b - a) / 1e9 for a, b in zip(starts, starts[1:])]
    missed = sum(1 for g in gaps if g > 1.5)
    print(f"probe at 1 s for {wall:.0f} s: CPU {used:.3f} s = {100 * used / wall:.2f} % of a core; "
          f"inside timed calls {timed / 1e9:.3f} s; beyond them {100 * beyond / wall:.2f} % (target < 1 %); "
          f"peak RSS {rss:.0f} MB (target < 80); {n} samples; missed periods {missed}; "
          f"max start-to-start gap {max(gaps):.3f} s")


if __name__ == "__main__":
    main()
