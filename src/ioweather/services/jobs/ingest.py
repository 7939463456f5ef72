"""The pipeline of `ioweather jobs ingest`: read many Darshan logs in parallel into the store.

Per log (`extract`): hash, read (no DXT: the archive does not need traces),
characterize, turn into a job row and a per-file Arrow table (sent to the parent as
Arrow IPC bytes); a pool task carries up to sixteen logs. Workers never
touch the store; the parent writes batches (see store/jobs.py for idempotence
and resumability), and opens the store while the workers read their first logs. The reader always runs in a worker process, even for one log or
`--workers 1`: a worker that dies (libdarshan-util can abort() on damaged
input) breaks a `ProcessPoolExecutor`; the logs in flight are then re-run one
by one in fresh single-worker pools, so the culprit is recorded as failed and
the rest of the batch goes on.

Workers die with the parent (PR_SET_PDEATHSIG), even when it is killed with
SIGKILL. SIGTERM and Ctrl-C stop the workers, store what was already read, and
end with one line; a batch being written is finished first (`_Interrupts`).
Logs are named by absolute, normalized paths: the same file reached from another
directory is the same path (the content hash decides in any case).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

from typing import TYPE_CHECKING

from ioweather.errors import UserError, os_error_reason
from ioweather.files import display_path, fd_path
from ioweather.services.jobs.answer import JobReport
from ioweather.services.jobs.facts import LogFacts
from ioweather.services.jobs.ingest_scan import find_logs, IngestCounts, unchanged_file
from ioweather.signals import Interrupted as Stop, child_defaults, die_with_parent, install
from ioweather.store import sqlite_reads
from ioweather.store.job_rows import INTERFACE_COLUMNS, job_row_values
from ioweather.store.job_stamps import file_stamp, path_hash

# The reader, the statistics and Arrow (pandas, pyarrow) are imported where a log is read: a re-ingest of an
# unchanged archive reads none, and its time was mostly their imports (issue 40). `_ingest` imports them
# before forking (`_load_reader`), so the workers inherit them. The store's module (SQLAlchemy) is imported
# after the fork where the store can be read without it (`_light_plan`): the parent's ~0.3 s of SQLAlchemy and
# store opening then run beside the workers, not before them.
if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    import pyarrow as pa

# The extraction context inherited by forked workers (set before the pool starts).
_KNOWN_HASHES: frozenset[str] = frozenset()
_CORES_PER_NODE: int | None = None
_SCAN: Scan | None = None


def _crash_reason() -> str:
    """Why a log that killed its worker process is recorded as failed (local pool and Dask alike)."""
    # lazy: the reader (numpy, libdarshan-util), loaded only when a log is read
    from ioweather.sources.darshan_log import READER_DIED

    return READER_DIED


@dataclass(frozen=True)
class Scan:
    """How the listed logs were found, so each is opened as it was listed (issue 32 item 4).

    `roots`: (the directory as given, absolute; its real path) for every directory scanned. A log
    under one was listed by the scan: it is opened without following a link at its name (unless
    `follow_symlinks`) and must really lie inside that directory's real path. A file named on the
    command line may be a link (the user chose it), never into /proc, /sys or /dev.
    """

    roots: tuple[tuple[str, str], ...] = ()
    follow_symlinks: bool = False

    @classmethod
    def of(cls, paths: Iterable[str], follow_symlinks: bool) -> Scan:
        roots = []
        for p in paths:
            a = os.path.abspath(p)
            if os.path.isdir(a):
                roots.append((a, os.path.realpath(a)))
        # the deepest first: a log under two given directories belongs to the nearer one
        return cls(tuple(sorted(roots, key=lambda r: -len(r[0]))), follow_symlinks)

    def open(self, path: str):
        # lazy: the reader (numpy, libdarshan-util), loaded only when a log is read
        from ioweather.sources.darshan_log import open_log

        for given, real in self.roots:
            if path.startswith(given.rstrip("/") + "/"):
                return open_log(path, follow_symlinks=self.follow_symlinks, within=real)
        return open_log(path)


def _job_row(log, ch: dict, findings: list[dict], path: str, log_hash: str, size: int, mtime_ns: int) -> dict:
    """The store's row of a job, by column (store.jobs.job_row_values types it): what `extract` hands the
    batch writer, not an answer anyone reads."""
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.findings import ACTIONABLE, job_verdict, RULES_REVISION
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.job import row_fields

    verdict = job_verdict(findings, ch)
    common = ch["access"]["common_sizes"]
    row = {
        "log_hash": log_hash, "path": path, "path_hash": path_hash(path), "size_bytes": size, "mtime_ns": mtime_ns,
        # the characterization's fields under their stored names (stats.job.ROW_MAP, the only definition)
        **row_fields(ch),
        # times at the header's full precision (the characterization's ISO text has milliseconds)
        "start_ns": int(log.start_time_s * 1e9), "end_ns": int(log.end_time_s * 1e9),
        "modules": ",".join(sorted(m for m, r in log.records.items() if len(r))),
        "common_access_bytes": common[0]["size_bytes"] if common else None,
        "finding_codes": ",".join(f["code"] for f in findings if f["level"] in ACTIONABLE)[:255],
        # what the dashboard's job page shows as `ioweather job` does: verdict first, findings by cost
        "verdict": verdict["text"],
        "findings_json": json.dumps([{k: f.get(k) for k in ("code", "level", "cost_s", "cost_share", "message", "fix")}
                                     for f in findings if f["level"] in ACTIONABLE]),
        # `why`'s facts of the report `job LOG` makes of these bytes (services/jobs/report.py `_report`), so
        # that `why` reads no log again
        "why_facts": LogFacts.of_report(JobReport.of({"verdict": verdict["text"], "verdict_actions": verdict["actions"],
                                                      "verdict_saving_s": verdict["saving_s"], **ch,
                                                      "findings": findings}), log).stored(),
        # the rules all of the above was derived under: a row of other rules is read again (store/jobs.py `seen`)
        "rules_revision": RULES_REVISION,
    }
    for mod, prefix in INTERFACE_COLUMNS.items():
        it = ch["interfaces"].get(mod)
        row[f"{prefix}_bytes_read"] = it.get("bytes_read") if it else None
        row[f"{prefix}_bytes_written"] = it.get("bytes_written") if it else None
    return row


def _part_types() -> dict:
    """Columns that are all empty for a log without Lustre records: typed here, or Arrow infers `null`
    and parts of one archive get different schemas (pyarrow and DuckDB then refuse to read them together)."""
    # lazy: pyarrow, loaded only when a log is read
    import pyarrow as pa

    return {"stripe_count": pa.int64(), "stripe_size": pa.int64(), "ost_ids": pa.string()}


def extract(path: str, known: frozenset[str] | None = None, cores_per_node: int | None = None,
            scan: Scan | None = None) -> tuple:
    """("ok", job_row, arrow_table) | ("dup", where) | ("failed", failure_row). Never raises for bad input.
    The table is `file_table` of the log's `FilePart`."""
    res = _extract(path, known, cores_per_node, scan)
    return ("ok", res[1], file_table([res[2]])) if res[0] == "ok" else res


