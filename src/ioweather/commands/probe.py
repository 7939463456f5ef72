"""`ioweather probe init|run|stats`: the client-side probe (METHODS.md section 1)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ioweather.commands.common import DURATION, SINCE, SIZE, TIME, json_option, probe_run_options
from ioweather.errors import UserError
from ioweather.files import skipped_line
from ioweather.services.probe.slowdown import interval_rows
from ioweather.units import check_order, format_age, format_bytes, format_seconds
from ioweather.views.output import print_json, print_table, short_time, progress, stderr

DEFAULT_FILE_SIZE = "1GiB"


def open_store(settings):
    # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
    from ioweather.services.runtime.stores import open_store as _open

    return _open(settings)


class ProgressLines:
    """Progress of a long write as lines on stderr, for when it is not a terminal (systemd's journal, cron, a
    pipe): a 64 GiB data file takes minutes, and a silent command looks hung. Once the write has taken
    `every_s`, a line then and at every further `step` of the total or `every_s` seconds, whichever comes
    first; a write done sooner says nothing (ten lines for a 70 ms write are noise in a log)."""

    def __init__(self, label: str, step: float = 0.1, every_s: float = 10.0, clock=None, say=None):
        self.label, self.step, self.every_s = label, step, every_s
        self.clock = clock or time.monotonic
        self.say = say or (lambda line: click.echo(line, err=True))
        self.t0 = self.last = self.clock()
        self.next_k = 1  # the next line is due at next_k * step (counted, not summed: 3 * 0.1 > 0.3)

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        frac = done / total if total else 1.0
        due = frac >= self.next_k * self.step - 1e-9
        if now - self.t0 < self.every_s or (not due and now - self.last < self.every_s):
            return
        elapsed = now - self.t0
        rate = f", {format_bytes(done / elapsed)}/s" if elapsed > 0 and done else ""
        self.say(f"{self.label}: {frac * 100:.0f} % ({format_bytes(done)} of {format_bytes(total)}), "
                 f"{format_seconds(elapsed)}{rate}")
        self.last = now
        self.next_k = int(frac / self.step + 1e-9) + 1


def register(cli: click.Group) -> None:
    @cli.group()
    def probe():
        """Probe a file system every second and store the timings (docs/probe.md)."""

    @probe.command("init")
    @click.argument("directory", type=click.Path(path_type=Path))
    @click.option("--file-size", type=SIZE, default=DEFAULT_FILE_SIZE, show_default=True,
                  help="Size of the large data file; should exceed the client's memory so reads miss the page cache.")
    @click.option("--pool", "pool", type=int, default=200, show_default=True, help="Number of small files in the FIFO pool.")
    @click.option("--block", type=SIZE, default="1MiB", show_default=True, help="Block size of data reads and writes.")
    @json_option
    def init(directory: Path, file_size: int, pool: int, block: int, as_json: bool):
        """Create the probe's data file and small-file pool in DIRECTORY."""
        # lazy: numpy via services.probe.run: kept off the command's `--help` and its usage errors
        from ioweather.services.probe.run import init_probe

        label = f"writing {directory}/data"
        if stderr.is_terminal:
            with progress(sizes=True) as bar:
                task = bar.add_task(label, total=file_size)
                info = init_probe(directory, file_size, pool, block=block,
                                  on_progress=lambda done, total: bar.update(task, completed=done))
        else:
            info = init_probe(directory, file_size, pool, block=block, on_progress=ProgressLines(label))
        if as_json:
            print_json(info.to_json())
            return
        mem = info.memory_bytes
        click.echo(f"probe directory {directory}: {format_bytes(info.file_bytes)} data file, "
                   f"{info.pool_files} pool files")
        if not info.file_exceeds_memory:
            stderr.print(f"note: the data file is smaller than this node's memory ({format_bytes(mem)}): "
                         "data_read may be served from the page cache; use --direct at run time or a larger --file-size")

    @probe.command("run")
    @click.argument("directories", metavar="DIRECTORY...", nargs=-1, required=True, type=click.Path(path_type=Path))
    @click.option("--interval", type=DURATION, default="1s", show_default=True, help="Period, start to start.")
    @click.option("--duration", type=DURATION, default=None, help="Stop after this long (default: until SIGTERM/Ctrl-C).")
    @probe_run_options
    @click.option("--seed", type=int, default=None, help="Seed of the random offsets (default: random; always recorded).")
    @click.option("--quiet", "-q", is_flag=True, help="No periodic summary on stderr.")
    @click.pass_obj
    def run(settings, directories: tuple[Path, ...], interval, duration, targets, block, direct, fsync, timeout, seed,
            quiet):
        """Probe each DIRECTORY every INTERVAL until stopped (or for --duration) and store the samples.

        Several directories (one per file system) are probed by this one process, each as its own
        target with its own deadline: a hung mount times out its own operations and never delays
        the others. With --seed, the i-th directory uses SEED + i.
        """
        # lazy: numpy via services.probe.run: kept off the command's `--help` and its usage errors
        from ioweather.services.probe.run import run_probes

        if interval <= 0:
            raise UserError("--interval must be positive")
        code = run_probes(settings, list(directories), interval=interval, duration=duration, targets=targets,
                          block=block, direct=direct, fsync=fsync, timeout=timeout, seed=seed, quiet=quiet)
        sys.exit(code)

    @probe.command("archive")
    @click.option("--keep-days", type=int, default=1, show_default=True,
                  help="Days (before today, UTC) that stay in the database.")
    @json_option
    @click.pass_obj
    def archive(settings, keep_days, as_json):
        """Move completed days of samples to Parquet (the daemon does this hourly; for cron or after an import)."""
        # lazy: numpy, sqlalchemy via services.probe.targets: kept off the command's `--help` and its usage errors
        from ioweather.services.probe.targets import archive

        answer = archive(open_store(settings), keep_days=keep_days)
        if as_json:
            print_json(answer.to_json())
        else:
            click.echo(f"archived {answer.archived_samples} samples to {settings.parquet_dir / 'probe'}")

    @probe.command("stats")
    @click.option("--target", default=None, help="One target (default: all).")
    @click.option("--interval", type=DURATION, default="10m", show_default=True, help="Interval length.")
    @click.option("--since", type=SINCE, default="24h", show_default=True, help="Start: a duration ago (24h) or a time.")
    @click.option("--until", type=TIME, default="now", show_default=True, help="End time.")
    @json_option
    @click.pass_obj
    def stats(settings, target, interval, since, until, as_json):
        """Interval statistics per target and op: count, errors, quantiles, mean."""
        if interval <= 0:
            raise UserError("--interval must be positive")
        check_order(since, until)
        answer = interval_rows(open_store(settings), target, interval, since, until)
        rows = answer.to_json()
        if as_json:
            print_json(rows)
            return
        sec = format_seconds
        print_table(rows, [("target", "target"), ("op", "op"), ("interval_start", "interval (UTC)", short_time), ("count", "n"),
                           ("errors", "err"), ("timeouts", "t/o"), ("min_s", "min", sec), ("median_s", "median", sec),
                           ("p90_s", "p90", sec), ("p99_s", "p99", sec), ("max_s", "max", sec), ("mean_s", "mean", sec)],
                    empty="no probe samples in this window")

    @probe.command("targets")
    @json_option
    @click.pass_obj
    def targets_cmd(settings, as_json):
        """List the probe targets with their first and last sample and their state.

        starting: no sample stored yet; active: reporting; stale: silent for 10 probe periods (at
        least a minute), UNKNOWN in --check; abandoned: silent for over a day, no longer deciding
        --check; retired: `probe retire`, out of Status, /metrics and --check until a probe of it
        runs again."""
        # lazy: numpy, sqlalchemy via services.probe.targets: kept off the command's `--help` and its usage errors
        from ioweather.services.probe.targets import list_targets
        if not settings.store_exists():
            raise UserError(f"no store at {settings.sqlite_path}")
        rows = list_targets(open_store(settings)).to_json()
        if as_json:
            print_json(rows)
            return
        print_table(rows, [("target", "target"), ("state", "state"), ("host", "host"), ("fs", "file system"),
                           ("runs", "runs"),
                           ("first_sample", "first sample (UTC)", short_time),
                           ("last_sample", "last sample (UTC)", short_time),
                           ("last_sample_age_s", "silent for", format_age)],
                    empty="no probe targets in the store")

    @probe.command("retire")
    @click.argument("target")
    @click.option("--purge", is_flag=True, help="Delete the target's runs, samples and archives instead (asks first).")
    @click.option("--yes", is_flag=True, help="With --purge: do not ask.")
    @json_option
    @click.pass_obj
    def retire_cmd(settings, target, purge, yes, as_json):
        """Retire TARGET: its data stays, Status, /metrics and slowdown --check leave it out.

        A probe of TARGET that runs again brings it back. With --purge the target and all its data are
        deleted, after a confirmation (--yes to skip it, e.g. in a script)."""
        # lazy: numpy, sqlalchemy via services.probe.targets: kept off the command's `--help` and its usage errors
        from ioweather.services.probe import targets as probe_targets

        if not settings.store_exists():
            raise UserError(f"no store at {settings.sqlite_path}")
        store = open_store(settings)
        if not purge:
            answer = probe_targets.retire(store, target)
            if as_json:
                print_json(answer.to_json())
            else:
                click.echo(f"retired {target}: its data stays; a probe of it that runs again brings it back")
            if answer.was == "active":
                stderr.print(f"note: a probe of {target} is still storing samples (on {answer.host}); they are kept "
                             "but not shown until it is restarted", highlight=False, markup=False)
            return
        if not yes:
            if not sys.stdin.isatty():
                raise UserError(f"--purge deletes every sample of {target!r}: confirm with --yes")
            click.confirm(f"delete target {target!r} and all its samples?", abort=True, err=True)
        done = probe_targets.purge(store, target)
        if as_json:
            print_json(done.to_json())
        else:
            click.echo(f"purged {target}: {done.runs:,} runs, {done.samples:,} samples, "
                       f"{done.pieces:,} summaries, {done.files:,} archive files")
        line = skipped_line([(s.path, s.reason) for s in done.skipped])
        if line:  # a link planted in the archive: its file stays, said, and the exit says so too
            stderr.print(f"probe retire: {line}", highlight=False, markup=False, soft_wrap=True)
            sys.exit(1)
