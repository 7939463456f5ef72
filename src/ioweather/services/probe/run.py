"""The probe as a daemon (METHODS.md section 1): `probe init`, `probe run` and `watch`'s probe.

sources/probe.py measures one period; here the periods run on services/runtime/daemon.py's loop, the
samples go to the store from its write-behind buffer, completed days are archived hourly, and
`watch` runs the same in a background thread next to its server.

One process probes one directory or several (one per file system, issue 17 item 6): each is its
own target in the store (a run), with its own thread, ticker, operation deadline, schedule slot
(the targets' periods start interval/N apart) and bounded write-behind buffer, so that a hung mount
times out and skips its own periods while the others keep their grid. Disk use stays bounded per
target: each directory holds its fixed data file and pool (sources/probe.py).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ioweather import signals
from ioweather.config import load_fs_map
from ioweather.encoding import Answer
from ioweather.errors import UserError
from ioweather.services.probe import pieces as probe_pieces
from ioweather.services.runtime.daemon import (
    Ticker,
    WriteBehind,
    run_in_thread,
    start_retention,
)
from ioweather.services.runtime.fs_names import fs_name_of
from ioweather.services.probe.cache import DEFAULT_BASELINE_S
from ioweather.sources.probe import (
    META_NAME,
    Probe,
    ProbeOptions,
    init_probe_dir,
    mount_point,
    physical_memory_bytes,
)
from ioweather.store import open_store, probe as probe_store
from ioweather.store.probe_aggregates import sample_range
from ioweather.store.probe_archive import archive_completed_days, enabled
from ioweather.views.output import stderr

#: Samples that wait in memory for the store, at most: 12 h at 1 Hz and six ops a period, ~50 MB.
BUFFER_ROWS = 12 * 3600 * 6
#: How long a stop waits for the store to take the buffered samples (SQLite's busy timeout).
FINAL_FLUSH_S = 30.0
#: How often completed days of samples move to Parquet.
ARCHIVE_EVERY_S = 3600.0


@dataclass(frozen=True)
class ProbeInit(Answer):
    """`probe init`'s answer: the probe directory, its data file's and small files' sizes (bytes), the pool's
    file count, this node's memory and whether the data file exceeds it (else reads may hit the page cache)."""

    directory: str
    file_bytes: int
    pool_files: int
    small_bytes: int
    memory_bytes: int
    file_exceeds_memory: bool


def init_probe(directory: Path, file_bytes: int, pool_files: int, *, block: int,
               on_progress: Callable[[int, int], None] | None = None) -> ProbeInit:
    """Create (or find, when it matches) the probe directory."""
    layout = init_probe_dir(directory, file_bytes, pool_files, block=block, on_progress=on_progress)
    mem = physical_memory_bytes()
    return ProbeInit(directory=str(directory), file_bytes=layout.file_bytes, pool_files=layout.pool_files,
                     small_bytes=layout.small_bytes, memory_bytes=mem, file_exceeds_memory=layout.file_bytes > mem)


