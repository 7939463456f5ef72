"""A job's weather (METHODS.md section 7): the joins of a job's window with our telemetry, `lfs df`
fullness, probes and the scheduler's other jobs, stored per job and recomputed when its window's
telemetry changes.

Window: the job's start to its end plus a 5 s tail (stats.coverage.TAIL_S), from its Darshan log.
Only that window's telemetry is read (store/job_telemetry.py says how), a UTC day of jobs at a time
(`compute_many`); `refresh_all` is the incremental step that `jobs ingest`, scheduler imports and
every answer run, and `update_climates` keeps each job's verdict (docs/umami.md). Motif: executable name +
node count + dominant direction + file system. The file system of a Darshan job is --fs, else the
dataset its files' mount points map to (config.dataset_for_mounts: the fs-map setting, else a shared
mount whose last component names a dataset), never "the only dataset with telemetry": a job on /home
is not a job on /scratch. Node counts come from the log's host names (or the scheduler), never from
its process count.

This module reads the store and orchestrates; the math on what it read is stats/job_weather.py. A
job is a `Job` however it was found, its weather a `Weather` (the stored document), the answer
stats.umami's `Umami`.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ioweather.config import check_dataset_name, MountBytes
from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.runtime.distributed import map_unordered
from ioweather.services.runtime.fs_names import job_fs, jobs_fs, JobFs, known_datasets
from ioweather.stats import climate as cstats, coverage as cov, umami as um
from ioweather.stats import job_weather as jws
from ioweather.stats.probe import baseline_medians
from ioweather.stats.status import learning_at, min_history_s, min_samples
from ioweather.stats.umami import fraction_of_peak, Umami
from ioweather.store.job_files import files_dir
from ioweather.store.probe_light import OPS
from ioweather.store.sqlite_reads import door, will_write

if TYPE_CHECKING:
    import pandas as pd

    from ioweather.store.job_telemetry import DayTargets, Series


MIB = 1024 * 1024
WINDOW_METRICS = ["read_bytes", "write_bytes", "read_ops", "write_ops", "cpu_pct"]
#: Weather metrics shown in a job's UMAMI, performance first.
UMAMI_ROWS = ["fraction_of_peak", "coverage_factor_bw", "coverage_factor_read_bw", "coverage_factor_write_bw",
              "coverage_factor_ops", "coverage_factor_opens", "md_ops_per_s", "server_cpu_pct", "fullest_ost_pct",
              "probe_slowdown", "concurrent_jobs", "concurrent_node_hours", "missing_fraction"]


# ----------------------------------------------------------------------------- jobs

@dataclass
class Job:
    """One job whose weather ioweather computes, whatever told us of it: a Darshan log (key
    `darshan:<log hash>`), a scheduler job (`sched:<cluster>:<job id>`) or a benchmark run
    (`bench:<run id>`). Times are ns since the epoch (UTC), the window's end None while the job runs;
    amounts are the job's own, in bytes and operations (POSIX for a Darshan log), None when unknown;
    `perf_bps` its bandwidth in bytes/s (NaN: unknown); `osts` the OST ids its Lustre records name.

    A Darshan job found by id (`find_job`) comes from its row alone (`files` False, `row` kept): its
    per-file facts (amounts of operations, mounts, OSTs) are read only when its weather has to be
    computed or its file system found (`with_files`, `fs_of`), never to answer from a stored weather."""

    key: str
    id: str
    jobid: int | str | None
    exe: str
    nnodes: int | None
    start_ns: int
    end_ns: int | None
    bytes_read: float | None = None
    bytes_written: float | None = None
    read_ops: int | None = None
    write_ops: int | None = None
    opens: int | None = None
    osts: list[int] | None = None
    perf_bps: float = math.nan
    mounts: list[str] = field(default_factory=list)
    #: where it moved its bytes, for config.dataset_for_mounts
    mount_bytes: list[MountBytes] = field(default_factory=list)
    running: bool = False
    row: dict | None = None
    files: bool = True

    @property
    def direction(self) -> str:
        return "write" if (self.bytes_written or 0) > (self.bytes_read or 0) else "read"

    def motif(self, fs: str) -> str:
        """Executable name + node count + dominant direction + file system: the jobs a climate compares."""
        return f"{self.exe} / {self.nnodes or '?'} nodes / {self.direction} / {fs}"

    def window(self) -> tuple[int, int]:
        """[start, end + stats.coverage.TAIL_S) in ns: the telemetry the weather reads."""
        end = self.end_ns if self.end_ns is not None else self.start_ns
        return self.start_ns, end + int(cov.TAIL_S * 1e9)

    def amounts(self) -> dict[str, float]:
        """The job's known amounts (bytes, operations) by the names stats.coverage.coverage_factors reads:
        the lookup table that function takes, not an answer."""
        known = {"bytes_read": self.bytes_read, "bytes_written": self.bytes_written, "read_ops": self.read_ops,
                 "write_ops": self.write_ops, "opens": self.opens}
        return {k: v for k, v in known.items() if v is not None}


def _scheduler(store):
    """The scheduler store component's reads for `store` (another part of ioweather; absent in older trees)."""
    try:
        return door(store, "scheduler")
    except ModuleNotFoundError:
        return None


def darshan_job(row: dict, posix: dict | None = None, mounts: list[str] | None = None, osts: list[int] | None = None,
                mount_bytes: list[dict] | None = None, files: bool = True) -> Job:
    """A Darshan job from its stored row and the sums of its POSIX records (`posix`: reads, writes,
    opens; None: unknown; `mount_bytes`: stats.job_weather.mount_bytes' of the job); without `files`, from its row alone (`Job.files`)."""
    br = row.get("posix_bytes_read") if row.get("posix_bytes_read") is not None else row.get("bytes_read")
    bw = row.get("posix_bytes_written") if row.get("posix_bytes_written") is not None else row.get("bytes_written")
    mounts = mounts or []
    return Job(key=f"darshan:{row['log_hash']}", id=row["log_hash"][:12], jobid=row.get("jobid"),
               exe=os.path.basename(str(row.get("exe") or "?").split()[0]), nnodes=row.get("nnodes"),
               start_ns=int(row["start_ns"]), end_ns=int(row["end_ns"]), bytes_read=br, bytes_written=bw,
               read_ops=None if posix is None else posix["reads"], write_ops=None if posix is None else posix["writes"],
               opens=None if posix is None else posix["opens"], osts=osts,
               perf_bps=(row.get("agg_perf_by_slowest_mibps") or np.nan) * MIB, mounts=mounts,
               mount_bytes=([MountBytes(**m) for m in mount_bytes] if mount_bytes is not None
                            else [MountBytes(m) for m in mounts]),
               row=None if files else row, files=files)


