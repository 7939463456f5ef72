"""Darshan jobs for `ioweather job`, `ioweather jobs ...` and the Jobs pages.

The archive: the cross-job summary, the failed logs, the stored jobs listed and filtered (`list_jobs`),
one stored job as the job page shows it (`stored_job`, `show_job`). One log (`job_answer`, `job_html`)
is services/jobs/report.py, re-exported here; the ingest pipeline is services/jobs/ingest.py.
"""

from __future__ import annotations

import json
import math
import pwd
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ioweather.encoding import Answer, answer_dict
from ioweather.errors import UserError
from ioweather.services.jobs.answer import Lustre
from ioweather.services.jobs.archive_light import (  # noqa: F401 (ArchiveSummary re-exported)
    ArchiveSummary,
    project_rules,
    summary_of_columns,
    user_label,
    user_name as _user_name,
)
from ioweather.services.jobs.report import (  # noqa: F401 (re-exported)
    job_answer,
    job_html,
    load_thresholds,
    log_top_files,
    MiB,
    TopFile,
    with_unit_keys,
)
from ioweather.services.jobs.weather import stored_verdicts
from ioweather.stats.archive_columns import node_counts
from ioweather.stats.findings import describe_codes, highest_level, severity
from ioweather.stats.job import characterization_fields, LUSTRE_FILE_COLUMNS, mibps_per_node
from ioweather.stats.job_files import per_module, per_mount, top_files
from ioweather.stats.rules_revision import rules_current
from ioweather.store import jobs as jobs_store, open_store
from ioweather.store.jobs import AmbiguousJobId  # noqa: F401 (re-exported: the job page answers it as a bad request)
from ioweather.units import ns_to_iso
from ioweather.views.job_console import lustre_text

# -- the archive

def archive_summary(settings, *, projects_file: str | None, cores_per_node: int | None, min_procs: int,
                    min_bytes: int, top: int) -> ArchiveSummary:
    """`jobs summary` through the store's door (services/jobs/archive_light.py answers it without pandas and
    SQLAlchemy where it can: `light_answer`)."""
    rules = project_rules(projects_file)
    store = open_store(settings)
    df = jobs_store.load_jobs(store, jobs_store.SUMMARY_COLUMNS)
    return _summary(df, rules, jobs_store.count_failed(store), cores_per_node=cores_per_node, min_procs=min_procs,
                    min_bytes=min_bytes, top=top)


def _summary(df, rules: list, failed_logs: int, **options) -> ArchiveSummary:
    """`jobs summary` of the job rows `df` (`load_jobs`' frame, or the rows of one file system): its columns,
    as the frame typed them, through the one computation the command on SQLite uses too."""
    return summary_of_columns({c: df[c].to_numpy() for c in jobs_store.SUMMARY_COLUMNS}, rules, failed_logs,
                              **options)


#: Job-row columns a listed job (`JobRow`) reads besides the summary's (the per-file table stays in
#: Parquet until one job is opened).
PAGE_COLUMNS = ["jobid", "start_ns", "runtime_s", "finding_codes", "verdict", "findings_json", "path", "files_part",
                "rules_revision"]
ROW_COLUMNS = list(dict.fromkeys(jobs_store.SUMMARY_COLUMNS + PAGE_COLUMNS))
#: sort key of the Jobs list -> column of its frame
SORTS = {"start": "start_ns", "bytes": "moved_bytes", "runtime": "runtime_s", "mibps_per_node": "mibps_per_node",
         "mibps": "mibps", "nprocs": "nprocs", "level": "level_rank", "jobid": "jobid"}
#: Jobs drawn in the Jobs page's scatter plot (the ones that moved the most when the archive holds more).
MAX_PLOTTED = 20000
FAILED_SHOWN = 100


def _row_frame(df):
    """Job rows with what a listed job shows besides its columns: moved_bytes, MiB/s per node from the
    log's node count (`stats.archive_columns.node_counts`) and its level (`job_level`)."""
    def num(col):
        return pd.to_numeric(df[col], errors="coerce").to_numpy(np.float64)

    moved = np.nan_to_num(num("bytes_read")) + np.nan_to_num(num("bytes_written"))
    with np.errstate(invalid="ignore", divide="ignore"):
        per_node = num("mibps") / node_counts({"nnodes": num("nnodes")}, None)
    return df.assign(moved_bytes=moved, mibps_per_node=per_node,
                     level=[job_level(c, f) for c, f in zip(df["finding_codes"], df["findings_json"])])