def _extract(path: str, known: frozenset[str] | None = None, cores_per_node: int | None = None,
             scan: Scan | None = None) -> tuple:
    """`extract` with the per-file rows as a `FilePart`, not yet a table: ("ok", job_row, part) | ("dup",
    where) | ("failed", failure_row).

    `where` (log_hash, path, size_bytes, mtime_ns) of content already stored, to `relocate` it.
    The log is opened once (`scan.open`): the bytes hashed are the bytes read. Paths are stored
    in their display form (`files.display_path`: a name that is not UTF-8 cannot be stored as
    text otherwise) and keyed by the hash of their bytes."""
    # lazy: the reader (numpy, libdarshan-util), loaded only when a log is read
    from ioweather.sources.darshan_log import (check_layout, content_hash, DarshanLogError, DarshanOpenError,
                                               read_log)
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.damage import drop_impossible
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.findings import job_findings
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.job import characterize, file_columns
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.job_files import top_file

    known = _KNOWN_HASHES if known is None else known
    cores_per_node = _CORES_PER_NODE if cores_per_node is None else cores_per_node
    scan = (_SCAN or Scan()) if scan is None else scan
    shown = display_path(path)
    log_hash = None
    try:
        # the name's own size until the file is opened and accepted: never that of a link's target
        # (/etc/shadow's size in `jobs failed` tells what it holds)
        st = os.lstat(path)
        size, mtime = st.st_size, st.st_mtime_ns
    except OSError as e:
        return ("failed", {"path": shown, "path_hash": path_hash(path), "log_hash": None, "size_bytes": 0,
                           "mtime_ns": 0, "reason": f"cannot stat: {os_error_reason(e, path)}"})
    try:
        with scan.open(path) as f:
            st = os.fstat(f.fileno())  # the file opened, not what the name pointed to before
            size, mtime = st.st_size, st.st_mtime_ns
            dev, ino = file_stamp(st)[:2]  # what the next ingest compares to skip it unopened
            layout = check_layout(path, open_path=fd_path(f))
            log_hash = content_hash(path, opened=f, layout=layout)
            if log_hash in known:
                return ("dup", {"log_hash": log_hash, "path": shown, "path_hash": path_hash(path), "size_bytes": size,
                                "mtime_ns": mtime, "st_dev": dev, "st_ino": ino})
            log = read_log(path, dxt=False, heatmaps=False, opened=f, layout=layout)  # Lustre layout: findings L01-L03
        # records with impossible counters (a damaged log) are left out of the characterization and findings
        clean, damage = drop_impossible(log)
        ch = characterize(clean, cores_per_node=cores_per_node)
        if damage:
            ch["job"]["damage"] = damage
        findings = job_findings(clean, ch)
        row = job_row_values(_job_row(log, ch, findings, shown, log_hash, size, mtime))
        row["path_hash"] = path_hash(path)  # of the name's bytes: the display form may differ
        row["st_dev"], row["st_ino"] = dev, ino
        fc = file_columns(log)
        row["top_file"] = top_file(fc)
        return ("ok", row, FilePart.of(log_hash, fc))
    except DarshanOpenError as e:  # `cannot read PATH: REASON`: the row names the path, its reason the action
        reason = str(e).replace(f"cannot read {path}: ", "cannot read: ", 1)
    except (DarshanLogError, UserError) as e:
        reason = str(e)
    except OSError as e:
        reason = f"cannot read: {os_error_reason(e, path)}"
    except Exception as e:  # a reader bug must not stop the batch; the reason says what happened
        reason = f"unexpected error while reading: {type(e).__name__}: {e}"
    for prefix in (f"{path}: ", f"cannot read {path}: "):
        if reason.startswith(prefix):
            reason = reason[len(prefix):]
    return ("failed", {"path": shown, "path_hash": path_hash(path), "log_hash": log_hash, "size_bytes": size,
                       "mtime_ns": mtime, "reason": display_path(reason)})


