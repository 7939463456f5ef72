"""`JobReport`: the answer of `ioweather job LOG`, typed to its leaves.

Made in a forked child (services/jobs/darshan_child.py) and pickled back to the parent, so this
module imports nothing heavy: the parent unpickles a `JobReport` without numpy, pandas or SQLAlchemy.
The statistics (stats/job.py `characterize`, stats/findings.py) hand over plain dicts; `JobReport.of`
types them once, here, and every surface renders the typed answer: `--json` (`to_json()`), the text
(views/job_console.py), the HTML report (views/job_report.py), `job diff`, the lab's scores.

A key the report omits when it has nothing to say (a finding's `fix`, a mount's `lustre`, the
report's `warnings`) is None (or an empty list) here and absent from `to_json()`, as it always was.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MiB = 1 << 20

#: Keys renamed to the unit rule (`read_bytes`, `_bps` rates in bytes/s). The old keys stay one release
#: beside the new ones (docs/darshan.md documents them); new commands print only the new ones.
BYTE_KEYS = {"bytes_read": "read_bytes", "bytes_written": "write_bytes", "by_bytes_read": "by_read_bytes",
             "by_bytes_written": "by_write_bytes"}
RATE_KEYS = {"agg_perf_by_slowest_mibps": "agg_perf_by_slowest_bps", "mibps": "bps", "mibps_per_node": "per_node_bps",
             "mibps_per_node_mean": "per_node_bps_mean"}
BOX_KEYS = ("min", "q1", "median", "q3", "max")


def _bps(mibps):
    return None if mibps is None else mibps * MiB


def with_unit_keys(obj):
    """`obj` with each old byte or MiB/s key followed by its unit-rule twin (values in bytes and bytes/s)."""
    if isinstance(obj, list):
        return [with_unit_keys(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {}
    for k, v in obj.items():
        out[k] = with_unit_keys(v)
        if k in BYTE_KEYS:
            out[BYTE_KEYS[k]] = out[k]
        elif k in RATE_KEYS and (v is None or isinstance(v, (int, float))):
            out[RATE_KEYS[k]] = _bps(v)
        elif k == "mibps_per_node_by_project":
            out["per_node_bps_by_project"] = {**v, "projects": [{**p, **{b: _bps(p[b]) for b in BOX_KEYS}}
                                                                for p in v["projects"]]}
    return out


#: A finding's evidence and thresholds: named plain values (numbers, strings, flags; a damaged log's
#: `relations` a name -> count mapping). Each code has its own names (docs/darshan.md lists them).
Facts = dict[str, object]


@dataclass(frozen=True)
class Damage:
    """Records left out because their counters contradict each other (stats/damage.py)."""

    module: str
    records: int
    of: int
    relations: dict[str, int]
    example: str

    def raw(self) -> dict:
        return {"module": self.module, "records": self.records, "of": self.of, "relations": self.relations,
                "example": self.example}


@dataclass(frozen=True)
class JobHeader:
    """Who ran what, when: the log's header. `nnodes` from its hosts or --cores-per-node (None: unknown)."""

    jobid: int | None
    uid: int | None
    exe: str | None
    nprocs: int
    nnodes: int | None
    start: str
    end: str
    runtime_s: float
    log_version: str
    partial_modules: list[str]
    damage: Damage | None = None

    def raw(self) -> dict:
        out = {"jobid": self.jobid, "uid": self.uid, "exe": self.exe, "nprocs": self.nprocs, "nnodes": self.nnodes,
               "start": self.start, "end": self.end, "runtime_s": self.runtime_s, "log_version": self.log_version,
               "partial_modules": self.partial_modules}
        if self.damage is not None:
            out["damage"] = self.damage.raw()
        return out


