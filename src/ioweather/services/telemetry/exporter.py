"""`ioweather export`: the telemetry store (what `collect` and `import` wrote) as a Prometheus exporter.

Names follow HewlettPackard/lustre_exporter where a metric corresponds, so that dashboards and
recording rules written for it work (labels `component` = ost/mdt and `target` = the Lustre target
name, `operation`, `jobid`); the rest follows node_exporter's conventions under `ioweather_`
(base units in the name, counters ending in `_total`). Every series also carries `fs`, the store's
dataset. The full table is in docs/exporter.md.

Counters are running totals: the sum of the valid amounts stored for the (metric, target), over the
whole dataset, as a direct SQL sum over the Parquet files gives. Missing intervals (a counter reset,
a sampling gap) count nothing, as in the store. A data file is summed once (files are immutable):
a scrape lists the dataset and sums only the new files, so its cost does not grow with the history.
Sums of files older than FOLD_AFTER_DAYS days are merged into one table; should such a file
disappear (an import replaced, `store check --repair`) everything is summed again. A counter is
never shown lower than before because of rounding (a compaction sums the same values in another
order); a real decrease (re-import with less data) is shown, and Prometheus treats it as a reset.

Bounded series:
- a target (or host device) whose latest row is older than `stale_s` before the newest row of its
  dataset is left out (a removed OST does not stay forever), and so is a gauge reading that old;
- Lustre job_stats: the jobs with I/O in the last `job_window_s` of the data (600 s, Lustre's own
  job_cleanup_interval), at most `top_jobs` per dataset, ranked by bytes read and written, one
  series per job and kind of target (ost/mdt), summed over the targets (lustre_exporter has one per
  job and target: 50 jobs x 500 OSTs would be 25,000 series). A job counts its I/O in the last
  JOB_HISTORY_S of the data.
"""

from __future__ import annotations

import datetime
import gzip
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import numpy as np

from ioweather import signals
from ioweather.errors import StoreError, UserError, os_error_reason
from ioweather.store import telemetry_layout as layout
from ioweather.store.telemetry_totals import FileLister, file_sums
from ioweather.services.telemetry.exporter_defaults import DEFAULT_PORT, JOB_WINDOW_S, STALE_S, TOP_JOBS  # noqa: F401
from ioweather.services.telemetry.exporter_lctl import _BRW, _TARGET_VALUES, _bucket_size, family_list  # noqa: F401
from ioweather.views.exposition import CONTENT_TYPE_LATEST, Family, render

JOB_HISTORY_S = 8 * 86400.0
FOLD_AFTER_DAYS = 2      # collect merges a day's files once the day is over: two days later they are final
BATCH_FILES = 256        # files summed per DuckDB query
REFRESH_S = 5.0          # the server sums new files this often, off the scrape's path
#: A counter lower than its last shown value by less than this fraction is rounding, not a reset.
ROUNDING = 1e-9

_LUSTRE_TARGET = re.compile(r"^[A-Za-z0-9_.-]+?-(OST|MDT)[0-9A-Fa-f]{4,}$")

