"""`jobs ingest`'s light path (issue 40): an unchanged archive answered from a sqlite3 read and a stat of each log
(services/jobs/ingest_scan.py), said exactly as the full path says it, and anything changed or unusual left to the
full path. The store: a dozen real logs, the broken ones of test_jobs_ingest (failures to skip unchanged too) and
a symlink (counted, not followed), ingested once by the full path."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

from darshan_support import need_darshan_logs  # noqa: F401 (autouse fixture)
from inprocess import run_cli
from test_jobs_ingest import make_archive

from ioweather.commands import jobs as jobs_command
from ioweather.config import Settings
from ioweather.services.jobs import ingest_scan
from ioweather.stats.rules_revision import RULES_REVISION

HEAVY = ("sqlalchemy", "pandas", "numpy", "pyarrow", "rich", "darshan")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("light")
    home, logs = root / "home", root / "a"
    make_archive(logs)
    for p in sorted((logs / "real").iterdir())[12:]:
        p.unlink()
    os.symlink(logs / "real", logs / "link-to-real")
    os.symlink(sorted((logs / "real").iterdir())[0], logs / "link.darshan")
    first = json.loads(run_cli("jobs", "ingest", str(logs), "--workers", "2", "--json", home=home, check=True).stdout)
    assert first["ingested"] == 12 and first["failed"] == 4 and first["symlinks_skipped"] == 2
    return home, logs


def _outputs(home, logs, *, full: bool, monkeypatch) -> list[tuple]:
    """(stdout, stderr, code) of --json, the human lines and -q, through the light path or forced to the full one."""
    with monkeypatch.context() as m:
        if full:
            m.setattr(jobs_command, "unchanged_answer", lambda *a, **kw: None)
        return [(r.stdout, r.stderr, r.returncode) for r in
                (run_cli("jobs", "ingest", str(logs), *extra, home=home) for extra in (["--json"], [], ["-q"]))]


def test_an_unchanged_archive_is_answered_as_the_full_path_answers_it(archive, monkeypatch):
    home, logs = archive
    light = ingest_scan.unchanged_answer(Settings.resolve(home), [str(logs)])
    assert light is not None and light.skipped == light.found == 16 and light.symlinks_skipped == 2
    assert _outputs(home, logs, full=False, monkeypatch=monkeypatch) == \
        _outputs(home, logs, full=True, monkeypatch=monkeypatch)
    # the path's imports, in a process of its own: none of the full path's libraries
    probe = ("import sys\nfrom ioweather.cli import cli\n"
             "cli.main(['jobs', 'ingest', sys.argv[1], '--json'], prog_name='ioweather', standalone_mode=False)\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    env = {**os.environ, "IOWEATHER_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("IOWEATHER_DB", None)
    out = subprocess.run([sys.executable, "-c", probe, str(logs)], capture_output=True, text=True, env=env, check=True)
    answer, loaded = out.stdout.splitlines()
    assert json.loads(answer) == light.to_json() and loaded == "[]"


def test_a_change_or_an_unusual_store_takes_the_full_path(archive, monkeypatch, tmp_path):
    home, logs = archive
    settings = Settings.resolve(home)

    def both():
        """(the light answer, the CLI's answer) for the archive now."""
        light = ingest_scan.unchanged_answer(settings, [str(logs)])
        return light, json.loads(run_cli("jobs", "ingest", str(logs), "--json", home=home, check=True).stdout)

    real = sorted((logs / "real").iterdir())
    # a touched log: opened, hashed, found stored (a duplicate of itself); then unchanged again
    os.utime(real[0], ns=(time.time_ns(), os.stat(real[0]).st_mtime_ns + 10**9))
    light, cli = both()
    assert light is None and (cli["duplicates"], cli["skipped"]) == (1, 15)
    assert ingest_scan.unchanged_answer(settings, [str(logs)]) is not None
    # a new log: ingested
    (logs / "new.darshan").write_bytes(real[1].read_bytes() + b"\x01\x02\x03\x04")
    light, cli = both()
    assert light is None and (cli["ingested"], cli["found"]) == (1, 17)
    # a removed log: the full path writes nothing for it either, and the two say the same
    (logs / "new.darshan").unlink()
    assert _outputs(home, logs, full=False, monkeypatch=monkeypatch) == \
        _outputs(home, logs, full=True, monkeypatch=monkeypatch)
    # a Parquet part no job row names: the full path removes it
    orphan = settings.parquet_dir / "jobs" / "left-by-a-kill.parquet.tmp"
    orphan.write_bytes(b"")
    light, cli = both()
    assert light is None and not orphan.exists() and cli["skipped"] == 16
    # a path that is not there: the full path's error
    assert ingest_scan.unchanged_answer(settings, [str(logs), str(tmp_path / "nothing")]) is None
    # a darshan schema these reads do not know; a store that is not SQLite
    db = sqlite3.connect(settings.sqlite_path)
    with db:
        db.execute("UPDATE schema_versions SET version = version + 1 WHERE component = 'darshan'")
    try:
        assert ingest_scan.unchanged_answer(settings, [str(logs)]) is None
    finally:
        with db:
            db.execute("UPDATE schema_versions SET version = version - 1 WHERE component = 'darshan'")
        db.close()
    assert ingest_scan.unchanged_answer(Settings.resolve(home, "postgresql://nobody@127.0.0.1:9/none"),
                                        [str(logs)]) is None
    # a copy of a log put in another's place (same size and mtime, another inode): read again
    st = os.stat(real[2])
    shutil.copy(real[2], tmp_path / "copy")
    os.utime(tmp_path / "copy", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp_path / "copy", real[2])
    light, cli = both()
    assert light is None and (cli["duplicates"], cli["skipped"]) == (1, 15)
    assert ingest_scan.unchanged_answer(settings, [str(logs)]).skipped == 16


def test_a_row_of_other_rules_takes_the_full_path_once(archive):
    """A stored row derived under another revision of the advisor's rules (stats/rules_revision.py) is not
    unchanged: the light path leaves it to the full one, which refreshes it in place; then the archive is
    unchanged again and answered by the light path, the revision current."""
    home, logs = archive
    settings = Settings.resolve(home)
    assert ingest_scan.unchanged_answer(settings, [str(logs)]) is not None  # current: the light path
    db = sqlite3.connect(settings.sqlite_path)
    with db:
        db.execute("UPDATE darshan_jobs SET rules_revision = '2026-11-28' WHERE id = (SELECT min(id) FROM darshan_jobs)")
    assert ingest_scan.unchanged_answer(settings, [str(logs)]) is None
    cli = json.loads(run_cli("jobs", "ingest", str(logs), "--json", home=home, check=True).stdout)
    assert (cli["refreshed"], cli["ingested"], cli["duplicates"], cli["skipped"]) == (1, 0, 0, 15)
    assert db.execute("SELECT DISTINCT rules_revision FROM darshan_jobs").fetchall() == [(RULES_REVISION,)]
    db.close()
    light = ingest_scan.unchanged_answer(settings, [str(logs)])
    assert light is not None and (light.refreshed, light.skipped) == (0, 16)


def test_one_blas_thread_is_set_only_before_numpy(monkeypatch):
    """`jobs ingest` and `jobs summary` ask OpenBLAS for one thread before numpy's import; once numpy is imported
    (a test session running commands in its process) the variable is not set: it would change nothing here and
    reach every later command's children."""
    from ioweather.commands.common import one_blas_thread

    import numpy  # noqa: F401 (imported, as in a test session)

    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    one_blas_thread()
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.delitem(sys.modules, "numpy")  # as in a fresh command: numpy not yet imported
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's own
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"
