"""`ioweather job LOG` and `ioweather jobs ingest|summary`: Darshan logs (METHODS.md section 3, seeds 002/003)."""

from __future__ import annotations

from pathlib import Path

import click

from ioweather.commands.common import SIZE, json_option
from ioweather.errors import UserError, from_os_error
from ioweather.views.output import print_json, progress, stderr


def _write_html(out: str, text: str, *, quiet: bool) -> None:
    """Write the report; say so on stderr unless `quiet` (--json: stdout is for the JSON only)."""
    from ioweather.files import write_atomic

    write_atomic(out, text)
    if not quiet:
        stderr.print(f"wrote {out}")


def job_report(path: str, *, cores_per_node: int | None = None, thresholds_file: str | None = None,
               dxt: bool = False) -> tuple[dict, object]:
    """(the JSON report of one log, the log itself)."""
    from ioweather.sources.darshan_log import read_log
    from ioweather.sources.thresholds_file import load as thresholds_file_load
    from ioweather.stats.findings import Thresholds, job_findings, job_verdict
    from ioweather.stats.job import characterize

    thresholds = thresholds_file_load(thresholds_file) if thresholds_file else Thresholds()
    log = read_log(path, dxt=dxt, heatmaps=False)
    rep = characterize(log, cores_per_node=cores_per_node)
    rep["findings"] = job_findings(log, rep, thresholds)
    v = job_verdict(rep["findings"], rep, thresholds)
    # the verdict first: it is what a reader acts on
    rep = {"verdict": v["text"], "verdict_actions": v["actions"], "verdict_saving_s": v["saving_s"], **rep}
    if log.warnings:
        rep["warnings"] = log.warnings
    return rep, log


