"""store/telemetry_compact.py: a finished day's small files of one writer become one file, and every
reader counts every row once before, during (an interrupted compaction) and after."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.sources.telemetry.base import short_hostname
from ioweather.store import telemetry_compact as compact
from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_rollup as rollup
from ioweather.services.telemetry.workload import compute
from test_telemetry_rollup import OPTS, _same

WRITER = "collect-h1"


def _store(tmp_path, chunks=12, writer=WRITER):
    """The synthetic file system as `collect` leaves it: many small files a day."""
    s = Settings(home=tmp_path / "home")
    df = syn.frame().sort_values("time_ns", kind="stable")
    for idx in np.array_split(np.arange(len(df)), chunks):
        layout.write_rows(s, "syn", df.iloc[idx], writer=writer)
    return s, layout.fs_dir(s, "syn")


def _totals(s):
    con = layout.connect_duckdb()
    try:
        return con.execute(f"SELECT metric, count(*), sum(value) FROM {layout.scan_sql(s, 'syn')} "
                           "WHERE NOT isnan(value) GROUP BY ALL ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_a_day_becomes_one_file_with_the_same_rows_and_rollup(tmp_path):
    s, base = _store(tmp_path)
    before_doc = compute(s, "syn", None, None, **OPTS)[0]
    before = _totals(s)
    rows_before = sorted(map(tuple, layout.read_frame(s, "syn").fillna(-1).itertuples(index=False)))
    for d in layout.day_dirs(base):
        assert len(list(d.glob("*.parquet"))) > 2
        out = compact.compact_day(d, WRITER)
        assert out is not None and [f.name for f in d.glob("*.parquet")] == [out.name]
        assert sorted(p.name for p in (d / "_rollup").glob("*.parquet")) == [out.name]
        # the merged rollup equals one computed from the merged rows
        merged = pq.read_table(rollup.rollup_path(out)).to_pandas()
        fresh, first, last = rollup.summarize(pq.read_table(out))
        key = ["metric", "minute", "target"]
        a = merged.sort_values(key).reset_index(drop=True)
        b = fresh.to_pandas().sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
        assert rollup.read_range(rollup.rollup_path(out)) == (first, last)
    assert _totals(s) == before
    assert sorted(map(tuple, layout.read_frame(s, "syn").fillna(-1).itertuples(index=False))) == rows_before
    _same(compute(s, "syn", None, None, **OPTS)[0], before_doc)


def test_an_interrupted_compaction_counts_each_row_once_and_is_finished_later(tmp_path):
    s, base = _store(tmp_path)
    before = _totals(s)
    day = layout.day_dirs(base)[0]
    keep = tmp_path / "parts"
    shutil.copytree(day, keep)
    out = compact.compact_day(day, WRITER)
    # Put the parts back, as if the process died after writing the compacted file and before the unlinks.
    for f in keep.glob("*.parquet"):
        shutil.copy(f, day / f.name)
        shutil.copy(keep / "_rollup" / f.name, day / "_rollup" / f.name)
    assert len(list(day.glob("*.parquet"))) > 2
    assert _totals(s) == before  # the replaced files are ignored while they exist
    _same(compute(s, "syn", None, None, **OPTS)[0], compute(s, "syn", None, None, **OPTS, use_rollups=False)[0])
    assert compact.compact_day(day, WRITER) is None  # nothing left to merge; the leftovers are removed
    assert [f.name for f in day.glob("*.parquet")] == [out.name]
    assert _totals(s) == before


def test_late_files_and_other_writers_are_left_alone(tmp_path):
    s, base = _store(tmp_path)
    day = layout.day_dirs(base)[0]
    other = syn.frame().iloc[:100].assign(target="imported-OST0000")
    layout.write_rows(s, "syn", other, writer="csv-abc-run1")
    compact.compact_day(day, WRITER)
    late = syn.frame().iloc[:10].assign(target="late-OST0000")  # a flush after the compaction
    layout.write_rows(s, "syn", late, writer=WRITER)
    names = sorted(f.name for f in day.glob("*.parquet"))
    assert len(names) == 3 and sum(layout.COMPACT_TAG in n for n in names) == 1
    assert any(n.startswith("csv-abc-run1-") for n in names)
    targets = set(layout.read_frame(s, "syn")["target"])
    assert {"imported-OST0000", "late-OST0000"} <= targets


def test_only_finished_days_are_compacted(tmp_path):
    s, base = _store(tmp_path)
    day1, day2 = layout.day_dirs(base)
    now = pd.Timestamp(day2.name[5:], tz="UTC").value + 3_600 * 10**9  # one hour into the second day
    made = compact.compact_finished_days(base, WRITER, now, grace_ns=600 * 10**9)
    assert [m.parent for m in made] == [day1]
    assert len(list(day2.glob("*.parquet"))) > 2


def test_collect_compacts_its_own_finished_days(cli, home, testdata):
    """The daemon merges its host's files of days that are over, at its flushes."""
    s = Settings(home=home)
    df = syn.frame()
    writer = f"collect-{short_hostname()}"
    for idx in np.array_split(np.arange(len(df)), 5):
        layout.write_rows(s, "syn", df.iloc[idx], writer=writer)
    before = _totals(s)
    p = cli("collect", "--proc-root", str(testdata / "lustre-procfs"), "--sources", "lustre", "--interval", "0.25s",
            "--duration", "1s", "--json", "-q", home=home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["rows_written"] > 0
    for d in layout.day_dirs(layout.fs_dir(s, "syn")):
        assert len(list(d.glob("*.parquet"))) == 1
    assert _totals(s) == before


def test_a_full_disk_leaves_the_small_files_and_says_so(tmpfs):
    """ENOSPC while writing the merged file: the error is reported, the day is tried again later,
    no temporary file is left behind and every row still counts once."""
    disk = tmpfs("store", "size=3m")
    s, base = _store(disk, chunks=12)
    before = _totals(s)
    names = {d: sorted(f.name for f in d.glob("*.parquet")) for d in layout.day_dirs(base)}
    filler = disk / "filler"
    with open(filler, "wb") as f:  # fill what is left
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    errors, done = [], set()
    made = compact.compact_finished_days(base, WRITER, 2**62, 0, done, lambda d, e: errors.append((d, e.errno)))
    assert made == [] and done == set()
    assert [e for _, e in errors] == [28] * len(names)  # ENOSPC, once per day
    for d, before_names in names.items():
        assert sorted(f.name for f in d.glob("*.parquet")) == before_names
        assert not list(d.glob(".*.tmp"))
    assert _totals(s) == before
    filler.unlink()
    assert len(compact.compact_finished_days(base, WRITER, 2**62, 0, done)) == len(names)
    assert _totals(s) == before
