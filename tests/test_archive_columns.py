"""`jobs summary` without pandas and SQLAlchemy (services/jobs/archive_light.py, stats/archive_columns.py) answers
byte for byte as the pandas path (services/jobs/darshan.py `archive_summary`, stats/archive.py) does: on a store
of every public log with each option, on rows with NULLs, infinities, ties and sums where Kahan's compensation
changes the last digit, and through the light door only where the store can be read as it is (issue 40)."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from darshan_support import need_darshan_logs  # noqa: F401 (autouse fixture)
from inprocess import run_cli
from test_jobs_ingest import make_archive

from ioweather.config import Settings
from ioweather.encoding import to_json
from ioweather.services.jobs import archive_light, darshan
from ioweather.stats.archive_columns import kahan_sums
from ioweather.store import jobs as jobs_store, sqlite_reads

COLS = list(sqlite_reads.SUMMARY_COLUMNS)
HEAVY = ("sqlalchemy", "pandas", "pyarrow", "darshan")


def _pandas(rows, rules, failed=0, **options) -> str:
    """The pandas path's answer to rows as `store.jobs.load_jobs` hands them (DataFrame.from_records)."""
    df = pd.DataFrame.from_records(rows, columns=COLS)
    return to_json(darshan._summary(df, rules, failed, **options).to_json())


def _light(rows, rules, failed=0, **options) -> str:
    return to_json(archive_light.summary_of_rows(rows, COLS, rules, failed, **options).to_json())


OPTIONS = [dict(cores_per_node=None, min_procs=1024, min_bytes=500 * 2**20, top=10),
           dict(cores_per_node=4, min_procs=0, min_bytes=0, top=3),
           dict(cores_per_node=1, min_procs=2, min_bytes=1, top=1)]


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("summary")
    home, logs = root / "home", root / "logs"
    make_archive(logs, n_copies=30)
    run_cli("jobs", "ingest", str(logs), "--workers", "2", "--json", home=home, check=True)
    return home


def test_the_same_summary_of_every_public_log(stored, tmp_path):
    settings = Settings.resolve(stored)
    store = sqlite_reads.open_light(settings)
    rows = store.rows(f"SELECT {', '.join(COLS)} FROM darshan_jobs ORDER BY log_hash")
    store.dispose()
    assert list(sqlite_reads.SUMMARY_COLUMNS) == jobs_store.SUMMARY_COLUMNS
    uids = sorted({r[COLS.index("uid")] for r in rows})
    projects = tmp_path / "projects.txt"
    projects.write_text(f"uid:{uids[0]} first\n/ root-path\n# comment\n")
    for opts in OPTIONS:
        for rules_file in (None, str(projects)):
            light = archive_light.light_answer(settings, projects_file=rules_file, **opts)
            full = darshan.archive_summary(settings, projects_file=rules_file, **opts)
            assert to_json(light.to_json()) == to_json(full.to_json()), (opts, rules_file)
    assert light.jobs == len(rows) > 40 and light.failed_logs == 4
    # the command's own output, --json and the human table
    for extra in (["--json"], ["--json", "--cores-per-node", "2", "--min-procs", "0"], []):
        got = run_cli("jobs", "summary", *extra, home=stored, env={"COLUMNS": "200"}, check=True).stdout
        with pytest.MonkeyPatch.context() as m:
            m.setattr(archive_light, "_light", lambda *a, **kw: None)
            want = run_cli("jobs", "summary", *extra, home=stored, env={"COLUMNS": "200"}, check=True).stdout
        assert got == want


def _random_rows(rng: random.Random, n: int) -> list[tuple]:
    """Job rows with NULLs, ties, infinities (a node count of 0), and bytes and seconds of very different sizes."""
    mods = ["POSIX", "POSIX,STDIO", "MPI-IO,POSIX", "H5D,H5F,MPI-IO,POSIX", "PNETCDF_FILE,POSIX", "", None, "DFS,DAOS"]
    rows = []
    for i in range(n):
        def maybe(v, p=0.2):
            return None if rng.random() < p else v
        big = rng.choice([1, 10**3, 10**9, 10**15, 2**53 + 1])
        row = {c: None for c in COLS}
        row.update(
            log_hash=f"{i:064x}", uid=maybe(rng.choice([0, 1000, 4242, 99999]), 0.1),
            exe=maybe(rng.choice(["/bin/a.out -x", "/opt/app/run", "  ", "b", "/x/y/a.out"]), 0.1),
            nprocs=rng.choice([1, 2, 63, 64, 1024, 4096, 70000]), nnodes=maybe(rng.choice([0, 1, 2, 16]), 0.4),
            modules=rng.choice(mods), bytes_read=maybe(rng.randrange(big)), bytes_written=maybe(rng.randrange(big)),
            files=maybe(rng.randrange(100)),
            **{c: maybe(rng.choice([0.0, 1e-9, 0.1, 1e6, rng.random() * 10**rng.randrange(12)]))
               for c in ("read_time_s", "write_time_s", "meta_time_s", "mibps", "io_time_s", "io_fraction")},
            **{f"{k}_files": maybe(rng.randrange(5)) for k in ("unique", "shared", "partially_shared")},
            **{f"{k}_bytes": maybe(rng.randrange(big)) for k in ("unique", "shared", "partially_shared")},
            **{f"{p}_bytes_{d}": maybe(float(rng.randrange(big)), 0.5) for p in
               ("posix", "stdio", "mpiio", "h5d", "pnetcdf", "dfs", "daos") for d in ("read", "written")},
            common_access_bytes=maybe(float(rng.choice([4096, 8, 1 << 20, 47]))),
            top_file=maybe(rng.choice(["/scratch/p1/f", "/home/u/x", "/scratch/p2/deep/f", "/scratchy"])),
        )
        rows.append(tuple(row[c] for c in COLS))
    return rows


