"""`ioweather serve` (dashboard + /metrics over the store) and `ioweather watch DIR` (the main job:
init if needed, probe, and serve, in one process)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import click

from ioweather.commands.common import DURATION, SIZE, probe_run_options
from ioweather.errors import UserError
from ioweather.services.runtime.server import allowed_hosts, bind, is_loopback, run_server, url_of
from ioweather.services.runtime.defaults import DEGRADED, SEVERE
from ioweather.units import format_bytes

#: Laptop-sized defaults for `watch`: a quick first start and little disk, said so on screen.
WATCH_FILE_SIZE = "256MiB"
WATCH_POOL = 100
#: How long `watch` waits at a stop for the probe to store its last samples.
PROBE_STOP_S = 30


def _server_options(f):
    f = click.option("--baseline", type=DURATION, default="30d", show_default=True,
                     help="Window whose median is an op's usual duration.")(f)
    f = click.option("--crit", type=float, default=SEVERE, show_default=True,
                     help="Slowdown from which a target is 'severely degraded'.")(f)
    f = click.option("--warn", type=float, default=DEGRADED, show_default=True,
                     help="Slowdown from which a target is 'degraded'.")(f)
    f = click.option("--port", type=click.IntRange(0, 65535), default=8050, show_default=True,
                     help="TCP port (0: any free port).")(f)
    f = click.option("--allowed-host", "allowed_host", multiple=True, envvar="IOWEATHER_ALLOWED_HOSTS",
                     metavar="NAME",
                     help="Also answer requests whose Host header is NAME (a reverse proxy's public name, "
                          "'*.example.org'); repeatable, or IOWEATHER_ALLOWED_HOSTS='a b'. Other names get 400 "
                          "(DNS rebinding); loopback and --host are always answered.")(f)
    f = click.option("--host", default="127.0.0.1", show_default=True,
                     help="Address to listen on; anything but loopback exposes the dashboard to the network.")(f)
    return f


def _check_thresholds(warn: float, crit: float, baseline: float) -> None:
    if not 0 < warn < crit:
        raise UserError(f"need 0 < --warn < --crit, got --warn {warn:g} --crit {crit:g}")
    if baseline <= 0:
        raise UserError("--baseline must be positive")


def _listen(host: str, port: int):
    if not is_loopback(host):
        click.echo(f"ioweather: warning: listening on {host}: anyone who can reach this address can read the "
                   "dashboard and /metrics (there is no authentication); use a reverse proxy with access control",
                   err=True)
    sock = bind(host, port)
    return sock, url_of(sock)


def _say(line: str) -> None:
    click.echo(line, err=True)


# The dashboard's pages as `serve --help` lists them (slug, title, description): importing web.pages to
# ask its registry loads numpy, SQLAlchemy and Starlette (0.5 s) for a help screen.
# tests/test_imports_measured.py checks this list against the pages registry.
PAGES: tuple[tuple[str, str, str], ...] = (
    ('status', 'Status',
     'Is the file system slow right now? State, slowdown per op, last hour, 30-day climate.'),
    ('timeline', 'Probe timeline',
     'Every probe sample of a target on a log scale, interval statistics and slowdown below.'),
    ('history', 'Slowdown history',
     'Slowdown per op and interval as a heatmap, with the chosen statistic and interval.'),
    ('factors', 'Factors',
     'Latency density of a probe op: performance classes, splits and outlier cutoff.'),
    ('jobs', 'Jobs',
     'Darshan jobs in the store: sortable list with findings, interfaces by job size, projects.'),
    ('workload', 'Workload',
     'Server-side telemetry of a file system: daily rates, burstiness, idle periods, power spectrum, I/O events.'),
    ('servers', 'Servers',
     'Per-OST/MDT read and write rates (heatmap), shares of the file system, imbalanced targets.'),
    ('metadata', 'Metadata',
     'MDS/MDT operation rates by operation, metadata events and burstiness.'),
    ('capacity', 'Capacity',
     'Fullness per OST and of the file system, days until full, inode use, lctl state.'),
    ('report', 'Report',
     "A file system's week: slowdown climate, change points, events with their culprit jobs and cost, benchmark standing, fullness."),
    ('talkers', 'Talkers',
     'Jobs and users moving the most bytes and operations (Lustre job_stats).'),
    ('contents', 'Contents',
     'Content snapshots: file size and age distributions, projects, owners, growth.'),
    ('bench', 'Benchmarks',
     'Regression benchmarks: durations, contention (mean/optimum) and fraction of peak per motif.'),
)


def pages_help() -> str:
    return "\n".join(f"/{slug:<9} {title}: {description}" for slug, title, description in PAGES)


class _PagesHelp(click.Command):
    """Lists the dashboard's pages after the help text."""

    def format_help_text(self, ctx, formatter):
        super().format_help_text(ctx, formatter)
        with formatter.section("Pages"):
            formatter.write_text("\n\b\n" + pages_help())