@dataclass(frozen=True)
class Interface:
    """One Darshan module's volumes, operations and times (None: the module has no such counter).
    `agg_perf_by_slowest_mibps` is Darshan's own rate, for the modules it has one (`has_perf`)."""

    bytes_read: int | None
    bytes_written: int | None
    reads: int | None
    writes: int | None
    opens: int | None
    read_time_s: float | None
    write_time_s: float | None
    meta_time_s: float | None
    files: int
    records: int
    partial: bool
    has_perf: bool = False
    agg_perf_by_slowest_mibps: float | None = None
    not_monitored: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, d: dict) -> Interface:
        return cls(d["bytes_read"], d["bytes_written"], d["reads"], d["writes"], d["opens"], d["read_time_s"],
                   d["write_time_s"], d["meta_time_s"], d["files"], d["records"], d["partial"],
                   "agg_perf_by_slowest_mibps" in d, d.get("agg_perf_by_slowest_mibps"), d.get("not_monitored", []))

    def raw(self) -> dict:
        out = {"bytes_read": self.bytes_read, "bytes_written": self.bytes_written, "reads": self.reads,
               "writes": self.writes, "opens": self.opens, "read_time_s": self.read_time_s,
               "write_time_s": self.write_time_s, "meta_time_s": self.meta_time_s, "files": self.files,
               "records": self.records, "partial": self.partial}
        if self.has_perf:
            out["agg_perf_by_slowest_mibps"] = self.agg_perf_by_slowest_mibps
        if self.not_monitored:
            out["not_monitored"] = self.not_monitored
        return out


@dataclass(frozen=True)
class Totals:
    """The storage layer (POSIX, STDIO, DFS, DAOS): bytes, distinct files, summed seconds."""

    bytes_read: int
    bytes_written: int
    files: int
    read_time_s: float
    write_time_s: float
    meta_time_s: float

    def raw(self) -> dict:
        return {"bytes_read": self.bytes_read, "bytes_written": self.bytes_written, "files": self.files,
                "read_time_s": self.read_time_s, "write_time_s": self.write_time_s, "meta_time_s": self.meta_time_s}


@dataclass(frozen=True)
class Sharing:
    """Files (and their bytes) opened by one rank, every rank, or several."""

    unique: int
    unique_bytes: int
    shared: int
    shared_bytes: int
    partially_shared: int
    partially_shared_bytes: int

    def raw(self) -> dict:
        return {"unique": self.unique, "unique_bytes": self.unique_bytes, "shared": self.shared,
                "shared_bytes": self.shared_bytes, "partially_shared": self.partially_shared,
                "partially_shared_bytes": self.partially_shared_bytes}


@dataclass(frozen=True)
class AccessSize:
    size_bytes: int
    count: int


@dataclass(frozen=True)
class Access:
    """POSIX access pattern: request-size histograms (bin name -> requests; None without POSIX records),
    the most common sizes, and the pattern fractions."""

    read_histogram: dict[str, int] | None
    write_histogram: dict[str, int] | None
    common_sizes: list[AccessSize]
    seq_fraction: float | None
    consec_fraction: float | None
    file_not_aligned_fraction: float | None
    mem_not_aligned_fraction: float | None

    @classmethod
    def of(cls, d: dict) -> Access:
        return cls(d["read_histogram"], d["write_histogram"], [AccessSize(**c) for c in d["common_sizes"]],
                   d["seq_fraction"], d["consec_fraction"], d["file_not_aligned_fraction"],
                   d["mem_not_aligned_fraction"])

    def raw(self) -> dict:
        return {"read_histogram": self.read_histogram, "write_histogram": self.write_histogram,
                "common_sizes": [{"size_bytes": c.size_bytes, "count": c.count} for c in self.common_sizes],
                "seq_fraction": self.seq_fraction, "consec_fraction": self.consec_fraction,
                "file_not_aligned_fraction": self.file_not_aligned_fraction,
                "mem_not_aligned_fraction": self.mem_not_aligned_fraction}


@dataclass(frozen=True)
class LayerTime:
    """One layer alone: its slowest path's seconds and rank."""

    io_time_s: float
    slowest_rank: int | None


@dataclass(frozen=True)
class SharedSplit:
    """One module's shared files (rank −1 records) split over the ranks, from Darshan's rank counters
    (stats/job.py `shared_splits`): the worst file's slowest and fastest ranks (bytes, seconds), their
    spread ((max − min) / max, None when both are 0), and every shared file's spread over all ranks
    (coefficient of variation from Darshan's variances; None: not recorded)."""

    module: str
    files: int
    file: str | None
    slowest_rank: int
    slowest_bytes: int
    slowest_time_s: float
    fastest_rank: int
    fastest_bytes: int
    fastest_time_s: float
    bytes: float | None
    time: float | None
    bytes_cv: float | None
    time_cv: float | None


@dataclass(frozen=True)
class Imbalance:
    """(max - min) / max over the ranks that did I/O, of bytes and of time, on their own files (None: fewer
    than 2 ranks), and the shared files' split per module (`shared`; reports made before it: empty)."""

    bytes: float | None
    time: float | None
    ranks_with_io: int
    shared: list[SharedSplit] = field(default_factory=list)

    @classmethod
    def of(cls, d: dict) -> Imbalance:
        return cls(d["bytes"], d["time"], d["ranks_with_io"], [SharedSplit(**x) for x in d.get("shared", [])])

    def raw(self) -> dict:
        return {"bytes": self.bytes, "time": self.time, "ranks_with_io": self.ranks_with_io,
                "shared": [dict(vars(x)) for x in self.shared]}


