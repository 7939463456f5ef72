"""`ioweather bench run/submit/import/summary/check`: regression benchmarks (METHODS.md section 6)."""

from __future__ import annotations

import sys

import click

from ioweather.commands.common import SIZE, json_option
from ioweather.services.bench import runs as svc
from ioweather.units import format_bytes, format_seconds


def _bps(v) -> str:
    return "-" if v is None else format_bytes(v) + "/s"


def _ratio(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _secs(v) -> str:
    return format_seconds(v)


def _run_options(f):
    for opt in reversed([
        click.option("--dir", "directory", required=True, type=click.Path(file_okay=False),
                     help="Directory on the file system to measure; files go to DIR/.ioweather-bench only."),
        click.option("--size", type=SIZE, default="16MiB", show_default=True, help="Bytes per task and motif."),
        click.option("--tasks", type=click.IntRange(1, 4096), default=2, show_default=True,
                     help="fio jobs (processes) per motif."),
        click.option("--md-files", type=click.IntRange(1, 10**6), default=256, show_default=True,
                     help="Files per task of the metadata motif."),
        click.option("--fs", default=None, help="File system name the runs are filed under "
                                                "(default: its file system's one name, as probe targets and "
                                                "telemetry call it: docs/why.md)."),
        click.option("--max-share", type=float, default=0.5, show_default=True,
                     help="Refuse a motif needing more than this share of DIR's free space."),
    ]):
        f = opt(f)
    return f


def register(cli: click.Group) -> None:
    @cli.group()
    def bench():
        """Regression benchmarks: fixed fio motifs on a schedule, contention and fraction of peak.

        Motifs: fpp-write, fpp-read, shared-write, shared-read, rand4k-write, rand4k-read, metadata
        (docs/benchmarks-regression.md)."""

    @bench.command("run")
    @click.argument("motifs", nargs=-1)
    @_run_options
    @json_option
    @click.pass_obj
    def run_cmd(settings, motifs, directory, size, tasks, md_files, fs, max_share, as_json):
        """Run MOTIFS (default: all) with fio in DIR and store each run."""
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import open_store
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, print_table, stderr

        def note(name):
            if not as_json:
                stderr.print(f"running {name} ...")

        out = svc.run(open_store(settings), motifs, directory, size, tasks, md_files, fs, max_share, on_motif=note)
        if out.leftovers_removed:
            stderr.print(f"removed {out.leftovers_removed} leftover files of an interrupted run")
        if as_json:
            print_json(out.to_json())
            return
        rows = [{"run_id": r.run_id, "motif": r.motif, **vars(x)} for r in out.runs for x in r.results]
        print_table(rows, [("run_id", "run"), ("motif", "motif"), ("direction", "direction"),
                           ("duration_s", "duration", _secs), ("bw_bps", "bandwidth", _bps),
                           ("iops", "IOPS", lambda v: f"{v:,.0f}"), ("lat_p99_s", "p99 latency", _secs)])

    @bench.command()
    @click.argument("motifs", nargs=-1)
    @_run_options
    @click.option("--sbatch-arg", "sbatch_args", multiple=True, help="Extra sbatch argument (repeatable), "
                                                                    "e.g. --sbatch-arg=--partition=debug.")
    @json_option
    @click.pass_obj
    def submit(settings, motifs, directory, size, tasks, md_files, fs, max_share, sbatch_args, as_json):
        """Submit `bench run` as a Slurm batch job (sbatch); the job stores its runs when it ends."""
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json

        out = svc.submit(settings, motifs, directory, size, tasks, md_files, fs, max_share, list(sbatch_args))
        if as_json:
            print_json(out.to_json())
        else:
            click.echo(f"submitted batch job {out.jobid} ({', '.join(out.motifs)}); output in {out.output}")

    @bench.command("import")
    @click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
    @click.option("--format", "fmt", type=click.Choice(["fio", "tokio-abc"]), default=None,
                  help="Input format (default: .csv/.csv.gz are tokio-abc summaries, anything else fio JSON).")
    @click.option("--fs", default=None, help="fio JSON: file system name the runs are filed under.")
    @click.option("--motif", default=None, help="fio JSON: motif name (default: each fio job's name).")
    @json_option
    @click.pass_obj
    def import_cmd(settings, paths, fmt, fs, motif, as_json):
        """Import other benchmarks' results: fio JSON output (--output-format=json) and tokio-abc summaries."""
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import open_store
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json

        out = svc.import_files(open_store(settings), paths, fmt, fs, motif)
        for f in out.by_file:
            for reason in f.skipped or []:
                click.echo(f"ioweather: warning: {f.path}: skipped {reason}", err=True)
        for failure in out.failed:
            click.echo(f"ioweather: error: {failure.error}", err=True)
        if as_json:
            print_json(out.to_json())
        else:
            click.echo(f"imported {out.runs} runs from {out.files} files"
                       + (f" ({out.skipped_rows} rows without a time or performance skipped)"
                          if out.skipped_rows else ""))
        if out.failed:
            sys.exit(2)

    @bench.command()
    @click.option("--motif", default=None, help="Only this motif.")
    @click.option("--fs", default=None, help="Only this file system.")
    @click.option("--last", type=click.IntRange(1, 1000), default=3, show_default=True,
                  help="Regression: the last N runs ...")
    @click.option("--threshold", type=click.FloatRange(0, 1, min_open=True), default=0.5, show_default=True,
                  help="... all below this fraction of peak.")
    @click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
                  help="Write the regression table (docs/methods.md §6) (one table per file system) as HTML here.")
    @json_option
    @click.pass_obj
    def summary(settings, motif, fs, last, threshold, html_out, as_json):
        """Per motif, direction and file system: optimum (shortest run), mean, contention = mean/optimum,
        the last run's fraction of peak and standing, and the regression flag."""
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import open_store
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json, print_table

        answer = svc.bench_summary(open_store(settings), motif, fs, last, threshold)
        if html_out:
            svc.write_report(answer.rows, html_out)
            click.echo(f"wrote {html_out}", err=True)
            return
        if as_json:
            print_json(answer.to_json())
            return
        print_table(answer.to_json(), [("motif", "motif"), ("direction", "direction"), ("fs", "fs"), ("runs", "runs"),
                           ("optimum_s", "optimum", _secs), ("mean_s", "mean", _secs),
                           ("contention", "contention", _ratio), ("best_bps", "best", _bps),
                           ("last_fraction_of_peak", "last / peak", _ratio),
                           ("last_standing", "standing", _ratio),
                           ("regression", "regression", lambda v: "YES" if v else "no")])

    @bench.command()
    @click.option("--warn", type=float, default=0.5, show_default=True, help="WARNING when the last runs are below "
                                                                            "this fraction of peak.")
    @click.option("--crit", type=float, default=0.25, show_default=True, help="CRITICAL below this.")
    @click.option("--last", type=click.IntRange(1, 1000), default=3, show_default=True,
                  help="How many last runs must all be below.")
    @click.option("--motif", default=None, help="Only this motif.")
    @click.option("--fs", default=None, help="Only this file system.")
    @json_option
    @click.pass_obj
    def check(settings, warn, crit, last, motif, fs, as_json):
        """Monitoring-plugin mode: one line with perfdata, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN."""
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import open_store
        # lazy: rich via views.output: kept off the command's `--help` and its usage errors
        from ioweather.views.output import print_json

        answer = svc.check(open_store(settings), warn, crit, last, motif, fs)
        if as_json:
            print_json(answer.to_json())
        else:
            click.echo(answer.message)
        sys.exit(answer.exit_code)
