"""Signals, one way for every daemon and long command (collect, probe run, watch, serve, export,
bench run, jobs ingest, import) and for the processes they start.

- A stop: SIGTERM (systemd's stop, a scheduler's cancel or time limit) and SIGINT (Ctrl-C) either set
  a stop event the daemon's loop watches (`set_event`) or unwind like Ctrl-C so that `finally`
  blocks clean up and roll back (`interrupting`). Handlers are installed for a span of code and the
  previous ones put back after it (`install`, `handled`).
- A child: after a fork it takes the default SIGTERM (not the parent's handler, inherited by fork)
  and ignores SIGINT, which the terminal sends to the whole process group: the parent decides how
  its children stop (`child_defaults`). It dies with the parent even when the parent is killed
  with SIGKILL (`die_with_parent`), so no worker or fio outlives the command that started it.

Below every layer: sources (fio), services and isolation.py use it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: The signals that ask a command to stop.
STOP = (signal.SIGINT, signal.SIGTERM)

_PR_SET_PDEATHSIG = 1

Handler = Callable[[int, object], None]


def install(handler: Handler, signums=STOP) -> Callable[[], None]:
    """`handler` for each of `signums`; returns the function that puts the previous handlers back.

    Only the main thread can install handlers (and only it runs them): elsewhere nothing is
    installed, and the caller's stop comes from the main thread's handlers.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    saved = {s: signal.signal(s, handler) for s in signums}

    def restore() -> None:
        for s, previous in saved.items():
            signal.signal(s, previous)

    return restore


@contextmanager
def handled(handler: Handler, signums=STOP) -> Iterator[None]:
    """`handler` for `signums` inside the block, the previous handlers after it."""
    restore = install(handler, signums)
    try:
        yield
    finally:
        restore()


def set_event(stop: threading.Event) -> Handler:
    """A handler that sets `stop`.

    set() is handed to a thread: a handler runs on the main thread between two bytecodes, maybe
    while that thread holds the event's lock inside wait(), and set() takes the same lock.
    """

    def handler(*_) -> None:
        threading.Thread(target=stop.set, name="stop-signal", daemon=True).start()

    return handler


class Interrupted(KeyboardInterrupt):
    """The KeyboardInterrupt a stop signal raises here (`interrupting`), with its `signum`.

    A subclass, never KeyboardInterrupt itself: CPython marks the process as ended by an uncaught
    Ctrl-C when an exact KeyboardInterrupt leaves an exec() of source text, even one caught further
    up, and then kills itself with SIGINT at exit whatever code sys.exit gave. dataclasses and
    namedtuple build their methods with such an exec, so a signal that lands during a lazy import
    (`import duckdb` while an import writes its files) made `import` print "interrupted" and die
    by SIGINT (-2) instead of exiting 130. The check compares the exact type; a subclass is
    caught by every `except KeyboardInterrupt` all the same."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def interrupting(signums=STOP) -> Iterator[threading.Event]:
    """Inside the block each of `signums` raises `Interrupted` (a KeyboardInterrupt) in the main
    thread, as Ctrl-C does, so the code's cleanup and rollback run; the event yielded is set when
    one came, so that a library that turns the interrupt into its own error (DuckDB: "Query
    interrupted") can be told from a real failure."""
    came = threading.Event()

    def handler(signum, _frame) -> None:
        came.set()
        raise Interrupted(signum)

    with handled(handler, signums):
        yield came


def child_defaults() -> None:
    """In a forked child: the default SIGTERM, and SIGINT ignored (the parent stops its children)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def die_with_parent(parent_pid: int) -> None:
    """In a forked child: be killed when the parent dies, however it dies (Linux; elsewhere a no-op).

    The kernel sends the signal when the thread that forked us ends, so fork from a
    thread that lives as long as the process (the main thread). A parent that died
    before the request took effect is seen by the changed parent pid.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent_pid:
        os._exit(1)
