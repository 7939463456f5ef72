"""A FIFO planted in the probe's pool (issue 19, item 13): an error sample, replaced, never a hang,
also after a restart (real processes, counts from the store)."""

from __future__ import annotations

import errno
import os

from conftest import run_cli
from test_probe_hostile import _per_op, _pool

from ioweather.sources.probe import POOL_NAME, init_probe_dir


def _run(d, home, *extra: str, timeout: float):
    # a real process: a FIFO that made the probe block would hang this test's own process, with no timeout
    return run_cli("probe", "run", str(d), "--interval", "0.05", "--block", "64k", "-q", *extra, home=home,
                   timeout=timeout)

MiB = 1 << 20


# ------------------------------------------------------------------ item 13: a FIFO planted in the pool
def test_fifo_in_the_pool_is_an_error_sample_and_is_replaced(tmp_path):
    home, d = tmp_path / "home", tmp_path / "p"
    init_probe_dir(d, MiB, 4, block=64 * 1024)
    oldest = d / POOL_NAME / sorted(os.listdir(d / POOL_NAME))[0]
    os.unlink(oldest)
    os.mkfifo(oldest, 0o600)
    r = _run(d, home, "--duration", "1.5", "--timeout", "1s", "--target", "fifo", timeout=30)
    assert r.returncode == 0, r.stderr
    per = _per_op(home, "fifo")
    assert per.get(("md_read", "error", errno.EINVAL)) == 1, per  # one error sample, not a hang
    assert not any(st == "timeout" for (_, st, _) in per), per
    reads = sum(n for (op, _, _), n in per.items() if op == "md_read")
    assert reads >= 10 and per.get(("md_read", "ok", 0)) == reads - 1, per  # probing went on
    pool = _pool(d)
    assert len(pool) == 4 and all(os.path.stat.S_ISREG(s.st_mode) for s in pool)
    # A restart with a FIFO planted again (the newest file this time) does the same.
    newest = d / POOL_NAME / sorted(os.listdir(d / POOL_NAME))[-1]
    os.unlink(newest)
    os.mkfifo(newest, 0o600)
    r = _run(d, home, "--duration", "1.5", "--timeout", "1s", "--target", "fifo2", timeout=30)
    assert r.returncode == 0, r.stderr
    per = _per_op(home, "fifo2")
    assert per.get(("md_read", "error", errno.EINVAL)) == 1 and not any(st == "timeout" for (_, st, _) in per), per
