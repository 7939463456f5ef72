"""Speed of the performance-factor analysis against R, measured in the same run.

1. density + classes + outliers of N durations (`stats.factors.analyse`) vs R's
   `density(log(x), adjust = 2)` alone, timed inside Rscript with system.time (R's
   start-up and data loading excluded); the two curves are compared too.
2. classify N observations against 4 models (`stats.factor_models.classify`) vs the
   literal rule in plain numpy (a prediction matrix, argsort per row, first >= d).

    .venv/bin/python benchmarks/bench_density.py [--n 10000000] [--repeat 3] [--no-rt]

As root it runs itself and R under SCHED_FIFO on one CPU (benchmarks/realtime.py; --no-rt: not).

Targets (issue 4): analysis of 10 M durations < 2 s and faster than R; classify 10 M < 2 s.
Issue 21: the whole analysis >= 3x faster than R's density() alone.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from realtime import realtime

from ioweather.stats.density import r_density
from ioweather.stats.factor_models import FactorModel, Line, Piece, classify
from ioweather.stats.factors import analyse

R_CODE = r"""
a <- commandArgs(TRUE)
x <- readBin(a[1], "double", n = as.integer(a[2]), size = 8, endian = "little")
lx <- log(x)
wall <- cpu <- Inf
for (i in seq_len(as.integer(a[3]))) {
  t <- system.time(d <- density(lx, adjust = 2))
  wall <- min(wall, t[["elapsed"]])
  cpu <- min(cpu, t[["user.self"]] + t[["sys.self"]])
}
writeBin(c(wall, cpu, d$bw, d$y), a[4], size = 8, endian = "little")
"""


def durations(n: int, seed: int = 1) -> np.ndarray:
    """Three classes (0.1 ms, 0.45 ms, 3 ms) and 2 % extreme values at 10-1000x: Fig. 2-like."""
    rng = np.random.default_rng(seed)
    k = rng.choice(3, size=n, p=[0.5, 0.35, 0.15])
    modes = np.array([1e-4, 4.5e-4, 3e-3])[k]
    d = modes * rng.gamma(30.0, 1 / 29.0, n)
    tail = rng.random(n) < 0.02
    d[tail] = 3e-3 * np.exp(rng.uniform(np.log(10), np.log(1000), tail.sum()))
    return d


def best_of(fn, repeat: int) -> tuple[float, float, object]:
    """(best wall s, best CPU s, result): on a shared machine CPU time is the steadier measure."""
    wall = cpu = float("inf")
    out = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu, out


def literal_classify(d: np.ndarray, s: np.ndarray, models) -> np.ndarray:
    """METHODS.md 2.5 as one would first write it in numpy: sort the predictions per row."""
    p = np.stack([m.predict(s) for m in models], axis=1)
    order = np.argsort(p, axis=1, kind="stable")
    ps = np.take_along_axis(p, order, axis=1)
    ok = ps >= d[:, None]
    first = np.argmax(ok, axis=1)
    return np.where(ok.any(axis=1), order[np.arange(len(d)), first], -1)


def four_models() -> list[FactorModel]:
    """The paper's read models (Table 3) plus a made-up discard-rnd."""
    def m(label, small, large):
        return FactorModel(label, {}, Piece(Line(*small), [], 0, 0, 0, 0, 0), Piece(Line(*large), [], 0, 0, 0, 0, 0))

    return [m("discard-R-off0", (2.94e-07, 4.41e-11), (4.75e-07, 7.67e-11)),
            m("discard-R-rnd", (5e-07, 9e-11), (8.7e-07, 1.5e-10)),
            m("cached-R-off0", (8e-06, 4.18e-10), (9.71e-06, 1.44e-10)),
            m("cached-R-rnd", (8.39e-06, 4.91e-10), (1.04e-05, 2.99e-10))]


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    load = os.getloadavg()
    return (f"{cpu}, {os.cpu_count()} cores, load {load[0]:.2f}/{load[1]:.2f}/{load[2]:.2f}; "
            f"Python {platform.python_version()}, numpy {np.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-rt", action="store_true", help="do not ask for SCHED_FIFO on one CPU")
    args = ap.parse_args()
    sched = "normal scheduling" if args.no_rt else realtime()
    n, rep = args.n, args.repeat
    print(f"machine: {machine()}")
    print(f"command: python {' '.join(sys.argv)}; {sched}")
    d = durations(n)

    w_ours, c_ours, a = best_of(lambda: analyse(d), rep)
    logd = np.log(d)
    w_dens, c_dens, ours = best_of(lambda: r_density(logd, adjust=2), rep)
    print(f"analyse (density + classes + outliers), N={n:,}: wall {w_ours:.3f} s, CPU {c_ours:.3f} s; "
          f"{len(a.maxima_s)} classes, outliers {a.outlier_fraction:.4f}")
    print(f"r_density(log(x), adjust = 2) alone: wall {w_dens:.3f} s, CPU {c_dens:.3f} s")

    rscript = shutil.which("Rscript")
    if rscript is None:
        print("Rscript not installed: no R baseline (apt-get install r-base-core)")
    else:
        version = subprocess.run([rscript, "--version"], capture_output=True, text=True).stderr.strip() or \
            subprocess.run([rscript, "--version"], capture_output=True, text=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            src, out, code = Path(tmp) / "x.bin", Path(tmp) / "out.bin", Path(tmp) / "bench.R"
            d.astype("<f8").tofile(src)
            code.write_text(R_CODE)
            subprocess.run([rscript, "--vanilla", str(code), str(src), str(n), str(rep), str(out)], check=True)
            r = np.fromfile(out, dtype="<f8")
        w_r, c_r, bw_r, y_r = r[0], r[1], r[2], r[3:]
        dev = np.abs(ours.y - y_r).max() / y_r.max()
        print(f"R density(log(x), adjust = 2): wall {w_r:.3f} s, CPU {c_r:.3f} s ({version.splitlines()[0]})")
        print(f"  same curve: bandwidth rel. diff {abs(ours.bw - bw_r) / bw_r:.1e}, density max diff {dev:.1e} of max")
        print(f"  ratio R density / ours (wall, CPU): density alone {w_r / w_dens:.1f}x, {c_r / c_dens:.1f}x; "
              f"whole analysis {w_r / w_ours:.1f}x, {c_r / c_ours:.1f}x")

    rng = np.random.default_rng(2)
    sizes = rng.choice([1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20], n).astype(np.float64)
    models = four_models()
    obs = np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), n))
    w_cls, c_cls, got = best_of(lambda: classify(obs, sizes, models), rep)
    w_lit, c_lit, want = best_of(lambda: literal_classify(obs, sizes, models), 1)
    assert (got == want).all(), "classify disagrees with the literal rule"
    print(f"classify N={n:,} against 4 models: wall {w_cls:.3f} s, CPU {c_cls:.3f} s; literal numpy rule: "
          f"wall {w_lit:.3f} s, CPU {c_lit:.3f} s; ratio (wall, CPU) {w_lit / w_cls:.1f}x, {c_lit / c_cls:.1f}x; "
          f"same labels: yes")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
