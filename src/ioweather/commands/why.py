"""`ioweather why JOB`: my code or the system, one costed answer (issue 29; docs/why.md)."""

from __future__ import annotations

import click

from ioweather.commands.common import json_option, one_shot, reference_period, TIME
from ioweather.files import write_atomic
from ioweather.services.answers.why import why as answer
from ioweather.views import why_report as view
from ioweather.views.json_output import print_json


def register(cli: click.Group) -> None:
    @cli.command()
    @click.argument("job")
    @click.option("--fs", default=None, metavar="NAME",
                  help="Telemetry dataset of the job's file system (default: its mounts through the fs-map "
                       "setting, or a mount named like a dataset; docs/why.md).")
    @click.option("--baseline-from", type=TIME, default=None,
                  help="With --baseline-until: a quiet reference period whose probe samples are the baseline "
                       "(as `slowdown` takes it), judged at once instead of after 24 h of learning.")
    @click.option("--baseline-until", type=TIME, default=None, help="End of the reference period.")
    @click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
                  help="Write a one-page HTML report here.")
    @json_option
    @click.pass_obj
    def why(settings, job, fs, baseline_from, baseline_until, html_out, as_json):
        """Was the job slow because of its code or the file system? Its I/O time split in seconds.

        JOB is a Darshan log, a stored log's hash prefix, a Darshan job id or a scheduler job id (every
        log of the job is merged). The code's part is the Darshan advisor's saving; the system's part
        the probes' slowdown during the job, else its coverage factor (both upper bounds); the rest is
        unexplained. Events that overlap the job are listed with their culprit jobs."""
        with one_shot():
            doc = answer(settings, job, fs=fs, reference=reference_period(baseline_from, baseline_until)).to_json()
            if html_out:
                write_atomic(html_out, view.render_html(doc))
                click.echo(f"wrote {html_out}", err=True)
            elif as_json:
                print_json(doc)
            else:
                _print_text(doc)


def _print_text(doc: dict) -> None:
    """The answer as text: the verdict, the budget, its logs, events and notes."""
    # lazy: rich via views.output: only the text answer prints tables (not `--json`, `--help`, a usage error)
    from ioweather.views.output import print_table, stdout

    stdout.print(doc["verdict"], highlight=False, markup=False)
    print_table(view.budget_rows(doc), [("label", "part"), ("time", "time"), ("share", "share of I/O"),
                                        ("evidence", "evidence")])
    if len(doc["logs"]) > 1:
        print_table(view.log_rows(doc), [("log", "log"), ("start", "start"), ("fs", "file system"),
                                         ("io", "I/O time"), ("code", "code"), ("system", "system"),
                                         ("unexplained", "unexplained"), ("model", "model")],
                    title=f"{len(doc['logs'])} logs of job {doc['job']}")
    if doc["events"]:
        print_table(view.event_rows(doc), [("start", "start"), ("end", "end"), ("fs", "file system"),
                                           ("moved", "moved"), ("culprits", "culprits")],
                    title="I/O events during the job")
    if doc["baseline"]:
        stdout.print(f"baseline: the probes' samples from {doc['baseline']['from']} until "
                     f"{doc['baseline']['until']}", highlight=False, markup=False)
    for note in doc["notes"]:
        stdout.print(f"note: {note}", highlight=False, markup=False)