def job_level(finding_codes, findings_json) -> str | None:
    """A stored job's level, the same on every surface: the most severe of its stored findings as the report
    costed them (a P05 that costs little was stored as WARN), else of its codes (a job ingested before
    costs were stored)."""
    return _stored_level(findings_json) or highest_level(_codes(finding_codes))


class ArchiveIndex:
    """What the Jobs list needs that does not depend on a request: the list frame (each row with
    moved_bytes, MiB/s per node from the log's node count (`stats.archive_columns.node_counts`), its highest
    finding level and that level's rank), the summary, the level counts, the plot and the failed logs;
    and the row orders asked so far (paging through the list sorts once). With 100 000 jobs building it
    takes ~0.7 s, a request that reuses it ~0.1 s: a caller keeps it until `archive_marker` changes."""

    def __init__(self, store, keep: frozenset[str] | None = None):
        # `keep`: the log hashes of one file system's jobs (the Jobs page's ?fs=): the summary, levels and
        # plot are then of those jobs; the failed logs stay every log's, as a log that cannot be read names
        # no file system.
        df = jobs_store.load_jobs(store, ROW_COLUMNS)
        if keep is not None:
            df = df[df["log_hash"].isin(keep)].reset_index(drop=True)
        failed = jobs_store.failed(store)
        lf = _row_frame(df)
        lf["level_rank"] = lf["level"].map(severity)
        self.frame = lf
        self.summary = _summary(df, [], len(failed))  # `jobs summary --json` with the command's defaults
        self.levels = {lv: int((lf["level"] == lv).sum()) for lv in ("HIGH", "WARN")} | {"none": int(lf["level"].isna().sum())}
        plotted = lf.sort_values(["moved_bytes", "log_hash"], ascending=[False, True], kind="stable").head(MAX_PLOTTED)
        # 16 hex digits name a job for the job page; the whole hash would triple the plot's bytes
        self.plot = JobsPlot(total=len(lf), shown=len(plotted), id=plotted["log_hash"].str[:16].tolist(),
                             jobid=[_opt(v, int) for v in plotted["jobid"]],
                             runtime_s=[_opt_finite(v) for v in plotted["runtime_s"]],
                             moved_bytes=[int(v) for v in plotted["moved_bytes"]],
                             nprocs=[_opt(v, int) for v in plotted["nprocs"]], level=plotted["level"].tolist())
        self.failed = FailedShown(len(failed), [_failed_row(f) for f in failed[:FAILED_SHOWN]])
        self._orders: dict = {}

    def order(self, sort: str, order: str):
        """Row positions in the asked order, kept."""
        key = (sort, order)
        if key not in self._orders:
            # Ties keep a fixed order (most bytes first) so that paging never shows a job twice.
            ordered = self.frame.reset_index(drop=True).sort_values(
                [SORTS[sort], "moved_bytes", "log_hash"], ascending=[order == "asc", False, True],
                na_position="last", kind="stable")
            self._orders[key] = ordered.index.to_numpy()
        return self._orders[key]


@dataclass(frozen=True)
class JobRow:
    """One stored job as every list shows it (`jobs list`, the Jobs page): bytes, seconds, MiB/s (`to_json()`
    adds the unit-rule twins), ISO 8601 UTC start; `user` is `user_label` ("?" without a uid); `level` the
    most severe of its findings as the report costed them (`job_level`), `findings` its codes; `verdict` the
    line `jobs ingest` stored and `weather_verdict` its stored weather (None: not stored); `rules_revision` the
    advisor's rules the level, findings and verdict were derived under (None: before rows said it) and
    `rules_current` whether they are this code's (`rules_current`: false until the next `jobs ingest`)."""

    id: str
    jobid: int | None
    uid: int | None
    user: str
    exe: str | None
    nprocs: int | None
    nnodes: int | None
    start: str | None
    runtime_s: float | None
    bytes_read: int | None
    bytes_written: int | None
    moved_bytes: int
    files: int | None
    mibps: float | None
    mibps_per_node: float | None
    io_fraction: float | None
    level: str | None
    findings: list[str]
    verdict: str | None
    weather_verdict: str | None
    path: str
    rules_revision: str | None
    rules_current: bool

    def to_json(self) -> dict:
        return with_unit_keys(answer_dict(self))


