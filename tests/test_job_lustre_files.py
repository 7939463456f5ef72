"""The Lustre per-file table (stats/lustre.lustre_files) and findings L01-L03 over all files of a log at once
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
from ioweather.sources.darshan_log import LustreLayouts
from ioweather.stats.lustre import _ids_column, _ranks_column, lustre_file_columns

def lustre_files(log) -> pd.DataFrame | None:
    """The per-file table as a DataFrame of `lustre_file_columns` (None without Lustre or POSIX records): what
    findings L01-L03 read their rows from before issue 40's fifth pass (findings._LustreRows reads them as it)."""
    columns = lustre_file_columns(log)
    return None if columns is None else pd.DataFrame(columns)


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
    lu = lu.frame()
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
    lustre = LustreLayouts(id=all_ids.astype(np.uint64), rank=np.full(n, -1),
                           stripe_size=rng.choice([1 << 16, 1 << 20, 4 << 20], n), stripe_count=rng.integers(1, 9, n),
                           pool=np.array([""] * n, object),
                           ost_ids=np.array([",".join(map(str, rng.integers(0, 40, 2))) for _ in range(n)], object))
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


# -- the findings L01-L03 decided on the per-file arrays (issue 40) against the rules as they were on the table

def lustre_findings_reference(log, t, clock) -> list[dict]:
    """findings._lustre_findings before issue 40: each rule filtered the whole per-file DataFrame."""
    from ioweather.stats import costs
    from ioweather.stats.findings import _f, _other_files, _setstripe_target, format_bytes, format_seconds, MiB
    from ioweather.stats.lustre import lfs_size, ost_count

    files = lustre_files(log)
    if files is None or not len(files):
        return []
    out = []
    osts = t.lustre_osts or ost_count(log.lustre)
    target = np.array([costs.stripe_target(s, osts) for s in files["size"]])
    sel = ((files["size"] >= t.lustre_large_file_bytes) & (files["stripe_count"] * t.lustre_stripe_shortfall < target))
    big = files[sel].assign(target=target[sel.to_numpy()])
    if len(big):
        saving = np.array([costs.striping_saving(r.wall_s, r.stripe_count, r.target) for r in big.itertuples()])
        w = big.iloc[int(np.argmax(saving))]
        one = w["movers"] == 1 and w["bytes"] > 0
        who = (f"all of its bytes moved by one rank (rank {w['top_rank']})" if one
               else f"moved by at least {w['movers']} of its {w['nranks']} ranks")
        where = _setstripe_target([w["name"]], log.mounts)
        fix = f"lfs setstripe -c {int(w['target'])} -S {lfs_size(max(int(w['stripe_size']), MiB))} {where}"
        out.append(_f("L01", f"{len(big)} large Lustre file(s) striped over too few OSTs; worst: "
                      f"{w['name'] or 'unnamed'} ({format_bytes(w['size'])}, {format_bytes(w['bytes'])} moved, "
                      f"{format_seconds(w['wall_s'])}) on {w['stripe_count']} OST(s) of ≥ {osts}, {who}. Before "
                      f"creating it: {fix}" + ("; and write it from several ranks (collective MPI-IO)" if one else "")
                      + _other_files(big, saving, int(np.argmax(saving))),
                      {"files": int(len(big)), "worst_file": w["name"], "size_bytes": float(w["size"]),
                       "bytes": float(w["bytes"]), "stripe_count": int(w["stripe_count"]),
                       "usable_stripe_count": int(w["target"]), "fs_osts": osts, "ranks_moving": int(w["movers"]),
                       "top_rank": w["top_rank"], "file_time_s": float(w["wall_s"])},
                      {"lustre_large_file_bytes": t.lustre_large_file_bytes,
                       "lustre_stripe_shortfall": t.lustre_stripe_shortfall, "lustre_osts": t.lustre_osts},
                      cost=float(saving.sum()), model="striping", fix=fix,
                      action=(f"stripe the {format_bytes(w['size'])} file {w['name'] or ''} over {int(w['target'])} "
                              f"OSTs, not {w['stripe_count']}" + (", and share its I/O out from the one rank that "
                                                                  "does it all" if one else "") + f" ({fix})"),
                      overlaps=("P18", "P19")))
    acc = files["access"].to_numpy(np.int64)
    z = files["stripe_size"].to_numpy(np.int64)
    ok = (acc >= 64 * 1024) & (z > 0) & (files["bytes"].to_numpy() >= t.min_bytes)
    mis = ok & (acc % np.maximum(z, 1) != 0) & (z % np.maximum(acc, 1) != 0)
    if mis.any():
        m = files[mis]
        saving = sum(costs.misaligned_saving(r.rw_s, 1.0, r.access, r.stripe_size) for r in m.itertuples())
        w = m.iloc[int(np.argmax(m["bytes"].to_numpy()))]
        fix = (f"lfs setstripe -S {lfs_size(int(w['access']))} {_setstripe_target([w['name']], log.mounts)}"
               if w["access"] % (64 * 1024) == 0 else None)
        out.append(_f("L02", f"{int(mis.sum())} Lustre file(s) whose dominant request size does not divide into "
                      f"their stripe size, nor the reverse (worst: {w['name'] or 'unnamed'}, requests of "
                      f"{format_bytes(w['access'])} on {format_bytes(w['stripe_size'])} stripes): requests straddle "
                      "OSTs; " + (f"use {fix}" if fix else "make the request size a multiple of the stripe size"),
                      {"files": int(mis.sum()), "worst_file": w["name"], "request_bytes": int(w["access"]),
                       "stripe_size_bytes": int(w["stripe_size"])}, {"min_bytes": t.min_bytes},
                      cost=clock.wall(saving), model="misaligned", fix=fix,
                      action="align the Lustre stripe size with the request size"))
    small = files[(files["size"] < t.lustre_small_file_bytes) & (files["stripe_count"] > 1)]
    if len(small) >= t.lustre_small_files:
        c_mean = float(small["stripe_count"].mean())
        where = _setstripe_target(list(small["name"]), log.mounts)
        fix = f"lfs setstripe -c 1 {where}"
        out.append(_f("L03", f"{len(small)} Lustre files smaller than {format_bytes(t.lustre_small_file_bytes)} "
                      f"are striped over {c_mean:.0f} OSTs on average: each open and close talks to every OST; {fix}",
                      {"files": int(len(small)), "mean_stripe_count": c_mean},
                      {"lustre_small_file_bytes": t.lustre_small_file_bytes, "lustre_small_files": t.lustre_small_files},
                      cost=clock.wall(float(small["meta_s"].sum()) * (1 - 1 / c_mean)), model="small-files-striping",
                      fix=fix, action=f"put the small files on one stripe: {fix}", overlaps=("F01", "P17")))
    return out


