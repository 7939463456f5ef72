"""`ioweather collect` (the telemetry daemon, services/telemetry/collect.py); `ioweather import KIND SOURCE...`
(histories) is in imports.py.

Both end in the same Parquet layout (store/telemetry_layout.py) that `ioweather workload`
reads. METHODS.md section 4; docs/telemetry.md is the user guide.
"""

from __future__ import annotations

from pathlib import Path

import click

from ioweather.commands.common import DURATION, json_option
from ioweather.commands.imports import import_group
from ioweather.errors import UserError
from ioweather.services.telemetry.exporter_defaults import JOB_TOP
from ioweather.units import format_seconds
from ioweather.views.output import print_json, print_table


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
    @click.option("--job-top", type=click.IntRange(0, 1_000_000), default=JOB_TOP, show_default=True,
                  help="Lustre job_stats: rows stored per target and tick for this many jobs (those moving the "
                       "most), the others summed into one <target>/_other row.")
    @click.option("--quiet", "-q", is_flag=True, help="No log lines on stderr.")
    @json_option
    @click.pass_obj
    def collect(settings, interval, source_names, proc_root, fs, duration, flush_s, timeout, mounts, no_jobs, job_top,
                quiet, as_json):
        """Sample server-side telemetry every INTERVAL and store it (per-interval amounts, Parquet).

        Counters (bytes, operations) are stored as the amount of each interval; a counter that
        goes backwards (restart) and every missed interval are stored as missing, never as 0."""
        # lazy: numpy, pandas, pyarrow, sqlalchemy via services.telemetry.collect: kept off the command's `--help` and its usage errors
        from ioweather.services.telemetry.collect import run_collect  # numpy, pandas: not at every command's start

        if interval <= 0:
            raise UserError("--interval must be positive")
        if not Path(proc_root).is_dir():
            raise UserError(f"--proc-root {proc_root}: no such directory")
        summary = run_collect(settings, interval=interval, source_names=source_names, root=proc_root, fs=fs,
                              duration=duration, flush_s=flush_s or interval, timeout=timeout, mounts=mounts,
                              jobs=not no_jobs, job_top=job_top, quiet=quiet)
        if as_json:
            print_json(summary.to_json())
            return
        print_table(summary.to_json()["sources"], [
            ("name", "source"), ("ok", "ok"), ("failed", "failed"), ("timeouts", "timeouts"), ("skipped", "skipped"),
            ("samples", "samples"), ("mean_duration_s", "mean read", format_seconds), ("last_error", "last error")],
            title=f"{summary.ticks} ticks, {summary.rows_written} rows written, "
                  f"CPU {summary.cpu_pct:.2f}% of a core" if summary.cpu_pct is not None else None)

    import_group(cli)  # `import KIND SOURCE...`: commands/imports.py makes a sub-command per importer