def find_job(store, job_id: str) -> Job | None:
    """A Darshan job by job id or log-hash prefix, else a scheduler job by id; None when neither knows it.

    A Darshan job comes from its row alone: the sums of its per-file records (Parquet) are read only
    when its weather has to be computed (`with_files`), not to answer from a stored one."""
    row = None
    if job_id.isdigit():
        row = door(store, "jobs").darshan_job_by_jobid(store, int(job_id), _JOB_COLUMNS)
    if row is None and re.fullmatch(r"[0-9a-f]{6,64}", job_id):
        row = door(store, "jobs").darshan_job_by_hash(store, job_id, _JOB_COLUMNS)
    if row is not None:
        if row.get("start_ns") is None or row.get("end_ns") is None:
            raise UserError(f"job {job_id}: its Darshan log has no start or end time")
        return darshan_job(row, files=False)
    sched = _scheduler(store)
    if sched is not None:
        s = sched.get_job(store, job_id)
        if s is not None:
            if s.get("start_ns") is None:
                raise UserError(f"job {job_id} has not started")
            end = s.get("end_ns")
            return Job(key=f"sched:{s['cluster']}:{s['jobid']}", id=str(s["jobid"]), jobid=s["jobid"],
                       exe=s.get("name") or "?", nnodes=s.get("nnodes"), start_ns=int(s["start_ns"]),
                       end_ns=int(end) if end is not None else None, running=end is None)
    return None


def fs_of(store, job: Job, fs: str | None = None, facts: bool = True, tables: dict | None = None) -> JobFs:
    """services.runtime.fs_names.job_fs of `job` (a Darshan job found by id gets its per-file facts here, in place;
    without `facts`, only the bytes per mount are read, without pandas, and the job keeps its row alone;
    `tables` keeps the per-file parts read, for the jobs of one page that share one)."""
    if not job.files:
        if not facts:
            return job_fs(store.parquet_dir, _mount_bytes_of(store, job, tables), fs)
        # in place: the caller then computes the job's weather without reading its per-file table again
        vars(job).update(vars(with_files(store, [job])[0]))
    return job_fs(store.parquet_dir, job.mount_bytes, fs)


def _mount_bytes_of(store, job: Job, tables: dict | None = None) -> list[MountBytes]:
    """The `mount_bytes` with_files would give `job` (stats.job_weather.mount_bytes, else its mounts), read
    with pyarrow alone: `umami JOB` answers from a kept climate without importing pandas (0.4 s)."""
    return _part_mounts(store, job.row.get("files_part"), tables).get(job.row["log_hash"], [])


def _part_mounts(store, part: str | None, tables: dict | None = None) -> dict[str, list[MountBytes]]:
    """{log hash: its `mount_bytes`} of the jobs of one files part, in one pass over its rows (`tables`
    keeps them for the next job of the same part)."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    import pyarrow.parquet as pq

    path = files_dir(store.parquet_dir) / part if part else None
    if path is None or not path.is_file():
        return {}
    tables = {} if tables is None else tables
    if ("mounts", path) in tables:
        return tables[("mounts", path)]
    names = pq.read_schema(path).names
    if "mount" not in names:
        return {}
    cols = [c for c in ("log_hash", "module", "mount", "fs_type", "bytes_read", "bytes_written") if c in names]
    # not read_table's filters (pyarrow.dataset) nor pyarrow.compute: both import pandas
    t = pq.ParquetFile(path).read(columns=cols).to_pydict()
    moved: dict[str, dict] = {}
    seen: dict[str, set] = {}
    for i, h in enumerate(t["log_hash"]):
        m = t["mount"][i]
        if m is None:
            continue
        seen.setdefault(h, set()).add(str(m))
        if t["module"][i] not in ("POSIX", "STDIO"):
            continue
        e = moved.setdefault(h, {}).setdefault(str(m), {"fs_type": None, "bytes": 0})
        if e["fs_type"] is None and "fs_type" in t and t["fs_type"][i] is not None:
            e["fs_type"] = str(t["fs_type"][i])
        e["bytes"] += sum(t[c][i] or 0 for c in ("bytes_read", "bytes_written") if c in t)
    out = {h: [MountBytes(m, e["fs_type"], float(e["bytes"])) for m, e in sorted(moved[h].items())]
           if moved.get(h) else [MountBytes(m) for m in sorted(ms)] for h, ms in seen.items()}
    tables[("mounts", path)] = out
    return out


def job_datasets(store, jobs) -> dict[str, str | None]:
    """{log hash: the job's file system (None: none with telemetry)} of Darshan jobs given as (log hash,
    files part) pairs: `fs_of` without facts (the one resolver, `why` and the job page ask it too), the
    store's names and fs-map read once and each files part once."""
    tables: dict = {}
    mounts = {h: _part_mounts(store, part, tables).get(h, []) for h, part in jobs}
    return {h: f.dataset for h, f in jobs_fs(store.parquet_dir, mounts).items()}


def choose_fs(store, job: Job, fs: str | None, facts: bool = True) -> str:
    """The job's file system by the one resolver (`why` and the job page ask it too). A dataset stored with
    an earlier weather row is not reused: an fs-map changed since would make this page and `why` differ."""
    if fs:
        check_dataset_name(fs)
        if not facts and not job.files:
            # an explicit fs wins over the job's mounts (job_fs): their per-file part is not read only to be
            # outvoted (`why` names the job's dataset: ~35 ms of its answer, a Parquet read)
            return job_fs(store.parquet_dir, [], fs).dataset
    found = fs_of(store, job, fs, facts)
    if found.dataset is not None:
        return found.dataset
    mounts = ", ".join(m.mount for m in found.unmapped) or "none named in its log"
    names = known_datasets(store.parquet_dir)
    raise UserError(f"which file system did job {job.id} use? its mounts ({mounts}) map to no dataset with "
                    f"telemetry ({', '.join(names) or 'none'}): give --fs or an fs-map entry (docs/why.md)")


# ----------------------------------------------------------------------------- weather

#: The UMAMI metrics a weather measures (all but fraction of peak, which is relative to the motif's best).
MEASURED = UMAMI_ROWS[1:]


@dataclass(frozen=True)
class Climate:
    """The correlations kept beside a stored weather (update_climates): `sig` the digest of the history
    they were computed over (MotifTable.history_sigs), `history_n` its jobs, and per UMAMI metric the
    jobs with a value (`n`), Pearson's r with fraction of peak and its p-value (None: not computable)."""

    sig: str
    history_n: int
    n: dict[str, int]
    r: dict[str, float | None]
    p: dict[str, float | None]

    @classmethod
    def from_json(cls, doc) -> Climate | None:
        """A stored climate back (None for none, or for what is not one: it is recomputed then)."""
        if not isinstance(doc, dict) or not all(k in doc for k in ("sig", "history_n", "n", "r", "p")):
            return None
        return cls(doc["sig"], doc["history_n"], doc["n"], doc["r"], doc["p"])

    def to_json(self) -> dict:
        return {"sig": self.sig, "history_n": self.history_n, "n": self.n, "r": self.r, "p": self.p}


def _plausible(v):
    """A coverage factor or contention the statistics may use: an implausible factor (> CF_MAX_PLAUSIBLE) is None."""
    return None if isinstance(v, int | float) and not isinstance(v, bool) and v > cov.CF_MAX_PLAUSIBLE else v