def register(cli: click.Group) -> None:
    @cli.command(cls=_PagesHelp)
    @_server_options
    @click.option("--quiet", "-q", is_flag=True, help="No access log (one line per request); warnings still print.")
    @click.pass_obj
    def serve(settings, host, allowed_host, port, warn, crit, baseline, quiet):
        """Serve the dashboard and Prometheus /metrics over the store.

        Each page has a JSON twin under /api/; a page whose data the store lacks is hidden.
        Binds 127.0.0.1 unless --host says otherwise.
        """
        # lazy: jinja2, numpy, rich, sqlalchemy, starlette via web.app: kept off the command's `--help` and its usage errors
        from ioweather.web.app import WebConfig, create_app

        _check_thresholds(warn, crit, baseline)
        hosts = allowed_hosts(host, allowed_host)
        sock, url = _listen(host, port)
        app = create_app(settings, WebConfig(warn=warn, crit=crit, baseline_s=baseline), allowed_hosts=hosts)
        click.echo(f"ioweather: dashboard at {url}  (Prometheus: {url}metrics; Ctrl-C to stop)")
        sys.stdout.flush()
        run_server(app, sock, threading.Event(), _say, quiet=quiet, shutdown=app.state.ctx.close)
        click.echo("ioweather: stopped", err=True)

    @cli.command()
    @click.argument("directories", metavar="DIRECTORY...", nargs=-1, required=True, type=click.Path(path_type=Path))
    @_server_options
    @click.option("--interval", type=DURATION, default="1s", show_default=True, help="Probe period, start to start.")
    @probe_run_options
    @click.option("--quiet", "-q", is_flag=True, help="No progress or information lines on stderr (problems still are).")
    @click.option("--file-size", type=SIZE, default=WATCH_FILE_SIZE, show_default=True,
                  help="Data file size when DIRECTORY is new (laptop default; 'probe init' uses 1GiB).")
    @click.option("--pool", type=int, default=WATCH_POOL, show_default=True,
                  help="Small files in the pool when DIRECTORY is new.")
    @click.pass_obj
    def watch(settings, directories: tuple[Path, ...], host, allowed_host, port, warn, crit, baseline, interval, targets,
              block, direct, fsync, timeout, quiet, file_size, pool):
        """The main job: probe DIRECTORY every second and serve the dashboard, in one process.

        Creates the probe files in DIRECTORY first if it is not a probe directory yet,
        prints the dashboard's URL, and stops cleanly on Ctrl-C (the last samples are stored).
        Several directories (one per file system) are each their own target, probed side by side:
        a hung one never delays the others.
        """
        # lazy: numpy via services.probe.run: kept off the command's `--help` and its usage errors
        from ioweather.services.probe.run import BackgroundProbe, init_probe, is_probe_dir, probe_labels
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import progress
        # lazy: jinja2, numpy, rich, sqlalchemy, starlette via web.app: kept off the command's `--help` and its usage errors
        from ioweather.web.app import WebConfig, create_app

        _check_thresholds(warn, crit, baseline)
        if interval <= 0:
            raise UserError("--interval must be positive")
        if file_size < block:
            raise UserError(f"--block ({block} B) is larger than --file-size ({file_size} B)")
        hosts = allowed_hosts(host, allowed_host)
        if targets:  # a bad list of labels is refused before anything is written (default labels: at the start)
            probe_labels(list(directories), targets)
        sock, url = _listen(host, port)  # fail on a busy port before writing anything
        try:
            for directory in directories:
                if is_probe_dir(directory):
                    if not quiet:
                        click.echo(f"watch: using the existing probe directory {directory}", err=True)
                else:
                    with progress(sizes=True) as bar:
                        task = bar.add_task(f"creating {directory}/data", total=file_size)
                        info = init_probe(directory, file_size, pool, block=block,
                                          on_progress=lambda done, total: bar.update(task, completed=done))
                    click.echo(f"watch: created probe directory {directory}: {format_bytes(info.file_bytes)} data "
                               f"file and {info.pool_files} small files (laptop defaults; for a shared file system "
                               f"use 'ioweather probe init {directory} --file-size SIZE' with SIZE above the client's "
                               "memory)", err=True)
                    if not info.file_exceeds_memory:
                        click.echo("watch: note: the data file is smaller than this machine's memory, so data_read "
                                   "may be served from the page cache", err=True)
        except BaseException:
            sock.close()
            raise

        stop = threading.Event()
        probe = BackgroundProbe(settings, list(directories), stop, interval=interval, targets=targets, block=block,
                                direct=direct, fsync=fsync, timeout=timeout, seed=None, quiet=True)
        app = create_app(settings, WebConfig(warn=warn, crit=crit, baseline_s=baseline), allowed_hosts=hosts)
        try:
            probe.start()
        except BaseException:
            sock.close()
            raise
        click.echo(f"ioweather: probing {', '.join(map(str, directories))} every {interval:g} s; dashboard at {url}  "
                   f"(Prometheus: {url}metrics; Ctrl-C to stop)")
        sys.stdout.flush()
        try:
            run_server(app, sock, stop, _say, shutdown=app.state.ctx.close)
        finally:
            probe.finish(PROBE_STOP_S, _say)
        click.echo("ioweather: stopped (probe samples stored)", err=True)
