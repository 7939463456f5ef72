"""The `ioweather` command.

Each feature lives in its own module under `ioweather.commands` and exposes
`register(cli)`; `COMMANDS` names the module(s) behind each command, imported when
the command is used. A module that fails to import (a missing optional dependency)
is reported and its commands skipped, so one broken feature never takes the whole
tool down.
"""

from __future__ import annotations

import importlib
import sys

import click

from ioweather import __version__
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.files import display_path

# The module(s) that register each top-level command. A command imports only its own module, so
# `ioweather slowdown --check` (run by cron every minute) does not pay for every other command's
# imports (numpy, Jinja, rich's progress: ~0.3 s of a 1 s budget); `--help` lists them from SUMMARIES.
# tests/test_cli_commands.py checks this table against what the modules register.
COMMANDS: dict[str, tuple[str, ...]] = {
    "bench": ("ioweather.commands.bench",),
    "changes": ("ioweather.commands.changes",),
    "collect": ("ioweather.commands.telemetry",),
    "correlations": ("ioweather.commands.umami",),
    "events": ("ioweather.commands.events",),
    "export": ("ioweather.commands.export",),
    "factors": ("ioweather.commands.factors",),
    "fsstats": ("ioweather.commands.fsstats",),
    # telemetry makes the `import` group; scheduler adds slurm and nersc-jobsdb, umami job-features
    "import": ("ioweather.commands.telemetry", "ioweather.commands.umami"),
    "iomodel": ("ioweather.commands.iomodel",),
    "job": ("ioweather.commands.jobs",),
    "jobs": ("ioweather.commands.jobs",),
    "lab": ("ioweather.commands.lab",),
    "probe": ("ioweather.commands.probe",),
    "report": ("ioweather.commands.events",),
    "serve": ("ioweather.commands.web",),
    "slowdown": ("ioweather.commands.slowdown",),
    "store": ("ioweather.commands.store",),
    "umami": ("ioweather.commands.umami",),
    "watch": ("ioweather.commands.web",),
    "workload": ("ioweather.commands.workload",),
    "why": ("ioweather.commands.why",),
}


# Each command's summary, as its own help's first paragraph says it: `ioweather --help` lists the commands
# from here without importing their modules (with their services at the top of each, loading them all took
# 0.6 s against 0.1 s). tests/test_cli_commands.py checks each against the command's own help.
SUMMARIES: dict[str, str] = {
    'bench': 'Regression benchmarks: fixed fio motifs on a schedule, contention and fraction of peak.',
    'changes': "Change points: when a series' level shifted, from what to what (PELT; docs/changes.md).",
    'collect': 'Sample server-side telemetry every INTERVAL and store it (per-interval amounts, Parquet).',
    'correlations': "Which metrics matter: Pearson's r of fraction of peak with each metric, and its p-value.",
    'events': 'I/O events of a file system and the jobs that caused them, with the compute exposed (docs/events.md).',
    'export': 'Serve the stored server telemetry as Prometheus metrics on http://HOST:PORT/metrics.',
    'factors': 'Which hidden performance factor each operation hit, from latency densities (docs/factors.md).',
    'fsstats': 'What is stored, how old, how it grows: content snapshots (docs/fsstats.md).',
    'import': ('Import recorded data: telemetry histories (`import KIND SOURCE... --fs FS`), scheduler jobs '
               '(`import slurm`, `import nersc-jobsdb`) and per-job feature tables (`import job-features`). '
               'See `ioweather import KIND --help`.'),
    'iomodel': 'The io-model micro-benchmark: time single read()/write() calls per layout, size and cache state.',
    'job': 'One job\'s I/O characterization and findings from its Darshan LOG ("why was my job slow?").',
    'jobs': "A center's Darshan archive: ingest logs, then summarize across jobs (docs/darshan.md).",
    'lab': 'The I/O lab: real MPI runs under Darshan with planted causes, and the advisor scored on them.',
    'probe': 'Probe a file system every second and store the timings (docs/probe.md).',
    'report': ("A file system's week on one page: slowdown climate and worst episodes, change points, events "
               "with their culprit jobs and cost, benchmark standing, fullness (docs/events.md)."),
    'serve': 'Serve the dashboard and Prometheus /metrics over the store.',
    'slowdown': 'Slowdown = stat(interval) / median(baseline) per target, op and interval (docs/methods.md §1).',
    'store': 'The store itself: its database and Parquet archives.',
    'umami': "A job's weather against its motif's climate, and a one-line verdict: the system or your code.",
    'watch': 'The main job: probe DIRECTORY every second and serve the dashboard, in one process.',
    'why': 'Was the job slow because of its code or the file system? Its I/O time split in seconds.',
    'workload': 'Workload statistics of a file system from its server-side telemetry (docs/workload.md).',
}


