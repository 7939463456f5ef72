"""`ioweather probe init|run|stats`: the client-side probe (METHODS.md section 1)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import click

from ioweather.commands.common import DURATION, SINCE, SIZE, TIME, json_option
from ioweather.errors import UserError
from ioweather.units import format_bytes, format_seconds, ns_to_iso
from ioweather.views.output import print_json, print_table, short_time, progress, stderr

DEFAULT_FILE_SIZE = "1GiB"


def open_store(settings):
    from ioweather.store import open_store as _open

    return _open(settings)


def register(cli: click.Group) -> None:
    @cli.group()
    def probe():
        """Probe a file system every second and store the timings (seed 001)."""

    @probe.command("init")
    @click.argument("directory", type=click.Path(path_type=Path))
    @click.option("--file-size", type=SIZE, default=DEFAULT_FILE_SIZE, show_default=True,
                  help="Size of the large data file; should exceed the client's memory so reads miss the page cache.")
    @click.option("--pool", "pool", type=int, default=200, show_default=True, help="Number of small files in the FIFO pool.")
    @click.option("--block", type=SIZE, default="1MiB", show_default=True, help="Block size of data reads and writes.")
    @json_option
    def init(directory: Path, file_size: int, pool: int, block: int, as_json: bool):
        """Create the probe's data file and small-file pool in DIRECTORY."""
        from ioweather.sources.probe import init_probe_dir, physical_memory_bytes

        with progress() as bar:
            task = bar.add_task(f"writing {directory}/data", total=file_size)
            layout = init_probe_dir(directory, file_size, pool, block=block,
                                    on_progress=lambda done, total: bar.update(task, completed=done))
        mem = physical_memory_bytes()
        info = {"directory": str(directory), "file_bytes": layout.file_bytes, "pool_files": layout.pool_files,
                "small_bytes": layout.small_bytes, "memory_bytes": mem, "file_exceeds_memory": layout.file_bytes > mem}
        if as_json:
            print_json(info)
            return
        click.echo(f"probe directory {directory}: {format_bytes(layout.file_bytes)} data file, {layout.pool_files} pool files")
        if layout.file_bytes <= mem:
            stderr.print(f"note: the data file is smaller than this node's memory ({format_bytes(mem)}): "
                         "data_read may be served from the page cache; use --direct at run time or a larger --file-size")

    @probe.command("run")
    @click.argument("directory", type=click.Path(path_type=Path))
    @click.option("--interval", type=DURATION, default="1s", show_default=True, help="Period, start to start.")
    @click.option("--duration", type=DURATION, default=None, help="Stop after this long (default: until SIGTERM/Ctrl-C).")
    @click.option("--target", default=None, help="Label of the file system (default: its mount point).")
    @click.option("--block", type=SIZE, default="1MiB", show_default=True, help="Block size of data_read/data_write.")
    @click.option("--direct", is_flag=True, help="Open the data file with O_DIRECT (bypass the client page cache).")
    @click.option("--fsync", is_flag=True, help="fsync after each write (inside the timed region).")
    @click.option("--timeout", type=DURATION, default="60s", show_default=True, help="Deadline of one operation.")
    @click.option("--seed", type=int, default=None, help="Seed of the random offsets (default: random; always recorded).")
    @click.option("--quiet", "-q", is_flag=True, help="No periodic summary on stderr.")
    @click.pass_obj
    def run(settings, directory: Path, interval, duration, target, block, direct, fsync, timeout, seed, quiet):
        """Probe DIRECTORY every INTERVAL until stopped (or for --duration) and store the samples."""
        if interval <= 0:
            raise UserError("--interval must be positive")
        code = run_probe(settings, directory, interval=interval, duration=duration, target=target, block=block,
                         direct=direct, fsync=fsync, timeout=timeout, seed=seed, quiet=quiet)
        sys.exit(code)

    @probe.command("archive")
    @click.option("--keep-days", type=int, default=1, show_default=True,
                  help="Days (before today, UTC) that stay in the database.")
    @json_option
    @click.pass_obj
    def archive(settings, keep_days, as_json):
        """Move completed days of samples to Parquet (the daemon does this hourly; for cron or after an import)."""
        from ioweather.store.probe_archive import archive_completed_days, enabled

        store = open_store(settings)
        if not enabled(store):
            raise UserError("archiving applies to the embedded SQLite store only; a server database keeps all rows")
        moved = archive_completed_days(store, keep_days=keep_days)
        if as_json:
            print_json({"archived_samples": moved})
        else:
            click.echo(f"archived {moved} samples to {settings.parquet_dir / 'probe'}")

    @probe.command("stats")
    @click.option("--target", default=None, help="One target (default: all).")
    @click.option("--interval", type=DURATION, default="10m", show_default=True, help="Interval length.")
    @click.option("--since", type=SINCE, default="24h", show_default=True, help="Start: a duration ago (24h) or a time.")
    @click.option("--until", type=TIME, default="now", show_default=True, help="End time.")
    @json_option
    @click.pass_obj
    def stats(settings, target, interval, since, until, as_json):
        """Interval statistics per target and op: count, errors, quantiles, mean."""
        from ioweather.stats.probe import interval_stats
        from ioweather.store.probe import OPS

        if interval <= 0:
            raise UserError("--interval must be positive")
        if since >= until:
            raise UserError(f"--since ({since:%Y-%m-%d %H:%M:%S}) must be before --until ({until:%Y-%m-%d %H:%M:%S})")
        store = open_store(settings)
        rows = []
        from ioweather.services.slowdown import load_window

        for t, s in load_window(store, target, since, until):
            for r in interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval):
                rows.append({"target": t, "op": OPS[r.pop("op_code")],
                             "interval_start": ns_to_iso(r.pop("interval_start_ns")), **r})
        if as_json:
            print_json(rows)
            return
        sec = format_seconds
        print_table(rows, [("target", "target"), ("op", "op"), ("interval_start", "interval (UTC)", short_time), ("count", "n"),
                           ("errors", "err"), ("timeouts", "t/o"), ("min_s", "min", sec), ("median_s", "median", sec),
                           ("p90_s", "p90", sec), ("p99_s", "p99", sec), ("max_s", "max", sec), ("mean_s", "mean", sec)],
                    empty="no probe samples in this window")


