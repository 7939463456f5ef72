"""The io-model micro-benchmark (METHODS.md section 2.1; seed 000 section 5.2).

Times single read()/write() calls while varying the memory layout of the user
buffer, the layout of the accesses in the file, the access size, the page-cache
state and the operation, so that the latency classes of each *known* setup can
later be found and modelled (`ioweather factors`).

Vocabulary:
- a *configuration* is one point of the grid: (cache, op, mem layout, file layout, size);
- a *run* is one execution of a configuration: `repeats` operations in each of
  `procs` independent processes, each with its own file and its own memory buffer;
- the whole grid is executed `runs` times in an outer loop (3 in sweep mode, as in
  the paper), so noise that hits one pass shows up as a difference between passes.

The timed loop is C (`ioweather._native.iomodel_core.run`); this module prepares files and
cache states, runs the loop in one or more processes and hands each finished run to a
callback. It computes no statistics. The parameters are parsed in iomodel_grammar.py and
checked into a Plan in iomodel_plan.py.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ioweather.errors import UserError, os_error_reason
from ioweather.sources import iomodel_procstats as procstats
from ioweather.sources.mounts import mount_of
from ioweather.sources.iomodel_cache import (CACHED, DISCARD, UNCACHED,
                                             core, data_file_name, ensure_data_file, make_cached, make_uncached,
                                             open_data_file)
from ioweather.sources.iomodel_plan import Config, Plan, mem_available
from ioweather.units import format_bytes, ns_to_iso

SINGLE_THREAD_ENV = {k: "1" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                      "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}


def run_seed(seed: int, run_id: int, proc: int) -> int:
    """Independent, reproducible 64-bit seed per (run, process) from the user's seed."""
    return int(np.random.SeedSequence([seed, run_id, proc]).generate_state(1, np.uint64)[0])


# --------------------------------------------------------------------------- one process
@dataclass
class ProcResult:
    proc: int
    seed: int
    starts: np.ndarray
    durations: np.ndarray
    mem_offsets: np.ndarray
    file_offsets: np.ndarray
    meta: dict


def _describe_failure(config: Config, done: int, err: int, returned: int, fo: int, mo: int) -> str:
    what = "read" if config.op == "R" else "write"
    at = f"op {done} ({what} of {config.size} B at file offset {fo}, memory offset {mo})"
    if err:
        return f"{at} failed: {os.strerror(err)}"
    return f"{at} transferred {returned} B instead of {config.size} B"