# store metric -> (family, scale); Lustre targets (component, target)
_LUSTRE = {
    "read_bytes": ("lustre_read_bytes_total", 1.0), "write_bytes": ("lustre_write_bytes_total", 1.0),
    "read_ops": ("lustre_read_samples_total", 1.0), "write_ops": ("lustre_write_samples_total", 1.0),
    "capacity_bytes": ("lustre_capacity_bytes", 1.0), "free_bytes": ("lustre_free_bytes", 1.0),
    "avail_bytes": ("lustre_available_bytes", 1.0), "files_total": ("lustre_inodes_maximum", 1.0),
    "files_free": ("lustre_inodes_free", 1.0),
}
_JOBS = {
    "job_read_bytes": "lustre_job_read_bytes_total", "job_write_bytes": "lustre_job_write_bytes_total",
    "job_read_ops": "lustre_job_read_samples_total", "job_write_ops": "lustre_job_write_samples_total",
}
# everything else (hosts' devices, GPFS and NFS mounts, Lustre clients, CPU, memory, statvfs)
_NODE = {
    "read_bytes": ("ioweather_read_bytes_total", 1.0), "write_bytes": ("ioweather_write_bytes_total", 1.0),
    "read_ops": ("ioweather_read_operations_total", 1.0), "write_ops": ("ioweather_write_operations_total", 1.0),
    "busy_s": ("ioweather_busy_seconds_total", 1.0), "read_time_s": ("ioweather_read_time_seconds_total", 1.0),
    "write_time_s": ("ioweather_write_time_seconds_total", 1.0),
    "osc_read_bytes": ("ioweather_lustre_client_read_bytes_total", 1.0),
    "osc_write_bytes": ("ioweather_lustre_client_write_bytes_total", 1.0),
    "osc_rpcs": ("ioweather_lustre_client_rpcs_total", 1.0),
    "osc_rpc_wait_s": ("ioweather_lustre_client_rpc_wait_seconds_total", 1.0),
    "cpu_pct": ("ioweather_cpu_busy_ratio", 0.01), "mem_used_pct": ("ioweather_memory_used_ratio", 0.01),
    "mem_used_bytes": ("ioweather_memory_used_bytes", 1.0), "mem_total_bytes": ("ioweather_memory_total_bytes", 1.0),
    "queue_depth": ("ioweather_queue_depth", 1.0),
    "capacity_bytes": ("ioweather_filesystem_size_bytes", 1.0), "free_bytes": ("ioweather_filesystem_free_bytes", 1.0),
    "avail_bytes": ("ioweather_filesystem_avail_bytes", 1.0), "files_total": ("ioweather_filesystem_files", 1.0),
    "files_free": ("ioweather_filesystem_files_free", 1.0),
}

HELP = {
    "lustre_read_bytes_total": "The total number of bytes that have been read (OST stats; stored amounts summed).",
    "lustre_write_bytes_total": "The total number of bytes that have been written (OST stats; stored amounts summed).",
    "lustre_read_samples_total": "Total number of reads that have been recorded.",
    "lustre_write_samples_total": "Total number of writes that have been recorded.",
    "lustre_stats_total": "Number of operations the filesystem has performed (MDT md_stats, OST stats).",
    "lustre_capacity_bytes": "Capacity of the pool in bytes (lustre_exporter: lustre_capacity_kilobytes x 1024).",
    "lustre_free_bytes": "Bytes free in the pool (lustre_exporter: lustre_free_kilobytes x 1024).",
    "lustre_available_bytes": "Bytes readily available in the pool (lustre_exporter: ..._kilobytes x 1024).",
    "lustre_inodes_maximum": "The maximum number of inodes (objects) the filesystem can hold.",
    "lustre_inodes_free": "The number of inodes (objects) available.",
    "lustre_job_read_bytes_total": "The total number of bytes that have been read by the job (summed over targets).",
    "lustre_job_write_bytes_total": "The total number of bytes that have been written by the job (summed over targets).",
    "lustre_job_read_samples_total": "Total number of reads of the job that have been recorded (summed over targets).",
    "lustre_job_write_samples_total": "Total number of writes of the job that have been recorded (summed over targets).",
    "lustre_job_stats_total": "Number of operations the job has performed (summed over targets).",
    "ioweather_read_bytes_total": "Bytes read at the target (block device, GPFS or NFS mount, Lustre client mount).",
    "ioweather_write_bytes_total": "Bytes written at the target (block device, GPFS or NFS mount, Lustre client mount).",
    "ioweather_read_operations_total": "Read operations at the target.",
    "ioweather_write_operations_total": "Write operations at the target.",
    "ioweather_metadata_operations_total": "Metadata operations at the target, by operation.",
    "ioweather_busy_seconds_total": "Time the device was busy with I/O (iostat's %util over time).",
    "ioweather_read_time_seconds_total": "Time spent by reads at the device.",
    "ioweather_write_time_seconds_total": "Time spent by writes at the device.",
    "ioweather_lustre_client_read_bytes_total": "Bytes read by this Lustre client from the OST (osc stats).",
    "ioweather_lustre_client_write_bytes_total": "Bytes written by this Lustre client to the OST (osc stats).",
    "ioweather_lustre_client_rpcs_total": "RPCs this Lustre client sent to the OST.",
    "ioweather_lustre_client_rpc_wait_seconds_total": "Time this Lustre client's RPCs to the OST waited.",
    "ioweather_cpu_busy_ratio": "Share of CPU time busy (0-1) at the latest reading.",
    "ioweather_memory_used_ratio": "Share of memory used (0-1) at the latest reading.",
    "ioweather_memory_used_bytes": "Memory used at the latest reading.",
    "ioweather_memory_total_bytes": "Memory installed at the latest reading.",
    "ioweather_queue_depth": "I/O requests queued at the device at the latest reading.",
    "ioweather_filesystem_size_bytes": "File system size (statvfs, mmperfmon) at the latest reading.",
    "ioweather_filesystem_free_bytes": "File system free space at the latest reading.",
    "ioweather_filesystem_avail_bytes": "File system space available to unprivileged users at the latest reading.",
    "ioweather_filesystem_files": "File system inodes at the latest reading.",
    "ioweather_filesystem_files_free": "File system free inodes at the latest reading.",
    "ioweather_lustre_target_state": "1 for the target's state in its latest `lctl dl -t` listing (UP, ST, IN, AT or "
                                     "what else Lustre printed).",
}
_LABELS = {"lustre_stats_total": ("fs", "component", "target", "operation"),
           "lustre_job_stats_total": ("fs", "component", "jobid", "operation"),
           "ioweather_metadata_operations_total": ("fs", "target", "operation"),
           "ioweather_lustre_target_state": ("fs", "component", "target", "state")}
