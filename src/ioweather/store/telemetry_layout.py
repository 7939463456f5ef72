"""Where server-side telemetry lives: Parquet under IOWEATHER_HOME, one dataset per file system.

    <home>/parquet/telemetry/fs=<name>/date=<YYYY-MM-DD>/<writer>-<ns>.parquet

Long format, one row per (interval, target, metric):

    time_ns     int64    start of the interval, UTC nanoseconds
    target      string   OST/MDT/server/device name (e.g. snx11025-OST0003, sda)
    metric      string   read_bytes, write_bytes, read_ops, write_ops, md_<op>, cpu_pct, free_bytes, ...
    value       float64  the amount in that interval (a counter's delta, never negative; NaN = missing)
    interval_s  float64  the interval's length

A year of 5-second samples for 100 targets is ~10^9 rows: pandas cannot hold it,
DuckDB scans it in parallel and pushes filters into the files (ARCHITECTURE.md).
Files are written under a temporary name and renamed, so a reader never sees half a file.
Beside each file, `date=<D>/_rollup/<same name>` holds its per-minute and per-target summary of the
byte metrics (store/telemetry_rollup.py), which `ioweather workload` reads instead of the rows.
`collect` merges its small files of a finished day into one (store/telemetry_compact.py): readers
list files with `data_files()`, which leaves out the files a merged one replaces.

Metric vocabulary (base units; amounts are per interval, gauges are the value at time_ns):

    amounts   read_bytes, write_bytes, read_ops, write_ops        data moved at the target
              md_<op>  (open, close, mknod, link, unlink, mkdir, rmdir, rename, getattr,
                        setattr, getxattr, setxattr, statfs, sync, lookup, readdir, ...)
              ost_<op> (punch, create, destroy, setattr, sync, ... on an OST)
              busy_s, read_time_s, write_time_s                   block-device time (iostat)
              osc_read_bytes, osc_write_bytes, osc_rpcs, osc_rpc_wait_s   Lustre client per OST
              job_read_bytes, job_write_bytes, job_read_ops, job_write_ops, job_md_<op>
                        Lustre job_stats; target is "<target>/<job id>". They repeat the bytes
                        of read_bytes/write_bytes per job: never add them to those.
    gauges    cpu_pct, mem_used_pct, mem_used_bytes, mem_total_bytes, queue_depth
              capacity_bytes, free_bytes, avail_bytes, files_total, files_free

Missing is NaN, never 0 and never negative: a counter that went backwards (restart) and every
interval of a sampling gap are NaN rows (see stats/counters.py). Sources other than Lustre
servers prefix targets with the host name ("oss01:sda", "login1:/scratch").
"""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ioweather.config import Settings, check_dataset_name
from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.files import StoreTree, open_regular
from ioweather.store import telemetry_rollup as rollup, telemetry_target_rollups as target_rollups
from ioweather.store.parquet_scan import connect_duckdb, files_scan  # noqa: F401 (re-exported: the readers' scans)

if TYPE_CHECKING:
    import pandas as pd

SCHEMA = pa.schema([
    ("time_ns", pa.int64()),
    ("target", pa.string()),
    ("metric", pa.string()),
    ("value", pa.float64()),
    ("interval_s", pa.float64()),
])
# How every telemetry file is written. BYTE_STREAM_SPLIT on the values and delta-coding of the times
# make the files 17 % smaller and the value scans behind `workload` 37 % cheaper in CPU than plain
# zstd (measured on a year x 100 targets: docs/benchmarks/workload.md); the strings and the interval
# repeat, so they keep dictionary encoding.
WRITE_OPTIONS = dict(compression="zstd", use_dictionary=["target", "metric", "interval_s"],
                     column_encoding={"value": "BYTE_STREAM_SPLIT", "time_ns": "DELTA_BINARY_PACKED"})
_WRITER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")


def check_fs_name(fs: str) -> str:
    return check_dataset_name(fs)  # the one rule, config's: the fs-map and --fs are checked by it too


