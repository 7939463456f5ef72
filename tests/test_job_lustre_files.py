"""The Lustre per-file table (stats/lustre.lustre_files, findings L01-L03) over all files of a log at once
(issue 40) against the per-file pandas loop it replaced, kept here as the reference: same rows, same order,
same dtypes, same values to the last bit, on every public log; and on every public log with POSIX records
given a planted Lustre layout for all its files, so the multi-rank files of the bigger logs are compared too."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from darshan_support import all_real_logs, need_darshan_logs  # noqa: F401
from ioweather.sources.darshan_log import read_log
from ioweather.stats.job import cols, monitored, zero_missing
from ioweather.stats.lustre import _ids_column, _ranks_column, lustre_files

def _distinct(paths):
    seen, out = set(), []
    for p in paths:
        b = p.read_bytes()
        if b not in seen:
            seen.add(b)
            out.append(p)
    return out


LOGS = _distinct(all_real_logs())
#: The reference loop takes 1-16 s on these (thousands of records): outside the fast tier.
SLOW_LOGS = {"sample-badost.darshan"}
SLOW_PLANTED = SLOW_LOGS | {"imbalanced-io.darshan", "hdf5_file_opens_only.darshan", "dxt.darshan"}


def _params(slow: set[str]) -> list:
    return [pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in slow else []) for p in LOGS]


def _movers_reference(moved: float, slowest_bytes: float, nprocs: int) -> int:
    if not np.isfinite(slowest_bytes) or slowest_bytes <= 0:
        return nprocs
    if slowest_bytes >= 0.99 * moved:
        return 1
    return int(np.ceil(moved / slowest_bytes))


def lustre_files_reference(log) -> pd.DataFrame | None:
    """lustre_files as it was before issue 40 (a groupby loop with DataFrame lookups per file)."""
    lu, posix = log.lustre, log.records.get("POSIX")
    if lu is None or not len(lu) or posix is None or not len(posix):
        return None
    c = cols(posix)
    nprocs = max(int(log.nprocs), 1)
    layout = lu.drop_duplicates("id").set_index("id")
    ids = c["id"]
    keep = np.isin(ids, layout.index.to_numpy(np.uint64))
    if not keep.any():
        return None
    rank = c["rank"]
    moved = zero_missing(c, "POSIX_BYTES_READ") + zero_missing(c, "POSIX_BYTES_WRITTEN")
    rw = zero_missing(c, "POSIX_F_READ_TIME") + zero_missing(c, "POSIX_F_WRITE_TIME")
    meta = zero_missing(c, "POSIX_F_META_TIME")
    slow_t = monitored(c, "POSIX_F_SLOWEST_RANK_TIME")
    slow_b = monitored(c, "POSIX_SLOWEST_RANK_BYTES")
    slow_r = monitored(c, "POSIX_SLOWEST_RANK")
    size = np.fmax(monitored(c, "POSIX_MAX_BYTE_READ"), monitored(c, "POSIX_MAX_BYTE_WRITTEN")) + 1
    ops = zero_missing(c, "POSIX_READS") + zero_missing(c, "POSIX_WRITES")
    acc = zero_missing(c, "POSIX_ACCESS1_ACCESS")
    df = pd.DataFrame({"id": ids, "rank": rank, "name": posix.names, "moved": moved, "rw": rw, "meta": meta,
                       "slow_t": slow_t, "slow_b": slow_b, "slow_r": slow_r, "size": size, "ops": ops,
                       "access": acc})[keep]
    rows = []
    for fid, g in df.groupby("id", sort=False):
        shared = bool((g["rank"] < 0).any())
        b = float(g["moved"].sum())
        if shared:
            r = g[g["rank"] < 0].iloc[0]
            wall = r["slow_t"] if np.isfinite(r["slow_t"]) and r["slow_t"] > 0 else float(r["rw"] + r["meta"])
            movers = _movers_reference(b, r["slow_b"], nprocs)
            top = int(r["slow_r"]) if np.isfinite(r["slow_r"]) else None
            nranks = nprocs
        else:
            per = g["rw"] + g["meta"]
            wall = float(per.max())
            movers = int((g["moved"] > 0).sum())
            top = int(g["rank"].iloc[int(np.argmax(g["moved"].to_numpy()))])
            nranks = int(g["rank"].nunique())
        lay = layout.loc[fid]
        rows.append({"id": fid, "name": g["name"].iloc[0], "shared": shared, "nranks": nranks,
                     "movers": max(min(movers, nranks), 1 if b > 0 else 0), "top_rank": top,
                     "stripe_count": int(lay["stripe_count"]), "stripe_size": int(lay["stripe_size"]),
                     "size": float(np.nanmax(g["size"].to_numpy())) if np.isfinite(g["size"]).any() else 0.0,
                     "bytes": b, "ops": float(g["ops"].sum()), "wall_s": float(wall),
                     "rw_s": float(g["rw"].sum()), "meta_s": float(g["meta"].sum()),
                     "access": int(g["access"].iloc[int(np.argmax(g["ops"].to_numpy()))])})
    return pd.DataFrame(rows)


def _same(log) -> int:
    want, got = lustre_files_reference(log), lustre_files(log)
    if want is None:
        assert got is None
        return 0
    # bit for bit: check_exact, and NaN where NaN
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    for name in want.columns:
        if want[name].dtype == np.float64:
            assert np.array_equal(got[name].to_numpy(), want[name].to_numpy(), equal_nan=True), name
            assert not (np.signbit(got[name].to_numpy()) ^ np.signbit(want[name].to_numpy())).any(), name
    return len(want)


def _planted(log, seed: int):
    """`log` with a Lustre layout for every POSIX file (some ids twice: the first is the layout), the records
    shuffled so a file's records are not contiguous."""
    posix = log.records.get("POSIX")
    ids = np.unique(np.asarray(cols(posix)["id"], dtype=np.uint64))
    rng = np.random.default_rng(seed)
    twice = ids[rng.random(len(ids)) < 0.2]
    all_ids = rng.permutation(np.concatenate([ids, twice]))
    n = len(all_ids)
    lustre = pd.DataFrame({"id": all_ids.astype(np.uint64), "rank": np.full(n, -1), "components": np.ones(n, int),
                           "stripe_size": rng.choice([1 << 16, 1 << 20, 4 << 20], n),
                           "stripe_count": rng.integers(1, 9, n), "pool": [""] * n,
                           "ost_ids": [",".join(map(str, rng.integers(0, 40, 2))) for _ in range(n)]})
    return dataclasses.replace(log, lustre=lustre)