#: Stored metrics that are not numbers to export (the server NID of `lctl dl -t`, in the metric's name).
_SILENT = ("lctl_nid:",)
STATE = "ioweather_lustre_target_state"


@dataclass(frozen=True)
class Spec:
    """Where one stored (metric, target) goes: a family and its label values (after `fs`)."""

    family: str
    values: tuple[str, ...]
    scale: float = 1.0
    job: str | None = None        # the job id of a job_stats series (ranked, top N)
    kind: str | None = None       # "counter" or "gauge" where the name does not say (lustrefs-exporter's)

    @property
    def counter(self) -> bool:
        return self.kind == "counter" if self.kind else self.family.endswith("_total")


# what only `lctl get_param` gives (sources/telemetry/lctl_params.capture_samples), in lustrefs-exporter's names
_LCTL_GAUGES = {"connected_clients": "lustre_connected_clients", "num_exports": "lustre_exports_total",
                "lock_count": "lustre_lock_count_total"}
_RECOVERY = {"recovery_status": "recovery_status", "recovery_completed_clients": "recovery_status_completed_clients",
             "recovery_connected_clients": "recovery_status_connected_clients",
             "recovery_evicted_clients": "recovery_status_evicted_clients"}


def _lctl_spec(metric: str, component: str, key: str) -> Spec | None:
    if metric.startswith("brw_"):
        hist, _, rest = metric[4:].partition(":")
        op, _, bucket = rest.partition(":")
        if hist in _BRW and op in ("read", "write") and bucket:
            return Spec(_BRW[hist][0], (component, op, _bucket_size(bucket), key), kind="counter")
        return None
    if metric in _LCTL_GAUGES:
        return Spec(_LCTL_GAUGES[metric], (component, key), kind="gauge")
    if metric in _RECOVERY:
        return Spec(_RECOVERY[metric], (component.upper(), key), kind="gauge")
    if metric == "lock_timeouts":
        return Spec("lustre_lock_timeout_total", (component, key), kind="counter")
    return None


def spec_of(metric: str, key: str) -> Spec | None:
    """The series a stored (metric, key) is exported as; None for what has no Prometheus name here
    (lctl states, unknown CSV columns)."""
    if metric.startswith("job_"):
        component, sep, job = key.partition("/")
        if not sep:
            return None
        component = component.lower()
        if metric in _JOBS:
            return Spec(_JOBS[metric], (component, job), job=job)
        for prefix in ("job_md_", "job_ost_"):
            if metric.startswith(prefix) and len(metric) > len(prefix):
                return Spec("lustre_job_stats_total", (component, job, metric[len(prefix):]), job=job)
        return None
    m = _LUSTRE_TARGET.match(key)
    if m:
        component = m.group(1).lower()
        if metric.startswith("lctl_state_"):
            return Spec(STATE, (component, key, metric[len("lctl_state_"):].upper()))
        spec = _lctl_spec(metric, component, key)
        if spec is not None:
            return spec
        if metric in _LUSTRE:
            family, scale = _LUSTRE[metric]
            return Spec(family, (component, key), scale)
        for prefix in ("md_", "ost_"):
            if metric.startswith(prefix) and len(metric) > len(prefix):
                return Spec("lustre_stats_total", (component, key, metric[len(prefix):]))
    if metric == "lustre_memused_bytes":
        return Spec("lustre_mem_used", (key,), kind="gauge")
    if metric in _NODE:
        family, scale = _NODE[metric]
        return Spec(family, (key,), scale)
    if metric.startswith("md_") and len(metric) > 3:
        return Spec("ioweather_metadata_operations_total", (key, metric[3:]))
    return None


