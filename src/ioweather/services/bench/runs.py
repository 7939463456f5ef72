"""Regression benchmarks (METHODS.md section 6; seeds 004 section 3 and 003): fixed I/O motifs run
with fio on a schedule, imported results of other benchmarks, and their statistics.

Safety of `run`: every file lives in DIR/.ioweather-bench (checked to resolve inside DIR); a motif
needing more than `max_share` of DIR's free space is refused before fio starts; the work directory
is removed after the run, on Ctrl-C and SIGTERM too, and a work directory left by a killed run is
removed by the next run (under the lock); a second run on the same DIR is refused by an flock on
DIR/.ioweather-bench.lock. A run is stored only when fio finished and its JSON was read: an
interrupted motif leaves nothing in the store.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

from ioweather import signals
from ioweather.encoding import Answer, answer_dict
from ioweather.errors import StoreError, UserError, from_os_error
from ioweather.files import write_atomic
from ioweather.services.runtime.fs_names import fs_map_of, fs_name_of
from ioweather.sources import fio
from ioweather.stats.check_codes import CHECK_NAMES, CHECK_PRECEDENCE
from ioweather.units import format_bytes, ns_to_iso

if TYPE_CHECKING:
    import pandas as pd

# numpy and pandas are imported where used: the runner (`bench run`, scheduled on compute nodes) and
# `bench summary` need neither, and pandas with pyarrow was most of the runner's 155 MiB.
MIB = 1024 * 1024
WORK_NAME = ".ioweather-bench"
LOCK_NAME = ".ioweather-bench.lock"
DEFAULT_SIZE = 16 * MIB
DEFAULT_TASKS = 2
DEFAULT_MD_FILES = 256
DEFAULT_MAX_SHARE = 0.5
MD_FILE_SIZE = 4096


@dataclass(frozen=True)
class Motif:
    name: str
    purpose: str
    #: fio job arguments after the common ones; SIZE, BS and FILES are filled in per run.
    args: tuple[str, ...]


MOTIFS = {m.name: m for m in (
    Motif("fpp-write", "file per process, sequential 4 MiB writes (IOR-like: N tasks x 4 MiB transfers)",
          ("--name=fpp-write", "--rw=write", "--bs=BS", "--size=SIZE", "--end_fsync=1")),
    Motif("fpp-read", "file per process, sequential 4 MiB reads of files fio lays out first",
          ("--name=fpp-read", "--rw=read", "--bs=BS", "--size=SIZE")),
    Motif("shared-write", "one shared file, each task writing its own contiguous region in 4 MiB transfers",
          ("--name=shared-write", "--rw=write", "--bs=BS", "--size=SIZE", "--filename=shared.dat",
           "--offset_increment=SIZE", "--end_fsync=1")),
    Motif("shared-read", "one shared file, each task reading its own region in 4 MiB transfers",
          ("--name=shared-read", "--rw=read", "--bs=BS", "--size=SIZE", "--filename=shared.dat",
           "--offset_increment=SIZE")),
    Motif("rand4k-write", "small random 4 KiB writes, file per process (IOPS, not bandwidth)",
          ("--name=rand4k-write", "--rw=randwrite", "--bs=4k", "--size=SIZE")),
    Motif("rand4k-read", "small random 4 KiB reads, file per process",
          ("--name=rand4k-read", "--rw=randread", "--bs=4k", "--size=SIZE")),
    Motif("metadata", "create, stat and delete FILES small files per task (fio's file engines): the metadata server",
          ("--filename_format=md.$jobnum.$filenum", "--nrfiles=FILES", f"--filesize={MD_FILE_SIZE}",
           "--name=create", "--ioengine=filecreate", "--create_on_open=1",
           "--name=stat", "--stonewall", "--ioengine=filestat",
           "--name=delete", "--stonewall", "--ioengine=filedelete")),
)}


def motif_names(names) -> list[str]:
    names = list(names) or list(MOTIFS)
    unknown = [n for n in names if n not in MOTIFS]
    if unknown:
        raise UserError(f"unknown motif {unknown[0]!r}; known: {', '.join(MOTIFS)}")
    return list(dict.fromkeys(names))


def fio_args(name: str, work: Path, size: int, tasks: int, md_files: int) -> list[str]:
    bs = min(4 * MIB, size)
    fill = {"SIZE": str(size), "BS": str(bs), "FILES": str(md_files)}
    # --thread: fio's jobs are threads of the one process that dies with us (PR_SET_PDEATHSIG, sources/fio.py);
    # forked job processes do not inherit that, and after a kill -9 of ioweather kept writing for hours
    args = [f"--directory={fio.escape_path(work)}", "--ioengine=psync", "--thread", "--group_reporting", f"--numjobs={tasks}"]
    for a in MOTIFS[name].args:
        key, eq, val = a.partition("=")
        args.append(f"{key}={fill.get(val, val)}" if eq else a)
    return args


def space_needed(name: str, size: int, tasks: int, md_files: int) -> int:
    if name == "metadata":
        return tasks * md_files * MD_FILE_SIZE * 2  # file data plus directory entries and inodes
    return size * tasks


# ----------------------------------------------------------------------------- safe directory

def _real_dir(directory: str | os.PathLike) -> Path:
    p = Path(directory)
    try:
        st = p.stat()
    except OSError as e:
        raise from_os_error(p, e, "use benchmark directory") from None
    if not os.path.isdir(p) or not st:
        raise UserError(f"cannot use benchmark directory {p}: not a directory")
    return Path(os.path.realpath(p))


def _inside(path: Path, root: Path) -> bool:
    return os.path.realpath(path).startswith(str(root).rstrip("/") + "/")


@contextlib.contextmanager
def _locked(root: Path):
    """An exclusive flock on DIR/.ioweather-bench.lock; a second run on DIR is refused, not queued."""
    lock = root / LOCK_NAME
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as e:
        raise from_os_error(lock, e, "create lock file") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            raise UserError(f"another ioweather bench run (pid {holder}) is using {root}; "
                            f"runs on one directory would measure each other") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


def _remove_work(work: Path) -> int:
    """Remove the work directory (never following a symlink out of it); number of entries removed."""
    if not os.path.lexists(work):
        return 0
    if os.path.islink(work) or not work.is_dir():
        work.unlink()
        return 1
    n = sum(len(files) + len(dirs) for _, dirs, files in os.walk(work))
    shutil.rmtree(work)
    return n + 1


def _free_bytes(root: Path) -> int:
    try:
        st = os.statvfs(root)
    except OSError as e:
        raise from_os_error(root, e, "read free space of") from None
    return st.f_bavail * st.f_frsize


def _hosts() -> str:
    return os.environ.get("SLURM_JOB_NODELIST") or socket.gethostname()


def new_run_id(motif: str) -> str:
    return f"{motif}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(3)}"


# ----------------------------------------------------------------------------- run

@dataclass
class RunResult:
    """One direction of a stored run as fio reported it: bytes, seconds, bytes per second, operations per
    second and the latency percentiles in seconds (None when fio gave none)."""

    direction: str
    bytes: int | None
    duration_s: float
    bw_bps: float
    iops: float | None
    lat_p50_s: float | None
    lat_p99_s: float | None


@dataclass
class RunSummary:
    """A run `bench run` stored: its id, motif, file system, window (ISO 8601 UTC) and results."""

    run_id: str
    motif: str
    fs: str
    start: str
    end: str
    results: list[RunResult]

    def to_json(self) -> dict:
        return {**answer_dict(self), "results": [answer_dict(r) for r in self.results]}


@dataclass
class BenchRun:
    """`bench run --json`: the runs stored, in the order run, the directory measured (its real path), the
    file system they are filed under, seconds inside fio, leftover entries of an interrupted run removed,
    and the whole command's seconds."""

    runs: list[RunSummary]
    directory: str
    fs: str
    fio_s: float = 0.0
    leftovers_removed: int = 0
    total_s: float = 0.0

    def to_json(self) -> dict:
        return {**answer_dict(self), "runs": [r.to_json() for r in self.runs]}


