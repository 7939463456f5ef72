"""What a stateless exporter (whamcloud/lustrefs-exporter) exports for one `lctl get_param` capture:
`ioweather export --capture FILE --once`. Its family names, labels, units and types, raw values; the
table is in docs/exporter.md. Kept apart from exporter.py (the store's exporter) so that exporting a
capture imports neither pandas nor the store: a node_exporter textfile cron job starts in a fraction
of a second."""

from __future__ import annotations

import codecs
import os
import zlib
from dataclasses import dataclass

from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError, from_os_error
from ioweather.files import open_regular, too_large
from ioweather.services.telemetry.exporter_defaults import OTHER_JOBS, TOP_JOBS
from ioweather.sources.telemetry.lctl_params import Stat, component_of, connected_clients, parse_chunks
from ioweather.views.exposition import Family

# lustrefs-exporter's families for what `lctl get_param` gives (names, labels, units and types
# as its snapshot tests export them; docs/exporter.md has the table beside lustre_exporter's).
# (name, type, help, labels in order)
#: A capture (one node's `lctl get_param` output, about 1 MB on an OSS of 20 OSTs) is read whole: a file,
#: or what a gzip file inflates to, above this is refused before it is parsed (a 100 KB gzip capture
#: inflated to cost `export --capture` 1 GB, issue 41).
CAPTURE_MAX_BYTES = 64 << 20
_BRW = {
    "disk_iosize": ("lustre_disk_io_total", "counter", "Total number of operations the filesystem has performed "
                    "for the given size ('size': Disk I/O size, bytes)."),
    "rpc_hist": ("lustre_disk_io", "counter", "I/O operations by the number in flight when each was issued "
                 "('size': Disk I/Os in flight)."),
    "pages": ("lustre_pages_per_bulk_rw_total", "counter", "Bulk RPCs by pages per RPC ('size': pages)."),
    "discont_pages": ("lustre_discontiguous_pages_total", "counter",
                      "RPCs by logical discontinuities in their pages ('size': discontinuities)."),
    "discont_blocks": ("lustre_discontiguous_blocks_total", "counter",
                       "RPCs by discontinuities in the physical block allocation ('size': discontinuities)."),
    "dio_frags": ("lustre_dio_frags", "counter", "Disk I/Os by fragments ('size': Disk fragmented I/Os)."),
    "io_time": ("lustre_io_time_milliseconds_total", "counter",
                "Disk I/Os by the time they took ('size': upper bound in milliseconds)."),
    "block_maps_msec": ("lustre_block_maps_milliseconds_total", "counter",
                        "Block maps by the time they took ('size': milliseconds)."),
}
_TARGET_VALUES = {  # lctl parameter -> family (component, target)
    "filesfree": ("lustre_inodes_free", "gauge", "The number of inodes (objects) available."),
    "filestotal": ("lustre_inodes_maximum", "gauge", "The maximum number of inodes (objects) the filesystem can hold."),
    "kbytesavail": ("lustre_available_kilobytes", "gauge", "Number of kilobytes readily available in the pool."),
    "kbytesfree": ("lustre_free_kilobytes", "gauge", "Number of kilobytes free in the pool."),
    "kbytestotal": ("lustre_capacity_kilobytes", "gauge", "Capacity of the pool in kilobytes."),
    "num_exports": ("lustre_exports_total", "gauge", "Number of exports (connections) of the target."),
    "tot_dirty": ("lustre_exports_dirty_total", "gauge", "Bytes of dirty cache the target's clients hold (tot_dirty)."),
    "tot_granted": ("lustre_exports_granted_total", "gauge", "Bytes of space granted to the target's clients (tot_granted)."),
    "tot_pending": ("lustre_exports_pending_total", "gauge", "Bytes of writes pending at the target (tot_pending)."),
    "contended_locks": ("lustre_lock_contended_total", "gauge",
                        "Number of locks on a resource above which it counts as contended (ldlm contended_locks)."),
    "contention_seconds": ("lustre_lock_contention_seconds_total", "gauge",
                           "Time in seconds a resource stays contended (ldlm contention_seconds)."),
    "lock_count": ("lustre_lock_count_total", "gauge", "Number of locks held in the target's namespace."),
    "lock_timeouts": ("lustre_lock_timeout_total", "counter", "Number of lock timeouts."),
}
_STATS_FAMILIES = {"ost": "lustre_oss_ost_stats", "ost_io": "lustre_oss_ost_io_stats",
                   "ost_create": "lustre_oss_ost_create_stats"}
