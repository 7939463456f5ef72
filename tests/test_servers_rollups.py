"""The Servers page's per-target rollups (store/telemetry_targets.py): written with the data, merged by
compaction, removed with their file, and every level (5 minutes, 1 hour) and the raw rows giving the
numbers pandas computes from the raw rows themselves (sums of valid values per target and bin, the
largest value / interval)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ioweather.config import Settings
from ioweather.services.telemetry import fsview
from ioweather.store import telemetry_compact as compact
from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_targets as Q

DAY = 86_400_000_000_000
T0 = 19_600 * DAY          # 2023-08-31, a day boundary
STEP_S = 60.0
FS = "roll"


def _rows(targets: int, days: float, seed: int, start_ns: int = T0) -> pd.DataFrame:
    """Read and write amounts at 60 s: gamma values, some NaN (missing), OST0000 silent on the first day,
    the last target gone after 30 hours, one reading of a longer interval (a gap)."""
    rng = np.random.default_rng(seed)
    n = int(days * 86400 / STEP_S)
    t = start_ns + np.arange(n, dtype=np.int64) * int(STEP_S * 1e9)
    frames = []
    for metric in ("read_bytes", "write_bytes"):
        for i in range(targets):
            v = rng.gamma(0.5, 3e6, n)
            v[rng.random(n) < 0.03] = np.nan
            keep = np.ones(n, bool)
            if i == 0:
                keep &= t >= T0 + DAY
            if i == targets - 1:
                keep &= t < T0 + 30 * 3600 * 10**9
            interval = np.full(n, STEP_S)
            interval[n // 3] = 600.0
            frames.append(pd.DataFrame({"time_ns": t[keep], "target": f"{FS}-OST{i:04x}", "metric": metric,
                                        "value": v[keep], "interval_s": interval[keep]}))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture
def store(tmp_path):
    settings = Settings.resolve(tmp_path / "home")
    a, b = _rows(9, 2.0, 1), _rows(9, 2.0, 2)
    b = b[b["target"] != f"{FS}-OST0003"]                      # a second writer that lacks a target
    layout.write_rows(settings, FS, a, writer="collect")
    layout.write_rows(settings, FS, b, writer="import")
    return settings, pd.concat([a, b], ignore_index=True)


def _reference(rows: pd.DataFrame, since_ns: int, until_ns: int, step_ns: int) -> pd.DataFrame:
    ok = rows["value"].between(0, np.finfo(float).max) & (rows["time_ns"] >= since_ns) & (rows["time_ns"] < until_ns)
    d = rows[ok].assign(bin=lambda f: f["time_ns"] // step_ns, rate=lambda f: f["value"] / f["interval_s"])
    return d.groupby(["metric", "target", "bin"]).agg(amount=("value", "sum"), n=("value", "size"),
                                                      top_bps=("rate", "max"))


def _as_frame(c: dict, metrics) -> pd.DataFrame:
    return pd.DataFrame({"metric": np.array(metrics)[c["metric"]], "target": np.array(c["targets"])[c["target"]],
                         "bin": c["bin"], "amount": c["amount"], "top_bps": c["top_bps"]}).set_index(
        ["metric", "target", "bin"]).sort_index()


def test_written_with_the_data_at_every_level(store):
    settings, _ = store
    files = layout.data_files(layout.fs_dir(settings, FS))
    assert len(files) == 4  # two writers x two days
    for f in files:  # before any read: written by write_rows itself
        for level in Q.LEVELS:
            assert Q.rollup_path(f, level).is_file()
        assert Q.read_range(Q.rollup_path(f)) is not None


@pytest.mark.parametrize("step_ns", [Q.BUCKET_NS, 3 * Q.BUCKET_NS, Q.HOUR_NS, 6 * Q.HOUR_NS, 240_000_000_000])
def test_every_level_equals_the_raw_rows(store, step_ns):
    """5-minute and hourly rollups, and a 4-minute bin no level divides (read from the rows)."""
    settings, rows = store
    since, until = T0, T0 + 2 * DAY
    metrics = ("read_bytes", "write_bytes")
    got = _as_frame(Q.target_cells(settings, FS, since, until, step_ns, metrics), metrics)
    want = _reference(rows, since, until, step_ns)
    assert got.index.equals(want.index)
    np.testing.assert_allclose(got["amount"], want["amount"], rtol=1e-12)
    np.testing.assert_allclose(got["top_bps"], want["top_bps"], rtol=1e-12)
    assert Q.level_for(step_ns) == {Q.BUCKET_NS: Q.BUCKET_NS, 3 * Q.BUCKET_NS: 3 * Q.BUCKET_NS, Q.HOUR_NS: Q.HOUR_NS,
                                    6 * Q.HOUR_NS: Q.HOUR_NS}.get(step_ns)
    assert Q.count_targets(settings, FS, since, until, metrics) == rows["target"].nunique()


def test_servers_document_equals_pandas(store):
    settings, rows = store
    since, until = T0, T0 + 2 * DAY
    d = fsview.servers(settings, FS, since, until, "name").to_json()
    step_ns = int(d["step_s"] * 1e9)
    assert step_ns % Q.BUCKET_NS == 0 and len(d["time"]) <= fsview.MAX_COLUMNS
    want = _reference(rows, since, until, step_ns)
    per_target = want.groupby(["target", "metric"])["amount"].sum().unstack()
    got = pd.DataFrame(d["targets"]).set_index("target")
    assert list(got.index) == sorted(rows["target"].unique())
    np.testing.assert_allclose(got["read_bytes"], per_target.loc[got.index, "read_bytes"], rtol=1e-12)
    np.testing.assert_allclose(got["write_bytes"], per_target.loc[got.index, "write_bytes"], rtol=1e-12)
    peaks = want.groupby(["target", "metric"])["top_bps"].max().unstack()
    np.testing.assert_allclose(got["peak_read_bps"], peaks.loc[got.index, "read_bytes"], rtol=1e-12)
    # OST0000 started a day late, the last target stopped after 30 h: bins on the page's grid
    assert pd.Timestamp(got.loc[f"{FS}-OST0000", "first_seen"]) == pd.Timestamp("2023-09-01", tz="UTC")
    assert pd.Timestamp(got.loc[f"{FS}-OST0008", "last_seen"]) == pd.Timestamp(
        -(-(T0 + 30 * 3600 * 10**9) // step_ns) * step_ns, tz="UTC")
    # heatmap cells: integers of the highest rate, None exactly where the reference has no bin
    h = d["heatmap"]
    b0 = since // step_ns
    for i, t in enumerate(got.index):
        ref = want.loc["read_bytes"].loc[t]["amount"] if t in want.loc["read_bytes"].index else pd.Series(dtype=float)
        row = np.array([np.nan if v is None else v for v in h["read"][i]], float)
        expect = np.full(len(d["time"]), np.nan)
        expect[ref.index.to_numpy() - b0] = np.rint(ref.to_numpy() / d["step_s"] / h["top_bps"] * h["levels"])
        np.testing.assert_array_equal(row, expect)


def test_a_month_of_500_targets_reads_hours():
    """The bin the page picks for 30 days x 500 targets is a whole number of hours (hourly rollups)
    and fits the cell budget; 3 days read 15-minute rollups (hours would be 4x coarser than asked)."""
    cols = fsview.MAX_CELLS // 500
    step = fsview.pick_step_ns(30 * DAY, 5.0, cols)
    assert step % Q.HOUR_NS == 0 and 500 * (30 * DAY // step) <= fsview.MAX_CELLS
    step3 = fsview.pick_step_ns(3 * DAY, 5.0, cols)
    assert step3 == 3 * Q.BUCKET_NS and Q.level_for(step3) == 3 * Q.BUCKET_NS


def test_compaction_merges_and_removal_removes(store):
    settings, rows = store
    base = layout.fs_dir(settings, FS)
    extra = _rows(9, 0.5, 3)                          # a third file on the first day, same writer
    layout.write_rows(settings, FS, extra, writer="collect")
    rows = pd.concat([rows, extra], ignore_index=True)
    day_dir = base / "date=2023-08-31"
    parts = sorted(day_dir.glob("collect-*.parquet"))
    assert len(parts) == 2
    out = compact.compact_day(day_dir, "collect")
    for p in parts:  # the parts and their rollups are gone, the compacted file has its own
        assert not p.exists() and not any(Q.rollup_path(p, lv).exists() for lv in Q.LEVELS)
    assert all(Q.rollup_path(out, lv).is_file() for lv in Q.LEVELS)
    metrics = ("read_bytes", "write_bytes")
    for step in (Q.BUCKET_NS, Q.HOUR_NS):
        got = _as_frame(Q.target_cells(settings, FS, T0, T0 + 2 * DAY, step, metrics), metrics)
        want = _reference(rows, T0, T0 + 2 * DAY, step)
        assert got.index.equals(want.index)
        np.testing.assert_allclose(got["amount"], want["amount"], rtol=1e-12)


def test_missing_rollups_are_built_on_read(store):
    """A store written before the hourly level (or a crash between the two writes): read builds it."""
    settings, rows = store
    files = layout.data_files(layout.fs_dir(settings, FS))
    for f in files:
        Q.rollup_path(f, Q.HOUR_NS).unlink()
    metrics = ("write_bytes",)
    got = _as_frame(Q.target_cells(settings, FS, T0, T0 + 2 * DAY, Q.HOUR_NS, metrics), metrics)
    want = _reference(rows[rows["metric"] == "write_bytes"], T0, T0 + 2 * DAY, Q.HOUR_NS)
    np.testing.assert_allclose(got["amount"], want["amount"], rtol=1e-12)
    assert all(Q.rollup_path(f, Q.HOUR_NS).is_file() for f in files)


def test_a_window_that_cuts_a_day_reads_its_rows(store):
    """A file straddling the window is read row by row (its rollups hold rows outside it)."""
    settings, rows = store
    since, until = T0 + 7 * Q.HOUR_NS, T0 + 41 * Q.HOUR_NS
    metrics = ("read_bytes",)
    got = _as_frame(Q.target_cells(settings, FS, since, until, Q.HOUR_NS, metrics), metrics)
    want = _reference(rows[rows["metric"] == "read_bytes"], since, until, Q.HOUR_NS)
    assert got.index.equals(want.index)
    np.testing.assert_allclose(got["amount"], want["amount"], rtol=1e-12)
