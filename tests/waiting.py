"""Waiting in tests: poll for the thing itself, with a deadline, never a fixed sleep.

A fixed sleep is too short on a loaded machine (the test fails) and too long on an idle one (the suite
drags); a poll ends as soon as the condition holds and, when it never does, says what it waited for.
"""

from __future__ import annotations

import subprocess
import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str, *, every: float = 0.05,
               proc: subprocess.Popen | None = None) -> T:
    """Call `predicate` until it returns something true and return that; fail with `what` after `timeout`
    seconds. With `proc`, also fail at once when that process has exited (it will never get there)."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process exited ({proc.returncode}) while waiting for {what}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}: it did not happen")
        time.sleep(every)
