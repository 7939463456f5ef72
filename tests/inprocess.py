"""`ioweather ARGS` run in this process: conftest's `run_cli`, without the 0.5 s of CPU a new interpreter costs.

Same signature and same result (a CompletedProcess: returncode, stdout, stderr) as conftest.run_cli, so a
test that checks a command's answer switches runner and checks exactly what it checked before
(tests/test_inprocess.py compares the two on real data). What a fresh process would start with is given
back to each call, and what the command changed is taken back after it:

- the environment: IOWEATHER_HOME from `home`, IOWEATHER_DB removed, `env` over the rest, as in run_cli;
  os.environ is replaced for the call (click reads the --home/--db envvars from it, config reads it at
  each call) and restored afterwards, keys the command set included;
- the exit: SystemExit's code is the returncode (click's own, `sys.exit(2)` of a usage error); an
  exception that escapes is a traceback on stderr and returncode 1, as Python does;
- output: stdout and stderr apart (click's CliRunner keeps them apart); the two rich Consoles of
  views.output, built at import, are built again for each call, so they see this call's environment
  (NO_COLOR, COLUMNS) and a pipe, not whatever sys.stdout was when the test module was imported;
- warnings: Python's default filters (plus PYTHONWARNINGS of `env`) and printed on stderr, not pytest's;
- the working directory, the umask, the handlers of the signals a command may take, the loggers' levels;
- the store: an engine the command left open is disposed, as its process's exit would (store.db keeps one
  engine per database per process and refuses Python-level opens of a live database's files, which would
  otherwise leak into the test's own checks).

A thread the command started and left running is an error here: in its own process it would die at exit,
in this one it would go on writing into the next test. Where a faithful run in this process is impossible,
tests keep conftest.run_cli: commands that run until a signal (`watch`, `serve`, `export` without --once,
`collect`/`probe run` without a bound), a Dask client (its IO loop thread stays), lock and kill tests, hung
files or FIFOs that need `timeout` (accepted here for the same signature, but it cannot stop a call in this
process), `--help` start-up and import-weight checks, and anything about a real process's stderr or status
(a crash in C, a signal's exit status).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
import warnings

import pytest
from click import formatting
from click.testing import CliRunner

from conftest import cli_env

_SIGNALS = [s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2,
                        signal.SIGALRM, signal.SIGCHLD, signal.SIGPIPE) if s is not None]
# Python's own filters in a process started without -W (see warnings.filters in a bare interpreter).
_DEFAULT_FILTERS = [("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                    ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                    ("ignore", ResourceWarning, "")]
_THREAD_GRACE_S = 5.0


@pytest.fixture(name="cli")
def in_process_cli():
    """conftest's `cli` fixture, run in this process: `from inprocess import in_process_cli` in a module whose
    tests check the commands' answers (conftest.run_cli stays there for the ones a process is the point of)."""
    return run_cli


