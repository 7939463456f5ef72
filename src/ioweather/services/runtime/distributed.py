"""Dask for the commands that spread work over many processes or nodes (`--dask SPEC`).

SPEC is one of
    tcp://HOST:PORT          a running Dask scheduler (started by `dask scheduler`, a SLURMCluster, ...)
    local[:N]                a LocalCluster of N worker processes on this machine (default: the cores here)
    slurm[:key=value,...]    a dask_jobqueue.SLURMCluster: workers are Slurm jobs submitted with sbatch;
                             keys: jobs, cores, memory, processes, queue, account, walltime, interface,
                             log_directory, local_directory, python

The pattern every distributed command follows (measured in benchmarks/bench_dask.py):
items (a log, a partition, a directory) grouped into tasks of about half a second of work
(`per_task="auto"`; big partitions go one per task), a bounded window of items in flight,
results fetched by the client straight from the workers (never through the scheduler),
and one writer — the client — that commits them to the store. Workers never open the
store, so the store needs to be reachable only from where the command runs.

A worker killed in the middle of a task costs a retry: the scheduler re-runs the task on
another worker and the client sees each task's result once. The scattered kwargs (`shared`) can
die with it: Dask's Active Memory Manager keeps one replica of a broadcast, and a key that only
lived on a dead worker cannot be recomputed, so the scheduler forgets every task that needs it
(FutureCancelledError "already forgotten"). Those tasks are not failed items: the kwargs are
scattered again and the tasks submitted again, as often as `allowed-failures` allows a kill.
A task that kills every worker it runs on (a log that crashes the Darshan C library) ends as `KilledWorker` after
`distributed.scheduler.allowed-failures` retries; each of its items is run once more alone
at the end (the tasks that merely shared its worker, and the other items of its batch, end
the same way) and an item that still kills its worker is handed to `on_crash`, as the
local pool does. A worker that cannot import this ioweather, or has another version, stops the run
with one line saying so.
"""

from __future__ import annotations

import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import islice

from ioweather import __version__
from ioweather.errors import UserError

#: Tasks kept in flight per worker thread: enough to hide the scheduler's round trip, few
#: enough that a million items never sit in the scheduler's memory at once.
WINDOW_PER_THREAD = 16
#: per_task="auto" aims at tasks of this much work: the scheduler's few ms per task (5-8 ms
#: with 2 workers on 2 shared cores) become ~1 %, and a task lost with its worker costs little.
TASK_SECONDS = 0.5
#: Most items in one task, and twice this many items in flight per worker thread: the
#: window bounds items (their results wait on the workers until the client takes them).
MAX_PER_TASK = 64
#: Per-item times kept to size the next task: the median of recent ones follows a change of
#: item size without being steered by one huge log.
RECENT_TASKS = 16
CONNECT_TIMEOUT_S = 15
SLURM_KEYS = {"jobs": int, "cores": int, "memory": str, "processes": int, "queue": str, "account": str,
              "walltime": str, "interface": str, "log_directory": str, "local_directory": str, "python": str}
SLURM_DEFAULTS = {"jobs": 1, "cores": 1, "memory": "2GB", "processes": 1, "walltime": "01:00:00"}
# distributed logs tracebacks of a failed sbatch, a lost worker, ... to stderr: the command says it in one line
_QUIET = ("distributed", "dask_jobqueue", "tornado", "asyncio")
#: The workers of a cluster we start do not sample their own stacks: distributed's profiler
#: does so every 10 ms in each worker, CPU taken from the tasks (with 2 workers, the scheduler
#: and the client on 2 cores, every ms counts) for a dashboard nobody looks at during an ingest.
#: A cluster given by address keeps its owner's settings.
NO_PROFILER = {"distributed.worker.profile.enabled": False}  # a dotted key: the nanny merges shallowly
_NO_PROFILER_ENV = "export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False"
#: Set while a LocalCluster we started runs. Such a cluster closes a nanny for good when no worker
#: of its name is registered 15 s after one was removed (distributed.deploy.lost-worker-timeout): a
#: log that kills worker after worker can put that moment between a death and the nanny's restart,
#: and the run then waits forever on no worker. Our nannies restart their workers themselves.
KEEP_NANNIES = {"distributed.deploy.lost-worker-timeout": "3650d"}


class VersionSkew(RuntimeError):
    """A worker runs another ioweather than the client (raised inside the task)."""


