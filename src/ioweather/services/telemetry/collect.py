"""`ioweather collect`, the telemetry daemon (METHODS.md section 4; docs/telemetry.md).

The live sources (sources/telemetry/) are read on services/runtime/daemon.py's loop, the probe's: ticks
on a grid aligned to the epoch, missed ticks counted, Ctrl-C/SIGTERM; the collector
(services/telemetry/collector.py) turns readings into rows, and the write-behind buffer hands
them to the Parquet store (store/telemetry_layout.py) from its own thread, so a slow or full
disk never delays a tick. The failure policy is the probe's: refused rows stay queued (bounded,
the oldest dropped and counted) and are retried; a stop waits FINAL_FLUSH_S for the last write.

A flush first writes its intent (the counters' readings its rows end at, and the files it will
write), then the files, then renames the intent onto the state file. A kill -9 in between
leaves the intent, which the next start resolves (recover): rows are never stored twice, and
what a kill lost becomes missing intervals.
"""

from __future__ import annotations

import os
import resource
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ioweather import signals
from ioweather.encoding import Answer, answer_dict
from ioweather.errors import StoreError, UserError, from_os_error, os_error_reason
from ioweather.services.runtime.daemon import Ticker, WriteBehind, start_retention
from ioweather.sources.telemetry.base import Source, short_hostname
from ioweather.services.telemetry.collector import Collector, Taken
from ioweather.services.telemetry.exporter_defaults import JOB_TOP
from ioweather.sources.telemetry.capacity import Capacity
from ioweather.sources.telemetry.diskstats import DiskStats
from ioweather.sources.telemetry.gpfs import Gpfs
from ioweather.sources.telemetry.host import Host
from ioweather.sources.telemetry.lctl_source import LctlLustre
from ioweather.sources.telemetry.nfs import Nfs
from ioweather.store import telemetry_layout as layout
from ioweather.store.telemetry_compact import compact_finished_days
from ioweather.views.output import progress, stderr

#: How long a stop waits for the store to take the queued rows (as the probe).
FINAL_FLUSH_S = 30.0


def live_sources() -> dict[str, type[Source]]:
    # `lustre`: one `lctl get_param` per tick where lctl is installed, the /proc and /sys reader otherwise
    return {c.name: c for c in (DiskStats, LctlLustre, Gpfs, Nfs, Capacity, Host)}


def build_sources(names: str | None, root: str, mounts: tuple[str, ...], jobs: bool, log) -> list:
    """The sources named (comma-separated; all by default) under `root`. Named ones that have nothing
    to read yet are kept (and said); without names, those this machine has."""
    classes = live_sources()
    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in classes]
        if unknown:
            raise UserError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(classes)}")
    else:
        wanted = list(classes)
    sources = []
    for n in wanted:
        kw = {"mounts": mounts or None} if n == "capacity" else {"jobs": jobs} if n == "lustre" else {}
        sources.append(classes[n](root, **kw))
    available = [s for s in sources if s.available()]
    if not available:
        raise UserError(f"none of the sources {', '.join(wanted)} has anything to read under {root}")
    if names:
        for s in sources:
            if s not in available:
                log(f"{s.name}: nothing to read yet under {root}; will keep trying")
        return sources
    return available


def recover(collector: Collector, state: Path, intent: Path, tdir: Path,
            warn: Callable[[str], None] = lambda m: None) -> int | None:
    """Resolve the intent a killed flush left; returns the readings restored, or None when there was
    no intent. A file system whose files are all there keeps the intent's readings (its rows are
    stored); the others keep the state's and lose their partial files (their rows become missing
    intervals at the first tick, never rows stored twice). A state or intent file that is not one is
    set aside with a warning (Collector.read_state)."""
    for left in [*tdir.glob(f".{intent.name}.*.tmp"), *tdir.glob(f".{state.name}.*.tmp")]:
        left.unlink(missing_ok=True)  # the atomic writer's temporary of a killed flush (a link: only the link goes)
    planned = collector.read_state(intent, warn)
    if planned is None:  # none, or set aside: the atomic writer leaves a whole intent or none
        return None
    files = {fs: [tdir / p for p in paths] for fs, paths in planned.files.items()}
    partial = {fs for fs, paths in files.items() if not all(p.exists() for p in paths)}
    for fs in partial:
        layout.remove_files(files[fs])
        for p in files[fs]:
            layout.temp_of(p).unlink(missing_ok=True)
    collector.load_state(state, warn=warn)
    n = collector.load_state(intent, skip_fs=partial, warn=warn)
    collector.save_state(state)  # StoreError; the partial files are gone: the intent would say the same next time
    intent.unlink(missing_ok=True)
    return n


