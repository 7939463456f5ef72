"""N real `ioweather probe run` processes writing one PostgreSQL store at 1 Hz, the dashboard read meanwhile.

Used by tests/test_many_probes_pg.py (a short run, exact counts) and benchmarks/bench_many_probes.py
(the capacity of one PostgreSQL on this machine). Each probe stands for a client host: its own
directory and `--target clientNNN` label (the run's host column is this machine's name: the probes
run here; network namespaces would cut them off PostgreSQL on 127.0.0.1, so they are not used).
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from ports import free_port

STOPPED = re.compile(r"run (\d+): stopped after (\d+) periods, (\d+) samples stored")
OPS = 6
#: What a probe says on stderr when something went wrong (routine log lines are wrapped to the terminal).
PROBLEM = re.compile(r"lost|dropped|not stored|failed|error|cannot|Traceback", re.IGNORECASE)


@dataclass
class Outcome:
    n: int
    duration_s: float
    runs: dict = field(default_factory=dict)        # run_id -> {"periods", "stored_said"}
    stored: dict = field(default_factory=dict)      # run_id -> {op: rows} counted in PostgreSQL
    max_gap_s: dict = field(default_factory=dict)   # run_id -> largest start-to-start gap of md_create
    missed: int = 0                                 # periods the probes reported missed
    problems: list = field(default_factory=list)    # any stderr line that is not a routine log line
    pages: list = field(default_factory=list)       # (status, seconds) of dashboard reads during the run
    pg_cpu_s: float = 0.0                           # CPU of PostgreSQL's processes during the run
    probe_cpu_s: float = 0.0                        # CPU of the probe process(es), user + system
    exit_codes: list = field(default_factory=list)


def _env(url: str, home: Path) -> dict:
    return {**os.environ, "IOWEATHER_DB": url, "IOWEATHER_HOME": str(home)}


def _postgres_cpu_s() -> float:
    """utime + stime of every process named postgres (the server and its backends)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
        except OSError:
            continue
        if head.split("(", 1)[1] in ("postgres",) or head.split("(", 1)[1].startswith("postgres"):
            parts = rest.split()
            total += int(parts[11]) + int(parts[12])
    return total / tick


def _read_pages(port: int, stop: threading.Event, out: list) -> None:
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
                r.read()
                out.append((r.status, time.monotonic() - t0))
        except Exception as e:  # noqa: BLE001 (recorded: the test asserts every read succeeded)
            out.append((getattr(e, "code", str(e)), time.monotonic() - t0))
        stop.wait(1.0)