@dataclass(frozen=True)
class JobRows:
    """`jobs list`: stored jobs, latest start first (`to_json()` is the list of the rows' documents)."""

    rows: list[JobRow]

    def to_json(self) -> list[dict]:
        return [r.to_json() for r in self.rows]


@dataclass(frozen=True)
class FailedLog:
    """A log `jobs ingest` could not read: where, why, its size, when (ISO 8601 UTC)."""

    path: str
    reason: str
    size_bytes: int
    failed_at: str


@dataclass(frozen=True)
class FailedLogs:
    """`jobs failed`: the logs that could not be read (`to_json()` is the list of them)."""

    rows: list[FailedLog]

    def to_json(self) -> list[dict]:
        return [answer_dict(r) for r in self.rows]


@dataclass(frozen=True)
class JobList:
    """One page of the stored jobs in the asked order (`sort` a key of SORTS, `order` asc or desc):
    `limit` rows from `offset` of `total`. Each row: bytes, seconds, MiB/s, ISO 8601 UTC start, the
    highest finding level, the verdict `jobs ingest` stored and the job's stored weather verdict."""

    sort: str
    order: str
    limit: int
    offset: int
    total: int
    rows: list[JobRow]

    def to_json(self) -> dict:
        return {**answer_dict(self), "rows": [r.to_json() for r in self.rows]}


@dataclass(frozen=True)
class JobsPlot(Answer):
    """The Jobs page's scatter plot: `shown` of `total` jobs (the ones that moved the most), as columns;
    `id` the first 16 hex digits of each log hash (enough to open the job page)."""

    total: int
    shown: int
    id: list[str]
    jobid: list[int | None]
    runtime_s: list[float | None]
    moved_bytes: list[int]
    nprocs: list[int | None]
    level: list[str | None]


@dataclass(frozen=True)
class FailedShown:
    """The first FAILED_SHOWN of `total` logs that could not be read."""

    total: int
    rows: list[FailedLog]

    def to_json(self) -> dict:
        return {"total": self.total, "rows": [answer_dict(r) for r in self.rows]}


@dataclass(frozen=True)
class JobsView(Answer):
    """The Jobs page's answer (/api/jobs): `jobs summary --json` with its defaults, the count of jobs per
    highest finding level, one page of the list, the scatter plot's jobs, how many projects the page
    lists, and the logs that could not be read (the first FAILED_SHOWN)."""

    summary: ArchiveSummary
    levels: dict[str, int]
    list: JobList
    plot: JobsPlot
    projects_shown: int
    failed: FailedShown
    #: The file system asked for (None: every job): the list holds the jobs that ran on it, `fs_note` says so.
    fs: str | None = None
    fs_note: str | None = None


def jobs_view(store, index: ArchiveIndex, sort: str, order: str, limit: int, offset: int,
              projects_shown: int, fs: str | None = None, job_fs: dict[str, str | None] | None = None) -> JobsView:
    """The Jobs page for one request. With `fs`, `index` is the `ArchiveIndex` of the jobs whose file
    system (`job_fs`: {log hash of every stored job: weather.job_datasets}) is `fs`, and `fs_note` says how
    many of all the jobs that is and where the others ran."""
    lf = index.frame
    positions = index.order(sort, order)
    note = None
    if fs is not None:
        others: dict[str, int] = {}
        for d in (job_fs or {}).values():
            if d != fs:
                others[d or "no file system with telemetry"] = others.get(d or "no file system with telemetry", 0) + 1
        note = (f"{len(lf)} of {len(job_fs or {})} jobs ran on {fs} (the file system of the bytes they moved, "
                "as `why` and the job page name it)") + \
            (f"; the others: {', '.join(f'{n} on {d}' for d, n in sorted(others.items()))}" if others else "") + \
            ". The summary, levels, plot and projects are of these jobs; the failed logs of every log."
    page = lf.iloc[positions[offset:offset + limit]]
    rows = _job_rows(store, page)
    return JobsView(index.summary, index.levels, JobList(sort, order, limit, offset, len(positions), rows), index.plot,
                    projects_shown, index.failed, fs, note)