class ProbeDaemon:
    """A probe of one directory, run period after period until stopped, its samples handed to
    `sink(rows)` from the write-behind buffer. Holds the directory from construction to close()."""

    def __init__(self, path: Path, options: ProbeOptions, sink: Callable[[list[tuple]], None],
                 log: Callable[[str], None] = lambda m: None, stop: threading.Event | None = None):
        self.probe = Probe(path, options, log)
        if stop is not None:
            self.probe.stop_event = stop
        self.opt, self.sink, self.log = options, sink, log
        self.ticker = Ticker(options.interval_s, duration_s=options.duration_s, stop=self.probe.stop_event)
        self.buffer: WriteBehind | None = None

    @property
    def layout(self):
        return self.probe.layout

    @property
    def seed(self) -> int:
        return self.probe.seed

    @property
    def stop_event(self) -> threading.Event:
        return self.probe.stop_event

    @property
    def periods(self) -> int:
        return self.ticker.ticks

    @property
    def missed_periods(self) -> int:
        return self.ticker.missed

    @property
    def samples(self) -> int:
        """Samples the sink took."""
        return self.buffer.stored if self.buffer else 0

    @property
    def dropped_samples(self) -> int:
        """Samples dropped because the store did not take them and the buffer was full."""
        return self.buffer.dropped if self.buffer else 0

    def stop(self, *_) -> None:
        self.probe.stop()

    def run(self, install_signals: bool = True) -> None:
        """Probe until stopped (or --duration); raises UserError if the last samples could not be stored."""
        restore = signals.install(signals.set_event(self.stop_event), signals.STOP if install_signals else ())
        self.buffer = WriteBehind(self.sink, self.opt.flush_s, self.opt.buffer_rows or BUFFER_ROWS, self.log,
                                  name="probe-flush")
        try:
            self.ticker.run(lambda _t: self.buffer.add(self.probe.run_period()))
        finally:
            unstored = self.buffer.close(FINAL_FLUSH_S)
            restore()  # after the last flush: a second Ctrl-C during it is not a traceback
            if unstored:
                self.log(f"{unstored} samples were not stored: the store did not take them within "
                         f"{FINAL_FLUSH_S:g} s of the stop ({self.buffer.error}); they are lost")
        if unstored:
            raise UserError(f"{unstored} samples lost: the store did not take them within {FINAL_FLUSH_S:g} s "
                            f"({self.buffer.error})")

    def close(self) -> None:
        self.probe.close()


def _start_archiver(store, stop: threading.Event, log: Callable[[str], None]) -> None:
    """Move completed days to Parquet once at start and then hourly, off the probing thread."""
    if not enabled(store):
        return

    def archive(_t_ns: int) -> None:
        try:
            moved = archive_completed_days(store)
            if moved:
                log(f"archived {moved} samples of completed days to Parquet")
        except Exception as e:  # archiving is housekeeping: report it, never stop probing for it
            log(f"archiving failed: {e}")

    run_in_thread("probe-archive", ARCHIVE_EVERY_S, stop, archive)