@dataclass(frozen=True)
class FilePart:
    """One log's rows of the per-file table (stats.job.file_columns) as they cross from a pool's worker to the
    parent: each text column a list, each number column a numpy array (pickled as its bytes). The parent makes
    one Arrow table of a batch's parts (`file_table`): a table per log cost the worker ~0.15 ms (twenty small
    Arrow arrays and an IPC stream) and the parent its reading back, ~4 % of an ingest (issue 40)."""

    log_hash: str
    rows: int
    columns: dict

    @classmethod
    def of(cls, log_hash: str, fc: dict) -> FilePart:
        # lazy: the statistics (pandas), loaded only when a log is read
        from ioweather.stats.job import FILE_TABLE_COLUMNS

        return cls(log_hash, len(fc["id"]), {k: fc[k].tolist() if fc[k].dtype == object else fc[k]
                                             for k in FILE_TABLE_COLUMNS})


def file_table(parts: list[FilePart]) -> pa.Table:
    """The per-file Arrow table of `parts`, in their order: each column one Arrow array made of the parts' values
    (a text column's type inferred from all of them, as Arrow promotes one table's per log)."""
    # lazy: numpy, loaded only when a log is read
    import numpy as np
    # lazy: pyarrow, loaded only when a log is read
    import pyarrow as pa
    # lazy: the statistics (pandas), loaded only when a log is read
    from ioweather.stats.job import FILE_TABLE_COLUMNS

    types = _part_types()

    def values(k: str):
        got = [p.columns[k] for p in parts]
        if all(isinstance(v, list) for v in got):
            return list(chain.from_iterable(got))
        return np.concatenate(got) if len(got) > 1 else got[0]

    hashes = np.repeat(np.array([p.log_hash for p in parts], object), [p.rows for p in parts])
    return pa.table({"log_hash": pa.array(hashes, pa.string()),
                     "module": pa.array(values("module"), pa.string()),
                     "record_id": pa.array(values("id"), pa.uint64()),
                     "name": pa.array(values("name"), pa.string()),
                     **{k: pa.array(values(k), types.get(k))
                        for k in FILE_TABLE_COLUMNS if k not in ("module", "id", "name")}})


def _extract_in_pool(path: str) -> tuple:
    """`extract` in a pool's worker: the per-file rows cross to the parent as a `FilePart`, made a table there
    with the rest of their batch (`Ingest.flush`)."""
    return _extract(path)