def _codes(text) -> list[str]:
    return [c for c in (text or "").split(",") if c]


def _opt_finite(v) -> float | None:
    v = _opt(v, float)
    return v if v is None or math.isfinite(v) else None


def _job_rows(store, frame) -> list[JobRow]:
    """The rows of `frame` (a frame of `_row_frame`) with their stored weather (never computed here)."""
    weather = stored_verdicts(store, frame["log_hash"].tolist())
    names: dict = {}
    return [_job_row(r, names, weather.get(r.log_hash)) for r in frame.itertuples()]


def _job_row(r, names: dict, weather_verdict: str | None) -> JobRow:
    return JobRow(id=r.log_hash, jobid=_opt(r.jobid, int), uid=_opt(r.uid, int), user=user_label(r.uid, names),
                  exe=r.exe, nprocs=_opt(r.nprocs, int), nnodes=_opt(r.nnodes, int),
                  start=None if _opt(r.start_ns, int) is None else ns_to_iso(int(r.start_ns)),
                  runtime_s=_opt_finite(r.runtime_s), bytes_read=_opt(r.bytes_read, int),
                  bytes_written=_opt(r.bytes_written, int), moved_bytes=int(r.moved_bytes), files=_opt(r.files, int),
                  mibps=_opt_finite(r.mibps), mibps_per_node=_opt_finite(r.mibps_per_node),
                  io_fraction=_opt_finite(r.io_fraction), level=r.level if isinstance(r.level, str) else None,
                  findings=_codes(r.finding_codes),
                  verdict=r.verdict if isinstance(r.verdict, str) else None, weather_verdict=weather_verdict,
                  path=r.path, rules_revision=_opt(r.rules_revision, str), rules_current=rules_current(_opt(r.rules_revision, str)))


def archive_marker(store) -> tuple:
    """Changes whenever a job is stored or a log fails: what a cache of `ArchiveIndex` is keyed on."""
    return jobs_store.change_marker(store)


def failed_logs(settings) -> FailedLogs:
    return FailedLogs([_failed_row(r) for r in jobs_store.failed(open_store(settings))])


def _failed_row(r: dict) -> FailedLog:
    return FailedLog(r["path"], r["reason"], r["size_bytes"], ns_to_iso(r["failed_ns"]))


def list_jobs(store, *, since_ns: int | None = None, until_ns: int | None = None, user: str | None = None,
              exe: str | None = None, limit: int | None = None) -> JobRows:
    """Stored jobs, latest start first: started in [since, until), uid or user name containing `user`,
    executable containing `exe` (substrings, case-sensitive as names are)."""
    df = jobs_store.load_jobs(store, ROW_COLUMNS)
    start = pd.to_numeric(df["start_ns"], errors="coerce").to_numpy(np.float64)
    keep = np.ones(len(df), bool)
    if since_ns is not None:
        keep &= start >= since_ns
    if until_ns is not None:
        keep &= start < until_ns
    if exe:
        keep &= df["exe"].fillna("").astype(str).str.contains(exe, regex=False).to_numpy()
    names: dict = {}
    if user:
        keep &= np.array([uid is not None and not pd.isna(uid) and (user in str(int(uid)) or
                                                                     user in (_user_name(uid, names) or ""))
                          for uid in df["uid"]], bool)
    df = df[keep].assign(_start=start[keep]).sort_values(["_start", "log_hash"], ascending=[False, True],
                                                         na_position="last", kind="stable")
    if limit is not None:
        df = df.head(limit)
    return JobRows(_job_rows(store, _row_frame(df)))


def _opt(v, kind):
    return None if v is None or pd.isna(v) else kind(v)


# -- one stored job

@dataclass(frozen=True)
class StoredHeader:
    """Who ran what, when, as the job's row kept it (None: a column the row did not store); `modules` the
    Darshan modules the log had records of."""

    jobid: int | None
    uid: int | None
    exe: str | None
    nprocs: int | None
    nnodes: int | None
    start: str | None
    end: str | None
    runtime_s: float | None
    log_version: str | None
    partial_modules: list[str]
    modules: list[str]