def _parse_spec(spec: str) -> tuple[str, dict | str | int]:
    """("address", ADDRESS) | ("local", N) | ("slurm", options). One line for a bad value."""
    spec = spec.strip()
    kind, _, rest = spec.partition(":")
    if kind == "local":
        try:
            n = int(rest) if rest else len(os.sched_getaffinity(0))
        except ValueError:
            n = 0
        if n < 1:
            raise UserError(f"--dask local:N needs a positive number of worker processes, not {rest!r}")
        return "local", n
    if kind == "slurm":
        return "slurm", _slurm_options(rest)
    if "://" not in spec and ":" not in spec:
        raise UserError(f"--dask {spec!r}: expected a scheduler address (tcp://HOST:PORT), local[:N] or "
                        "slurm[:key=value,...]")
    return "address", spec


def _slurm_options(text: str) -> dict:
    opts = dict(SLURM_DEFAULTS)
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in SLURM_KEYS:
            raise UserError(f"--dask slurm: unknown option {part!r} (known: {', '.join(SLURM_KEYS)})")
        try:
            opts[key] = SLURM_KEYS[key](value.strip())
        except ValueError:
            raise UserError(f"--dask slurm: {key} must be a whole number, not {value!r}") from None
    for key in ("jobs", "cores", "processes"):
        if opts[key] < 1:
            raise UserError(f"--dask slurm: {key} must be at least 1")
    return opts


@contextmanager
def connect(spec: str) -> Iterator:
    """A `distributed.Client` for SPEC, closed (and a cluster we started, stopped) at the end."""
    try:
        # lazy: optional, its ImportError is handled here
        import dask
        # lazy: optional, its ImportError is handled here
        from dask.distributed import Client
    except ImportError:
        raise UserError("--dask needs the optional dask extra: pip install 'ioweather[dask]'") from None
    kind, arg = _parse_spec(spec)
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    cluster = None
    with dask.config.set(KEEP_NANNIES if kind == "local" else {}):
        try:
            if kind == "address":
                target = arg
            elif kind == "local":
                # lazy: dask, loaded only when this runs
                from dask.distributed import LocalCluster

                # a free port: None is taken as the default 8787, and a second cluster warns on stderr
                cluster = target = LocalCluster(n_workers=arg, threads_per_worker=1, processes=True,
                                                dashboard_address=":0", config=NO_PROFILER)  # the nannies' config
            else:
                cluster = target = _slurm_cluster(arg)
            try:
                # results come from the workers to us directly: the scheduler only sees small messages
                client = Client(target, timeout=CONNECT_TIMEOUT_S, direct_to_workers=True)
            except Exception as e:  # noqa: BLE001 (OSError, TimeoutError, CommClosedError, ...)
                raise UserError(f"cannot connect to the Dask scheduler at {target}: {_one_line(e)}") from None
            try:
                check_workers(client)
                yield client
            finally:
                client.close()
        finally:
            if cluster is not None:
                cluster.close()


def _slurm_cluster(opts: dict):
    try:
        # lazy: dask-jobqueue is optional (the [dask] extra): a missing one is said in one line
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise UserError("--dask slurm needs dask-jobqueue: pip install 'ioweather[dask]'") from None
    kw = {k: v for k, v in opts.items() if k != "jobs" and k != "python"}
    cluster = SLURMCluster(python=opts.get("python") or sys.executable,
                           scheduler_options={"dashboard_address": ":0"},  # None is merged away: 8787 may be taken
                           job_script_prologue=[_NO_PROFILER_ENV], **kw)
    try:
        _sbatch_test_only(cluster.job_script())
        cluster.scale(jobs=opts["jobs"])
    except BaseException:
        cluster.close()
        raise
    return cluster


