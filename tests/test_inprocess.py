"""tests/inprocess.run_cli answers as `python -m ioweather` does: same status, same stdout, same stderr.

The tests that check a command's answer run it in this process (inprocess.run_cli); this is what makes that
switch safe. Each case runs once as a real process (conftest.run_cli) and once in this process, on the
same home and the shared data, and the three streams must be equal byte for byte: a success with a table,
`--json`, a usage error (exit 2), a one-line error, a damaged store (exit 1), a value read from the environment,
and an environment left as it was after the call.
"""

from __future__ import annotations

import os
import re
import shutil
import signal

import pytest

import inprocess
from conftest import TESTDATA, run_cli

LCTL = TESTDATA / "lustrefs-exporter" / "valid.txt"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A store with one import of real lctl output, made by a real process: both runners read it."""
    home = tmp_path_factory.mktemp("home")
    if not LCTL.exists():
        pytest.skip(f"shared data missing: {LCTL}")
    run_cli("import", "lctl-params", str(LCTL), "--fs", "x", "-q", home=home, check=True)
    return home


CASES = {
    "success, json": ("store", "check", "--json"),
    "success, table": ("store", "check"),
    "import, json": ("import", "lctl-params", str(LCTL), "--fs", "y", "--json"),
    "usage error": ("store", "check", "--no-such-option"),
    "bad value": ("slowdown", "--interval", "soon"),
    "no data": ("slowdown", "--check"),
    "missing file": ("factors", "classify", "/nonexistent/obs.csv"),
    "version": ("--version",),
    "help": ("store", "--help"),
}


@pytest.mark.parametrize("args", CASES.values(), ids=CASES.keys())
def test_same_answer_as_a_process(home, tmp_path, args):
    # each runner gets its own copy of the store: a command that writes must not see the other's writes
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(home, a)
    shutil.copytree(home, b)
    real = run_cli(*args, home=a)
    here = inprocess.run_cli(*args, home=b)
    got = (here.returncode, _timeless(here.stdout.replace(str(b), str(a))), here.stderr.replace(str(b), str(a)))
    assert got == (real.returncode, _timeless(real.stdout), real.stderr)


def _timeless(text: str) -> str:
    # an import's answer says how long it took: the one field two runs never share
    return re.sub(r'"(seconds|rows_per_s)": [0-9.e+-]+', r'"\1": T', text)


DAMAGED = {"problem line, exit 1": ("store", "check"), "problem, json, exit 1": ("store", "check", "--json"),
           "one-line error": ("probe", "stats")}


@pytest.mark.parametrize("args", DAMAGED.values(), ids=DAMAGED.keys())
def test_same_answer_on_a_damaged_store(tmp_path, args):
    answers = []
    for run, name in ((run_cli, "a"), (inprocess.run_cli, "b")):
        home = tmp_path / name / "home"
        home.mkdir(parents=True)
        (home / "ioweather.sqlite").write_bytes(b"not a database, " * 64)
        out = run(*args, home=home)
        answers.append((out.returncode, out.stdout.replace(str(home), "HOME"), out.stderr.replace(str(home), "HOME")))
    assert answers[0] == answers[1] and answers[0][0] != 0


def test_the_cases_cover_each_kind_of_exit(home, tmp_path):
    # the table above must keep a success, a usage error and a one-line error, or it proves less than it says
    codes = {inprocess.run_cli(*args, home=tmp_path).returncode for args in CASES.values()}
    assert {0, 2} <= codes and len(codes - {0}) >= 1


def test_environment_and_process_state_come_back(tmp_path):
    before = (dict(os.environ), os.getcwd(), signal.getsignal(signal.SIGTERM))
    out = inprocess.run_cli("store", "check", "--json", home=tmp_path, env={"IOWEATHER_DB": "", "XYZ_ONLY_IN_CALL": "1"})
    assert out.returncode == 0, out.stderr
    assert str(tmp_path) in out.stdout          # IOWEATHER_HOME reached the command
    assert (dict(os.environ), os.getcwd(), signal.getsignal(signal.SIGTERM)) == before


def test_the_db_of_the_callers_environment_is_not_used(tmp_path, monkeypatch):
    # run_cli drops IOWEATHER_DB: a test's home is the store, whatever the shell that started pytest says
    monkeypatch.setenv("IOWEATHER_DB", "postgresql://nobody@127.0.0.1:1/none")
    real, here = run_cli("store", "check", "--json", home=tmp_path), inprocess.run_cli("store", "check", "--json", home=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (real.returncode, real.stdout, real.stderr) and real.returncode == 0


def test_an_escaping_exception_is_a_traceback_and_status_1(tmp_path, monkeypatch):
    from ioweather.services.runtime import stores

    def boom(*_a, **_k):
        raise RuntimeError("planted")

    # the one stand-in of this file: it checks the runner's own handling of a crash, not ioweather
    monkeypatch.setattr(stores, "check_store", boom, raising=True)
    out = inprocess.run_cli("store", "check", home=tmp_path)
    assert out.returncode == 1
    assert out.stderr.startswith("Traceback (most recent call last):") and "RuntimeError: planted" in out.stderr


def test_an_engine_left_open_is_released(tmp_path, testdata):
    from ioweather.store import db

    before = set(db._ENGINES)
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(testdata / "darshan" / "imbalanced-io.darshan", logs)
    assert inprocess.run_cli("jobs", "ingest", str(logs), "-q", home=tmp_path).returncode == 0
    assert set(db._ENGINES) == before
    # and the test may now open the database file itself, as after a process's exit
    with open(tmp_path / "ioweather.sqlite", "rb") as f:
        assert f.read(16) == b"SQLite format 3\x00"
