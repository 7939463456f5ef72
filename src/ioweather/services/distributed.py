"""Dask for the commands that spread work over many processes or nodes (`--dask SPEC`).

SPEC is one of
    tcp://HOST:PORT          a running Dask scheduler (started by `dask scheduler`, a SLURMCluster, ...)
    local[:N]                a LocalCluster of N worker processes on this machine (default: the cores here)
    slurm[:key=value,...]    a dask_jobqueue.SLURMCluster: workers are Slurm jobs submitted with sbatch;
                             keys: jobs, cores, memory, processes, queue, account, walltime, interface,
                             log_directory, local_directory, python

The pattern every distributed command follows (measured in benchmarks/bench_dask.py):
one small task per item (a log, a partition, a directory), a bounded window of tasks in
flight, results fetched by the client straight from the workers (never through the
scheduler), and one writer — the client — that commits them to the store. Workers never
open the store, so the store needs to be reachable only from where the command runs.

A worker killed in the middle of a task costs a retry: the scheduler re-runs the task on
another worker and the client sees each task's result once. A task that kills every worker
it runs on (a log that crashes the Darshan C library) ends as `KilledWorker` after
`distributed.scheduler.allowed-failures` retries; it is run once more alone at the end (the
tasks that merely shared its worker end the same way) and, if it still kills its worker,
handed to `on_crash`, as the local pool does. A worker that cannot import this ioweather, or has another version, stops the run
with one line saying so.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from ioweather.errors import UserError

#: Tasks kept in flight per worker thread: enough to hide the scheduler's round trip, few
#: enough that a million items never sit in the scheduler's memory at once.
WINDOW_PER_THREAD = 16
CONNECT_TIMEOUT_S = 15
SLURM_KEYS = {"jobs": int, "cores": int, "memory": str, "processes": int, "queue": str, "account": str,
              "walltime": str, "interface": str, "log_directory": str, "local_directory": str, "python": str}
SLURM_DEFAULTS = {"jobs": 1, "cores": 1, "memory": "2GB", "processes": 1, "walltime": "01:00:00"}
# distributed logs tracebacks of a failed sbatch, a lost worker, ... to stderr: the command says it in one line
_QUIET = ("distributed", "dask_jobqueue", "tornado", "asyncio")


class VersionSkew(RuntimeError):
    """A worker runs another ioweather than the client (raised inside the task)."""


def parse_spec(spec: str) -> tuple[str, dict | str | int]:
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
        from dask.distributed import Client
    except ImportError:
        raise UserError("--dask needs the optional dask extra: pip install 'ioweather[dask]'") from None
    kind, arg = parse_spec(spec)
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    cluster = None
    try:
        if kind == "address":
            target = arg
        elif kind == "local":
            from dask.distributed import LocalCluster

            # a free port: None is taken as the default 8787, and a second cluster warns on stderr
            cluster = target = LocalCluster(n_workers=arg, threads_per_worker=1, processes=True,
                                            dashboard_address=":0")
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
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise UserError("--dask slurm needs dask-jobqueue: pip install 'ioweather[dask]'") from None
    kw = {k: v for k, v in opts.items() if k != "jobs" and k != "python"}
    cluster = SLURMCluster(python=opts.get("python") or sys.executable,
                           scheduler_options={"dashboard_address": ":0"}, **kw)  # None is merged away: 8787 may be taken
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
            import ioweather
        except Exception as e:  # noqa: BLE001 (ImportError, or a broken install raising anything)
            return None, f"{type(e).__name__}: {e}"
        return getattr(ioweather, "__version__", "unknown"), None
    return probe


def check_workers(client) -> None:
    """The workers connected now run this ioweather; later workers are checked by each task."""
    from ioweather import __version__

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


def _task(fn: Callable, item, version: str, kwargs: dict):
    from ioweather import __version__

    if __version__ != version:
        raise VersionSkew(f"ioweather {__version__} on this worker, {version} on the client")
    return fn(item, **kwargs)


def map_unordered(client, fn: Callable, items: Iterable, on_result: Callable[[object, object], None],
                  on_crash: Callable[[object, str], None], *, kwargs: dict | None = None,
                  shared: Iterable[str] = (), window: int | None = None,
                  crash_reason: str = "the task killed every worker it ran on") -> None:
    """Apply `fn(item, **kwargs)` to every item on the cluster; `on_result(item, result)` as each ends.

    `fn` must be importable on the workers (a module-level function of ioweather). Results come
    back in completion order, each exactly once. The kwargs named in `shared` are sent to every
    worker once (scattered) instead of with each task."""
    from dask.distributed import as_completed

    from ioweather import __version__

    # shipped to each worker once, not with every task (a large archive knows millions of hashes)
    kwargs = {k: client.scatter([v], broadcast=True, hash=False)[0] if k in shared else v
              for k, v in (kwargs or {}).items()}
    if window is None:
        window = max(64, WINDOW_PER_THREAD * max(1, sum(client.nthreads().values())))
    todo = iter(items)
    inflight: dict = {}

    def submit(n: int) -> list:
        new = []
        for item in todo:
            fut = client.submit(_task, fn, item, __version__, kwargs, pure=False)
            inflight[fut.key] = item
            new.append(fut)
            if len(new) >= n:
                break
        return new

    # A task that only shared a worker with the one that kills it can reach allowed-failures too
    # (each death counts against every task on that worker): such tasks are run again, alone,
    # once the rest is done, and only one that still kills its worker is handed to on_crash.
    suspects = []
    pending = as_completed(submit(window))
    for fut in pending:
        item = inflight.pop(fut.key)
        if not _deliver(fut, item, on_result):
            suspects.append(item)
        pending.update(submit(1))
    for item in suspects:
        if not _deliver(client.submit(_task, fn, item, __version__, kwargs, pure=False), item, on_result):
            on_crash(item, crash_reason)


def _deliver(fut, item, on_result: Callable[[object, object], None]) -> bool:
    """on_result(item, result) and True; False when the task ended as KilledWorker."""
    from distributed import KilledWorker

    from ioweather import __version__

    try:
        res = fut.result()
    except KilledWorker:
        return False
    except VersionSkew as e:
        raise UserError(f"a Dask worker runs another ioweather ({e}): install the same version on the "
                        "workers") from None
    except ImportError as e:
        raise UserError(f"a Dask worker cannot import ioweather ({_one_line(e)}): install ioweather "
                        f"{__version__} in the workers' Python") from None
    except Exception as e:  # noqa: BLE001 (fn never raises for bad input: this is the cluster's)
        raise UserError(f"a Dask task failed on {item}: {type(e).__name__}: {_one_line(e)}") from None
    finally:
        fut.release()
    on_result(item, res)
    return True


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) < 300 else text[:297] + "..."
