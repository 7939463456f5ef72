"""`jobs summary` answered from the embedded SQLite store with `sqlite3` and numpy: no pandas, no SQLAlchemy;
and the one computation of the archive summary every surface shows (`summary_of_columns`).

The command took ~1.0 s of CPU whatever the archive's size, 0.8 s of it importing pandas and SQLAlchemy
(issue 40). Here the job rows are read through `store.sqlite_reads` (read-only, the same columns in the same
order as `store.jobs.load_jobs`) and summarized by `stats.archive_columns`. What this cannot answer from the
file as it is, it leaves to the store's door (`light_answer` is None; the command asks
`services.jobs.darshan.archive_summary`): a server database, no store yet, a store that cannot be read
(the door names what is wrong), a darshan component of another schema version or none (the door creates or
upgrades it: a write). That door, the Jobs page (`ArchiveIndex`, `?fs=`) and this one hand their columns to
the same `summary_of_columns`, so that the page and the command cannot tell two stories.
"""

from __future__ import annotations

import pwd
from dataclasses import dataclass
from pathlib import Path

from ioweather.encoding import answer_dict
from ioweather.errors import UserError, from_os_error
from ioweather.services.jobs.answer import with_unit_keys
from ioweather.store import sqlite_reads

#: store.jobs.SUMMARY_COLUMNS' text columns (the others are numbers, typed by `column`)
_TEXT = ("log_hash", "exe", "modules", "top_file")


@dataclass(frozen=True)
class SummaryFilters:
    """The options the summary was computed with: the box plots' job filter and the node-count fallback."""

    min_procs: int
    min_bytes: int
    cores_per_node: int | None


@dataclass(frozen=True)
class InterfacesOfSize:
    """One job-size class (processes per job): its jobs, and per interface the jobs using it and its bytes."""

    size_class: str
    jobs: int
    jobs_using: dict[str, int]
    bytes: dict[str, int]


@dataclass(frozen=True)
class StrategyOfSize:
    """One job-size class: per I/O strategy (unique, shared, partially_shared) the jobs using it, the jobs
    it moved most of the bytes of (`dominant`), and its bytes."""

    size_class: str
    jobs: int
    jobs_using: dict[str, int]
    dominant: dict[str, int]
    bytes: dict[str, int]


@dataclass(frozen=True)
class TopRow:
    """One project, user or executable of a top-N list: its name, jobs and bytes."""

    name: str
    jobs: int
    bytes_read: int
    bytes_written: int


@dataclass(frozen=True)
class TopN:
    """The top-N of one kind of name (`key`: "project", "user" or "exe_name", the rows' JSON key for the
    name) by bytes read and by bytes written."""

    key: str
    by_bytes_read: tuple[TopRow, ...]
    by_bytes_written: tuple[TopRow, ...]

    @classmethod
    def of(cls, key: str, doc: dict) -> TopN:
        return cls(key, *(tuple(TopRow(str(r[key]), r["jobs"], r["bytes_read"], r["bytes_written"]) for r in doc[by])
                          for by in ("by_bytes_read", "by_bytes_written")))

    def to_json(self) -> dict:
        return {by: [{self.key: r.name, "jobs": r.jobs, "bytes_read": r.bytes_read, "bytes_written": r.bytes_written}
                     for r in getattr(self, by)] for by in ("by_bytes_read", "by_bytes_written")}


@dataclass(frozen=True)
class FilesOfSize:
    """One job-size class: files per job and per process (medians, 90th percentile, maxima)."""

    size_class: str
    jobs: int
    jobs_without_files: int
    files_median: float
    files_p90: float
    files_max: int
    files_per_process_median: float
    files_per_process_max: float


@dataclass(frozen=True)
class ProjectBox:
    """One project's box plot of MiB/s per compute node (numpy's linear quantiles)."""

    project: str
    jobs: int
    min: float
    q1: float
    median: float
    q3: float
    max: float


