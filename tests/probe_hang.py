"""A stuck mount for the probe's timeout tests: md_read first blocks in a real open(2) of a FIFO
until someone opens its other end.

A FIFO in the pool used to do this by itself; the probe now opens pool files non-blocking and
refuses anything but a regular file (issue 19, item 13), so the hang is put in front of the real
timed call instead. In-process: `hang_md_read(daemon, fifo)`. In a real process:
`python tests/probe_hang.py FIFO ioweather-arguments...`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


class _BlockingCore:
    def __init__(self, core, fifo: Path):
        self._core, self._fifo = core, fifo

    def __getattr__(self, name):
        return getattr(self._core, name)

    def timed_read_small(self, dirfd, name, buf):
        waiting_on(self._fifo).touch()  # a test can wait for the hang to begin
        os.close(os.open(self._fifo, os.O_RDONLY))  # blocks in the kernel until a writer opens the FIFO
        return self._core.timed_read_small(dirfd, name, buf)


def waiting_on(fifo: Path) -> Path:
    """The file md_read creates just before it blocks on `fifo`."""
    return fifo.with_name(fifo.name + ".opening")


def hang_md_read(daemon, fifo: Path) -> None:
    daemon.probe.core = _BlockingCore(daemon.probe.core, fifo)


if __name__ == "__main__":
    import ioweather.sources.probe as probe_source
    from ioweather.cli import main

    fifo, real_load = Path(sys.argv[1]), probe_source.load
    probe_source.load = lambda name: _BlockingCore(real_load(name), fifo)
    sys.argv = ["ioweather", *sys.argv[2:]]
    main()
