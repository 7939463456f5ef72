"""`ioweather export`: serve the telemetry store (collect, import) to Prometheus; docs/exporter.md."""

from __future__ import annotations

import sys
import threading

import click

from ioweather.commands.common import DURATION, json_option
from ioweather.errors import UserError
from ioweather.services.telemetry.exporter_defaults import DEFAULT_PORT, JOB_WINDOW_S, STALE_S, TOP_JOBS
from ioweather.services.runtime.server import is_loopback, url_of
from ioweather.views.output import print_json, print_table


def register(cli: click.Group) -> None:
    @cli.command("export")
    @click.option("--fs", "fs_names", multiple=True, metavar="NAME",
                  help="Dataset to export (repeatable; default: every dataset of the store).")
    @click.option("--host", default="127.0.0.1", show_default=True,
                  help="Address to listen on; anything but loopback exposes the metrics to the network.")
    @click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
                  help="TCP port (0: any free port).")
    @click.option("--top-jobs", "--job-top", "top_jobs", type=click.IntRange(0, 100_000), default=TOP_JOBS,
                  show_default=True, help="Lustre job_stats: at most this many jobs per dataset (those moving the "
                  "most bytes); with --capture the others are summed into jobid=\"_other\" series.")
    @click.option("--job-window", type=DURATION, default=f"{JOB_WINDOW_S:g}s", show_default=True,
                  help="A job is exported while it has job_stats rows this close to the newest data.")
    @click.option("--stale", type=DURATION, default=f"{STALE_S:g}s", show_default=True,
                  help="Leave out targets and readings older than this before the newest data of their dataset.")
    @click.option("--capture", "capture", metavar="FILE",
                  help="Export this `lctl get_param` capture as a stateless exporter would (lustrefs-exporter's "
                       "families, raw values), without any store; with --once or --list.")
    @click.option("--once", is_flag=True, help="Print the exposition on stdout and exit (node_exporter's textfile collector).")
    @click.option("--list", "list_only", is_flag=True,
                  help="List the exported families and their series count, and exit (--json: as JSON).")
    @json_option
    @click.pass_obj
    def export(settings, fs_names, host, port, top_jobs, job_window, stale, capture, once, list_only, as_json):
        """Serve the stored server telemetry as Prometheus metrics on http://HOST:PORT/metrics.

        Lustre targets get lustre_exporter's names and labels (lustre_read_bytes_total{component,
        target}, lustre_stats_total, lustre_job_*_total{jobid}, lustre_free_bytes ...), the
        rest ioweather_* names; counters are the sums of the stored amounts.

        With --capture FILE: what a stateless exporter exports for one `lctl get_param` output, in
        whamcloud/lustrefs-exporter's names, labels and units (docs/exporter.md)."""
        if job_window <= 0 or stale <= 0:
            raise UserError("--job-window and --stale must be positive")
        if once and (as_json or list_only):
            raise UserError("--once prints the exposition; --list (or --json) lists the families instead")
        list_only = list_only or as_json
        if capture is not None:  # before importing the store's exporter: pandas and the store are not needed
            listing = _export_capture(capture, top_jobs, once, list_only)
            if listing is None:
                return
        else:
            # lazy: numpy, pandas, prometheus_client, pyarrow, sqlalchemy via services.telemetry.exporter: kept off the command's `--help` and its usage errors
            from ioweather.services.telemetry.exporter import (TelemetryExporter, family_list, make_server, no_telemetry,
                                                               serve)

            exporter = TelemetryExporter(settings, fs_names, top_jobs=top_jobs, job_window_s=job_window, stale_s=stale,
                                         say=lambda m: click.echo(f"ioweather export: {m}", err=True))
            missing = [f for f in fs_names if f not in exporter.datasets()]
            if missing:
                raise no_telemetry(settings, missing[0])
            if not (once or list_only):
                server = make_server(exporter, host, port)
                if not is_loopback(host):
                    click.echo(f"ioweather: warning: listening on {host}: anyone who can reach it can read the metrics "
                               "(no authentication)", err=True)
                say = lambda m: click.echo(f"ioweather export: {m}", err=True)  # noqa: E731
                listening = f"{url_of(server.socket)}metrics ({', '.join(exporter.datasets()) or 'no datasets yet'})"
                serve(exporter, server, threading.Event(), say=say, started=lambda: say(listening))
                return
            text = exporter.exposition(wait_s=3600.0)
            if once:
                sys.stdout.buffer.write(text)
                return
            listing = family_list(exporter.families())
        if as_json:
            print_json(listing.to_json())
            return
        print_table(listing.to_json()["families"], [("name", "family"), ("type", "type"), ("series", "series"),
                                                    ("labels", "labels", lambda v: ", ".join(v))],
                    title="exported families")


def _export_capture(path: str, top_jobs: int, once: bool, list_only: bool):
    """`--capture FILE`: its exposition printed with --once (None), else its families' listing."""
    # lazy: prometheus_client via services.telemetry.exporter_lctl: kept off the command's `--help` and its usage errors
    from ioweather.services.telemetry.exporter_lctl import capture_families, family_list, read_capture
    # lazy: prometheus_client via views.exposition: kept off the command's `--help` and its usage errors
    from ioweather.views.exposition import render

    if not (once or list_only):
        raise UserError("--capture FILE exports one capture: add --once (the exposition) or --list (the families)")
    cap, notes = read_capture(path)
    for note in notes:
        click.echo(f"ioweather export: {path}: {note}", err=True)
    families = capture_families(cap, top_jobs)
    if once:
        sys.stdout.buffer.write(render(families))
        return None
    return family_list(families)
