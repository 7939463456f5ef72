"""The io-model's plan: the grid of configurations and the run parameters, validated and fitted
into the node's memory before anything is written (METHODS.md section 2.1)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ioweather.errors import UserError
from ioweather.sources import iomodel_procstats as procstats
from ioweather.sources.iomodel_cache import (
    CACHED,
    DISCARD,
    UNCACHED,
    check_drop_caches_allowed,
)
from ioweather.sources.iomodel_grammar import Layout, check_size
from ioweather.units import format_bytes

DEFAULT_REPEATS = 10_000
DEFAULT_MEM_SIZE = 1 << 30
DEFAULT_FILE_SIZE = 1 << 30
SWEEP_RUNS = 3
# Buffers may take at most this share of the memory left after the cached files:
# the rest stays for the page cache the benchmark measures.
MEMORY_SHARE = 0.5


@dataclass(frozen=True)
class Config:
    cache: str
    op: str
    mem_layout: Layout
    file_layout: Layout
    size: int

    def experiment(self, override: str | None = None) -> str:
        """The paper's Table 4 label: state-mem-file op, e.g. `C-seq-reverse-R`."""
        return override or f"{self.cache[0].upper()}-{self.mem_layout}-{self.file_layout}-{self.op}"

    def as_dict(self) -> dict:
        return {"cache": self.cache, "op": self.op, "mem_layout": str(self.mem_layout),
                "file_layout": str(self.file_layout), "size": self.size}


def mem_available() -> int:
    return procstats.meminfo().get("MemAvailable", os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


@dataclass
class Plan:
    """Everything a benchmark needs, validated. Build it with `make_plan`."""

    configs: list[Config]
    runs: int
    repeats: int
    file_size: int
    mem_size: int
    procs: int
    seed: int
    directory: Path | None
    time_seek: bool = False
    drop_caches: bool = False
    experiment: str | None = None
    keep_files: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def file_size_per_proc(self) -> int:
        """The paper keeps the aggregate file size when adding processes: each gets its share."""
        return self.file_size // self.procs

    @property
    def needs_files(self) -> bool:
        return any(c.cache != DISCARD for c in self.configs)

    def schedule(self) -> Iterator[tuple[int, int, Config]]:
        """(run_id, repeat, config) in execution order: the outer loop repeats the whole grid."""
        run_id = 0
        for repeat in range(self.runs):
            for c in self.configs:
                yield run_id, repeat, c
                run_id += 1

    @property
    def total_runs(self) -> int:
        return self.runs * len(self.configs)

    def parameters(self) -> dict:
        return {
            "caches": list(dict.fromkeys(c.cache for c in self.configs)),
            "ops": list(dict.fromkeys(c.op for c in self.configs)),
            "mem_layouts": list(dict.fromkeys(str(c.mem_layout) for c in self.configs)),
            "file_layouts": list(dict.fromkeys(str(c.file_layout) for c in self.configs)),
            "sizes": list(dict.fromkeys(c.size for c in self.configs)),
            "configurations": len(self.configs), "runs": self.runs, "repeats": self.repeats,
            "file_size_bytes": self.file_size, "file_size_per_proc_bytes": self.file_size_per_proc,
            "mem_size_bytes": self.mem_size, "procs": self.procs, "seed": self.seed,
            "directory": str(self.directory) if self.directory else None, "time_seek": self.time_seek,
            "drop_caches": self.drop_caches, "experiment": self.experiment, "keep_files": self.keep_files,
        }


def make_plan(*, caches: list[str], ops: list[str], mem_layouts: list[Layout], file_layouts: list[Layout],
              sizes: list[int], runs: int, repeats: int = DEFAULT_REPEATS, file_size: int = DEFAULT_FILE_SIZE,
              mem_size: int = DEFAULT_MEM_SIZE, procs: int = 1, seed: int | None = None,
              directory: Path | None = None, time_seek: bool = False, drop_caches: bool = False,
              experiment: str | None = None, keep_files: bool = False,
              available_bytes: int | None = None) -> Plan:
    """Validate the parameters and fit the memory buffers into the node's memory."""
    if repeats < 1:
        raise UserError("--repeats must be at least 1")
    if runs < 1:
        raise UserError("--runs must be at least 1")
    if procs < 1:
        raise UserError("--procs must be at least 1")
    for s in sizes:
        check_size(s)
    biggest = max(sizes)
    warnings: list[str] = []
    needs_files = any(c != DISCARD for c in caches)
    if needs_files:
        if directory is None:
            raise UserError("cached and uncached runs need --dir: the directory on the file system to measure")
        if not Path(directory).is_dir():
            raise UserError(f"--dir {directory} is not a directory")
        if not os.access(directory, os.W_OK | os.X_OK):
            raise UserError(f"--dir {directory} is not writable")
    per_proc = file_size // procs
    if per_proc < biggest:
        share = f" (each of the {procs} processes gets {format_bytes(per_proc)})" if procs > 1 else ""
        raise UserError(f"--file-size {format_bytes(file_size)}{share} is smaller than the largest access size "
                        f"{format_bytes(biggest)}")
    if mem_size < biggest:
        raise UserError(f"--mem-size {format_bytes(mem_size)} is smaller than the largest access size {format_bytes(biggest)}")
    if UNCACHED in caches:
        check_drop_caches_allowed(drop_caches)
    avail = mem_available() if available_bytes is None else available_bytes
    cached_bytes = file_size if CACHED in caches else 0
    if cached_bytes and cached_bytes > 0.9 * avail:
        raise UserError(f"cached runs need the files in the page cache: --file-size {format_bytes(file_size)} "
                        f"exceeds the memory available ({format_bytes(avail)}); use a smaller --file-size")
    budget = int((avail - cached_bytes) * MEMORY_SHARE)
    if procs * mem_size > budget:
        scaled = 1 << max(0, (budget // procs).bit_length() - 1)
        if scaled < biggest:
            raise UserError(f"not enough memory for {procs} buffer(s) of the largest access size {format_bytes(biggest)} "
                            f"({format_bytes(avail)} available)")
        warnings.append(f"--mem-size {format_bytes(mem_size)} x {procs} process(es) exceeds half of the available "
                        f"memory ({format_bytes(avail)}{' after the cached files' if cached_bytes else ''}); "
                        f"using {format_bytes(scaled)} per process")
        mem_size = scaled
    configs = [Config(*t) for t in itertools.product(caches, ops, mem_layouts, file_layouts, sizes)]
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    return Plan(configs=configs, runs=runs, repeats=repeats, file_size=file_size, mem_size=mem_size, procs=procs,
                seed=seed, directory=Path(directory) if directory else None, time_seek=time_seek,
                drop_caches=drop_caches, experiment=experiment, keep_files=keep_files, warnings=warnings)