@pytest.mark.parametrize("path", _params(SLOW_LOGS))
def test_same_table_as_the_per_file_loop(path):
    _same(read_log(path, dxt=False, heatmaps=False))


@pytest.mark.parametrize("path", _params(SLOW_PLANTED))
def test_same_table_with_a_layout_for_every_file(path):
    log = read_log(path, dxt=False, heatmaps=False)
    posix = log.records.get("POSIX")
    if posix is None or not len(posix):
        pytest.skip("no POSIX records")
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print("seed", seed)
    assert _same(_planted(log, seed)) > 0


def test_the_public_logs_cover_what_the_reduction_must_get_right():
    """Without these cases in the data above, the comparison would not test the groups' code paths."""
    seen = {"lustre logs": 0, "shared": 0, "multi-rank": 0, "3+ records": 0, "no top rank": 0}
    for path in LOGS:
        log = read_log(path, dxt=False, heatmaps=False)
        if log.lustre is not None and len(log.lustre):
            seen["lustre logs"] += 1
        posix = log.records.get("POSIX")
        if posix is None or not len(posix):
            continue
        f = lustre_files(_planted(log, 0))
        c = cols(posix)
        _, n = np.unique(np.asarray(c["id"], dtype=np.uint64), return_counts=True)
        seen["shared"] += int(f["shared"].sum())
        seen["multi-rank"] += int(((f["nranks"] > 1) & ~f["shared"]).sum())
        seen["3+ records"] += int((n >= 3).sum())
        seen["no top rank"] += int(f["top_rank"].isna().sum())
    print(seen)
    assert all(v > 0 for k, v in seen.items() if k != "no top rank"), seen


@pytest.mark.parametrize("values", [[3, 0, 7], [3, None, 7], [None, None], [2**63 + 5, 1], [1, 2], [2**64 - 1]])
def test_columns_typed_as_rows_of_python_values_would_be(values):
    """What the public logs do not hold (a shared file whose slowest rank is not monitored, ids of 2^63 and
    up): the column types pandas gives a list of per-file dicts, which the loop made."""
    want = pd.DataFrame([{"v": v} for v in values])["v"]
    if any(v is not None and v >= 2**63 for v in values):
        got = pd.Series(_ids_column(np.array(values, dtype=np.uint64)), name="v")
    elif all(v is not None for v in values):
        got = pd.Series(_ids_column(np.array(values, dtype=np.uint64)), name="v")
        pd.testing.assert_series_equal(pd.Series(_ranks_column(np.array(values, float)), name="v"), want)
    else:
        got = pd.Series(_ranks_column(np.array([np.nan if v is None else v for v in values], float)), name="v")
    pd.testing.assert_series_equal(got, want)