def _start_summarizer(store, labels: list[str], stop: threading.Event, log: Callable[[str], None]) -> None:
    """Summarize the completed hours and days of the baseline window of this process's targets once at start
    and then hourly (services/probe/pieces.py), off the probing thread. `slowdown --check` opens the store
    read-only and cannot keep what it summarizes: without this, a check run from cron on a node with no
    dashboard read a month of raw samples every time (6.0 s instead of 2.4 s for 3 targets x 3 days here)."""
    if not probe_pieces.enabled(store):
        return

    def summarize(t_ns: int) -> None:
        now = time.time_ns()
        for label in labels:
            try:
                span = sample_range(store, label)
                if span is None:
                    continue
                # From the oldest sample on: no empty summaries of the days before the probe existed.
                since = max(now - int(DEFAULT_BASELINE_S * 1e9), span[0] // probe_pieces.HOUR_NS * probe_pieces.HOUR_NS)
                probe_pieces.gather(store, label, since, now, now, raw=False)
            except Exception as e:  # housekeeping: report it, never stop probing for it
                log(f"{label}: summarizing completed hours failed: {e}")

    run_in_thread("probe-summaries", ARCHIVE_EVERY_S, stop, summarize)


def is_probe_dir(directory: Path) -> bool:
    """Whether `probe init` (or `watch`) has made DIRECTORY a probe directory already."""
    return (directory / META_NAME).exists()


def default_target(directory: Path) -> str:
    """`host:mountpoint`: a bare mount point (`/`, `/scratch`) names a different file system on every node.
    Not the file system's name (each run records that, `fs_name_of`): a target is one client's view,
    and two nodes probing one file system under one label would interleave their samples."""
    return f"{socket.gethostname()}:{mount_point(directory)}"


def _say_on_stderr(line: str) -> None:
    stderr.print(line, highlight=False)


def probe_labels(directories: list[Path], targets: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The target label of each directory: `targets` in order (one per directory, or none: each
    HOST:MOUNTPOINT). One label per target and one target per directory, refused in one line
    otherwise: two directories under one label would be one target's samples, interleaved."""
    if not directories:
        raise UserError("give at least one probe directory")
    if targets and len(targets) != len(directories):
        raise UserError(f"{len(targets)} --target labels for {len(directories)} directories: give one per "
                        "directory, in the same order, or none")
    real = [Path(d).resolve() for d in directories]
    for i, r in enumerate(real):
        if real.index(r) != i:
            raise UserError(f"{directories[i]} is given twice; probe each directory once")
    labels = [probe_store.check_target(t) for t in targets] if targets else [default_target(d) for d in directories]
    for i, label in enumerate(labels):
        if labels.index(label) != i:
            j = labels.index(label)
            raise UserError(f"{directories[j]} and {directories[i]} would both be target {label!r} (one file system?); "
                            "give --target once per directory")
    return labels


class _Slot:
    """One target of a probe process: its daemon (its own worker thread and deadline: a hung
    mount blocks only this slot), run id, write-behind buffer and thread."""

    def __init__(self, daemon: ProbeDaemon, label: str, offset_s: float):
        self.daemon, self.label, self.offset_s = daemon, label, offset_s
        self.run_id: int | None = None
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def run(self) -> None:
        try:
            # Its schedule slot: N targets start offset_s apart over one interval, so that their
            # periods do not all hit the node (and one client's network link) at the same instant.
            if self.offset_s and self.daemon.stop_event.wait(self.offset_s):
                return
            self.daemon.run(install_signals=False)
        except BaseException as e:  # re-raised by run_probes once every slot has stopped
            self.error = e


def run_probes(settings, directories: list[Path], *, targets=(), interval: float, duration: float | None,
               block: int, direct: bool, fsync: bool, timeout: float, seed: int | None, quiet: bool,
               stop_event: threading.Event | None = None, install_signals: bool = True,
               started: Callable[[], None] | None = None, say: Callable[[str], None] = _say_on_stderr) -> int:
    """Probe several directories (one per file system) from one process, each its own target (a run
    in the store), its own thread, schedule slot, operation deadline and write-behind buffer: a hung
    target times out its own operation and skips its own periods, the others keep their grid.
    Returns the exit code; shared by `probe run` and `watch`.

    `started()` is called once every probe holds its directory (a directory another probe holds is
    refused before that), so that `watch` can refuse before serving anything. `say` prints a log line;
    with `quiet` only problems are said. With `seed`, target i uses seed + i (each run records its own).
    """
    directories = [Path(d) for d in directories]
    labels = probe_labels(directories, list(targets))  # at the door: before the probe or the dashboard starts
    fs_map = load_fs_map(settings.home)  # a malformed fs-map is refused here too
    store = open_store(settings)
    stop = stop_event if stop_event is not None else threading.Event()
    # from the start: a SIGTERM while the probes open their directories is a clean stop too
    restore = signals.install(signals.set_event(stop), signals.STOP if install_signals else ())
    warn = lambda m: say(f"probe: {m}")
    log = (lambda m: None) if quiet else warn
    slots: list[_Slot] = []
    try:
        for i, (directory, label) in enumerate(zip(directories, labels)):
            opts = ProbeOptions(interval_s=interval, duration_s=duration, block=block, direct=direct, fsync=fsync,
                                timeout_s=timeout, seed=None if seed is None else seed + i)
            tag = (lambda m, label=label: warn(f"{label}: {m}")) if len(directories) > 1 else warn
            p = ProbeDaemon(directory, opts, sink=lambda rows: None, log=tag, stop=stop)
            slots.append(_Slot(p, label, i * interval / len(directories)))
        if started is not None:
            started()
        for slot, directory in zip(slots, directories):
            p = slot.daemon
            info = probe_store.RunInfo(
                target=slot.label, directory=str(directory.resolve()), interval_s=interval,
                block_bytes=block, file_bytes=p.layout.file_bytes, pool_files=p.layout.pool_files,
                small_bytes=p.layout.small_bytes, direct=direct, fsync=fsync, seed=p.seed, timeout_s=timeout,
                file_exceeds_memory=p.layout.file_bytes > physical_memory_bytes(), host=socket.gethostname(),
                fs=fs_name_of(directory, fs_map))
            slot.run_id = probe_store.start_run(store, info)

            def sink(rows, run_id=slot.run_id, p=p, label=slot.label, gone=[]):
                try:
                    probe_store.insert_samples(store, [(run_id, *r) for r in rows])
                except probe_store.RunGone as e:  # `probe retire --purge` meanwhile: never a sample without its run
                    if not gone:
                        warn(f"{label}: {e}; restart the probe to record the target again")
                    gone.append(len(rows))
                    return
                errors = sum(1 for r in rows if r[4] != "ok")
                log(f"{label}: stored {len(rows)} samples ({errors} not ok), "
                    f"{p.periods} periods, {p.missed_periods} missed")

            p.sink = sink
            log(f"run {slot.run_id}: probing {directory} (file system {info.fs!r}) as target {slot.label!r} "
                f"every {interval:g} s (seed {p.seed})")
        _start_archiver(store, stop, log)
        start_retention(settings, store, ("probe", "rollups"), stop, log, warn)
        _start_summarizer(store, labels, stop, log)
        for slot in slots:
            slot.thread = threading.Thread(target=slot.run, name=f"probe-{slot.run_id}", daemon=True)
            slot.thread.start()
        for slot in slots:
            while slot.thread.is_alive():  # in slices: the main thread keeps handling Ctrl-C/SIGTERM
                slot.thread.join(0.2)
        for slot in slots:
            p = slot.daemon
            log(f"run {slot.run_id}: stopped after {p.periods} periods, {p.samples} samples stored")
            if p.dropped_samples:  # said even with --quiet: these samples are lost
                warn(f"run {slot.run_id}: {p.dropped_samples} samples dropped while the store did not take them "
                     "(buffer full)")
        failed = [s.error for s in slots if s.error is not None]
        if failed:
            raise failed[0]
    finally:
        stop.set()  # a refused start (or an error) stops the slots already running
        for slot in slots:
            if slot.thread is not None:  # its last flush, bounded like the one of a stop
                slot.thread.join(FINAL_FLUSH_S + 1)
            slot.daemon.close()
        restore()
    return 0


class BackgroundProbe:
    """`watch`'s probe: run_probes in a daemon thread next to the server, sharing its `stop` event.

    A daemon thread: finish() waits for its last flush; if the store does not take it, the
    process must still end rather than wait on the thread at exit.
    """

    def __init__(self, settings, directories: Path | list[Path], stop: threading.Event, *, target: str | None = None,
                 targets=(), **options):
        """`directories`: one or several (each its own target, as `probe run DIR...`); `target` or
        `targets` their labels."""
        self.stop = stop
        self._started = threading.Event()
        self._failure: list[BaseException] = []
        dirs = list(directories) if isinstance(directories, (list, tuple)) else [directories]
        labels = list(targets) or ([target] if target is not None else [])
        self._thread = threading.Thread(target=self._run, args=(settings, dirs, labels), kwargs=options,
                                        name="ioweather-probe", daemon=True)

    def _run(self, settings, directories: list[Path], targets: list[str], **options) -> None:
        try:
            run_probes(settings, directories, targets=targets, duration=None, stop_event=self.stop,
                       install_signals=False, started=self._started.set, **options)
        except BaseException as e:  # re-raised by the caller's thread, which then stops the server
            self._failure.append(e)
        finally:
            self.stop.set()

    def start(self) -> None:
        """Start probing; a directory another probe holds (or any refused start) raises here, before
        anything is served."""
        self._thread.start()
        while not self._started.wait(0.1) and self._thread.is_alive():
            pass
        if not self._started.is_set():
            self._thread.join()
            raise self._as_user_error("the probe did not start")

    def finish(self, wait_s: float, say: Callable[[str], None]) -> None:
        """Stop and wait at most `wait_s` for the last samples to be stored; UserError if they were not,
        or if the probe had stopped on an error."""
        self.stop.set()
        self._thread.join(timeout=1)
        if self._thread.is_alive():  # its last flush waits for the store (locked, or slow to answer)
            say("watch: waiting for the store to take the probe's last samples (Ctrl-C again to abandon them)")
            self._thread.join(timeout=wait_s)
        if self._thread.is_alive():
            raise UserError(f"the probe's last samples were not stored within {wait_s:g} s (the store did not "
                            "answer); they are lost")
        if self._failure:
            raise self._as_user_error("the probe stopped")

    def _as_user_error(self, what: str) -> UserError:
        e = self._failure[0]
        return e if isinstance(e, UserError) else UserError(f"{what}: {type(e).__name__}: {e}")