def labels_of(family: str) -> tuple[str, ...]:
    if family in _LABELS:
        return _LABELS[family]
    if family in _BRW_FAMILIES:
        return ("fs", "component", "operation", "size", "target")
    if family.startswith("recovery_status"):
        return ("fs", "kind", "target")
    if family == "lustre_mem_used":
        return ("fs", "target")
    if family.startswith("lustre_job_"):
        return ("fs", "component", "jobid")
    if family.startswith("lustre_"):
        return ("fs", "component", "target")
    return ("fs", "target")


# ------------------------------------------------------------------------------------------ sums

class Sums:
    """Per key index: the sum of valid amounts, the latest interval seen, the latest valid reading."""

    def __init__(self, n: int = 0):
        self.amount = np.zeros(n)
        self.valid = np.zeros(n, bool)
        self.seen = np.full(n, -1, np.int64)
        self.vns = np.full(n, -1, np.int64)
        self.value = np.full(n, np.nan)

    def ensure(self, n: int) -> None:
        have = len(self.amount)
        if n <= have:
            return
        grow = max(n, 2 * have) - have
        self.amount = np.concatenate([self.amount, np.zeros(grow)])
        self.valid = np.concatenate([self.valid, np.zeros(grow, bool)])
        self.seen = np.concatenate([self.seen, np.full(grow, -1, np.int64)])
        self.vns = np.concatenate([self.vns, np.full(grow, -1, np.int64)])
        self.value = np.concatenate([self.value, np.full(grow, np.nan)])

    def add(self, p: Part) -> None:
        """Add a part whose indices are unique (one file's rows grouped by key, or another Sums)."""
        if not len(p.idx):
            return
        self.ensure(int(p.idx.max()) + 1)
        i = p.idx
        ok = p.valid
        self.amount[i[ok]] += p.amount[ok]
        self.valid[i[ok]] = True
        self.seen[i] = np.maximum(self.seen[i], p.seen)
        newer = p.vns > self.vns[i]
        self.vns[i[newer]] = p.vns[newer]
        self.value[i[newer]] = p.value[newer]

    def copy(self) -> Sums:
        out = Sums()
        out.amount, out.valid, out.seen = self.amount.copy(), self.valid.copy(), self.seen.copy()
        out.vns, out.value = self.vns.copy(), self.value.copy()
        return out


@dataclass
class Part:
    idx: np.ndarray
    amount: np.ndarray
    valid: np.ndarray
    seen: np.ndarray
    vns: np.ndarray
    value: np.ndarray

    def take(self, mask: np.ndarray) -> Part:
        return Part(self.idx[mask], self.amount[mask], self.valid[mask], self.seen[mask], self.vns[mask],
                    self.value[mask])


@dataclass
class _File:
    fs: str
    day: int                 # UTC days since the epoch (from its directory)
    last_ns: int             # its latest interval start (-1: no rows)
    targets: Part | None     # None once folded into the base
    jobs: Part | None        # None once older than the job history
    error: str | None = None  # could not be read: counts nothing until it is listed again


# ---------------------------------------------------------------------------------------- exporter

