"""`ioweather events` (I/O events attributed to jobs, what contention cost) and `ioweather report` (the week)."""

from __future__ import annotations

import click

from ioweather.commands.common import DURATION, SINCE, TIME, _Parsed, json_option
from ioweather.errors import UserError
from ioweather.files import write_atomic
from ioweather.units import format_bytes, format_number, parse_rate

RATE = _Parsed("rate", parse_rate)


def _hours(v: float) -> str:
    return f"{v:,.1f}"


def _culprit(e: dict) -> str:
    if not e["jobs"]:
        return "-"
    j = e["jobs"][0]
    who = f"{j['job']}@{j['cluster']}" if j["cluster"] else j["job"]
    return f"{who} ({100 * j['share']:.0f} %, {j['method']})"


def _print_events(doc: dict) -> None:
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import interval_time, print_table, stderr
    # lazy: jinja2, numpy, rich via views.workload_report: kept off the command's `--help` and its usage errors
    from ioweather.views.workload_report import rate_text

    def _when(iso: str) -> str:
        return interval_time(iso, doc["interval_s"])

    for note in doc["notes"]:
        stderr.print(f"note: {note}", highlight=False)
    rows = [{**e, "culprit": _culprit(e)} for e in doc["events"]]
    print_table(rows, [("start", "start (UTC)", _when), ("end", "end", _when), ("peak_bps", "peak", rate_text),
                                ("bytes", "bytes", format_bytes), ("running_jobs", "jobs running", str),
                                ("culprit", "top job (share, method)"),
                                ("core_hours_exposed", "core-h exposed", _hours)],
                title=f"I/O events of {doc['fs']}, {_when(doc['start'])} – {_when(doc['end'])}",
                empty=f"no events above {rate_text(doc['min_amplitude_bps'])}")


def _print_cost(cost: dict) -> None:
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import print_table

    print_table(cost["daily"], [("day", "day"), ("events", "events", str), ("core_hours_exposed", "core-h exposed", _hours)],
                title=f"core-hours exposed to I/O weather: {_hours(cost['core_hours_exposed'])} (an upper bound)",
                empty=f"core-hours exposed to I/O weather: {_hours(cost['core_hours_exposed'])} (no event)")
    print_table(cost["top_culprits"], [("job", "job"), ("cluster", "cluster", lambda v: v or "-"),
                                       ("user", "user", lambda v: v or "-"), ("events", "events", str),
                                       ("bytes", "bytes", format_bytes), ("core_hours_caused", "core-h caused", _hours)],
                title="top culprit jobs", empty="no culprit jobs")


def _print_report(doc: dict) -> None:
    """`report`'s text: the sections its --json, --html and the Report page hold, in the same order and
    words (views/templates/_week.html); it printed the events alone, three bare lines for a week whose
    JSON said 72.4 % full."""
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import print_table

    share = lambda v: "–" if v is None else f"{100 * v:.1f} %"  # noqa: E731
    ratio = lambda v: "–" if v is None else f"{v:.2f}×"  # noqa: E731
    days = lambda v: "–" if v is None else format_number(v)  # noqa: E731
    click.echo(f"Report of {doc['fs']}, {doc['start']} – {doc['end']}")
    sd = doc["slowdown"]
    print_table(sd["ops"] if sd else [], [("op", "op"), ("median", "median slowdown", ratio), ("p95", "95th percentile", ratio),
                                          ("worst", "worst hour", ratio), ("intervals", "hours", str)],
                title="Slowdown climate", empty="slowdown climate: no probe data in this window")
    ch = doc["changes"]
    if ch["available"]:
        print_table(ch["points"], [("series", "series"), ("time", "at (UTC)"), ("before", "before", format_number),
                                   ("after", "after", format_number), ("factor", "factor", ratio)],
                    title="Change points", empty="change points: no change points in this window")
    _print_events(doc["events"])
    _print_cost(doc["events"]["cost"])
    print_table(doc["bench"] or [], [("motif", "motif"), ("direction", "direction"), ("runs", "runs", str),
                                     ("last_fraction_of_peak", "last / peak", share),
                                     ("regression", "regression", lambda v: "yes" if v else "no")],
                title="Benchmark standing", empty=f"benchmark standing: no benchmark runs for {doc['fs']}")
    f = doc["fullness"]
    if not f:
        click.echo(f"fullness: no capacity data for {doc['fs']}")
        return
    until = "" if f["days_until_full"] is None else f", full in {format_number(f['days_until_full'])} days at the recent growth"
    print_table(f["fullest"], [("target", "fullest targets"), ("fullness", "fullness", share),
                               ("days_until_full", "days until full", days)],
                title=f"Fullness: {share(f['fullness'])} full{until}")


