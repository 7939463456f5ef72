"""`jobs ingest --dask` against the local pool on the same logs, and what the scheduler costs per log.

Corpus: N distinct logs made from the shared real logs (each copy is a real log plus 4 trailing
bytes, which libdarshan ignores: a distinct content hash, the same job); every copy must load
(every ingest must report 0 failed). Arms, run in every round (in an order rotated each round,
so a drift of the machine's load hits them all):

    local   `jobs ingest --workers 2` (the baseline)
    dask    the same ingest on a `distributed.LocalCluster` of 2 worker processes, logs batched
            into tasks (per_task="auto", what `--dask` does)
    dask1   the same cluster, one log per task (the way before batching)

The cluster is started once, before the clock (its start-up is reported apart), with the
workers' stack profiler off as `--dask local:2` does. Reported: each round's seconds and ratio
(Dask throughput / local throughput of that round), the median ratio; the tasks each Dask arm
ran (the scheduler's task stream) and the bytes of every batched message to or from the
scheduler (task specs, completions: results go from the workers to the client directly, never
through the scheduler); the scheduler's cost per task from no-op tasks through the same
`map_unordered`, hence per log; the bytes of one log's result (worker -> client).

    .venv/bin/python benchmarks/bench_dask.py [N_LOGS] [--repeat R] [--arms local,dask,dask1]
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_darshan_ingest import build_corpus  # noqa: E402

#: arm -> ingest's keywords besides the corpus (dask_address is added for the Dask arms)
ARMS = {"local": {}, "dask": {"dask_per_task": "auto"}, "dask1": {"dask_per_task": 1}}


def ingest_once(root: Path, **kw) -> tuple[float, dict]:
    from ioweather.services.jobs.ingest import ingest
    from ioweather.config import Settings

    home = Path(tempfile.mkdtemp(prefix="iw-bench-dask-home-"))
    try:
        t = time.perf_counter()
        counts = ingest(Settings.resolve(home), [str(root)], workers=2, **kw)
        return time.perf_counter() - t, counts
    finally:
        shutil.rmtree(home, ignore_errors=True)


def count_batched_sends() -> list:
    """Every `BatchedSend` made in this process from now on: the scheduler's streams to the workers
    and to the clients, and the clients' to the scheduler (a LocalCluster's scheduler runs here)."""
    from distributed import batched

    made = []
    init = batched.BatchedSend.__init__

    def counting_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    batched.BatchedSend.__init__ = counting_init
    return made


class SchedulerMeter:
    """Tasks the scheduler finished and bytes of batched messages to or from it, since the last reading."""

    def __init__(self, client, streams: list):
        self.client, self.streams = client, streams
        client.get_task_stream(count=1)  # starts the scheduler's task-stream plugin, which counts tasks
        self.last = self.now()

    def now(self) -> tuple[int, int]:
        tasks = self.client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.get_task_stream_index())
        from_workers = sum(self.client.run(lambda dask_worker: dask_worker.batched_stream.byte_count).values())
        return tasks, from_workers + sum(s.byte_count for s in self.streams)

    def reading(self) -> tuple[int, int]:
        now = self.now()
        delta = (now[0] - self.last[0], now[1] - self.last[1])
        self.last = now
        return delta


def noop_tasks(client, n: int) -> float:
    """Seconds for n no-op tasks (an int formatted), one per task, through map_unordered: the
    scheduler's own cost per task."""
    from ioweather.services.runtime.distributed import map_unordered
    from ioweather.units import format_bytes

    got = []
    t = time.perf_counter()
    map_unordered(client, format_bytes, range(n), lambda item, res: got.append(res), lambda item, why: None)
    dt = time.perf_counter() - t
    assert len(got) == n
    return dt


