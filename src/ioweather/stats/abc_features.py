"""tokio-abc job summaries -> the derived metrics tokio-abcutils computes (abcutils.core.load_and_synthesize_csv
and sc18paper.load_dataset), written afresh:

- read or write job: more bytes written than read by the biggest API; file per process when the
  files opened divide by the processes to within 5 %, else shared;
- coverage_factor_{read_bw, write_bw, bw, opens, stats, ops, nodehrs} = the job's Darshan POSIX amount
  / the file system's amount in the job's window (opens vs the MDS's open ops, stats vs getattr);
  infinities are NaN; contention_K = 1 - coverage_factor_K;
- motif (`_benchmark_id`) = application + fpp/shared + read/write; fraction of peak
  (`darshan_normalized_perf_by_max`) = performance / the best of the same application, subsystem
  (Cori KNL vs Haswell by > 1024 processes), file system, fpp/shared and direction;
- the paper's filters: starts within [2017-02-14, 2018-02-15), more than 1 GiB moved, no
  hacc_io_write_shared_write (invalid ids on Mira), no Cori Haswell; coverage_factor_bw > 1.2 is NaN.

Unlike tokio-abcutils, rows with a NaN in some unrelated column are kept (it drops them all with
dropna(how="any"), which on Cori loses 56 % of the rows); correlations drop NaN per pair instead.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ioweather.stats.coverage import CF_MAX_PLAUSIBLE

DATE_START_S = pd.Timestamp("2017-02-14").timestamp()  # the paper's year; naive dates, as tokio-abcutils
DATE_END_S = pd.Timestamp("2018-02-15").timestamp()
MOTIF_COLUMNS = ["darshan_app", "_subsystem", "_file_system", "darshan_fpp_or_ssf_job", "darshan_read_or_write_job"]


def _ratio(a: pd.Series, b: pd.Series) -> pd.Series:
    return (a / b).replace([np.inf, -np.inf], np.nan)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(np.nan, index=df.index)


def derive(df: pd.DataFrame, system: str, ppn: int = 16) -> pd.DataFrame:
    """The summary with the derived columns, every row kept (filters: `paper_filter`)."""
    df = df[df["darshan_agg_perf_by_slowest_posix"].notna()].copy()
    df["_system"] = system
    nprocs = df["darshan_nprocs"].astype(float)
    df["_subsystem"] = np.where(nprocs > 1024, "cori-knl", "cori-haswell") if system == "cori" else system
    df["_test_platform"] = df["_file_system"].astype(str) + "@" + df["_subsystem"]
    write = df["darshan_biggest_write_api_bytes"] > df["darshan_biggest_read_api_bytes"]
    df["darshan_write_job?"] = write.astype(int)
    df["darshan_read_or_write_job"] = np.where(write, "write", "read")
    for d in ("read", "write"):
        files = df[f"darshan_biggest_{d}_api_files"].astype(float)
        df[f"darshan_fpp_{d}_job?"] = (np.abs(_ratio(files % nprocs, files)) < 0.05).astype(int)
    fpp = np.where(write, df["darshan_fpp_write_job?"], df["darshan_fpp_read_job?"])
    df["darshan_fpp_job?"] = fpp
    df["darshan_fpp_or_ssf_job"] = np.where(fpp == 1, "fpp", "shared")
    df["darshan_app"] = [os.path.basename(str(x)) for x in df["darshan_app"]]
    df["_benchmark_id"] = df["darshan_app"] + "_" + df["darshan_fpp_or_ssf_job"] + "_" + df["darshan_read_or_write_job"]

    jr, jw = df["darshan_tot_bytes_read_posix"], df["darshan_tot_bytes_written_posix"]
    fr, fw = df["fs_tot_bytes_read"], df["fs_tot_bytes_written"]
    df["fs_tot_bytes"] = fr + fw
    df["fs_tot_ops"] = _col(df, "fs_tot_read_ops") + _col(df, "fs_tot_write_ops")
    df["coverage_factor_read_bw"] = _ratio(jr, fr)
    df["coverage_factor_write_bw"] = _ratio(jw, fw)
    df["coverage_factor_bw"] = _ratio(jr + jw, df["fs_tot_bytes"])
    df["coverage_factor_opens"] = _ratio(_col(df, "darshan_tot_opens_posix"), _col(df, "fs_tot_open_ops"))
    df["coverage_factor_stats"] = _ratio(_col(df, "darshan_tot_stats_posix"), _col(df, "fs_tot_getattr_ops"))
    df["coverage_factor_read_ops"] = _ratio(_col(df, "darshan_tot_reads_posix"), _col(df, "fs_tot_read_ops"))
    df["coverage_factor_write_ops"] = _ratio(_col(df, "darshan_tot_writes_posix"), _col(df, "fs_tot_write_ops"))
    df["coverage_factor_ops"] = _ratio(_col(df, "darshan_tot_reads_posix") + _col(df, "darshan_tot_writes_posix"),
                                       df["fs_tot_ops"])
    if "jobsdb_concurrent_nodehrs" in df.columns:
        job_nodehrs = nprocs / ppn * df["darshan_walltime"].astype(float) / 3600.0
        df["coverage_factor_nodehrs"] = _ratio(job_nodehrs, df["jobsdb_concurrent_nodehrs"])
    df.loc[df["coverage_factor_bw"] > CF_MAX_PLAUSIBLE, "coverage_factor_bw"] = np.nan
    for c in [c for c in df.columns if c.startswith("coverage_factor_")]:
        df["contention_" + c[len("coverage_factor_"):]] = 1.0 - df[c]

    perf = df["darshan_agg_perf_by_slowest_posix"]
    df["darshan_agg_perf_by_slowest_posix_gibs"] = perf / 1024.0
    peak = df.groupby(MOTIF_COLUMNS)["darshan_agg_perf_by_slowest_posix"].transform("max")
    df["darshan_normalized_perf_by_max"] = perf / peak
    return df


def epoch_s(values: pd.Series) -> pd.Series:
    """Unix seconds from epoch numbers or date strings (tokio-abc's CSVs hold either)."""
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().any() or values.empty:
        return num.astype(float)
    return pd.to_datetime(values, errors="coerce", utc=True).astype("int64") / 1e9


def paper_filter(df: pd.DataFrame) -> pd.Series:
    """The rows the SC'18 paper's analysis kept (see the module docstring)."""
    start = epoch_s(df["_datetime_start"])
    return ((start >= DATE_START_S) & (start < DATE_END_S) & (df["darshan_total_gibs_posix"] > 1.0)
            & (df["_benchmark_id"] != "hacc_io_write_shared_write") & (df["_test_platform"] != "cscratch@cori-haswell"))