@dataclass(frozen=True)
class StoredTotals:
    """The storage layer's bytes, distinct files and summed seconds, as the row kept them."""

    bytes_read: int | None
    bytes_written: int | None
    files: int | None
    read_time_s: float | None
    write_time_s: float | None
    meta_time_s: float | None


@dataclass(frozen=True)
class StoredPerf:
    """Darshan's rate by the slowest rank and the job's (MiB/s), its I/O time and share of the run, and the
    rate per node (None: the node count is unknown)."""

    agg_perf_by_slowest_mibps: float | None
    mibps: float | None
    io_time_s: float | None
    io_fraction_of_runtime: float | None
    mibps_per_node: float | None


@dataclass(frozen=True)
class StoredAccess:
    """The most common access size (bytes) and the sequential share of the POSIX accesses."""

    common_access_bytes: int | None
    seq_fraction: float | None


@dataclass(frozen=True)
class StoredSharing:
    """Files (and their bytes) opened by one rank, every rank, or several."""

    unique: int | None
    shared: int | None
    partially_shared: int | None
    unique_bytes: int | None
    shared_bytes: int | None
    partially_shared_bytes: int | None


@dataclass(frozen=True)
class StoredFinding:
    """A HIGH/WARN finding as `jobs ingest` stored it, with what its code means. `cost_s`, `cost_share`,
    `message` and `fix` are None for a job ingested before the store kept them (`fix`: also a finding
    without one); `level` None for a code this version does not know."""

    code: str
    level: str | None
    cost_s: float | None
    cost_share: float | None
    message: str | None
    fix: str | None
    what: str


@dataclass(frozen=True)
class ModuleRow:
    """One Darshan module's files, bytes, operations and summed seconds over the job's stored files."""

    module: str
    files: int
    bytes_read: int
    bytes_written: int
    reads: int
    writes: int
    opens: int
    read_time_s: float
    write_time_s: float
    meta_time_s: float


@dataclass(frozen=True)
class MountRow:
    """The job's bytes on one mount point at the file-system layer (mount None: a file under no mount the
    log names), with its Lustre layout when the stored files have one (`lustre_text` says it in words)."""

    mount: str | None
    fs_type: str | None
    files: int
    bytes_read: int
    bytes_written: int
    lustre: Lustre | None
    lustre_text: str

    def to_json(self) -> dict:
        doc = {"mount": self.mount, "fs_type": self.fs_type, "files": self.files, "bytes_read": self.bytes_read,
               "bytes_written": self.bytes_written}
        if self.lustre is not None:  # absent, not null, where the mount has no Lustre files (as `job LOG` says it)
            doc["lustre"] = self.lustre.raw()
        return {**doc, "lustre_text": self.lustre_text}

    @classmethod
    def of(cls, m: dict) -> MountRow:
        lu = m.get("lustre")
        return cls(m["mount"], m["fs_type"], m["files"], m["bytes_read"], m["bytes_written"],
                   None if lu is None else Lustre(**lu), lustre_text(lu))


@dataclass(frozen=True)
class StoredJob:
    """One stored job as `jobs ingest` kept it: `jobs show --json` and the job page's own side (/api/job
    without its `umami` and `why`). Read from the job's row and its rows of the per-file Parquet table,
    never from the log again. Times ISO 8601 UTC, bytes, seconds, MiB/s (`to_json()` adds the unit-rule
    twins, `with_unit_keys`); `findings` are the HIGH/WARN ones, most expensive first (`cost_s` None
    for a job ingested before costs were stored); the file tables are empty when `files_stored` is false;
    `rules_revision` and `rules_current` as `JobRow`'s (level, verdict and findings of older rules when false)."""

    id: str
    path: str
    ingested_at: str
    job: StoredHeader
    totals: StoredTotals
    perf: StoredPerf
    access: StoredAccess
    sharing: StoredSharing
    level: str | None
    verdict: str | None
    findings: list[StoredFinding]
    files_stored: bool
    interfaces: list[ModuleRow]
    mounts: list[MountRow]
    stripes_stored: bool
    top_files: list[TopFile]
    rules_revision: str | None
    rules_current: bool

    def to_json(self) -> dict:
        doc = answer_dict(self)
        doc.update(findings=[answer_dict(f) for f in self.findings], interfaces=[answer_dict(i) for i in self.interfaces],
                   mounts=[m.to_json() for m in self.mounts], top_files=[answer_dict(f) for f in self.top_files])
        return with_unit_keys(doc)


