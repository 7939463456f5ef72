"""A real `collect` run on a copied mock Lustre tree whose counters grow mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pyarrow.parquet as pq

from waiting import wait_until


def _stored_ticks(stored: Path) -> int:
    files = sorted(stored.glob("date=*/*.parquet"))  # whole files only: a flush writes .tmp, then renames
    return len(pq.read_table(files, columns=["time_ns"]).column("time_ns").unique()) if files else 0


def collect_with_growth(home: Path, root: Path, grow: Callable[[], None], fs: str = "lustrefs",
                        quiet_ticks: int = 4) -> None:
    """`collect` on `root` for 8 s; `grow()` changes the counters once `quiet_ticks` intervals of the old
    ones are stored: the growth falls inside the run, after a quiet stretch an event stands out from."""
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    # --flush as short as the interval: the stored rows tell how many ticks read the old counters
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "collect", "--proc-root", str(root), "--sources",
                             "lustre", "--interval", "0.5s", "--flush", "0.5s", "--duration", "8s", "--fs", fs],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stored = home / "parquet" / "telemetry" / f"fs={fs}"
        wait_until(lambda: _stored_ticks(stored) >= quiet_ticks, 30, f"{quiet_ticks} quiet intervals stored",
                   every=0.1, proc=proc)
        grow()
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