def run(store, motifs, directory, size: int = DEFAULT_SIZE, tasks: int = DEFAULT_TASKS,
        md_files: int = DEFAULT_MD_FILES, fs: str | None = None, max_share: float = DEFAULT_MAX_SHARE,
        on_motif=None) -> BenchRun:
    """Run `motifs` in DIR one after the other and store each finished run."""
    names = motif_names(motifs)
    if size < 4096 or tasks < 1 or md_files < 1:
        raise UserError("need --size >= 4 KiB, --tasks >= 1 and --md-files >= 1")
    if not 0 < max_share <= 1:
        raise UserError(f"--max-share must be in (0, 1], got {max_share:g}")
    exe = fio.find_fio()
    root = _real_dir(directory)
    fio.escape_path(root / WORK_NAME)  # refused now, not after the first motif's setup
    label = fs or fs_name_of(root, fs_map_of(store))
    t0 = time.perf_counter()
    out = BenchRun([], str(root), label)
    # SIGTERM (a scheduler's cancel, systemd's stop) unwinds like Ctrl-C, so the cleanup runs
    with signals.interrupting((signal.SIGTERM,)), _locked(root):
        work = root / WORK_NAME
        out.leftovers_removed = _remove_work(work)
        version = fio.version(exe)
        for name in names:
            need = space_needed(name, size, tasks, md_files)
            free = _free_bytes(root)
            if need > free * max_share:
                raise UserError(f"motif {name} needs {format_bytes(need)} in {root}, more than {max_share:.0%} "
                                f"of its {format_bytes(free)} free; lower --size/--tasks or raise --max-share")
            if on_motif:
                on_motif(name)
            out.runs.append(_run_one(store, name, work, root, label, exe, version, size, tasks, md_files, out))
    out.total_s = time.perf_counter() - t0
    return out