class OneLineErrors(click.Group):
    """Turns UserError, usage errors and a few environment errors into one line on stderr."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as e:
            hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
            click.echo(f"ioweather: error: {e.format_message()}{hint}", err=True)
            rv = 2
        except click.Abort:
            click.echo("ioweather: interrupted", err=True)
            rv = 130
        except click.ClickException as e:
            click.echo(f"ioweather: error: {e.format_message()}", err=True)
            rv = e.exit_code
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as e:
            # a file name that is not UTF-8 reads \xff, as ls -b shows it, not \udcff
            click.echo(f"ioweather: error: {display_path(str(e))}", err=True)
            sys.exit(e.exit_code)
        except PermissionError as e:
            click.echo(f"ioweather: error: permission denied: {e.filename or e}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("ioweather: interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            sys.exit(0)
        except UnicodeEncodeError as e:
            if "surrogates not allowed" not in str(e):
                raise
            # A name given as bytes that are not UTF-8 (Linux names are bytes) reached a store, a
            # hash or a page that holds text; the commands that read Darshan logs store such paths in a
            # display form, the others refuse them here in one line (issue 32 item 1).
            bad = display_path(e.object[max(0, e.start - 20):e.end + 20])
            click.echo(f"ioweather: error: a name or path given is not valid UTF-8 (…{bad}…): "
                       "rename it, or give a UTF-8 name", err=True)
            sys.exit(2)
        except Exception as e:
            # A statement failed after connecting (disk image malformed, server gone): one line, not
            # a traceback. Checked by module name so that --help does not pay for importing SQLAlchemy.
            if type(e).__module__.startswith("sqlalchemy"):
                reason = str(getattr(e, "orig", e)).strip().splitlines() or [type(e).__name__]
                click.echo(f"ioweather: error: database error: {reason[0]}", err=True)
                sys.exit(2)
            raise


class LazyCommands(OneLineErrors):
    """A group whose commands are registered by their module on first use (see COMMANDS)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._loaded: set[str] = set()
        self._stand_ins: dict[str, click.Command] = {}

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def format_commands(self, ctx, formatter) -> None:
        """The command list of `ioweather --help`, from SUMMARIES: no command module is imported for it."""
        names = [n for n in self.list_commands(ctx) if n in SUMMARIES and n not in self.commands]
        self._stand_ins = {n: click.Command(n, help=SUMMARIES[n]) for n in names}
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._stand_ins = {}

    def get_command(self, ctx, name: str):
        if name in self._stand_ins:
            return self._stand_ins[name]
        if name in COMMANDS:
            self.load(COMMANDS[name])
        return self.commands.get(name)

    def load(self, modules) -> None:
        for name in modules:
            if name in self._loaded:
                continue
            self._loaded.add(name)
            try:
                module = importlib.import_module(name)
            except ModuleNotFoundError as e:
                if e.name and e.name.startswith("ioweather.commands"):
                    continue  # feature not built yet
                click.echo(f"ioweather: warning: {name} unavailable: {e}", err=True)
                continue
            module.register(self)


@click.group(cls=LazyCommands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="ioweather")
@click.option("--home", type=click.Path(file_okay=False), envvar="IOWEATHER_HOME", show_envvar=True,
              help="Data directory (default ~/.local/share/ioweather).")
@click.option("--db", "db", metavar="URL", envvar="IOWEATHER_DB", show_envvar=True,
              help="Relational store URL, e.g. postgresql://user@host/db (default: SQLite in --home).")
@click.pass_context
def cli(ctx: click.Context, home: str | None, db: str | None) -> None:
    """ioweather: is the file system slow right now, why was my job's I/O slow, what is our workload."""
    ctx.obj = Settings.resolve(home, db)


def main() -> None:
    cli(prog_name="ioweather")


if __name__ == "__main__":
    main()
