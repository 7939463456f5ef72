"""`ioweather job LOG` and `ioweather jobs ingest|summary`: Darshan logs (METHODS.md section 3, seeds 002/003)."""

from __future__ import annotations

import click

from ioweather.commands.common import (json_option, one_blas_thread, one_shot, quiet_option, quiet_output,
                                       SINCE, SIZE)
from ioweather.files import display_path
from ioweather.services.answers.job_diff import job_diff
from ioweather.services.jobs.archive_light import light_answer
from ioweather.services.jobs.ingest import default_workers, ingest as run_ingest
from ioweather.services.jobs.ingest_scan import unchanged_answer
from ioweather.services.jobs.darshan_child import job_outputs, write_html
from ioweather.units import to_ns
from ioweather.views.json_output import print_json


def _write_html(out: str, text: str, *, quiet: bool) -> None:
    """Write the report; say so on stderr unless `quiet` (--json: stdout is for the JSON only).

    Through click, not rich's console: `job LOG --html` has nothing else to print, and rich (~0.1 s to
    import) is left to the commands that draw tables."""
    write_html(out, text)
    if not quiet:
        click.echo(f"wrote {display_path(out)}", err=True)


def _ingest_report(counts, *, quiet: bool) -> None:
    """`jobs ingest`'s lines for a person (an `IngestCounts`); `quiet` keeps the counts off stdout, not the notes."""
    if not quiet:
        # duplicates: content already stored (another path, or another ingest running at the same time)
        # refreshed: stored rows read again because other advisor rules (or an older ioweather) derived them
        click.echo(f"{counts.ingested} logs ingested, {counts.refreshed} refreshed (stored under other rules), "
                   f"{counts.failed} failed, "
                   f"{counts.duplicates} duplicates (content already stored), "
                   f"{counts.skipped} already ingested ({counts.found} found)")
    if counts.failed:
        click.echo("see the reasons with: ioweather jobs failed", err=True)
    if counts.symlinks_skipped:
        click.echo(f"{counts.symlinks_skipped} symlinks skipped (--follow-symlinks to read them)", err=True)


class _JobCommands(click.Group):
    """`ioweather job LOG` reads one log, `ioweather job diff BEFORE AFTER` compares two runs: anything but
    a subcommand's name is the log of the first form."""

    def parse_args(self, ctx, args):
        if not args or args[0] not in self.commands:
            args = ["log", *args]
        return super().parse_args(ctx, args)


class _LogCommand(click.Command):
    """`ioweather job LOG` as users type it: its usage line names `ioweather job`, not the hidden `log`."""

    def format_usage(self, ctx, formatter):
        formatter.write_usage(ctx.parent.command_path, " ".join(self.collect_usage_pieces(ctx)))