def stored_job(store, parquet_dir, id_prefix: str) -> StoredJob | None:
    """One stored job as the job page shows it (None when no log_hash starts with `id_prefix`):
    the characterization's fields from its row (`stats.job.ROW_MAP`), its files from the Parquet table."""
    found = jobs_store.job(store, parquet_dir, id_prefix)
    if found is None:
        return None
    r, files = found
    ch = characterization_fields(r)
    codes = _codes(r["finding_codes"])
    return StoredJob(
        id=r["log_hash"], path=r["path"], ingested_at=ns_to_iso(r["ingested_ns"]),
        job=StoredHeader(**ch["job"], modules=_codes(r["modules"])),
        totals=StoredTotals(**ch["totals"]),
        perf=StoredPerf(**ch["perf"], mibps_per_node=mibps_per_node(ch["perf"]["mibps"], ch["job"]["nnodes"])),
        access=StoredAccess(common_access_bytes=r["common_access_bytes"], **ch["access"]),
        sharing=StoredSharing(**ch["sharing"]),
        level=job_level(r["finding_codes"], r.get("findings_json")),
        verdict=r.get("verdict"),
        findings=_findings(r, codes),
        files_stored=files is not None,
        interfaces=[ModuleRow(**m) for m in per_module(files)] if files is not None else [],
        mounts=[MountRow.of(m) for m in per_mount(files)] if files is not None else [],
        # Parquet parts written before the layout was stored lack its columns
        stripes_stored=files is not None and all(c in files.columns for c in LUSTRE_FILE_COLUMNS),
        top_files=[TopFile(**f) for f in top_files(files)] if files is not None else [],
        rules_revision=r.get("rules_revision"), rules_current=rules_current(r.get("rules_revision")),
    )


#: A stored finding's level as `jobs ingest` writes it (json.dumps of flat findings: a quote inside a
#: message is escaped, so only the key matches). Read this way, 100 000 rows take a fifth of json.loads'
#: time, which the Jobs page pays each time a job is stored (`ArchiveIndex`).
_LEVEL = re.compile(r'"level": "([A-Z]+)"')


def _stored_level(findings_json) -> str | None:
    """The most severe level among a row's stored findings, as the report set it from their costs (a
    finding's level is at most its code's: a P05 that costs little was stored as WARN); None without them."""
    if not isinstance(findings_json, str) or not findings_json:
        return None
    levels = _LEVEL.findall(findings_json)
    return max(levels, key=severity) if levels else None


def _findings(r: dict, codes: list[str]) -> list[StoredFinding]:
    """HIGH/WARN findings, most expensive first, with cost and message when the row has them
    (cost_s None: ingested before the store kept costs)."""
    described = describe_codes(codes)
    if not r.get("findings_json"):
        return [StoredFinding(f["code"], f["level"], None, None, None, None, f["what"]) for f in described]
    what = {f["code"]: f["what"] for f in described}
    stored = json.loads(r["findings_json"])
    stored.sort(key=lambda f: -(f.get("cost_s") or 0.0))  # stable: the report's order on ties
    return [StoredFinding(f["code"], f.get("level"), f.get("cost_s"), f.get("cost_share"), f.get("message"), f.get("fix"),
                          what.get(f["code"], "")) for f in stored]


def show_job(settings, ident: str) -> StoredJob:
    """`jobs show JOBID`: the stored job whose scheduler job id is `ident` or whose log hash starts with it."""
    store = open_store(settings)
    candidates = jobs_store.find_jobs(store, ident)
    if not candidates:
        raise UserError(f"no stored job with job id or log hash {ident!r}; 'ioweather jobs list' shows them")
    if len(candidates) > 1:
        shown = ", ".join(f"{c['log_hash'][:16]} (job {c['jobid']}, {c['path']})" for c in candidates[:10])
        more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        raise UserError(f"{ident} matches {len(candidates)} jobs: {shown}{more}; give more of a log hash")
    return stored_job(store, settings.parquet_dir, candidates[0]["log_hash"])
