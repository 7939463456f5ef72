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


def as_nobody(fn, *args) -> str:
    """fn(*args) (a str) computed in a forked child with uid/gid 65534 and no groups.

    Any exception comes back as "unexpected TYPE: message" for the parent to fail on.
    Everything fn needs must be imported already: the child may not read the
    interpreter's files under /root."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            msg = str(fn(*args))
        except BaseException as e:
            msg = f"unexpected {type(e).__name__}: {e}"
        try:
            os.write(w, msg.encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode()
    os.waitpid(pid, 0)
    return msg


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