@dataclass(frozen=True)
class MibpsPerNode:
    """MiB/s per compute node by project, of the jobs in the filter (`SummaryFilters`); the jobs of the
    filter without a node count are left out of the boxes and counted."""

    jobs_in_filter: int
    jobs_without_node_count: int
    projects: tuple[ProjectBox, ...]


@dataclass(frozen=True)
class ProjectRow:
    """One project's key characteristics (Carns et al. 2011, Table V): averages over its jobs (None:
    no job of it says), its bytes, its most common access size and the letters of the interfaces it used."""

    project: str
    jobs: int
    users: int
    nprocs_mean: float
    bytes_read: int
    bytes_written: int
    mibps_per_node_mean: float | None
    meta_time_share_mean: float | None
    io_fraction_mean: float | None
    files_per_job_mean: float
    unique_bytes_share_mean: float | None
    shared_bytes_share_mean: float | None
    partially_shared_bytes_share_mean: float | None
    key_access_bytes: int | None
    interfaces: str


@dataclass(frozen=True)
class ArchiveSummary:
    """Cross-job views of the stored jobs: `jobs summary --json` and the `summary` of /api/jobs.

    Bytes are bytes, rates MiB/s (`mibps...`); `to_json()` adds beside each such key its unit-rule
    twin (`read_bytes`, `_bps` in bytes per second, `with_unit_keys`). The tables are those of
    `stats.archive_columns.summary`, typed here (`of`); `filters` are the options they were computed with."""

    jobs: int
    failed_logs: int
    bytes_read: int
    bytes_written: int
    filters: SummaryFilters
    interfaces_by_size: tuple[InterfacesOfSize, ...]
    strategy_by_size: tuple[StrategyOfSize, ...]
    top_projects: TopN
    top_users: TopN
    top_executables: TopN
    files_vs_procs: tuple[FilesOfSize, ...]
    mibps_per_node_by_project: MibpsPerNode
    projects: tuple[ProjectRow, ...]

    @classmethod
    def of(cls, doc: dict, failed_logs: int) -> ArchiveSummary:
        """The answer of `stats.archive_columns.summary`'s document."""
        box = doc["mibps_per_node_by_project"]
        return cls(
            jobs=doc["jobs"], failed_logs=failed_logs, bytes_read=doc["bytes_read"], bytes_written=doc["bytes_written"],
            filters=SummaryFilters(**doc["filters"]),
            interfaces_by_size=tuple(InterfacesOfSize(**r) for r in doc["interfaces_by_size"]),
            strategy_by_size=tuple(StrategyOfSize(**r) for r in doc["strategy_by_size"]),
            top_projects=TopN.of("project", doc["top_projects"]), top_users=TopN.of("user", doc["top_users"]),
            top_executables=TopN.of("exe_name", doc["top_executables"]),
            files_vs_procs=tuple(FilesOfSize(**r) for r in doc["files_vs_procs"]),
            mibps_per_node_by_project=MibpsPerNode(box["jobs_in_filter"], box["jobs_without_node_count"],
                                                   tuple(ProjectBox(**r) for r in box["projects"])),
            projects=tuple(ProjectRow(**r) for r in doc["projects"]))

    def to_json(self) -> dict:
        box = self.mibps_per_node_by_project
        rows = lambda items: [answer_dict(r) for r in items]  # noqa: E731
        return with_unit_keys({
            "jobs": self.jobs, "failed_logs": self.failed_logs, "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written, "filters": answer_dict(self.filters),
            "interfaces_by_size": rows(self.interfaces_by_size), "strategy_by_size": rows(self.strategy_by_size),
            "top_projects": self.top_projects.to_json(), "top_users": self.top_users.to_json(),
            "top_executables": self.top_executables.to_json(), "files_vs_procs": rows(self.files_vs_procs),
            "mibps_per_node_by_project": {"jobs_in_filter": box.jobs_in_filter,
                                          "jobs_without_node_count": box.jobs_without_node_count,
                                          "projects": rows(box.projects)},
            "projects": rows(self.projects)})


