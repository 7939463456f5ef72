"""Attribution of a month of events against 100,000 jobs (issue 15: < 10 s), and the sweep join against a
naive pandas cross join on a smaller set in the same run."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ioweather.stats import attribution as A

S = 1_000_000_000


def month(n_jobs: int, n_events: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    span = 30 * 86400 * S
    js = rng.integers(0, span, n_jobs)
    je = js + rng.integers(60, 24 * 3600, n_jobs) * S
    es = np.sort(rng.choice(span // (600 * S), n_events, replace=False)) * 600 * S
    return es, es + 600 * S, js, je


def attribute(es, ee, js, je, step=60 * S):
    e, j = A.sweep_join(es, ee, js, je)
    bounds = np.searchsorted(e, np.arange(len(es) + 1))
    for i in range(len(es)):
        sel = j[bounds[i]:bounds[i + 1]]
        edges = np.arange(es[i], ee[i] + 1, step)
        A.event_shares(edges, np.ones(len(edges) - 1), js[sel], je[sel], np.full(len(sel), np.nan))


def main():
    es, ee, js, je = month(100_000, 1_000)
    t = time.perf_counter()
    attribute(es, ee, js, je)
    full = time.perf_counter() - t
    es, ee, js, je = month(10_000, 200)
    t = time.perf_counter()
    A.sweep_join(es, ee, js, je)
    sweep = time.perf_counter() - t
    t = time.perf_counter()
    x = pd.DataFrame({"es": es, "ee": ee}).merge(pd.DataFrame({"js": js, "je": je}), how="cross")
    x = x[(x["js"] < x["ee"]) & (x["je"] > x["es"])]
    naive = time.perf_counter() - t
    print(f"attribution, 1,000 events x 100,000 jobs: {full:.2f} s")
    print(f"join, 200 events x 10,000 jobs: sweep {sweep * 1e3:.1f} ms, pandas cross join {naive * 1e3:.1f} ms "
          f"({naive / sweep:.0f}x)")


if __name__ == "__main__":
    main()