def result_bytes(paths: list[Path]) -> float:
    from ioweather.services.jobs.ingest import extract

    sizes = [len(pickle.dumps(extract(str(p), frozenset(), None))) for p in paths]
    return sum(sizes) / len(sizes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=20000, help="distinct logs (default 20000)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of every arm (default 1)")
    ap.add_argument("--arms", default="local,dask", help=f"comma-separated, of {', '.join(ARMS)} (default local,dask)")
    args = ap.parse_args()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if not arms or set(arms) - ARMS.keys():
        ap.error(f"--arms: choose among {', '.join(ARMS)}")
    n = args.n
    streams = count_batched_sends()  # before the cluster: its streams to the workers are made at start-up
    from dask.distributed import Client, LocalCluster

    import dask

    from ioweather.services.runtime.distributed import KEEP_NANNIES, NO_PROFILER

    root = Path(tempfile.mkdtemp(prefix="iw-bench-dask-logs-"))
    try:
        t = time.perf_counter()
        paths = build_corpus(root, n)
        made = time.perf_counter() - t
        import darshan  # noqa: F401  (import cost out of every timing)

        load0 = os.getloadavg()
        print(f"logs: {n} distinct ({sum(p.stat().st_size for p in paths) / 2**20:.1f} MiB, made in {made:.1f} s), "
              f"cpus: {os.cpu_count()}, load at start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}", flush=True)
        t = time.perf_counter()
        with dask.config.set(KEEP_NANNIES), \
                LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                             config=NO_PROFILER) as cluster, Client(cluster, direct_to_workers=True) as client:
            print(f"Dask LocalCluster, 2 worker processes, started in {time.perf_counter() - t:.1f} s (not counted)")
            meter = SchedulerMeter(client, streams)
            secs = {a: [] for a in arms}
            sched = {a: [] for a in arms if a != "local"}  # (tasks, bytes) per round
            for r in range(args.repeat):
                order = arms[r % len(arms):] + arms[:r % len(arms)]
                for arm in order:
                    kw = dict(ARMS[arm])
                    if arm != "local":
                        kw["dask_address"] = cluster.scheduler_address
                    meter.reading()
                    s, counts = ingest_once(root, **kw)
                    assert counts.failed == 0 and counts.ingested == n, (arm, counts)  # every copy, once
                    secs[arm].append(s)
                    print(f"  {arm} done: {s:.1f} s, load {os.getloadavg()[0]:.2f}", flush=True)  # a stopped run says something
                    if arm != "local":
                        sched[arm].append(meter.reading())
                line = [f"round {r + 1} ({', '.join(order)}):"]
                for arm in arms:
                    s = secs[arm][r]
                    line.append(f"{arm} {s:.1f} s = {n / s:.0f} logs/s" +
                                (f" ({secs['local'][r] / s:.2f}x, {sched[arm][r][0]} tasks)"
                                 if arm != "local" and "local" in secs else ""))
                print("  ".join(line), flush=True)
            n_noop = min(n, 5000)
            meter.reading()
            noop_s = noop_tasks(client, n_noop)
            noop_tasks_run, noop_bytes = meter.reading()
        per_task_ms = noop_s / n_noop * 1e3
        per_log = result_bytes(paths[:: max(1, n // 200)])
        load1 = os.getloadavg()
        print(f"load at end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
        for arm in arms:
            med = statistics.median(secs[arm])
            text = f"{arm}: median {med:.1f} s = {n / med:.0f} logs/s"
            if arm != "local" and "local" in secs:
                ratios = [loc / s for loc, s in zip(secs["local"], secs[arm])]
                text += (f"; ratio vs local per round {', '.join(f'{x:.2f}' for x in ratios)}, "
                         f"median {statistics.median(ratios):.2f}x   (target >= 0.8x)")
            print(text)
        print(f"scheduler alone: {n_noop} no-op tasks (one item each) in {noop_s:.2f} s = {n_noop / noop_s:.0f} "
              f"tasks/s, {per_task_ms:.2f} ms per task with 2 workers, "
              f"{noop_bytes / noop_tasks_run / 1024:.2f} KiB per task through the scheduler")
        for arm, rounds in sched.items():
            tasks = statistics.median(t for t, _ in rounds)
            kib = statistics.median(b for _, b in rounds) / n / 1024
            print(f"{arm}: {tasks:.0f} tasks for {n} logs ({n / tasks:.1f} logs per task): scheduler "
                  f"~{per_task_ms * tasks / n:.2f} ms per log ({per_task_ms:.2f} ms x tasks / logs), "
                  f"{kib:.2f} KiB per log through the scheduler")
        print(f"one log's result: {per_log / 1024:.1f} KiB (worker -> client directly)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