def _sbatch_test_only(script: str) -> None:
    """Ask Slurm whether it would take the worker job, so that a refusal is one line now rather
    than workers that never come (dask-jobqueue only logs a failed sbatch)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh", prefix="ioweather-dask-") as f:
        f.write(script)
        f.flush()
        try:
            p = subprocess.run(["sbatch", "--test-only", f.name], capture_output=True, text=True, timeout=60,
                               check=False)
        except FileNotFoundError:
            raise UserError("--dask slurm: sbatch not found (is this a Slurm login node?)") from None
    if p.returncode != 0:
        lines = [ln.removeprefix("sbatch: error: ") for ln in p.stderr.strip().splitlines()]
        raise UserError(f"Slurm refused the Dask worker job: {'; '.join(lines) or f'sbatch exit {p.returncode}'}")


def _version_probe():
    # Built here so that cloudpickle ships it by value: a worker without ioweather can still run it.
    def probe():
        try:
            # lazy: optional, its ImportError is handled here
            import ioweather
        except Exception as e:  # noqa: BLE001 (ImportError, or a broken install raising anything)
            return None, f"{type(e).__name__}: {e}"
        return getattr(ioweather, "__version__", "unknown"), None
    return probe


def check_workers(client) -> None:
    """The workers connected now run this ioweather; later workers are checked by each task."""
    try:
        answers = client.run(_version_probe())
    except Exception as e:  # noqa: BLE001
        raise UserError(f"cannot ask the Dask workers their ioweather version: {_one_line(e)}") from None
    for worker, (version, error) in sorted(answers.items()):
        if error:
            raise UserError(f"Dask worker {worker} cannot import ioweather ({error}): install ioweather "
                            f"{__version__} in the workers' Python")
        if version != __version__:
            raise UserError(f"Dask worker {worker} runs ioweather {version}, this is {__version__} "
                            "(version skew): install the same version on the workers")


#: (module, name) of the functions this worker process has run: the first call pays the
#: imports (darshan, pyarrow: seconds on a loaded machine), which say nothing of the items.
_CALLED: set = set()


def _task(fn: Callable, items: list, version: str, kwargs: dict) -> tuple[list, float, int]:
    """([fn(item) for each item], seconds of work, items those seconds cover)."""
    if __version__ != version:
        raise VersionSkew(f"ioweather {__version__} on this worker, {version} on the client")
    key = (fn.__module__, fn.__qualname__)
    out, spent, timed = [], 0.0, 0
    for item in items:
        t = time.perf_counter()
        out.append(fn(item, **kwargs))
        if key in _CALLED:
            spent += time.perf_counter() - t
            timed += 1
        else:
            _CALLED.add(key)
    return out, spent, timed


def batch_size(per_item_s: float | None, cap: int = MAX_PER_TASK) -> int:
    """Items for a task of ~TASK_SECONDS when an item takes `per_item_s` (None: not measured yet, 1)."""
    if per_item_s is None:
        return 1
    if per_item_s <= 0:
        return cap
    return max(1, min(cap, int(TASK_SECONDS / per_item_s)))


class _Sizer:
    """How many items the next task carries: fixed, or ("auto") from the work measured in recent tasks."""

    def __init__(self, per_task: int | str, cap: int = MAX_PER_TASK):
        if per_task != "auto" and (not isinstance(per_task, int) or per_task < 1):
            raise ValueError(f"per_task must be 'auto' or a positive int, not {per_task!r}")
        self.fixed = None if per_task == "auto" else per_task
        self.cap = cap
        self.recent: deque = deque(maxlen=RECENT_TASKS)

    @property
    def measured(self) -> bool:
        return self.fixed is not None or bool(self.recent)

    def record(self, spent: float, timed: int) -> None:
        if timed:
            self.recent.append(spent / timed)

    def next(self) -> int:
        if self.fixed is not None:
            return self.fixed
        return batch_size(statistics.median(self.recent) if self.recent else None, self.cap)


def map_unordered(client, fn: Callable, items: Iterable, on_result: Callable[[object, object], None],
                  on_crash: Callable[[object, str], None], *, kwargs: dict | None = None,
                  shared: Iterable[str] = (), window: int | None = None, per_task: int | str = 1,
                  crash_reason: str = "the task killed every worker it ran on") -> None:
    """Apply `fn(item, **kwargs)` to every item on the cluster; `on_result(item, result)` as each ends.

    `fn` must be importable on the workers (a module-level function of ioweather). Results come
    back in completion order, each exactly once. The kwargs named in `shared` are sent to every
    worker once (scattered) instead of with each task. `per_task` items go in one task; "auto":
    one at first, then as many as take ~TASK_SECONDS by the time measured on the workers.
    `window`: items in flight at most."""
    # lazy: dask, loaded only when this runs
    import dask
    from dask.distributed import as_completed

    scattered = _Scattered(client, kwargs or {}, shared)
    most_losses = dask.config.get("distributed.scheduler.allowed-failures", 3)
    sizer = _Sizer(per_task)
    threads = max(1, sum(client.nthreads().values()))
    max_tasks = max(64, WINDOW_PER_THREAD * threads)
    if window is None:
        window = max(max_tasks, 2 * (sizer.fixed or MAX_PER_TASK) * threads)
    # at least two tasks per thread fit the window: one running, the next already on the worker
    sizer.cap = max(1, min(MAX_PER_TASK, window // (2 * threads)))
    todo = iter(items)
    # task key -> (its batch, times its tasks were forgotten with the scattered kwargs, those it was sent)
    inflight: dict = {}

    def run(batch: list, losses: int = 0):
        kw = scattered.kwargs()
        fut = client.submit(_task, fn, batch, __version__, kw, pure=False)
        inflight[fut.key] = batch, losses, kw
        return fut

    def submit() -> list:
        # until some work is measured, two one-item tasks per thread, not a window full of them
        most = max_tasks if sizer.measured else 2 * threads
        new = []
        while len(inflight) < most:
            size = min(sizer.next(), window)
            # a task smaller than asked only because the window is nearly full would keep that size
            if sum(len(b) for b, _, _ in inflight.values()) + size > window:
                break
            batch = list(islice(todo, size))
            if not batch:
                break
            new.append(run(batch))
        return new

    # A task that only shared a worker with the one that kills it can reach allowed-failures too
    # (each death counts against every task on that worker), as can the other items of a killer's
    # batch: such items are run again, alone, once the rest is done, and only one that still kills
    # its worker is handed to on_crash.
    # A batch forgotten with the scattered kwargs more often than the scheduler lets a task be killed
    # may be what kills the workers holding them (one worker: every death): it is a suspect too.
    suspects = []
    pending = as_completed(submit())
    for fut in pending:
        batch, losses, kw = inflight.pop(fut.key)
        ended = _deliver(fut, batch, on_result, sizer, kw)
        if ended == _LOST and losses < most_losses:
            pending.add(run(batch, losses + 1))
        elif ended != _DONE:
            suspects += batch
        pending.update(submit())
    for item in suspects:
        for _ in range(most_losses + 1):
            fut = run([item])
            ended = _deliver(fut, [item], on_result, sizer, inflight.pop(fut.key)[2])
            if ended != _LOST:
                break
        if ended != _DONE:
            on_crash(item, crash_reason)


class _Scattered:
    """The kwargs, those named in `shared` scattered to the workers: once, and again when the
    cluster lost them (the workers holding them died)."""

    def __init__(self, client, kwargs: dict, shared: Iterable[str]):
        self.client = client
        self.values = kwargs
        self.shared = frozenset(shared) & kwargs.keys()
        self.sent: dict = {}

    def kwargs(self) -> dict:
        if not self.sent or _lost(self.sent):
            # shipped to each worker once, not with every task (a large archive knows millions of hashes)
            self.sent = {k: self.client.scatter([self.values[k]], broadcast=True, hash=False)[0]
                         for k in self.shared}
        return {**self.values, **self.sent}


def _lost(kwargs: dict) -> bool:
    """Whether a scattered value among the kwargs a task was sent is gone from the cluster."""
    # lazy: distributed is optional (the [dask] extra), loaded by --dask only
    from distributed import Future

    return any(isinstance(v, Future) and v.status != "finished" for v in kwargs.values())


_DONE, _KILLED, _LOST = "done", "killed", "lost"


def _deliver(fut, batch: list, on_result: Callable[[object, object], None], sizer: _Sizer,
             kwargs: dict) -> str:
    """on_result(item, result) for each item of the task's batch and _DONE; _KILLED when the task
    ended as KilledWorker, _LOST when it was forgotten with the scattered `kwargs` it was sent."""
    # lazy: distributed is optional (the [dask] extra), loaded by --dask only
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    try:
        results, spent, timed = fut.result()
    except KilledWorker:
        return _KILLED
    except VersionSkew as e:
        raise UserError(f"a Dask worker runs another ioweather ({e}): install the same version on the "
                        "workers") from None
    except ImportError as e:
        raise UserError(f"a Dask worker cannot import ioweather ({_one_line(e)}): install ioweather "
                        f"{__version__} in the workers' Python") from None
    except Exception as e:  # noqa: BLE001 (fn never raises for bad input: this is the cluster's)
        # the scheduler reports the lost kwargs before the tasks it forgot with them: seen here already
        if isinstance(e, FutureCancelledError) and _lost(kwargs):
            return _LOST
        more = f" (or one of the {len(batch) - 1} other items of its task)" if len(batch) > 1 else ""
        raise UserError(f"a Dask task failed on {batch[0]}{more}: {type(e).__name__}: {_one_line(e)}") from None
    finally:
        fut.release()
    sizer.record(spent, timed)
    for item, res in zip(batch, results, strict=True):
        on_result(item, res)
    return _DONE


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) < 300 else text[:297] + "..."