def _run_one(store, name, work, root, label, exe, version, size, tasks, md_files, acc: BenchRun) -> RunSummary:
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    try:
        work.mkdir(mode=0o700)
    except OSError as e:
        raise from_os_error(work, e, "create benchmark directory") from None
    if not _inside(work, root):
        raise UserError(f"refusing to run: {work} resolves outside {root}")
    start_ns = time.time_ns()
    t = time.perf_counter()
    try:
        doc, text = fio.run(fio_args(name, work, size, tasks, md_files), cwd=work, fio=exe)
    finally:
        acc.fio_s += time.perf_counter() - t
        _remove_work(work)
    end_ns = time.time_ns()
    results, reasons = fio.read_results(doc)
    if not results:
        raise UserError(f"fio reported no I/O for motif {name}" + (f" that can be stored ({reasons[0]})" if reasons else ""))
    rec = {"run_id": new_run_id(name), "motif": name, "fs": label, "source": "fio", "hosts": _hosts(),
           "directory": str(root), "start_ns": start_ns, "end_ns": end_ns, "tasks": tasks, "size_bytes": size,
           "tool_version": fio.fio_version(doc) if doc.get("fio version") else version,
           "params": {"fio_args": fio_args(name, Path(WORK_NAME), size, tasks, md_files), "md_files": md_files},
           "results": results, "json_text": text}
    bstore.put_runs(store, [rec])
    return _run_summary(rec)


def _run_summary(rec: dict) -> RunSummary:
    return RunSummary(rec["run_id"], rec["motif"], rec["fs"], ns_to_iso(rec["start_ns"]), ns_to_iso(rec["end_ns"]),
                      [RunResult(r["direction"], r["bytes"], r["duration_s"], r["bw_bps"], r["iops"],
                                 r.get("lat_p50_s"), r.get("lat_p99_s")) for r in rec["results"]])


# ----------------------------------------------------------------------------- submit

@dataclass
class Submitted(Answer):
    """`bench submit --json`: the Slurm job id, the batch script written, where the job's output goes and
    the motifs it runs."""

    jobid: str
    script: str
    output: str
    motifs: list[str]


def submit(settings, motifs, directory, size: int, tasks: int, md_files: int, fs: str | None,
           max_share: float, sbatch_args: list[str] | None = None) -> Submitted:
    """Submit `ioweather bench run` as a Slurm batch job; the job stores its runs when it ends.

    The script names the store explicitly (IOWEATHER_HOME, IOWEATHER_DB), so the job writes where this
    command reads whatever the compute node's environment says."""
    names = motif_names(motifs)
    root = _real_dir(directory)
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise UserError("sbatch is not on PATH: `bench submit` needs Slurm's client commands")
    d = Path(settings.home) / "bench-jobs"
    cmd = [sys.executable, "-m", "ioweather", "bench", "run", *names, "--dir", str(root), "--size", str(size),
           "--tasks", str(tasks), "--md-files", str(md_files), "--max-share", repr(max_share)]
    if fs:
        cmd += ["--fs", fs]
    env = [f"export IOWEATHER_HOME={shlex.quote(str(settings.home))}"]
    if settings.db_url:
        env.append(f"export IOWEATHER_DB={shlex.quote(settings.db_url)}")
    script = "\n".join(["#!/bin/sh", f"#SBATCH --job-name=ioweather-bench", f"#SBATCH --ntasks={tasks}",
                        f"#SBATCH --output={d}/slurm-%j.out", "set -e", *env, "exec " + shlex.join(cmd), ""])
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = d / f"bench-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{secrets.token_hex(3)}.sh"
        path.write_text(script)
    except OSError as e:
        raise from_os_error(d, e, "write batch script in") from None
    try:
        p = subprocess.run([sbatch, "--parsable", *(sbatch_args or []), str(path)], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"cannot run sbatch: {e}") from None
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        raise UserError(f"sbatch refused the job: {msg}")
    jobid = p.stdout.strip().split(";")[0]
    return Submitted(jobid, str(path), str(d / f"slurm-{jobid}.out"), names)