def project_rules(projects_file: str | None) -> list:
    """The rules of a `--projects` file ([] without one); a UserError naming the file when it cannot be used."""
    if not projects_file:
        return []
    try:
        text = Path(projects_file).read_text(encoding="utf-8")
    except OSError as e:
        raise from_os_error(projects_file, e, "read projects file") from None
    # lazy: numpy via stats.archive_columns: the command imports this module at its top (its `--help`)
    from ioweather.stats.archive_columns import parse_project_map

    try:
        return parse_project_map(text)
    except ValueError as e:
        raise UserError(f"projects file {projects_file}: {e}") from None


def light_answer(settings, *, projects_file: str | None, cores_per_node: int | None, min_procs: int,
                 min_bytes: int, top: int) -> ArchiveSummary | None:
    """`jobs summary` from the SQLite store through `sqlite3`; None when the store needs its usual door
    (services/jobs/darshan.py `archive_summary` then answers). A bad `--projects` file is a UserError either way."""
    rules = project_rules(projects_file)
    return _light(settings, rules, cores_per_node=cores_per_node, min_procs=min_procs, min_bytes=min_bytes, top=top)


def _light(settings, rules: list, **options) -> ArchiveSummary | None:
    try:
        store = sqlite_reads.open_light(settings)
    except sqlite_reads.Fallback:  # e.g. not a database: the full door says what is wrong in its words
        return None
    if store is None:
        return None
    try:
        store.require("darshan")
        names = sqlite_reads.SUMMARY_COLUMNS
        rows = store.rows(f"SELECT {', '.join(names)} FROM darshan_jobs ORDER BY log_hash")
        failed = store.rows("SELECT count(*) FROM darshan_failed_logs")[0][0]
    except sqlite_reads.Fallback:
        return None
    finally:
        store.dispose()
    return summary_of_rows(rows, names, rules, int(failed), **options)


def summary_of_rows(rows: list[tuple], names, rules: list, failed_logs: int, **options) -> ArchiveSummary:
    """`jobs summary` of stored job rows (`names` their columns, store.jobs.SUMMARY_COLUMNS), by log_hash."""
    values = list(zip(*rows)) if rows else [()] * len(names)
    return summary_of_columns(dict(zip(names, values)), rules, failed_logs, **options)


def summary_of_columns(cols: dict, rules: list, failed_logs: int, **options) -> ArchiveSummary:
    """THE `jobs summary` (the command on any store, /api/jobs, the Jobs page): `cols` {column of
    store.jobs.SUMMARY_COLUMNS: its values by log_hash}, a sequence of the stored values (None for NULL) or
    a numpy array as `DataFrame.from_records` typed it (`stats.archive_columns.column` keeps its dtype, so
    the full door's frame is summed as it was typed)."""
    # lazy: numpy via stats.archive_columns: the command imports this module at its top (its `--help`)
    from ioweather.stats.archive_columns import assign_projects, column, summary

    c = {n: (list(v) if n in _TEXT else column(v)) for n, v in cols.items()}
    cache: dict = {}
    uids = c["uid"].tolist()
    users = [user_label(u, cache) for u in uids]
    projects = assign_projects(c["top_file"], c["exe"], uids, rules, users)
    return ArchiveSummary.of(summary(c, projects, users, **options), failed_logs)


def user_label(uid, cache: dict) -> str:
    """THE name of a uid on every surface (`jobs list`, `jobs summary`, the Jobs page): its user name on
    this machine, else the uid itself ("cloudsdk" in one place and "1000" in another was one user).
    `uid` an int, a float or None (NaN and None: "?")."""
    if uid is None or uid != uid:
        return "?"
    return user_name(uid, cache) or str(int(uid))


def user_name(uid, cache: dict) -> str | None:
    if uid not in cache:
        try:
            cache[uid] = pwd.getpwuid(int(uid)).pw_name
        except (KeyError, ValueError, OverflowError, TypeError):  # no such user here (another site's log)
            cache[uid] = None
    return cache[uid]
