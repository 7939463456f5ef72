"""The io-model benchmark (METHODS.md section 2.1, seed 000): a plan from the command's options,
its execution into a Parquet file with the run metadata, and the summary per configuration.

Serves `ioweather iomodel run`. Progress is shown on stderr (the run takes minutes to hours).
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ioweather import __version__
from ioweather.encoding import answer_dict
from ioweather.errors import from_os_error
from ioweather.units import format_bytes, ns_to_iso
from ioweather.views.output import progress

SWEEP_DEFAULTS = {"cache": "discard,cached,uncached", "op": "R,W", "mem_layout": "off0,seq,stride:8MiB,reverse,rnd,rnd8:8MiB",
                  "file_layout": "off0,seq,stride:8MiB,reverse,rnd,rnd8:8MiB", "sizes": "all"}
SINGLE_DEFAULTS = {"cache": "discard", "op": "R", "mem_layout": "off0", "file_layout": "seq", "sizes": "1..1MiB"}


def plan_from_options(*, sweep: bool, cache, ops, mem_layout, file_layout, sizes, runs, **params):
    """The checked plan: each grid option as given, else its --sweep or single-run default."""
    # lazy: numpy via sources.iomodel_grammar: commands.iomodel imports this at its top: kept off `ioweather iomodel --help` and its usage errors
    from ioweather.sources import iomodel_grammar as grammar
    # lazy: numpy via sources.iomodel_plan: commands.iomodel imports this at its top: kept off `ioweather iomodel --help` and its usage errors
    from ioweather.sources.iomodel_plan import SWEEP_RUNS, make_plan

    defaults = SWEEP_DEFAULTS if sweep else SINGLE_DEFAULTS
    return make_plan(
        caches=grammar.parse_caches(cache or defaults["cache"]), ops=grammar.parse_ops(ops or defaults["op"]),
        mem_layouts=grammar.parse_layouts(mem_layout or defaults["mem_layout"]),
        file_layouts=grammar.parse_layouts(file_layout or defaults["file_layout"]),
        sizes=grammar.parse_sizes(sizes or defaults["sizes"]), runs=runs or (SWEEP_RUNS if sweep else 1), **params)


def default_out(settings) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    d = settings.parquet_dir / "iomodel"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise from_os_error(d, e, "create", hint="give --out FILE.parquet") from None
    return d / f"iomodel-{stamp}.parquet"


@dataclass
class Configuration:
    """One configuration of the grid over all its runs and processes: its labels, the transfer size in
    bytes, runs that gave durations and runs that failed, and stats.iomodel.summarize_durations' numbers
    (operations, median, 99th percentile and mean seconds, total bytes over total seconds; None without
    an operation)."""

    experiment: str
    cache: str
    op: str
    mem_layout: str
    file_layout: str
    size_bytes: int
    runs: int
    failed_runs: int
    count: int
    median_s: float | None
    p99_s: float | None
    mean_s: float | None
    throughput_bps: float | None


@dataclass
class RunError:
    """A run that failed, and why."""

    run_id: str
    error: str


@dataclass
class IomodelRun:
    """`iomodel run --json`: where the rows went (Parquet, its runs sidecar, the CSV if asked), the session
    and seed, rows written, runs done and failed (with their errors), the plan's warnings and the summary
    per configuration in grid order."""

    out: str
    runs_json: str
    csv: str | None
    session: str
    seed: int
    rows: int
    runs: int
    failed_runs: int
    errors: list[RunError]
    warnings: list[str]
    configurations: list[Configuration]

    def to_json(self) -> dict:
        return {**answer_dict(self), "errors": [answer_dict(e) for e in self.errors],
                "configurations": [answer_dict(c) for c in self.configurations]}


def summarize(out: Path, run_docs: list[dict]) -> list[Configuration]:
    """One row per configuration over all its runs and processes, in grid order."""
    # lazy: numpy via stats.iomodel: commands.iomodel imports this at its top: kept off `ioweather iomodel --help` and its usage errors
    from ioweather.stats.iomodel import summarize_durations
    # lazy: pyarrow via store.iomodel, loaded only when this runs
    from ioweather.store.iomodel import read_durations

    groups: OrderedDict[tuple, list[dict]] = OrderedDict()
    for d in run_docs:
        key = (d["experiment"], d["cache"], d["op"], d["mem_layout"], d["file_layout"], d["size"])
        groups.setdefault(key, []).append(d)
    rows = []
    for (experiment, cache, op, mem, file, size), docs in groups.items():
        ok = [d for d in docs if d.get("row_group") is not None and d["rows"] > 0]
        stats = summarize_durations(read_durations(out, [d["row_group"] for d in ok]), size)
        rows.append(Configuration(experiment, cache, op, mem, file, size, len(ok),
                                  sum(1 for d in docs if d.get("error")), **stats))
    return rows


def run_plan(plan, out: Path, csv_path: Path | None, say: Callable[[str], None]) -> IomodelRun:
    """Execute the plan into `out`; returns what was written and the summary per configuration."""
    # lazy: numpy via sources.iomodel: commands.iomodel imports this at its top: kept off `ioweather iomodel --help` and its usage errors
    from ioweather.sources import iomodel as src
    # lazy: pyarrow via store.iomodel, loaded only when this runs
    from ioweather.store.iomodel import FORMAT, FORMAT_VERSION, ResultWriter, run_table

    writer = ResultWriter(out, csv_path)
    session = uuid.uuid4().hex
    started = ns_to_iso(time.time_ns())
    run_docs: list[dict] = []
    host: dict = {}
    interrupted = False
    log = lambda m: say(f"iomodel: {m}")  # noqa: E731
    try:
        with progress() as bar:
            files_task = None

            def on_file(done, total):
                nonlocal files_task
                if files_task is None:
                    files_task = bar.add_task("writing data files", total=total)
                bar.update(files_task, completed=done)

            with src.Benchmark(plan, log=log, on_file_progress=on_file) as bench:
                host = bench.describe()
                task = bar.add_task("io-model runs", total=plan.total_runs)
                for r in bench.results():
                    rg = None
                    if any(len(p.durations) for p in r.procs):
                        rg = writer.write(run_table(r.run_id, r.experiment, r.config.as_dict(), r.repeat, r.procs))
                    run_docs.append(src.run_document(r, rg))
                    bar.update(task, advance=1, description=f"io-model: pass {r.repeat + 1}/{plan.runs}, {r.experiment} "
                                                             f"{format_bytes(r.config.size)}")
    except KeyboardInterrupt:
        interrupted = True
    except BaseException:
        writer.abort()
        raise
    if interrupted and not run_docs:
        writer.abort()
        raise KeyboardInterrupt
    # An interrupted sweep keeps its completed runs, marked incomplete.
    writer.finish({"format": FORMAT, "version": FORMAT_VERSION, "session": session, "started": started,
                   "finished": ns_to_iso(time.time_ns()), "complete": not interrupted,
                   "ioweather_version": __version__, **host, "parameters": plan.parameters(),
                   "warnings": plan.warnings, "runs": run_docs})
    if interrupted:
        log(f"interrupted: kept the {len(run_docs)} completed runs in {out}")
        raise KeyboardInterrupt
    failed = [d for d in run_docs if d.get("error")]
    return IomodelRun(str(out), str(writer.sidecar), str(csv_path) if csv_path else None, session, plan.seed,
                      writer.rows, len(run_docs), len(failed), [RunError(d["run_id"], d["error"]) for d in failed],
                      plan.warnings, summarize(out, run_docs))