_MDS_SERVICES = ("mdt", "mdt_fld", "mdt_io", "mdt_out", "mdt_readpage", "mdt_seqm", "mdt_seqs", "mdt_setattr")
# lustrefs-exporter's job_stats operations: those of an OST besides read/write bytes, and of an MDT
_JOB_OST_OPS = ("getattr", "setattr", "punch", "sync", "destroy", "create", "statfs", "get_info", "set_info", "quotactl")
_JOB_MDT_OPS = ("open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr",
                "getxattr", "setxattr", "statfs", "sync", "samedir_rename", "parallel_rename_file",
                "parallel_rename_dir", "crossdir_rename", "read", "write", "read_bytes", "write_bytes", "punch",
                "migrate")


class _Families:
    """Families in order of first use; a (family, labels) given twice keeps its first value
    (a parameter listed twice in one capture is one series)."""

    def __init__(self):
        self.fams: dict[str, Family] = {}
        self.seen: set[tuple] = set()

    def add(self, name: str, kind: str, help: str, labels: tuple[str, ...], values: tuple[str, ...], v) -> None:
        if v is None or (name, values) in self.seen:
            return
        self.seen.add((name, values))
        fam = self.fams.get(name)
        if fam is None:
            fam = self.fams[name] = Family(name, kind, help, labels)
        fam.samples.append((values, float(v)))


@dataclass(frozen=True)
class FamilyRow:
    """One exported family: its name, Prometheus type, series count and label names."""

    name: str
    type: str
    series: int
    labels: list[str]


@dataclass(frozen=True)
class FamilyList(Answer):
    """`export --list`'s answer (`export --list --json`): the families, in the exposition's order."""

    families: list[FamilyRow]

    def to_json(self) -> dict:
        return {"families": [answer_dict(f) for f in self.families]}


def family_list(families: list[Family]) -> FamilyList:
    """The families of an exposition (a store's or a capture's) as `export --list` lists them."""
    return FamilyList([FamilyRow(f.name, f.kind, len(f.samples), list(f.labels)) for f in families])


def _bucket_size(name: str) -> str:
    """brw_stats' bucket names as lustrefs-exporter's `size` label: 4K -> 4096, 1M -> 1048576."""
    unit = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}.get(name[-1:])
    return str(int(name[:-1]) * unit) if unit and name[:-1].isdigit() else name


