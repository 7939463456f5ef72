"""`ioweather iomodel run`: the io-model micro-benchmark (METHODS.md section 2.1, seed 000)."""

from __future__ import annotations

import sys
import time
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from pathlib import Path

import click

from ioweather.commands.common import SIZE, json_option
from ioweather.errors import from_os_error
from ioweather.units import format_bytes, format_seconds, ns_to_iso
from ioweather.views.output import print_json, print_table, progress, stderr

SWEEP_DEFAULTS = {"cache": "discard,cached,uncached", "op": "R,W", "mem_layout": "off0,seq,stride:8MiB,reverse,rnd,rnd8:8MiB",
                  "file_layout": "off0,seq,stride:8MiB,reverse,rnd,rnd8:8MiB", "sizes": "all"}
SINGLE_DEFAULTS = {"cache": "discard", "op": "R", "mem_layout": "off0", "file_layout": "seq", "sizes": "1..1MiB"}


def _rate(bps) -> str:
    return "-" if bps is None else f"{format_bytes(bps)}/s"


def default_out(settings) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    d = settings.parquet_dir / "iomodel"
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise from_os_error(d, e, "create", hint="give --out FILE.parquet") from None
    return d / f"iomodel-{stamp}.parquet"


def summarize(out: Path, run_docs: list[dict]) -> list[dict]:
    """One row per configuration over all its runs and processes, in grid order."""
    from ioweather.stats.iomodel import summarize_durations
    from ioweather.store.iomodel import read_durations

    groups: OrderedDict[tuple, list[dict]] = OrderedDict()
    for d in run_docs:
        key = (d["experiment"], d["cache"], d["op"], d["mem_layout"], d["file_layout"], d["size"])
        groups.setdefault(key, []).append(d)
    rows = []
    for (experiment, cache, op, mem, file, size), docs in groups.items():
        ok = [d for d in docs if d.get("row_group") is not None and d["rows"] > 0]
        stats = summarize_durations(read_durations(out, [d["row_group"] for d in ok]), size)
        rows.append({"experiment": experiment, "cache": cache, "op": op, "mem_layout": mem, "file_layout": file,
                     "size_bytes": size, "runs": len(ok), "failed_runs": sum(1 for d in docs if d.get("error")), **stats})
    return rows