@pytest.mark.parametrize("seed", [None, 7])
def test_the_same_summary_of_planted_rows(seed):
    seed = random.randrange(2**32) if seed is None else seed
    print(f"seed {seed}")
    rng = random.Random(seed)
    rules = [("path", "/scratch/p1", "p1"), ("path", "/scratch", "scratch"), ("uid", "1000", "thousand"),
             ("path", "/x", "x")]
    for n in (0, 1, 2, 7, 300):
        rows = _random_rows(rng, n)
        for opts in OPTIONS:
            for r in ([], rules):
                assert _light(rows, r, 3, **opts) == _pandas(rows, r, 3, **opts), (seed, n, opts, r)
    # every column NULL but the key ones: pandas types them object, the light path float NaN
    rows = [tuple(f"{i:064x}" if c == "log_hash" else (2 if c == "nprocs" else None) for c in COLS) for i in range(5)]
    for opts in OPTIONS:
        assert _light(rows, rules, **opts) == _pandas(rows, rules, **opts)


def test_compensated_sums_as_pandas_sums():
    """The planted means differ from a naive sum's in the last digit: the test above would see a naive sum."""
    rng = np.random.default_rng(3)
    values = np.concatenate([[1e16], rng.random(200), [np.inf, -1.0, np.nan], rng.random(50) * 1e-3])
    groups = [int(g) for g in rng.integers(0, 3, len(values))]
    sums, n = kahan_sums(values, groups, 3)
    frame = pd.DataFrame({"g": groups, "v": values})
    assert sums == frame.groupby("g")["v"].sum().tolist()
    assert [s / k for s, k in zip(sums, n)] == frame.groupby("g")["v"].mean().tolist()
    # whole numbers summed at once where exact (groups 0 and 3), row by row where not (1: past 2**53; 2: fractions)
    values = np.array([3.0, 2.0**53, -0.0, 5.0, 1.0, 0.5, np.nan, 7.0, 1.0, 2.0**52, 2.0**52, 0.25, -0.0])
    groups = [0, 1, 3, 0, 1, 2, 3, 3, 1, 0, 0, 2, 3]
    frame = pd.DataFrame({"g": groups, "v": values})
    sums, n = kahan_sums(values, groups, 4)
    assert sums == frame.groupby("g")["v"].sum().tolist() and n == frame.groupby("g")["v"].count().tolist()
    assert sums[1] != float(sum(values[[1, 4, 8]]))  # naive: 2**53 + 1 + 1 rounds back to 2**53
    finite = np.concatenate([[1e16], rng.random(200)])
    s, _ = kahan_sums(finite, [0] * len(finite), 1)
    assert s[0] == pd.Series(finite).groupby([0] * len(finite)).sum().iloc[0] != float(sum(finite.tolist()))


def test_only_a_store_read_as_it_is_takes_the_light_door(stored, tmp_path):
    settings = Settings.resolve(stored)
    opts = OPTIONS[0]
    assert archive_light._light(settings, [], **opts) is not None
    # no store yet: the full door makes one and says "no jobs"
    assert archive_light._light(Settings.resolve(tmp_path / "empty"), [], **opts) is None
    # another schema version of the darshan component: the full door upgrades it (a write)
    copy = tmp_path / "old"
    copy.mkdir()
    db = Settings.resolve(copy).sqlite_path
    db.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(settings.sqlite_path)
    dst = sqlite3.connect(db)
    src.backup(dst)
    src.close()
    dst.execute("UPDATE schema_versions SET version = version - 1 WHERE component = 'darshan'")
    dst.commit()
    dst.close()
    assert archive_light._light(Settings.resolve(copy), [], **opts) is None
    # the command's imports, in a process of its own: neither pandas nor SQLAlchemy
    probe = ("import sys\nfrom ioweather.cli import cli\n"
             "cli.main(['jobs', 'summary', '--json'], prog_name='ioweather', standalone_mode=False)\n"
             f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    env = {**os.environ, "IOWEATHER_HOME": str(stored), "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("IOWEATHER_DB", None)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    answer, loaded = out.stdout.rsplit("\n", 2)[:2]
    assert json.loads(answer)["jobs"] > 40 and loaded == "[]"


def test_a_damaged_store_is_named_as_the_full_path_names_it(tmp_path):
    """A text file where the store's ioweather.sqlite should be: `open_light` raised `Fallback` outside the
    light door's `try` and `jobs summary` ended in a traceback (exit 1). It says what the full door says
    (StoreDamaged: run `ioweather store check`) in one line, exits non-zero and leaves the file as it was."""
    home = tmp_path / "home"
    db = Settings.resolve(home).sqlite_path
    db.parent.mkdir(parents=True)
    db.write_text("this is a text file, not a database\n" * 20)
    before = db.read_bytes()
    for extra in (["--json"], []):
        got = run_cli("jobs", "summary", *extra, home=home)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(archive_light, "_light", lambda *a, **kw: None)
            full = run_cli("jobs", "summary", *extra, home=home)
        assert got.returncode == full.returncode != 0 and got.returncode != 1, got.stderr  # 1: a traceback
        assert got.stdout == "" and "Traceback" not in got.stderr
        assert got.stderr == full.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr
        assert "run `ioweather store check`" in got.stderr and str(db) in got.stderr
    assert db.read_bytes() == before
