"""Stores that several test modules start from, built once per test run and copied into the tests that add to them.

Built under the run's base temporary directory, shared by the pytest-xdist workers (pytest-xdist's documented
pattern: `tmp_path_factory.getbasetemp().parent` behind a file lock), so the worker that asks first builds and
the other waits and reuses. A store is a directory (IOWEATHER_HOME: the SQLite file and its Parquet tree,
which hold no absolute path of their own), so `copy_home` gives a test its own store to write. Even a
test that only reads takes a copy (one per module): reading may write (rollups and summaries are built on
first read), and the other worker may be reading the shared one at that moment.

The builders run `python -m ioweather` as a user would, like the module fixtures they replace.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from conftest import TESTDATA, run_cli

LMT_DAY = TESTDATA / "lmt/snx11025_2018-01-28.sqlite3"
#: 496 and 128 processes, no host names
TWO_LOGS = ("imbalanced-io.darshan", "darshan-apmpi-2nodes-64mpi.darshan")
ABC_YEAR = TESTDATA / "tokio-abc" / "edison-summaries_2017-02-14-2018-02-15.csv.gz"
PYTOKIO = TESTDATA / "pytokio"


def run_root(tmp_path_factory) -> Path:
    """The directory every worker of this run sees (one worker, or no xdist: the base temp itself)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """The directory NAME of this run, made by `build(directory)` by the first worker that asks.

    Built where it stays (a store may hold the absolute paths of files made beside it, such as a failed
    log); a build that failed half-way is removed and made again by the next worker that asks."""
    root = run_root(tmp_path_factory)
    done, built = root / f"shared-{name}", root / f"shared-{name}.built"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also when a worker dies
        if not built.exists():
            shutil.rmtree(done, ignore_errors=True)
            build(done)
            built.touch()
    return done


def copy_home(src: Path, dst: Path) -> Path:
    """A store of one's own: a copy of the shared store SRC at DST (made; must not exist)."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _lmt_day(home: Path) -> None:
    """docs/workload.md's example: the LMT day, its times in Los Angeles."""
    run_cli("import", "lmt", str(LMT_DAY), "--fs", "snx11025", "--timezone", "America/Los_Angeles", "-q",
            home=home, check=True)


def lmt_day(tmp_path_factory) -> Path:
    """The LMT day of docs/workload.md, read-only."""
    return built_once(tmp_path_factory, "lmt-day", _lmt_day)


def two_logs(tmp_path_factory) -> Path:
    """The two real Darshan logs of TWO_LOGS ingested, read-only."""
    def build(home: Path) -> None:
        _ingest_two_logs(home)
    return built_once(tmp_path_factory, "two-logs", build)


def _ingest_two_logs(home: Path) -> None:
    doc = json.loads(run_cli("jobs", "ingest", *(str(TESTDATA / "darshan" / n) for n in TWO_LOGS), "--json",
                             home=home, check=True).stdout)
    assert doc["ingested"] == len(TWO_LOGS), doc


def day_logs_bench(tmp_path_factory) -> Path:
    """The LMT day, the two logs and tokio-abc's first 400 Edison benchmark rows, read-only."""
    def build(home: Path) -> None:
        import pandas as pd

        copy_home(lmt_day(tmp_path_factory), home)
        _ingest_two_logs(home)
        head = home.parent / f"{home.name}-edison-summaries_head.csv"  # the file's name says the preset
        pd.read_csv(ABC_YEAR, low_memory=False).head(400).to_csv(head, index=False)
        run_cli("bench", "import", str(head), home=home, check=True)
    return built_once(tmp_path_factory, "day-logs-bench", build)


def pytokio_telemetry(tmp_path_factory) -> Path:
    """The LMT day (times as stored), pytokio's `lfs df` and `lctl dl -t` samples, read-only."""
    def build(home: Path) -> None:
        run_cli("import", "lmt", str(LMT_DAY), "--fs", "snx11025", home=home, check=True)
        run_cli("import", "lfsdf", str(PYTOKIO / "sample_ost-fullness.txt.gz"), "--fs", "snx11035", home=home,
                check=True)
        run_cli("import", "lctl", str(PYTOKIO / "sample_ost-map.txt.gz"), "--fs", "snx11035", home=home, check=True)
    return built_once(tmp_path_factory, "pytokio-telemetry", build)