def _init_worker(known: frozenset[str], cores_per_node: int | None, scan: Scan | None = None) -> None:
    global _KNOWN_HASHES, _CORES_PER_NODE, _SCAN
    _KNOWN_HASHES, _CORES_PER_NODE, _SCAN = known, cores_per_node, scan


def _start_worker(parent_pid: int, initializer, initargs) -> None:
    die_with_parent(parent_pid)
    # Ctrl-C reaches the whole process group: the parent stops the workers itself.
    child_defaults()
    _keep_freed_memory()
    if initializer is not None:
        initializer(*initargs)


#: glibc's mallopt parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: A worker's allocations up to this size come from its heap, and this much freed memory at the heap's top is kept
_HEAP_MMAP_BYTES, _HEAP_KEEP_BYTES = 16 << 20, 32 << 20


def _keep_freed_memory() -> None:
    """In a pool's worker (glibc; elsewhere a no-op): a log's arrays above 128 KiB (a large log's counters and
    names, its inflated regions) taken from the heap, and the memory freed kept for the next log's, not mapped and
    unmapped for each: every page of a fresh mapping is a fault the kernel zeroes. glibc raises its mapping threshold
    as mappings are freed, but trims the heap's top back to twice that, so the next log's arrays were mapped again:
    ~63,000 faults in 900 logs of the fleet benchmark, 5-9 % of the worker's CPU (issue 40). Costs a worker up to
    _HEAP_KEEP_BYTES more resident memory, of what it used already."""
    # lazy: ctypes, only in a pool's worker
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return
    mallopt(_M_MMAP_THRESHOLD, _HEAP_MMAP_BYTES)
    mallopt(_M_TRIM_THRESHOLD, _HEAP_KEEP_BYTES)


def _kill_workers(ex: ProcessPoolExecutor) -> None:
    """Stop a pool's workers now, not after the tasks queued to them (shutdown() would wait for those)."""
    for proc in list((getattr(ex, "_processes", None) or {}).values()):
        try:
            proc.kill()
        except (OSError, ValueError):  # already gone or closed
            pass
    thread = getattr(ex, "_executor_manager_thread", None)  # taken first: shutdown() sets it to None
    ex.shutdown(wait=False, cancel_futures=True)
    # shutdown() has woken the pool's manager thread, which now closes its wake-up pipe; CPython 3.11's exit
    # handler (concurrent.futures.process._python_exit) wakes every pool's thread again through that pipe without
    # the pool's lock, so the two raced and an interrupted ingest printed "Exception ignored ... send_bytes" after
    # its one line. Out of the handler's registry, the thread is still joined at exit as any non-daemon thread.
    if thread is not None:
        # lazy: as run_pool's
        from concurrent.futures import process as futures_process

        getattr(futures_process, "_threads_wakeups", {}).pop(thread, None)


def _pool(ctx, workers: int, initializer, initargs) -> ProcessPoolExecutor:
    # lazy: as run_pool's
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_start_worker,
                               initargs=(os.getpid(), initializer, initargs))


class Interrupted(UserError):
    """Ctrl-C or SIGTERM during an ingest; what was read before is stored."""

    def __init__(self, signum: int, counts: dict):
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}: {counts['ingested']} logs stored, {counts['failed']} failures "
                         "recorded; run the same command again to go on")
        self.exit_code = 128 + signum


class _Interrupts:
    """SIGINT and SIGTERM raise `Stop` (signals.Interrupted) in the main thread, except during `deferred()` (a store
    write), after which they are raised: a batch is written whole or not at all.

    A flag, not a blocked signal mask: the pool's threads would take a signal the main thread blocks.
    """

    def __init__(self):
        self.depth, self.pending, self.restore = 0, None, lambda: None

    def _handler(self, signum, frame):
        if self.depth:
            self.pending = signum
        else:
            raise Stop(signum)

    def __enter__(self):
        self.restore = install(self._handler)
        return self

    def __exit__(self, *exc):
        self.restore()

    @contextmanager
    def deferred(self):
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
        if not self.depth and self.pending is not None:
            signum, self.pending = self.pending, None
            raise Stop(signum)


def _each(fn: Callable, items: list) -> list:
    """`fn` of each of `items`, in one task of a pool."""
    return [fn(item) for item in items]