@dataclass(frozen=True)
class Perf:
    """Rates and the I/O time (stats/job.py `characterize`): MiB/s, seconds, fractions of the run."""

    agg_perf_by_slowest_mibps: float | None
    agg_time_by_slowest_s: float | None
    mibps: float | None
    io_time_s: float
    io_time_layer: str | None
    io_time_by_layer_s: dict[str, float]
    layers: dict[str, LayerTime]
    fs_io_time_s: float
    io_fraction_of_runtime: float | None
    io_time_exceeds_runtime: bool
    mibps_per_node: float | None
    mibps_per_node_reason: str | None
    nnodes_source: str | None
    slowest_rank: int | None
    imbalance: Imbalance
    #: rank 0's I/O span in Unix seconds, [its first open, its last read or write end] (`stats.job.rank0_io_span`
    #: of its own and the shared files that moved bytes): what `job diff` prices a crowd on its device over
    rank0_io_span: list[float] | None = None

    @classmethod
    def of(cls, d: dict) -> Perf:
        return cls(d["agg_perf_by_slowest_mibps"], d["agg_time_by_slowest_s"], d["mibps"], d["io_time_s"],
                   d["io_time_layer"], d["io_time_by_layer_s"],
                   {k: LayerTime(**v) for k, v in d["layers"].items()}, d["fs_io_time_s"],
                   d["io_fraction_of_runtime"], d["io_time_exceeds_runtime"], d["mibps_per_node"],
                   d["mibps_per_node_reason"], d["nnodes_source"], d["slowest_rank"], Imbalance.of(d["imbalance"]),
                   d["rank0_io_span"])

    def raw(self) -> dict:
        i = self.imbalance
        return {"agg_perf_by_slowest_mibps": self.agg_perf_by_slowest_mibps,
                "agg_time_by_slowest_s": self.agg_time_by_slowest_s, "mibps": self.mibps,
                "io_time_s": self.io_time_s, "io_time_layer": self.io_time_layer,
                "io_time_by_layer_s": self.io_time_by_layer_s,
                "layers": {k: {"io_time_s": v.io_time_s, "slowest_rank": v.slowest_rank} for k, v in self.layers.items()},
                "fs_io_time_s": self.fs_io_time_s, "io_fraction_of_runtime": self.io_fraction_of_runtime,
                "io_time_exceeds_runtime": self.io_time_exceeds_runtime, "mibps_per_node": self.mibps_per_node,
                "mibps_per_node_reason": self.mibps_per_node_reason, "nnodes_source": self.nnodes_source,
                "slowest_rank": self.slowest_rank, "imbalance": i.raw(),
                "rank0_io_span": self.rank0_io_span}


@dataclass(frozen=True)
class Lustre:
    """A mount's Lustre layout: files with one, the most common stripe size and count, every count, OSTs used."""

    files: int
    stripe_size_bytes: int | None
    stripe_count: int | None
    stripe_counts: list[int]
    osts: int

    def raw(self) -> dict:
        return {"files": self.files, "stripe_size_bytes": self.stripe_size_bytes, "stripe_count": self.stripe_count,
                "stripe_counts": self.stripe_counts, "osts": self.osts}


@dataclass(frozen=True)
class Mount:
    """The job's bytes on one mount point (None: a file under no mount the log names)."""

    mount: str | None
    fs_type: str | None
    files: int
    bytes_read: int
    bytes_written: int
    lustre: Lustre | None = None

    @classmethod
    def of(cls, d: dict) -> Mount:
        lu = d.get("lustre")
        return cls(d["mount"], d["fs_type"], d["files"], d["bytes_read"], d["bytes_written"],
                   None if lu is None else Lustre(**lu))

    def raw(self) -> dict:
        out = {"mount": self.mount, "fs_type": self.fs_type, "files": self.files, "bytes_read": self.bytes_read,
               "bytes_written": self.bytes_written}
        if self.lustre is not None:
            out["lustre"] = self.lustre.raw()
        return out


