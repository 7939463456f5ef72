"""Run a check as an unprivileged user: the tests run as root, which bypasses permission bits,
so an unprivileged child is the only honest way to see EACCES."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534


def run_as_nobody(fn, *args) -> tuple[int, bytes]:
    """fn(*args) -> (exit code, bytes) run in a forked child with uid/gid 65534 and no groups;
    returns the child's exit code and payload (an exception's repr, exit code 99, if fn raised).

    Everything fn needs must be imported already: the child may not read the
    interpreter's files under /root."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        code = 99
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code, payload = fn(*args)
            os.write(w, payload)
        except BaseException as e:
            try:
                os.write(w, f"unexpected {type(e).__name__}: {e}".encode())
            except OSError:
                pass
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), data


def as_nobody(fn, *args) -> str:
    """fn(*args) (a str) computed as uid 65534 (see run_as_nobody); an exception comes back as
    "unexpected TYPE: message" for the parent to fail on."""
    return run_as_nobody(lambda: (0, str(fn(*args)).encode()))[1].decode()


@contextlib.contextmanager
def world_readable_tmp(prefix: str) -> Iterator[Path]:
    """A fresh directory under /tmp that uid 65534 can enter (pytest's tmp_path is 0700); removed after."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        d.chmod(0o755)
        yield d
    finally:
        for p in (d, *d.rglob("*")):  # undo any 0000 a test left so rmtree can enter
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o700)
        shutil.rmtree(d)
