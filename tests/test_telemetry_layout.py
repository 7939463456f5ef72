"""store/telemetry_layout.py: the Parquet contract between collectors/importers and the workload statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.store.telemetry_imports import ImportRun
from ioweather.store import telemetry_layout as layout

DAY = 86_400 * 1_000_000_000


def frame(t0: int, n: int, target: str = "fs-OST0000") -> pd.DataFrame:
    return pd.DataFrame({"time_ns": t0 + np.arange(n, dtype=np.int64) * 5_000_000_000, "target": target,
                         "metric": "read_bytes", "value": np.arange(n, dtype=float), "interval_s": 5.0})


def test_rows_split_by_utc_day_and_are_read_back_by_duckdb(tmp_path):
    s = Settings(home=tmp_path)
    paths: list = []
    n = layout.write_rows(s, "scratch", frame(DAY * 19000 - 10_000_000_000, 4), writer="test", paths_out=paths)
    assert n == 4 and len(paths) == 2
    assert sorted(p.parent.name for p in paths) == ["date=2022-01-07", "date=2022-01-08"]  # day 19000 = 2022-01-08
    con = layout.connect_duckdb()
    total = con.execute(f"SELECT sum(value), count(*) FROM {layout.scan_sql(s, 'scratch')}").fetchone()
    assert total == (6.0, 4)
    assert layout.list_fs(s) == ["scratch"]
    assert [p.name.startswith("test-") for p in layout.writer_files(s, "scratch", "test")] == [True, True]
    assert layout.remove_files(paths) == 2 and layout.writer_files(s, "scratch", "test") == []


def test_names_are_checked(tmp_path):
    s = Settings(home=tmp_path)
    with pytest.raises(UserError, match="invalid file system name"):
        layout.write_rows(s, "../etc", frame(0, 1))
    with pytest.raises(ValueError, match="invalid writer"):
        layout.write_rows(s, "ok", frame(0, 1), writer="a/b")
    with pytest.raises(UserError, match="no telemetry for file system 'none'"):
        layout.scan_sql(s, "none")


def test_import_run_commit_replaces_and_rollback_removes(tmp_path):
    s = Settings(home=tmp_path)
    first = ImportRun(s, "fs", "lmt-abc")
    first.write(frame(DAY, 10))
    first.commit()
    second = ImportRun(s, "fs", "lmt-abc", buffer_rows=4)       # small buffer: several files
    second.write(frame(DAY, 6))
    second.write(frame(DAY + 30_000_000_000, 6))
    assert second.commit() == 1
    assert len(layout.read_frame(s, "fs")) == 12 and len(second.paths) == 2
    failed = ImportRun(s, "fs", "lmt-abc", buffer_rows=1)
    failed.write(frame(DAY, 3))
    assert failed.rollback() == 1
    assert len(layout.read_frame(s, "fs")) == 12                # the failed run left nothing
    other = ImportRun(s, "fs", "csv-xyz")
    other.write(frame(DAY, 2, target="b"))
    other.commit()
    assert len(layout.read_frame(s, "fs")) == 14                # another source's import is kept
    assert other.summary()["targets"] == 1 and other.summary()["start"].startswith("1970-01-02")


@pytest.mark.parametrize("when", ["before the switch", "after the switch"])
def test_a_stop_inside_commit_leaves_one_import_on_disk(tmp_path, monkeypatch, when):
    """A SIGTERM (a KeyboardInterrupt here) inside commit's marker write: rollback removes the new run's
    files, or, once the marker names the new run, finishes the switch. commit released its lock in a
    `finally` before rollback ran, rollback then saw no import under way, and the new run stayed on
    disk beside the old one (CI, test_telemetry_failures seed 268364503)."""
    from ioweather.store import telemetry_imports

    s = Settings(home=tmp_path)
    first = ImportRun(s, "fs", "csv-abc")
    first.write(frame(DAY, 10))
    first.commit()
    old = {p.name for p in layout.fs_dir(s, "fs").glob("date=*/*.parquet")}
    real = telemetry_imports.write_marker

    def stopped(*a, **kw):
        if when == "after the switch":
            real(*a, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(telemetry_imports, "write_marker", stopped)
    second = ImportRun(s, "fs", "csv-abc", buffer_rows=4)
    second.write(frame(DAY, 12))
    with pytest.raises(KeyboardInterrupt):
        try:
            second.commit()
        except BaseException:
            second.rollback()
            raise
    on_disk = {p.name for p in layout.fs_dir(s, "fs").glob("date=*/*.parquet")}
    counted = {p.name for p in layout.data_files(layout.fs_dir(s, "fs"))}
    assert on_disk == counted
    assert on_disk == (old if when == "before the switch" else {p.name for p in second.paths})
    assert not telemetry_imports.running(layout.fs_dir(s, "fs"), "csv-abc")  # the lock is released


def test_day_dirs_of_a_short_window_are_those_a_listing_finds(tmp_path):
    """A window of up to a month names its directories rather than listing them all: the same
    directories, in the same order, as filtering the whole listing, for windows on and off day edges."""
    day = layout.DAY_NS
    rng = np.random.default_rng(3)
    present = sorted(rng.choice(np.arange(20_000, 20_400), size=150, replace=False))
    for k in present:
        (layout._day_file(tmp_path, int(k), "w", "x")).parent.mkdir(parents=True)
    (tmp_path / "date=not-a-day").mkdir()

    def listed(since, until):
        return [d for d in sorted(tmp_path.glob("date=*")) if (d0 := layout._day_of_dir(d.name)) is not None
                and d0 < until and d0 + day > since]

    for _ in range(300):
        since = int(rng.integers(19_990 * day, 20_410 * day))
        until = since + int(rng.integers(1, 40 * day))
        assert layout.day_dirs(tmp_path, since, until) == listed(since, until), (since, until)


def test_duckdb_draws_no_progress_bar_on_stdout():
    """DuckDB prints a progress bar on stdout for a query over 2 s; a reader held up on a loaded machine
    then wrote it into `workload --json` (a CI run's JSONDecodeError). Every connection is the store's
    one (parquet_scan.connect_duckdb), and it has the bar off."""
    import ast
    from pathlib import Path

    con = layout.connect_duckdb()
    assert con.execute("SELECT current_setting('enable_progress_bar')").fetchone() == (False,)
    src = Path(__file__).resolve().parents[1] / "src" / "ioweather"
    others = []
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb":
                others.append(f"{path.relative_to(src)}:{node.lineno}")
    assert {o.split(":")[0] for o in others} == {"store/parquet_scan.py"}, others


# A process DuckDB's Python client takes for interactive (its __main__ has no file: `python -c`, a REPL,
# Jupyter): each new connection's progress bar on, drawn by any statement over progress_bar_time, here 0 ms
# from the connection's birth, as a statement held up past 2 s by a stop (SIGSTOP) or a loaded machine is.
_INTERACTIVE_READER = """
import duckdb
connect = duckdb.connect

def connect_with_an_impatient_bar(*a, **kw):
    con = connect(*a, **kw)
    con.execute("SET progress_bar_time = 0")  # statements after this one draw the bar, if it is on
    return con

duckdb.connect = connect_with_an_impatient_bar
from ioweather.store.parquet_scan import connect_duckdb, one_database
bar = "SELECT current_setting('enable_progress_bar')"
con = connect_duckdb(options={"memory_limit": "1GB", "preserve_insertion_order": "false"})
got = [con.execute(bar).fetchone()[0], con.execute("SELECT current_setting('memory_limit')").fetchone()[0]]
con.close()
with one_database():
    for _ in range(2):
        con = connect_duckdb(threads=1)
        got += [con.execute(bar).fetchone()[0], con.execute("SELECT current_setting('threads')").fetchone()[0]]
import sys
print(repr(got), file=sys.stderr)
"""


def test_no_statement_of_a_store_connection_runs_with_the_progress_bar_on():
    """`python -c` is interactive to DuckDB's Python client, which turns the bar on for each connection it
    opens; connect_duckdb's `SET enable_progress_bar = false` on that connection was itself a statement run
    with the bar on. The test's tight workload reader (a `python -c` program) frozen by a SIGSTOP inside it
    for an import's seconds drew "\\r100% ▕██…▏ (00:00:02.31 elapsed)\\n" on its stdout: an empty line to a
    text-mode reader of its JSON lines (the fresh-clone run's JSONDecodeError). Here every statement is
    "long" (progress_bar_time = 0): any one run on a connection with the bar on prints it."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-c", _INTERACTIVE_READER], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "", repr(p.stdout[:200])
    assert p.stderr.strip().splitlines()[-1] == repr([False, "953.6 MiB", False, 1, False, 1]), p.stderr