def _start_archiver(store, stop_event, log, every_s: float = 3600.0) -> None:
    """Move completed days to Parquet once at start and then hourly, off the probing thread."""
    import threading

    from ioweather.store.probe_archive import archive_completed_days, enabled

    if not enabled(store):
        return

    def loop():
        while not stop_event.is_set():
            try:
                moved = archive_completed_days(store)
                if moved:
                    log(f"archived {moved} samples of completed days to Parquet")
            except Exception as e:  # archiving is housekeeping: report it, never stop probing for it
                log(f"archiving failed: {e}")
            stop_event.wait(every_s)

    threading.Thread(target=loop, name="probe-archive", daemon=True).start()


def run_probe(settings, directory: Path, *, interval: float, duration: float | None, target: str | None, block: int,
              direct: bool, fsync: bool, timeout: float, seed: int | None, quiet: bool,
              stop_event=None, install_signals: bool = True, started=None) -> int:
    """Run the probe into the store; returns the exit code. Shared by `probe run` and `watch`.

    `started()` is called once the probe holds its directory (a second probe of it is refused
    before that), so that `watch` can refuse before serving anything.
    """
    from ioweather.sources.probe import Probe, ProbeOptions, mount_point, physical_memory_bytes
    from ioweather.store import probe as probe_store

    if target is not None:
        probe_store.check_target(target)  # at the door: before the probe or the dashboard starts
    store = open_store(settings)
    opts = ProbeOptions(interval_s=interval, duration_s=duration, block=block, direct=direct, fsync=fsync,
                        timeout_s=timeout, seed=seed)
    log = (lambda m: None) if quiet else (lambda m: stderr.print(f"probe: {m}"))
    rows_sink: list = []
    p = Probe(directory, opts, sink=lambda rows: rows_sink.append(rows), log=lambda m: stderr.print(f"probe: {m}"))
    if stop_event is not None:
        p.stop_event = stop_event
    try:
        if started is not None:
            started()
        info = probe_store.RunInfo(
            target=target or mount_point(directory), directory=str(Path(directory).resolve()), interval_s=interval,
            block_bytes=block, file_bytes=p.layout.file_bytes, pool_files=p.layout.pool_files,
            small_bytes=p.layout.small_bytes, direct=direct, fsync=fsync, seed=p.seed, timeout_s=timeout,
            file_exceeds_memory=p.layout.file_bytes > physical_memory_bytes(), host=socket.gethostname())
        run_id = probe_store.start_run(store, info)

        def sink(rows):
            probe_store.insert_samples(store, [(run_id, *r) for r in rows])
            if not quiet:
                errors = sum(1 for r in rows if r[4] != "ok")
                stderr.print(f"probe: {info.target}: stored {len(rows)} samples ({errors} not ok), "
                             f"{p.periods} periods, {p.missed_periods} missed", highlight=False)

        p.sink = sink
        _start_archiver(store, p.stop_event, log)
        log(f"run {run_id}: probing {directory} as target {info.target!r} every {interval:g} s (seed {p.seed})")
        p.run(install_signals=install_signals)
        log(f"run {run_id}: stopped after {p.periods} periods, {p.samples} samples stored")
        if p.dropped_samples:  # said even with --quiet: these samples are lost
            stderr.print(f"probe: run {run_id}: {p.dropped_samples} samples dropped while the store did not take "
                         "them (buffer full)", highlight=False)
    finally:
        p.close()
    return 0