def _chunks(items: list, per_task: int, workers: int) -> list[list]:
    """`items` in tasks of `per_task`, the last few smaller: the workers then end within a log or two of each
    other, not a whole task (16 logs, ~0.1 s) apart while a core idles (issue 40)."""
    tail = min(len(items), 2 * workers * per_task) if per_task > 1 else 0
    head, rest = items[:len(items) - tail], items[len(items) - tail:]
    small = max(1, per_task // 4)
    return ([head[i:i + per_task] for i in range(0, len(head), per_task)]
            + [rest[i:i + small] for i in range(0, len(rest), small)])


def run_pool(fn: Callable, items: list, workers: int, on_result: Callable[[object, object], None],
             on_crash: Callable[[object, str], None], initializer=None, initargs=(), per_task: int = 1,
             started: Callable[[], None] | None = None) -> None:
    """Apply `fn` to every item in `workers` processes, calling `on_result(item, result)` as results come.

    `per_task` items go to a worker in one task: each task is a pickled call, a pickled answer and a few
    thread hand-offs in the parent (~0.5 ms of the parent's CPU a task on 2 loaded cores, issue 40).
    `started()` runs once the workers have their first tasks, before any result is handed on: the parent's
    own preparations then run beside them.
    With one worker the results come in the items' order, whatever the machine's load.
    A worker that dies takes the pool down; the items then in flight are re-run
    one at a time in a fresh 1-worker pool, and an item that kills its worker
    again is reported through `on_crash(item, reason)`.
    """
    # lazy: the pool's modules (~10 ms), loaded only when logs are read: `jobs summary` and `job` import this module
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    ctx = mp.get_context("fork")
    pending = _chunks(items, per_task, workers)[::-1]
    window = max(2, workers * max(2, 4 // per_task))

    def begin():
        nonlocal started
        if started is not None:
            start, started = started, None
            start()

    while pending:
        suspects: list = []
        with _pool(ctx, workers, initializer, initargs) as ex:
            inflight = {}
            try:
                while pending or inflight:
                    while pending and len(inflight) < window:
                        # popped once submitted: a submit to a pool that broke meanwhile raises, and the
                        # chunk must then stay pending, not be lost
                        fut = ex.submit(_each, fn, pending[-1])
                        inflight[fut] = pending.pop()
                    begin()
                    done, _ = wait(inflight, return_when=FIRST_COMPLETED)
                    # in the order submitted, not the set's (by the futures' addresses): when several are done
                    # by the time the parent looks (a loaded machine), the first of two logs with the same
                    # content must still be the one stored, its path the row's (one worker: always the same)
                    for fut in [f for f in inflight if f in done]:
                        res = fut.result()  # raises BrokenProcessPool while the chunk is still in flight
                        for item, one in zip(inflight.pop(fut), res):
                            on_result(item, one)
            except BrokenProcessPool:
                suspects = [item for chunk in inflight.values() for item in chunk]
                if not suspects:  # broke before taking a task: the next one is suspect, so each round ends one
                    suspects = pending.pop()
            except BaseException:  # interrupted, or on_result failed: no worker may run on
                _kill_workers(ex)
                raise
        # the pool can break during its first submits, before `begin` above: the re-runs below hand results on
        begin()
        for item in suspects:
            with _pool(ctx, 1, initializer, initargs) as one:
                try:
                    res = one.submit(fn, item).result()
                except BrokenProcessPool:
                    on_crash(item, _crash_reason())
                    continue
                except BaseException:
                    _kill_workers(one)
                    raise
            on_result(item, res)


class Ingest:
    """Collects results and writes them to the store in batches (every `batch` logs or `every_s` seconds).

    A batch costs ~20 ms of the parent's CPU whatever its size (a Parquet part, five SQL statements): every
    2 s, 44 batches were a quarter of the parent's work on 1,000 logs (issue 40). An interrupted run stores
    what it read (`_ingest`'s `finally`); a killed one reads again at most `every_s` of logs."""

    def __init__(self, store, parquet_dir: Path, batch: int = 256, every_s: float = 10.0, interrupts=None):
        self.store, self.parquet_dir = store, parquet_dir
        self.interrupts = interrupts or _Interrupts()
        self.found_known: list[dict] = []
        self.batch, self.every_s = batch, every_s
        self.rows: list[dict] = []
        self.tables: list[pa.Table | FilePart] = []
        self.failures: list[dict] = []
        self.last = time.monotonic()
        self.counts = {"ingested": 0, "refreshed": 0, "failed": 0, "duplicates": 0, "skipped": 0}
        self.batch_hashes: set[str] = set()
        #: `FilePart`s in self.tables not yet made an Arrow table
        self.unmade = 0
        #: files whose content is stored or found stored, remembered after each batch so the next ingest skips them
        self.seen: list[dict] = []

    def add(self, result: tuple) -> None:
        kind = result[0]
        if kind in ("ok", "dup"):
            self.seen.append(result[1])
        if kind == "ok":
            row = result[1]
            if row["log_hash"] in self.batch_hashes:  # same content twice in this run
                self.counts["duplicates"] += 1
            else:
                self.batch_hashes.add(row["log_hash"])
                self.rows.append(row)
                self.tables.append(result[2])  # a pa.Table (Dask) or a FilePart (`_extract_in_pool`)
                self.unmade += 1
                if self.unmade >= PARTS_PER_TABLE:
                    # Arrow holds them in a third of the memory of their Python lists (the peak RSS)
                    self.tables = self._made_tables()
                self.counts["ingested"] += 1
        elif kind == "dup":
            self.counts["duplicates"] += 1
            self.found_known.append(result[1])
        else:
            self.failures.append(result[1])
            self.counts["failed"] += 1
        if len(self.rows) + len(self.failures) >= self.batch or time.monotonic() - self.last > self.every_s:
            self.flush()

    def flush(self) -> None:
        # lazy: SQLAlchemy via store.jobs, imported once the workers run (`_ingest`)
        from ioweather.store.jobs import relocate, remember, write_batch

        with self.interrupts.deferred():
            if self.rows or self.failures:
                # stored by a concurrent ingest since we looked: found present, not ingested by us; stored but
                # not current (other rules, or columns added since): refreshed in place, not ingested either
                tables = self._made_tables()
                present, refreshed = write_batch(self.store, self.parquet_dir, self.rows, tables, self.failures)
                self.counts["ingested"] -= len(present) + len(refreshed)
                self.counts["duplicates"] += len(present)
                self.counts["refreshed"] += len(refreshed)
            if self.found_known:
                relocate(self.store, self.found_known)
            if self.seen:
                remember(self.store, self.seen)
            self.rows, self.tables, self.failures, self.found_known, self.seen = [], [], [], [], []
            self.unmade = 0
        self.last = time.monotonic()

    def _made_tables(self) -> list[pa.Table]:
        """self.tables as Arrow tables (`_tables`). A log whose rows Arrow refuses (a reader's value no column can
        hold) is a failed row, its job row and its "seen" mark taken back, and the batch's other logs are kept:
        the worker that made its table before caught this as any reader error (`_extract`)."""
        try:
            made = _tables(self.tables)
        except Exception:  # which part: each made alone
            made = []
            for part in self.tables:
                try:
                    made.extend(_tables([part]))
                except Exception as e:
                    self._failed_part(part.log_hash, f"unexpected error while storing its files' rows: "
                                                     f"{type(e).__name__}: {e}")
        self.unmade = 0
        return made

    def _failed_part(self, log_hash: str, reason: str) -> None:
        row = next(r for r in self.rows if r["log_hash"] == log_hash)
        self.rows = [r for r in self.rows if r is not row]
        self.seen = [r for r in self.seen if r is not row]
        self.batch_hashes.discard(log_hash)
        self.failures.append({"path": row["path"], "path_hash": row["path_hash"], "log_hash": log_hash,
                              "size_bytes": row["size_bytes"], "mtime_ns": row["mtime_ns"], "reason": reason})
        self.counts["ingested"] -= 1
        self.counts["failed"] += 1


#: `FilePart`s made one Arrow table while a batch is collected, not only at its end (the parent's memory)
PARTS_PER_TABLE = 64


def _tables(parts: list) -> list[pa.Table]:
    """Arrow tables of a batch's per-file rows: each run of `FilePart`s (rows without any left out) one table."""
    out, run = [], []
    for p in parts:
        if isinstance(p, FilePart):
            if p.rows:
                run.append(p)
            continue
        if run:
            out.append(file_table(run))
            run = []
        out.append(p)
    if run:
        out.append(file_table(run))
    return out


def ingest(settings, paths: list[str], *, workers: int, dask_address: str | None = None,
           cores_per_node: int | None = None, progress_cb=None, follow_symlinks: bool = False,
           dask_per_task: int | str = "auto") -> IngestCounts:
    """Ingest `paths` (files and directories); returns the counts. `progress_cb(n_done, n_total)`.

    With `dask_address` (a `--dask` value, services/runtime/distributed.py) the logs are read on a Dask
    cluster, connected to before the store is opened: a cluster that cannot be reached leaves no store.
    `dask_per_task`: logs per Dask task (map_unordered's per_task; benchmarks/bench_dask.py compares 1).
    """
    if not dask_address:
        return _ingest(settings, paths, workers=workers, client=None, cores_per_node=cores_per_node,
                       progress_cb=progress_cb, follow_symlinks=follow_symlinks)
    # lazy: the Dask door, loaded only with --dask
    from ioweather.services.runtime.distributed import connect

    with connect(dask_address) as client:
        return _ingest(settings, paths, workers=workers, client=client, cores_per_node=cores_per_node,
                       progress_cb=progress_cb, follow_symlinks=follow_symlinks, dask_per_task=dask_per_task)


def _ingest(settings, paths: list[str], *, workers: int, client, cores_per_node: int | None = None,
            progress_cb=None, follow_symlinks: bool = False, dask_per_task: int | str = "auto") -> IngestCounts:
    """`ingest`, on `client` (a Dask client) when given: `IngestCounts` (skipped: `unchanged_file`).
    Raises `Interrupted` on Ctrl-C or SIGTERM, after storing what was read.
    """
    store = None
    # the local pool is forked before SQLAlchemy is imported where sqlite3 can read what the store has seen
    seen = None if client is not None else _light_seen(settings)
    if seen is None:
        store = _open(settings)
        # lazy: SQLAlchemy, as `_open`
        from ioweather.store import jobs as jobs_store

        seen = (*jobs_store.seen(store), jobs_store.seen_stamps(store))
    known_hashes, known_paths, seen_files = seen
    todo, skipped, links = [], 0, []
    for p in find_logs(paths, follow_symlinks=follow_symlinks, links=links):
        if unchanged_file(p, seen_files, known_hashes, known_paths):
            skipped += 1
            continue
        todo.append(p)
    if todo:
        _load_reader()  # before forking: the workers inherit it
        if client is None:
            # only here: its import hooks are process-wide for a moment, and a Dask client has threads of its own
            _arrow_without_pandas()
    interrupts = _Interrupts()
    sink = Ingest(store, settings.parquet_dir, interrupts=interrupts)
    sink.counts["skipped"] = skipped
    sink.counts["symlinks_skipped"] = len(links)
    done = [0]

    def on_result(item, res):
        sink.add(res)
        done[0] += 1
        if progress_cb:
            progress_cb(done[0], len(todo))

    def on_crash(item, reason):
        size, mtime = _stamp(item) or (0, 0)
        on_result(item, ("failed", {"path": display_path(item), "path_hash": path_hash(item),
                                    "log_hash": None,
                                    "size_bytes": size, "mtime_ns": mtime, "reason": reason}))

    def open_sink():
        if sink.store is None:
            sink.store = _open(settings)

    known = frozenset(known_hashes)
    scan = Scan.of(paths, follow_symlinks)
    with interrupts:
        try:
            try:
                if client is not None:
                    # lazy: as `ingest`'s
                    from ioweather.services.runtime.distributed import map_unordered

                    # a log is ~70 ms of work, a task ~8 ms of the scheduler's on 2 shared cores: batched
                    map_unordered(client, extract, todo, on_result, on_crash, shared=("known",),
                                  per_task=dask_per_task, crash_reason=_crash_reason(),
                                  kwargs={"known": known, "cores_per_node": cores_per_node, "scan": scan})
                elif todo:
                    # one log or --workers 1 too: the reader can die on a damaged log, and only in a
                    # worker is its death one failed log rather than the end of the run (issue 32 item 2)
                    run_pool(_extract_in_pool, todo, min(workers, len(todo)), on_result, on_crash,
                             initializer=_init_worker, initargs=(known, cores_per_node, scan),
                             per_task=_per_task(len(todo), workers), started=open_sink)
                open_sink()
            finally:
                if sink.store is not None:
                    sink.flush()  # what was read before an interruption is kept
        except KeyboardInterrupt as e:
            raise Interrupted(getattr(e, "signum", signal.SIGINT), sink.counts) from None
    if sink.counts.get("ingested") or sink.counts.get("refreshed"):
        # lazy: the weather (pandas), loaded only when jobs were stored or refreshed
        from ioweather.services.jobs.weather import after_import

        after_import(sink.store, client=client)  # the new jobs' weather and verdicts, for the Jobs list (issue 13)
    return IngestCounts(**sink.counts, found=len(todo) + skipped)


def _open(settings):
    """The store, its darshan tables made or upgraded, Parquet parts no job row names removed."""
    # lazy: SQLAlchemy via store.jobs and store.db (~0.3 s with the store's opening): after the fork when it can be
    from ioweather.store import jobs as jobs_store, open_store

    store = open_store(settings)
    store.require(jobs_store.COMPONENT)
    jobs_store.remove_orphan_parts(store, settings.parquet_dir)
    return store


def _light_seen(settings) -> tuple | None:
    """store.jobs' `seen` and `seen_stamps` of the store read through sqlite3 (nothing seen when there is no
    store yet), or None when only the store's usual door can tell (a server, another schema version)."""
    if settings.db_url is not None:
        return None
    try:
        store = sqlite_reads.open_light(settings)
    except sqlite_reads.Fallback:
        return None
    if store is None:
        return set(), {}, {}
    try:
        return (*sqlite_reads.seen(store), sqlite_reads.seen_stamps(store))
    except sqlite_reads.Fallback:
        return None
    finally:
        store.dispose()


def _load_reader() -> None:
    """Import what reading a log takes: libdarshan-util's binding, the reader, the statistics, pyarrow (no
    pandas: tests/test_jobs_ingest_no_pandas.py)."""
    # lazy: libdarshan-util's binding (CFFI), loaded only when a log is to be read (a re-ingest of an
    # unchanged archive reads none)
    import ioweather.sources.darshan_cffi  # noqa: F401
    # lazy: pyarrow, as above
    import pyarrow  # noqa: F401
    # lazy: the reader, as above
    import ioweather.sources.darshan_log  # noqa: F401
    # lazy: the statistics, as above
    import ioweather.stats.findings  # noqa: F401
    # lazy: the statistics, as above
    import ioweather.stats.job_files  # noqa: F401


class _ArrowTakesPandasBack:
    """An import hook until pandas has run: then pyarrow is told to take it back (`_arrow_without_pandas`), so a
    pandas object is never handed to a pyarrow that thinks pandas absent. It stays in sys.meta_path until pandas'
    own code has run (a `find_spec("pandas")` that imports nothing, a failed import, does not end it), and a
    pyarrow that will not take pandas back (its own version check) never makes the import of pandas fail."""

    def find_spec(self, name, path=None, target=None):
        if name != "pandas":
            return None
        spec = None
        for finder in list(sys.meta_path):  # the other finders' spec (this one stays until pandas has run)
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            try:
                # lazy: pyarrow, imported already (`_arrow_without_pandas`)
                import pyarrow

                # a failed import is retried by any of pyarrow's checks that need pandas: this one
                pyarrow.lib._pandas_api.pd  # noqa: B018
            except ImportError:  # pyarrow refuses this pandas (as it would have by itself): pandas stays imported
                pass

        spec.loader.exec_module = exec_module
        return spec


def _arrow_without_pandas() -> None:
    """Let pyarrow find pandas absent while nothing has imported it: pyarrow's first `pa.array` or `pa.table`
    imports pandas (~0.55 s of the parent's CPU beside the workers, issue 40), only to check whether its input
    is a pandas object, which no input of the ingest is. With pandas kept out of that first check, pyarrow
    records it as missing and asks again wherever it needs it (`to_pandas`...); `_ArrowTakesPandasBack` makes it
    ask as soon as anything imports pandas, so a pandas object never meets a pyarrow without it."""
    if "pandas" in sys.modules or any(isinstance(f, _ArrowTakesPandasBack) for f in sys.meta_path):
        return
    # lazy: pyarrow, as `_load_reader`
    import pyarrow

    if not hasattr(getattr(pyarrow, "lib", None), "_pandas_api"):
        return  # a pyarrow whose pandas check lives elsewhere: no hooks that could not give pandas back to it
    sys.meta_path.insert(0, _ArrowTakesPandasBack())
    sys.meta_path.insert(0, _NoPandas)
    try:
        pyarrow.array([])
    finally:
        sys.meta_path.remove(_NoPandas)


class _NoPandas:
    """An ImportError for pyarrow's own `import pandas` (its compiled import takes a None in sys.modules as the
    module)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas":
            raise ModuleNotFoundError("pandas kept out of pyarrow's first check", name="pandas")


def _per_task(n: int, workers: int) -> int:
    """Logs per pool task: up to 16 (the pool's per-task cost, ~1 ms of the parent's CPU, a sixteenth per log;
    ~0.2 s of the worker's at most, the wait at the end of a run), fewer when there are few logs, so that
    every worker gets four tasks at least."""
    return max(1, min(16, n // (4 * max(workers, 1))))


def _stamp(p: str) -> tuple[int, int] | None:
    """(size, mtime_ns) of `p`, None when it cannot be stat'ed (gone, unreadable directory)."""
    try:
        st = os.stat(p)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))

