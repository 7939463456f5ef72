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
# imports (numpy, Jinja, rich's progress: ~0.3 s of a 1 s budget); `--help` still loads them all.
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

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx, name: str):
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