def register(cli: click.Group) -> None:
    @cli.group("job", cls=_JobCommands)
    def job_group():
        """One job's I/O characterization and findings from its Darshan LOG ("why was my job slow?").

        `ioweather job diff BEFORE AFTER`: what changed between two runs, costed."""

    @job_group.command("diff")
    @click.argument("before")
    @click.argument("after")
    @json_option
    @click.option("--cores-per-node", type=click.IntRange(min=1), default=None,
                  help="Cores per compute node, to count nodes when the logs do not name their hosts.")
    @click.option("--thresholds", "thresholds_file", type=click.Path(dir_okay=False), default=None,
                  help="TOML or JSON file overriding the findings' thresholds.")
    @click.option("--fs", default=None, metavar="NAME",
                  help="The runs' file system as stored telemetry names it (as `why --fs`), for the system's share.")
    @click.pass_obj
    def diff(settings, before, after, as_json, cores_per_node, thresholds_file, fs):
        """What changed between two runs of a job, costed: BEFORE and AFTER are Darshan logs or stored
        jobs (a job id or log hash prefix). The I/O-time change (after − before) is set against the
        findings whose cost appeared, vanished or changed, and the counters that moved; with both jobs
        stored and telemetry for their file system, `why`'s system seconds of each (docs/darshan.md)."""
        d = job_diff(settings, before, after, cores_per_node=cores_per_node, thresholds_file=thresholds_file, fs=fs)
        if as_json:
            print_json(d.to_json())
        else:
            # lazy: rich via views.job_diff: `--json` draws no table
            from ioweather.views.job_diff import print_job_diff

            print_job_diff(d)

    @job_group.command("log", cls=_LogCommand, hidden=True,
                       epilog="Two runs of a job: `ioweather job diff BEFORE AFTER` says what changed, costed.")
    @click.argument("log", type=click.Path(dir_okay=False))
    @json_option
    @click.option("--html", "html_out", metavar="OUT", default=None, help="Write a self-contained HTML report to OUT.")
    @click.option("--cores-per-node", type=click.IntRange(min=1), default=None,
                  help="Cores per compute node, to count nodes when the log does not name its hosts.")
    @click.option("--thresholds", "thresholds_file", type=click.Path(dir_okay=False), default=None,
                  help="TOML or JSON file overriding the findings' thresholds.")
    def job(log, as_json, html_out, cores_per_node, thresholds_file):
        """One job's I/O characterization and findings from its Darshan LOG ("why was my job slow?")."""
        # made in a child process: libdarshan-util may die on a damaged log, and that is one line
        rep, html = job_outputs(log, cores_per_node=cores_per_node, thresholds_file=thresholds_file,
                                html_source=display_path(log) if html_out else None)
        if html_out:
            _write_html(html_out, html, quiet=as_json)
        if as_json:
            print_json(rep.to_json())
        elif not html_out:
            # lazy: rich via views.job_console: `--json` and `--html` draw no table
            from ioweather.views.job_console import print_job

            print_job(rep)

    @cli.group("jobs")
    def jobs():
        """A center's Darshan archive: ingest logs, then summarize across jobs (docs/darshan.md)."""

    @jobs.command("ingest")
    @click.argument("paths", nargs=-1, required=True, type=click.Path())
    @click.option("--workers", type=click.IntRange(min=1), default=None,
                  help="Worker processes (default: all cores).")
    @click.option("--dask", "dask_address", metavar="SPEC", default=None,
                  help="Read the logs on a Dask cluster: tcp://HOST:PORT, local[:N] or "
                       "slurm[:jobs=N,cores=C,memory=M,queue=Q,account=A,walltime=T] (needs ioweather[dask]; "
                       "docs/deployment.md).")
    @click.option("--cores-per-node", type=click.IntRange(min=1), default=None,
                  help="Cores per node, to count nodes of logs that do not name their hosts.")
    @click.option("--follow-symlinks", is_flag=True,
                  help="Follow symlinks found while scanning directories (skipped by default: anyone who can "
                       "write a log directory could point one anywhere).")
    @quiet_option
    @json_option
    @click.pass_obj
    def ingest(settings, paths, workers, dask_address, cores_per_node, follow_symlinks, as_json, quiet):
        """Read Darshan logs (files, or directories searched for *.darshan) into the store.

        Idempotent: a log already stored (same content) is skipped; a log that cannot be
        read is recorded with its reason and the batch goes on. Safe to re-run after a kill,
        and to run while another ingest into the same store runs (each log is stored once).
        """
        one_blas_thread()
        # an unchanged archive is answered from a sqlite3 read and a stat of each log, without the imports of
        # the full path (SQLAlchemy, pandas, rich: most of its time, issue 40); None: something to do
        counts = None if dask_address else unchanged_answer(settings, list(paths), follow_symlinks=follow_symlinks)
        if counts is None:
            # lazy: rich via views.output: kept off the command's `--help` and its usage errors
            from ioweather.views.output import progress

            # one_shot: the imports and the exit walk a heap of ~900 modules less often (issue 40)
            with one_shot(), quiet_output(quiet, as_json):
                with progress() as bar:
                    task = bar.add_task("ingesting Darshan logs", total=None)
                    counts = run_ingest(settings, list(paths), workers=workers or default_workers(),
                                        dask_address=dask_address, cores_per_node=cores_per_node,
                                        follow_symlinks=follow_symlinks,
                                        progress_cb=lambda done, total: bar.update(task, completed=done, total=total))
        if as_json:
            print_json(counts.to_json())
        else:
            _ingest_report(counts, quiet=quiet)

    @jobs.command("failed")
    @json_option
    @click.pass_obj
    def failed_cmd(settings, as_json):
        """Logs that could not be read, with the reason."""
        # lazy: numpy, pandas, pyarrow, sqlalchemy via services.jobs.darshan: kept off the command's `--help` and its usage errors
        from ioweather.services.jobs.darshan import failed_logs
        failed = failed_logs(settings)
        if as_json:
            print_json(failed.to_json())
        else:
            # lazy: rich via views.output: `--json` draws no table
            from ioweather.views.output import print_table

            print_table(failed.to_json(), [("path", "path"), ("reason", "reason"), ("size_bytes", "bytes")],
                        empty="no failed logs")

    @jobs.command("summary")
    @json_option
    @click.option("--html", "html_out", metavar="OUT", default=None, help="Write a self-contained HTML page to OUT.")
    @click.option("--min-procs", type=click.IntRange(min=0), default=1024, show_default=True,
                  help="MiB/s/CN box plots: only jobs with at least this many processes.")
    @click.option("--min-bytes", type=SIZE, default="500MiB", show_default=True,
                  help="MiB/s/CN box plots: only jobs that moved at least this much.")
    @click.option("--projects", "projects_file", type=click.Path(dir_okay=False), default=None,
                  help="Mapping file: lines 'uid:NUMBER PROJECT' or '/path/prefix PROJECT' (default: one project per user).")
    @click.option("--cores-per-node", type=click.IntRange(min=1), default=None,
                  help="Cores per node, for jobs whose log does not give the node count.")
    @click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Length of the top-N lists.")
    @click.pass_obj
    def summary(settings, as_json, html_out, min_procs, min_bytes, projects_file, cores_per_node, top):
        """Cross-job views: interfaces and I/O strategy by job size, top consumers, MiB/s/CN per project."""
        # the SQLite store is summarized through sqlite3 and numpy, without the imports of the store's door
        # (pandas, SQLAlchemy: 0.8 s of the command's 1.0 s, issue 40); None: a store that needs that door
        one_blas_thread()
        options = dict(projects_file=projects_file, cores_per_node=cores_per_node, min_procs=min_procs,
                       min_bytes=min_bytes, top=top)
        answer = light_answer(settings, **options)
        if answer is None:
            # lazy: numpy, pandas, pyarrow, sqlalchemy via services.jobs.darshan: kept off the command's `--help` and its usage errors
            from ioweather.services.jobs.darshan import archive_summary

            answer = archive_summary(settings, **options)
        rep = answer.to_json()
        if html_out:
            # lazy: jinja2, numpy via views.archive_report: kept off the command's `--help` and its usage errors
            from ioweather.views.archive_report import render_summary_html

            _write_html(html_out, render_summary_html(rep), quiet=as_json)
        if as_json:
            print_json(rep)
        elif not html_out:
            # lazy: rich via views.job_console: `--json` and `--html` draw no table
            from ioweather.views.job_console import print_summary
            from ioweather.views.output import stderr

            if rep["jobs"] == 0:
                stderr.print(f"no jobs in the store ({rep['failed_logs']} logs could not be read); "
                             "run 'ioweather jobs ingest PATH' first")
                return
            print_summary(rep)

    @jobs.command("list")
    @click.option("--since", type=SINCE, default=None, help="Jobs that started at or after this (a duration ago or a time).")
    @click.option("--until", type=SINCE, default=None, help="Jobs that started before this (a duration ago or a time).")
    @click.option("--user", default=None, help="Only jobs whose uid or user name contains this.")
    @click.option("--exe", default=None, help="Only jobs whose executable contains this.")
    @click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many jobs.")
    @json_option
    @click.pass_obj
    def list_cmd(settings, since, until, user, exe, limit, as_json):
        """Stored jobs, latest start first (the Jobs page's list, filtered)."""
        # lazy: numpy, pandas, pyarrow, sqlalchemy via services.jobs.darshan: kept off the command's `--help` and its usage errors
        from ioweather.services.jobs.darshan import list_jobs
        # lazy: sqlalchemy via services.runtime.stores: kept off the command's `--help` and its usage errors
        from ioweather.services.runtime.stores import open_store
        rows = list_jobs(open_store(settings), since_ns=to_ns(since) if since else None,
                         until_ns=to_ns(until) if until else None, user=user, exe=exe, limit=limit)
        if as_json:
            print_json(rows.to_json())
        else:
            # lazy: rich via views.stored_jobs: `--json` draws no table
            from ioweather.views.stored_jobs import print_job_list

            print_job_list(rows.rows)

    @jobs.command("show")
    @click.argument("jobid")
    @json_option
    @click.pass_obj
    def show_cmd(settings, jobid, as_json):
        """One stored job as the job page shows it: JOBID is the scheduler's job id or the start of the log hash."""
        # lazy: numpy, pandas, pyarrow, sqlalchemy via services.jobs.darshan: kept off the command's `--help` and its usage errors
        from ioweather.services.jobs.darshan import show_job

        rep = show_job(settings, jobid).to_json()
        if as_json:
            print_json(rep)
        else:
            # lazy: rich via views.stored_jobs: `--json` draws no table
            from ioweather.views.stored_jobs import print_stored_job

            print_stored_job(rep)