def _threads() -> int:
    """Threads of this process (1 is what the measurement wants, see Benchmark._setup)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


class ProcRunner:
    """One benchmark process: its memory buffer, its data file, and the timed loop."""

    def __init__(self, proc: int, mem_size: int, file_path: Path | None, file_len: int, *,
                 time_seek: bool = False, drop_caches: bool = False):
        self.proc = proc
        self.file_path = file_path
        self.file_len = file_len
        self.time_seek = time_seek
        self.drop_caches = drop_caches
        # A preallocated, initialised buffer (the paper's 1 GiB): every page is touched now,
        # so no operation pays a first-touch page fault. mmap gives page alignment.
        self.memory = mmap.mmap(-1, mem_size)
        np.frombuffer(self.memory, dtype=np.uint8).fill(0x5A)
        self.fd = -1
        self._prepared: tuple | None = None

    def prepare(self, config: Config, run_id: int, seed: int, repeats: int) -> dict:
        """Open the target and bring it into the configuration's cache state (untimed)."""
        self.close_fd()
        if config.cache == DISCARD:
            dev = "/dev/zero" if config.op == "R" else "/dev/null"
            self.fd = os.open(dev, (os.O_RDONLY if config.op == "R" else os.O_WRONLY) | os.O_CLOEXEC)
            cache_info: dict = {}
            target = dev
        else:
            assert self.file_path is not None
            self.fd = open_data_file(self.file_path)
            make = make_cached if config.cache == CACHED else (
                lambda fd, n, p: make_uncached(fd, n, p, drop_caches=self.drop_caches))
            cache_info = make(self.fd, self.file_len, self.file_path).as_dict()
            target = str(self.file_path)
        # Result arrays are written once here so their pages exist before the loop.
        arrays = [np.full(repeats, -1, dtype=np.int64) for _ in range(4)]
        self._prepared = (config, run_id, seed, repeats, arrays)
        return {"proc": self.proc, "target": target, "cache_state": cache_info}

    def measure(self) -> ProcResult:
        config, run_id, seed, repeats, (starts, durs, mos, fos) = self._prepared
        self._prepared = None
        file_len = self.file_len if config.cache != DISCARD else max(self.file_len, config.size)
        io0 = procstats.proc_self_io()
        done, err, returned = core().run(
            self.fd, config.op == "R", self.memory, config.size, config.mem_layout.core_kind, config.mem_layout.gap,
            config.file_layout.core_kind, config.file_layout.gap, file_len, repeats, seed,
            config.cache != DISCARD, self.time_seek, starts, durs, mos, fos)
        io1 = procstats.proc_self_io()
        meta: dict = {"proc_io_delta": procstats.delta(io0, io1, keep_zero=True), "threads": _threads()}
        if config.op == "W" and config.cache != DISCARD:
            t0 = time.perf_counter()
            os.fsync(self.fd)  # untimed, as in io-model: dirty pages must not spill into the next run
            meta["sync_s"] = time.perf_counter() - t0
        if done < repeats:
            meta["error"] = _describe_failure(config, done, err, returned, int(fos[done]), int(mos[done]))
        self.close_fd()
        return ProcResult(self.proc, seed, starts[:done], durs[:done], mos[:done], fos[:done], meta)

    def close_fd(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close(self) -> None:
        self.close_fd()
        self.memory.close()


def _worker_main(conn, proc: int, mem_size: int, file_path, file_len: int, time_seek: bool, drop_caches: bool) -> None:
    """A measuring process: prepare on request, run on `go`, send the arrays back; errors go back as text."""
    runner = None
    try:
        runner = ProcRunner(proc, mem_size, file_path, file_len, time_seek=time_seek, drop_caches=drop_caches)
        conn.send(("ok", None))
        while True:
            msg = conn.recv()
            if msg is None:
                break
            try:
                if msg[0] == "prepare":
                    conn.send(("ok", runner.prepare(*msg[1:])))
                elif msg[0] == "go":
                    conn.send(("ok", runner.measure()))
            except UserError as e:
                conn.send(("error", str(e)))
            except OSError as e:  # a disk error during prepare or the post-write fsync: this run fails, not the sweep
                conn.send(("error", f"{e.filename or 'I/O'}: {os_error_reason(e, e.filename)}"))
    except (EOFError, KeyboardInterrupt):
        pass
    except Exception as e:  # report, never hang the parent
        try:
            conn.send(("error", f"process {proc}: {type(e).__name__}: {e}"))
        except OSError:
            pass
    finally:
        if runner is not None:
            runner.close()


# --------------------------------------------------------------------------- the benchmark
@dataclass
class RunResult:
    run_id: int
    repeat: int
    config: Config
    experiment: str
    procs: list[ProcResult]
    meta: dict

    @property
    def error(self) -> str | None:
        return self.meta.get("error")


class Benchmark:
    """Runs a Plan. Use as a context manager: files and processes are cleaned up on exit."""

    def __init__(self, plan: Plan, *, log: Callable[[str], None] = lambda m: None,
                 on_file_progress: Callable[[int, int], None] | None = None, lustre_root: str = "/"):
        self.plan = plan
        self.log = log
        self.on_file_progress = on_file_progress
        self.lustre_root = lustre_root
        self.files: list[Path | None] = [None] * plan.procs
        self.created: list[Path] = []
        self.workers: list = []

    # setup ---------------------------------------------------------------------
    def __enter__(self) -> "Benchmark":
        try:
            self._setup()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _setup(self) -> None:
        p = self.plan
        if p.needs_files:
            total = p.file_size_per_proc * p.procs
            for i in range(p.procs):
                path = p.directory / data_file_name(i)
                base = i * p.file_size_per_proc
                cb = (lambda done, base=base: self.on_file_progress(base + done, total)) if self.on_file_progress else None
                if ensure_data_file(path, p.file_size_per_proc, cb):
                    self.created.append(path)
                self.files[i] = path
            self._preflight()
        # Every measuring process is a fresh, single-threaded one (also for --procs 1): in a
        # multi-threaded process each system call pays an atomic reference count on the file
        # (the kernel's fdget), ~40 ns per 1-byte read here, and numpy's BLAS starts threads
        # on import unless told not to.
        ctx = multiprocessing.get_context("spawn")
        saved = {k: os.environ.get(k) for k in SINGLE_THREAD_ENV}
        os.environ.update(SINGLE_THREAD_ENV)
        try:
            for i in range(p.procs):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker_main, daemon=True,
                                   args=(child, i, p.mem_size, self.files[i], p.file_size_per_proc, p.time_seek,
                                         p.drop_caches))
                proc.start()
                child.close()
                self.workers.append((proc, parent))
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self._gather()

    def _preflight(self) -> None:
        """Fail before the first run when a cache state cannot be reached on this file system."""
        states = {c.cache for c in self.plan.configs}
        for path in self.files:
            fd = open_data_file(path)
            try:
                if UNCACHED in states:
                    make_uncached(fd, self.plan.file_size_per_proc, path, drop_caches=self.plan.drop_caches)
                if CACHED in states:
                    make_cached(fd, self.plan.file_size_per_proc, path)
            finally:
                os.close(fd)

    def __exit__(self, *exc) -> None:
        for proc, conn in self.workers:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc, conn in self.workers:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.terminate()
                proc.join()
            conn.close()
        self.workers = []
        if not self.plan.keep_files:
            for path in self.files:
                if path is not None:
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass

    def _reply(self, i: int, conn) -> tuple[str, object]:
        try:
            return conn.recv()
        except EOFError:
            return "error", f"benchmark process {i} died"

    def _gather(self) -> list:
        """One reply from every process (all are read, so the pipes stay in step), then raise the first error."""
        replies = [self._reply(i, conn) for i, (_, conn) in enumerate(self.workers)]
        for status, value in replies:
            if status == "error":
                raise UserError(value)
        return [value for _, value in replies]

    # running -------------------------------------------------------------------
    def describe(self) -> dict:
        p = self.plan
        info = {"host": socket.gethostname(), "kernel": os.uname().release, "machine": os.uname().machine,
                "cpus": os.cpu_count(), "mem_available_bytes": mem_available()}
        if p.directory is not None:
            info["mount_point"], info["fs_type"] = mount_of(p.directory)
        return info

    def run(self, run_id: int, repeat: int, config: Config) -> RunResult:
        """One run of `config` in every process; a failure is recorded in the result, not raised."""
        p = self.plan
        seeds = [run_seed(p.seed, run_id, i) for i in range(p.procs)]
        meta: dict = {"start": ns_to_iso(time.time_ns())}
        results: list[ProcResult] = []
        try:
            for i, (_, conn) in enumerate(self.workers):
                conn.send(("prepare", config, run_id, seeds[i], p.repeats))
            prepared = self._gather()
            before = procstats.node_snapshot(self.lustre_root)
            t0 = time.perf_counter()
            for _, conn in self.workers:
                conn.send(("go",))
            results = self._gather()
            meta["wall_s"] = time.perf_counter() - t0
            meta.update(procstats.node_delta(before, procstats.node_snapshot(self.lustre_root)))
            for prep, res in zip(prepared, results):
                res.meta = {**prep, "seed": res.seed, **res.meta}
            errors = [f"process {r.proc}: {r.meta['error']}" if p.procs > 1 else r.meta["error"]
                      for r in results if "error" in r.meta]
            if errors:
                meta["error"] = "; ".join(errors)
        except UserError as e:
            meta["error"] = str(e)
        return RunResult(run_id, repeat, config, config.experiment(p.experiment), results, meta)

    def results(self) -> Iterator[RunResult]:
        for run_id, repeat, config in self.plan.schedule():
            r = self.run(run_id, repeat, config)
            if r.error:
                self.log(f"run {run_id} ({r.experiment}, {format_bytes(config.size)}): {r.error}")
            yield r


def run_document(r: RunResult, row_group: int | None) -> dict:
    """What the metadata keeps about one run (row_group: its row group in the Parquet file)."""
    return {"run_id": r.run_id, "repeat": r.repeat, "experiment": r.experiment, **r.config.as_dict(),
            "rows": sum(len(p.durations) for p in r.procs), "row_group": row_group, **r.meta,
            "procs": [{"proc": p.proc, "rows": len(p.durations), **p.meta} for p in r.procs]}