#: The defaults, and thresholds low enough that L01 (files of 1 KiB up), L02 and L03 fire on the planted layouts.
FIRING = {"lustre_large_file_bytes": 1024, "lustre_stripe_shortfall": 1.5, "lustre_small_file_bytes": 1 << 30,
          "lustre_small_files": 2, "min_bytes": 0}


def _same_findings(log) -> dict:
    from ioweather.stats.costs import Clock
    from ioweather.stats.findings import Thresholds, _lustre_findings

    clock = Clock(io_time_s=10.0, cumulative_s=20.0, runtime_s=30.0, nprocs=max(log.nprocs, 1))
    fired = {}
    for t in (Thresholds(), Thresholds(**FIRING), Thresholds(**FIRING, lustre_osts=7)):
        want, got = lustre_findings_reference(log, t, clock), _lustre_findings(log, t, clock)
        assert got == want
        fired.update({f["code"]: True for f in got})
    return fired


@pytest.mark.parametrize("path", _params(SLOW_LOGS))
def test_same_lustre_findings_as_the_rules_on_the_table(path):
    _same_findings(read_log(path, dxt=False, heatmaps=False))


@pytest.mark.parametrize("path", _params(SLOW_PLANTED))
def test_same_lustre_findings_with_a_layout_for_every_file(path):
    log = read_log(path, dxt=False, heatmaps=False)
    posix = log.records.get("POSIX")
    if posix is None or not len(posix):
        pytest.skip("no POSIX records")
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print("seed", seed)
    _same_findings(_planted(log, seed))


@pytest.mark.slow  # every public log read: 3 s at load 15
def test_the_planted_layouts_fire_every_lustre_rule():
    """Without L01, L02 and L03 firing somewhere, the comparisons above would test only the masks."""
    fired = {}
    for path in LOGS:
        log = read_log(path, dxt=False, heatmaps=False)
        if len(log.records.get("POSIX", ())):
            fired.update(_same_findings(_planted(log, 0)))
    assert {"L01", "L02", "L03"} <= set(fired), fired
