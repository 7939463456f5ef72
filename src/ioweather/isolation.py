"""Running code that may kill its process (a C library on damaged input) where its death is an answer.

libdarshan-util can abort() or segfault on a damaged log. In the process that serves the
user, that is a silent death with no message, and in a batch it takes the batch down. So
such a call runs in a forked child: its result or exception comes back pickled through a
pipe, and a child killed by a signal becomes `ChildDied`, which the caller turns into one
line about the file. Below every layer (sources and services both use it).
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import signal

from ioweather.signals import child_defaults, die_with_parent


class ChildDied(Exception):
    """The isolated call's process ended without an answer (killed by `signum`, or exited `status`)."""

    def __init__(self, signum: int | None, status: int | None = None):
        self.signum, self.status = signum, status
        what = signal.Signals(signum).name if signum else f"exit status {status}"
        super().__init__(f"the isolated process died ({what})")


def _child(fn, args, kwargs, w: int, parent: int) -> None:
    # Never returns: os._exit skips the parent's atexit handlers and its buffered stdout.
    try:
        die_with_parent(parent)
        # PYTHONFAULTHANDLER would print a C stack for a crash the parent already explains in one line
        faulthandler.disable()
        child_defaults()
        try:
            answer = ("ok", fn(*args, **kwargs))
        except Exception as e:  # given back to the parent, which raises it as if the call were local
            answer = ("raise", e)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as e:  # an exception that cannot be pickled: its text still can
            data = pickle.dumps(("raise", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]}"
                                                       if answer[0] == "raise" else f"unpicklable result: {e}")))
        view = memoryview(data)
        while view:
            view = view[os.write(w, view):]
        os._exit(0)
    except BaseException:
        os._exit(70)


def call_isolated(fn, *args, **kwargs):
    """`fn(*args, **kwargs)` run in a forked child: its result, or its exception raised here.

    Raises `ChildDied` when the child ends without an answer (a signal: SIGSEGV, SIGABRT,
    or SIGKILL from the out-of-memory killer). Fork, not spawn: the child starts with the
    modules already imported (measured: a few ms), and `fn` need not be importable by name.
    """
    r, w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(fn, args, kwargs, w, parent)
    os.close(w)
    chunks = []
    try:
        with os.fdopen(r, "rb", buffering=0) as f:
            while True:  # read while the child writes: a result larger than the pipe would block it otherwise
                block = f.read(1 << 20)
                if not block:
                    break
                chunks.append(block)
    except BaseException:  # Ctrl-C or SIGTERM unwinding here: the child ignores SIGINT, so it is stopped, not awaited
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        status = _reap(pid)
    if os.WIFSIGNALED(status):
        raise ChildDied(os.WTERMSIG(status))
    code = os.waitstatus_to_exitcode(status)
    if code != 0 or not chunks:
        raise ChildDied(None, code)
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raise":
        raise value
    return value


def _reap(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except KeyboardInterrupt:  # the child ignores Ctrl-C (signals.child_defaults): stop it, then reap it
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