@dataclass(frozen=True)
class KindFactors:
    """The factors of one kind K (stats.coverage.KINDS: bw, read_bw, write_bw, ops, ...) that `Weather` does
    not hold as its own fields: the contention, whether the coverage factor is flagged implausible, the
    coverage factor itself for a kind Weather does not declare (`coverage_factor_K` is a Weather field for
    the others), and the factor over all targets when the job's own targets were used (`all_targets`, with
    `has_all_targets`: absent from the document otherwise)."""

    kind: str
    coverage_factor: float | None
    contention: float | None
    flagged: bool | None
    all_targets: float | None = None
    has_all_targets: bool = False


@dataclass(frozen=True)
class CoverageFactors:
    """stats.coverage.coverage_factors' contentions and flags beyond Weather's own factors, per kind, in the
    order of its document: each kind's `coverage_factor_K` (when not a Weather field), `contention_K` and
    `coverage_factor_K_flagged`, then each `coverage_factor_K_all_targets`."""

    kinds: tuple[KindFactors, ...] = ()

    @classmethod
    def of(cls, chosen: dict, every: dict, declared: set[str]) -> CoverageFactors:
        """From stats.coverage.coverage_factors of the chosen targets and of all targets."""
        names = dict.fromkeys(k[len("contention_"):] for k in chosen if k.startswith("contention_"))
        return cls(tuple(KindFactors(
            kind, None if f"coverage_factor_{kind}" in declared else chosen.get(f"coverage_factor_{kind}"),
            chosen.get(f"contention_{kind}"), chosen.get(f"coverage_factor_{kind}_flagged"),
            every.get(f"coverage_factor_{kind}"), f"coverage_factor_{kind}" in every) for kind in names))

    @classmethod
    def from_json(cls, doc: dict, declared: set[str]) -> CoverageFactors:
        """A stored document's factors (its coverage_factor_*/contention_* keys that are not Weather fields)."""
        kinds: dict[str, dict] = {}
        for k, v in doc.items():
            if k in declared or not k.startswith(("coverage_factor_", "contention_")):
                continue
            if k.startswith("contention_"):
                kinds.setdefault(k[len("contention_"):], {})["contention"] = v
                continue
            name = k[len("coverage_factor_"):]
            for suffix, part in (("_all_targets", "all_targets"), ("_flagged", "flagged")):
                if name.endswith(suffix):
                    kinds.setdefault(name[:-len(suffix)], {})[part] = v
                    break
            else:
                kinds.setdefault(name, {})["coverage_factor"] = v
        return cls(tuple(KindFactors(kind, p.get("coverage_factor"), p.get("contention"), p.get("flagged"),
                                     p.get("all_targets"), "all_targets" in p) for kind, p in kinds.items()))

    def to_json(self) -> dict:
        out: dict = {}
        for f in self.kinds:
            if f"coverage_factor_{f.kind}" not in _WEATHER_FIELDS:
                out[f"coverage_factor_{f.kind}"] = f.coverage_factor
            out[f"contention_{f.kind}"] = f.contention
            out[f"coverage_factor_{f.kind}_flagged"] = f.flagged
        out.update({f"coverage_factor_{f.kind}_all_targets": f.all_targets for f in self.kinds if f.has_all_targets})
        return out

    def flagged(self, kind: str) -> bool:
        """Whether kind's coverage factor is flagged implausible (False: not, or unknown)."""
        return any(f.flagged for f in self.kinds if f.kind == kind)

    def plausible(self) -> CoverageFactors:
        """As the statistics see them: every implausible factor None (flags kept)."""
        return CoverageFactors(tuple(replace(f, coverage_factor=_plausible(f.coverage_factor),
                                             contention=_plausible(f.contention),
                                             all_targets=_plausible(f.all_targets)) for f in self.kinds))


@dataclass(frozen=True)
class OpSlowdown:
    """One probe op's slowdown in a job's window: its median duration there / its baseline's."""

    op: str
    slowdown: float


@dataclass
class Weather:
    """What the file system was doing during one job's window (METHODS.md section 7), computed once
    (`compute_many`) and kept by the store: the UMAMI metrics (None: unknown), the window [start, end)
    in ns since the epoch (UTC, the 5 s tail included), the job's performance in bytes/s, how the
    coverage factors were taken (`cf_variant`: "all targets" or "job's targets"; with the other
    factors, contentions and flags of stats.coverage.coverage_factors and each factor over all
    targets per kind in `coverage_factors`), the servers' bytes in the window, the
    fullest OST (% used), the scheduler's node-hour coverage factor, the probes' slowdown per op, and
    notes saying what is unknown and why. `climate` and `verdict` are kept next to it by
    update_climates (the Jobs list reads them); `fraction_of_peak` is set only for an answer (it
    moves with the motif's best, so it is never stored).

    `to_json()` is the stored document; `answer_json()` is `umami JOB --json`'s `weather`. A window
    without telemetry (`no_data`) has no variant, coverage factors or server bytes: their keys are
    absent from the document, as they always were."""

    window_start_ns: int
    window_end_ns: int
    performance_bps: float | None
    no_data: bool
    coverage_factor_bw: float | None = None
    coverage_factor_read_bw: float | None = None
    coverage_factor_write_bw: float | None = None
    coverage_factor_ops: float | None = None
    coverage_factor_opens: float | None = None
    md_ops_per_s: float | None = None
    server_cpu_pct: float | None = None
    fullest_ost_pct: float | None = None
    probe_slowdown: float | None = None
    concurrent_jobs: int | None = None
    concurrent_node_hours: float | None = None
    missing_fraction: float | None = None
    cf_variant: str | None = None
    coverage_factors: CoverageFactors = field(default_factory=CoverageFactors)
    fs_bytes: float | None = None
    fullest_ost: str | None = None
    coverage_factor_nodehrs: float | None = None
    #: Each probe op's slowdown, in the order the probes gave them (None: no probe)
    probe_slowdown_by_op: tuple[OpSlowdown, ...] | None = None
    notes: list[str] = field(default_factory=list)
    climate: Climate | None = None
    verdict: str | None = None
    fraction_of_peak: float | None = None

    def to_json(self) -> dict:
        """The stored document: the keys in the order every stored weather has them."""
        out = {m: getattr(self, m) for m in MEASURED}
        out.update(window_start_ns=self.window_start_ns, window_end_ns=self.window_end_ns,
                   performance_bps=self.performance_bps, no_data=self.no_data)
        if not self.no_data:
            out["cf_variant"] = self.cf_variant
            out.update(self.coverage_factors.to_json())
            out["fs_bytes"] = self.fs_bytes
        out.update(fullest_ost=self.fullest_ost, coverage_factor_nodehrs=self.coverage_factor_nodehrs,
                   probe_slowdown_by_op=None if self.probe_slowdown_by_op is None
                   else {s.op: s.slowdown for s in self.probe_slowdown_by_op}, notes=list(self.notes))
        if self.climate is not None:
            out["climate"] = self.climate.to_json()
        if self.verdict is not None:
            out["verdict"] = self.verdict
        return out

    def answer_json(self) -> dict:
        """The weather of an answer: the stored document without the kept climate and verdict (answers,
        not weather), with fraction of peak."""
        out = self.to_json()
        out.pop("climate", None)
        out.pop("verdict", None)
        out["fraction_of_peak"] = self.fraction_of_peak
        return out

    @classmethod
    def from_json(cls, doc: dict) -> Weather:
        """A stored document back: the declared keys by name, every coverage_factor_*/contention_* key
        that is not one of them into `coverage_factors` (in order); any other key is dropped."""
        names = _WEATHER_FIELDS - {"coverage_factors", "climate", "probe_slowdown_by_op"}
        by_op = doc.get("probe_slowdown_by_op")
        return cls(**{k: v for k, v in doc.items() if k in names}, climate=Climate.from_json(doc.get("climate")),
                   coverage_factors=CoverageFactors.from_json(doc, _WEATHER_FIELDS),
                   probe_slowdown_by_op=None if by_op is None else tuple(OpSlowdown(op, v) for op, v in by_op.items()))

    def statistics_view(self, x_row: np.ndarray) -> Weather:
        """This weather as the motif's statistics see it (MotifTable): the UMAMI metrics from its row of
        the motif matrix (fraction of peak first; an implausible coverage factor is None) and every
        other implausible coverage factor None too."""
        vals = [float(v) if np.isfinite(v) else None for v in x_row]
        nodehrs = self.coverage_factor_nodehrs
        return Weather(**{**self.__dict__, **dict(zip(UMAMI_ROWS, vals)),
                          "coverage_factors": self.coverage_factors.plausible(),
                          "coverage_factor_nodehrs": None if cov.implausible(nodehrs) else nodehrs})