# ----------------------------------------------------------------------------- import

@dataclass
class FileImport:
    """One file `bench import` read: its path, format and runs stored. A fio JSON has `skipped` (why some of
    its jobs were not stored); a tokio-abc summary has `rows_in_file`, `skipped_rows` (rows without a window
    or a performance) and `system`. The fields a format does not have are left out of the JSON."""

    path: str
    format: str
    runs: int
    skipped: list[str] | None = None
    rows_in_file: int | None = None
    skipped_rows: int | None = None
    system: str | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in answer_dict(self).items() if v is not None}


@dataclass
class ImportFailure:
    """A file that could not be imported, and the one line saying why."""

    path: str
    error: str


@dataclass
class BenchImport:
    """`bench import --json`: files imported, runs stored, tokio-abc rows skipped, per file what it gave,
    and the files that failed (the others went on)."""

    files: int = 0
    runs: int = 0
    skipped_rows: int = 0
    by_file: list[FileImport] = field(default_factory=list)
    failed: list[ImportFailure] = field(default_factory=list)

    def to_json(self) -> dict:
        return {**answer_dict(self), "by_file": [f.to_json() for f in self.by_file],
                "failed": [answer_dict(f) for f in self.failed]}


def import_files(store, paths, fmt: str | None = None, fs: str | None = None,
                 motif: str | None = None) -> BenchImport:
    """Import fio JSON outputs and tokio-abc summaries (by --format, else by name: .json is fio, .csv[.gz] tokio-abc).

    A file that cannot be imported is one entry of `failed` and the others go on."""
    if fmt not in (None, "fio", "tokio-abc"):
        raise UserError(f"unknown format {fmt!r}; known: fio, tokio-abc")
    totals = BenchImport()
    for p in paths:
        kind = fmt or ("tokio-abc" if str(p).endswith((".csv", ".csv.gz")) else "fio")
        try:
            r = _import_fio(store, p, fs, motif) if kind == "fio" else _import_abc(store, p)
        except StoreError:
            raise  # the store, not this file: the next file would fail the same way
        except UserError as e:
            totals.failed.append(ImportFailure(str(p), str(e)))
            continue
        totals.files += 1
        totals.runs += r.runs
        totals.skipped_rows += r.skipped_rows or 0
        totals.by_file.append(r)
    return totals


def _import_fio(store, path, fs: str | None, motif: str | None) -> FileImport:
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    doc, text = fio.read_file(path)
    rows, reasons = fio.read_results(doc)
    if not rows:
        raise UserError(f"{path}: fio's JSON holds no job whose I/O can be stored ({reasons[0]})" if reasons
                        else f"{path}: fio's JSON holds no job that did I/O")
    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
    # numjobs=N without group_reporting: N jobs of one name, each its own run (one id per name
    # made their results collide in the store)
    names = Counter(r["jobname"] for r in {r["job"]: r for r in rows}.values())
    runs: dict[int, dict] = {}
    for r in rows:
        if r["end_ms"] is None:
            stamp = [x for x in reasons if x.startswith("timestamp")]
            raise UserError(f"{path}: fio's JSON has no time stamp (timestamp_ms or job_start)"
                            + (f": its {stamp[0]}" if stamp else ""))
        suffix = f".{r['job']}" if names[r["jobname"]] > 1 else ""
        rid = f"fio:{digest}:{r['jobname'][:160 - 17 - len(suffix)]}{suffix}"
        rid = "".join(c if c.isalnum() or c in "._:@+-" else "_" for c in rid)
        run = runs.setdefault(r["job"], {"run_id": rid, "motif": motif or r["jobname"], "fs": fs or "unknown",
                                    "source": "fio-import", "hosts": None, "directory": None,
                                    "start_ns": int(r["start_ms"] * 1e6), "end_ns": int(r["end_ms"] * 1e6),
                                    "tool_version": fio.fio_version(doc), "params": {"file": str(Path(path).resolve())},
                                    "results": [], "json_text": None})
        run["results"].append(r)
    first = next(iter(runs.values()))
    first["json_text"] = text  # one copy of the file, beside the first of its runs
    bstore.put_runs(store, list(runs.values()))
    return FileImport(str(path), "fio", len(runs), skipped=reasons)


