"""`ioweather import slurm` and `ioweather import nersc-jobsdb`: scheduler jobs into the store.

The `import` command itself belongs to commands/telemetry.py (`import KIND SOURCE... --fs FS`).
These two kinds take other arguments, so they are commands of their own, reached through the
same word: `register` puts a small dispatcher in front of the telemetry command that sends
`import slurm ...` and `import nersc-jobsdb ...` here and everything else on unchanged.
(If `import` is ever a click group, they are simply added to it.)
"""

from __future__ import annotations

import click

from ioweather.commands.common import DURATION, SINCE, TIME, json_option
from ioweather.units import to_ns
from ioweather.views.output import print_json, print_table, short_time, stderr

HELP_EPILOG = ("Scheduler jobs: 'ioweather import slurm [FILE]' (sacct, live or a saved --parsable2 file) and "
               "'ioweather import nersc-jobsdb FILE'; see their --help.")


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
    from ioweather.sources.telemetry.base import check_timezone

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


SUBCOMMANDS = {"slurm": slurm, "nersc-jobsdb": nersc_jobsdb}


class ImportDispatch(click.Command):
    """`import slurm|nersc-jobsdb ...` to our commands, any other `import ...` to the telemetry import."""

    def __init__(self, telemetry: click.Command, subcommands: dict[str, click.Command]):
        super().__init__(telemetry.name, help=telemetry.help, short_help=telemetry.short_help)
        self.telemetry = telemetry
        self.subcommands = subcommands

    def make_context(self, info_name, args, parent=None, **extra):
        if args and args[0] in self.subcommands:
            return self.subcommands[args[0]].make_context(f"{info_name} {args[0]}", list(args[1:]), parent=parent,
                                                          **extra)
        return self.telemetry.make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        return ctx.command.invoke(ctx)

    def get_short_help_str(self, limit: int = 45) -> str:
        return self.telemetry.get_short_help_str(limit)

    def get_help(self, ctx) -> str:
        return self.telemetry.get_help(ctx)

    def format_help(self, ctx, formatter) -> None:  # when another wrapper (an `import` group) asks us
        self.telemetry.format_help(ctx, formatter)


def register(cli: click.Group) -> None:
    existing = cli.commands.get("import")
    if isinstance(existing, click.Group):
        for cmd in SUBCOMMANDS.values():
            existing.add_command(cmd)
        return
    if existing is None:  # the telemetry commands are not available: `import` is ours alone
        group = click.Group("import", help="Import recorded data.")
        for cmd in SUBCOMMANDS.values():
            group.add_command(cmd)
        cli.add_command(group)
        return
    existing.epilog = f"{existing.epilog}\n\n{HELP_EPILOG}" if existing.epilog else HELP_EPILOG
    cli.add_command(ImportDispatch(existing, SUBCOMMANDS), "import")
