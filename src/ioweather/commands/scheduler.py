"""`ioweather import slurm` and `ioweather import nersc-jobsdb`: scheduler jobs into the store.

Both are sub-commands of the one `import` group (commands/imports.py), beside the telemetry
importer kinds.
"""

from __future__ import annotations

import click

from ioweather.commands.common import DURATION, SINCE, TIME, json_option
from ioweather.commands.imports import import_group
from ioweather.units import to_ns
from ioweather.views.output import print_json, print_table, short_time, stderr

def _report(summary: dict, as_json: bool) -> None:
    for note in summary["notes"]:
        stderr.print(f"import: {note}", highlight=False)
    if as_json:
        print_json(summary)
        return
    print_table([summary], [
        ("source", "source"), ("cluster", "cluster", lambda c: c or "''"), ("jobs", "jobs"), ("running", "running"),
        ("replaced", "replaced"), ("first_start", "first start (UTC)", short_time),
        ("last_start", "last start (UTC)", short_time)],
        title=f"scheduler jobs imported (local times read in zone {summary['timezone']})")


@click.command("slurm")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--since", type=SINCE, default=None,
              help="Jobs running from this time on (ISO 8601, unix seconds or a duration such as 2h; default 24h).")
@click.option("--until", type=TIME, default=None, help="Jobs running up to this time (default now).")
@click.option("--cluster", default=None, metavar="NAME",
              help="Cluster to ask sacct about (--clusters), and the name for a FILE without a Cluster column.")
@click.option("--timezone", "tz", default=None, metavar="ZONE",
              help="IANA zone of sacct's local times (the cluster's zone; default this machine's).")
@click.option("--timeout", "timeout_s", type=DURATION, default="120s", show_default=True,
              help="Give up on sacct after this long.")
@json_option
@click.pass_obj
def slurm(settings, file, since, until, cluster, tz, timeout_s, as_json):
    """Import Slurm jobs: run `sacct` for the jobs running between --since and --until, or read
    FILE, a saved `sacct --parsable2` output with its header line (or pytokio's JSON cache of one).

    Only allocations are stored (steps are skipped), one row per cluster and job id; importing
    a job again replaces it. A job still running is stored without an end and updated by the
    next import. sacct prints local times without a zone: they are read in --timezone."""
    from ioweather.services.scheduler import import_slurm
    from ioweather.units import check_timezone

    if tz is not None:
        check_timezone(tz)
    summary = import_slurm(settings, file, since_ns=to_ns(since) if since else None,
                           until_ns=to_ns(until) if until else None, cluster=cluster, tz=tz, sacct_timeout_s=timeout_s)
    _report(summary, as_json)


@click.command("nersc-jobsdb")
@click.argument("file", type=click.Path(dir_okay=False))
@json_option
@click.pass_obj
def nersc_jobsdb(settings, file, as_json):
    """Import jobs from a copy of the NERSC jobs database (SQLite, table `summary`: stepid,
    hostname, start, completion, numnodes; pytokio's cache format). Opened read-only."""
    from ioweather.services.scheduler import import_nersc_jobsdb

    _report(import_nersc_jobsdb(settings, file), as_json)


def register(cli: click.Group) -> None:
    group = import_group(cli)
    for cmd in (slurm, nersc_jobsdb):
        group.add_command(cmd)
