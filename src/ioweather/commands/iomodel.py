"""`ioweather iomodel run`: the io-model micro-benchmark (METHODS.md section 2.1, seed 000)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ioweather.commands.common import SIZE, json_option
from ioweather.services.bench import iomodel as svc
from ioweather.units import format_bytes, format_seconds
from ioweather.views.output import print_json, print_table, stderr


def _rate(bps) -> str:
    return "-" if bps is None else f"{format_bytes(bps)}/s"


def _say(line: str) -> None:
    stderr.print(line, highlight=False)


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
        plan = svc.plan_from_options(
            sweep=sweep, cache=cache, ops=ops, mem_layout=mem_layout, file_layout=file_layout, sizes=sizes, runs=runs,
            repeats=repeats, file_size=file_size, mem_size=mem_size, procs=procs, seed=seed, directory=directory,
            time_seek=time_seek, drop_caches=drop_caches, experiment=experiment, keep_files=keep_files)
        for w in plan.warnings:
            stderr.print(f"ioweather: warning: {w}", highlight=False)
        result = svc.run_plan(plan, out or svc.default_out(settings), csv_path, _say)
        if as_json:
            print_json(result.to_json())
        else:
            print_table(result.to_json()["configurations"], [
                ("experiment", "experiment"), ("size_bytes", "size", format_bytes), ("runs", "runs"), ("count", "n"),
                ("median_s", "median", format_seconds), ("p99_s", "p99", format_seconds),
                ("mean_s", "mean", format_seconds), ("throughput_bps", "throughput", _rate)],
                title=f"io-model, {result.rows} operations", empty="no operation succeeded")
            stderr.print(f"wrote {result.rows} rows to {result.out} (run metadata: {result.runs_json})",
                         highlight=False)
        if result.failed_runs:
            stderr.print(f"ioweather: error: {result.failed_runs} of {result.runs} runs failed", highlight=False)
            sys.exit(1)
