"""Ports for servers a test starts on a port it must name in advance (Prometheus' scrape target, Slurm's daemons).

A port taken with bind(("127.0.0.1", 0)) and closed again comes from the kernel's ephemeral range, which
the kernel goes on handing out: to the next `serve --port 0` or to any outgoing connection of the other
pytest-xdist worker, between our close and the server's bind. Below that range the kernel hands out
nothing by itself, and each worker draws from its own slice, so two tests of one run never get one port.
A port something else already holds is skipped (the bind check).
"""

from __future__ import annotations

import itertools
import os
import random
import socket

#: Below Linux's default ip_local_port_range (32768-60999); one slice per xdist worker, for up to 8 workers.
FIRST, SLICE, SLICES = 20000, 1500, 8


def _worker_index() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3"; no xdist: one process, slice 0
    return int(name[2:]) if name[2:].isdigit() else 0


def _candidates():
    start = FIRST + (_worker_index() % SLICES) * SLICE
    # a random place in the slice: two test runs on one machine (two worktrees) seldom meet
    offset = random.Random(os.getpid()).randrange(SLICE)
    return (start + (offset + i) % SLICE for i in itertools.count())


_next = _candidates()


def free_ports(n: int) -> list[int]:
    """N distinct ports on 127.0.0.1 that nothing holds now and that no other test of this run is given."""
    out: list[int] = []
    for port in _next:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        out.append(port)
        if len(out) == n:
            return out
    raise AssertionError("unreachable: the candidates never end")


def free_port() -> int:
    return free_ports(1)[0]