def run(url: str, n: int, duration_s: int, root: Path, *, dashboard: bool = True, one_process: bool = False) -> Outcome:
    root.mkdir(parents=True, exist_ok=True)
    home = root / "home"
    env = _env(url, home)
    py = [sys.executable, "-m", "ioweather"]
    for i in range(n):
        subprocess.run([*py, "probe", "init", str(root / f"client{i:03d}"), "--file-size", "8MiB", "--pool", "20"],
                       env=env, check=True, capture_output=True, timeout=120)
    server = stop = reader = None
    out = Outcome(n=n, duration_s=duration_s)
    if dashboard:
        port = free_port()
        server = subprocess.Popen([*py, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        _wait_http(port)
        stop = threading.Event()
        reader = threading.Thread(target=_read_pages, args=(port, stop, out.pages))
        reader.start()
    cpu0 = _postgres_cpu_s()
    env = {**env, "COLUMNS": "250"}  # one log line per line
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)  # the probes' CPU: children waited for below
    if one_process:  # issue 17 item 6: one `probe run` with N directories, each its own target
        args = [a for i in range(n) for a in (str(root / f"client{i:03d}"),)] + \
            [a for i in range(n) for a in ("--target", f"client{i:03d}")]
        probes = [subprocess.Popen([*py, "probe", "run", *args, "--duration", f"{duration_s}s"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)]
    else:
        probes = [subprocess.Popen([*py, "probe", "run", str(root / f"client{i:03d}"), "--target", f"client{i:03d}",
                                    "--duration", f"{duration_s}s"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True) for i in range(n)]
    try:
        for p in probes:
            _, err = p.communicate(timeout=duration_s + 120)
            out.exit_codes.append(p.returncode)
            for line in err.splitlines():
                m = STOPPED.search(line)
                if m:
                    out.runs[int(m[1])] = {"periods": int(m[2]), "stored_said": int(m[3])}
                    continue
                missed = re.search(r"(\d+) missed", line)
                if missed:
                    out.missed = max(out.missed, int(missed[1]))
                if PROBLEM.search(line):
                    out.problems.append(line)
    finally:
        out.pg_cpu_s = _postgres_cpu_s() - cpu0
        for p in probes:
            if p.poll() is None:
                p.kill()
                p.wait()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.probe_cpu_s = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
        if server is not None:
            stop.set()
            reader.join()
            server.terminate()
            server.wait(timeout=30)
    _count(url, out)
    return out


def _wait_http(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                return
        except Exception:  # noqa: BLE001 (not up yet)
            time.sleep(0.3)
    raise TimeoutError(f"the dashboard did not answer on port {port} within {timeout:.0f} s")


def _count(url: str, out: Outcome) -> None:
    """Rows per run and op, and the largest gap between periods, counted by SQL without ioweather."""
    with psycopg.connect(url) as conn:
        for run_id, op, rows in conn.execute("SELECT run_id, op, count(*) FROM probe_samples GROUP BY run_id, op"):
            out.stored.setdefault(run_id, {})[op] = rows
        for run_id, gap in conn.execute(
                "SELECT run_id, max(d) FROM (SELECT run_id, start_ns - lag(start_ns) OVER "
                "(PARTITION BY run_id ORDER BY start_ns) AS d FROM probe_samples WHERE op = 'md_create') g "
                "GROUP BY run_id"):
            out.max_gap_s[run_id] = (gap or 0) / 1e9


def write_cost(url: str, home: Path, batches: int = 200, rows_per_batch: int = 30) -> dict:
    """Seconds per `insert_samples` call of one probe's flush (30 rows: 6 ops x 5 s), and per sample."""
    from ioweather.config import Settings
    from ioweather.store import open_store
    from ioweather.store import probe as probe_store

    store = open_store(Settings.resolve(home=home, db=url))
    info = probe_store.RunInfo(target="cost", directory="/cost", interval_s=1.0, block_bytes=1 << 20,
                               file_bytes=1 << 23, pool_files=20, small_bytes=4096, direct=False, fsync=False,
                               seed=1, timeout_s=60.0, file_exceeds_memory=False, host="cost")
    run_id = probe_store.start_run(store, info)
    t_ns = time.time_ns()
    ops = ("data_write", "data_read", "md_create", "md_stat", "md_read", "md_delete")
    t0 = time.perf_counter()
    for b in range(batches):
        rows = [(run_id, ops[i % 6], t_ns + (b * rows_per_batch + i) * 1000, 1000, 0, "ok", 0)
                for i in range(rows_per_batch)]
        probe_store.insert_samples(store, rows)
    elapsed = time.perf_counter() - t0
    return {"batch_s": elapsed / batches, "sample_s": elapsed / (batches * rows_per_batch)}


def hang_one(fifo: Path, directory: Path) -> None:
    """In this process, only the probe of `directory` blocks in md_read, in a real open(2) of `fifo`
    (tests/probe_hang.py), as behind a stuck mount; the probes of other directories are untouched."""
    import ioweather.sources.probe as probe_source
    from probe_hang import _BlockingCore

    real_init, stuck = probe_source.Probe.__init__, directory.resolve()

    def init(self, path, *args, **kwargs):
        real_init(self, path, *args, **kwargs)
        if Path(path).resolve() == stuck:
            self.core = _BlockingCore(self.core, fifo)

    probe_source.Probe.__init__ = init


if __name__ == "__main__":  # python tests/many_probes.py FIFO DIRECTORY ioweather-arguments...: DIRECTORY hangs
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    hang_one(Path(sys.argv[1]), Path(sys.argv[2]))
    from ioweather.cli import main

    sys.argv = ["ioweather", *sys.argv[3:]]
    main()