_WEATHER_FIELDS = {f.name for f in fields(Weather)}


def compute(store, job: Job, fs: str, con=None, probes: ProbeBaselines | None = None) -> Weather:
    """The weather of `job` on `fs`; `probes` shares the probe baselines between the jobs of one call."""
    return compute_many(store, [job], fs, con, probes)[0]


def compute_many(store, jobs: list[Job], fs: str, con=None, probes: ProbeBaselines | None = None,
                 client=None) -> list[Weather]:
    """The weather of `jobs` on `fs`, in order. Jobs are taken a UTC day of starts at a time:
    one telemetry query per day (summed over targets per metric and interval in DuckDB, so a day of
    100 targets at 5 s comes back as ~17,000 rows per metric), one read of the day's fullness gauges,
    scheduler jobs and probe samples; each job's window is then a slice of those sorted arrays.

    With `client` (a Dask client, services/runtime/distributed.py) each day's telemetry is read on the cluster
    (`read_day`: Parquet only, so the workers need the telemetry directory, never the database);
    scheduler jobs and probes are read here, and the weathers are the same. A Darshan job found by id
    gets its per-file facts first (`with_files`): its amounts of operations are coverage factors too."""
    jobs = with_files(store, jobs)
    probes = probes or ProbeBaselines(store)
    by_day: dict[int, list[int]] = {}
    for i, j in enumerate(jobs):
        by_day.setdefault(j.start_ns // _DAY_NS, []).append(i)
    groups = [idx for _day, idx in sorted(by_day.items())]
    items = [_day_item(k, store.parquet_dir, fs, [jobs[i] for i in idx]) for k, idx in enumerate(groups)]
    out: list = [None] * len(jobs)

    def on_result(item, data):
        idx = groups[item[0]]
        for i, w in zip(idx, _weathers_of_day(store, [jobs[i] for i in idx], fs, data, probes)):
            out[i] = w

    if client is None:
        # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
        from ioweather.store.telemetry_layout import connect_duckdb

        own = con is None
        con = con or connect_duckdb(threads=1)
        try:
            for item in items:
                on_result(item, read_day(item, con=con))
        finally:
            if own:
                con.close()
    else:
        def on_crash(item, reason):
            raise UserError(f"the weather of {len(groups[item[0]])} jobs of one day: {reason}")

        map_unordered(client, read_day, items, on_result, on_crash)
    return out


def _day_item(k: int, parquet_dir, fs: str, jobs: list[Job]) -> tuple:
    """What a worker needs to read one day's telemetry for `jobs`: plain values, no store."""
    osts = [i for j in jobs for i in (j.osts or [])]
    return (k, str(parquet_dir), fs, [j.window() for j in jobs], sorted(jws.ost_names(osts)) if osts else None)


@dataclass
class DayTelemetry:
    """What `read_day` read for a day of jobs: the window series summed over targets by metric, the
    targets that reported on each day, the rows of the jobs' own OSTs (None when their logs name none)
    and each job's fullest OST (percent, its name). Arrays and frames for the weather's math, never JSON."""

    series: dict[str, Series]
    present: DayTargets
    ost_rows: pd.DataFrame | None
    fullest: list[tuple[float | None, str | None]]


def read_day(item: tuple, con=None) -> DayTelemetry:
    """The telemetry a day of jobs needs (`_day_item`), read from the Parquet files alone: the window
    series summed over targets, the targets of each day, the rows of the jobs' own OSTs and each
    job's fullest OST. Module level: Dask workers run it."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import connect_duckdb

    _k, parquet_dir, fs, wins, ost_names = item
    parquet_dir = Path(parquet_dir)
    lo = min(w[0] for w in wins)
    hi = max(w[1] for w in wins)
    own = con is None
    con = con or connect_duckdb(threads=1)
    try:
        return DayTelemetry(
            series=jt.window_series(parquet_dir, fs, lo, hi, WINDOW_METRICS, ("md_",), con=con),
            present=jt.day_targets(parquet_dir, fs, lo, hi, list(_BYTES), con=con),
            ost_rows=(jt.window_rows(parquet_dir, fs, lo, hi, WINDOW_METRICS[:4], targets=set(ost_names), con=con)
                      if ost_names else None),
            fullest=_fullest_many(parquet_dir, fs, [w[0] for w in wins], con))
    finally:
        if own:
            con.close()


_BYTES = ("read_bytes", "write_bytes")


def _weathers_of_day(store, jobs: list[Job], fs: str, data: DayTelemetry, probes: ProbeBaselines) -> list[Weather]:
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    wins = [j.window() for j in jobs]
    lo = min(w[0] for w in wins)
    hi = max(w[1] for w in wins)
    series, present, ost_rows, fullest = data.series, data.present, data.ost_rows, data.fullest
    sched = _Concurrency(store, lo, hi)
    probe_win = _ProbeWindows(probes, lo, hi)
    out = []
    for job, (since, until), full in zip(jobs, wins, fullest):
        notes: list[str] = []
        w = Weather(window_start_ns=since, window_end_ns=until, no_data=True, notes=notes,
                    performance_bps=float(job.perf_bps) if np.isfinite(job.perf_bps) else None)
        cut = {m: sr.cut(since - jt.MAX_INTERVAL_NS, until) for m, sr in series.items()}
        if not any(cut[m][1] > cut[m][0] for m in _BYTES if m in cut):
            notes.append(f"no telemetry for {fs} in the job's window")
        else:
            _measure(w, job, series, cut, present, ost_rows)
        w.fullest_ost_pct, w.fullest_ost = full
        sched.of(w, job, since, until)
        w.probe_slowdown, by_op = probe_win.slowdown(since, until)
        w.probe_slowdown_by_op = None if by_op is None else tuple(OpSlowdown(op, v) for op, v in by_op.items())
        out.append(w)
    return out


def _measure(w: Weather, job: Job, series: dict, cut: dict, present, ost_rows) -> None:
    """The telemetry side of a window with byte samples: coverage factors (over the job's own OSTs
    when its log names them and they reported), metadata ops, server CPU and the missing fraction."""
    since, until = w.window_start_ns, w.window_end_ns
    w.no_data = False
    amount = {m: series[m].amount(cut[m], since, until) for m in series}
    md = [a for m, a in amount.items() if m.startswith("md_") and a is not None]
    # a rate over the window's length: only the part of the first interval inside it
    md_in = [a for m in series if m.startswith("md_")
             for a in [series[m].amount(cut[m], since, until, job_window=False)] if a is not None]
    fs_all = {"bytes_read": amount.get("read_bytes"), "bytes_written": amount.get("write_bytes"),
              "read_ops": amount.get("read_ops"), "write_ops": amount.get("write_ops"),
              "opens": amount.get("md_open"), "stats": amount.get("md_getattr"),
              "md_ops": sum(md) if md else None}
    every = cov.coverage_factors(job.amounts(), fs_all)
    chosen, w.cf_variant = every, "all targets"
    mine = jws.amounts_on_targets(ost_rows, job.osts, since, until) if job.osts and ost_rows is not None else None
    if mine is not None:
        # the paper's variant: only the servers the job used (MDS ops stay file-system wide)
        chosen, w.cf_variant = cov.coverage_factors(job.amounts(), {**fs_all, **mine}), "job's targets"
    for k, v in chosen.items():
        if k in _WEATHER_FIELDS:
            setattr(w, k, v)
    w.coverage_factors = CoverageFactors.of(chosen, every, _WEATHER_FIELDS)
    span_s = (until - since) / 1e9
    w.md_ops_per_s = sum(md_in) / span_s if md_in else None
    w.fs_bytes = None if fs_all["bytes_read"] is None else fs_all["bytes_read"] + (fs_all["bytes_written"] or 0)
    w.server_cpu_pct = series["cpu_pct"].mean(cut["cpu_pct"]) if "cpu_pct" in series else None
    covered = sum(series[m].covered(cut[m], since, until) for m in _BYTES if m in series)
    # the byte series that should cover the window: read and write of every target that reported on its days
    w.missing_fraction = jws.missing_fraction(covered, span_s, 2 * present.count(since, until))


@dataclass(frozen=True)
class RunReadings:
    """What the file system's byte readings can place inside a job's run [start, end): the bytes read and
    written in the readings wholly inside it (stats.coverage.inside_amount), and the readings' period
    (their median interval over the run, s). A run shorter than the period holds no whole reading."""

    read_bytes: float
    write_bytes: float
    period_s: float | None


def run_readings(parquet_dir, fs: str, start_ns: int, end_ns: int, osts=None) -> RunReadings | None:
    """The byte readings of `fs` inside a job's run (of the OSTs `osts` only, when given: the coverage factor's
    "job's targets" variant; else every target); None when no reading overlaps it."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt
    # lazy: pyarrow via store.telemetry_layout, loaded only when this runs
    from ioweather.store.telemetry_layout import connect_duckdb

    # the default database: inside `why`'s one_database the one its other telemetry reads opened, not a new one
    con = connect_duckdb()
    try:
        rows = jt.window_rows(Path(parquet_dir), fs, start_ns, end_ns, list(_BYTES), con=con,
                              targets=set(jws.ost_names(osts)) if osts else None)
    finally:
        con.close()
    if rows.empty:
        return None
    t, iv = rows["time_ns"].to_numpy(np.int64), rows["interval_s"].to_numpy(float)
    over = cov.overlap_s(t, iv, start_ns, end_ns) > 0
    if not over.any():
        return None
    inside = {m: cov.inside_amount(t[sel], iv[sel], rows["value"].to_numpy(float)[sel], start_ns, end_ns)
              for m in _BYTES for sel in [(rows["metric"] == m).to_numpy()]}
    return RunReadings(read_bytes=inside["read_bytes"], write_bytes=inside["write_bytes"],
                       period_s=float(np.median(iv[over])))


