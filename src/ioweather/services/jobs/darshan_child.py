"""`ioweather job LOG` done in a child process, so that a dying Darshan reader is one line.

libdarshan-util can segfault or abort() on a damaged log (issue 27: 25 of 30 public IO500 logs
whose job region cannot be inflated). The whole report (read, characterization, findings,
verdict, the HTML page) is made in a forked child; the parent gets back the typed report
(`JobReport`, services/jobs/answer.py, whose module imports nothing heavy) and the page's text, or the child's UserError, or `READER_DIED` when the child was killed by a signal.

The fork happens before numpy, pandas and PyDarshan are imported: the child imports them itself,
as the command did before, so isolation costs the fork of a small process and the pickling of the
report, not of the parsed log (measured in docs/darshan.md). This module stays light to import.
"""

from __future__ import annotations

from ioweather.errors import UserError
from ioweather.files import write_atomic
from ioweather.isolation import ChildDied, call_isolated
from ioweather.services.jobs.answer import JobReport


def job_outputs(path: str, *, cores_per_node: int | None = None, thresholds_file: str | None = None,
                html_source: str | None = None) -> tuple[JobReport, str | None]:
    """(`ioweather job LOG`'s answer, the HTML page or None) of one log, made in a child.

    `html_source`: the name the page shows for the log (a display form); None: no page.
    """
    try:
        return call_isolated(_make, path, cores_per_node, thresholds_file, html_source)
    except ChildDied as e:
        # lazy: numpy, pandas, pyarrow via sources.darshan_log: the job reader forks before numpy (docs/darshan.md)
        from ioweather.sources.darshan_log import READER_DIED, DarshanLogError

        if e.signum == 9:  # not libdarshan-util: the out-of-memory killer, or an admin
            raise UserError(f"cannot read {path}: the report was killed (SIGKILL; out of memory?)") from None
        raise DarshanLogError(f"cannot read {path}: {READER_DIED}") from None


def _make(path, cores_per_node, thresholds_file, html_source) -> tuple[JobReport, str | None]:
    # lazy: numpy, pandas, pyarrow via services.jobs.report: the job reader forks before numpy (docs/darshan.md)
    from ioweather.services.jobs.report import job_answer, job_html

    rep, log = job_answer(path, cores_per_node=cores_per_node, thresholds_file=thresholds_file,
                          dxt=html_source is not None)
    html = job_html(rep, log, source=html_source) if html_source is not None else None
    return rep, html


def write_html(out: str, text: str) -> None:
    write_atomic(out, text)
