"""store/telemetry_rollup.py and the rollup-aware workload queries: the summaries equal an independent
pandas computation, and `ioweather workload` gives the same document through them as row by row,
whatever mix of whole files, straddling files, older files without rollups and damaged rollups."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import workload_synthetic as syn
from ioweather.config import Settings
from ioweather.store.telemetry_imports import ImportRun
from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_query as Q
from ioweather.store import telemetry_rollup as rollup
from ioweather.services.telemetry.workload import compute

MIN_NS = 60_000_000_000
OPTS = dict(resample_s=60.0, idle_threshold=0.05, smooth_s=600.0, min_amplitude=float(1 << 30), acf_max_lag_s=3600.0)


def _home(tmp_path, df=None, chunks=1):
    """A store holding the synthetic file system, written in `chunks` pieces per day (as `collect` does)."""
    s = Settings(home=tmp_path / "home")
    df = syn.frame() if df is None else df
    df = df.sort_values("time_ns", kind="stable")
    for idx in np.array_split(np.arange(len(df)), chunks):
        layout.write_rows(s, "syn", df.iloc[idx])
    return s


def _files(s):
    return sorted(layout.fs_dir(s, "syn").glob("date=*/*.parquet"))


def _same(a, b, path=""):
    """Two workload documents agree: counts exactly, floats to 1e-12 (sums in another order)."""
    a, b = (x.to_json() if hasattr(x, "to_json") else x for x in (a, b))  # a Workload answer
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float) and not (math.isnan(a) and math.isnan(b)):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-9), path
    else:
        assert a == b or (a != a and b != b), path


def test_rollup_rows_equal_a_pandas_computation(tmp_path):
    s = _home(tmp_path)
    df = syn.frame()
    valid = df[df["metric"].isin(Q.BYTES_METRICS) & np.isfinite(df["value"]) & (df["value"] >= 0)]
    for f in _files(s):
        data = pq.read_table(f).to_pandas()
        r = pq.read_table(rollup.rollup_path(f)).to_pandas()
        mine = valid[valid["time_ns"].isin(data["time_ns"])]
        minute = mine.assign(minute=mine["time_ns"] // MIN_NS).groupby(["metric", "minute"]).agg(
            bytes=("value", "sum"), top=("value", "max"), n=("value", "size"))
        got = r[r["minute"].notna()].set_index(["metric", "minute"]).sort_index()
        got.index = got.index.set_levels(got.index.levels[1].astype(np.int64), level=1)
        assert np.array_equal(got["bytes"].to_numpy(), minute["bytes"].to_numpy())
        assert np.array_equal(got["top"].to_numpy(), minute["top"].to_numpy())
        assert np.array_equal(got["n"].to_numpy(), minute["n"].to_numpy())
        per_target = mine.groupby(["metric", "target"]).agg(n=("value", "size"), iv=("interval_s", "min"))
        tgt = r[r["target"].notna()].set_index(["metric", "target"]).sort_index()
        assert tgt["n"].tolist() == per_target["n"].tolist()
        assert tgt["min_interval_s"].tolist() == per_target["iv"].tolist()
        first, last = rollup.read_range(rollup.rollup_path(f))
        assert (first, last) == (int(data["time_ns"].min()), int(data["time_ns"].max()))


def test_the_counter_reset_and_the_missing_minute_are_not_counted(tmp_path):
    s = _home(tmp_path)
    r = pd.concat([pq.read_table(rollup.rollup_path(f)).to_pandas() for f in _files(s)])
    t = r[r["target"].notna()].groupby("metric")["n"].sum()
    expected = syn.TARGETS * (syn.MINUTES - 1) * 12  # every 5 s of every minute but the missing one
    assert t["read_bytes"] == expected - 1  # the reset slot is NaN on one target
    assert not (r["minute"] == (syn.T0 // MIN_NS + syn.MISSING_MINUTE)).any()


@pytest.mark.parametrize("since,until", [(None, None), ("2024-03-01T06:30:00Z", "2024-03-02T13:17:00Z"),
                                         ("2024-03-02T00:00:00Z", None)])
@pytest.mark.parametrize("chunks", [1, 7])
def test_workload_through_rollups_equals_row_by_row(tmp_path, since, until, chunks):
    s = _home(tmp_path, chunks=chunks)
    a = pd.Timestamp(since).to_pydatetime() if since else None
    b = pd.Timestamp(until).to_pydatetime() if until else None
    fast, data_fast = compute(s, "syn", a, b, **OPTS)
    slow, data_slow = compute(s, "syn", a, b, **OPTS, use_rollups=False)
    _same(fast, slow)
    assert np.array_equal(data_fast.read_bytes, data_slow.read_bytes, equal_nan=True)
    lo, hi = (None if x is None else pd.Timestamp(x).value for x in (since, until))
    plan = Q.plan_files(layout.fs_dir(s, "syn"), lo, hi, 60 * 10**9)
    for f in _files(s):  # whole files inside the range through rollups, straddling ones row by row, others not at all
        t = pq.read_table(f, columns=["time_ns"]).column(0).to_numpy()
        inside = (lo is None or t.min() >= lo) and (hi is None or t.max() < hi)
        day0 = t.min() // Q.DAY_NS * Q.DAY_NS  # one file holds one UTC day; days outside the range are skipped
        outside = (lo is not None and day0 + Q.DAY_NS <= lo) or (hi is not None and day0 >= hi)
        assert (f in plan.rolled, f in plan.raw) == ((True, False) if inside else (False, not outside)), f


def test_a_resample_of_whole_minutes_uses_rollups_and_others_read_rows(tmp_path):
    s = _home(tmp_path)
    base = layout.fs_dir(s, "syn")
    assert Q.plan_files(base, None, None, 300 * 10**9).raw == []
    assert Q.plan_files(base, None, None, 90 * 10**9).rolled == []
    opts = {**OPTS, "resample_s": 420.0}  # 7 minutes: does not divide a day, so daily sums come from minutes
    _same(compute(s, "syn", None, None, **opts)[0], compute(s, "syn", None, None, **opts, use_rollups=False)[0])


def test_older_files_get_rollups_built_and_damaged_ones_rebuilt(tmp_path):
    s = _home(tmp_path, chunks=3)
    files = _files(s)
    reference = compute(s, "syn", None, None, **OPTS, use_rollups=False)[0]
    rollup.rollup_path(files[0]).unlink(missing_ok=True)  # written before rollups existed
    rollup.rollup_path(files[1]).write_bytes(b"PAR1 truncated")     # damaged
    t = pq.read_table(rollup.rollup_path(files[2]))                 # another format version
    pq.write_table(t.replace_schema_metadata({b"ioweather.rollup": b"0"}), rollup.rollup_path(files[2]))
    plan = Q.plan_files(layout.fs_dir(s, "syn"), None, None, 60 * 10**9)
    assert plan.built == 3 and plan.raw == []
    assert all(rollup.read_range(rollup.rollup_path(f)) is not None for f in files)
    _same(compute(s, "syn", None, None, **OPTS)[0], reference)


def test_a_store_where_rollups_cannot_be_written_reads_rows(tmp_path):
    """A read-only store (or a full disk): the rollups that cannot be written are not needed to be right.
    A plain file where the `_rollup` directory belongs makes the write fail even for root."""
    s = _home(tmp_path)
    reference = compute(s, "syn", None, None, **OPTS)[0]
    for f in _files(s):
        rollup.rollup_path(f).unlink(missing_ok=True)
        os.rmdir(rollup.rollup_path(f).parent)
        rollup.rollup_path(f).parent.write_bytes(b"")
    plan = Q.plan_files(layout.fs_dir(s, "syn"), None, None, 60 * 10**9)
    assert plan.built == 0 and plan.rolled == [] and len(plan.raw) == len(_files(s))
    _same(compute(s, "syn", None, None, **OPTS)[0], reference)


def test_rollups_go_with_their_files_and_orphans_are_ignored(tmp_path):
    s = Settings(home=tmp_path / "home")
    df = syn.frame()
    first = ImportRun(s, "syn", "csv-abc")
    first.write(df)
    first.commit()
    again = ImportRun(s, "syn", "csv-abc")  # importing the same source again replaces the first run's files
    again.write(df)
    again.commit()
    base = layout.fs_dir(s, "syn")
    data = {p.name for p in base.glob("date=*/*.parquet")}
    rolls = {p.name for p in base.glob("date=*/_rollup/*.parquet")}
    assert data == rolls and len(data) == syn.DAYS
    # A rollup whose data file is gone (a crash between the two unlinks) is never read.
    orphan = base / "date=2024-03-01" / "_rollup" / "gone-0.parquet"
    orphan.write_bytes(rollup.rollup_path(sorted(base.glob("date=2024-03-01/*.parquet"))[0]).read_bytes())
    _same(compute(s, "syn", None, None, **OPTS)[0], compute(s, "syn", None, None, **OPTS, use_rollups=False)[0])


def test_files_without_byte_metrics_are_skipped(tmp_path):
    s = Settings(home=tmp_path / "home")
    gauges = pd.DataFrame({"time_ns": syn.T0 + np.arange(10, dtype=np.int64) * 5 * 10**9, "target": "t",
                           "metric": "free_bytes", "value": 1.0, "interval_s": 5.0})
    layout.write_rows(s, "syn", gauges)
    layout.write_rows(s, "syn", syn.frame())
    plan = Q.plan_files(layout.fs_dir(s, "syn"), None, None, 60 * 10**9)
    assert len(plan.rolled) == syn.DAYS and plan.raw == []