def _fullest_many(parquet_dir, fs: str, starts: list[int], con) -> list[tuple[float | None, str | None]]:
    """Each start's fullest OST (stats.job_weather.fullest_ost) from the capacity and free-bytes gauges
    of the day before the first start to the last."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    at = np.asarray(starts, dtype=np.int64)
    g = jt.window_rows(parquet_dir, fs, int(at.min()) - jt.DAY_NS + jt.MAX_INTERVAL_NS, int(at.max()) + 1,
                       ["capacity_bytes", "free_bytes"], con=con)
    return jws.fullest_ost(g, at, jt.DAY_NS)


class _Concurrency:
    """The scheduler's jobs of [lo, hi), read once; each job's concurrent jobs and node-hours from them."""

    def __init__(self, store, lo: int, hi: int):
        sched = _scheduler(store)
        self.available = sched is not None
        self.rows = sched.jobs_overlapping(store, lo, hi) if sched is not None else []
        self.start = np.array([int(o["start_ns"]) for o in self.rows], dtype=np.int64)
        self.end = np.array([np.nan if o.get("end_ns") is None else float(o["end_ns"]) for o in self.rows])
        self.nodes = np.array([float(o.get("nnodes") or 0) for o in self.rows])
        self.ids = np.array([str(o["jobid"]) for o in self.rows], dtype=object)
        self.now = time.time_ns()

    def of(self, w: Weather, job: Job, since: int, until: int) -> None:
        """`w`'s concurrent jobs, their node-hours and the job's node-hour coverage factor, with a note
        when the scheduler cannot tell."""
        if not self.available:
            w.notes.append("no scheduler data in this ioweather (concurrent jobs unknown)")
            return
        me = str(job.jobid) if job.jobid is not None else None
        c = jws.concurrency(self.start, self.end, self.nodes, self.ids == me if me is not None else
                            np.zeros(len(self.ids), bool), since, until, self.now)
        if c is None:
            w.notes.append("no scheduler jobs in the window")
            return
        if me is not None and not c.found:
            w.notes.append(f"job id {me} is not in the scheduler data")
        w.concurrent_jobs, w.concurrent_node_hours, w.coverage_factor_nodehrs = c.jobs, c.node_hours, \
            c.coverage_factor_nodehrs


class _ProbeWindows:
    """Every probe target's samples of [lo, hi), read once and sorted by time; a window is a slice."""

    def __init__(self, probes: ProbeBaselines, lo: int, hi: int):
        self.probes = probes
        self.samples = {}
        for t in probes.targets:
            s = door(probes.store, "probe").read_samples(probes.store, t, since_ns=lo, until_ns=hi)
            if len(s["op"]):
                order = np.argsort(s["start_ns"], kind="stable")
                self.samples[t] = {k: np.asarray(v)[order] for k, v in s.items()}

    def slowdown(self, since: int, until: int) -> tuple[float | None, dict | None]:
        def window(t):
            s = self.samples.get(t)
            if s is None:
                return None
            a, b = np.searchsorted(s["start_ns"], [since, until], side="left")
            return {k: v[a:b] for k, v in s.items()}

        return _probe_slowdown(self.probes, since, until, window)


