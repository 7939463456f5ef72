"""`jobs ingest --dask` against the local pool on the same logs, and what the scheduler costs per log.

Corpus: N distinct logs made from the shared real logs (each copy is a real log plus 4 trailing
bytes, which libdarshan ignores: a distinct content hash, the same job); every copy must load
(both ingests must report 0 failed). Baseline (same run): `jobs ingest --workers 2`. Ours: the
same ingest on a `distributed.LocalCluster` of 2 worker processes (started before the clock:
its start-up is reported apart). Then the scheduler alone: no-op tasks through the same
`map_unordered` (tasks per second it sustains), and the bytes of one log's result (what travels
from a worker to the client; the scheduler only sees small messages).

    .venv/bin/python benchmarks/bench_dask.py [N_LOGS]     # default 20000
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_darshan_ingest import build_corpus  # noqa: E402


def ingest_once(root: Path, **kw) -> tuple[float, dict]:
    from ioweather.services.darshan_ingest import ingest
    from ioweather.config import Settings

    home = Path(tempfile.mkdtemp(prefix="iw-bench-dask-home-"))
    try:
        t = time.perf_counter()
        counts = ingest(Settings.resolve(home), [str(root)], **kw)
        return time.perf_counter() - t, counts
    finally:
        shutil.rmtree(home, ignore_errors=True)


def noop_tasks(address: str, n: int) -> float:
    """Seconds for n no-op tasks (an int formatted) through map_unordered: the scheduler's own cost."""
    from dask.distributed import Client

    from ioweather.services.distributed import map_unordered
    from ioweather.units import format_bytes

    got = []
    with Client(address, direct_to_workers=True) as client:
        t = time.perf_counter()
        map_unordered(client, format_bytes, range(n), lambda item, res: got.append(res), lambda item, why: None)
        dt = time.perf_counter() - t
    assert len(got) == n
    return dt


def result_bytes(paths: list[Path]) -> float:
    from ioweather.services.darshan_ingest import extract

    sizes = [len(pickle.dumps(extract(str(p), frozenset(), None))) for p in paths]
    return sum(sizes) / len(sizes)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    from dask.distributed import LocalCluster

    root = Path(tempfile.mkdtemp(prefix="iw-bench-dask-logs-"))
    try:
        t = time.perf_counter()
        paths = build_corpus(root, n)
        made = time.perf_counter() - t
        import darshan  # noqa: F401  (import cost out of both timings)

        local_s, local_counts = ingest_once(root, workers=2)
        t = time.perf_counter()
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            start_s = time.perf_counter() - t
            dask_s, dask_counts = ingest_once(root, workers=2, dask_address=cluster.scheduler_address)
            n_noop = min(n, 5000)
            noop_s = noop_tasks(cluster.scheduler_address, n_noop)
        for counts in (local_counts, dask_counts):
            assert counts["failed"] == 0 and counts["ingested"] == n, counts  # every copy loads, once
        per_log = result_bytes(paths[:: max(1, n // 200)])
        print(f"logs: {n} distinct ({sum(p.stat().st_size for p in paths) / 2**20:.1f} MiB, made in {made:.1f} s), "
              f"cpus: {os.cpu_count()}, load: {os.getloadavg()[0]:.1f}")
        print(f"local --workers 2 (baseline): {local_s:.1f} s = {n / local_s:.0f} logs/s")
        print(f"Dask LocalCluster, 2 worker processes: {dask_s:.1f} s = {n / dask_s:.0f} logs/s "
              f"(cluster start-up {start_s:.1f} s, not counted)")
        print(f"ratio (Dask / local throughput): {local_s / dask_s:.2f}x   (target >= 0.8x)")
        print(f"scheduler alone: {n_noop} no-op tasks in {noop_s:.2f} s = {n_noop / noop_s:.0f} tasks/s, "
              f"{noop_s / n_noop * 1e3:.2f} ms per task with 2 workers")
        print(f"per-log time on the cluster: {dask_s / n * 1e3:.2f} ms, of which scheduler at most "
              f"{noop_s / n_noop * 1e3:.2f} ms; one log's result: {per_log / 1024:.1f} KiB (worker -> client)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
