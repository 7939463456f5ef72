"""`ioweather import`: one click group. Each importer kind (sources/telemetry/importers.py: the
telemetry kinds, `slurm`, `nersc-jobsdb`) is a sub-command made from its registry entry (kind,
help, target, options); other modules add theirs (`job-features`) with
`import_group(cli).add_command(...)`.

The importer sub-commands are built when asked for, so that starting the command line does not
import every importer (pandas, h5py, SQLAlchemy) to list them.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from ioweather.commands.common import DURATION, SINCE, TIME, json_option, quiet_option, quiet_output
from ioweather.errors import UserError
from ioweather.services.telemetry import import_kinds as importers
from ioweather.units import check_timezone, to_ns
from ioweather.views.output import print_json, print_table, short_time, stderr

HELP = """Import recorded data: telemetry histories (`import KIND SOURCE... --fs FS`), scheduler jobs
(`import slurm`, `import nersc-jobsdb`) and per-job feature tables (`import job-features`).
See `ioweather import KIND --help`.

Importing the same SOURCE again replaces its earlier import. A SOURCE that fails is reported and
leaves nothing behind; the others are still imported."""

_TYPES = {"duration": DURATION, "time": TIME, "since": SINCE, "text": None}


class ImportGroup(click.Group):
    """Every sub-command, whichever module adds it, takes -q (commands/common.py quiet_output)."""

    def list_commands(self, ctx) -> list[str]:
        return importers.kinds() + sorted(self.commands)

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        super().add_command(_with_quiet(cmd), name)

    def get_command(self, ctx, name: str):
        if name in self.commands:
            return self.commands[name]
        if name in importers.REGISTRY:
            return _with_quiet(importer_command(importers.face(name)))
        return None


def _with_quiet(cmd: click.Command) -> click.Command:
    if any(p.name == "quiet" for p in cmd.params):
        return cmd
    quiet_option(cmd)
    inner = cmd.callback

    @functools.wraps(inner)
    def callback(*args, quiet: bool = False, **kwargs):
        with quiet_output(quiet, kwargs.get("as_json", False)):
            return inner(*args, **kwargs)

    cmd.callback = callback
    return cmd


def import_group(cli: click.Group) -> click.Group:
    """The `import` group of `cli`, made on first use: each module that adds to it asks for it."""
    group = cli.commands.get("import")
    if not isinstance(group, ImportGroup):
        group = ImportGroup("import", help=HELP)
        cli.add_command(group)
    return group


def _option(opt: importers.Option):
    if opt.type == "flag":
        return click.option(opt.flag, opt.dest, is_flag=True, help=opt.help)
    return click.option(opt.flag, opt.dest, type=_TYPES[opt.type], default=opt.default, metavar=opt.metavar,
                        show_default=opt.default is not None, help=opt.help)


def _values(kind: importers.Kind, options: dict) -> dict:
    """The kind's own options as its constructor takes them: times in unix ns."""
    times = {o.dest for o in kind.options if o.type in ("time", "since")}
    return {k: to_ns(v) if k in times and v is not None else v for k, v in options.items()}


def importer_command(kind: importers.Kind) -> click.Command:
    """The sub-command of one importer kind, from its face alone (its reader is imported when it runs):
    what its target takes (telemetry: SOURCE... --fs FS [--timezone] --since --until; jobs: FILE,
    optional for a kind that reads live), its own options, --json."""
    if kind.target == "jobs":
        def run(settings, file, as_json, **options):
            _import_jobs(settings, kind.name, file, _values(kind, options), as_json)

        params = [click.argument("file", required=not kind.live, type=click.Path(dir_okay=False))]
    else:
        def run(settings, sources, fs, since, until, as_json, tz=None, **options):
            _import(settings, kind.name, sources, fs, tz, since, until, _values(kind, options), as_json)

        params = [click.argument("sources", nargs=-1, required=True, metavar="SOURCE..."),
                  click.option("--fs", required=True, help="File system (dataset) name to import into.")]
        if kind.timezone:
            params.append(click.option("--timezone", "tz", default=None, metavar="ZONE",
                                       help="IANA zone of times written without offset (default UTC)."))
        params += [click.option("--since", type=SINCE, default=None,
                                help="Import only from this time on (a time or a duration ago)."),
                   click.option("--until", type=TIME, default=None, help="Import only up to this time.")]
    params += [_option(o) for o in kind.options]
    params += [json_option, click.pass_obj]
    fn = run
    for p in reversed(params):
        fn = p(fn)
    return click.command(kind.name, help=kind.help)(fn)


def _note(text: str) -> None:
    # markup=False: a note quotes the input ("nid[0001-0004]"), which rich would read as markup
    stderr.print(f"import: {text}", highlight=False, markup=False)


def _import(settings, kind, sources, fs, tz, since, until, options, as_json) -> None:
    # lazy: numpy, pandas, pyarrow, sqlalchemy via services.answers.imports: kept off the command's `--help` and its usage errors
    from ioweather.services.answers.imports import check_fs_name, import_sources
    check_fs_name(fs)
    if tz is not None:
        check_timezone(tz)
    since_ns = to_ns(since) if since else None
    until_ns = to_ns(until) if until else None
    if since_ns is not None and until_ns is not None and until_ns <= since_ns:
        raise UserError("--until must be after --since")
    answer = import_sources(settings, kind, sources, fs, tz=tz, since_ns=since_ns,
                            until_ns=until_ns, on_error=lambda m: click.echo(f"ioweather: error: {m}", err=True),
                            on_note=_note, **options)
    doc = answer.to_json()
    results, failed = doc["sources"], doc["failed"]
    weather = answer.job_weather
    if as_json:
        print_json(answer.to_json())
    elif failed < len(results):  # when every source failed, their error lines say it all
        print_table([r for r in results if "error" not in r], [
            ("source", "source", lambda s: s if "://" in s else Path(s).name), ("rows", "rows"),
            ("missing_values", "missing"), ("targets", "targets"), ("start", "start"), ("end", "end"),
            ("bad_lines", "bad lines"), ("replaced_files", "replaced files"),
            ("rows_per_s", "rows/s", lambda v: f"{v:,.0f}")],
            title=f"imported into file system {fs!r}", empty="nothing imported")
        # A summary, so on stdout where -q silences it; only jobs the imported span overlaps are counted
        # (jobs computed for the first time elsewhere in the store are not this import's doing).
        if weather and weather.overlapped:
            click.echo(f"import: recomputed the weather of {weather.overlapped:,} jobs whose window the new "
                       f"telemetry covers")
        if answer.retention:
            click.echo(f"import: {answer.retention}")
    if failed:
        sys.exit(2)


def _import_jobs(settings, kind, source, options, as_json) -> None:
    # lazy: numpy, sqlalchemy via services.jobs.scheduler: kept off the command's `--help` and its usage errors
    from ioweather.services.jobs.scheduler import import_jobs

    summary = import_jobs(settings, kind, source, **options)
    for note in summary.notes:
        _note(note)
    if as_json:
        print_json(summary.to_json())
        return
    print_table([summary.to_json()], [
        ("source", "source"), ("cluster", "cluster", lambda c: c or "''"), ("jobs", "jobs"), ("running", "running"),
        ("replaced", "replaced"), ("first_start", "first start (UTC)", short_time),
        ("last_start", "last start (UTC)", short_time)],
        title=f"scheduler jobs imported (local times read in zone {summary.timezone})")