#: Probe baseline: the 30 whole UTC days before the day a job started (the `slowdown` command's default length).
PROBE_BASELINE_DAYS = 30
_DAY_NS = 86_400 * 10**9


class ProbeBaselines:
    """Each probe target's expected duration per op (the median of its successful samples over the
    PROBE_BASELINE_DAYS before a UTC day), computed once per (target, day) however many jobs ask.

    Reading a month of samples per job cost ~1 s at 1 Hz (docs/benchmarks.md): the weather of 10,000
    jobs would read the same months thousands of times. Jobs of one day share a baseline; a job
    then reads only its window's samples."""

    def __init__(self, store, reference: tuple[int, int] | None = None):
        self.store = store
        #: [since, until) in ns of a named quiet period (`--baseline-from/--baseline-until`, as `slowdown`
        #: takes them): every job's baseline is that period's, judged at once (no learning rule)
        self.reference = reference
        try:
            self.targets = door(store, "probe").targets(store)
        except UserError:  # no probe in this store
            self.targets = []
        self._expected: dict[tuple[str, int], np.ndarray] = {}

    def expected(self, target: str, day: int) -> np.ndarray:
        key = (target, -1 if self.reference else day)
        if key not in self._expected:
            since, until = self.reference or ((day - PROBE_BASELINE_DAYS) * _DAY_NS, day * _DAY_NS)
            s = door(self.store, "probe").read_samples(self.store, target, since_ns=since, until_ns=until)
            expected = baseline_medians(s["op"], s["duration_ns"], s["status"], len(OPS))
            if self.reference is None:
                # An op whose baseline is still learning judges nothing, as on the Status card, /metrics,
                # `slowdown` and `--check`: a probe started the day before a job is no evidence about that job.
                expected[learning_at(s["op"], s["start_ns"], s["status"], len(OPS), day * _DAY_NS,
                                     min_history_s(PROBE_BASELINE_DAYS * 86400.0),
                                     min_samples(PROBE_BASELINE_DAYS * 86400.0))] = np.nan
            self._expected[key] = expected
        return self._expected[key]


