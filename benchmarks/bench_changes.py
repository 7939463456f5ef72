"""Change points over a year of 10-minute probe statistics for 100 targets × 6 ops (issue 15).

The series are what `ioweather changes` reads for the probe (interval medians; a year at 10
minutes is 52,560 points), generated here: log-normal noise with a daily cycle and a planted
level shift in every tenth series. Measured: `stats.changepoints.change_points` on all 600 series
(blocks + refinement), against the baseline in the same run: ruptures' exact PELT (its C
KernelCPD, linear kernel) on the full-resolution series, timed on a few series and scaled to 600.
Also checks that every planted shift is found at its interval and nothing else is.

    python benchmarks/bench_changes.py [--targets 100] [--baseline-series 3]
"""

import argparse
import time

import numpy as np

from ioweather.stats.changepoints import PENALTY_PER_LOG_N, change_points

DAY = 86400 * 10**9
STEP = 600 * 10**9


def series(i: int, n: int, t: np.ndarray) -> tuple[np.ndarray, int | None]:
    rng = np.random.default_rng(i)
    x = np.exp(rng.normal(0, 0.1, n)) * (1 + 0.3 * np.sin(2 * np.pi * (t % DAY) / DAY))
    at = None
    if i % 10 == 0:
        at = int(rng.integers(n // 10, 9 * n // 10))
        x[at:] *= 1.5
    return x, at


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--baseline-series", type=int, default=3)
    a = ap.parse_args()
    n = 365 * 144
    t = np.arange(n, dtype=np.int64) * STEP
    data = [series(i, n, t) for i in range(a.targets * 6)]
    t0 = time.perf_counter()
    wrong = 0
    for x, at in data:
        found = [c.index for c in change_points(x, log=True, times_ns=t, period_ns=DAY)]
        if found != ([at] if at is not None else []):
            wrong += 1
            print("  planted", at, "found", found)
    ours = time.perf_counter() - t0

    import ruptures
    from ioweather.stats.changepoints import deseasonalize

    t0 = time.perf_counter()
    for x, _ in data[: a.baseline_series]:
        z = deseasonalize(np.log(x), t, DAY)
        z = (z - z.mean()) / z.std()
        ruptures.KernelCPD(kernel="linear", min_size=6).fit(z.reshape(-1, 1)).predict(pen=PENALTY_PER_LOG_N * np.log(n))
    exact = (time.perf_counter() - t0) / a.baseline_series * len(data)
    print(f"{len(data)} series of {n} points: {ours:.2f} s ({wrong} series with a wrong answer); "
          f"exact PELT on full resolution ~{exact:.0f} s (from {a.baseline_series} series) -> {exact / ours:.0f}x")


if __name__ == "__main__":
    main()