def _import_abc(store, path) -> FileImport:
    """tokio-abc's per-run summaries, read and derived as `import job-features --preset tokio-abc` does."""
    # lazy: numpy, pandas, pyarrow, loaded only when this runs
    import numpy as np
    import pandas as pd

    # lazy: pandas, pyarrow via sources.job_features, loaded only when this runs
    from ioweather.sources import job_features as src
    # lazy: pandas, pyarrow via stats.abc_features, loaded only when this runs
    from ioweather.stats.abc_features import derive, epoch_s
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    raw = src.read_csv(path)
    system = src.system_from_name(path) or "tokio-abc"
    df = derive(raw, system)
    start = epoch_s(df["_datetime_start"]).to_numpy(float)
    end = epoch_s(df["_datetime_end"]).to_numpy(float)
    bw = pd.to_numeric(df["darshan_agg_perf_by_slowest_posix"], errors="coerce").to_numpy(float) * MIB
    write = df["darshan_read_or_write_job"].to_numpy() == "write"
    nbytes = np.where(write, pd.to_numeric(df["darshan_tot_bytes_written_posix"], errors="coerce"),
                      pd.to_numeric(df["darshan_tot_bytes_read_posix"], errors="coerce"))
    ok = np.isfinite(start) & np.isfinite(end) & (end > start) & np.isfinite(bw) & (bw > 0)
    runs = {}
    for i in np.flatnonzero(ok):
        row = df.iloc[i]
        sub = str(row["_subsystem"])
        motif = str(row["_benchmark_id"]) + ("" if sub == system else f"@{sub}")
        rid = f"abc:{system}:{row['_jobid']}:{motif}"
        rid = "".join(c if c.isalnum() or c in "._:@+-" else "_" for c in rid)[:160]
        runs[rid] = {"run_id": rid, "motif": motif, "fs": str(row["_file_system"]), "source": "tokio-abc",
                     "hosts": None, "directory": None, "start_ns": int(start[i] * 1e9), "end_ns": int(end[i] * 1e9),
                     "tasks": int(row["darshan_nprocs"]) if np.isfinite(row["darshan_nprocs"]) else None,
                     "tool_version": None, "params": {"system": system, "jobid": str(row["_jobid"])},
                     "json_text": None,
                     "results": [{"direction": str(row["darshan_read_or_write_job"]),
                                  "bytes": int(nbytes[i]) if np.isfinite(nbytes[i]) else None,
                                  "duration_s": float(end[i] - start[i]), "bw_bps": float(bw[i]), "iops": None}]}
    bstore.put_runs(store, list(runs.values()))
    return FileImport(str(path), "tokio-abc", len(runs), rows_in_file=len(raw),
                      skipped_rows=int(len(raw) - len(runs)), system=system)


# ----------------------------------------------------------------------------- statistics

def _no_runs(motif=None, fs=None) -> UserError:
    return UserError("no benchmark runs in the store" + (f" for motif {motif!r}" if motif else "")
                     + (f" on {fs!r}" if fs else "")
                     + "; run some with `ioweather bench run --dir DIR` or import with `ioweather bench import`")


def _frame(store, motif=None, fs=None, columns=None, direction=None) -> "pd.DataFrame":
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    df = bstore.results_frame(store, motif, fs, columns, direction)
    if df.empty:
        raise _no_runs(motif, fs)
    return df


@dataclass
class SummaryRow:
    """How one series (motif, direction, file system) stands: its runs, optimum and mean duration (seconds),
    contention (mean / optimum), best rate (bytes per second), its last run (seconds, bytes per second,
    fraction of peak, standing among the series' rates, ISO 8601 UTC start), its last runs' fractions of
    peak oldest first (`last_k`, None where unknown) and the regression flag."""

    motif: str
    direction: str
    fs: str
    runs: int
    optimum_s: float | None
    mean_s: float | None
    contention: float | None
    best_bps: float | None
    last_duration_s: float | None
    last_bps: float | None
    last_fraction_of_peak: float | None
    last_standing: float | None
    last_k: list[float | None]
    regression: bool
    last_start: str

    @classmethod
    def of(cls, row: dict) -> SummaryRow:
        """From stats.bench.summary_row's row (its start in ns)."""
        row = dict(row)
        start = ns_to_iso(row.pop("last_start_ns"))
        return cls(**row, last_start=start)

    def to_json(self) -> dict:
        """The row as the Benchmarks page has it (with `last_k`); `bench summary --json` leaves `last_k` out."""
        return answer_dict(self)