class CollectorQueue:
    """The collector's queued rows as the write-behind buffer (daemon.RowBuffer's members): ticks
    and the flushing thread's take/put_back exclude each other, so a batch and the readings it
    ends at always match."""

    def __init__(self, collector: Collector):
        self.collector = collector
        self._mutex = threading.Lock()

    def __len__(self) -> int:
        return self.collector.pending_rows

    @property
    def dropped(self) -> int:
        return self.collector.rows_dropped

    def tick(self, t_ns: int) -> None:
        with self._mutex:
            self.collector.tick(t_ns)

    def take(self) -> tuple[Taken, int]:
        with self._mutex:
            taken = self.collector.take()
        return taken, taken.rows

    def put_back(self, taken: Taken) -> None:
        with self._mutex:
            self.collector.put_back(taken)


class ParquetSink:
    """Stores the collector's batches for one host: intent, files, state (see the module's doc),
    all file systems of a batch or none; then merges finished days of this host's files."""

    def __init__(self, settings, collector: Collector, host: str, flush_s: float, log: Callable[[str], None],
                 warn: Callable[[str], None]):
        self.settings, self.collector, self.flush_s, self.log, self.warn = settings, collector, flush_s, log, warn
        self.writer = f"collect-{host}"
        self.tdir = layout.telemetry_dir(settings)
        self.state = self.tdir / f".collect-{host}.state.json"
        self.intent = self.tdir / f".collect-{host}.intent.json"
        self.per_fs: dict[str, int] = {}
        self._compacted: set = set()  # day directories done in this run: each finished day is merged once

    def __call__(self, taken: Taken) -> None:
        """One flush; raises StoreError (the caller keeps the rows) with nothing of it stored."""
        flush_id = uuid.uuid4().hex[:12]
        written: list = []
        counts: dict[str, int] = {}

        def begin(frames) -> None:
            files = {fs: [str(p.relative_to(self.tdir))
                          for p in layout.day_files(self.settings, fs, frame, self.writer, flush_id)]
                     for fs, frame in frames.items()}
            try:
                self.tdir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise from_os_error(self.tdir, e, "write", cls=StoreError) from None
            self.collector.save_state(self.intent, files, readings=taken.readings)

        def write(name: str, frame) -> int:
            counts[name] = layout.write_rows(self.settings, name, frame, writer=self.writer, paths_out=written,
                                             file_id=flush_id)
            return counts[name]

        try:
            self.collector.write(taken, write, begin)
        except BaseException:
            layout.remove_files(written)
            self.intent.unlink(missing_ok=True)  # nothing of this flush is stored: the state file stays right
            raise
        for name, n in counts.items():
            self.per_fs[name] = self.per_fs.get(name, 0) + n
        try:
            os.replace(self.intent, self.state)  # a rename needs no free block
        except OSError as e:  # the intent stays and says the same; a restart resolves it
            self.warn(str(from_os_error(self.state, e, "save collector state")))
        self.compact()

    def compact(self) -> None:
        """Merge this host's small files of finished days (see store/telemetry_compact.py)."""
        grace_ns = int(max(2 * self.flush_s, 600) * 1e9)  # a late flush of yesterday's last rows comes first
        for name in layout.list_fs(self.settings):
            compact_finished_days(layout.fs_dir(self.settings, name), self.writer, time.time_ns(), grace_ns,
                                  self._compacted,
                                  lambda d, e: self.log(f"could not compact {d}: {os_error_reason(e, d)}"))


@dataclass(frozen=True)
class SourceSummary:
    """One source's reads over the run: successful and failed calls, those cut at the deadline, ticks
    skipped while a call still ran, samples read, the mean call's seconds (None without a call)."""

    name: str
    ok: int
    failed: int
    timeouts: int
    skipped: int
    samples: int
    mean_duration_s: float | None
    last_error: str | None