def _probe_slowdown(probes: ProbeBaselines, since: int, until: int, window=None) -> tuple[float | None, dict | None]:
    """stats.job_weather.probe_slowdown of the probe targets over [since, until) against the baselines
    of the day it starts; None without probes. `window(target)`: the window's samples when already
    read (None: none), else they are read here."""

    def windows():
        for t in probes.targets:
            win = (window(t) if window is not None
                   else door(probes.store, "probe").read_samples(probes.store, t, since_ns=since, until_ns=until))
            if win is not None and len(win["op"]):
                yield win, probes.expected(t, since // _DAY_NS)

    return jws.probe_slowdown(windows(), OPS)


# ----------------------------------------------------------------------------- stored weather

def ensure(store, jobs: list[Job], fs: str, sigs=None, con=None, climates: bool = True,
           client=None) -> dict[str, Weather]:
    """{job key: weather} of the jobs of `jobs` whose weather was computed now (missing or stale:
    their window's telemetry signature changed), stored in one transaction; then, with `climates`,
    the climates and verdicts of their motifs are brought up to date (`update_climates`)."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    sigs = sigs or jt.WindowSignatures(store.parquet_dir)
    wdb = door(store, "job_weather")
    stored = {r["job_key"]: r["telemetry_sig"] for r in wdb.of_keys(store, fs, [j.key for j in jobs])}
    todo, rows = [], []
    for job in jobs:
        since, until = job.window()
        sig = sigs.window(fs, since, until)
        if stored.get(job.key) == sig and not job.running:
            continue
        todo.append(job)
        rows.append({"job_key": job.key, "fs": fs, "motif": job.motif(fs), "start_ns": job.start_ns,
                     "end_ns": until - int(cov.TAIL_S * 1e9), "telemetry_sig": sig})
    if any(not j.running for j in todo):
        will_write(store, "new weather rows to store")  # before computing them, not after
    fresh = dict(zip((j.key for j in todo), compute_many(store, todo, fs, con, client=client) if todo else []))
    running = {j.key for j in todo if j.running}  # a running job's window still grows: not stored
    kept = [{**r, "doc": fresh[r["job_key"]].to_json()} for r in rows if r["job_key"] not in running]
    wdb.put_many(store, kept)
    if climates:
        update_climates(store, fs, {r["motif"] for r in kept})
    return fresh


_JOB_COLUMNS = ["log_hash", "jobid", "exe", "nnodes", "nprocs", "start_ns", "end_ns", "bytes_read", "bytes_written",
                "posix_bytes_read", "posix_bytes_written", "agg_perf_by_slowest_mibps", "files_part"]


def darshan_jobs(store, log_hashes: set[str] | None = None) -> list[Job]:
    """The Darshan jobs with a window (every one, or those of `log_hashes`), with the sums of their
    POSIX records, their mount points and the OSTs their Lustre records name."""

    rows = door(store, "jobs").load_jobs(store, _JOB_COLUMNS)
    rows = rows[rows["start_ns"].notna() & rows["end_ns"].notna()]
    if log_hashes is not None:
        rows = rows[rows["log_hash"].isin(log_hashes)]
    if rows.empty:
        return []
    sums, mounts, osts, mbytes = _file_facts(store, rows)
    out = []
    for r in rows.to_dict("records"):
        r = {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()}
        h = r["log_hash"]
        out.append(darshan_job(r, sums.get(h), mounts.get(h, []), osts.get(h), mbytes.get(h)))
    return out


def _file_facts(store, rows: pd.DataFrame) -> tuple[dict, dict, dict, dict]:
    """stats.job_weather.file_facts of the jobs of `rows` (one read of the per-file table per files part)."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    parts: dict[str, list[str]] = {}
    for h, part in zip(rows["log_hash"], rows["files_part"]):
        if part:
            parts.setdefault(str(part), []).append(h)
    return jws.file_facts(jt.darshan_file_rows(store.parquet_dir, parts,
                                               ["log_hash", "module", "reads", "writes", "opens", "mount", "ost_ids",
                                                "fs_type", "bytes_read", "bytes_written"]))


def stored_osts(store, log_hash: str) -> list[int] | None:
    """The OST ids a stored Darshan log's Lustre records name (what its weather's "job's targets" variant is
    over); None when it names none."""
    job = find_job(store, log_hash)
    return None if job is None else with_files(store, [job])[0].osts


def with_files(store, jobs: list[Job]) -> list[Job]:
    """`jobs` with the per-file facts of the Darshan jobs found without them (find_job)."""
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    need = [j for j in jobs if not j.files]
    if not need:
        return jobs
    sums, mounts, osts, mbytes = _file_facts(store, pd.DataFrame({"log_hash": [j.row["log_hash"] for j in need],
                                                                  "files_part": [j.row.get("files_part") for j in need]}))
    done = {}
    for j in need:
        h = j.row["log_hash"]
        done[j.key] = darshan_job(j.row, sums.get(h), mounts.get(h, []), osts.get(h), mbytes.get(h))
    return [done[j.key] if not j.files else j for j in jobs]


@dataclass(frozen=True)
class WeatherRefresh(Answer):
    """What `refresh_all` did: Darshan jobs without a current weather when it began (`jobs`), weathers
    computed, kept, jobs skipped (no file system with telemetry for them), and of those computed, how
    many ran in the import's span (`overlapped`)."""

    jobs: int
    computed: int
    kept: int
    skipped: int
    overlapped: int


def refresh_all(store, fs: str | None = None, only_motif: str | None = None, client=None,
                span: tuple[str, int, int] | None = None) -> WeatherRefresh:
    """The incremental step: compute the weather of every Darshan job that has none yet or whose
    window's telemetry changed, then the climates and verdicts of the motifs that changed. Reads the job
    table and the stored signatures; the per-file rows and the telemetry only of the jobs it computes,
    so it is cheap when little is new.

    With `only_motif` (one job's answer): the stored weather of that motif only is checked for new
    telemetry, and of the jobs without weather only those of that motif are computed. With `client`
    (Dask) the telemetry of each day is read on the cluster (`compute_many`). With `span` (fs, first
    and last ns of an import): `overlapped`, how many of the computed jobs ran on that fs in that span
    (jobs computed for the first time are counted in `computed` whether the import touched them or not)."""
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    names = jt.known_fs(store.parquet_dir)
    n, new = door(store, "job_weather").darshan_without_weather(store, fs)
    if not names or n == 0:
        return WeatherRefresh(jobs=n, computed=0, kept=0, skipped=n, overlapped=0)
    sigs = jt.WindowSignatures(store.parquet_dir)
    todo: set[str] = set(new)
    if fs and only_motif is not None and todo:
        todo = _maybe_of_motif(store, todo, fs, only_motif)
    for r in door(store, "job_weather").signatures(store, fs, only_motif):
        if r["job_key"].startswith("darshan:") and \
                r["telemetry_sig"] != sigs.window(r["fs"], r["start_ns"], r["end_ns"] + int(cov.TAIL_S * 1e9)):
            todo.add(r["job_key"][len("darshan:"):])
    groups: dict[str, list] = {}
    skipped = 0
    for j in darshan_jobs(store, todo) if todo else []:
        try:
            name = choose_fs(store, j, fs)
        except UserError:
            skipped += 1
            continue
        if only_motif is None or j.motif(name) == only_motif:
            groups.setdefault(name, []).append(j)
    computed, overlapped = 0, 0
    for name, js in groups.items():
        done = ensure(store, js, name, sigs, client=client)
        computed += len(done)
        if span is not None and span[0] == name:
            tail = int(cov.TAIL_S * 1e9)
            overlapped += sum(1 for w in done.values()
                              if w.window_start_ns <= span[2] and w.window_end_ns - tail >= span[1])
    return WeatherRefresh(jobs=n, computed=computed, kept=n - computed - skipped, skipped=skipped,
                          overlapped=overlapped)


def _maybe_of_motif(store, log_hashes: set[str], fs: str, motif: str) -> set[str]:
    """The jobs among `log_hashes` whose motif on `fs` may be `motif`, from their stored rows alone.

    One job's answer computes only its motif's new weathers, so the other jobs without one stay new on
    every call: without this, each call read all their per-file facts (pandas, pyarrow.dataset) to find
    their motif again. On a named fs a Darshan job's motif is its row's (exe, node count, direction);
    darshan_jobs reads the rows into a DataFrame, where a column of node counts with a missing one is
    float (4.0 nodes): both spellings are kept, and darshan_jobs still decides."""
    out = set()
    for r in door(store, "jobs").rows_of(store, log_hashes, ["log_hash", *_JOB_COLUMNS[1:]]):
        j = darshan_job(r, files=False)
        spellings = {j.motif(fs)}
        if isinstance(j.nnodes, int | float) and not isinstance(j.nnodes, bool) and math.isfinite(j.nnodes):
            j.nnodes = float(j.nnodes)
            spellings.add(j.motif(fs))
        if motif in spellings:
            out.add(r["log_hash"])
    return out


def after_import(store, since_ns: int | None = None, until_ns: int | None = None, client=None,
                 span: tuple[str, int, int] | None = None) -> WeatherRefresh | None:
    """The step `jobs ingest` and scheduler imports run after storing: the weather and verdict of every
    new job (and of the jobs of [since, until), whose concurrency an import of scheduler jobs there
    changed), so that the Jobs list and the report show verdicts without opening each job. A store
    without telemetry costs one read of the job table. None when it could not run (said in one line
    by whatever opens the job later)."""

    try:
        if since_ns is not None and until_ns is not None:
            door(store, "job_weather").invalidate(store, since_ns, until_ns)
        return refresh_all(store, client=client, span=span)
    except UserError:
        return None


def _with_fraction_of_peak(rows: list[dict]) -> pd.DataFrame:
    # lazy: pandas, pyarrow, loaded only when this runs
    import pandas as pd
    recs = [{"job_key": r["job_key"], "fs": r["fs"], "motif": r["motif"], "start_ns": r["start_ns"], **r["doc"]} for r in rows]
    df = pd.DataFrame.from_records(recs)
    if df.empty:
        return df
    df["performance_bps"] = pd.to_numeric(df.get("performance_bps"), errors="coerce")
    df["fraction_of_peak"] = fraction_of_peak(df["performance_bps"].to_numpy(float), df["motif"].tolist())
    cfs = [c for c in df.columns if c.startswith("coverage_factor_") and not c.endswith("_flagged")]
    if cfs:
        df[cfs] = jws.plausible_cf(df[cfs].apply(pd.to_numeric, errors="coerce").to_numpy(float))
    return df


def _num(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return np.nan
    return f


class MotifTable:
    """The stored weather of one motif, sorted by start, as arrays: x (jobs x UMAMI_ROWS: the motif
    matrix of stats.job_weather.motif_matrix), keys, starts, computed_ns, the weathers."""

    def __init__(self, rows: list[dict]):
        rows = sorted(rows, key=lambda r: (r["start_ns"], r["job_key"]))
        self.keys = [r["job_key"] for r in rows]
        self.starts = np.array([int(r["start_ns"]) for r in rows], dtype=np.int64)
        self.computed = [r["computed_ns"] for r in rows]
        self.weathers = [Weather.from_json(r["doc"]) for r in rows]
        perf = np.array([_num(w.performance_bps) for w in self.weathers])
        cols = np.array([[_num(getattr(w, m)) for m in MEASURED] for w in self.weathers]).reshape(len(rows), len(MEASURED))
        self.x, self.peak = jws.motif_matrix(perf, cols, [m.startswith("coverage_factor_") for m in MEASURED])
        self.prefix = np.searchsorted(self.starts, self.starts, side="left")

    def __len__(self):
        return len(self.keys)

    def history_sigs(self) -> list[str]:
        """sig[p]: a digest of the first p jobs and of the motif's peak, i.e. of everything a climate over
        that history depends on (a new peak rescales fraction of peak; a recomputed weather has a new
        computed_ns)."""
        h = hashlib.sha1(f"{self.peak!r}".encode())
        out = [h.hexdigest()[:16]]
        for k, c in zip(self.keys, self.computed):
            h.update(f"{k}:{c}\n".encode())
            out.append(h.hexdigest()[:16])
        return out

    def values(self, i: int) -> Weather:
        """Job i's stored weather as the statistics see it (Weather.statistics_view)."""
        return self.weathers[i].statistics_view(self.x[i])

    def history_of(self, job: Job) -> np.ndarray:
        """The rows of `job`'s history: the motif's jobs that started before it, the job excluded."""
        return np.flatnonzero((self.starts < job.start_ns) & (np.array(self.keys, dtype=object) != job.key))


def update_climates(store, fs: str, motifs) -> dict[str, MotifTable]:
    """Bring the kept climates (correlations over each job's history) and verdicts of `motifs` up to
    date: only the jobs whose history or motif peak changed are computed, all at once
    (stats.climate.expanding). {motif: its MotifTable, with the weathers as stored now}."""

    big = [um.direction(m) for m in UMAMI_ROWS]
    codes = np.array([-1 if b is None else int(b) for b in big])
    out = {}
    for key in sorted(motifs):
        t = MotifTable(door(store, "job_weather").of_motif(store, fs, key))
        out[key] = t
        if not len(t):
            continue
        hsig = t.history_sigs()
        todo = [i for i in range(len(t)) if _sig(t.weathers[i].climate) != hsig[t.prefix[i]]
                or not isinstance(t.weathers[i].verdict, str)]
        if not todo:
            continue
        res = cstats.expanding(t.x, 0, t.prefix, todo, codes)
        docs = []
        for k, i in enumerate(todo):
            rows = um.metric_rows(res, k, UMAMI_ROWS, t.x[i], big, "fraction_of_peak")
            n = int(res["history_n"][k])
            w = t.weathers[i]
            w.verdict = _no_data_verdict(fs) if w.no_data else um.verdict_of(rows, "fraction_of_peak", n)[0]
            w.climate = Climate(hsig[t.prefix[i]], n, {r["metric"]: r["n"] for r in rows},
                                {r["metric"]: r["r"] for r in rows}, {r["metric"]: r["p"] for r in rows})
            docs.append({"job_key": t.keys[i], "fs": fs, "doc": w.to_json()})
        door(store, "job_weather").set_docs(store, docs)
    return out


def _sig(climate: Climate | None) -> str | None:
    return None if climate is None else climate.sig


def weather_frame(store, fs: str | None = None, motif: str | None = None) -> pd.DataFrame:
    """Every stored job weather (refreshed first) as a table with fraction of peak per motif."""

    refresh_all(store, fs)
    df = _with_fraction_of_peak(door(store, "job_weather").all_rows(store, fs))
    if not df.empty and motif:
        df = df[df["motif"] == motif]
    return df.drop(columns=[c for c in ("notes", "probe_slowdown_by_op", "fullest_ost", "cf_variant", "no_data",
                                        "verdict", "climate", "computed_ns")
                            if c in df.columns]) if not df.empty else df


def umami_for_job(store, job_id: str, fs: str | None = None) -> Umami | None:
    """The UMAMI answer of a Darshan or scheduler job; None when neither knows `job_id`. The
    incremental refresh runs first (usually nothing to do: `jobs ingest` ran it); the climate then
    reads only the job's motif, and the correlations kept for the job when they are current."""
    job = find_job(store, job_id)
    if job is None:
        return None
    name = choose_fs(store, job, fs, facts=False)  # the refresh reads the job's per-file facts if it computes
    refresh_all(store, name, only_motif=job.motif(name))
    return umami_among(store, job, name, None, "darshan" if job.key.startswith("darshan:") else "scheduler")


def umami_among(store, job: Job, name: str, peers: list[Job] | None, source: str) -> Umami:
    """The UMAMI answer of `job` on file system `name` against the stored jobs of its motif, after
    computing or refreshing the weather of `peers` (jobs of its motif, any kind: Darshan, scheduler or
    benchmark runs) and of the job itself."""
    key = job.motif(name)
    fresh: dict = {}
    if peers is not None or not job.key.startswith("darshan:"):
        # a Darshan job's motif was just refreshed by umami_for_job (refresh_all): nothing to check twice
        fresh = ensure(store, [j for j in (peers or []) if j.key != job.key] + [job], name, climates=False)
    t = update_climates(store, name, {key})[key]
    if job.key not in t.keys and job.key not in fresh:
        fresh = ensure(store, [job], name)
        t = update_climates(store, name, {key})[key]
    i = t.keys.index(job.key) if job.key in t.keys else None
    stored = None
    if i is None:  # a running job is not stored: compute it for this answer only
        weather = fresh[job.key]
    else:
        weather = t.values(i)
        if weather.climate is not None and weather.climate.n is not None:  # update_climates just made it current
            stored = {"n": weather.climate.n, "r": weather.climate.r, "p": weather.climate.p}
    rows = t.history_of(job)
    out = um.climate({"id": job.id, "motif": key, "start_ns": job.start_ns, "values": weather.answer_json()},
                  t.starts[rows], t.x[rows], list(UMAMI_ROWS), "fraction_of_peak", stored=stored)
    return replace(out, source=source, fs=name, weather=weather,
                   verdict=_no_data_verdict(name) if weather.no_data else out.verdict)


def _no_data_verdict(fs: str) -> str:
    return f"no data: no telemetry for {fs} in the job's window"


def stored_verdicts(store, log_hashes: list[str]) -> dict[str, str]:
    """{log hash: weather verdict} of the Darshan jobs among `log_hashes` with a stored one on the file
    system the one resolver names for them (what the job page and `why` show): the verdict kept when
    their UMAMI was last computed, or "no data" when their window had no telemetry. A weather stored on
    another file system (an explicit --fs, an fs-map changed since) is not shown, even when it is the
    job's only one. Reads the store only: the Jobs list never computes a weather."""

    by_job: dict[str, dict[str, str]] = {}
    for r in door(store, "job_weather").of_jobs(store, [f"darshan:{h}" for h in log_hashes]):
        w = Weather.from_json(r["doc"])
        v = w.verdict or (_no_data_verdict(r["fs"]) if w.no_data else None)
        if v is not None:
            by_job.setdefault(r["job_key"][len("darshan:"):], {})[r["fs"]] = v
    out: dict[str, str] = {}
    tables: dict = {}  # the jobs of one page mostly share a per-file part: read once
    for h, verdicts in by_job.items():
        job = find_job(store, h)
        fs = fs_of(store, job, facts=False, tables=tables).dataset if job is not None else None
        if fs in verdicts:
            out[h] = verdicts[fs]
    return out
