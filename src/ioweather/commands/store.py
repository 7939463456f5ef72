"""`ioweather store check [--repair]`: integrity of the relational store and the Parquet archives;
`ioweather store prune`: retention (issue 30)."""

from __future__ import annotations

import sys

import click

from ioweather.commands.common import DURATION_UNIT, json_option
from ioweather.config import retention_from_env
from ioweather.errors import UserError
from ioweather.files import skipped_line
from ioweather.services.runtime import retention
from ioweather.units import format_seconds
from ioweather.views.output import print_json, print_table, stderr, stdout


def register(cli: click.Group) -> None:
    @cli.group("store")
    def store():
        """The store itself: its database and Parquet archives."""

    @store.command("check")
    @click.option("--repair", is_flag=True,
                  help="Fix what loses nothing: stray temporary files, leftovers of interrupted imports and "
                       "compactions, missing rollups. Missing or damaged data is only reported.")
    @json_option
    @click.pass_obj
    def check_cmd(settings, repair, as_json):
        """Check schema versions, SQLite integrity and WAL, and every Parquet file against its manifest.

        Exits 1 when a problem remains, with one line per problem."""
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import check_store

        report = check_store(settings, repair=repair)
        if as_json:
            print_json(report.to_json())
        else:
            _print_human(report)
        if not report.ok:
            sys.exit(1)


    @store.command("prune")
    @click.option("--older-than", type=DURATION_UNIT, default=None,
                  help="Remove what is older than this (with its unit: 90d, 12w), imported telemetry included. "
                       "Default: each kind's retention setting (IOWEATHER_RETAIN_<KIND>, docs/store.md), which "
                       "keeps imported history.")
    @click.option("--kind", "kinds", multiple=True, type=click.Choice(("probe", "rollups", "telemetry")),
                  help="Only this kind (repeatable). Default: all; with --older-than, probe and telemetry "
                       "(the probe's summaries outlive its raw samples unless named).")
    @click.option("--yes", is_flag=True, help="Remove. Without it, only count what would go (a dry run).")
    @json_option
    @click.pass_obj
    def prune_cmd(settings, older_than, kinds, yes, as_json):
        """Remove data older than a limit, per kind: raw probe samples, the probe's summaries, telemetry days.

        A dry run unless --yes. Raw probe samples go with their summaries kept (built first where missing),
        so slowdowns and baselines over the pruned days stay exact. Telemetry rows are judged by their own
        times (a file spanning the cutoff keeps its newer rows). Safe while watch, collect and the
        dashboard run: each step is a short transaction or one day's files. Never follows a link in the
        store: what it skipped is said in one line, and the exit status is 1."""
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import open_store
        if older_than is not None and older_than < 86400:
            raise UserError(f"--older-than {format_seconds(older_than)} would remove today's data: use 1d or more")
        if not settings.store_exists() and not settings.parquet_dir.is_dir():
            raise UserError(f"no store at {settings.home}")
        if older_than is None:
            limits = {k: v for k, v in retention_from_env().items() if not kinds or k in kinds}
        else:
            limits = {k: older_than for k in (kinds or ("probe", "telemetry"))}
        # Telemetry alone (imported, never probed) has no database: none is created for it.
        store = open_store(settings) if settings.store_exists() else None
        # An age named on the command line is the admin's explicit word for imported history too; the
        # retention settings bound only what the daemons record live (docs/store.md, "Retention").
        live_only = older_than is None
        pruning = (retention.prune if yes else retention.plan)(store, settings, limits, live_only=live_only)
        skipped = pruning.skipped
        if as_json:
            print_json(pruning.to_json())
        else:
            _print_prune(pruning.to_json()["kinds"], yes)
        kept = sum(k.imported_kept_rows or 0 for k in pruning.kinds)
        if kept and not as_json:
            stderr.print(f"note: {kept:,} imported telemetry rows older than the limit are kept: imported history "
                         "goes only with an explicit --older-than", highlight=False, markup=False, soft_wrap=True)
        line = skipped_line(skipped, "removed" if yes else "counted")
        if line:  # a link, a mount point or an unreadable file in the store: said, and the exit says so
            stderr.print(f"store prune: {line}", highlight=False, markup=False, soft_wrap=True)
            sys.exit(1)


def _print_prune(rows: list[dict], yes: bool) -> None:
    print_table(rows, [("kind", "kind"), ("older_than_s", "older than", format_seconds),
                       ("cutoff", "before (UTC)", lambda t: t.replace("T", " ")[:19]),
                       ("rows", "rows" if yes else "rows to remove", lambda n: f"{n:,}"),
                       ("files", "files" if yes else "files to remove", lambda n: f"{n:,}")],
                title="removed" if yes else "dry run: nothing removed (--yes removes)",
                empty="every kind is kept forever")


def _print_human(report) -> None:
    say = lambda text: stdout.print(text, highlight=False, markup=False, soft_wrap=True)  # noqa: E731
    say(f"database: {report.database}")
    if report.schema_versions:
        say("schema: " + ", ".join(f"{v['component']} v{v['version']}" for v in report.schema_versions))
    if report.sqlite:
        s = report.sqlite
        wal = s["wal_checkpoint"]
        say(f"sqlite: integrity {s['integrity']}, WAL {s['wal_bytes']} bytes"
            + (f", checkpoint {wal['checkpointed_frames']}/{wal['log_frames']} frames" if wal else "")
            + (f", auto-vacuum {s['auto_vacuum']}" if s.get("auto_vacuum") else ""))
        if s.get("auto_vacuum") == "none":
            say("note: this store predates incremental auto-vacuum, which makes a month's baseline read its "
                "slices of probe pieces faster; docs/probe-pieces.md says how to turn it on")
    say("parquet files checked: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.files.items()))
    for p in report.problems:
        say(("repaired: " if p.repaired else "problem: ") + p.line().replace(" (repaired)", ""))
    repaired = [p for p in report.problems if p.repaired]
    if repaired:
        temp = sum(1 for p in repaired if p.path and p.path.endswith(".tmp"))
        say(f"{len(repaired)} repaired ({temp} temporary files removed)")
    if report.ok:
        say("ok" if not report.problems else "ok after repair")
