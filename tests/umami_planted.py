"""Darshan jobs and 5 s telemetry planted through the store's own writers, for the job-weather tests and
the job page's climate-vs-weather panel; expected numbers are computed from the planted amounts."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pyarrow as pa

from ioweather.store import jobs as jstore
from ioweather.store import telemetry_layout as layout

S = 10**9
T0 = 1_700_000_000 * S  # 2023-11-14
MIB = 1 << 20
DAY = 86_400 * S
#: bytes the job writes per target and 5 s sample in its 60 s window (55 s + the 5 s tail)
PER_SAMPLE = 4 * MIB
SAMPLES = 12
#: The Darshan side's verdict of the planted jobs, as `jobs ingest` stores one.
DARSHAN_VERDICT = "no HIGH or WARN finding: the code's I/O looks fine"


def job_row(i: int, start_ns: int, dur_s: int, written: int, perf_mibps: float, jobid: int,
            exe: str = "/apps/ior -w", log_hash: str | None = None) -> tuple[dict, pa.Table]:
    h = log_hash or f"{i:064x}"
    row = {"log_hash": h, "path": f"/logs/{i}.darshan", "path_hash": f"{i:064x}", "size_bytes": 1, "mtime_ns": 1,
           "jobid": jobid, "uid": 1, "exe": exe, "nprocs": 16, "nnodes": 2, "start_ns": start_ns,
           "end_ns": start_ns + dur_s * S, "bytes_read": 0, "bytes_written": written, "posix_bytes_read": 0,
           "posix_bytes_written": written, "agg_perf_by_slowest_mibps": perf_mibps}
    files = pa.table({"log_hash": [h], "record_id": pa.array([i], pa.uint64()), "module": ["POSIX"], "reads": [0],
                      "writes": [written // MIB], "opens": [16], "bytes_read": [0], "bytes_written": [written],
                      "mount": ["/scratch"], "fs_type": ["lustre"], "name": [f"/scratch/out.{i}"],
                      "sharing": ["shared"], "nranks": [16], "read_time_s": [0.0],
                      "write_time_s": [written / MIB / perf_mibps], "meta_time_s": [0.1]})
    return row, files


def telemetry(start_ns: int, end_ns: int, job_per_target: int, other_per_target: int, targets=4) -> pd.DataFrame:
    """5 s samples on `targets` OSTs: the job's bytes spread evenly in its window + a competitor's everywhere."""
    t = np.arange(start_ns - 60 * S, end_ns + 60 * S, 5 * S)
    rows = []
    for k in range(targets):
        inside = (t >= start_ns) & (t < end_ns)
        v = np.where(inside, job_per_target, 0) + other_per_target
        rows.append(pd.DataFrame({"time_ns": t, "target": f"fs-OST{k:04x}", "metric": "write_bytes",
                                  "value": v.astype(float), "interval_s": 5.0}))
        rows.append(pd.DataFrame({"time_ns": t, "target": f"fs-OST{k:04x}", "metric": "read_bytes",
                                  "value": 0.0, "interval_s": 5.0}))
    return pd.concat(rows, ignore_index=True)


def plant_motif(settings, store, competitors: list[int], perfs: list[float], exe: str = "/apps/ior -w",
                fs: str = "scratch", first: int = 1) -> list[str]:
    """One job a day per entry (same motif), each with a competitor writing competitors[i] bytes per target
    and sample everywhere; returns the log hashes. Job i's coverage factor is PER_SAMPLE / (PER_SAMPLE + c_i)."""
    rows, tables, frames = [], [], []
    for k, (c, perf) in enumerate(zip(competitors, perfs)):
        start = T0 + k * DAY
        # hashes that differ in their first 16 digits, as the pages' links use them
        h = hashlib.sha256(f"{fs} {first + k}".encode()).hexdigest()
        r, f = job_row(first + k, start, 55, 4 * PER_SAMPLE * SAMPLES, perf, 1000 + first + k - 1, exe, h)
        r["verdict"] = DARSHAN_VERDICT
        rows.append(r)
        tables.append(f)
        frames.append(telemetry(start, start + 60 * S, PER_SAMPLE, c))
    jstore.write_batch(store, settings.parquet_dir, rows, tables, [])
    layout.write_rows(settings, fs, pd.concat(frames, ignore_index=True))
    return [r["log_hash"] for r in rows]