def capture_families(cap, top_jobs: int = TOP_JOBS) -> list[Family]:
    """What a stateless exporter (lustrefs-exporter) exports for one capture (sources/telemetry/
    lctl_params.Capture): raw counters and gauges, lustrefs-exporter's names and labels, no `fs`
    label (a capture belongs to no dataset). Job series: the `top_jobs` jobs moving the most bytes."""
    f = _Families()
    h = cap.host
    if cap.healthy is not None:
        help_ = "Whether the Lustre node (or the target health_check names) reports itself healthy (1) or not (0)."
        # with targets named at fault lustrefs-exporter adds them as series labelled `target`; one family has
        # one label set here, so the node's own series is then target="" (the same series to Prometheus)
        labels = ("target",) if cap.unhealthy else ()
        f.add("lustre_health_healthy", "gauge", help_, labels, ("",) if labels else (), 1 if cap.healthy else 0)
        for target in cap.unhealthy:
            f.add("lustre_health_healthy", "gauge", help_, labels, (target,), 0)
    f.add("lustre_lnet_mem_used", "gauge", "Gives information about Lustre LNet memory usage.", (), (),
          h.get("lnet_memused"))
    f.add("lustre_mem_used", "gauge", "Gives information about Lustre memory usage.", (), (), h.get("memused"))
    # a counter named without _total, as lustrefs-exporter types it (a parser then reads ..._total)
    f.add("lustre_mem_used_max", "counter", "Gives information about Lustre maximum memory usage.", (), (),
          h.get("memused_max"))
    for st in cap.stats:
        if st.kind == "ldlm" and st.target in ("ldlm_canceld", "ldlm_cbd"):
            svc = st.target.split("_")[1]
            for r in st.rows:
                f.add(f"lustre_ldlm_{svc}_stats", "counter", f"Requests of the LDLM {svc} service, by operation.",
                      ("operation",), (r.name,), r.samples)
    for st in cap.stats:
        if st.kind == "ldlm" and st.target in ("ldlm_canceld", "ldlm_cbd") and st.start_time is not None:
            svc = st.target.split("_")[1]
            f.add(f"lustre_ldlm_{svc}_stats_start_time", "gauge",
                  f"Time (epoch seconds) the LDLM {svc} service stats were last reset.", (), (), st.start_time)
    _brw_families(f, cap, component_of)
    for target, param, value in cap.values:
        if param in _TARGET_VALUES:
            name, kind, help_ = _TARGET_VALUES[param]
            f.add(name, kind, help_, ("component", "target"), (component_of(target), target), value)
    for target, n in connected_clients(cap).items():
        f.add("lustre_connected_clients", "gauge", "Number of connected clients (client UUIDs among the exports).",
              ("component", "target"), (component_of(target), target), n)
    for st in cap.stats:
        if st.kind == "service" and st.group == "OSS" and st.target in _STATS_FAMILIES:
            for r in st.rows:
                f.add(_STATS_FAMILIES[st.target], "gauge", f"OSS {st.target} service stats: requests by operation.",
                      ("operation", "units"), (r.name, r.units), r.samples)
    for target, current, users in cap.changelog:
        for user, index, idle in users:
            f.add("lustre_changelog_user_index", "gauge", "Changelog index each registered user has consumed to.",
                  ("target", "user"), (target, user), index)
            f.add("lustre_changelog_user_idle_sec", "gauge", "Seconds since the changelog user last consumed.",
                  ("user",), (user,), idle)
        f.add("lustre_changelog_current_index", "gauge", "Current changelog index.", ("target",), (target,), current)
    _stats_families(f, cap)
    for kind, target, fields in cap.recovery:
        labels = ("kind", "target")
        f.add("recovery_status", "gauge", "Recovery status of the target: 0 complete, 1 inactive, 2 waiting, "
              "3 waiting for clients, 4 recovering, 5 unknown.", labels, (kind, target), fields.get("status"))
        for key in ("completed_clients", "connected_clients", "evicted_clients"):
            f.add(f"recovery_status_{key}", "gauge", f"Recovery: {key.replace('_', ' ')} of the target.", labels,
                  (kind, target), fields.get(key))
        f.add("recovery_status_duration_seconds", "gauge", "Duration of the target's last recovery in seconds.",
              labels, (kind, target), fields.get("recovery_duration"))
    _quota_families(f, cap, component_of)
    _job_families(f, cap, top_jobs)
    _lnet_families(f, cap)
    return list(f.fams.values())


def _brw_families(f: _Families, cap, component_of) -> None:
    for brw in cap.brw:
        labels = ("component", "operation", "size", "target")
        comp = component_of(brw.target)
        for hist, buckets in brw.hists.items():
            if hist not in _BRW:
                continue
            name, kind, help_ = _BRW[hist]
            for bucket, read, write in buckets:
                size = _bucket_size(bucket)
                f.add(name, kind, help_, labels, (comp, "read", size, brw.target), read)
                f.add(name, kind, help_, labels, (comp, "write", size, brw.target), write)
    for brw in cap.brw:
        f.add("lustre_brw_stats_start_time", "gauge", "Unix epoch seconds when the brw_stats counters were last reset.",
              ("component", "target"), (component_of(brw.target), brw.target), brw.start_time)