def register(cli: click.Group) -> None:
    @cli.command("job")
    @click.argument("log", type=click.Path(dir_okay=False))
    @json_option
    @click.option("--html", "html_out", metavar="OUT", default=None, help="Write a self-contained HTML report to OUT.")
    @click.option("--cores-per-node", type=click.IntRange(min=1), default=None,
                  help="Cores per compute node, to count nodes when the log does not name its hosts.")
    @click.option("--thresholds", "thresholds_file", type=click.Path(dir_okay=False), default=None,
                  help="TOML or JSON file overriding the findings' thresholds.")
    def job(log, as_json, html_out, cores_per_node, thresholds_file):
        """One job's I/O characterization and findings from its Darshan LOG ("why was my job slow?")."""
        rep, dlog = job_report(log, cores_per_node=cores_per_node, thresholds_file=thresholds_file,
                               dxt=bool(html_out))
        if html_out:
            from ioweather.stats.job import file_table, per_rank_with_shared
            from ioweather.views.job_report import render_job_html

            ft = file_table(dlog)
            top = []
            if len(ft):
                ft = ft.assign(bytes=ft["bytes_read"] + ft["bytes_written"]).sort_values("bytes", ascending=False)
                top = [{"name": r.name or f"(record {r.id})", "module": r.module, "sharing": r.sharing,
                        "bytes": int(r.bytes)} for r in ft.head(20).itertuples()]
            pr, how = per_rank_with_shared(dlog)
            _write_html(html_out, render_job_html({**rep, "top_files": top}, pr, dlog.dxt, source=log,
                                                  per_rank_how=how, damaged=dlog.damaged),
                        quiet=as_json)
        if as_json:
            print_json(rep)
        elif not html_out:
            from ioweather.views.job_console import print_job

            print_job(rep)

    @cli.group("jobs")
    def jobs():
        """A center's Darshan archive: ingest logs, then summarize across jobs (seed 002)."""

    @jobs.command("ingest")
    @click.argument("paths", nargs=-1, required=True, type=click.Path())
    @click.option("--workers", type=click.IntRange(min=1), default=None,
                  help="Worker processes (default: all cores).")
    @click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
                  help="Run the extraction on a Dask cluster (scheduler address; needs ioweather[dask]).")
    @click.option("--cores-per-node", type=click.IntRange(min=1), default=None,
                  help="Cores per node, to count nodes of logs that do not name their hosts.")
    @click.option("--follow-symlinks", is_flag=True,
                  help="Follow symlinks found while scanning directories (skipped by default: anyone who can "
                       "write a log directory could point one anywhere).")
    @json_option
    @click.pass_obj
    def ingest(settings, paths, workers, dask_address, cores_per_node, follow_symlinks, as_json):
        """Read Darshan logs (files, or directories searched for *.darshan) into the store.

        Idempotent: a log already stored (same content) is skipped; a log that cannot be
        read is recorded with its reason and the batch goes on. Safe to re-run after a kill,
        and to run while another ingest into the same store runs (each log is stored once).
        """
        from ioweather.commands.jobs_ingest import default_workers, ingest as run

        with progress() as bar:
            task = bar.add_task("ingesting Darshan logs", total=None)
            counts = run(settings, list(paths), workers=workers or default_workers(), dask_address=dask_address,
                         cores_per_node=cores_per_node, follow_symlinks=follow_symlinks,
                         progress_cb=lambda done, total: bar.update(task, completed=done, total=total))
        if as_json:
            print_json(counts)
        else:
            # duplicates: content already stored (another path, or another ingest running at the same time)
            click.echo(f"{counts['ingested']} logs ingested, {counts['failed']} failed, "
                       f"{counts['duplicates']} duplicates (content already stored), "
                       f"{counts['skipped']} already ingested ({counts['found']} found)")
            if counts["failed"]:
                click.echo("see the reasons with: ioweather jobs failed", err=True)
            if counts["symlinks_skipped"]:
                click.echo(f"{counts['symlinks_skipped']} symlinks skipped (--follow-symlinks to read them)", err=True)

    @jobs.command("failed")
    @json_option
    @click.pass_obj
    def failed_cmd(settings, as_json):
        """Logs that could not be read, with the reason."""
        from ioweather.store import open_store
        from ioweather.store import jobs as jobs_store
        from ioweather.units import ns_to_iso
        from ioweather.views.output import print_table

        rows = [{"path": r["path"], "reason": r["reason"], "size_bytes": r["size_bytes"],
                 "failed_at": ns_to_iso(r["failed_ns"])} for r in jobs_store.failed(open_store(settings))]
        if as_json:
            print_json(rows)
        else:
            print_table(rows, [("path", "path"), ("reason", "reason"), ("size_bytes", "bytes")],
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
        from ioweather.stats.archive import assign_projects, parse_project_map, summary as build
        from ioweather.store import open_store
        from ioweather.store import jobs as jobs_store

        rules = []
        if projects_file:
            try:
                text = Path(projects_file).read_text(encoding="utf-8")
            except OSError as e:
                raise from_os_error(projects_file, e, "read projects file") from None
            try:
                rules = parse_project_map(text)
            except ValueError as e:
                raise UserError(f"projects file {projects_file}: {e}") from None
        store = open_store(settings)
        df = jobs_store.load_jobs(store, jobs_store.SUMMARY_COLUMNS)
        rep = build(df, assign_projects(df, rules), cores_per_node=cores_per_node, min_procs=min_procs,
                    min_bytes=min_bytes, top=top)
        rep = {"jobs": rep.pop("jobs"), "failed_logs": jobs_store.count_failed(store), **rep}
        if html_out:
            from ioweather.views.archive_report import render_summary_html

            _write_html(html_out, render_summary_html(rep), quiet=as_json)
        if as_json:
            print_json(rep)
        elif not html_out:
            from ioweather.views.job_console import print_summary

            if rep["jobs"] == 0:
                stderr.print(f"no jobs in the store ({rep['failed_logs']} logs could not be read); "
                             "run 'ioweather jobs ingest PATH' first")
                return
            print_summary(rep)
