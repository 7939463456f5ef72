"""The multi-process soak (tests/test_soak.py): every writer and reader of one store at once, with
seeded kill -9s of the writers, then an accounting that another process can check.

Writers are daemons (watch, collect: restarted after a kill) or loops of one-shot
commands (jobs ingest, fsstats walk --label, import csv: the next round starts after a pause).
Readers are loops of CLI commands, page requests, and `python soak.py snapshot URL` (this file run
as a script: the tables and per-target probe counts as another process sees them, with the plain
sqlite3/psycopg drivers, so the check does not go through the code under test).

What "committed" means per writer, and so what must still be there at the end:
- watch: prints nothing per flush, so the proxy is what readers saw: every probe sample any reader
  counted at any time, and every table any reader listed, must exist at the end;
- one-shot writers: exit 0 means committed (a label, a CSV import, the ingested logs).

No `probe run` daemon beside `watch`: a second process that keeps a connection open all the time
holds a shared lock on the database file, and that hides the WAL-erasure bug (a closing process
deletes the WAL only when it can lock the file exclusively), as it hid it from users who ran both.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

PAGES = ("status", "timeline", "history", "jobs", "metrics")


@dataclass
class Spec:
    name: str
    argv: list[str] | Callable[[], list[str]]   # a callable gives each round its own arguments
    daemon: bool = False      # restarted after a kill, SIGTERMed at the end
    writer: bool = True       # may be killed
    pause_s: tuple[float, float] = (0.5, 2.0)   # loops: pause between rounds
    timeout_s: float = 120.0  # loops: one round's deadline
    ready: str | None = None  # daemons: the output that says its signal handlers are in place


@dataclass
class Round:
    """One finished process: how it ended and what it said."""
    spec: str
    argv: list[str]
    rc: int
    stdout: str
    stderr: str
    killed: bool
    started: float
    ended: float
    ready_at: float | None


@dataclass
class Running:
    spec: Spec
    argv: list[str]
    proc: subprocess.Popen
    out: Path
    err: Path
    started: float
    killed: bool = False
    ready_at: float | None = None  # daemons: when its `ready` output appeared

    def is_ready(self) -> bool:
        if self.ready_at is None and (not self.spec.ready or any(
                self.spec.ready in f.read_text(errors="replace") for f in (self.out, self.err))):
            self.ready_at = time.monotonic()
        return self.ready_at is not None


@dataclass
class Soak:
    """Runs specs for `seconds`, killing a random writer every `kill_every_s` (uniform range)."""
    specs: list[Spec]
    workdir: Path
    env: dict
    seconds: float
    seed: int
    kill_every_s: tuple[float, float] = (3.0, 9.0)
    min_up_s: float = 20.0
    restart_after_s: tuple[float, float] = (0.3, 2.0)
    rounds: list[Round] = field(default_factory=list)
    kills: list[tuple[float, str]] = field(default_factory=list)
    http: list[tuple[str, int | str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self.running: dict[str, Running] = {}
        self.next_start: dict[str, float] = {s.name: 0.0 for s in self.specs}
        self._n = 0
        self.stopping = False

    # -- processes -------------------------------------------------------------------------------
    def _start(self, spec: Spec, now: float) -> None:
        self._n += 1
        out, err = (self.workdir / f"{self._n:05d}-{spec.name}.{s}" for s in ("out", "err"))
        argv = spec.argv() if callable(spec.argv) else spec.argv
        with open(out, "wb") as o, open(err, "wb") as e:
            proc = subprocess.Popen([sys.executable, *argv], stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                                    env=self.env, start_new_session=True)
        self.running[spec.name] = Running(spec, argv, proc, out, err, now)

    def _finish(self, r: Running, now: float) -> Round:
        rnd = Round(r.spec.name, r.argv, r.proc.returncode, r.out.read_text(errors="replace"),
                    r.err.read_text(errors="replace"), r.killed, r.started, now, r.ready_at)
        self.rounds.append(rnd)
        del self.running[r.spec.name]
        if not r.killed and "Traceback" in rnd.stderr:
            self.problems.append(f"{rnd.spec}: traceback (rc {rnd.rc}): {rnd.stderr[-2000:]}")
        if r.spec.daemon and not r.killed and not self.stopping:
            self.problems.append(f"{rnd.spec}: daemon ended by itself (rc {rnd.rc}): {rnd.stderr[-1000:]}")
        lo, hi = self.restart_after_s if r.killed else r.spec.pause_s
        self.next_start[r.spec.name] = now + self.rng.uniform(lo, hi)
        return rnd

    @staticmethod
    def _signal(r: Running, sig: int) -> None:
        try:
            os.killpg(r.proc.pid, sig)  # the group: a writer's worker processes die with it
        except ProcessLookupError:
            pass

    def _kill9(self, r: Running, now: float) -> None:
        r.killed = True
        self._signal(r, signal.SIGKILL)
        self.kills.append((now, r.spec.name))

    # -- page requests ---------------------------------------------------------------------------
    def _poll_pages(self, base: str, stop: threading.Event) -> None:
        while not stop.is_set():
            for page in PAGES:
                try:
                    with urllib.request.urlopen(base + page, timeout=30) as resp:
                        resp.read()
                        self.http.append((page, resp.status))
                except urllib.error.HTTPError as e:
                    self.http.append((page, e.code))
                    if e.code >= 500 and not any(p.startswith(f"GET /{page}:") for p in self.problems):
                        self.problems.append(f"GET /{page}: HTTP {e.code} (first of them; see watch's stderr)")
                except (OSError, urllib.error.URLError) as e:  # watch is down (killed): not a failure
                    self.http.append((page, type(e).__name__))
            stop.wait(0.5)

    # -- the run ---------------------------------------------------------------------------------
    def run(self, page_base: str | None = None) -> None:
        """Run until `seconds` have passed, then stop the daemons with SIGTERM and let loops end."""
        t0 = time.monotonic()
        end = t0 + self.seconds
        next_kill = t0 + self.rng.uniform(*self.kill_every_s)
        stop = threading.Event()
        pages = threading.Thread(target=self._poll_pages, args=(page_base, stop), daemon=True) if page_base else None
        try:
            if pages:
                pages.start()
            while (now := time.monotonic()) < end:
                for r in list(self.running.values()):
                    if r.proc.poll() is not None:
                        self._finish(r, now)
                    elif not r.spec.daemon and now - r.started > r.spec.timeout_s:
                        self.problems.append(f"{r.spec.name}: no end within {r.spec.timeout_s:g} s (killed)")
                        self._kill9(r, now)
                for spec in self.specs:
                    if spec.name not in self.running and now >= self.next_start[spec.name]:
                        self._start(spec, now)
                if now >= next_kill:
                    # a writer at work: a daemon still starting has nothing to lose yet
                    # and up long enough for other processes to read what it wrote (min_up_s)
                    writers = sorted(n for n, r in self.running.items()
                                     if r.spec.writer and not r.killed and r.is_ready()
                                     and (not r.spec.daemon or now - r.ready_at >= self.min_up_s))
                    if writers:
                        self._kill9(self.running[self.rng.choice(writers)], now)
                    next_kill = now + self.rng.uniform(*self.kill_every_s)
                time.sleep(0.1)
        finally:
            stop.set()
            self._stop_all()
            if pages:
                pages.join(timeout=35)

    def settle(self, timeout_s: float = 180.0) -> None:
        """One more clean round of every one-shot writer, as an operator restarts what was killed."""
        for spec in self.specs:
            if spec.writer and not spec.daemon:
                self._start(spec, time.monotonic())
                r = self.running[spec.name]
                try:
                    r.proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    self.problems.append(f"{spec.name}: the final round did not end within {timeout_s:g} s")
                    self._kill9(r, time.monotonic())
                    r.proc.wait(timeout=10)
                rnd = self._finish(r, time.monotonic())
                if rnd.rc != 0:
                    self.problems.append(f"{spec.name}: the final round failed (rc {rnd.rc}): {rnd.stderr[-1000:]}")

    def _stop_all(self, grace_s: float = 60.0) -> None:
        """Daemons get SIGTERM (a clean stop stores their last samples); loops may finish their round."""
        self.stopping = True
        # A daemon restarted a moment ago may still be starting, before its SIGTERM handler exists.
        deadline = time.monotonic() + grace_s
        for r in self.running.values():
            while time.monotonic() < deadline and r.proc.poll() is None and not r.is_ready():
                time.sleep(0.2)
        time.sleep(1.0)
        for r in self.running.values():
            if r.spec.daemon:
                self._signal(r, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while self.running and time.monotonic() < deadline:
            for r in list(self.running.values()):
                if r.proc.poll() is not None:
                    rnd = self._finish(r, time.monotonic())
                    if r.spec.daemon and rnd.rc != 0:
                        self.problems.append(f"{rnd.spec}: clean stop failed (rc {rnd.rc}): {rnd.stderr[-1000:]}")
            time.sleep(0.1)
        for r in list(self.running.values()):  # bounded: whatever is left is killed and reported
            self.problems.append(f"{r.spec.name}: still running {grace_s:g} s after the stop (killed)")
            self._kill9(r, time.monotonic())
            r.proc.wait(timeout=10)
            self._finish(r, time.monotonic())

    # -- what the rounds said --------------------------------------------------------------------
    def up(self, name: str) -> list[tuple[float, float]]:
        """(ready, ended) of each life of daemon `name`."""
        return [(r.ready_at, r.ended) for r in self.rounds if r.spec == name and r.ready_at is not None]

    def finished(self, name: str, ok_only: bool = True) -> list[Round]:
        return [r for r in self.rounds if r.spec == name and (not ok_only or (r.rc == 0 and not r.killed))]


# -- the independent view: tables and probe counts through the plain drivers ----------------------

def snapshot(url: str) -> dict:
    """{"tables": [...], "probe": {target: rows}} as this process sees the store now."""
    if url.startswith("sqlite:///"):
        import sqlite3

        path = url[len("sqlite:///"):]
        if not os.path.exists(path):  # not created yet; connecting would create it
            return {"tables": [], "probe": {}, "counts": {}}
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=60)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    else:
        import psycopg

        conn = psycopg.connect(url, connect_timeout=10)
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    probe = {}
    if {"probe_runs", "probe_samples"} <= set(tables):
        probe = dict(conn.execute("SELECT r.target, COUNT(*) FROM probe_samples s JOIN probe_runs r "
                                  "ON r.id = s.run_id GROUP BY r.target").fetchall())
    counts = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables}
    conn.close()
    return {"tables": sorted(tables), "probe": probe, "counts": counts}


def integrity_check(db: Path) -> str:
    """PRAGMA integrity_check in a fresh process, after every writer has stopped."""
    code = ("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "print('; '.join(r[0] for r in c.execute('PRAGMA integrity_check')))")
    p = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=120)
    return p.stdout.strip() or p.stderr.strip()


def fresh_snapshot(url: str) -> dict:
    p = subprocess.run([sys.executable, __file__, "snapshot", url], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"snapshot failed: {p.stderr}")
    return json.loads(p.stdout)


if __name__ == "__main__":
    if sys.argv[1:2] == ["snapshot"]:
        print(json.dumps(snapshot(sys.argv[2])))
