"""`ioweather slowdown`: how much slower than usual each probed op is, per interval."""

from __future__ import annotations

import sys

import click

from ioweather.commands.common import DURATION, reference_period, SINCE, TIME, json_option
from ioweather.errors import UserError
from ioweather.services.probe import slowdown as svc
from ioweather.services.runtime.defaults import EXPECTED, LEARNING_RULE, SLOWDOWN_STATS
from ioweather.units import check_order, format_seconds
from ioweather.views.json_output import print_json


class _Plugin(click.Command):
    """With --check, a usage error is the plugin's own misuse: UNKNOWN (exit 3) in one line, never the
    usual exit 2, which Nagios and Icinga read as CRITICAL (the monitoring-plugin guidelines)."""

    def parse_args(self, ctx, args):
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            if "--check" not in given:
                raise
            answer = svc.cannot_check(" ".join(e.format_message().split()))
            if "--json" in given:
                print_json(answer.to_json())
            else:
                click.echo(answer.message)
            ctx.exit(answer.exit_code)


def register(cli: click.Group) -> None:
    @cli.command(cls=_Plugin)
    @click.option("--target", default=None, help="One target (default: all).")
    @click.option("--interval", type=DURATION, default="10m", show_default=True, help="Interval length.")
    @click.option("--stat", type=click.Choice(SLOWDOWN_STATS), default="median", show_default=True,
                  help="Statistic of each interval compared to the baseline (see --expected).")
    @click.option("--expected", type=click.Choice(EXPECTED), default="median", show_default=True,
                  help="Divide --stat by the baseline median (the paper's definition: a p99 of 3× the usual median "
                       "is normal for a fast op) or by the same statistic over the baseline (like for like).")
    @click.option("--baseline", type=DURATION, default="30d", show_default=True,
                  help="Window before --until whose median is the expected duration.")
    @click.option("--baseline-from", type=TIME, default=None,
                  help="With --baseline-until: a fixed reference period (a quiet week) instead of --baseline.")
    @click.option("--baseline-until", type=TIME, default=None, help="End of the reference period.")
    @click.option("--since", type=SINCE, default="24h", show_default=True, help="First interval: a duration ago or a time.")
    @click.option("--until", type=TIME, default="now", show_default=True, help="End time.")
    @click.option("--check", is_flag=True,
                  help="Monitoring-plugin mode: one line and exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN "
                       "(Nagios/Icinga), from the last --interval of every target.")
    @click.option("--warn", type=float, default=2.0, show_default=True, help="--check: WARNING from this slowdown.")
    @click.option("--crit", type=float, default=10.0, show_default=True, help="--check: CRITICAL from this slowdown.")
    @json_option
    @click.pass_obj
    def slowdown(settings, target, interval, stat, expected, baseline, baseline_from, baseline_until, since, until,
                 check, warn, crit, as_json):
        """Slowdown = stat(interval) / median(baseline) per target, op and interval (docs/methods.md §1).

        Below 1 is faster than usual; from 2 the target is degraded, from 10 severely degraded.
        Until the rolling baseline holds 24 h (95 % of a shorter --baseline) and 1,000 samples of an op
        (half of what a shorter baseline holds at the probe's period), that op's rows say "learning" and
        carry no slowdown; a reference period is judged at once.
        With --check: the state of the last --interval (10m) as a Nagios/Icinga plugin (docs/probe.md):
        one line with perfdata, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (learning, stale, no store,
        an unknown target). It opens the store read-only and never creates one.
        """
        try:
            if interval <= 0 or baseline <= 0:
                raise UserError("--interval and --baseline must be positive")
            reference = reference_period(baseline_from, baseline_until)
        except UserError as e:
            if not check:
                raise
            answer = svc.cannot_check(str(e))
        else:
            if check:
                answer = svc.check(settings, target, interval, stat, baseline, warn, crit, expected, reference)
        if check:
            if as_json:
                print_json(answer.to_json())
            else:
                click.echo(answer.message)
            sys.exit(answer.exit_code)
        # lazy: sqlalchemy via services.runtime.stores, rich via views.output: kept off --check (cron, every
        # minute), which opens the store read-only itself and prints one line or JSON
        from ioweather.services.runtime.stores import open_store
        from ioweather.views.output import print_table, short_time

        check_order(since, until)
        rows = svc.slowdown(open_store(settings), target, interval, stat, baseline, since, until, expected,
                            reference).to_json()
        if as_json:
            print_json(rows)  # the answer's to_json()
            return

        def style(r):
            return {"severely degraded": "bold red", "degraded": "yellow"}.get(r["state"])

        print_table(rows, [("target", "target"), ("op", "op"), ("interval_start", "interval (UTC)", short_time), ("count", "n"),
                           ("value_s", stat, format_seconds), ("expected_s", "baseline " + (stat if expected == "same" else "median"), format_seconds),
                           ("slowdown", "slowdown", lambda v: f"{v:.2f}×"), ("state", "state")],
                    row_style=style, empty="no probe samples in this window")
        learning = sorted({r["target"] for r in rows if r["state"] == "learning"})
        if learning:
            click.echo(f"learning the baseline of {', '.join(learning)}: no slowdown is judged {LEARNING_RULE}, "
                       "or with a reference period "
                       "(--baseline-from/--baseline-until)", err=True)
        worst = sorted((r for r in rows if r["slowdown"] is not None), key=lambda r: -r["slowdown"])[:3]
        if worst:
            click.echo("worst: " + "; ".join(f"{r['op']} {r['interval_start']} {r['slowdown']:.2f}×" for r in worst), err=True)