def summary(store, motif: str | None = None, fs: str | None = None, last: int = 3,
            threshold: float = 0.5) -> list[SummaryRow]:
    """Per motif, direction and fs: runs, optimum_s, mean_s, contention, best_bps, the last run's
    fraction of peak and standing, and the regression flag (last `last` runs below `threshold`).

    From the aggregates the store keeps per series and each series' last runs (two index reads),
    never the whole history: O(series), not O(runs)."""
    # lazy: numpy via stats.bench: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.stats import bench as sb
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    groups = bstore.groups(store, motif, fs)
    tails = bstore.series_tails(store, [(g["motif"], g["direction"], g["fs"]) for g in groups], last)
    rows = []
    for g in groups:
        t = tails[(g["motif"], g["direction"], g["fs"])]
        row = sb.summary_row(g, t["tail"], t["at_or_below"], k=last, threshold=threshold)
        if row is not None:
            rows.append(SummaryRow.of(row))
    if not rows:
        raise _no_runs(motif, fs)
    return rows


@dataclass(frozen=True)
class BenchSummary:
    """How each benchmark series stands (`bench summary --json`): per motif, direction and file system
    the runs, optimum and mean duration (seconds), contention (mean / optimum), best rate (bytes per
    second), the last run (ISO 8601 UTC start, seconds, bytes per second, fraction of peak, standing among
    the series' rates) and the regression flag. `rows` also hold each series' last fractions of peak
    (`last_k`), which the JSON leaves out: the Benchmarks page's rows carry them."""

    rows: list[SummaryRow]

    def to_json(self) -> list[dict]:
        return [{k: v for k, v in r.to_json().items() if k != "last_k"} for r in self.rows]


def bench_summary(store, motif: str | None = None, fs: str | None = None, last: int = 3,
                  threshold: float = 0.5) -> BenchSummary:
    """`bench summary`: `summary`'s rows as the answer."""
    return BenchSummary(summary(store, motif, fs, last, threshold))


@dataclass(frozen=True)
class CheckSeries:
    """One series' state (OK, WARNING, CRITICAL) in `bench check`, with its last run's fraction of peak."""

    motif: str
    direction: str
    fs: str
    state: str
    last_fraction_of_peak: float | None


@dataclass(frozen=True)
class BenchCheck:
    """`bench check`: the monitoring plugin's answer. `status` (OK, WARNING, CRITICAL, UNKNOWN) and its
    `exit_code` (0-3), the one `message` line with perfdata, and per series its `state` and the last
    run's fraction of peak."""

    status: str
    exit_code: int
    message: str
    series: list[CheckSeries]

    def to_json(self) -> dict:
        return {**answer_dict(self), "series": [answer_dict(c) for c in self.series]}


def check(store, warn: float, crit: float, last: int = 3, motif: str | None = None,
          fs: str | None = None) -> BenchCheck:
    """The series' states against `warn` and `crit` (fractions of peak) over their `last` runs."""
    # lazy: numpy via stats.bench: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.stats import bench as sb

    if not 0 < crit < warn <= 1:
        raise UserError(f"need 0 < --crit < --warn <= 1 (fractions of peak), got --warn {warn:g} --crit {crit:g}")
    try:
        rows = summary(store, motif, fs, last, warn)
    except UserError as e:
        return BenchCheck(CHECK_NAMES[3], 3, f"IOWEATHER BENCH UNKNOWN - {e}", [])
    codes = {"OK": 0, "WARNING": 1, "CRITICAL": 2}
    series = [CheckSeries(r.motif, r.direction, r.fs, sb.check_state(r.last_k, last, warn, crit),
                          r.last_fraction_of_peak) for r in rows]
    present = {codes[c.state] for c in series}
    code = next(c for c in CHECK_PRECEDENCE if c in present) if series else 3
    bad = [c for c in series if codes[c.state] == code] if code else []
    name = lambda c: f"{c.motif}/{c.direction}/{c.fs}"  # noqa: E731
    text = ("; ".join(f"{name(c)} last {last} runs below {crit if c.state == 'CRITICAL' else warn:g} of peak"
                      for c in bad) if bad else f"{len(series)} benchmark series within {warn:g} of peak")
    perf = " ".join(f"'{name(c)}'={c.last_fraction_of_peak:.3f};{warn:g};{crit:g};0;1"
                    for c in series if c.last_fraction_of_peak is not None)
    message = f"IOWEATHER BENCH {CHECK_NAMES[code]} - {text}" + (f" | {perf}" if perf else "")
    return BenchCheck(CHECK_NAMES[code], code, message, series)