def _stats_families(f: _Families, cap) -> None:
    ct = ("component", "operation", "target")
    for st in cap.stats:
        if st.kind == "obdfilter":
            for r in st.rows:
                if r.name not in ("read_bytes", "write_bytes"):
                    continue  # lustrefs-exporter exports an OST's other stats lines through ost.OSS.* only
                op = r.name[:-6]
                v = ("ost", op, st.target)
                f.add(f"lustre_{op}_samples_total", "counter", f"Total number of {op}s that have been recorded.", ct, v,
                      r.samples)
                f.add(f"lustre_{op}_minimum_size_bytes", "gauge", f"The minimum {op} size in bytes.", ct, v, r.min)
                f.add(f"lustre_{op}_maximum_size_bytes", "counter", f"The maximum {op} size in bytes.", ct, v, r.max)
                f.add(f"lustre_{op}_bytes_total", "counter", f"The total number of bytes of the {op}s.", ct, v, r.sum)
        elif st.kind == "llite":
            for r in st.rows:
                f.add("lustre_client_stats", "counter", "Operations of the client mount (llite stats), by operation.",
                      ("operation", "target"), (r.name, st.target), r.samples)
            f.add("lustre_client_stats_start_time", "gauge", "Unix epoch seconds when the client's stats were last reset.",
                  ("target",), (st.target,), st.start_time)
    for st in cap.stats:
        if st.kind == "mdt":
            for r in st.rows:
                v = ("mdt", r.name, st.target)
                f.add("lustre_stats_total", "counter", "Number of operations the filesystem has performed.", ct, v,
                      r.samples)
                f.add("lustre_stats_time_min", "gauge", "Minimum time taken for an operation in microseconds.", ct, v, r.min)
                f.add("lustre_stats_time_max", "gauge", "Maximum time taken for an operation in microseconds.", ct, v, r.max)
                f.add("lustre_stats_time_total", "gauge", "Total time taken for an operation in microseconds.", ct, v, r.sum)
    for st in cap.stats:
        if st.kind in ("obdfilter", "mdt", "mgs") and st.start_time is not None:
            f.add("lustre_stats_start_time", "gauge", "Unix epoch seconds when lustre_stats was last reset.",
                  ("component", "target"), (component_of(st.target), st.target), st.start_time)
    labels = ("component", "name", "nid", "target", "units")
    for st in cap.stats:
        if st.kind != "export" or st.group not in ("obdfilter", "mdt"):
            continue
        comp = "ost" if st.group == "obdfilter" else "mdt"
        for r in st.rows:
            v = (comp, r.name, st.nid, st.target, r.units)
            f.add("lustre_client_export_stats", "counter", "Number of operations the target has performed per export.",
                  labels, v, r.samples)
            if r.units == "usecs":
                f.add("lustre_client_export_milliseconds_total", "counter", "Accumulated latency of the operations the "
                      "target has performed per export (microseconds, as lustrefs-exporter exports them).",
                      labels, v, r.sum)
            elif r.units == "bytes":
                f.add("lustre_client_export_bytes_total", "counter",
                      "Accumulated bytes of the operations the target has performed per export.", labels, v, r.sum)
    for st in cap.stats:
        if st.kind == "service" and st.group == "MDS" and st.target in _MDS_SERVICES:
            for r in st.rows:
                f.add(f"lustre_mds_{st.target}_stats", "gauge", f"MDS {st.target} service stats: requests by operation.",
                      ("operation", "units"), (r.name, r.units), r.samples)