def register(cli: click.Group) -> None:
    @cli.group()
    def iomodel():
        """The io-model micro-benchmark: time single read()/write() calls per layout, size and cache state."""

    @iomodel.command("run")
    @click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Directory on the file system to measure (needed for cached/uncached; files iomodel.N.dat).")
    @click.option("--cache", default=None, help="Cache states, comma-separated: discard (/dev/zero, /dev/null), "
                  "cached, uncached. [default: discard; sweep: all]")
    @click.option("--op", "ops", default=None, help="Operations: R, W or R,W. [default: R; sweep: R,W]")
    @click.option("--mem-layout", default=None, help="Memory layouts: off0, seq, stride:S, reverse, rnd, rnd8:S. "
                  "[default: off0; sweep: all, S=8MiB]")
    @click.option("--file-layout", default=None, help="File layouts, same names. [default: seq; sweep: all]")
    @click.option("--sizes", default=None, help="Access sizes 1 B..16 MiB: a list (1,4k,1MiB), a range of the paper's "
                  "sizes (1..64KiB), a geometric range (1..16MiB:x4) or all. [default: 1..1MiB; sweep: all]")
    @click.option("--repeats", type=int, default=10_000, show_default=True, help="Operations per run and process.")
    @click.option("--runs", type=int, default=None, help="Passes over the whole grid (outer loop). [default: 1; sweep: 3]")
    @click.option("--sweep", is_flag=True, help="Run the full parameter grid; options given narrow it.")
    @click.option("--file-size", type=SIZE, default="1GiB", show_default=True,
                  help="Aggregate size of the data files (each of --procs processes gets its share).")
    @click.option("--mem-size", type=SIZE, default="1GiB", show_default=True,
                  help="Memory buffer per process (scaled down with a warning when memory is short).")
    @click.option("--procs", type=int, default=1, show_default=True, help="Independent processes, one file each.")
    @click.option("--seed", type=int, default=None, help="Seed of the random layouts (default: random; always recorded).")
    @click.option("--time-seek", is_flag=True, help="Also time the offset computation and lseek, as the original io-model did.")
    @click.option("--drop-caches", is_flag=True, help="uncached: as root, also write 3 to /proc/sys/vm/drop_caches "
                  "when posix_fadvise cannot evict the file (empties the whole node's page cache).")
    @click.option("--experiment", default=None, help="Experiment label of every row (default: state-mem-file-op, e.g. C-seq-rnd-R).")
    @click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Parquet output, one row per operation (default: a new file under --home's parquet/iomodel/).")
    @click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="Also write the rows as CSV.")
    @click.option("--keep-files", is_flag=True, help="Keep the data files for the next run (the paper reused them).")
    @json_option
    @click.pass_obj
    def run(settings, directory, cache, ops, mem_layout, file_layout, sizes, repeats, runs, sweep, file_size, mem_size,
            procs, seed, time_seek, drop_caches, experiment, out, csv_path, keep_files, as_json):
        """Run the benchmark over the grid cache x op x mem layout x file layout x size.

        Writes one row per operation (Parquet, optionally CSV), the run metadata
        (parameters, /proc deltas, seeds, host) into the Parquet metadata and
        FILE.runs.json, and prints median/p99/throughput per configuration.
        """
        from ioweather.sources import iomodel as src

        defaults = SWEEP_DEFAULTS if sweep else SINGLE_DEFAULTS
        plan = src.make_plan(
            caches=src.parse_caches(cache or defaults["cache"]), ops=src.parse_ops(ops or defaults["op"]),
            mem_layouts=src.parse_layouts(mem_layout or defaults["mem_layout"]),
            file_layouts=src.parse_layouts(file_layout or defaults["file_layout"]),
            sizes=src.parse_sizes(sizes or defaults["sizes"]), runs=runs or (src.SWEEP_RUNS if sweep else 1),
            repeats=repeats, file_size=file_size, mem_size=mem_size, procs=procs, seed=seed, directory=directory,
            time_seek=time_seek, drop_caches=drop_caches, experiment=experiment, keep_files=keep_files)
        for w in plan.warnings:
            stderr.print(f"ioweather: warning: {w}", highlight=False)
        result = run_plan(plan, out or default_out(settings), csv_path)
        if as_json:
            print_json(result)
        else:
            print_table(result["configurations"], [
                ("experiment", "experiment"), ("size_bytes", "size", format_bytes), ("runs", "runs"), ("count", "n"),
                ("median_s", "median", format_seconds), ("p99_s", "p99", format_seconds),
                ("mean_s", "mean", format_seconds), ("throughput_bps", "throughput", _rate)],
                title=f"io-model, {result['rows']} operations", empty="no operation succeeded")
            stderr.print(f"wrote {result['rows']} rows to {result['out']} (run metadata: {result['runs_json']})",
                         highlight=False)
        if result["failed_runs"]:
            stderr.print(f"ioweather: error: {result['failed_runs']} of {result['runs']} runs failed", highlight=False)
            sys.exit(1)


def run_plan(plan, out: Path, csv_path: Path | None) -> dict:
    """Execute the plan into `out`; returns the JSON summary."""
    from ioweather import __version__
    from ioweather.sources import iomodel as src
    from ioweather.store.iomodel import FORMAT, FORMAT_VERSION, ResultWriter, run_table

    writer = ResultWriter(out, csv_path)
    session = uuid.uuid4().hex
    started = ns_to_iso(time.time_ns())
    run_docs: list[dict] = []
    host: dict = {}
    interrupted = False
    log = lambda m: stderr.print(f"iomodel: {m}", highlight=False)  # noqa: E731
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
    return {"out": str(out), "runs_json": str(writer.sidecar), "csv": str(csv_path) if csv_path else None,
            "session": session, "seed": plan.seed, "rows": writer.rows, "runs": len(run_docs),
            "failed_runs": len(failed), "errors": [{"run_id": d["run_id"], "error": d["error"]} for d in failed],
            "warnings": plan.warnings, "configurations": summarize(out, run_docs)}