class TelemetryExporter:
    """The exposition of the store's telemetry, brought up to date at each scrape."""

    def __init__(self, settings, fs_names=(), top_jobs: int = TOP_JOBS, job_window_s: float = JOB_WINDOW_S,
                 stale_s: float = STALE_S, job_history_s: float = JOB_HISTORY_S,
                 say: Callable[[str], None] = lambda m: None):
        self.settings = settings
        self.fs_names = tuple(fs_names)
        for name in self.fs_names:
            layout.check_fs_name(name)
        self.top_jobs = top_jobs
        self.job_window_ns = int(job_window_s * 1e9)
        self.stale_ns = int(stale_s * 1e9)
        self.job_history_ns = int(job_history_s * 1e9)
        self._keys: dict[tuple[str, str, str], int] = {}
        self._specs: list[Spec | None] = []
        self._fs_of: list[str] = []
        self._is_job = np.zeros(0, bool)
        self._unmapped: set[str] = set()
        self._listers: dict[str, FileLister] = {}
        self._files: dict[str, _File] = {}
        self._base = Sums()
        self._totals = Sums()
        self._shown = np.zeros(0)
        self._cache: tuple[bytes, bytes] | None = None
        self._last: tuple[bytes, bytes] | None = None  # survives updates: served while one holds the lock
        self._con = None  # one DuckDB connection, used under the lock: opening one per scrape cost 100 ms
        self._closing = False
        self._lock = threading.Lock()
        self.ready = threading.Event()
        self.rebuilds = 0
        self.update_s = 0.0
        self.say = say

    # -- keys ---------------------------------------------------------------------------------
    def _intern(self, fs: str, metric: str, key: str) -> int:
        k = (fs, metric, key)
        i = self._keys.get(k)
        if i is None:
            i = self._keys[k] = len(self._specs)
            spec = spec_of(metric, key)
            self._specs.append(spec)
            self._fs_of.append(fs)
            if spec is None and not metric.startswith(_SILENT):
                self._unmapped.add(metric)
        return i

    # -- keeping the sums up to date ------------------------------------------------------------
    def datasets(self) -> list[str]:
        have = layout.list_fs(self.settings)
        return [f for f in have if f in self.fs_names] if self.fs_names else have

    def update(self) -> bool:
        """Sum the files that appeared since the last call, drop those that went; True when anything changed."""
        t0 = time.perf_counter()
        listing: dict[str, tuple[str, object]] = {}
        for fs in self.datasets():
            lister = self._listers.setdefault(fs, FileLister(layout.fs_dir(self.settings, fs)))
            for p in lister.files():
                listing[str(p)] = (fs, p)
        changed = False
        gone = [k for k in self._files if k not in listing]
        if gone:
            changed = True
            if any(self._files[k].targets is None for k in gone):
                self._files.clear()  # a folded file went away: its sums are inside the base, start again
                self._base = Sums()
                self.rebuilds += 1
            else:
                for k in gone:
                    del self._files[k]
            self._recompute()
        new: dict[str, list] = {}
        for k, (fs, p) in listing.items():
            if k not in self._files:
                new.setdefault(fs, []).append(p)
        for fs, paths in new.items():
            for i in range(0, len(paths), BATCH_FILES):
                if self._closing:
                    return changed
                self._absorb(fs, paths[i:i + BATCH_FILES])
                changed = True
        changed |= self._age()
        if changed:
            self._cache = None
            self.update_s = time.perf_counter() - t0
        return changed

    def close(self) -> None:
        """Stop summing (from another thread): the query in flight is interrupted and no batch follows it, so
        the thread that sums ends before the interpreter does. A daemon thread still inside DuckDB when Python
        finalizes is ended by pthread_exit, whose unwinding DuckDB's C++ catches: abort(), exit -6 (a stopped
        `export` under load, tests/test_signals.py)."""
        self._closing = True
        con = self._con
        if con is not None:
            try:
                con.interrupt()
            except Exception:  # noqa: BLE001 - closed meanwhile: nothing in flight
                pass

    def _absorb(self, fs: str, paths: list) -> None:
        if self._con is None:
            self._con = layout.connect_duckdb()
        try:
            df = file_sums(paths, self._con)
        except Exception as e:
            if self._closing:
                return  # interrupted by close(): nothing of it is kept
            if not isinstance(e, StoreError):
                raise
            if len(paths) > 1:  # find the bad file: the others still count
                for p in paths:
                    self._absorb(fs, [p])
                return
            empty = Part(*(np.zeros(0, t) for t in (np.int64, float, bool, np.int64, np.int64, float)))
            self._files[str(paths[0])] = _File(fs, _day_of(paths[0]), -1, empty, empty, str(e))
            self.say(str(e))
            return
        n = len(df["metric"])
        idx = np.fromiter((self._intern(fs, m, k) for m, k in zip(df["metric"].tolist(), df["key"].tolist())), np.int64, n)
        self._is_job = np.concatenate([self._is_job, np.zeros(len(self._specs) - len(self._is_job), bool)])
        for i in np.unique(idx):
            spec = self._specs[i]
            self._is_job[i] = spec is not None and spec.job is not None
        amount = np.asarray(df["amount"], float)
        part = Part(idx, np.nan_to_num(amount), ~np.isnan(amount), np.asarray(df["seen_ns"], np.int64),
                    np.asarray(df["value_ns"], np.int64), np.asarray(df["value"], float))
        files = np.asarray(df["file"], object)
        order = np.argsort(files, kind="stable")
        bounds = np.flatnonzero(np.r_[True, files[order][1:] != files[order][:-1], True]) if len(files) else [0]
        rows = {files[order[a]]: order[a:b] for a, b in zip(bounds[:-1], bounds[1:])}
        for p in paths:
            sel = rows.get(str(p), np.zeros(0, np.int64))
            mine = part.take(sel)
            job = self._is_job[mine.idx]
            entry = _File(fs, _day_of(p), int(mine.seen.max()) if len(sel) else -1, mine.take(~job), mine.take(job))
            self._files[str(p)] = entry
            self._totals.add(entry.targets)
            self._totals.add(entry.jobs)

    def _recompute(self) -> None:
        totals = self._base.copy()
        for f in self._files.values():
            if f.targets is not None:
                totals.add(f.targets)
            if f.jobs is not None:
                totals.add(f.jobs)
        self._totals = totals

    def newest_ns(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in self._files.values():
            if f.last_ns > out.get(f.fs, -1):
                out[f.fs] = f.last_ns
        return out

    def _age(self) -> bool:
        """Fold the target sums of final days into the base; drop job sums older than the job history."""
        newest = self.newest_ns()
        expired = False
        for f in self._files.values():
            top = newest.get(f.fs, -1)
            if f.targets is not None and f.error is None and f.day <= top // layout.DAY_NS - FOLD_AFTER_DAYS:
                self._base.add(f.targets)
                f.targets = None
            if f.jobs is not None and len(f.jobs.idx) and f.last_ns < top - self.job_history_ns:
                f.jobs = None
                expired = True
        if expired:
            self._recompute()
        return expired

    # -- the exposition ---------------------------------------------------------------------------
    def families(self) -> list[Family]:
        n = len(self._specs)
        t = self._totals
        t.ensure(n)
        shown = np.concatenate([self._shown, np.zeros(max(0, n - len(self._shown)))])
        amount = t.amount[:n].copy()
        rounding = (amount < shown) & (amount >= shown * (1 - ROUNDING))
        amount[rounding] = shown[rounding]
        self._shown = amount
        newest = self.newest_ns()
        fs_ids = {fs: i for i, fs in enumerate(sorted(newest))}
        top = np.array([newest[fs] for fs in sorted(newest)] + [-1], np.int64)
        fs_id = np.array([fs_ids.get(fs, len(top) - 1) for fs in self._fs_of], np.int64) if n else np.zeros(0, np.int64)
        fresh = t.seen[:n] >= top[fs_id] - self.stale_ns
        is_job = self._is_job[:n] if len(self._is_job) >= n else np.zeros(n, bool)
        jobs_shown, active = self._top_jobs(is_job, t, top, fs_id, amount)
        fams: dict[str, Family] = {}
        states: dict[tuple[str, str], list[int]] = {}
        for i in np.flatnonzero(fresh | is_job):
            spec = self._specs[i]
            if spec is None:
                continue
            if spec.family == STATE:  # the target's latest listing only: older rows name states it left
                states.setdefault((self._fs_of[i], spec.values[1]), []).append(i)
                continue
            if spec.job is not None:
                if (self._fs_of[i], spec.job) not in jobs_shown or not t.valid[i]:
                    continue
                value = amount[i]
            elif spec.counter:
                if not t.valid[i]:
                    continue
                value = amount[i] * spec.scale
            else:
                if t.vns[i] < top[fs_id[i]] - self.stale_ns:
                    continue
                value = t.value[i] * spec.scale
            fam = fams.get(spec.family)
            if fam is None:
                fam = fams[spec.family] = Family(spec.family, "counter" if spec.counter else "gauge",
                                                 _help(spec.family), labels_of(spec.family))
            fam.samples.append(((self._fs_of[i], *spec.values), float(value)))
        for keys in states.values():
            latest = max(t.vns[i] for i in keys)
            fam = fams.setdefault(STATE, Family(STATE, "gauge", HELP[STATE], labels_of(STATE)))
            fam.samples += [((self._fs_of[i], *self._specs[i].values), 1.0) for i in keys if t.vns[i] == latest >= 0]
        out = [fams[k] for k in sorted(fams)]
        for f in out:
            f.samples.sort()
        return out + self._meta(newest, active)

    def _top_jobs(self, is_job, t: Sums, top, fs_id, amount) -> tuple[set, dict[str, int]]:
        """{(fs, job id)} of the exported jobs, and {fs: jobs active in the window}."""
        idx = np.flatnonzero(is_job & (t.seen[:len(is_job)] >= top[fs_id] - self.job_window_ns))
        active: dict[str, dict[str, float]] = {}
        for i in idx:
            spec = self._specs[i]
            fs = self._fs_of[i]
            moved = amount[i] if spec.family in ("lustre_job_read_bytes_total", "lustre_job_write_bytes_total") else 0.0
            jobs = active.setdefault(fs, {})
            jobs[spec.job] = jobs.get(spec.job, 0.0) + moved
        shown = set()
        for fs, jobs in active.items():
            ranked = sorted(jobs.items(), key=lambda kv: (-kv[1], kv[0]))[:self.top_jobs]
            shown.update((fs, j) for j, _ in ranked)
        return shown, {fs: len(j) for fs, j in active.items()}

    def _meta(self, newest: dict[str, int], active: dict[str, int]) -> list[Family]:
        files: dict[str, int] = {}
        bad: dict[str, int] = {}
        for f in self._files.values():
            files[f.fs] = files.get(f.fs, 0) + 1
            if f.error:
                bad[f.fs] = bad.get(f.fs, 0) + 1
        fss = sorted(set(newest) | set(files))
        return [
            Family("ioweather_telemetry_last_timestamp_seconds", "gauge",
                   "Start of the newest stored interval of the dataset (unix seconds): alert on "
                   "time() - this when collect stops.", ("fs",),
                   [((fs,), newest[fs] / 1e9) for fs in fss if newest.get(fs, -1) >= 0]),
            Family("ioweather_exporter_files", "gauge", "Telemetry data files summed.", ("fs",),
                   [((fs,), float(files.get(fs, 0) - bad.get(fs, 0))) for fs in fss]),
            Family("ioweather_exporter_unreadable_files", "gauge",
                   "Data files that could not be read (damaged: see `ioweather store check`); they count nothing.",
                   ("fs",), [((fs,), float(bad.get(fs, 0))) for fs in fss]),
            Family("ioweather_lustre_jobs_active", "gauge",
                   f"Jobs with job_stats rows in the last {self.job_window_ns / 1e9:g} s of the data "
                   f"(at most {self.top_jobs} are exported).", ("fs",),
                   [((fs,), float(active.get(fs, 0))) for fs in fss]),
            Family("ioweather_exporter_unexported_metrics", "gauge",
                   "Distinct stored metric names that have no exported name (lctl states, unknown CSV columns).",
                   (), [((), float(len(self._unmapped)))]),
            Family("ioweather_exporter_update_duration_seconds", "gauge",
                   "Time the last update that read new files took.", (), [((), self.update_s)]),
            Family("ioweather_exporter_ready", "gauge",
                   "1 once the store has been summed (0 while the first summing runs).", (), [((), 1.0)]),
        ]

    def exposition(self, gzipped: bool = False, wait_s: float | None = None) -> bytes:
        """The current exposition (summing new files first). While another thread holds the lock
        longer than `wait_s` (the first summing of a big store), only `ioweather_exporter_ready 0`."""
        if wait_s is None:
            wait_s = 1.0 if self.ready.is_set() else 0.0
        got = self._lock.acquire(timeout=wait_s) if wait_s > 0 else self._lock.acquire(blocking=False)
        if not got and self._last is not None:  # a long update runs: the previous text, not a gap in every series
            return self._last[1] if gzipped else self._last[0]
        if not got:
            text = render([Family("ioweather_exporter_ready", "gauge",
                                  "1 once the store has been summed (0 while the first summing runs).", (),
                                  [((), 0.0)])])
            return gzip.compress(text, 1) if gzipped else text
        try:
            self.update()
            if self._cache is None:
                text = render(self.families())
                self._cache = self._last = (text, gzip.compress(text, 1))
            self.ready.set()
            return self._cache[1] if gzipped else self._cache[0]
        finally:
            self._lock.release()


def _day_of(path) -> int:
    """UTC days since the epoch of a data file's `date=YYYY-MM-DD` directory."""
    try:
        return datetime.date.fromisoformat(path.parent.name[5:]).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return 0


_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


# ------------------------------------------------------------------------------------------ server

LANDING = (b"<!doctype html><title>ioweather exporter</title><h1>ioweather exporter</h1>"
           b"<p><a href=\"/metrics\">/metrics</a>: the telemetry store as Prometheus metrics (docs/exporter.md).")


def make_server(exporter: TelemetryExporter, host: str, port: int) -> ThreadingHTTPServer:
    """A listening HTTP server for /metrics; a one-line UserError when the address cannot be used."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as e:
        raise UserError(f"cannot resolve --host {host!r}: {e.strerror}") from None

    class Server(ThreadingHTTPServer):
        address_family = family
        daemon_threads = True

        def handle_error(self, request, client_address):
            # socketserver prints a traceback for any exception of a request: a scraper that hangs up
            # before reading its answer (a timeout, a killed curl) was 19 lines in the log each time
            err = sys.exc_info()[1]
            if isinstance(err, (ConnectionError, TimeoutError)):
                exporter.say(f"{client_address[0]} hung up before its answer was sent ({os_error_reason(err)})")
            else:
                exporter.say(f"a request from {client_address[0]} failed: {type(err).__name__}: "
                             f"{str(err).splitlines()[0][:200] if str(err) else ''}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            path = urlsplit(self.path).path
            if path == "/metrics":
                gz = "gzip" in self.headers.get("Accept-Encoding", "")
                try:
                    body, ctype = exporter.exposition(gzipped=gz), CONTENT_TYPE_LATEST
                except UserError as e:  # the store could not be read this time: a failed scrape, said why
                    self.send_error(503, str(e).splitlines()[0])
                    return
            elif path == "/":
                gz, body, ctype = False, LANDING, "text/html; charset=utf-8"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            if gz:
                self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass  # a scrape every 15 s is not news

    try:
        return Server((host, port), Handler)
    except OSError as e:
        raise UserError(f"cannot listen on {host}:{port}: {os_error_reason(e)}") from None


#: how long a stopped `export` waits for its summing thread to end after interrupting it
CLOSE_S = 10.0


def serve(exporter: TelemetryExporter, server: ThreadingHTTPServer, stop: threading.Event,
          say: Callable[[str], None] = lambda m: None, refresh_s: float = REFRESH_S,
          started: Callable[[], None] = lambda: None) -> None:
    """Serve until `stop` (or SIGTERM/SIGINT, which set it). A background thread sums the store once
    (scrapes meanwhile say ready 0), then every `refresh_s` sums the files that appeared, so that a
    scrape seldom pays for it. `started()` is called once the signals stop it: a supervisor that
    reads the line it prints may stop it at once."""
    def refresh():
        t0 = time.perf_counter()
        exporter.exposition(wait_s=3600.0)
        say(f"summed {len(exporter._files)} files of {len(exporter.datasets())} datasets in "
            f"{time.perf_counter() - t0:.1f} s")
        while not stop.wait(refresh_s):
            try:
                exporter.exposition(wait_s=refresh_s)
            except UserError as e:
                say(str(e))

    with signals.handled(signals.set_event(stop)):
        started()
        refresher = threading.Thread(target=refresh, name="exporter-refresh", daemon=True)
        refresher.start()
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        thread.start()
        try:
            stop.wait()
        finally:
            server.shutdown()
            server.server_close()
            exporter.close()
            refresher.join(timeout=CLOSE_S)


_BRW_FAMILIES = {name for name, _, _ in _BRW.values()}
_LCTL_HELP = {name: help_ for name, _, help_ in (*_BRW.values(), *_TARGET_VALUES.values())}
_LCTL_HELP.update({
    "lustre_connected_clients": "Number of connected clients (client UUIDs among the exports).",
    "recovery_status": "Recovery status of the target: 0 complete, 1 inactive, 2 waiting, 3 waiting for clients, "
                       "4 recovering, 5 unknown.",
    "recovery_status_completed_clients": "Recovery: completed clients of the target.",
    "recovery_status_connected_clients": "Recovery: connected clients of the target.",
    "recovery_status_evicted_clients": "Recovery: evicted clients of the target.",
    "lustre_mem_used": "Memory Lustre uses on the host (lctl memused), bytes.",
})


def _help(family: str) -> str:
    return HELP.get(family) or _LCTL_HELP[family]


def no_telemetry(settings, fs: str) -> UserError:
    """The one line for a file system with no telemetry stored, naming the ones there are."""
    return layout.no_telemetry(settings, fs)
