"""Steadier timings on a shared machine: run the benchmark (and the baselines it starts, which
inherit it) under SCHED_FIFO on one CPU when the user may. Other processes' load moved both
sides of a ratio by 50-100 % here; a real-time process on its own CPU is not preempted by them.
"""

from __future__ import annotations

import os


def realtime(priority: int = 50, one_cpu: bool = True) -> str:
    """Ask for SCHED_FIFO (on the highest-numbered CPU, or on all for multi-threaded tools);
    return how this process is scheduled."""
    try:
        cpu = max(os.sched_getaffinity(0))
        if one_cpu:
            os.sched_setaffinity(0, {cpu})
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
        return f"SCHED_FIFO on CPU {cpu}" if one_cpu else f"SCHED_FIFO on CPUs {sorted(os.sched_getaffinity(0))}"
    except (PermissionError, OSError) as e:
        return f"normal scheduling (SCHED_FIFO refused: {e.strerror})"
