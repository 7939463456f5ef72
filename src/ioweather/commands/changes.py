"""`ioweather changes`: where the level of a long series shifted (change points)."""

from __future__ import annotations

import click

from ioweather.commands.common import SINCE, TIME, json_option
from ioweather.services.runtime.defaults import CHANGE_KINDS as KINDS, MIN_SEGMENT, PENALTY_PER_LOG_N
from ioweather.units import check_order, format_bytes, format_seconds, to_ns


def register(cli: click.Group) -> None:
    @cli.command("changes")
    @click.option("--kind", "kinds", type=click.Choice(KINDS), multiple=True,
                  help="Which series (repeatable; default all): probe medians per target and op, benchmark "
                       "fraction of peak, job fraction of peak per motif, daily workload totals.")
    @click.option("--target", default=None, help="One probe target, benchmark/job file system or workload file system.")
    @click.option("--series", default=None, help="Only series whose name contains this (e.g. probe:scratch:data_read).")
    @click.option("--since", type=SINCE, default="90d", show_default=True, help="Start: a duration ago or a time.")
    @click.option("--until", type=TIME, default="now", show_default=True, help="End time.")
    @click.option("--penalty", type=click.FloatRange(min=0, min_open=True), default=PENALTY_PER_LOG_N,
                  show_default=True, help="PELT penalty per log(n) on the noise-scaled series (higher: fewer changes).")
    @click.option("--min-segment", type=click.IntRange(min=2), default=MIN_SEGMENT, show_default=True,
                  help="Shortest level, in points of the series.")
    @json_option
    @click.pass_obj
    def changes(settings, kinds, target, series, since, until, penalty, min_segment, as_json):
        """Change points: when a series' level shifted, from what to what (PELT; docs/changes.md).

        Finds the moment an upgrade, a failing OST or a new workload changed how the file system
        behaves, in the probe's interval medians, the benchmarks' fraction of peak, the jobs'
        fraction of peak per motif and the daily workload totals.
        """
        # lazy: numpy via services.answers.changes, sqlalchemy via services.runtime.stores: kept off `changes --help`
        from ioweather.services.answers.changes import detect
        from ioweather.services.runtime.stores import open_store
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, print_table, short_time, stderr

        check_order(since, until)
        doc = detect(open_store(settings), settings, to_ns(since), to_ns(until), kinds=kinds or KINDS,
                     target=target, series=series, penalty_per_log_n=penalty, min_segment=min_segment)
        if as_json:
            print_json(doc.to_json())
            return

        def level(c, v):
            return {"median_s": format_seconds, "bytes_per_day": lambda x: f"{format_bytes(x)}/day"}.get(
                c.statistic, lambda x: f"{x:.3g}")(v)

        rows = [{"series": c.series, "time": c.time, "before": level(c, c.level_before),
                 "after": level(c, c.level_after), "factor": c.factor} for c in doc.changes]
        print_table(rows, [("series", "series"), ("time", "from (UTC)", short_time), ("before", "level before"),
                           ("after", "level after"), ("factor", "factor", lambda v: f"{v:.2f}×")],
                    title=f"Change points {short_time(doc.since)} .. {short_time(doc.until)} "
                          f"({doc.series_examined} series)",
                    empty=f"no change of level in {doc.series_examined} series")
        for s in doc.skipped:
            stderr.print(f"skipped {s.series}: {s.reason}")
