"""ioweather.signals, the one signal helper of every daemon and long command: real signals sent to
real processes, each wait a poll with a deadline."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from ioweather import signals

SRC = Path(__file__).resolve().parents[1] / "src"
DEADLINE_S = 20.0


_children: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_child_outlives_its_test():
    """A child that ignores the signal under test loops forever: a failed assertion left one running for hours."""
    yield
    while _children:
        proc = _children.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _start(code: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    _children.append(proc)
    proc.pending = b""
    return proc


def _line(proc: subprocess.Popen) -> str:
    """The next line `proc` prints, within the deadline (read from the descriptor: a buffered reader
    would hold a second line that select() then never sees)."""
    deadline = time.monotonic() + DEADLINE_S
    while b"\n" not in proc.pending:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no line from the child within {DEADLINE_S} s"
        block = os.read(proc.stdout.fileno(), 4096)
        assert block, f"the child ended: {proc.stderr.read()}"
        proc.pending += block
    line, proc.pending = proc.pending.split(b"\n", 1)
    return line.decode().strip()


def _gone(pid: int) -> bool:
    """Whether `pid` ended (an unreaped zombie counts: it no longer runs)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_sets_the_event_and_the_old_handlers_come_back(sig):
    proc = _start("""
        import signal, threading
        from ioweather import signals
        stop = threading.Event()
        with signals.handled(signals.set_event(stop)):
            print("ready", flush=True)
            stop.wait()  # the handler's set() reaches a wait() in progress on the same thread
            print("stopped", flush=True)
        print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
              signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
    """)
    assert _line(proc) == "ready"
    proc.send_signal(sig)
    assert _line(proc) == "stopped"
    assert _line(proc) == "True True"
    assert proc.wait(DEADLINE_S) == 0, proc.stderr.read()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_interrupting_unwinds_like_ctrl_c_and_says_a_signal_came(sig):
    """Cleanup runs; after the block the same signal has its old effect again (SIGTERM kills; an
    uncaught KeyboardInterrupt ends Python by SIGINT)."""
    proc = _start("""
        import time
        from ioweather import signals
        try:
            with signals.interrupting() as came:
                print("ready", flush=True)
                while True:
                    time.sleep(0.01)
        except KeyboardInterrupt:
            print("cleanup", came.is_set(), flush=True)
        print("outside", flush=True)
        while True:
            time.sleep(0.01)
    """)
    assert _line(proc) == "ready"
    proc.send_signal(sig)
    assert _line(proc) == "cleanup True"
    assert _line(proc) == "outside"
    proc.send_signal(sig)
    assert proc.wait(DEADLINE_S) == -sig


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_inside_an_exec_of_source_text_exits_with_the_code_asked(tmp_path, sig):
    """The interrupt lands in code that exec() runs from text (dataclasses build their methods so, on a
    lazy import): caught, the process exits 130 as asked. CPython marks an exact KeyboardInterrupt that
    leaves such an exec as uncaught and then kills a `python -m` process with SIGINT (-2) at exit;
    `interrupting` raises a subclass, which it does not mark (seen: `import csv` stopped by SIGTERM
    during `import duckdb`)."""
    (tmp_path / "stopped_in_exec.py").write_text(textwrap.dedent(f"""
        import sys
        from ioweather import signals
        try:
            with signals.interrupting() as came:
                # the handler runs at the next call, inside the exec'd text
                exec("import os\\nos.kill(os.getpid(), {int(sig)})\\ndef f(): pass\\nf()")
        except KeyboardInterrupt as e:
            print("interrupted", came.is_set(), e.signum, flush=True)
            sys.exit(130)
    """))
    p = subprocess.run([sys.executable, "-m", "stopped_in_exec"], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=DEADLINE_S)
    assert (p.returncode, p.stdout) == (130, f"interrupted True {int(sig)}\n"), p.stderr


def test_a_forked_child_ignores_ctrl_c_takes_sigterm_and_dies_with_its_parent():
    """The parent runs with a handler of its own (inherited by fork): the child drops it."""
    proc = _start("""
        import os, signal, time
        from ioweather import signals
        signal.signal(signal.SIGTERM, lambda *a: None)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            signals.child_defaults()
            signals.die_with_parent(parent)
            print(os.getpid(), flush=True)  # only now: a signal sent earlier would find the parent's handlers
            while True:
                time.sleep(0.01)
        while True:
            time.sleep(0.01)
    """)
    child = int(_line(proc))
    try:
        os.kill(child, signal.SIGINT)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:  # a child killed by SIGINT would be gone well within this
            assert not _gone(child), "the child died of SIGINT"
            time.sleep(0.02)
        proc.kill()  # SIGKILL: the parent can do nothing, the kernel kills the child
        proc.wait(DEADLINE_S)
        assert _wait_gone(child), "the child outlived its parent"
    finally:
        proc.kill()
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


def test_sigterm_to_a_reset_child_ends_it():
    proc = _start("""
        import os, signal, time
        from ioweather import signals
        signal.signal(signal.SIGTERM, lambda *a: None)
        pid = os.fork()
        if pid == 0:
            signals.child_defaults()
            print(os.getpid(), flush=True)
            while True:
                time.sleep(0.01)
        print(os.WTERMSIG(os.waitpid(pid, 0)[1]), flush=True)
    """)
    child = int(_line(proc))
    os.kill(child, signal.SIGTERM)
    assert _line(proc) == str(int(signal.SIGTERM))
    assert proc.wait(DEADLINE_S) == 0


def test_outside_the_main_thread_nothing_is_installed():
    before = {s: signal.getsignal(s) for s in signals.STOP}
    seen = {}

    def other():
        with signals.handled(signals.set_event(threading.Event())):
            seen.update({s: signal.getsignal(s) for s in signals.STOP})

    t = threading.Thread(target=other)
    t.start()
    t.join(DEADLINE_S)
    assert seen == before
    assert {s: signal.getsignal(s) for s in signals.STOP} == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_export_stops_on_a_stop_signal(tmp_path, testdata, sig):
    """`export` (its handlers moved from the command into services/telemetry/exporter.serve): SIGTERM or Ctrl-C
    while it serves ends it cleanly, exit 0."""
    env = {**os.environ, "IOWEATHER_HOME": str(tmp_path), "PYTHONPATH": str(SRC)}
    subprocess.run([sys.executable, "-m", "ioweather", "import", "lfsdf",
                    str(testdata / "pytokio" / "sample_ost-fullness.txt.gz"), "--fs", "snx11035"],
                   env=env, capture_output=True, check=True, timeout=120)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "export", "--port", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        assert ready and "/metrics" in proc.stderr.readline()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    finally:
        proc.kill()
