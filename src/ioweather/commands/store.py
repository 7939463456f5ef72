"""`ioweather store check [--repair]`: integrity of the relational store and the Parquet archives."""

from __future__ import annotations

import sys

import click

from ioweather.commands.common import json_option
from ioweather.views.output import print_json, stdout


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
        from ioweather.store.check import check

        report = check(settings, repair=repair)
        if as_json:
            print_json(report.as_dict())
        else:
            _print_human(report)
        if not report.ok:
            sys.exit(1)


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
