"""`ioweather store check [--repair]`: is the store whole, and what can be put right without loss.

Checked: the schema version of every component; on SQLite, `PRAGMA integrity_check` and the WAL
(its size by os.stat and a PASSIVE checkpoint); every Parquet area against its manifest:

    probe archive   parquet/probe/run=<id>/...     listed in the probe_archive table (store/probe_archive.py)
    jobs            parquet/jobs/files-<id>.parquet named by darshan_jobs.files_part (store/jobs.py)
    telemetry       parquet/telemetry/fs=<name>/   import markers, compaction footers, rollups
                                                   (store/telemetry_layout.py, _imports, _compact, _rollup)

and leftover temporary files. The SQLite files are only ever touched through SQLite: opening them
with Python's open() and closing them would drop this process's POSIX locks on them.

--repair fixes only what loses nothing: temporary files of stopped writes, leftovers of a killed
import or an interrupted compaction (rows that no reader counts), missing or stale rollups (rebuilt
from their data file), Parquet parts of a killed jobs ingest. Missing, unreadable or duplicated data
files are reported, never deleted.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from ioweather.config import Settings
from ioweather.errors import StoreError, os_error_reason
from ioweather.files import StoreTree
from ioweather.store.db import is_disk_full, open_store, redact
from ioweather.store import jobs, probe, snapshots, telemetry_imports as imports
from ioweather.store import telemetry_layout as layout
from ioweather.store import telemetry_rollup as rollup
from ioweather.store.probe import probe_archive

#: A temporary file younger than this may belong to a write under way (jobs.py waits as long).
TEMP_GRACE_S = 3600


@dataclass
class Problem:
    area: str
    path: str | None
    problem: str
    fix: Callable[[], object] | None = None
    repaired: bool = False

    def to_json(self) -> dict:
        return {"area": self.area, "path": self.path, "problem": self.problem,
                "repairable": self.fix is not None, "repaired": self.repaired}

    def line(self) -> str:
        where = f"{self.path}: " if self.path else ""
        state = " (repaired)" if self.repaired else " (repairable: ioweather store check --repair)" if self.fix else ""
        return f"{self.area}: {where}{self.problem}{state}"


@dataclass
class Report:
    database: str
    schema_versions: list = field(default_factory=list)
    sqlite: dict | None = None
    files: dict = field(default_factory=lambda: {"probe_archive": 0, "jobs": 0, "telemetry": 0})
    problems: list[Problem] = field(default_factory=list)

    def add(self, area: str, path, problem: str, fix=None) -> None:
        self.problems.append(Problem(area, None if path is None else str(path), problem, fix))

    @property
    def ok(self) -> bool:
        return all(p.repaired for p in self.problems)

    def to_json(self) -> dict:
        return {"ok": self.ok, "database": self.database, "schema_versions": self.schema_versions,
                "sqlite": self.sqlite, "files": self.files, "problems": [p.to_json() for p in self.problems],
                "repaired": sum(p.repaired for p in self.problems)}


def check(settings: Settings, repair: bool = False) -> Report:
    url = settings.url()
    report = Report(database=redact(url))
    sqlite_file = sa.engine.make_url(url).database if url.startswith("sqlite") else None
    store = None
    tree = StoreTree(settings.parquet_dir)
    if sqlite_file is None or os.path.exists(sqlite_file):
        try:
            store = open_store(settings)
            if store.is_sqlite:
                report.sqlite = _check_sqlite(store, sqlite_file, report)
            if report.sqlite and report.sqlite["wal_checkpoint"] is None and report.sqlite["integrity"] != "ok":
                raise _Unreadable  # said in one line above; every other check would only repeat it
            _check_schema(store, report)
            _check_probe_archive(store, settings.parquet_dir, report, tree)
            _check_jobs(store, settings.parquet_dir, report, tree)
            _check_orphan_samples(store, report)
        except _Unreadable:
            pass
        except StoreError as e:
            report.add("database", None, str(e))
        except sa.exc.DBAPIError as e:
            report.add("database", None, _first_line(e))
    for base in tree.subdirs(layout.telemetry_dir(settings), lambda n: n.startswith("fs=")):
        _check_telemetry(base, report, tree, settings.parquet_dir)
    _check_temp_files(settings.parquet_dir, report, tree)
    _check_links(settings.parquet_dir, tree, report)
    if repair:
        for p in report.problems:
            if p.fix is not None:
                try:
                    p.fix()
                    p.repaired = True
                except (OSError, pa.ArrowException, StoreError) as e:
                    p.problem += f"; repair failed: {os_error_reason(e, p.path)}"
    if store is not None:
        store.dispose()
    return report


class _Unreadable(Exception):
    """The database cannot be read at all (reported already)."""


def _first_line(e: BaseException) -> str:
    text = str(getattr(e, "orig", None) or e).strip().splitlines()
    return text[0] if text else type(e).__name__


# -- relational store -----------------------------------------------------------------------------
def _check_sqlite(store, path: str, report: Report) -> dict:
    out = {"integrity": None, "wal_bytes": None, "wal_checkpoint": None, "auto_vacuum": None}

    # The driver's connection outside any transaction: a checkpoint cannot run inside one, and a
    # check must not take the write lock (the pool's connections begin IMMEDIATE by default).
    try:
        raw = store.engine.raw_connection()
    except (sa.exc.DBAPIError, sqlite3.DatabaseError) as e:
        # sqlite3's own error when it is raised in the pool's connect hook (store/db.py), not wrapped
        out["integrity"] = _sqlite_state(e, path)
        report.add("sqlite", path, _sqlite_problem(e, path, "cannot open the database"))
        return {**out, "wal_bytes": _size(f"{path}-wal")}
    try:
        cur = raw.driver_connection.cursor()
        rows = [r[0] for r in cur.execute("PRAGMA integrity_check(20)")]
        out["integrity"] = "ok" if rows == ["ok"] else "damaged"
        for r in rows if rows != ["ok"] else []:
            report.add("sqlite", path, f"integrity check: {r}")
        # "none" in a store created before the store turned it on (store/db.py): docs/probe-pieces.md
        out["auto_vacuum"] = {0: "none", 1: "full", 2: "incremental"}.get(cur.execute("PRAGMA auto_vacuum").fetchone()[0])
        busy, log, done = cur.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        out["wal_checkpoint"] = {"busy": bool(busy), "log_frames": log, "checkpointed_frames": done}
    except sqlite3.DatabaseError as e:
        out["integrity"] = _sqlite_state(e, path)
        report.add("sqlite", path, _sqlite_problem(e, path, "cannot read the database"))
    finally:
        raw.close()
    out["wal_bytes"] = _size(f"{path}-wal")
    return out


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


#: Smallest SQLite file that can hold a database: its 100-byte header.
SQLITE_HEADER_BYTES = 100


def _sqlite_state(e: BaseException, path: str) -> str:
    """"disk full" or "damaged": a full disk makes SQLite fail too, and "repairing" a healthy store is harm."""
    return "disk full" if is_disk_full(f"sqlite:///{os.path.abspath(path)}", e) else "damaged"


def _sqlite_problem(e: BaseException, path: str, doing: str) -> str:
    """One line saying what is wrong with the database file, in words an admin can act on."""
    text = _first_line(e)
    if _sqlite_state(e, path) == "disk full":
        return (f"{doing}: the disk is full ({text}); the store is not damaged: free space, then check again")
    try:
        size = os.stat(path).st_size
    except OSError as oe:
        return f"{doing}: {os_error_reason(oe, path)}"
    if 0 < size < SQLITE_HEADER_BYTES:
        return f"{doing}: truncated ({size} bytes, shorter than an SQLite header); restore it from a backup"
    if "not a database" in text.lower():
        return (f"{doing}: not an SQLite database, or its header is damaged ({size:,} bytes); "
                "restore it from a backup")
    if "malformed" in text.lower():
        return (f"{doing}: damaged ({text}; {size:,} bytes: truncated or overwritten); "
                "restore it from a backup, or recover it with sqlite3's .recover")
    return f"{doing}: {text}"


def _check_schema(store, report: Report) -> None:
    known = {c.name: c.version for c in (probe.COMPONENT, jobs.COMPONENT, snapshots.COMPONENT)}
    for name, version in sorted(store.versions().items()):
        code = known.get(name)
        report.schema_versions.append({"component": name, "version": version, "code_version": code})
        if code is not None and version > code:
            report.add("schema", None, f"{name} schema v{version} is newer than this ioweather (v{code}): upgrade it")


def _has_table(store, name: str) -> bool:
    with store.connect() as conn:
        return sa.inspect(conn).has_table(name)


def _parquet_rows(path: Path, report: Report, area: str) -> int | None:
    """The row count from the footer, or None (reported) when the file is not readable Parquet."""
    try:
        return pq.read_metadata(path).num_rows
    except (OSError, pa.ArrowException) as e:
        report.add(area, path, f"unreadable Parquet: {os_error_reason(e, path)}")
        return None


def _behind_link(root: Path, path: Path) -> bool:
    """Whether a name on the way from the store's `root` to `path` (the path itself included) is a link:
    what lies behind it is not the store's, so it is neither read, counted nor removed here
    (`_check_links` names the link once)."""
    at = root
    for part in path.relative_to(root).parts:
        at = at / part
        try:
            if stat.S_ISLNK(os.lstat(at).st_mode):
                return True
        except OSError:
            return False
    return False


def _check_probe_archive(store, parquet_dir: Path, report: Report, tree: StoreTree) -> None:
    if not _has_table(store, "probe_archive"):
        return
    with store.connect() as conn:
        listed = conn.execute(sa.select(probe_archive.c.path, probe_archive.c.rows)).all()
    names = set()
    for rel, rows in listed:
        path = parquet_dir / rel
        names.add(path)
        if _behind_link(parquet_dir, path):
            continue
        report.files["probe_archive"] += 1
        if not path.exists():
            report.add("probe archive", path, f"missing: the probe_archive table lists it with {rows} samples")
        elif (n := _parquet_rows(path, report, "probe archive")) is not None and n != rows:
            report.add("probe archive", path, f"holds {n} samples, the probe_archive table says {rows}")
    runs = tree.subdirs(parquet_dir / "probe", lambda n: n.startswith("run="))
    for path in (f for run in runs for f in tree.regular_files(run, lambda n: n.endswith(".parquet"))):
        if path not in names:
            report.add("probe archive", path, "not in the probe_archive table: no reader counts it "
                       "(left by an interrupted archiving, or copied in)")


def _check_jobs(store, parquet_dir: Path, report: Report, tree: StoreTree) -> None:
    if not _has_table(store, "darshan_jobs"):
        return
    with store.connect() as conn:
        used = {r[0] for r in conn.execute(sa.select(jobs.jobs.c.files_part).distinct()) if r[0]}
    d = jobs.files_dir(parquet_dir)
    for part in sorted(used):
        if _behind_link(parquet_dir, d / part):
            continue
        report.files["jobs"] += 1
        if not (d / part).exists():
            report.add("jobs", d / part, "missing: darshan_jobs rows name it (their per-file table is lost)")
        else:
            _parquet_rows(d / part, report, "jobs")
    now = time.time()
    for p in tree.regular_files(d, lambda n: n.startswith("files-") and n.endswith(".parquet")):
        if p.name not in used:
            old = now - p.stat().st_mtime > TEMP_GRACE_S
            report.add("jobs", p, "no job names it (left by a killed ingest)",
                       (lambda: jobs.remove_orphan_parts(store, parquet_dir)) if old else None)


# -- telemetry ------------------------------------------------------------------------------------
def _check_telemetry(base: Path, report: Report, tree: StoreTree, parquet_dir: Path) -> None:
    area = f"telemetry {base.name[3:]}"
    left = imports.leftovers(base)
    for p in left:
        report.add(area, p, "left by an interrupted import: no reader counts it",
                   lambda p=p: imports.remove_leftovers([p]))
    for writer, marker in layout.import_markers(base).items():
        for rel in marker.get("files", []):
            if not (base / rel).exists():  # its rows are gone either way: the marker is put in step
                report.add(area, base / rel, f"missing: the import marker of {writer} lists it; --repair removes "
                           "the entry", lambda writer=writer: imports.drop_missing(base, writer))
    days = [d for d in tree.subdirs(base, lambda n: n.startswith("date=")) if layout._day_of_dir(d.name) is not None]
    visible = [f for f in layout.data_files(base, known_bad=True) if f.parent in set(days)]
    shown, left = set(visible), set(left)
    for d in days:
        for f in tree.regular_files(d, lambda n: n.endswith(".parquet")):
            if f not in shown and f not in left:  # replaced by a compacted file that holds its rows
                report.add(area, f, "already merged into a compacted file (an interrupted compaction)",
                           lambda f=f: layout.remove_files([f], tree))
        for r in tree.regular_files(d / "_rollup", lambda n: n.endswith(".parquet")):
            if not (d / r.name).exists():
                report.add(area, r, "rollup of a data file that is gone", lambda r=r: tree.unlink(r))
    by_size = defaultdict(list)
    for f in visible:
        report.files["telemetry"] += 1
        if _parquet_rows(f, report, area) is None:
            report.problems[-1].fix = lambda f=f: quarantine(tree, parquet_dir, base, f)
            report.problems[-1].problem += "; every reader skips it (noted); --repair moves it to quarantine/"
            continue
        by_size[f.stat().st_size].append(f)
        if rollup.read_range(rollup.rollup_path(f)) is None and rollup.own(rollup.rollup_path(f)):  # a link: said once
            report.add(area, rollup.rollup_path(f), "rollup missing or stale (workload reads the rows instead)",
                       lambda f=f: rollup.build(f))
    for same_size in by_size.values():
        seen: dict[str, Path] = {}
        # the older file is taken as the original, the newer one as its copy
        for f in sorted(same_size, key=lambda f: (f.stat().st_mtime_ns, f.name)) if len(same_size) > 1 else []:
            digest = hashlib.sha256(f.read_bytes()).hexdigest()
            if digest in seen:
                report.add(area, f, f"duplicate of {seen[digest].name}: its rows count twice (remove one by hand)")
            else:
                seen[digest] = f


def _check_temp_files(parquet_dir: Path, report: Report, tree: StoreTree) -> None:
    """Temporary files (`.name.tmp`) of writes that stopped, old enough not to be under way. A `.tmp`
    that is a link was planted (the store makes its temporaries O_EXCL|O_NOFOLLOW, never as links):
    --repair removes the link itself, whatever its age, never what it points to."""
    known = {Path(p.path) for p in report.problems if p.path}
    now = time.time()
    for dirpath, dirs, names in os.walk(parquet_dir):  # enters no linked directory
        for name in sorted(n for n in dirs + names if n.endswith(".tmp")):
            p = Path(dirpath) / name
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            if p in known:
                continue
            if stat.S_ISLNK(st.st_mode):
                report.add("temporary files", p, "a link named like a temporary file (the store never makes one)",
                           lambda p=p: _unlink_link(tree, p))
            elif stat.S_ISREG(st.st_mode) and now - st.st_mtime > TEMP_GRACE_S:
                report.add("temporary files", p, f"left by a write that stopped {(now - st.st_mtime) / 3600:.1f} h ago",
                           lambda p=p: tree.unlink(p))


def _unlink_link(tree: StoreTree, p: Path) -> bool:
    """Remove the link `p` itself (unlinkat on its opened parent, after checking it is still a link)."""
    with tree.opened(p.parent) as fd:
        if fd is None:
            return False
        try:
            if not stat.S_ISLNK(os.stat(p.name, dir_fd=fd, follow_symlinks=False).st_mode):
                return False
            os.unlink(p.name, dir_fd=fd)
        except FileNotFoundError:
            return False
    return True


#: Where `store check --repair` sets aside what no reader can read: kept for the admin, never deleted.
QUARANTINE_DIR = "quarantine"


def quarantine(tree: StoreTree, parquet_dir: Path, base: Path, f: Path) -> Path:
    """Move the unreadable data file `f` out of its dataset into `<parquet>/quarantine/` (same relative
    path), its rollups removed and its import marker no longer listing it; returns where it went."""
    dest = parquet_dir / QUARANTINE_DIR / f.relative_to(parquet_dir)
    made = StoreTree(tree.root)  # its own: the error names what blocked this move, not the walk's other skips
    if not made.makedirs(dest.parent):
        raise StoreError(f"cannot move {f} to {dest}: " + made.skipped_line("made"))
    while dest.exists():
        dest = dest.with_name(f"{dest.stem}.{int(time.time_ns())}{dest.suffix}")
    writer = next((w for w in layout.import_markers(base) if f.name.startswith(w + "-")), None)
    for r in layout.index_paths(f):
        tree.unlink(r)
    if not tree.rename(f, dest):
        raise StoreError(f"cannot move {f} to {dest}: " + (tree.skipped_line("moved") or "it changed meanwhile"))
    if writer is not None:
        imports.drop_missing(base, writer)
    return dest


def _check_orphan_samples(store, report: Report) -> None:
    """Probe samples whose run is gone (a purge that raced a running probe, before purges took the run
    first): no reader can name them. --repair deletes them, counted."""
    if not _has_table(store, "probe_samples"):
        return
    s, r = probe.probe_samples.c, probe.probe_runs.c
    orphan = ~sa.exists().where(r.id == s.run_id)
    with store.connect() as conn:
        rows = conn.execute(sa.select(s.run_id, sa.func.count()).where(orphan).group_by(s.run_id)).all()
    for run_id, n in rows:
        report.add("probe samples", None, f"{n:,} samples of run {run_id}, which no longer exists (a purged target's)",
                   lambda run_id=run_id: probe.delete_orphan_samples(store, run_id))


def _check_links(parquet_dir: Path, tree: StoreTree, report: Report) -> None:
    """Links and mount points where the store keeps its files: every cleaner skips them; said here once."""
    tele = parquet_dir / "telemetry"
    for base in tree.subdirs(tele, lambda n: n.startswith("fs=")):
        for day in tree.subdirs(base, lambda n: n.startswith("date=") or n == layout.IMPORTS_DIR):
            for sub in tree.subdirs(day, lambda n: n.startswith("_")):
                tree.regular_files(sub, lambda n: n.endswith(".parquet"))
            tree.regular_files(day, lambda n: n.endswith(".parquet") or n.endswith(".json"))
    tree.subdirs(parquet_dir, lambda n: n == QUARANTINE_DIR)  # --repair moves unreadable files there
    for run in tree.subdirs(parquet_dir / "probe", lambda n: n.startswith("run=")):
        tree.regular_files(run, lambda n: n.endswith(".parquet"))
    tree.regular_files(jobs.files_dir(parquet_dir), lambda n: n.endswith(".parquet"))
    for path, why in tree.skipped:
        report.add("links", path, f"{why} inside the store: no cleaner follows or removes it; remove it by hand")