@dataclass(frozen=True)
class Finding:
    """One finding, costed (stats/findings.py, stats/costs.py): `cost_s` seconds of I/O time and its
    shares, `worth` its cost over the verdict's bar (None: not costed), `combined_s` what it saves after
    the findings before it (`overlapped_by`: the finding above that already counts its seconds)."""

    code: str
    level: str
    message: str
    evidence: Facts
    threshold: Facts
    cost_s: float
    cost_model: str
    cost_share: float
    cost_share_of_runtime: float
    cost_core_hours: float
    worth: float | None
    combined_s: float | None
    action: str | None = None
    fix: str | None = None
    overlaps: list[str] = field(default_factory=list)
    overlapped_by: str | None = None

    @classmethod
    def of(cls, d: dict) -> Finding:
        return cls(d["code"], d["level"], d["message"], d["evidence"], d["threshold"], d["cost_s"], d["cost_model"],
                   d["cost_share"], d["cost_share_of_runtime"], d["cost_core_hours"], d["worth"], d["combined_s"],
                   d.get("action"), d.get("fix"), d.get("overlaps", []), d.get("overlapped_by"))

    def raw(self) -> dict:
        # the order the advisor builds a finding in (stats.findings._f, then costs.attach and combine)
        out = {"code": self.code, "level": self.level, "message": self.message, "evidence": self.evidence,
               "threshold": self.threshold, "cost_s": self.cost_s, "cost_model": self.cost_model}
        if self.action:
            out["action"] = self.action
        if self.fix:
            out["fix"] = self.fix
        if self.overlaps:
            out["overlaps"] = self.overlaps
        out.update(cost_share=self.cost_share, cost_share_of_runtime=self.cost_share_of_runtime,
                   cost_core_hours=self.cost_core_hours, worth=self.worth, combined_s=self.combined_s)
        if self.overlapped_by:
            out["overlapped_by"] = self.overlapped_by
        return out


@dataclass(frozen=True)
class TopFile:
    """One of the (file, module) rows that moved the most bytes (stats/job_files.py `top_files`): the job
    page's and `job LOG --html`'s list, ranked one way. `name` None: anonymized or missing."""

    name: str | None
    record_id: int
    module: str
    sharing: str
    nranks: int
    bytes_read: int
    bytes_written: int
    moved_bytes: int
    read_time_s: float
    write_time_s: float
    meta_time_s: float
    mount: str | None


@dataclass(frozen=True)
class JobReport:
    """`ioweather job LOG`: the verdict first (what a reader acts on: the findings worth changing and
    their combined saving), then the characterization and every finding, most expensive first.
    `warnings` name optional regions of the log that could not be read (the counters stand without them).

    `to_json()` is `job LOG --json`: the raw report with each byte and MiB/s key followed by its
    unit-rule twin (`with_unit_keys`)."""

    verdict: str
    verdict_actions: list[str]
    verdict_saving_s: float
    job: JobHeader
    interfaces: dict[str, Interface]
    totals: Totals
    sharing: Sharing
    access: Access
    perf: Perf
    mounts: list[Mount]
    findings: list[Finding]
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, rep: dict) -> JobReport:
        """Typed from the report's dict as services/jobs/report.py assembles it from the statistics."""
        j = dict(rep["job"])
        damage = j.pop("damage", None)
        return cls(rep["verdict"], rep["verdict_actions"], rep["verdict_saving_s"],
                   JobHeader(**j, damage=None if damage is None else Damage(**damage)),
                   {m: Interface.of(it) for m, it in rep["interfaces"].items()}, Totals(**rep["totals"]),
                   Sharing(**rep["sharing"]), Access.of(rep["access"]), Perf.of(rep["perf"]),
                   [Mount.of(m) for m in rep["mounts"]], [Finding.of(f) for f in rep["findings"]],
                   rep.get("warnings", []))

    def raw(self) -> dict:
        """The report in the statistics' own keys (bytes, MiB/s), without the unit-rule twins."""
        out = {"verdict": self.verdict, "verdict_actions": self.verdict_actions,
               "verdict_saving_s": self.verdict_saving_s, "job": self.job.raw(),
               "interfaces": {m: it.raw() for m, it in self.interfaces.items()}, "totals": self.totals.raw(),
               "sharing": self.sharing.raw(), "access": self.access.raw(), "perf": self.perf.raw(),
               "mounts": [m.raw() for m in self.mounts], "findings": [f.raw() for f in self.findings]}
        if self.warnings:
            out["warnings"] = self.warnings
        return out

    def to_json(self) -> dict:
        return with_unit_keys(self.raw())