def _quota_families(f: _Families, cap, component_of) -> None:
    for target, pool_param, acct, ident, limits in cap.quota_limits:
        manager, _, pool = pool_param.partition("-")
        if manager == "lqa":  # a tenant's quota (lqa-dt-tenant0): manager lqa-dt, tenant tenant0
            sub, _, tenant = pool.partition("-")
            name, labels, values = "lustre_lqa_quota", ("accounting", "id", "manager", "tenant", "target"), \
                (acct, ident, f"lqa-{sub}", tenant, target)
        else:
            name, labels, values = "lustre_quota", ("accounting", "id", "manager", "pool", "target"), \
                (acct, ident, manager, "" if pool == "0x0" else pool, target)
        for key in ("hard", "soft", "granted"):
            f.add(f"{name}_{key}", "gauge", f"The {key} quota limit (kilobytes or inodes) of the id.", labels, values,
                  limits.get(key))
    labels = ("accounting", "component", "id", "target")
    for target, acct, ident, inodes, kbytes in cap.quota_usage:
        values = (acct, component_of(target), ident, target)
        f.add("lustre_quota_used_kbytes", "gauge", "Kilobytes used by the id on the target.", labels, values, kbytes)
        f.add("lustre_quota_used_inodes", "gauge", "Inodes used by the id on the target.", labels, values, inodes)


def _job_families(f: _Families, cap, top_jobs: int) -> None:
    """The series of the `top_jobs` jobs moving the most bytes over the capture (all their rows on
    every target, so that a job's sum over targets is whole), and one rollup series per target
    and operation (jobid="_other") holding the sums of the other jobs' rows: the job series of a
    target and operation add up exactly to what its job_stats printed. The number of series is
    at most (top_jobs + 1) x targets x operations, whatever the number of jobs."""
    moved: dict[str, int] = {}
    for job in cap.jobs:
        moved[job.job] = moved.get(job.job, 0) + sum(job.nums[4 * i + 3] or 0 for i in _bytes_rows(job.shape))
    ranked = sorted(moved.items(), key=lambda kv: (-kv[1], kv[0]))
    keep = {j for j, _ in ranked[:top_jobs]}
    rest: dict[tuple[str, str, tuple], list[tuple]] = {}  # (component, target, shape) -> numbers of the others
    for job in cap.jobs:
        if job.job in keep:
            _job_series(f, job.component, job.job, job.target, job.rows)
        else:
            rest.setdefault((job.component, job.target, job.shape), []).append(job.nums)
    others: dict[tuple[str, str], dict[str, list]] = {}
    for (component, target, shape), nums in rest.items():
        rows = others.setdefault((component, target), {})
        cols = list(zip(*nums))
        for i, (name, unit) in enumerate(shape):
            samples, mins, maxs, sums = cols[4 * i:4 * i + 4]
            acc = rows.setdefault(name, [unit, 0, None, None, None])
            acc[1] += sum(samples)
            if any(x is None for x in sums):
                continue
            acc[4] = (acc[4] or 0) + sum(sums)
            # min and max over the jobs that did the operation (an idle job prints 0 for both)
            lo = min((m for n, m in zip(samples, mins) if n and m is not None), default=None)
            hi = max((m for n, m in zip(samples, maxs) if n and m is not None), default=None)
            acc[2] = lo if acc[2] is None else acc[2] if lo is None else min(acc[2], lo)
            acc[3] = hi if acc[3] is None else acc[3] if hi is None else max(acc[3], hi)
    for (component, target), rows in others.items():
        # no job of the rollup did the operation: its min and max are 0, as Lustre prints them for an idle job
        _job_series(f, component, OTHER_JOBS, target,
                    [Stat(name, n, unit, lo if s is None or lo is not None else 0, hi if s is None or hi is not None
                          else 0, s) for name, (unit, n, lo, hi, s) in rows.items()])


_BYTES_ROWS: dict[tuple, tuple[int, ...]] = {}


def _bytes_rows(shape: tuple) -> tuple[int, ...]:
    """The indexes of the read_bytes and write_bytes rows in a job record's shape (shapes are few)."""
    got = _BYTES_ROWS.get(shape)
    if got is None:
        got = _BYTES_ROWS[shape] = tuple(i for i, (name, _) in enumerate(shape) if name in ("read_bytes", "write_bytes"))
    return got


