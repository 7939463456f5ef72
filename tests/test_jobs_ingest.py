"""`ioweather jobs ingest` and `jobs summary` on real logs, broken logs, SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from darshan_support import TESTDATA_LOGS, all_real_logs, need_darshan_logs  # noqa: F401 (autouse fixture)

from ioweather.config import Settings
from ioweather.store import open_store


def make_archive(root, n_copies: int = 0, broken: bool = True):
    """A directory tree with every real log, `n_copies` distinct copies of small ones, and broken files.

    Appending bytes after a log's last region keeps it valid but changes its content hash,
    so each copy is a distinct job to the store.
    """
    root.mkdir(parents=True, exist_ok=True)
    real = all_real_logs()
    seen = set()
    good = 0
    for p in real:
        data = p.read_bytes()
        if data in seen:
            continue
        seen.add(data)
        (root / "real").mkdir(exist_ok=True)
        shutil.copy(p, root / "real" / p.name)
        good += 1
    small = [p for p in real if p.stat().st_size < 4000 and p.name.startswith("mpi-io-test")]
    for i in range(n_copies):
        d = root / f"copies/{i // 500:03d}"
        d.mkdir(parents=True, exist_ok=True)
        src = small[i % len(small)]
        (d / f"job {i} ü.darshan").write_bytes(src.read_bytes() + i.to_bytes(4, "little"))
        good += 1
    bad = {}
    if broken:
        b = root / "broken"
        b.mkdir()
        (b / "empty.darshan").write_bytes(b"")
        (b / "noise.darshan").write_bytes(os.urandom(3000))
        half = TESTDATA_LOGS / "imbalanced-io.darshan"
        (b / "half.darshan").write_bytes(half.read_bytes()[: half.stat().st_size // 2])
        import gzip

        with gzip.open(b / "v2.darshan", "wb") as f:
            f.write(b"2.06\0\0\0\0" + bytes(2000))
        bad = {"empty.darshan": "empty file", "noise.darshan": "not a Darshan log",
               "half.darshan": "truncated", "v2.darshan": "format 2.x"}
    (root / "notes.txt").write_text("not a log, not named .darshan: ignored when walking")
    return good, bad


def _counts(home, db=None):
    from ioweather.store import jobs as js

    store = open_store(Settings.resolve(home, db))
    return js.count_jobs(store), js.failed(store)


def test_ingest_is_idempotent_and_records_failures(cli, home, tmp_path):
    good, bad = make_archive(tmp_path / "archive", n_copies=40)
    r = cli("jobs", "ingest", str(tmp_path / "archive"), "--workers", "2", "--json", home=home)
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)
    assert counts["ingested"] == good and counts["failed"] == len(bad)
    njobs, failed = _counts(home)
    assert njobs == good
    reasons = {os.path.basename(f["path"]): f["reason"] for f in failed}
    for name, text in bad.items():
        assert text in reasons[name]
    # second run: nothing read again
    again = json.loads(cli("jobs", "ingest", str(tmp_path / "archive"), "--json", home=home, check=True).stdout)
    assert again["ingested"] == 0 and again["skipped"] == good + len(bad)
    # same content under another name: a duplicate, not a second job
    shutil.copy(TESTDATA_LOGS / "imbalanced-io.darshan", tmp_path / "archive" / "same.darshan")
    dup = json.loads(cli("jobs", "ingest", str(tmp_path / "archive"), "--json", home=home, check=True).stdout)
    assert dup["duplicates"] == 1 and dup["ingested"] == 0
    assert _counts(home)[0] == good
    # the per-file table: one part per batch, only rows of stored jobs
    from ioweather.store import jobs as js

    table = js.file_rows(open_store(Settings.resolve(home)), Settings.resolve(home).parquet_dir)
    hashes = set(table.column("log_hash").to_pylist())
    assert len(hashes) == good - sum(1 for p in (tmp_path / "archive" / "real").iterdir()
                                     if p.name in ("empty_log.darshan",))


def test_summary_json_and_html(cli, home, tmp_path):
    make_archive(tmp_path / "a", n_copies=0)
    cli("jobs", "ingest", str(tmp_path / "a"), "--workers", "1", home=home, check=True)
    mapping = tmp_path / "projects.txt"
    mapping.write_text("# project map\n/lus/theta-fs0 theta-project\nuid:69628 snyder-project\n")
    out = tmp_path / "summary.html"
    r = cli("jobs", "summary", "--json", "--projects", str(mapping), "--min-procs", "4", "--min-bytes", "1MiB",
            "--cores-per-node", "4", "--html", str(out), home=home)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["failed_logs"] == 4 and rep["jobs"] > 30
    assert list(rep)[:2] == ["jobs", "failed_logs"]
    for key in ("interfaces_by_size", "strategy_by_size", "top_projects", "top_users", "top_executables",
                "files_vs_procs", "mibps_per_node_by_project", "projects"):
        assert key in rep
    projects = {p["project"] for p in rep["projects"]}
    assert "theta-project" in projects and "snyder-project" in projects
    assert sum(r["jobs"] for r in rep["interfaces_by_size"]) == rep["jobs"]
    box = rep["mibps_per_node_by_project"]["projects"]
    assert box and all(b["min"] <= b["q1"] <= b["median"] <= b["q3"] <= b["max"] for b in box)
    assert "<html" in out.read_text()
    # default filters (1024 procs, 500 MiB) keep only the big jobs
    rep2 = json.loads(cli("jobs", "summary", "--json", "--cores-per-node", "4", home=home, check=True).stdout)
    assert rep2["mibps_per_node_by_project"]["jobs_in_filter"] < rep["mibps_per_node_by_project"]["jobs_in_filter"]
    human = cli("jobs", "summary", home=home, env={"COLUMNS": "200"}, check=True).stdout
    assert "I/O strategy by job size" in human
    bad = tmp_path / "bad.txt"
    bad.write_text("nonsense\n")
    r = cli("jobs", "summary", "--projects", str(bad), home=home)
    assert r.returncode == 2 and "line 1" in r.stderr


@pytest.mark.parametrize("db", ["pg_url", "mariadb_url"])
def test_ingest_and_summary_on_server_databases(cli, home, tmp_path, db, request):
    """Ingest, re-ingest (nothing new: the insert skips stored hashes, ON CONFLICT on PostgreSQL,
    INSERT IGNORE on MariaDB) and the summary counted by the server database."""
    pg_url = request.getfixturevalue(db)
    good, bad = make_archive(tmp_path / "a", n_copies=10)
    r = cli("--db", pg_url, "jobs", "ingest", str(tmp_path / "a"), "--workers", "2", "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ingested"] == good
    again = json.loads(cli("--db", pg_url, "jobs", "ingest", str(tmp_path / "a"), "--json", home=home, check=True).stdout)
    assert again["ingested"] == 0
    rep = json.loads(cli("--db", pg_url, "jobs", "summary", "--json", home=home, check=True).stdout)
    assert rep["jobs"] == good and rep["failed_logs"] == len(bad)


@pytest.mark.slow
def test_thousands_of_logs_with_broken_ones(cli, home, tmp_path):
    good, bad = make_archive(tmp_path / "big", n_copies=2000)
    r = cli("jobs", "ingest", str(tmp_path / "big"), "--json", home=home, timeout=600)
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout)
    assert counts["ingested"] == good and counts["failed"] == len(bad)


@pytest.mark.slow
def test_resumable_after_kill(home, tmp_path):
    good, bad = make_archive(tmp_path / "k", n_copies=150, broken=False)
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "jobs", "ingest", str(tmp_path / "k"), "--workers", "2"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.5)
        try:
            if _counts(home)[0] > 0:
                break
        except Exception:  # store not created yet
            pass
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = _counts(home)[0]
    assert 0 < partial <= good
    from click.testing import CliRunner

    from ioweather.cli import cli as main

    r = CliRunner().invoke(main, ["--home", str(home), "jobs", "ingest", str(tmp_path / "k"), "--workers", "2", "--json"])
    assert r.exit_code == 0, r.output
    counts = json.loads(r.output.strip().splitlines()[-1])
    assert counts["skipped"] + counts["ingested"] + counts["duplicates"] == good
    assert _counts(home)[0] == good


def _die_on_poison(item):
    if "poison" in item:
        import faulthandler

        faulthandler.disable()  # the abort is the point: no traceback dump in the test output
        os.abort()
    return ("ok", item)


@pytest.mark.parametrize("per_task", [1, 4])
def test_pool_survives_a_worker_crash(per_task):
    """A poisoned item among others, one or four to a task (`jobs ingest` sends four): only it fails."""
    from ioweather.services.jobs.ingest import run_pool

    items = [f"log{i}" for i in range(12)] + ["poison"] + [f"log{i}" for i in range(12, 20)]
    results, crashed = {}, {}
    run_pool(_die_on_poison, items, 2, lambda it, res: results.__setitem__(it, res),
             lambda it, why: crashed.__setitem__(it, why), per_task=per_task)
    assert set(crashed) == {"poison"} and "the Darshan library failed" in crashed["poison"]
    assert set(results) == set(items) - {"poison"}


def test_dask_option(cli, home, tmp_path):
    pytest.importorskip("dask.distributed", reason="the optional dask extra is not installed")
    from dask.distributed import LocalCluster

    make_archive(tmp_path / "d", broken=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        r = cli("jobs", "ingest", str(tmp_path / "d"), "--dask", cluster.scheduler_address, "--json", home=home)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["failed"] == 4


def test_dask_missing_extra_is_a_clear_error(cli, home, tmp_path):
    try:
        import dask.distributed  # noqa: F401
        pytest.skip("dask is installed; the missing-extra message cannot be shown")
    except ImportError:
        pass
    shutil.copy(TESTDATA_LOGS / "mpi-io-test-x86_64-3.0.0.darshan", tmp_path / "a.darshan")
    r = cli("jobs", "ingest", str(tmp_path / "a.darshan"), "--dask", "tcp://127.0.0.1:1", home=home)
    assert r.returncode == 2 and "ioweather[dask]" in r.stderr


def test_ingest_missing_path(cli, home, tmp_path):
    r = cli("jobs", "ingest", str(tmp_path / "nope"), home=home)
    assert r.returncode == 2 and "no such file or directory" in r.stderr


def test_one_job_and_its_files(cli, home, tmp_path):
    """`store.jobs.job`: the row and per-file rows of one job, found by a prefix of its id."""
    from ioweather.store import jobs as js

    make_archive(tmp_path / "a", broken=False)
    cli("jobs", "ingest", str(tmp_path / "a"), "--workers", "1", home=home, check=True)
    settings = Settings.resolve(home)
    store = open_store(settings)
    every_file = js.file_rows(store, settings.parquet_dir).to_pandas()
    rows = js.load_jobs(store, ["log_hash", "path", "files"])
    assert len(rows) > 5
    for r in rows.itertuples():
        row, files = js.job(store, settings.parquet_dir, r.log_hash[:16])
        assert (row["log_hash"], row["path"]) == (r.log_hash, r.path)
        mine = every_file[every_file["log_hash"] == r.log_hash]
        assert len(files) == len(mine) and set(files["log_hash"]) <= {r.log_hash}
        assert sorted(files["record_id"]) == sorted(mine["record_id"])
    with pytest.raises(js.AmbiguousJobId, match="matches several jobs"):
        js.job(store, settings.parquet_dir, "")
    assert js.job(store, settings.parquet_dir, "%") is None  # a LIKE wildcard is not a wildcard here
    assert js.job(store, settings.parquet_dir, "no-such-id") is None
    shutil.rmtree(js.files_dir(settings.parquet_dir))
    row, files = js.job(store, settings.parquet_dir, rows["log_hash"][0])
    assert row["log_hash"] == rows["log_hash"][0] and files is None  # the row outlives its Parquet part


def _scramble_keeping_stamp(path) -> bytes:
    """Overwrite `path` in place with as many other bytes, then put its mtime back: its (device, inode, size,
    mtime) is what it was, its content is not a log. Returns the original bytes."""
    st = os.stat(path)
    data = path.read_bytes()
    with open(path, "r+b") as f:
        f.write(bytes(b ^ 0x5A for b in data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns and os.stat(path).st_ino == st.st_ino
    return data


def test_reingest_skips_unchanged_files_unopened_and_reads_changed_ones(home, tmp_path, monkeypatch):
    """Issue 40: a second ingest of a directory of logs and duplicates opens none of them (each file is
    known by its device, inode, size and mtime); a touched, a rewritten and a replaced file are read again.

    Two proofs that nothing unchanged is read: every open of a log goes through `open_log`, counted across
    the worker processes; and the unchanged files' bytes are scrambled in place with their stamp kept, so
    a file read anyway would be a failure or a new job."""
    from ioweather.services.jobs import ingest as ingest_mod
    from ioweather.sources import darshan_log

    good, _ = make_archive(tmp_path / "a", broken=False)
    real = sorted((tmp_path / "a" / "real").iterdir())
    for p in real[12:]:  # a dozen logs and their duplicates: the ingest stays short
        p.unlink()
    real, good = real[:12], 12
    (tmp_path / "a" / "dup").mkdir()
    for i, p in enumerate(real * 2):
        shutil.copy(p, tmp_path / "a" / "dup" / f"{i:03d}-{p.name}")
    files = sorted((tmp_path / "a").rglob("*.darshan"))
    n = len(files)
    opened = tmp_path / "opened.txt"
    real_open = darshan_log.open_log

    def counted_open(path, *a, **kw):
        fd = os.open(opened, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{path}\n".encode())
        os.close(fd)
        return real_open(path, *a, **kw)

    monkeypatch.setattr(darshan_log, "open_log", counted_open)
    settings = Settings.resolve(home)

    def run():
        opened.write_text("")
        counts = ingest_mod.ingest(settings, [str(tmp_path / "a")], workers=2).to_json()
        return counts, sorted(opened.read_text().split("\n")[:-1])

    first, paths = run()
    assert (first["ingested"], first["duplicates"], first["failed"], first["skipped"]) == (good, n - good, 0, 0)
    assert paths == sorted(map(str, files))  # the hook sees every open
    originals = {p: _scramble_keeping_stamp(p) for p in files}
    again, paths = run()
    assert paths == [] and again == {**again, "ingested": 0, "duplicates": 0, "failed": 0, "skipped": n, "found": n}
    # a: touched (content restored, a new mtime); b: rewritten with new content (a new job); c: replaced by a
    # copy of the same size and mtime (another inode)
    a, b, c = files[0], files[n // 2], files[-1]
    a.write_bytes(originals[a])
    os.utime(a, ns=(time.time_ns(), os.stat(a).st_mtime_ns + 10**9))
    b.write_bytes(originals[b] + b"\x01\x02\x03\x04")
    st = os.stat(c)
    (tmp_path / "c.new").write_bytes(originals[c])
    os.utime(tmp_path / "c.new", ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp_path / "c.new", c)
    assert os.stat(c).st_ino != st.st_ino and os.stat(c).st_size == st.st_size
    third, paths = run()
    assert paths == sorted(map(str, (a, b, c)))
    assert (third["ingested"], third["duplicates"], third["failed"], third["skipped"]) == (1, 2, 0, n - 3)
    last, paths = run()
    assert paths == [] and last["skipped"] == n


def _fail_with(reason: str):
    raise RuntimeError(reason)


def test_a_failed_start_stops_the_workers():
    """`started` (the parent's store opening, beside the workers) raising ends the pool: no worker runs on."""
    import multiprocessing

    from ioweather.services.jobs.ingest import run_pool

    results = []
    with pytest.raises(RuntimeError, match="store"):
        run_pool(_die_on_poison, [f"log{i}" for i in range(40)], 2, lambda it, res: results.append(it),
                 lambda it, why: None, per_task=4, started=lambda: _fail_with("no store"))
    assert results == []  # no result is handed on before `started` returned
    deadline = time.time() + 10
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


def _handed_on_record():
    """on_result, on_crash and started recording into one list, in the order they were called."""
    calls = []
    return (calls, lambda it, res: calls.append(("result", it)), lambda it, why: calls.append(("crash", it)),
            lambda: calls.append(("started", None)))


def _each_once_after_started(calls, items):
    assert calls[0] == ("started", None), calls[:3]  # `jobs ingest` opens its store in `started`
    handed = [it for kind, it in calls if kind != "started"]
    assert sorted(handed) == sorted(items), sorted(set(items) - set(handed))  # each exactly once


def test_a_pool_breaking_during_its_first_submits_loses_nothing(monkeypatch):
    """A submit to a pool that broke under it raises: that chunk is still run, and the re-runs of the chunks in
    flight are handed on after `started`. The break is made at the second submit so that it is not a race."""
    from concurrent.futures.process import BrokenProcessPool

    from ioweather.services.jobs import ingest

    real_pool, pools = ingest._pool, []

    def breaking_pool(*args):
        ex = real_pool(*args)
        pools.append(ex)
        if len(pools) == 1:
            submit, n = ex.submit, [0]

            def second_submit_breaks(*a):
                n[0] += 1
                if n[0] == 2:
                    raise BrokenProcessPool("broke under the test")
                return submit(*a)

            ex.submit = second_submit_breaks
        return ex

    monkeypatch.setattr(ingest, "_pool", breaking_pool)
    items = [f"log{i}" for i in range(16)]
    calls, on_result, on_crash, started = _handed_on_record()
    ingest.run_pool(_die_on_poison, items, 2, on_result, on_crash, per_task=4, started=started)
    _each_once_after_started(calls, items)
    assert all(kind != "crash" for kind, _ in calls)


def test_workers_that_cannot_start_fail_each_item_once_after_started():
    """Workers whose initializer exits break every pool, often during its first submits: each item is recorded
    as crashed exactly once, and only once `started` ran."""
    from ioweather.services.jobs.ingest import run_pool

    items = [f"log{i}" for i in range(10)]
    for _ in range(8):  # the break's timing varies: 3 of 6 runs used to hand on crashes before `started`
        calls, on_result, on_crash, started = _handed_on_record()
        run_pool(_die_on_poison, items, 2, on_result, on_crash, initializer=os._exit, initargs=(3,), started=started)
        _each_once_after_started(calls, items)
        assert {kind for kind, _ in calls[1:]} == {"crash"}


def test_tasks_get_smaller_at_the_end():
    """The last tasks are a quarter of the others, so the workers end close together; every item once, in order."""
    from ioweather.services.jobs.ingest import _chunks, _per_task

    for n, workers in ((1000, 2), (1000, 8), (65, 2), (20, 2), (3, 2), (1, 1)):
        per_task = _per_task(n, workers)
        chunks = _chunks(list(range(n)), per_task, workers)
        assert [i for c in chunks for i in c] == list(range(n))
        sizes = [len(c) for c in chunks]
        assert max(sizes) == min(per_task, n)
        tail = min(n, 2 * workers * per_task) if per_task > 1 else 0
        assert sum(s for s in sizes if s <= max(1, per_task // 4)) >= tail
    sizes = [len(c) for c in _chunks(list(range(1000)), 16, 2)]
    assert sizes[0] == 16 and sizes[-16:] == [4] * 16


#: In the ingest's subprocess: each worker reports, as the failure reason of its log, which of SQLAlchemy,
#: pandas and darshan it was forked with (its `_extract_in_pool` replaced before the command runs).
_PROBE = """
import sys
from ioweather.services.jobs import ingest

def probe(path):
    loaded = ",".join(m for m in ("ioweather.sources.darshan_cffi", "pandas", "sqlalchemy") if m in sys.modules)
    return ("failed", {"path": path, "path_hash": ingest.path_hash(path), "log_hash": None, "size_bytes": 0,
                       "mtime_ns": 0, "reason": loaded})

ingest._extract_in_pool = probe
from ioweather.cli import cli
cli(["jobs", "ingest", *sys.argv[1:], "--workers", "2", "-q"])
"""


def test_the_workers_are_forked_before_sqlalchemy_is_imported(home, tmp_path):
    """The parent forks its workers with the reader loaded and SQLAlchemy (and pandas) not: its ~0.3 s of SQLAlchemy and
    the store's opening run beside them (issue 40, wall time), for a new store and an existing one."""
    logs = sorted(p for p in all_real_logs() if p.stat().st_size < 4000)[:4]
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    for batch in (logs[:2], logs[2:]):  # the second into the store the first made
        r = subprocess.run([sys.executable, "-c", _PROBE, *map(str, batch)], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    store = open_store(Settings.resolve(str(home), None))
    from ioweather.store import jobs as jobs_store

    reasons = sorted(f["reason"] for f in jobs_store.failed(store))
    # the reader's libdarshan-util binding loaded, and no pandas (test_jobs_ingest_no_pandas.py)
    assert reasons == ["ioweather.sources.darshan_cffi"] * 4


def _all_done_last_first(monkeypatch):
    """`concurrent.futures.wait` as a loaded machine makes it: the parent looks only once every task in flight
    is done, and gets them in the reverse of the order submitted (a set's order is its futures' addresses')."""
    import concurrent.futures as cf

    real_wait = cf.wait

    def wait(fs, timeout=None, return_when=cf.ALL_COMPLETED):
        done, _ = real_wait(fs, timeout, cf.ALL_COMPLETED)
        return [f for f in reversed(list(fs)) if f in done], set()

    monkeypatch.setattr(cf, "wait", wait)


def test_one_worker_hands_results_on_in_order_when_several_are_done(monkeypatch):
    """With one worker the results come in the items' order even when the parent finds several tasks done at once
    (heavy load): the ingest keeps the first path of a content it finds twice, so the stored rows depended on load."""
    from ioweather.services.jobs.ingest import run_pool

    _all_done_last_first(monkeypatch)
    items = [f"log{i}" for i in range(10)]
    got = []
    run_pool(_die_on_poison, items, 1, lambda it, res: got.append(it), lambda it, why: None, per_task=2)
    assert got == items


def test_the_first_path_of_a_content_found_twice_is_stored_under_load(home, tmp_path, monkeypatch):
    """The benchmark's two dumps of one tree differed under load (bench_ingest_same_rows.py): a log and its copy
    read in two tasks done by the time the parent looked were handed on last first, and the copy's path stored."""
    from ioweather.services.jobs import ingest as ingest_mod
    from ioweather.store import jobs as js

    _all_done_last_first(monkeypatch)
    logs = sorted(TESTDATA_LOGS.glob("*.darshan"))[:8]
    d = tmp_path / "a"
    d.mkdir()
    for i, p in enumerate(logs):
        shutil.copy(p, d / f"{i:02d}-{p.name}")
    shutil.copy(logs[0], d / f"02a-copy-{logs[0].name}")  # in the second task (2 logs a task, 9 logs, one worker)
    settings = Settings.resolve(home)
    ingest_mod.ingest(settings, [str(d)], workers=1)
    rows = js.load_jobs(open_store(settings), ["path"])
    paths = {os.path.basename(p) for p in rows["path"]}
    assert f"00-{logs[0].name}" in paths and f"02a-copy-{logs[0].name}" not in paths, sorted(paths)


def test_killed_pools_leave_the_exit_handlers_registry():
    """A pool ended by `_kill_workers` (an ingest stopped, or its store refused: a symlinked lock) is out of
    CPython's exit handler's registry: that handler wakes each registered pool through a pipe its manager thread
    closes meanwhile, and printed "Exception ignored ... Bad file descriptor" after the command's one line.
    shutdown() forgets the thread, so it must be taken before."""
    import multiprocessing as mp
    from concurrent.futures import process as futures_process

    from ioweather.services.jobs.ingest import _kill_workers, _pool

    ex = _pool(mp.get_context("fork"), 1, None, ())
    assert ex.submit(int, "7").result(timeout=60) == 7
    thread = ex._executor_manager_thread
    assert thread in futures_process._threads_wakeups
    _kill_workers(ex)
    assert thread not in futures_process._threads_wakeups
    thread.join(timeout=30)
