"""Imports that replace or roll back as a whole, whatever stops them (Ctrl-C, SIGTERM, kill -9, a full disk).

An import of the same source twice must not double the bytes, and an import stopped half way must
not leave half a history beside the old one. Each import writes its files under a writer name
derived from the source (`lmt-<hash>`, `csv-<hash>`, ... from ingest.source_writer) plus a run id:

    fs=<name>/date=<D>/<writer>-<run>-<random>.parquet

and switches in one step when it completes: it replaces the source's marker

    fs=<name>/_imports/<writer>.json     {"writer": ..., "runs": [<run>], "files": [<paths in fs=<name>/>]}

(write beside, os.replace). Readers (`telemetry_layout.data_files`) count a writer's files only
when the marker names their run, so before the switch they see the old import and after it the
new one, never both. Then the old run's files are unlinked. Files of a run that never switched (a
killed import) or that a switch replaced (killed before the unlink) are leftovers: the next import
of that source removes them, and so does `ioweather store check --repair` (store/check.py).

One import of a source at a time: an import holds an flock on `_imports/<writer>.lock` (released
by the kernel however the process ends), so leftovers are never mistaken for an import under way.
Sources imported before markers existed have none: at their next import the runs present are
adopted as the committed ones before anything new is written.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ioweather.config import Settings
from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.files import write_atomic
from ioweather.store import telemetry_layout as layout
from ioweather.units import ns_to_iso


def lock_path(base: Path, writer: str) -> Path:
    return base / layout.IMPORTS_DIR / f"{writer}.lock"


def _run_of(name: str, writer: str) -> str:
    return name[len(writer) + 1:].split("-", 1)[0]


def running(base: Path, writer: str) -> bool:
    """Whether an import of `writer` holds its lock now (in any process, this one included)."""
    try:
        fd = os.open(lock_path(base, writer), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # also drops the lock taken for the test


def try_lock(base: Path, writer: str) -> int | None:
    """The import lock of `writer`, taken without waiting (for a cleaner that changes its files and
    marker: `store prune`); None when an import of that source runs now. Never through a link."""
    try:
        fd = os.open(lock_path(base, writer), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def unlock(fd: int) -> None:
    os.close(fd)


def leftovers(base: Path, writers=None, skip_running: bool = True) -> list[Path]:
    """Files no reader counts and no import is writing: data files of runs the markers do not name
    (with their rollups) and temporary files of stopped imports. `writers` limits the search."""
    markers = layout.import_markers(base)
    out = []
    for writer, marker in markers.items():
        if (writers is not None and writer not in writers) or (skip_running and running(base, writer)):
            continue
        runs = set(marker.get("runs", []))
        out += [p for p in base.glob(f"date=*/{writer}-*.parquet") if _run_of(p.name, writer) not in runs]
        # _rollup/ and the target rollups' _targets*/ (a kill -9 during a re-import leaves them there)
        out += list(base.glob(f"date=*/.{writer}-*.tmp")) + list(base.glob(f"date=*/_*/.{writer}-*.tmp"))
    return sorted(out)


def remove_leftovers(paths) -> int:
    """Unlink what `leftovers` found (rollups before data files, as everywhere)."""
    data = [p for p in paths if p.suffix == ".parquet"]
    temps = [p for p in paths if p.suffix == ".tmp"]
    return layout.remove_files(data) + sum(layout.store_tree(p).unlink(p) for p in temps)


def drop_missing(base: Path, writer: str) -> int:
    """Rewrite `writer`'s marker without the files it lists that are gone (a prune or a by-hand removal
    before markers were kept in step); how many entries went. Under the source's lock: a running
    import's marker is its own."""
    fd = try_lock(base, writer)
    if fd is None:
        raise StoreError(f"an import of {writer} into {base} is running; check again when it is done")
    try:
        marker = layout.import_markers(base).get(writer, {})
        files = marker.get("files", [])
        kept = [base / rel for rel in files if (base / rel).exists()]
        if len(kept) != len(files):
            write_marker(base, writer, list(marker.get("runs", [])), kept)
        return len(files) - len(kept)
    finally:
        unlock(fd)


def write_marker(base: Path, writer: str, runs: list[str], files: list[Path]) -> None:
    """Switch the source's committed runs in one step, through the one atomic writer (a random
    O_EXCL|O_NOFOLLOW temporary, fsync, rename): a fixed `.WRITER.json.tmp` opened with open() wrote
    the marker into whatever a link planted there pointed at."""
    d = base / layout.IMPORTS_DIR
    body = {"writer": writer, "runs": sorted(runs), "files": sorted(str(Path(f).relative_to(base)) for f in files)}
    try:
        write_atomic(d / f"{writer}.json", json.dumps(body))
    except UserError as e:
        raise StoreError(str(e)) from None