def _job_series(f: _Families, component: str, jobid: str, target: str, rows) -> None:
    labels = ("component", "jobid", "operation", "target")
    for r in rows:
        v = (component, jobid, r.name, target)
        if component == "ost" and r.name in ("read_bytes", "write_bytes"):
            op = r.name[:-6]
            f.add(f"lustre_job_{op}_samples_total", "counter", f"Total number of {op}s of the job.", labels, v,
                  r.samples)
            f.add(f"lustre_job_{op}_minimum_size_bytes", "gauge", f"The minimum {op} size of the job in bytes.",
                  labels, v, r.min)
            f.add(f"lustre_job_{op}_maximum_size_bytes", "gauge", f"The maximum {op} size of the job in bytes.",
                  labels, v, r.max)
            f.add(f"lustre_job_{op}_bytes_total", "counter", f"The total number of bytes the job {op}s.", labels, v,
                  r.sum)
        elif r.name in (_JOB_OST_OPS if component == "ost" else _JOB_MDT_OPS):
            f.add("lustre_job_stats_total", "counter",
                  "Number of operations the filesystem has performed, recorded by jobstats.", labels, v, r.samples)


def _lnet_families(f: _Families, cap) -> None:
    names = {"send_count": "send_count", "recv_count": "receive_count", "drop_count": "drop_count"}
    for nid, key, value in cap.lnet_nid:
        f.add(f"lustre_{names[key]}_total", "counter", f"Messages of the network interface ({key}).", ("nid",), (nid,),
              value)
    for key, name in (("send_length", "send_bytes"), ("recv_length", "receive_bytes"), ("drop_length", "drop_bytes")):
        f.add(f"lustre_{name}_total", "counter", f"Bytes of LNet messages of the node ({key}).", (), (), cap.lnet.get(key))
    if not cap.lnet_nid:  # the one-line lnet stats: counts of the node, no NID
        for key, name in names.items():
            f.add(f"lustre_{name}_total", "counter", f"LNet messages of the node ({key}).", (), (), cap.lnet.get(key))


def read_capture(path: str):
    """The capture in `path` (text, or gzip-compressed) -> (Capture, notes). UserError for what cannot
    be read. Not textfiles.read_members (tar, directories): that one imports pandas, a second of a
    cron job's start, and a scrape is one capture."""
    notes: list[str] = []

    def too_big() -> UserError:
        return UserError(f"{path}: inflates beyond {CAPTURE_MAX_BYTES >> 20} MiB of text, the most a capture holds: "
                         "refused")

    def chunks(f):
        """The file's text a MiB at a time: a big server's capture is tens of MB, and the whole
        text (and its decoded copy) would be most of a scrape's memory. At most CAPTURE_MAX_BYTES,
        compressed or not: a 100 KB gzip bomb is refused before it inflates (issue 41 item 15)."""
        decode = codecs.getincrementaldecoder("utf-8")("replace")
        d = None
        total = 0
        while True:
            try:
                raw = f.read(1 << 20)
            except OSError as e:
                raise from_os_error(path, e, "read") from None
            if d is None:
                d = zlib.decompressobj(16 + zlib.MAX_WBITS) if raw[:2] == b"\x1f\x8b" else False
            if not raw:
                break
            if d:
                try:  # not gzip.decompress: a cut file gives what it holds
                    raw = d.decompress(raw, CAPTURE_MAX_BYTES + 1 - total)
                except zlib.error as e:
                    raise UserError(f"{path}: not a readable gzip file ({e})") from None
                if d.unconsumed_tail:
                    raise too_big()
            total += len(raw)
            if total > CAPTURE_MAX_BYTES:
                raise too_big()
            yield decode.decode(raw)
        if d and not d.eof:
            notes.append("the gzip stream is cut short: what it holds is exported")
        yield decode.decode(b"", final=True)

    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size > CAPTURE_MAX_BYTES:
            raise too_large(path, "read capture", CAPTURE_MAX_BYTES)  # by its size, before a byte is read
        cap = parse_chunks(chunks(f))
    if not cap.params:
        raise UserError(f"{path}: no `lctl get_param` parameter (a line `name=value`) found")
    return cap, notes + cap.notes
