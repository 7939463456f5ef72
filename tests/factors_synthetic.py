"""Data with a known truth for the performance-factor tests.

mixture()        durations from Gamma components (multiplicative Gaussian noise) plus an
                 optional tail of extreme values, with the true component of each
true_log_pdfs()  each component's exact density on ln(duration), to find the true valley
                 and the best possible (Bayes) class assignment
TABLE3           the paper's linear models (Kunkel 2015, Table 3)
iomodel_frame()  rows in the io-model benchmark's Parquet schema whose per-size outlier
                 cutoff follows given lines p(s) / 1.1, i.e. data generated from a model
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import special, stats

# (I, c) for s <= 4 KiB and s > 4 KiB, read and write, as printed in the paper.
TABLE3 = {
    "discard-R-off0": ((2.94e-07, 4.41e-11), (4.75e-07, 7.67e-11)),
    "discard-W-rnd": ((3.28e-07, 2.25e-12), (3.37e-07, 2.94e-14)),
    "cached-R-off0": ((8e-06, 4.18e-10), (9.71e-06, 1.44e-10)),
    "cached-R-rnd": ((8.39e-06, 4.91e-10), (1.04e-05, 2.99e-10)),
    "cached-W-off0": ((1e-05, 3.26e-10), (1.14e-05, 3.93e-10)),
    "cached-W-rnd": ((1.11e-05, 7.16e-10), (1.4e-05, 5.87e-10)),
}
PAPER_SIZES = [1, 4, 16, 64, 256, 1024, 2048, 4096] + [4096 * 2 ** i for i in range(1, 13)]  # ... 16 MiB


def mixture(rng, comps, n, *, tail=0.0, tail_span=(10.0, 1000.0), noise=0.05):
    """`comps` = [(weight, mode_s, gamma_shape)]; returns (durations, truth) with truth K = tail."""
    w = np.array([c[0] for c in comps], dtype=float)
    w /= w.sum()
    truth = rng.choice(len(comps), size=n, p=w)
    d = np.empty(n)
    for k, (_, mode, shape) in enumerate(comps):
        m = truth == k
        d[m] = rng.gamma(shape, mode / (shape - 1), m.sum()) * np.exp(rng.normal(0, noise, m.sum()))
    nt = int(round(tail * n))
    if nt:
        last = max(c[1] for c in comps)
        idx = rng.choice(n, nt, replace=False)
        d[idx] = last * np.exp(rng.uniform(math.log(tail_span[0]), math.log(tail_span[1]), nt))
        truth[idx] = len(comps)
    return d, truth


def true_log_pdfs(comps, z, noise=0.05):
    """Weighted density of each component on ln(duration) at the (even-spaced) grid z.

    ln(theta * G) with G ~ Gamma(k) has density exp(k u - e^u) / Gamma(k) at u = z - ln theta;
    the log-normal noise convolves it with N(0, noise).
    """
    w = np.array([c[0] for c in comps], dtype=float)
    w /= w.sum()
    dz = z[1] - z[0]
    kern_z = np.arange(-6 * noise, 6 * noise + dz, dz)
    kern = stats.norm.pdf(kern_z, scale=noise) * dz
    out = []
    for wk, (_, mode, shape) in zip(w, comps):
        u = z - math.log(mode / (shape - 1))
        f = np.exp(shape * u - np.exp(u) - special.gammaln(shape))
        out.append(wk * np.convolve(f, kern, mode="same"))
    return np.array(out)


def deterministic_lognormal(n, mu, sigma):
    """n durations at the normal quantiles: a noise-free sample of LogNormal(mu, sigma)."""
    q = (np.arange(n) + 0.5) / n
    return np.exp(mu + sigma * stats.norm.ppf(q))


def cutoff_offset(n, sigma, adjust=2.0, fraction=0.05):
    """Where R's density of a normal sample drops to `fraction` of its peak, in sds from the mean.

    The kernel widens the sd to sqrt(sigma^2 + bw^2), bw = adjust * 0.9 * sigma * n^(-1/5).
    """
    bw = adjust * 0.9 * sigma * n ** -0.2
    return math.sqrt(sigma ** 2 + bw ** 2) * math.sqrt(2 * math.log(1 / fraction))


def iomodel_frame(lines: dict, sizes=PAPER_SIZES, repeats=3000, sigma=0.15, experiment="train", seed=0):
    """io-model-shaped rows: for each setup label 'cache-op-mem' and size, durations whose
    outlier cutoff is p(s) / 1.1 with p = small line for s <= 4096, large above."""
    rng = np.random.default_rng(seed)
    frames = []
    off = cutoff_offset(repeats, sigma)
    for label, ((i_s, c_s), (i_l, c_l)) in lines.items():
        cache, op, mem = label.split("-")
        for s in sizes:
            p = (i_s + c_s * s) if s <= 4096 else (i_l + c_l * s)
            mu = math.log(p / 1.1) - off
            d = deterministic_lognormal(repeats, mu, sigma)
            rng.shuffle(d)
            frames.append(pd.DataFrame({
                "run_id": 1, "experiment": experiment, "cache": cache, "op": op, "mem_layout": mem,
                "file_layout": "off0", "size": np.int64(s), "proc": 0, "repeat": 0,
                "op_index": np.arange(repeats), "file_offset": np.int64(0), "mem_offset": np.int64(0),
                "start_ns": np.arange(repeats, dtype=np.int64) * 1000, "duration_ns": np.round(d * 1e9).astype(np.int64),
            }))
    return pd.concat(frames, ignore_index=True)