def telemetry_dir(settings: Settings) -> Path:
    return settings.parquet_dir / "telemetry"


def fs_dir(settings: Settings, fs: str) -> Path:
    return telemetry_dir(settings) / f"fs={check_fs_name(fs)}"


def list_fs(settings: Settings) -> list[str]:
    """The datasets: the real `fs=NAME` directories (a link there is not the store's: never listed, never read)."""
    d = telemetry_dir(settings)
    if not d.is_dir():
        return []
    return sorted(p.name[3:] for p in _real_subdirs(d, "fs="))


def write_rows(settings: Settings, fs: str, df: pd.DataFrame, writer: str = "import",
               paths_out: list | None = None, file_id: str | None = None) -> int:
    """Append `df` (columns of SCHEMA) to fs's dataset, one file per UTC day. Returns rows written.

    The files are named `<writer>-<file_id or random>.parquet` (`day_files` names them in advance);
    their paths are appended to `paths_out`.
    All or nothing: when a file cannot be written (a full disk), the files this call already wrote
    are removed again and a StoreError says why in one line, so the caller (collect) can keep the
    rows and write them again later without counting any twice."""
    if df.empty:
        return 0
    if not _WRITER.match(writer):
        raise ValueError(f"invalid writer name {writer!r}")
    missing = [c for c in SCHEMA.names if c not in df.columns]
    if missing:
        raise ValueError(f"telemetry rows lack columns {missing}")
    base = fs_dir(settings, fs)
    day = (df["time_ns"].to_numpy(np.int64) // 86_400_000_000_000)
    done: list[Path] = []
    try:
        for d in np.unique(day):
            done.append(_write_day(base, df.loc[day == d, SCHEMA.names], int(d), writer, file_id))
    except BaseException:
        remove_files(done)
        raise
    if paths_out is not None:
        paths_out.extend(done)
    return len(df)


def _day_file(base: Path, day: int, writer: str, file_id: str | None) -> Path:
    date = _EPOCH_DAY.fromordinal(_EPOCH_DAY.toordinal() + day).isoformat()
    return base / f"date={date}" / f"{writer}-{file_id or uuid.uuid4().hex[:12]}.parquet"


def day_files(settings: Settings, fs: str, df: pd.DataFrame, writer: str, file_id: str) -> list[Path]:
    """The files `write_rows(settings, fs, df, writer, file_id=file_id)` will write (`collect` names
    them in its state before writing them, and checks them when it restarts after a kill)."""
    days = np.unique(df["time_ns"].to_numpy(np.int64) // 86_400_000_000_000) if not df.empty else []
    return [_day_file(fs_dir(settings, fs), int(d), writer, file_id) for d in days]


def temp_of(path: Path) -> Path:
    """The temporary name `path` is written under before its rename."""
    return path.parent / f".{path.name}.tmp"


def _write_day(base: Path, part: pd.DataFrame, day: int, writer: str, file_id: str | None = None) -> Path:
    """One day's rows as one new file (temporary name, then rename) and its rollup."""
    path = _day_file(base, day, writer, file_id)
    out, name = path.parent, path.name
    tmp = temp_of(path)
    try:
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        table = pa.Table.from_pandas(part, schema=SCHEMA, preserve_index=False)
        pq.write_table(table, tmp, **WRITE_OPTIONS)
        os.replace(tmp, out / name)
    except BaseException as e:
        tmp.unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise from_os_error(out / name, e, "write", cls=StoreError) from None
        raise
    try:
        rollup.write(out / name, table)  # after the data file: a crash in between costs speed, not truth
        target_rollups.write(out / name, table)  # the admin pages' per-target rollups, on write too
    except OSError:
        pass  # likewise a full disk: readers build the missing rollups later (telemetry_query.plan_files)
    return out / name


DAY_NS = 86_400_000_000_000
_EPOCH_DAY = datetime.date(1970, 1, 1)  # day directories are UTC dates: day k is _EPOCH_DAY + k
COMPACT_TAG = "-compact-"        # in the name of a file that replaces a day's small files of one writer
REPLACES_KEY = b"ioweather.replaces"
MARKER_MAX_BYTES = 64 << 20  # a marker lists an import's files: ~100 bytes each
IMPORTS_DIR = "_imports"         # fs=<name>/_imports/<writer>.json: the runs of each import source that count


def _day_of_dir(name: str) -> int | None:
    try:
        return (datetime.date.fromisoformat(name[5:]).toordinal() - _EPOCH_DAY.toordinal()) * DAY_NS
    except ValueError:
        return None


def _day_in(day0: int, since_ns: int | None, until_ns: int | None) -> bool:
    return not ((until_ns is not None and day0 >= until_ns) or (since_ns is not None and day0 + DAY_NS <= since_ns))


_NAMED_DAYS = 31


def _real_dir(p: Path) -> bool:
    """A directory, not a link to one: the store's readers follow no link they did not create (issue 41:
    a day directory linked elsewhere was read as the dataset's, a linked `fs=NAME` as a file system)."""
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def _real_subdirs(d: Path, prefix: str) -> list[Path]:
    """The real subdirectories of `d` named `prefix...`, sorted (a link is left out; a mount point is not:
    an admin may mount a disk there, and reading follows no name the store did not make)."""
    try:
        with os.scandir(d) as it:
            return sorted(Path(e.path) for e in it if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


def day_dirs(base: Path, since_ns: int | None = None, until_ns: int | None = None) -> list[Path]:
    """The date=<D> directories that can hold rows of [since, until): a file holds one UTC day. Only
    real directories of a real dataset directory (a link is never followed: `_real_subdirs`)."""
    if not _real_dir(base):
        return []
    if since_ns is not None and until_ns is not None and until_ns - since_ns <= _NAMED_DAYS * DAY_NS:
        # a job's window or one day: name its few directories instead of listing a year of them
        # (one umami answer asks for ~300 days one at a time)
        first, last = since_ns // DAY_NS, (until_ns - 1) // DAY_NS
        named = (base / f"date={_EPOCH_DAY + datetime.timedelta(days=k)}" for k in range(first, last + 1))
        return [d for d in named if _real_dir(d)]
    out = []
    for d in _real_subdirs(base, "date="):
        day0 = _day_of_dir(d.name)
        if day0 is not None and _day_in(day0, since_ns, until_ns):
            out.append(d)
    return out


def within(files, since_ns: int | None, until_ns: int | None) -> list[Path]:
    """The files of a listing whose day can hold rows of [since, until) (what data_files would list)."""
    if since_ns is None and until_ns is None:
        return list(files)
    return [f for f in files if _day_in(_day_of_dir(f.parent.name) or 0, since_ns, until_ns)]


def replaced_by(path: Path) -> list[str]:
    """The names of the files a compacted file replaces (from its footer; [] for other files)."""
    if COMPACT_TAG not in path.name:
        return []
    try:
        meta = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowException):
        return []
    return [n for n in meta.get(REPLACES_KEY, b"").decode().split("\n") if n]


def import_markers(base: Path) -> dict[str, dict]:
    """{writer: marker} of the imports into a dataset (store/telemetry_imports.py); an unreadable
    marker names no run, so that writer's files do not count until its next import."""
    out = {}
    for p in sorted((base / IMPORTS_DIR).glob("*.json")):
        try:  # never through a link, nor blocked by a FIFO planted there
            with open_regular(p, follow_symlinks=False) as f:
                marker = json.loads(f.read(MARKER_MAX_BYTES))
        except (OSError, ValueError, UserError):
            marker = {}
        out[p.stem] = marker if isinstance(marker, dict) else {}
    return out


def uncommitted(name: str, markers: dict[str, dict]) -> bool:
    """Whether the file `name` belongs to an import run its source's marker does not name."""
    for writer, marker in markers.items():
        if name.startswith(writer + "-"):
            return not any(name.startswith(f"{writer}-{run}-") for run in marker.get("runs", []))
    return False


def data_files(base: Path, since_ns: int | None = None, until_ns: int | None = None, *,
               known_bad: bool = False) -> list[Path]:
    """The dataset's data files for [since, until) (whole days), without those a compacted file
    replaces: between writing a compacted file and unlinking its parts both exist, and a reader
    must count each row once (store/telemetry_compact.py); likewise without the files of an import
    that has not switched (still running or killed) or that a newer import of its source replaced
    (store/telemetry_imports.py).

    The markers are read before and after the directories: an import that switched in between
    (and removed its old run's files) would leave a listing of neither run, so that one is taken
    again. A switch writes a new run id, so equal markers mean no switch happened.

    Files this process found unreadable (`unreadable`) are left out unless `known_bad` (store check
    lists them to set them aside)."""
    for _ in range(LIST_ATTEMPTS):
        markers = import_markers(base)
        out = []
        for d in day_dirs(base, since_ns, until_ns):
            files = _regular_parquet(d)
            gone = {n for f in files for n in replaced_by(f)}
            out.extend(f for f in files if f.name not in gone and not uncommitted(f.name, markers))
        if _BAD and not known_bad:
            bad = set(known_unreadable(out))
            out = [f for f in out if f not in bad]
        if import_markers(base) == markers:
            return out
    raise _busy(base)


LIST_ATTEMPTS = 5


def _regular_parquet(d: Path) -> list[Path]:
    """The regular `*.parquet` files of a day directory, sorted; a link there (to a file of the same
    shape elsewhere) is not the store's and is left out."""
    try:
        with os.scandir(d) as it:
            return sorted(Path(e.path) for e in it if e.name.endswith(".parquet") and e.is_file(follow_symlinks=False))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _busy(base: Path) -> StoreError:
    return StoreError(f"the telemetry in {base} was replaced during each of {LIST_ATTEMPTS} attempts to read it "
                      "(imports running one after the other); try again")


def read_listed(base: Path, read, since_ns: int | None = None, until_ns: int | None = None, warn=None):
    """`read(files)` on a listing of the dataset, listed again and read again when it fails because
    the dataset changed under it: an import's switch, a compaction or `store check --repair`
    unlinks files a reader may have listed a moment before (DuckDB then says "No files found").
    Retrying on a fresh listing costs nothing while nothing changes, never double counts (each
    attempt reads one consistent listing whole) and needs no lock a long read would hold against
    the writers; it is bounded, as imports of one source can follow each other without end.

    A read that fails on an unchanged listing is looked at once more: files whose footer cannot be
    read (damaged, truncated) are left out, said through `warn` in one line, and the rest is read;
    one bad file must not take a whole page down (issue 41 item 5)."""
    files = data_files(base, since_ns, until_ns)
    skipped: list[Path] = []
    for _ in range(LIST_ATTEMPTS):
        try:
            out = read(files)
        except Exception:
            fresh = [f for f in data_files(base, since_ns, until_ns) if f not in skipped]
            if fresh == files:
                bad = unreadable(fresh)
                if not bad:
                    raise  # not a change of the dataset nor a damaged file: the reader's own error
                skipped += bad
                fresh = [f for f in fresh if f not in bad]
            files = fresh
            continue
        skipped = sorted(set(skipped) | set(within(skipped_unreadable(base), since_ns, until_ns)))
        if skipped and warn is not None:
            warn(unreadable_note(skipped))
        return out
    raise _busy(base)


def unreadable(files) -> list[Path]:
    """The files among `files` whose Parquet footer cannot be read (damaged, truncated, not Parquet).
    Each is remembered (`_BAD`) until it changes: `data_files` then leaves it out, so every reader of
    this process skips it, not only the one that met it (the pages' queries list files themselves)."""
    bad = []
    for f in files:
        try:
            pq.read_metadata(f)
        except FileNotFoundError:
            continue
        except (OSError, pa.ArrowException):
            bad.append(Path(f))
            key = _stat_key(f)
            if key is not None:
                _BAD[str(f)] = key
    return bad


#: {path: (inode, mtime, size)} of the data files found unreadable; a file rewritten or moved back is read again.
_BAD: dict[str, tuple[int, int, int]] = {}


def _stat_key(f) -> tuple[int, int, int] | None:
    try:
        st = os.stat(f)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def known_unreadable(files) -> list[Path]:
    """The files among `files` found unreadable before and unchanged since."""
    return [Path(f) for f in files if str(f) in _BAD and _stat_key(f) == _BAD[str(f)]]


def skipped_unreadable(base: Path) -> list[Path]:
    """The dataset's files that `data_files` leaves out as unreadable (what a reader's note names)."""
    prefix = str(base) + os.sep
    return sorted(Path(f) for f in list(_BAD) if f.startswith(prefix) and _stat_key(f) == _BAD[f])


def unreadable_note(files) -> str:
    first = files[0]
    more = f" and {len(files) - 1} more" if len(files) > 1 else ""
    return (f"skipped {len(files)} unreadable telemetry file{'s' if len(files) != 1 else ''} (damaged or "
            f"truncated): {first}{more}; `ioweather store check --repair` sets them aside")


def no_telemetry(settings: Settings, fs: str) -> UserError:
    known = ", ".join(list_fs(settings)) or "none"
    return UserError(f"no telemetry for file system {fs!r} in {telemetry_dir(settings)} (known: {known})")


def scan_sql(settings: Settings, fs: str, files: list[Path] | None = None) -> str:
    """A DuckDB table expression over fs's dataset, or over `files` of it (raises UserError when there is none)."""
    files = data_files(fs_dir(settings, fs)) if files is None else files
    if not files:
        raise no_telemetry(settings, fs)
    return files_scan(files)


def writer_files(settings: Settings, fs: str, writer: str) -> list[Path]:
    """Files of fs's dataset written by `writer` (a name or a name prefix ending in '-')."""
    base = fs_dir(settings, fs)
    if not base.is_dir():
        return []
    prefix = writer if writer.endswith("-") else writer + "-"
    return sorted(p for d in day_dirs(base) for p in _regular_parquet(d) if p.name.startswith(prefix))


def store_tree(path: Path) -> StoreTree:
    """The no-follow walker over the Parquet store holding the telemetry file or directory `path`
    (`<parquet>/telemetry/fs=<name>/date=<D>/<file>`): its root is `<parquet>`, so a link or mount
    at `telemetry`, `fs=<name>`, `date=<D>`, `_rollup` or the file itself is never followed."""
    path = Path(path)
    for parent in path.parents:
        if parent.name == "telemetry":
            return StoreTree(parent.parent)
    return StoreTree(path.parent)


def index_paths(p: Path) -> list[Path]:
    """The rollups kept beside the data file `p` (what goes before it, telemetry_rollup's docstring says why)."""
    return [rollup.rollup_path(p)] + [target_rollups.rollup_path(p, level) for level in target_rollups.LEVELS]


def remove_files(paths, tree: StoreTree | None = None) -> int:
    """Delete dataset files (e.g. an import being replaced or rolled back), their rollups first;
    returns how many data files went. Through the store's no-follow walker: a link or a mount point
    in place of a file or of a directory on its way is skipped (noted in `tree.skipped`), never followed."""
    n = 0
    for p in paths:
        p = Path(p)
        t = tree or store_tree(p)
        for r in index_paths(p):
            t.unlink(r)
        n += t.unlink(p)
    return n


def read_frame(settings: Settings, fs: str, where: str | None = None) -> pd.DataFrame:
    """The rows of fs's dataset (optionally filtered by a DuckDB `where` clause) as a DataFrame,
    sorted by time, target, metric. For modest ranges: big scans belong in DuckDB queries."""
    def read(files):
        con = connect_duckdb()
        try:
            sql = f"SELECT time_ns, target, metric, value, interval_s FROM {scan_sql(settings, fs, files)}"
            if where:
                sql += f" WHERE {where}"
            return con.execute(sql + " ORDER BY time_ns, target, metric").df()
        finally:
            con.close()

    return read_listed(fs_dir(settings, fs), read)
