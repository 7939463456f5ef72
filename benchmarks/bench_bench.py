"""Cost of `ioweather bench`: the runner's own overhead beyond fio, and `bench summary` over a long history.

overhead: `services.bench.runs.run` of one tiny motif (fpp-write, 1 MiB, 1 task) in this process, --runs
times; the runner's own time = total - the time spent waiting for fio (its subprocess). The command as
people run it (`python -m ioweather bench run`) is also timed, start-up included.

memory: the real runner process (`python -m ioweather bench run`, every default motif, real fio) is
watched through /proc/PID/status: its VmHWM (peak resident set), read every few ms until it exits,
against the same reading of `ioweather --version` (the CLI's floor). wait4's ru_maxrss of the same
process is printed beside it (it also covers fio, reaped by the runner).

summary: --years x 365 days x 3 runs a day x 10 motifs stored (synthetic durations), then
`services.bench.runs.summary` (from the per-series aggregates the store keeps) against the baseline of
summarizing the whole history in memory (`stats.bench.summarize` over every stored row, the way the
summary worked before), and the `bench summary --json` command against `ioweather --version`
(wall and CPU: the machine is shared).

    .venv/bin/python benchmarks/bench_bench.py [--runs 5] [--years 10] [--only overhead|memory|summary]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ioweather.config import Settings
from ioweather.services.bench import runs as svc
from ioweather.stats import bench as sb
from ioweather.store import bench as bstore
from ioweather.store import open_store


def overhead(home: Path, runs: int) -> None:
    store = open_store(Settings.resolve(home))
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        own = []
        for _ in range(runs):
            out = svc.run(store, ["fpp-write"], d, size=1 << 20, tasks=1)
            own.append(out["total_s"] - out["fio_s"])
        walls = []
        env = dict(os.environ, IOWEATHER_HOME=str(home))
        for _ in range(runs):
            t = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "ioweather", "bench", "run", "fpp-write", "--dir", d,
                                "--size", "1MiB", "--tasks", "1", "--json"], capture_output=True, text=True, env=env)
            wall = time.perf_counter() - t
            walls.append(wall - json.loads(p.stdout)["fio_s"])
    print(f"runner overhead beyond fio, in process: median {np.median(own) * 1000:.0f} ms, max {max(own) * 1000:.0f} ms "
          f"over {runs} runs")
    print(f"`bench run` command wall minus fio (Python start-up included): median {np.median(walls):.2f} s, "
          f"max {max(walls):.2f} s")


def _vm_hwm_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def watched(args: list[str], env: dict) -> tuple[int, int, float, int]:
    """(peak VmHWM KiB seen in /proc, wait4's ru_maxrss KiB, wall s, exit code) of `python -m ioweather ARGS`
    (of `python ARGS` when ARGS starts with -c)."""
    t = time.perf_counter()
    argv = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "ioweather", *args]
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    hwm = 0
    while True:
        v = _vm_hwm_kib(p.pid)  # VmHWM only grows: the last reading before the exit is the peak so far
        if v is not None:
            hwm = max(hwm, v)
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.003)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode()
    p.stderr.close()
    if p.returncode != 0:
        raise SystemExit(f"ioweather {' '.join(args)} failed: {err}")
    return hwm, ru.ru_maxrss, time.perf_counter() - t, p.returncode


def memory(home: Path, repeat: int) -> None:
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    floor = [watched(["--version"], env)[0] for _ in range(repeat)]
    got = []
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        for _ in range(repeat):
            got.append(watched(["bench", "run", "--dir", d, "--size", "1MiB", "--tasks", "2", "--md-files", "16"], env))
        # the runner without the CLI: its service, store and fio source, as `bench run` calls them; the
        # difference to the command is what every command module imports when the CLI registers it
        code = ("from ioweather.config import Settings; from ioweather.services import bench as svc; "
                "from ioweather.store import open_store; "
                f"svc.run(open_store(Settings.resolve({str(home)!r})), [], {d!r}, size=1 << 20, tasks=2, md_files=16)")
        bare = [watched(["-c", code], env) for _ in range(repeat)]
        # the command with one module left out of the CLI (`ioweather export`, whose registration imports
        # pandas for every command since b071c9f): what the runner costs when no command module loads pandas
        no_export = ("import sys; sys.modules['ioweather.commands.export'] = None; from ioweather.cli import main; "
                     f"sys.argv = ['ioweather', 'bench', 'run', '--dir', {d!r}, '--size', '1MiB', '--tasks', '2', "
                     "'--md-files', '16']; main()")
        cli_no_export = [watched(["-c", no_export], env) for _ in range(repeat)]
        plain = [watched(["-c", "pass"], env)[0] for _ in range(repeat)]
    hwm = [g[0] for g in got]
    print(f"runner peak RSS (VmHWM of `ioweather bench run`, all 7 motifs, real fio, {repeat} runs): max "
          f"{max(hwm) / 1024:.1f} MiB, min {min(hwm) / 1024:.1f} MiB; `ioweather --version` {max(floor) / 1024:.1f} MiB "
          f"-> {max(hwm) / max(floor):.2f}x the CLI floor; wait4 ru_maxrss (runner and fio) max "
          f"{max(g[1] for g in got) / 1024:.1f} MiB")
    print(f"the runner's own modules (`services.bench.runs.run` in `python -c`, same motifs): VmHWM max "
          f"{max(b[0] for b in bare) / 1024:.1f} MiB; bare `python -c pass` {max(plain) / 1024:.1f} MiB")
    print(f"`ioweather bench run` with `ioweather export` left out of the CLI: VmHWM max "
          f"{max(b[0] for b in cli_no_export) / 1024:.1f} MiB")


def summary(home: Path, years: int) -> None:
    store = open_store(Settings.resolve(home))
    rng = np.random.default_rng(1)
    n_days = years * 365
    t0 = 1_262_304_000 * 10**9
    t = time.perf_counter()
    batch = []
    for m in range(10):
        motif = f"motif{m}"
        for day in range(n_days):
            for k in range(3):
                start = t0 + (day * 86400 + k * 28800) * 10**9
                dur = 60 * (1 + rng.gamma(1.5, 0.5))
                batch.append({"run_id": f"{motif}-{day}-{k}", "motif": motif, "fs": "scratch", "source": "fio",
                              "start_ns": start, "end_ns": start + int(dur * 1e9), "params": {},
                              "results": [{"direction": "write" if m % 2 else "read", "bytes": 10**11,
                                           "duration_s": dur, "bw_bps": 1e11 / dur}]})
        bstore.put_runs(store, batch)
        batch = []
    n = 10 * n_days * 3
    print(f"stored {n:,} runs in {time.perf_counter() - t:.1f} s")
    times, base = [], []
    for _ in range(3):
        t = time.perf_counter()
        rows = svc.summary(store)
        times.append(time.perf_counter() - t)
        t = time.perf_counter()
        ref = sb.summarize(bstore.results_frame(store, columns=["motif", "direction", "fs", "start_ns", "duration_s",
                                                                 "bw_bps"]))
        base.append(time.perf_counter() - t)
    assert sum(r["runs"] for r in rows) == n == sum(r["runs"] for r in ref)
    assert all(math.isclose(a["mean_s"], b["mean_s"], rel_tol=1e-9) for a, b in zip(rows, ref))
    env = dict(os.environ, IOWEATHER_HOME=str(home))
    cmd = [command(["bench", "summary", "--json"], env) for _ in range(3)]
    floor = [command(["--version"], env) for _ in range(3)]
    no_export = [command(["-c", "import sys; sys.modules['ioweather.commands.export'] = None; "
                                "from ioweather.cli import main; sys.argv = ['ioweather', 'bench', 'summary', '--json']; "
                                "main()"], env) for _ in range(3)]
    print(f"summary over {n:,} runs ({years} years x 3 a day x 10 motifs): service min {min(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms; baseline (whole history in memory) min {min(base):.2f} s -> "
          f"{min(base) / min(times):.0f}x faster")
    print(f"`bench summary --json` command: wall min {min(c[0] for c in cmd):.2f} s, max {max(c[0] for c in cmd):.2f} s, "
          f"CPU min {min(c[1] for c in cmd):.2f} s; `ioweather --version` wall min {min(f[0] for f in floor):.2f} s, "
          f"CPU min {min(f[1] for f in floor):.2f} s (start-up: the difference is the summary, its imports and the store); "
          f"with `ioweather export` left out of the CLI (it loads pandas): wall min {min(c[0] for c in no_export):.2f} s, "
          f"CPU min {min(c[1] for c in no_export):.2f} s")


def command(args: list[str], env: dict) -> tuple[float, float]:
    """(wall s, CPU s of the child) of `python -m ioweather ARGS`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    argv = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "ioweather", *args]
    p = subprocess.run(argv, capture_output=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, p.stderr
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--years", type=int, default=10)
    ap.add_argument("--only", choices=["overhead", "memory", "summary"], default=None)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as h:
        if a.only in (None, "overhead"):
            overhead(Path(h) / "a", a.runs)
        if a.only in (None, "memory"):
            memory(Path(h) / "c", a.runs)
        if a.only in (None, "summary"):
            summary(Path(h) / "b", a.years)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
