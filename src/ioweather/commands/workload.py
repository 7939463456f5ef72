"""`ioweather workload`: how busy, how bursty, when idle, which events — per file system (METHODS.md section 4)."""

from __future__ import annotations

import math

import click

from ioweather.commands.common import DURATION, SINCE, TIME, _Parsed, json_option
from ioweather.errors import UserError
from ioweather.files import write_atomic
from ioweather.units import format_bytes, parse_rate

RATE = _Parsed("rate", parse_rate)


def _print_human(r: dict) -> None:
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import interval_time, print_table, stderr
    # lazy: jinja2, numpy, rich via views.workload_report: kept off the command's `--help` and its usage errors
    from ioweather.views.workload_report import pct_text, rate_text

    def when(iso: str) -> str:
        return interval_time(iso, r["interval_s"])

    b = r["burstiness"]
    rows = [
        ("range", f"{r['start']} – {r['end']}"),
        ("intervals", f"{r['samples']} of {r['interval_s']:g} s ({r['missing_samples']} missing)"),
        ("observations", f"{r['observations']} from {r['targets']} targets ({r['missing_observations']} missing)"),
        ("read", format_bytes(r["read_bytes"])),
        ("written", format_bytes(r["write_bytes"])),
        ("read/write ratio", "-" if r["read_write_ratio"] is None else f"{r['read_write_ratio']:.2f}"),
        ("peak read", rate_text(r["peak_read_bps"])),
        ("peak write", rate_text(r["peak_write_bps"])),
        ("peak total", rate_text(r["peak_total_bps"])),
        ("mean total", rate_text(r["mean_total_bps"])),
        ("time below 33 % of peak", pct_text(b["frac_time_below_33pct_peak"])),
        ("power-spectrum centroid (read)", format_bytes(r["power_spectrum"]["read"]["centroid_bytes"])),
        ("power-spectrum centroid (write)", format_bytes(r["power_spectrum"]["write"]["centroid_bytes"])),
        ("events", str(len(r["events"]))),
    ]
    print_table([{"label": k, "value": v} for k, v in rows], [("label", "statistic"), ("value", "value")],
                title=f"workload of {r['fs']}")
    print_table(r["idle_periods"], [("bin", "idle minutes"), ("count", "count"), ("minutes", "total minutes", lambda v: f"{v:g}"),
                                    ("frac_time", "share of time", pct_text)],
                title=f"idle periods (< {100 * r['idle_threshold']:g} % of peak)")
    shown = r["events"][:20]
    print_table(shown, [("start", "start (UTC)", when), ("end", "end", when), ("peak_time", "peak at", when),
                        ("peak_bps", "peak", rate_text),
                        ("bytes", "bytes", format_bytes)],
                title="events", empty=f"no events above {rate_text(r['min_amplitude_bps'])}")
    if len(r["events"]) > len(shown):
        stderr.print(f"{len(r['events']) - len(shown)} more events: use --json or --html")


def register(cli: click.Group) -> None:
    @cli.command()
    @click.option("--fs", "fs", required=True, help="File system name (as given to `ioweather import/collect --fs`).")
    @click.option("--since", type=SINCE, default=None, help="Start: a time or a duration ago (default: the first data).")
    @click.option("--until", type=TIME, default=None, help="End time (default: the last data).")
    @click.option("--resample", type=DURATION, default="60s", show_default=True,
                  help="Interval of the aggregate series (peaks, CDF, idle periods, events, ACF).")
    @click.option("--idle-threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
                  show_default=True, help="Idle = aggregate rate below this fraction of the peak.")
    @click.option("--smooth", type=DURATION, default="600s", show_default=True, help="Event detection smoothing window.")
    @click.option("--min-amplitude", type=RATE, default="1GiB/s", show_default=True,
                  help="Smallest event: how far a peak must rise above its surroundings (bytes/s).")
    @click.option("--acf-max-lag", type=DURATION, default="24h", show_default=True, help="Longest autocorrelation lag.")
    @click.option("--no-rollups", "no_rollups", is_flag=True,
                  help="Read every row instead of the per-file summaries (slower; the same numbers).")
    @click.option("--dask", "dask_address", metavar="SPEC", default=None,
                  help="Scan the days on a Dask cluster: tcp://HOST:PORT, local[:N] or slurm[:key=value,...] "
                       "(needs ioweather[dask]; the workers must see the store at the same path; "
                       "docs/deployment.md). The same numbers as without.")
    @json_option
    @click.option("--html", "html", type=click.Path(dir_okay=False, writable=True), default=None,
                  help="Write a self-contained HTML report with the figures to this file.")
    @click.pass_obj
    def workload(settings, fs, since, until, resample, idle_threshold, smooth, min_amplitude, acf_max_lag, no_rollups,
                 dask_address, as_json, html):
        """Workload statistics of a file system from its server-side telemetry (docs/workload.md).

        Totals per day and month, peak and mean throughput, burstiness, idle periods,
        the I/O power spectrum, autocorrelation, and I/O events. See docs/workload.md.
        """
        # lazy: numpy via services.telemetry.workload: kept off the command's `--help` and its usage errors
        from ioweather.services.telemetry.workload import check_options, compute
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, progress, stderr

        if as_json and html:
            raise UserError("choose one of --json and --html")
        check_options(resample, smooth, min_amplitude)
        if acf_max_lag < 0 or not math.isfinite(acf_max_lag):
            raise UserError("--acf-max-lag must be a non-negative duration")
        with progress() as bar:
            task = bar.add_task("workload", total=4 if html else 3)

            def on_step(name):
                bar.update(task, description=name, advance=1 if name in ("power spectrum", "statistics", "report") else 0)

            result, data = compute(settings, fs, since, until, resample, idle_threshold, smooth, min_amplitude,
                                   acf_max_lag, on_step, use_rollups=not no_rollups,
                                   warn=lambda m: stderr.print(f"ioweather: warning: {m}", highlight=False, soft_wrap=True),
                                   dask=dask_address)
            if html:
                # lazy: jinja2, numpy, rich via views.workload_report: kept off the command's `--help` and its usage errors
                from ioweather.views.workload_report import render

                on_step("report")
                write_atomic(html, render(result.to_json(), data))
            bar.update(task, completed=bar.tasks[0].total)
        if as_json:
            print_json(result.to_json())
        elif html:
            click.echo(f"wrote {html}", err=True)
        else:
            _print_human(result.to_json())
