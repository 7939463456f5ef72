"""`ioweather collect` (the telemetry daemon); `ioweather import KIND SOURCE...` (histories) is in imports.py.

Both end in the same Parquet layout (store/telemetry_layout.py) that `ioweather workload`
reads. METHODS.md section 4; docs/telemetry.md is the user guide.
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
from pathlib import Path

import click

from ioweather.commands.common import DURATION, json_option
from ioweather.commands.imports import import_group
from ioweather.errors import UserError
from ioweather.units import format_seconds
from ioweather.views.output import print_json, print_table, progress, stderr


def live_sources() -> dict:
    from ioweather.sources.telemetry.capacity import Capacity
    from ioweather.sources.telemetry.diskstats import DiskStats
    from ioweather.sources.telemetry.gpfs import Gpfs
    from ioweather.sources.telemetry.host import Host
    from ioweather.sources.telemetry.lustre import Lustre
    from ioweather.sources.telemetry.nfs import Nfs

    return {c.name: c for c in (DiskStats, Lustre, Gpfs, Nfs, Capacity, Host)}


def build_sources(names: str | None, root: str, mounts: tuple[str, ...], jobs: bool, log) -> list:
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
    return available  # without --sources: what this machine has


def _recover_collect(settings, collector, state: Path, intent: Path, tdir: Path) -> int | None:
    """Resolve the intent a killed flush left (see run_collect); returns the readings restored, or
    None when there was no intent. A file system whose files are all there keeps the intent's
    readings (its rows are stored); the others keep the state's and lose their partial files (their
    rows become missing intervals at the first tick, never rows stored twice)."""
    from ioweather.errors import StoreError, from_os_error
    from ioweather.store import telemetry_layout as layout

    if not intent.exists():
        return None
    planned = collector.read_state(intent)
    if planned is None:  # written only partly (no fsync'd rename), so no file of it was written
        intent.unlink(missing_ok=True)
        return None
    files = {fs: [tdir / p for p in paths] for fs, paths in planned.get("files", {}).items()}
    partial = {fs for fs, paths in files.items() if not all(p.exists() for p in paths)}
    for fs in partial:
        layout.remove_files(files[fs])
        for p in files[fs]:
            layout.temp_of(p).unlink(missing_ok=True)
    collector.load_state(state)
    n = collector.load_state(intent, skip_fs=partial)
    try:
        collector.save_state(state)
    except OSError as e:  # the partial files are gone: the intent would say the same next time
        Path(f"{state}.tmp").unlink(missing_ok=True)
        raise from_os_error(state, e, "save collector state", cls=StoreError) from None
    intent.unlink(missing_ok=True)
    return n


def run_collect(settings, *, interval: float, source_names: str | None, root: str, fs: str | None,
                duration: float | None, flush_s: float, timeout: float | None, mounts: tuple[str, ...] = (),
                jobs: bool = True, quiet: bool = False, stop_event: threading.Event | None = None,
                install_signals: bool = True) -> dict:
    """The collect loop; returns its summary. Shared by the CLI and tests/benchmarks."""
    from ioweather.sources.telemetry.base import short_hostname
    from ioweather.sources.telemetry.collector import Collector
    from ioweather.store import telemetry_layout as layout

    # Problems are shown even with --quiet, each on one line however long (soft_wrap: no 80-column wrapping).
    warn = lambda m: stderr.print(f"collect: {m}", highlight=False, soft_wrap=True)  # noqa: E731
    log = (lambda m: None) if quiet else warn
    host = short_hostname()
    default_fs = layout.check_fs_name(fs or host)
    sources = build_sources(source_names, root, mounts, jobs, log)
    collector = Collector(sources, interval, default_fs, fs_forced=fs is not None, timeout_s=timeout,
                          log=warn)
    per_fs: dict[str, int] = {}
    writer = f"collect-{host}"
    tdir = layout.telemetry_dir(settings)
    # The state file holds the counters' readings as of the last stored rows; a flush first writes
    # its intent (the readings it will store and the files it will write), then the files, then
    # renames the intent onto the state. A kill -9 in between leaves the intent: the restart keeps
    # the readings of the file systems whose files are all there and removes the files of the others.
    state = tdir / f".collect-{host}.state.json"
    intent = tdir / f".collect-{host}.intent.json"
    recovered = _recover_collect(settings, collector, state, intent, tdir)
    restored = recovered if recovered is not None else collector.load_state(state)
    if restored:
        log(f"continuing from the {restored} counter readings saved at the last stop")

    compacted: set = set()  # day directories done in this run: each finished day is merged once

    def compact() -> None:
        """Merge this host's small files of finished days (see store/telemetry_compact.py)."""
        from ioweather.errors import os_error_reason
        from ioweather.store.telemetry_compact import compact_finished_days

        grace_ns = int(max(2 * flush_s, 600) * 1e9)  # a late flush of yesterday's last rows comes first
        for name in layout.list_fs(settings):
            compact_finished_days(layout.fs_dir(settings, name), writer, time.time_ns(), grace_ns,
                                  compacted, lambda d, e: log(f"could not compact {d}: {os_error_reason(e, d)}"))

    def store_rows() -> None:
        """One flush, all or nothing (Collector.flush); raises StoreError with every row still queued."""
        import uuid

        from ioweather.errors import StoreError, from_os_error

        flush_id = uuid.uuid4().hex[:12]
        written: list = []
        counts: dict[str, int] = {}

        def begin(frames) -> None:
            files = {fs: [str(p.relative_to(tdir)) for p in layout.day_files(settings, fs, frame, writer, flush_id)]
                     for fs, frame in frames.items()}
            try:
                tdir.mkdir(parents=True, exist_ok=True)
                collector.save_state(intent, files)
            except OSError as e:
                Path(f"{intent}.tmp").unlink(missing_ok=True)
                raise from_os_error(intent, e, "write", cls=StoreError) from None

        def write(name: str, frame) -> int:
            counts[name] = layout.write_rows(settings, name, frame, writer=writer, paths_out=written, file_id=flush_id)
            return counts[name]

        try:
            collector.flush(write, begin)
        except BaseException:
            layout.remove_files(written)
            intent.unlink(missing_ok=True)  # nothing of this flush is stored: the state file stays right
            raise
        for name, n in counts.items():
            per_fs[name] = per_fs.get(name, 0) + n
        try:
            os.replace(intent, state)  # a rename needs no free block
        except OSError as e:  # the intent stays and says the same; a restart resolves it
            warn(str(from_os_error(state, e, "save collector state")))

    def flush(final: bool = False) -> None:
        """Write the queued rows. A full or failing disk must not stop the sampling (the probe does
        the same): the rows stay queued and the next flush tries again; at the stop it is an error."""
        from ioweather.errors import StoreError

        dropped = collector.rows_dropped
        try:
            store_rows()
        except StoreError as e:
            lost = f", {dropped} older readings dropped" if dropped else ""
            if final:
                raise StoreError(f"{e}; {collector.pending_rows} buffered readings were not stored{lost}") from None
            warn(f"{e}; keeping {collector.pending_rows} buffered readings (room for {collector.max_pending_rows})"
                 f"{lost}, will retry at the next flush")
            return
        if dropped:
            warn(f"stored again; {dropped} readings were dropped while the store could not be written")
        compact()

    stop = stop_event or threading.Event()
    if install_signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    log(f"sampling {', '.join(s.name for s in sources)} every {interval:g} s into "
        f"{layout.telemetry_dir(settings)} (file system {'from the targets, else ' if fs is None else ''}{default_fs!r})")
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.monotonic()
    t_end_ns = time.time_ns() + int(duration * 1e9) if duration else None
    step_ns = int(round(interval * 1e9))
    next_ns = -(-time.time_ns() // step_ns) * step_ns  # the next multiple of the interval since the epoch
    last_flush = time.monotonic()
    missed = 0
    with progress() as bar:
        task = bar.add_task("collecting", total=duration) if duration else None
        while not stop.is_set():
            if t_end_ns is not None and next_ns > t_end_ns:
                break
            if stop.wait(max(0.0, (next_ns - time.time_ns()) / 1e9)):
                break
            collector.tick(next_ns)
            if time.monotonic() - last_flush >= flush_s:
                flush()
                last_flush = time.monotonic()
            next_ns += step_ns
            late = time.time_ns() - next_ns
            if late > 0:  # fell behind (suspended, overloaded): skip to the next aligned tick
                skipped = -(-late // step_ns)
                missed += skipped
                next_ns += skipped * step_ns
            if task is not None:
                bar.update(task, completed=min(duration, time.monotonic() - wall0))
    flush(final=True)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.monotonic() - wall0
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    return {"interval_s": interval, "ticks": collector.ticks, "missed_ticks": missed,
            "rows_written": collector.rows_written, "rows_dropped": collector.rows_dropped, "datasets": per_fs,
            "sources": [st.as_dict() for st in collector.runner.status.values()],
            "wall_s": wall, "cpu_s": cpu, "cpu_pct": 100.0 * cpu / wall if wall > 0 else None}


def register(cli: click.Group) -> None:
    @cli.command("collect")
    @click.option("--interval", type=DURATION, default="5s", show_default=True, help="Sampling period.")
    @click.option("--sources", "source_names", metavar="LIST", default=None,
                  help="Comma-separated sources: diskstats, lustre, gpfs, nfs, capacity, host (default: all this machine has).")
    @click.option("--proc-root", type=click.Path(file_okay=False), default="/", show_default=True,
                  help="Root under which /proc and /sys are read (a copied or mock tree for tests).")
    @click.option("--fs", default=None,
                  help="Dataset to write into (default: Lustre server targets into their file system, the rest into the host name).")
    @click.option("--duration", type=DURATION, default=None, help="Stop after this long (default: until SIGTERM/Ctrl-C).")
    @click.option("--flush", "flush_s", type=DURATION, default="5m", show_default=True,
                  help="How often buffered rows are written to Parquet (and at stop).")
    @click.option("--timeout", type=DURATION, default=None,
                  help="Deadline of one source read (default: 80% of the interval, at most 30 s).")
    @click.option("--mounts", multiple=True, metavar="DIR", help="Mount points for the capacity source (default: all storage mounts).")
    @click.option("--no-jobs", is_flag=True, help="Do not read Lustre job_stats.")
    @click.option("--quiet", "-q", is_flag=True, help="No log lines on stderr.")
    @json_option
    @click.pass_obj
    def collect(settings, interval, source_names, proc_root, fs, duration, flush_s, timeout, mounts, no_jobs, quiet,
                as_json):
        """Sample server-side telemetry every INTERVAL and store it (per-interval amounts, Parquet).

        Counters (bytes, operations) are stored as the amount of each interval; a counter that
        goes backwards (restart) and every missed interval are stored as missing, never as 0."""
        if interval <= 0:
            raise UserError("--interval must be positive")
        if not Path(proc_root).is_dir():
            raise UserError(f"--proc-root {proc_root}: no such directory")
        summary = run_collect(settings, interval=interval, source_names=source_names, root=proc_root, fs=fs,
                              duration=duration, flush_s=flush_s or interval, timeout=timeout, mounts=mounts,
                              jobs=not no_jobs, quiet=quiet)
        if as_json:
            print_json(summary)
            return
        print_table(summary["sources"], [
            ("name", "source"), ("ok", "ok"), ("failed", "failed"), ("timeouts", "timeouts"), ("skipped", "skipped"),
            ("samples", "samples"), ("mean_duration_s", "mean read", format_seconds), ("last_error", "last error")],
            title=f"{summary['ticks']} ticks, {summary['rows_written']} rows written, "
                  f"CPU {summary['cpu_pct']:.2f}% of a core" if summary["cpu_pct"] is not None else None)

    import_group(cli)  # `import KIND SOURCE...`: commands/imports.py makes a sub-command per importer
