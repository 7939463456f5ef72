"""How often does each significance h recover the true number of classes? (docs/factors.md, "Choosing h")

Not a speed benchmark: a validation study of the one constant METHODS.md 2.3 leaves to
measurement. Random mixtures of 2-4 Gamma components (modes 3-10x apart, Gamma shapes
10-80, weights >= 10 %, every third mixture with one minor class of 3.5 %), with 0, 1,
2 or 5 % extreme values log-uniform at 10-1000x the slowest mode, at N = 3k, 30k, 300k.

    .venv/bin/python benchmarks/study_factors_significance.py [SEED] [TRIALS]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from factors_synthetic import mixture  # noqa: E402

from ioweather.stats.factors import analyse  # noqa: E402

HS = [0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05]


def main(seed: int = 1, trials: int = 360) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for trial in range(trials):
        k = int(rng.integers(2, 5))
        minor = trial % 3 == 0
        w = np.maximum(rng.dirichlet(np.ones(k) * 2), 0.1)
        if minor:
            j = rng.integers(0, k)
            w[j] = 0
            w = w / w.sum() * 0.965
            w[j] = 0.035
        w /= w.sum()
        modes = [1e-6 * 10 ** rng.uniform(0, 1)]
        for _ in range(k - 1):
            modes.append(modes[-1] * rng.uniform(3, 10))
        comps = [(w[i], modes[i], s) for i, s in enumerate(rng.uniform(10, 80, k))]
        tail = [0, 0.01, 0.02, 0.05][trial % 4]
        n = [3000, 30000, 300000][(trial // 4) % 3]
        d, _ = mixture(rng, comps, n, tail=tail)
        for h in HS:
            a = analyse(d, significance=h)
            rows.append(dict(h=h, minor=minor, tail=tail, n=n, right=len(a.maxima_s) == k,
                             outlier_err=abs(a.outlier_fraction - tail)))
    df = pd.DataFrame(rows)
    print(df.groupby("h").agg(classes_right=("right", "mean"), outlier_err_median=("outlier_err", "median"),
                              outlier_err_p90=("outlier_err", lambda e: e.quantile(0.9))).round(4).to_string())
    print("\nclasses right by (minor class present, tail share):")
    print(df.pivot_table(index="h", columns=["minor", "tail"], values="right", aggfunc="mean").round(2).to_string())
    print("\nclasses right by N:")
    print(df.pivot_table(index="h", columns="n", values="right", aggfunc="mean").round(2).to_string())


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
