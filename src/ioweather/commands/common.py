"""Click parameter types and options shared by commands."""

from __future__ import annotations

import contextlib
import gc
import os
import sys

import click

from ioweather.errors import UserError
from ioweather.units import looks_like_duration, parse_duration, parse_size, time_ago, time_option, to_ns


class _Parsed(click.ParamType):
    def __init__(self, name: str, fn):
        self.name = name
        self._fn = fn

    def convert(self, value, param, ctx):
        if value is None or not isinstance(value, str):
            return value
        try:
            return self._fn(value)
        except UserError as e:
            self.fail(str(e), param, ctx)


DURATION = _Parsed("duration", parse_duration)


def _duration_with_unit(text: str) -> float:
    if not looks_like_duration(text, need_unit=True):
        parse_duration(text)  # its own error for a malformed one
        raise UserError(f"a duration needs its unit: {text.strip()}s, {text.strip()}m, {text.strip()}h or {text.strip()}d?")
    return parse_duration(text)


#: A duration where a bare number would be a guess (`--older-than 30`: seconds or days?).
DURATION_UNIT = _Parsed("duration", _duration_with_unit)
SIZE = _Parsed("size", parse_size)
TIME = _Parsed("time", time_option)
SINCE = _Parsed("time", time_ago)

json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")


def probe_run_options(f):
    """What `probe run` and `watch` both ask of each probed directory: its label and how it is timed."""
    for option in reversed([
        click.option("--target", "targets", multiple=True,
                     help="Label of the file system (default: HOST:MOUNTPOINT); with several directories, once per "
                          "directory, in the same order."),
        click.option("--block", type=SIZE, default="1MiB", show_default=True, help="Block size of data_read/data_write."),
        click.option("--direct", is_flag=True, help="Open the data file with O_DIRECT (bypass the client page cache)."),
        click.option("--fsync", is_flag=True, help="fsync after each write (inside the timed region)."),
        click.option("--timeout", type=DURATION, default="60s", show_default=True, help="Deadline of one operation."),
    ]):
        f = option(f)
    return f


quiet_option = click.option("--quiet", "-q", is_flag=True,
                            help="Only problems: no progress bar and no summary (--json still prints its document).")


@contextlib.contextmanager
def quiet_output(quiet: bool, as_json: bool = False):
    """What -q silences: progress bars and the human summary on stdout; errors and notes about the
    data (rows skipped or stored as missing) still reach stderr, so a quiet cron job hides nothing wrong."""
    # lazy: rich via views.output: kept off the command's `--help` and its usage errors
    from ioweather.views.output import no_progress

    if not quiet:
        yield
        return
    with no_progress(), contextlib.ExitStack() as stack:
        if not as_json:
            stack.enter_context(contextlib.redirect_stdout(stack.enter_context(open(os.devnull, "w"))))
        yield


#: The youngest generation's threshold while a one-shot command runs (Python's default: 700 allocations).
ONE_SHOT_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def one_shot():
    """A command that answers once and exits (`why JOB`): the cyclic garbage collector rarely while it
    runs, and what it made frozen at its end. Its lazy imports (numpy, pandas, pyarrow, SQLAlchemy,
    DuckDB, PyDarshan: ~800 modules) grow the heap that the collector's full passes walk again and again,
    and the interpreter's exit walks it once more: 0.3 s of the 0.85 s CPU those imports take alone
    (issue 40, docs/benchmarks.md). Collecting every 50,000 allocations, not 700, saves as much as
    turning it off, and a long answer's cycles are still freed as it goes."""
    thresholds = gc.get_threshold()
    gc.set_threshold(ONE_SHOT_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.freeze()  # the exit's collection skips what the answer made: the process ends next
        gc.set_threshold(*thresholds)


def one_blas_thread() -> None:
    """Before numpy is first imported: OpenBLAS without a thread pool of its own. numpy's import starts one
    thread per core, each of which spins before it sleeps; `jobs ingest` (whose workers already take every
    core) and `jobs summary` multiply no matrix that would use them: 0.2 s less CPU for ingest + summary of
    1,000 logs, 0.06 s less wall (issue 40, docs/benchmarks.md). A value the user set is kept, and none is set
    once numpy is imported (a test session's commands, run in its process): OpenBLAS has read its setting then,
    and the variable would only reach the later commands' child processes."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def reference_period(baseline_from, baseline_until) -> tuple[int, int] | None:
    """[since, until) in ns of a site's reference baseline period (--baseline-from, --baseline-until of
    `slowdown` and `why`), None for the rolling window. Here, not in services.probe.slowdown: `why` checks
    the two options without importing the slowdown service (its answers' types and the light check)."""
    if baseline_from is None and baseline_until is None:
        return None
    if baseline_from is None or baseline_until is None:
        raise UserError("--baseline-from and --baseline-until go together")
    if baseline_from >= baseline_until:
        raise UserError("--baseline-from must be before --baseline-until")
    return to_ns(baseline_from), to_ns(baseline_until)