def gauges(store) -> list[SummaryRow]:
    """The last run's bandwidth and fraction of peak per motif, direction and fs; [] without a bench table."""
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    if not bstore.has_runs(store):
        return []
    return summary(store)


# ----------------------------------------------------------------------------- page

def runs_table(store, motif=None, fs=None, direction=None, columns=None) -> "pd.DataFrame":
    # lazy: numpy via stats.bench: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.stats import bench as sb

    return sb.with_fraction_of_peak(_frame(store, motif, fs, columns, direction))


_PAGE_COLUMNS = ["run_id", "motif", "direction", "fs", "start_ns", "duration_s", "bw_bps"]


@dataclass(frozen=True)
class DurationHistogram:
    """stats.bench.histogram of a series' durations: the bins' edges (seconds, one more than the bins), the
    runs in each bin, and the optimum (the shortest run; None, and no bins, without a finite duration)."""

    edges_s: list[float]
    counts: list[int]
    optimum_s: float | None


@dataclass(frozen=True)
class PeakSeries:
    """A series' fraction of peak over time: per run, oldest first, its start (ISO 8601 UTC, ms), its
    bandwidth / the series' best (None without a bandwidth) and its run id."""

    time: list[str]
    fraction_of_peak: list[float | None]
    run_id: list[str]


@dataclass(frozen=True)
class PageRun:
    """One run of the chosen series on the Benchmarks page (None where unknown)."""

    run_id: str
    start: str
    duration_s: float | None
    bw_bps: float | None
    fraction_of_peak: float | None


@dataclass(frozen=True)
class BenchPage(Answer):
    """The Benchmarks page's answer (/api/bench): `rows` are `bench summary`'s (with `last_k`); for the
    chosen series (`motif`, `direction`, `fs`) the histogram of its durations (seconds, the optimum
    marked), its fraction of peak over time (ISO 8601 UTC ms) and its last 200 runs, newest first; `run`
    is `run_window` of the chosen run (default: the newest), None without runs."""

    rows: list[SummaryRow]
    motif: str
    direction: str
    fs: str
    histogram: DurationHistogram
    series: PeakSeries
    runs: list[PageRun]
    run: RunWindow | None

    def to_json(self) -> dict:
        return {**answer_dict(self), "rows": [r.to_json() for r in self.rows],
                "runs": [answer_dict(r) for r in self.runs]}


def page(store, motif: str | None, direction: str | None, fs: str | None, run_id: str | None) -> BenchPage:
    """The Benchmarks page: the summary, and for one group its histogram, fraction of peak over
    time and recent runs; for one run the servers' rates over its window when telemetry exists."""
    # lazy: numpy: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    import numpy as np

    # lazy: numpy via stats.bench: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.stats import bench as sb

    rows = summary(store)
    chosen = next((r for r in rows if (motif in (None, r.motif) and direction in (None, r.direction)
                                       and fs in (None, r.fs))), None)
    if chosen is None:
        raise UserError(f"no runs of motif {motif!r} {direction or ''} on {fs or 'any file system'}")
    df = runs_table(store, chosen.motif, chosen.fs, chosen.direction, _PAGE_COLUMNS)
    recent = df.tail(200)
    # one call for a series of 10^4 runs (ns_to_iso per run was a third of the page's time); ms, as ns_to_iso
    times = [t + "Z" for t in np.datetime_as_string(df["start_ns"].to_numpy(np.int64).astype("datetime64[ns]"),
                                                     unit="ms").tolist()]
    pick = run_id or (df["run_id"].iloc[-1] if len(df) else None)
    return BenchPage(
        rows=rows, motif=chosen.motif, direction=chosen.direction, fs=chosen.fs,
        histogram=DurationHistogram(**sb.histogram(df["duration_s"].to_numpy(float))),
        series=PeakSeries(times, [_fin(v) for v in df["fraction_of_peak"]], df["run_id"].tolist()),
        runs=[PageRun(r.run_id, ns_to_iso(int(r.start_ns)), _fin(r.duration_s), _fin(r.bw_bps),
                      _fin(r.fraction_of_peak))
              for r in recent.iloc[::-1].itertuples()],
        run=run_window(store, pick) if pick else None)