@dataclass
class ImportRun:
    """Writes the rows of one import; `commit` replaces earlier imports of the same source."""

    settings: Settings
    fs: str
    writer: str
    run: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    paths: list = field(default_factory=list)
    rows: int = 0
    missing: int = 0
    t_min: int | None = None
    t_max: int | None = None
    targets: set = field(default_factory=set)
    metrics: dict = field(default_factory=dict)
    buffer_rows: int = 2_000_000
    _buffer: list = field(default_factory=list)
    _buffered: int = 0
    _lock: int | None = None

    @property
    def base(self) -> Path:
        return layout.fs_dir(self.settings, self.fs)

    def write(self, frame: pd.DataFrame) -> int:
        """Queue rows; they are written in files of up to `buffer_rows` rows (few, large files
        scan fastest), at the latest by `finish`."""
        if frame.empty:
            return 0
        self._buffer.append(frame)
        self._buffered += len(frame)
        if self._buffered >= self.buffer_rows:
            self._flush()
        return len(frame)

    def _start(self) -> None:
        """Take the source's lock, adopt a marker-less earlier import, remove leftovers of killed runs."""
        if self._lock is not None:
            return
        d = self.base / layout.IMPORTS_DIR
        try:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(lock_path(self.base, self.writer), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise from_os_error(d, e, "write", cls=StoreError) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserError(f"another import of the same source into file system {self.fs!r} is running") from None
        self._lock = fd
        if self.writer not in layout.import_markers(self.base):
            old = layout.writer_files(self.settings, self.fs, self.writer + "-")
            if old:
                write_marker(self.base, self.writer, sorted({_run_of(p.name, self.writer) for p in old}), old)
            else:  # an empty marker names no run; it needs no free block, so a full disk fails later, on the data
                try:
                    os.close(os.open(d / f"{self.writer}.json", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
                except OSError as e:
                    raise from_os_error(d / f"{self.writer}.json", e, "write", cls=StoreError) from None
        remove_leftovers(leftovers(self.base, {self.writer}, skip_running=False))

    def _release(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _flush(self) -> None:
        if not self._buffer:
            return
        self._start()
        frame = pd.concat(self._buffer, ignore_index=True) if len(self._buffer) > 1 else self._buffer[0]
        self._buffer, self._buffered = [], 0
        n = layout.write_rows(self.settings, self.fs, frame, writer=f"{self.writer}-{self.run}", paths_out=self.paths)
        self.rows += n
        self.missing += int(frame["value"].isna().sum())
        tmin, tmax = int(frame["time_ns"].min()), int(frame["time_ns"].max())
        self.t_min = tmin if self.t_min is None else min(self.t_min, tmin)
        self.t_max = tmax if self.t_max is None else max(self.t_max, tmax)
        self.targets.update(frame["target"].unique())
        for metric, count in frame["metric"].value_counts().items():
            self.metrics[metric] = self.metrics.get(metric, 0) + int(count)

    def finish(self) -> None:
        self._flush()

    def _committed(self) -> bool:
        return layout.import_markers(self.base).get(self.writer, {}).get("runs") == [self.run]

    def _remove_older(self) -> int:
        return remove_leftovers(leftovers(self.base, {self.writer}, skip_running=False))

    def commit(self) -> int:
        """Switch readers to this run's files, then remove the files of earlier runs; returns how many."""
        self._flush()
        self._start()
        # The lock is released only on success: a stop inside the switch or the removal leaves it held, so
        # that `rollback` still sees this import as under way and removes its files (or finishes the commit).
        # A `finally` here released it first, and a SIGTERM during the marker's fsync then left the whole new
        # run on disk beside the old one (uncounted, but there until the next import).
        write_marker(self.base, self.writer, [self.run], self.paths)
        n = self._remove_older()
        self._release()
        return n

    def rollback(self) -> int:
        """Remove this run's files; after the switch (stopped while removing the old files), finish
        the commit instead."""
        self._buffer, self._buffered = [], 0
        if self._lock is None:
            return 0
        try:
            if self._committed():
                self._remove_older()
                return 0
            n = layout.remove_files(self.paths)
            self.paths.clear()
            self._remove_older()  # with the leftovers of earlier killed runs: nothing of them counts
            return n
        finally:
            self._release()

    def summary(self) -> dict:
        return {"fs": self.fs, "rows": self.rows, "missing_values": self.missing,
                "start": ns_to_iso(self.t_min) if self.t_min is not None else None,
                "end": ns_to_iso(self.t_max) if self.t_max is not None else None,
                "targets": len(self.targets), "metrics": dict(sorted(self.metrics.items())),
                "files": len(self.paths)}

