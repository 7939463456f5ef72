"""`ioweather umami JOB`, `ioweather correlations` and `ioweather import job-features` (seed 003; METHODS.md section 7)."""

from __future__ import annotations

import click

from ioweather.commands.common import json_option
from ioweather.commands.imports import import_group
from ioweather.files import check_destination
from ioweather.views.output import print_json, print_table, stdout


def register(cli: click.Group) -> None:
    @cli.command()
    @click.argument("job")
    @click.option("--fs", default=None, help="File system the job used (default: its mount points through the "
                                             "fs-map setting, or a mount named like a dataset; docs/why.md).")
    @click.option("--system", default=None, help="Imported feature set (e.g. edison) when a job id is in several.")
    @click.option("--motif", default=None, help="Imported feature rows: which benchmark of the job (e.g. ior_fpp_write).")
    @click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None, help="Write an HTML report here.")
    @json_option
    @click.pass_obj
    def umami(settings, job, fs, system, motif, html_out, as_json):
        """A job's weather against its motif's climate, and a one-line verdict: the system or your code.

        JOB is a Darshan log hash prefix or job id, a scheduler job id, or the job id of an imported
        feature row (`ioweather import job-features`)."""
        # lazy: numpy via services.answers.umami, sqlalchemy via services.runtime.stores: kept off the command's `--help`
        from ioweather.services.runtime.stores import open_store
        from ioweather.services.answers.umami import umami as build_umami, write_html
        from ioweather.views.umami_report import number_text as _num, p_text as _p
        if html_out:
            check_destination(html_out)  # before the work, not after it
        answer = build_umami(open_store(settings), job, system=system, fs=fs, motif=motif)
        if html_out:
            write_html(answer, html_out)
            click.echo(f"wrote {html_out}", err=True)
            return
        doc = answer.to_json()
        if as_json:
            print_json(doc)
            return
        stdout.print(f"[bold]{doc['verdict']}[/bold]", highlight=False)
        stdout.print(f"job {doc['job']} · motif {doc['motif']} · {doc['history_jobs']} earlier jobs of this motif",
                     highlight=False, markup=False)
        rows = [{**m, "median": m["box"]["median"]} for m in doc["metrics"]]
        print_table(rows, [("label", "metric"), ("value", "value", _num), ("median", "history median", _num),
                           ("quartile", "quartile"), ("colour", "colour"), ("r", "r", _num), ("p", "p", _p),
                           ("strength", "correlation"), ("unusual", "unusual", _num)])

    @cli.command()
    @click.option("--fs", default=None, help="Only jobs on this file system (default: every job in the store).")
    @click.option("--motif", default=None, help="Only jobs of this motif (e.g. ior_fpp_write).")
    @click.option("--system", default=None, help="Only this imported feature set (e.g. edison).")
    @click.option("--metric", "metrics", multiple=True, help="Only these metrics (repeatable).")
    @click.option("--all-rows", is_flag=True, help="Keep the rows the paper's filters drop (imported features).")
    @json_option
    @click.pass_obj
    def correlations(settings, fs, motif, system, metrics, all_rows, as_json):
        """Which metrics matter: Pearson's r of fraction of peak with each metric, and its p-value.

        strong: p < 0.01, weak: p < 0.05, else none; |r| > 0.3 is a moderate correlation (bold)."""
        # lazy: numpy via services.answers.umami, sqlalchemy via services.runtime.stores: kept off the command's `--help`
        from ioweather.services.runtime.stores import open_store
        from ioweather.services.answers.umami import correlations as build_correlations
        from ioweather.views.umami_report import number_text as _num, p_text as _p
        answer = build_correlations(open_store(settings), fs=fs, motif=motif, system=system,
                                    metrics=list(metrics) or None, all_rows=all_rows)
        listing = answer.listing()
        if as_json:
            print_json(listing.to_json())
            return
        stdout.print(f"{answer.jobs} jobs", highlight=False)

        def style(r):
            colour = {"strong": "blue", "weak": "green"}.get(r["strength"], "red")
            return f"bold {colour}" if r["r"] is not None and abs(r["r"]) > 0.3 else colour

        print_table(listing.to_json(), [("metric", "metric"), ("r", "r", _num), ("p", "p", _p), ("n", "n"),
                                  ("strength", "strength"), ("magnitude", "|r|")], row_style=style)

    @import_group(cli).command("job-features")
    @click.argument("csv", type=click.Path(dir_okay=False))
    @click.option("--preset", type=click.Choice(["tokio-abc"]), required=True, help="The table's format.")
    @click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
                  help="tokio-abc's abcconfig.json (default: beside the CSV).")
    @click.option("--name", default=None, help="Name of the set (default: the system, from the file name).")
    @json_option
    @click.pass_obj
    def job_features(settings, csv, preset, config_path, name, as_json):
        """Per-job feature rows from elsewhere (tokio-abc summaries); a re-import of a set replaces it."""
        # lazy: numpy via services.answers.umami, sqlalchemy via services.runtime.stores: kept off the command's `--help`
        from ioweather.services.runtime.stores import open_store
        from ioweather.services.answers.umami import import_job_features
        res = import_job_features(open_store(settings), csv, preset, config_path, name)
        if as_json:
            print_json(res.to_json())
            return
        click.echo(f"imported {res.rows:,} jobs into set {res.set} ({res.rows_kept_by_paper_filters:,} kept "
                   f"by the paper's filters)")