def run_cli(*args: str, home=None, env: dict | None = None, timeout: float = 120,
            input: str | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `ioweather ARGS` in this process, as conftest.run_cli runs it in a new one."""
    code, out, err = _invoke([str(a) for a in args], cli_env(home, env), input)
    proc = subprocess.CompletedProcess([sys.executable, "-m", "ioweather", *args], code, out, err)
    if check and proc.returncode != 0:
        raise AssertionError(f"ioweather {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def _invoke(args: list[str], env: dict, input: str | None) -> tuple[int, str, str]:
    from ioweather.cli import cli
    from ioweather.store import db

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_umask = os.umask(0o022)
    os.umask(saved_umask)
    saved_signals = {s: signal.getsignal(s) for s in _SIGNALS}
    saved_loggers = _logger_state()
    engines_before, guarded_before = set(db._ENGINES), set(db._GUARDED)
    threads_before = set(threading.enumerate())
    os.environ.clear()
    os.environ.update(env)
    try:
        with warnings.catch_warnings():
            _process_warnings(env.get("PYTHONWARNINGS", ""))
            runner = CliRunner()
            with runner.isolation(input=input) as (out, err, _):
                # click's width on a pipe: COLUMNS, else 80, at most max_content_width, less 2 (CliRunner forces 80)
                columns = env.get("COLUMNS", "")
                columns = int(columns) if columns.isdigit() and int(columns) > 0 else 80
                widest = cli.context_settings.get("max_content_width") or 80
                formatting.FORCED_WIDTH = max(min(columns, widest) - 2, 50)
                _fresh_consoles()
                code, tb = _call(cli, args)
                # the warnings' own stream is this call's stderr, as in the process
                sys.stdout.flush()
                sys.stderr.flush()
                stdout, stderr = out.getvalue(), err.getvalue()
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        os.umask(saved_umask)
        for s, handler in saved_signals.items():
            if handler is not None:
                signal.signal(s, handler)
        _restore_loggers(saved_loggers)
        _fresh_consoles()
    _release_engines(db, engines_before, guarded_before)
    _no_thread_left(threads_before, args)
    stderr_text = stderr.decode("utf-8", "replace") + tb
    return code, stdout.decode("utf-8", "replace"), stderr_text


def _call(cli, args: list[str]) -> tuple[int, str]:
    try:
        cli.main(args=args, prog_name="ioweather", standalone_mode=True)
    except SystemExit as e:
        if e.code is None:
            return 0, ""
        if isinstance(e.code, int):
            return e.code, ""
        sys.stderr.write(f"{e.code}\n")  # sys.exit("text"): the text on stderr, status 1
        return 1, ""
    except BaseException as e:  # noqa: BLE001  (the interpreter's last resort: a traceback, status 1)
        if isinstance(e, KeyboardInterrupt):
            return 130, "".join(traceback.format_exception(e))
        return 1, "".join(traceback.format_exception(e))
    return 0, ""


def _process_warnings(option: str) -> None:
    warnings.resetwarnings()
    for action, category, module in reversed(_DEFAULT_FILTERS):
        warnings.filterwarnings(action, category=category, module=module)
    for opt in filter(None, (o.strip() for o in option.split(","))):
        warnings._setoption(opt)  # how the interpreter applies PYTHONWARNINGS (sys.warnoptions)

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    # pytest records warnings by replacing the printer; a process prints them on its stderr
    warnings.showwarning = show


def _fresh_consoles() -> None:
    output = sys.modules.get("ioweather.views.output")
    if output is None:
        return
    # rebuilt in place: other modules hold these objects (`from ioweather.views.output import stderr`)
    output.stdout.__init__(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
    output.stderr.__init__(stderr=True, markup=False, highlight=False, soft_wrap=True)


def _logger_state() -> dict:
    loggers = [logging.root, *(v for v in logging.root.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    return {lg: (lg.level, list(lg.handlers), lg.disabled, lg.propagate) for lg in loggers}


def _restore_loggers(saved: dict) -> None:
    for lg in [logging.root, *(v for v in logging.root.manager.loggerDict.values() if isinstance(v, logging.Logger))]:
        level, handlers, disabled, propagate = saved.get(lg, (logging.NOTSET, [], False, True))
        lg.setLevel(level)
        lg.handlers[:] = handlers
        lg.disabled, lg.propagate = disabled, propagate


def _release_engines(db, before: set, guarded: set) -> None:
    for url in set(db._ENGINES) - before:
        while url in db._ENGINES:
            db._release_engine(url)
    # the files the call guarded are free again, as at its process's exit
    db._GUARDED.intersection_update(guarded)


def _no_thread_left(before: set, args: list[str]) -> None:
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for t in left:
        t.join(_THREAD_GRACE_S / max(1, len(left)))
    left = [t.name for t in left if t.is_alive()]
    if left:
        raise AssertionError(f"ioweather {' '.join(args)} left threads running ({', '.join(left)}): in its own process "
                             "they would end at exit; run this command with conftest.run_cli")
