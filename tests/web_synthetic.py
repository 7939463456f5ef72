"""Synthetic probe samples for the web tests and the web benchmark (long windows a real run can't give).

Durations are log-normal around a per-op median with a mild daily cycle, plus
injected episodes whose slowdown is known (so a test can check the page shows
what was planted), occasional errors and rare timeouts. Written through the
store's own bulk insert, exactly as the probe writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ioweather.store import probe as probe_store

#: Typical medians (s) per op on a quiet local disk (close to what `probe run` measures on tmpfs/ext4).
MEDIANS_S = {"data_write": 4e-4, "data_read": 2e-4, "md_create": 3e-5, "md_stat": 3e-6, "md_read": 1.5e-5,
             "md_delete": 2e-5}


@dataclass
class Episode:
    start_ns: int
    end_ns: int
    factor: float
    ops: tuple[str, ...] = probe_store.OPS


def add_target(store, target: str, start_ns: int, end_ns: int, *, period_s: float = 1.0, seed: int = 0,
               episodes: list[Episode] = (), error_rate: float = 1e-4, timeout_rate: float = 1e-6,
               chunk_s: float = 86400.0, on_chunk=None) -> int:
    """Insert samples for `target` every `period_s` in [start_ns, end_ns); returns the run id."""
    run_id = probe_store.start_run(store, probe_store.RunInfo(
        target=target, directory="/synthetic", interval_s=period_s, block_bytes=1 << 20, file_bytes=1 << 30,
        pool_files=200, small_bytes=3901, direct=False, fsync=False, seed=seed, timeout_s=60.0,
        file_exceeds_memory=False, host="synthetic"))
    rng = np.random.default_rng(seed)
    step = int(period_s * 1e9)
    t = start_ns
    while t < end_ns:
        stop = min(end_ns, t + int(chunk_s * 1e9))
        times = np.arange(t, stop, step, dtype=np.int64)
        rows = []
        for k, op in enumerate(probe_store.OPS):
            n = len(times)
            day = np.sin(2 * np.pi * (times % 86_400_000_000_000) / 86_400e9)
            dur = MEDIANS_S[op] * np.exp(rng.normal(0.0, 0.35, n) + 0.15 * day)
            for ep in episodes:
                if op in ep.ops:
                    sel = (times >= ep.start_ns) & (times < ep.end_ns)
                    dur[sel] *= ep.factor
            status = np.zeros(n, np.int8)
            u = rng.random(n)
            status[u < error_rate] = 1
            status[u < timeout_rate] = 2
            dur_ns = np.maximum(1, (dur * 1e9).astype(np.int64))
            dur_ns[status == 2] = 60_000_000_000
            starts = times + k * 10_000  # ops run one after another within the period
            nbytes = (1 << 20) if op.startswith("data") else (3901 if op in ("md_create", "md_read") else 0)
            st_names = np.array(probe_store.STATUSES)[status]
            errno = np.where(status == 1, 5, 0)
            rows.extend(zip([run_id] * n, [op] * n, starts.tolist(), dur_ns.tolist(),
                            [nbytes if s == 0 else 0 for s in status.tolist()], st_names.tolist(), errno.tolist()))
        probe_store.insert_samples(store, rows)
        if on_chunk:
            on_chunk(stop - start_ns, end_ns - start_ns)
        t = stop
    return run_id


def rollups_from_samples(store, target: str, interval_s: int, since_ns: int, until_ns: int) -> dict[str, np.ndarray]:
    """The reference for the cache's rollups: `interval_stats` over every sample of the intervals starting in
    [since, until) (since rounded down to the grid), rows in the cache's order (start, then op)."""
    from ioweather.services.probe.cache import rollup_arrays
    from ioweather.stats.probe import interval_stats

    lo = since_ns // (interval_s * 10**9) * interval_s * 10**9
    w = probe_store.read_samples(store, target, since_ns=lo, until_ns=until_ns)
    ref = rollup_arrays(interval_stats(w["op"], w["start_ns"], w["duration_ns"], w["status"], interval_s))
    order = np.lexsort((ref["op"], ref["start_ns"]))
    return {c: v[order] for c, v in ref.items()}