def _fin(v) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


@dataclass
class WindowResult:
    """One direction of a stored run: bytes, seconds, bytes per second and operations per second."""

    direction: str
    bytes: int | None
    duration_s: float
    bw_bps: float | None
    iops: float | None


@dataclass
class Rates:
    """The servers' read and write rates (bytes per second, summed over targets; None where unknown) at
    each interval (ISO 8601 UTC) around a run."""

    time: list[str]
    read_bytes_bps: list[float | None]
    write_bytes_bps: list[float | None]


@dataclass
class RunWindow:
    """A benchmark run (its window in ISO 8601 UTC, its results) and the servers' rates over that window
    (`rates`, None without telemetry for its file system)."""

    run_id: str
    motif: str
    fs: str
    start: str
    end: str
    results: list[WindowResult]
    rates: Rates | None = None

    def to_json(self) -> dict:
        return {**answer_dict(self), "results": [answer_dict(r) for r in self.results]}


def run_window(store, run_id: str) -> RunWindow:
    """A run and the servers' read/write rates over its window (seed 004 Fig. 4); `rates` is None
    without telemetry for its file system. Only the window's telemetry is read."""
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore
    # lazy: pyarrow via store.job_telemetry, loaded only when this runs
    from ioweather.store import job_telemetry as jt

    run = bstore.get_run(store, run_id)
    if run is None:
        raise UserError(f"no benchmark run {run_id!r}")
    start, end = int(run["start_ns"]), int(run["end_ns"])
    pad = max(60 * 10**9, (end - start) // 2)
    doc = RunWindow(run_id, run["motif"], run["fs"], ns_to_iso(start), ns_to_iso(end),
                    [WindowResult(*(r[k] for k in ("direction", "bytes", "duration_s", "bw_bps", "iops")))
                     for r in run["results"]])
    if run["fs"] not in jt.known_fs(store.parquet_dir):
        return doc
    rows = jt.window_rows(store.parquet_dir, run["fs"], start - pad, end + pad, ["read_bytes", "write_bytes"])
    rows = rows[(rows["time_ns"] >= start - pad) & (rows["time_ns"] < end + pad)]
    if rows.empty:
        return doc
    rows = rows.assign(rate=rows["value"] / rows["interval_s"].where(rows["interval_s"] > 0))
    agg = rows.groupby(["time_ns", "metric"])["rate"].sum().unstack("metric").sort_index()
    doc.rates = Rates([ns_to_iso(int(t)) for t in agg.index],
                      *([_fin(v) for v in agg[m]] if m in agg else [] for m in ("read_bytes", "write_bytes")))
    return doc


def write_report(rows: list[SummaryRow], out: str) -> None:
    """`bench summary --html`: Table 2's layout per file system, written beside and renamed."""
    # lazy: jinja2, rich via views.bench_report: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.views.bench_report import render

    write_atomic(out, render([r.to_json() for r in rows]))


def metric_families(store) -> list:
    """`/metrics` gauges of the last run per motif, direction and fs: bandwidth (bytes/s) and fraction of
    peak. Empty without benchmark runs (the bench tables are never created by a scrape)."""
    # lazy: prometheus_client, loaded only when /metrics is scraped (commands.bench imports this at its top)
    from prometheus_client.core import GaugeMetricFamily

    labels = ["motif", "direction", "fs"]
    bw = GaugeMetricFamily("ioweather_bench_bandwidth_bytes_per_second",
                           "Bandwidth of the last regression benchmark run.", labels=labels)
    frac = GaugeMetricFamily("ioweather_bench_fraction_of_peak",
                             "Last run's bandwidth / the best run of the same motif, direction and fs.", labels=labels)
    try:
        rows = gauges(store)
    except UserError:
        return []
    for r in rows:
        key = [r.motif, r.direction, r.fs]
        if r.last_bps is not None:
            bw.add_metric(key, r.last_bps)
        if r.last_fraction_of_peak is not None:
            frac.add_metric(key, r.last_fraction_of_peak)
    return [bw, frac] if rows else []


def has_runs(store) -> bool:
    """Whether the store holds a benchmark run (without creating the benchmark tables)."""
    # lazy: sqlalchemy via store: commands.bench imports this at its top: kept off `ioweather bench --help` and its usage errors
    from ioweather.store import bench as bstore

    return bstore.has_runs(store)
