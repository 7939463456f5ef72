"""Kill -9 a Dask worker process while it holds tasks: the distributed tests' way to lose a worker."""

from __future__ import annotations

import os
import signal
import threading
import time


def kill_a_busy_worker(watcher, *, min_tasks: int = 1, timeout_s: float = 120.0,
                       poll_s: float = 0.02) -> tuple[threading.Thread, dict]:
    """Start a thread that waits until the cluster holds at least `min_tasks` tasks, then SIGKILLs the
    process of a worker holding some. Returns (the thread, {"worker", "tasks"} once it has killed)."""
    killed: dict = {}

    def run():
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            busy = {w: tasks for w, tasks in watcher.processing().items() if tasks}
            if busy and sum(map(len, busy.values())) >= min_tasks:
                worker = min(busy)
                pid = watcher.run(os.getpid, workers=[worker])[worker]
                killed.update(worker=worker, tasks=len(busy[worker]))
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(poll_s)

    t = threading.Thread(target=run)
    t.start()
    return t, killed
