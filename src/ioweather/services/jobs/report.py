"""One Darshan log for `ioweather job` and `why`: read, characterize, findings and verdict, and its
HTML report. No store here: `job LOG` does not load SQLAlchemy (the archive is services/jobs/darshan.py).
"""

from __future__ import annotations

from ioweather.services.jobs.answer import (  # noqa: F401 (re-exported)
    JobReport,
    MiB,
    TopFile,
    with_unit_keys,
)
from ioweather.sources.darshan_log import read_log
from ioweather.sources.thresholds_file import load
from ioweather.stats.damage import drop_impossible
from ioweather.stats.findings import job_findings, job_verdict, Thresholds
from ioweather.stats.job import characterize, file_columns, per_rank_with_shared
from ioweather.stats.job_files import TOP_FILES, top_files
from ioweather.views.job_report import render_job_html


def load_thresholds(path: str) -> object:
    """The finding thresholds of `--thresholds FILE` (TOML or JSON), checked: a bad file is one line."""
    return Thresholds.from_mapping(load(path), f"thresholds file {path}")


def job_answer(path: str, *, cores_per_node: int | None = None, thresholds_file: str | None = None,
               dxt: bool = False) -> tuple[JobReport, object]:
    """(`ioweather job LOG`'s answer, the log itself: its DXT segments and per-rank table draw the HTML report)."""
    rep, log = _report(path, cores_per_node=cores_per_node, thresholds_file=thresholds_file, dxt=dxt)
    return JobReport.of(rep), log


def _report(path: str, *, cores_per_node: int | None = None, thresholds_file: str | None = None,
            dxt: bool = False) -> tuple[dict, object]:
    """(the report of one log as the statistics' dicts, the log itself): what `job_answer` types."""
    thresholds = load_thresholds(thresholds_file) if thresholds_file else Thresholds()
    log, damage = drop_impossible(read_log(path, dxt=dxt, heatmaps=False))
    rep = characterize(log, cores_per_node=cores_per_node)
    if damage:
        rep["job"]["damage"] = damage
    rep["findings"] = job_findings(log, rep, thresholds)
    v = job_verdict(rep["findings"], rep, thresholds)
    # the verdict first: it is what a reader acts on
    rep = {"verdict": v["text"], "verdict_actions": v["actions"], "verdict_saving_s": v["saving_s"], **rep}
    # optional regions (DXT, heatmaps) that could not be read are named: the counters above stand without them
    warnings = list(log.warnings) + [f"{m} region of the log left out: {why}" for m, why in log.damaged.items()]
    if warnings:
        rep["warnings"] = warnings
    return rep, log


def log_top_files(log, n: int = TOP_FILES) -> list[TopFile]:
    """The files of `log` that moved the most, ranked as the job page ranks the stored table."""
    return [TopFile(**f) for f in top_files(file_columns(log), n)]


def job_html(rep: JobReport, log, source: str) -> str:
    """The self-contained HTML report of `job_answer`'s (rep, log) (read with dxt=True for the timeline)."""
    top = [{"name": f.name or f"(record {f.record_id})", "module": f.module, "sharing": f.sharing,
            "bytes": f.moved_bytes} for f in log_top_files(log)]
    pr, how = per_rank_with_shared(log)
    return render_job_html(rep, top, pr, log.dxt, source=source, per_rank_how=how,
                           damaged=log.damaged)