def _event_options(f):
    for opt in reversed([
        click.option("--fs", "fs", required=True, help="File system name (as given to `ioweather import/collect --fs`)."),
        click.option("--until", type=TIME, default=None, help="End time (default: the last data)."),
        click.option("--cluster", default=None, help="Only this cluster's scheduler jobs."),
        click.option("--resample", type=DURATION, default="60s", show_default=True, help="Interval of the series."),
        click.option("--smooth", type=DURATION, default="600s", show_default=True, help="Event smoothing window."),
        click.option("--min-amplitude", type=RATE, default="1GiB/s", show_default=True, help="Smallest event (bytes/s)."),
        click.option("--cores-per-node", type=click.IntRange(1), default=None,
                     help="Cores of a node, for jobs whose scheduler row has no CPU count."),
        click.option("--slowdown-threshold", type=click.FloatRange(1, None), default=1.5, show_default=True,
                     help="An event is contended when the probes' slowdown over it is at least this."),
        click.option("--top", type=click.IntRange(1), default=10, show_default=True, help="Jobs listed per event."),
    ]):
        f = opt(f)
    return f


def _params(resample, smooth, min_amplitude, cluster, top, cores_per_node, slowdown_threshold):
    # lazy: numpy, pandas, pyarrow via services.answers.events: kept off the command's `--help` and its usage errors
    from ioweather.services.answers.events import Params, check_options

    check_options(resample, smooth, min_amplitude)
    return Params(resample, smooth, min_amplitude, cluster, top, cores_per_node, slowdown_threshold)


def register(cli: click.Group) -> None:
    @cli.command()
    @_event_options
    @click.option("--since", type=SINCE, default=None, help="Start: a time or a duration ago (default: the first data).")
    @click.option("--cost", "cost", is_flag=True, help="The cost summary (per day, month, top events and culprits).")
    @json_option
    @click.option("--html", "html", type=click.Path(dir_okay=False), default=None, help="Write an HTML page to this file.")
    @click.pass_obj
    def events(settings, fs, until, cluster, resample, smooth, min_amplitude, cores_per_node, slowdown_threshold, top,
               since, cost, as_json, html):
        """I/O events of a file system and the jobs that caused them, with the compute exposed (docs/events.md).

        Per event, the jobs best first with their share of its bytes and the method: Lustre job_stats
        (exact), Darshan's bytes, or time overlap with the servers' rate. --json prints the list of
        events (with --cost: the cost summary).
        """
        # lazy: numpy, pandas, pyarrow via services.answers.events: kept off the command's `--help` and its usage errors
        from ioweather.services.answers import events as events_svc
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, stderr

        if as_json and html:
            raise UserError("choose one of --json and --html")
        params = _params(resample, smooth, min_amplitude, cluster, top, cores_per_node, slowdown_threshold)
        answer = events_svc.compute(settings, fs, since, until, params,
                                    warn=lambda m: stderr.print(f"ioweather: warning: {m}", highlight=False))
        if html:
            # lazy: jinja2, rich via views.report_html: kept off the command's `--help` and its usage errors
            from ioweather.views.report_html import render_events

            write_atomic(html, render_events(answer.to_json()))
            click.echo(f"wrote {html}", err=True)
        elif as_json:
            print_json((answer.cost if cost else answer.events).to_json())
        elif cost:
            _print_cost(answer.cost.to_json())
        else:
            _print_events(answer.to_json())

    @cli.command()
    @_event_options
    # No "7d" default: that is 7 days before *now*, and a store whose telemetry ended earlier got
    # "--since must be before --until" for a command given neither (until defaults to the data's end).
    @click.option("--since", type=SINCE, default=None,
                  help="Start: a time or a duration before now (default: 7 days before --until).")
    @json_option
    @click.option("--html", "html", type=click.Path(dir_okay=False), default=None, help="Write the report page to this file.")
    @click.option("--dashboard-url", default="http://localhost:8050", show_default=True,
                  help="Where `ioweather serve` runs: the report's detail links point there.")
    @click.pass_obj
    def report(settings, fs, until, cluster, resample, smooth, min_amplitude, cores_per_node, slowdown_threshold, top,
               since, as_json, html, dashboard_url):
        """A file system's week on one page: slowdown climate and worst episodes, change points, events
        with their culprit jobs and cost, benchmark standing, fullness (docs/events.md)."""
        # lazy: numpy via services.answers.report: kept off the command's `--help` and its usage errors
        from ioweather.services.answers import report as report_svc
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, stderr

        if as_json and html:
            raise UserError("choose one of --json and --html")
        params = _params(resample, smooth, min_amplitude, cluster, top, cores_per_node, slowdown_threshold)
        doc = report_svc.compute(settings, fs, since, until, params).to_json()
        if not doc["changes"]["available"]:
            stderr.print(f"note: {doc['changes']['reason']}", highlight=False)
        if html:
            # lazy: jinja2, rich via views.report_html: kept off the command's `--help` and its usage errors
            from ioweather.views.report_html import render_report

            write_atomic(html, render_report(doc, dashboard_url.rstrip("/")))
            click.echo(f"wrote {html}", err=True)
        elif as_json:
            print_json(doc)
        else:
            _print_report(doc)