@dataclass(frozen=True)
class CollectSummary(Answer):
    """What a `collect` run did (`collect --json`): ticks, missed ticks, rows stored and dropped, rows
    per dataset, each source's reads, and the run's own cost (wall and CPU seconds, CPU % of a core)."""

    interval_s: float
    ticks: int
    missed_ticks: int
    rows_written: int
    rows_dropped: int
    datasets: dict[str, int]
    sources: list[SourceSummary]
    wall_s: float
    cpu_s: float
    cpu_pct: float | None

    def to_json(self) -> dict:
        # answer_dict leaves list items as they are: the sources are dataclasses too
        return {**answer_dict(self), "sources": [answer_dict(s) for s in self.sources]}


def _say_on_stderr(line: str) -> None:
    # each line whole however long (soft_wrap: no 80-column wrapping)
    stderr.print(line, highlight=False, soft_wrap=True)


def run_collect(settings, *, interval: float, source_names: str | None, root: str, fs: str | None,
                duration: float | None, flush_s: float, timeout: float | None, mounts: tuple[str, ...] = (),
                jobs: bool = True, job_top: int = JOB_TOP, quiet: bool = False,
                stop_event: threading.Event | None = None, install_signals: bool = True,
                say: Callable[[str], None] = _say_on_stderr) -> CollectSummary:
    """Collect until stopped (or `duration`); returns the summary `collect --json` prints. With `quiet`
    only problems are said. Raises StoreError when the last rows could not be stored at the stop."""
    warn = lambda m: say(f"collect: {m}")  # noqa: E731
    log = (lambda m: None) if quiet else warn
    host = short_hostname()
    default_fs = layout.check_fs_name(fs or host)
    sources = build_sources(source_names, root, mounts, jobs, log)
    collector = Collector(sources, interval, default_fs, fs_forced=fs is not None, timeout_s=timeout, log=warn,
                          job_top=job_top)
    for s in sources:
        if hasattr(s, "timeout_s"):  # a source running a command kills it just before the runner's deadline
            s.timeout_s = 0.9 * collector.runner.timeout_s
    sink = ParquetSink(settings, collector, host, flush_s, log, warn)
    recovered = recover(collector, sink.state, sink.intent, sink.tdir, warn)
    restored = recovered if recovered is not None else collector.load_state(sink.state, warn=warn)
    if restored:
        log(f"continuing from the {restored} counter readings saved at the last stop")

    ticker = Ticker(interval, duration_s=duration, stop=stop_event, align_to_epoch=True)
    restore = signals.install(signals.set_event(ticker.stop), signals.STOP if install_signals else ())
    log(f"sampling {', '.join(s.name for s in sources)} every {interval:g} s into {sink.tdir} "
        f"(file system {'from the targets, else ' if fs is None else ''}{default_fs!r})")
    # its own stop: a --duration ends the ticker without setting ticker.stop (which a caller may share)
    housekeeping = threading.Event()
    retaining = start_retention(settings, None, ("telemetry",), housekeeping, log, warn)
    queue = CollectorQueue(collector)
    buffer = WriteBehind(sink, flush_s, collector.max_pending_rows, warn, unit="readings", doing="collecting",
                         name="collect-flush", buffer=queue)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.monotonic()
    try:
        with progress() as bar:
            task = bar.add_task("collecting", total=duration) if duration else None

            def tick(t_ns: int) -> None:
                queue.tick(t_ns)
                if task is not None:
                    bar.update(task, completed=min(duration, time.monotonic() - wall0))

            ticker.run(tick)
    finally:
        housekeeping.set()
        unstored = buffer.close(FINAL_FLUSH_S)
        if retaining is not None:
            # a short run (--duration) must not cut its first retention pass at exit: it removes whole files
            # or rewrites them atomically, so a cut pass loses nothing, but it then did not do its work
            retaining.join(FINAL_FLUSH_S)
        restore()  # after the last flush: a second Ctrl-C during it is not a traceback
    if unstored:
        raise StoreError(f"{unstored} readings were not stored: the store did not take them within "
                         f"{FINAL_FLUSH_S:g} s of the stop ({buffer.error})")
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - wall0
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    sources = [SourceSummary(**st.as_dict()) for st in collector.runner.status.values()]
    return CollectSummary(interval_s=interval, ticks=collector.ticks, missed_ticks=ticker.missed,
                          rows_written=collector.rows_written, rows_dropped=collector.rows_dropped,
                          datasets=sink.per_fs, sources=sources, wall_s=wall, cpu_s=cpu,
                          cpu_pct=100.0 * cpu / wall if wall > 0 else None)
