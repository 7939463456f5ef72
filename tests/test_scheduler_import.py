"""Scheduler jobs from files (saved sacct output, pytokio's JSON cache, the NERSC jobs database),
the store functions on SQLite, PostgreSQL and MariaDB, sacct missing or failing, Darshan links.
The real Slurm cluster's tests are in test_slurm_import.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.store import Store, open_store
from ioweather.store import jobs as js
from ioweather.store import scheduler as sched

LA = ZoneInfo("America/Los_Angeles")
BERLIN = "Europe/Berlin"


def _local_ns(text: str, zone: ZoneInfo) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=zone).timestamp()) * 10**9


def _stored(home) -> dict[tuple[str, str], dict]:
    con = sqlite3.connect(home / "ioweather.sqlite")
    con.row_factory = sqlite3.Row
    try:
        return {(r["cluster"], r["jobid"]): dict(r) for r in con.execute("SELECT * FROM sched_jobs")}
    finally:
        con.close()


def _one_error_line(p) -> str:
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


# -- saved files ---------------------------------------------------------------------------------
def test_pytokio_slurm_cache_matches_a_direct_read(cli, home, testdata):
    path = testdata / "pytokio" / "sample.slurm"
    p = cli("import", "slurm", str(path), "--timezone", "America/Los_Angeles", "--json", home=home, check=True)
    out = json.loads(p.stdout)
    raw = json.loads(path.read_text())
    allocations = {k: v for k, v in raw.items() if "." not in k}
    assert out["jobs"] == len(allocations) == 1 and out["running"] == 0 and out["replaced"] == 0
    assert out["timezone"] == "America/Los_Angeles" and out["cluster"] == ""
    assert f"{len(raw) - 1} job steps skipped (only allocations are stored)" in out["notes"]
    stored = _stored(home)
    assert set(stored) == {("", k) for k in allocations}
    for jobid, rec in allocations.items():
        row = stored[("", jobid)]
        assert row["start_ns"] == _local_ns(rec["start"], LA) and row["end_ns"] == _local_ns(rec["end"], LA)
        assert row["nnodes"] == len(set(rec["nodelist"])) == 128
        assert row["nodelist"] == "nid[05301-05428]"  # the 128 names are exactly this contiguous range
        assert sorted(rec["nodelist"]) == [f"nid{i:05d}" for i in range(5301, 5429)]
        assert row["source"] == f"sacct-file:{path}"
    again = json.loads(cli("import", "slurm", str(path), "--timezone", "America/Los_Angeles", "--json",
                           home=home, check=True).stdout)
    assert again["replaced"] == 1 and len(_stored(home)) == 1


SACCT_FILE = """JobID|JobIDRaw|Cluster|JobName|User|Account|Partition|Submit|Start|End|Elapsed|NNodes|AllocCPUS|NodeList|State|ExitCode|ReqMem
100|100|alpha|ior|alice|proj1|debug|2026-03-29T01:00:00|2026-03-29T01:30:00|2026-03-29T03:10:00|00:40:00|4|128|nid[00001-00004]|COMPLETED|0:0|4G
101|101|alpha|sim|bob|proj2|debug|2026-03-29T01:00:00|2026-03-29T04:00:00|Unknown|01:00:00|2|64|nid[00010,00012]|RUNNING|0:0|4G
102|102|alpha|bad|bob|proj2|debug|2026-03-29T01:00:00|2026-03-29T04:00:00|2026-03-29T04:00:05|00:00:05|1|32|nid00020|CANCELLED by 1234|0:15|4G
103_7|103|alpha|arr|carol||debug|2026-03-29T01:00:00|2026-03-29T05:00:00|2026-03-29T05:01:00|00:01:00|1||nid00021|FAILED|1:0|
103_7.batch|103|alpha|batch|||||2026-03-29T05:00:00|2026-03-29T05:01:00|00:01:00|1|32|nid00021|FAILED|1:0|
104|104|alpha|wait|dave|proj1|debug|2026-03-29T01:00:00|Unknown|Unknown|00:00:00|1|32|None assigned|PENDING|0:0|4G
"""


def test_parsable2_file_field_by_field(cli, home, tmp_path):
    """Running (End=Unknown), 'CANCELLED by N', array tasks, steps, pending, unknown columns, and a
    zone with a DST change inside the jobs (Berlin, 2026-03-29 02:00 -> 03:00)."""
    path = tmp_path / "sacct.txt"
    path.write_text(SACCT_FILE)
    p = cli("import", "slurm", str(path), "--timezone", BERLIN, "--json", home=home, check=True)
    out = json.loads(p.stdout)
    assert (out["jobs"], out["running"], out["replaced"], out["cluster"], out["timezone"]) == (4, 1, 0, "alpha", BERLIN)
    assert "ignored columns: Submit, ReqMem" in out["notes"]
    assert "1 job steps skipped (only allocations are stored)" in out["notes"]
    assert "1 jobs skipped that never started (no Start time)" in out["notes"]
    z = ZoneInfo(BERLIN)
    stored = _stored(home)
    assert set(stored) == {("alpha", j) for j in ("100", "101", "102", "103_7")}
    ior = stored[("alpha", "100")]
    # 01:30 CET to 03:10 CEST is 40 minutes, as sacct's Elapsed says
    assert ior["end_ns"] - ior["start_ns"] == 40 * 60 * 10**9
    assert {k: ior[k] for k in ("user", "account", "name", "partition", "nnodes", "ncpus", "nodelist", "state",
                                "exit_code")} == {"user": "alice", "account": "proj1", "name": "ior",
                                                  "partition": "debug", "nnodes": 4, "ncpus": 128,
                                                  "nodelist": "nid[00001-00004]", "state": "COMPLETED",
                                                  "exit_code": "0:0"}
    assert ior["start_ns"] == _local_ns("2026-03-29T01:30:00", z)
    assert stored[("alpha", "101")]["end_ns"] is None
    assert stored[("alpha", "102")]["state"] == "CANCELLED" and stored[("alpha", "102")]["exit_code"] == "0:15"
    arr = stored[("alpha", "103_7")]
    assert arr["account"] is None and arr["ncpus"] is None and arr["state"] == "FAILED"
    # the human table says which zone the times were read in
    p = cli("import", "slurm", str(path), "--timezone", BERLIN, home=home, check=True)
    assert f"zone {BERLIN}" in p.stdout and "import: ignored columns: Submit, ReqMem" in p.stderr
    assert len(_stored(home)) == 4


def test_since_until_keep_jobs_of_the_window(cli, home, tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text(SACCT_FILE)
    # UTC window 00:50-02:05 on 2026-03-29: job 103_7 (03:00 UTC) is out; 101 runs on (no end)
    out = json.loads(cli("import", "slurm", str(path), "--timezone", BERLIN, "--since", "2026-03-29T00:50:00Z",
                         "--until", "2026-03-29T02:05:00Z", "--json", home=home, check=True).stdout)
    assert sorted(j for _, j in _stored(home)) == ["100", "101", "102"]
    assert out["jobs"] == 3 and "1 jobs outside --since/--until left out" in out["notes"]


def test_nersc_jobsdb_matches_a_direct_query(cli, home, testdata):
    path = testdata / "pytokio" / "sample_nersc_jobsdb.sqlite3"
    out = json.loads(cli("import", "nersc-jobsdb", str(path), "--json", home=home, check=True).stdout)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    ref = con.execute("SELECT stepid, hostname, start, completion, numnodes FROM summary").fetchall()
    con.close()
    assert out["jobs"] == len(ref) == 485 and out["cluster"] == "edison" and out["running"] == 0
    stored = _stored(home)
    assert len(stored) == len(ref)
    for stepid, host, start, completion, nnodes in ref:
        row = stored[(host, stepid.removesuffix("." + host))]
        assert (row["start_ns"], row["end_ns"], row["nnodes"]) == (start * 10**9, completion * 10**9, nnodes)
    again = json.loads(cli("import", "nersc-jobsdb", str(path), "--json", home=home, check=True).stdout)
    assert again["replaced"] == 485 and len(_stored(home)) == 485


@pytest.mark.parametrize("content, words", [
    ("hello world\n", "not sacct --parsable2 output"),
    ("", "empty"),
    ('{"1": 5}', "not pytokio's Slurm cache"),
    ('{"1": ', "not sacct output nor pytokio Slurm JSON"),
])
def test_files_that_are_not_sacct_output(cli, home, tmp_path, content, words):
    path = tmp_path / "x.txt"
    path.write_text(content)
    line = _one_error_line(cli("import", "slurm", str(path), home=home))
    assert words in line
    assert not (home / "ioweather.sqlite").exists() or not _stored(home)


def test_bad_inputs_are_one_line(cli, home, tmp_path):
    assert "cannot read" in _one_error_line(cli("import", "slurm", str(tmp_path / "none.txt"), home=home))
    assert "unknown time zone" in _one_error_line(cli("import", "slurm", str(tmp_path / "j.txt"), "--timezone", "Mars/Base",
                                                      home=home))
    notdb = tmp_path / "not.sqlite3"
    notdb.write_text("plain text, not SQLite")
    assert "not a database" in _one_error_line(cli("import", "nersc-jobsdb", str(notdb), home=home))
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.close()
    assert "no table summary" in _one_error_line(cli("import", "nersc-jobsdb", str(empty), home=home))


def test_sacct_missing_is_one_line(cli, home, tmp_path):
    p = cli("import", "slurm", "--since", "1h", home=home, env={"PATH": str(tmp_path)})
    assert _one_error_line(p) == ("ioweather: error: sacct not found on PATH: run on a Slurm login node, or import "
                                  "a saved `sacct --parsable2` file")


def test_sacct_failing_is_one_line(cli, home, tmp_path):
    fake = tmp_path / "sacct"
    fake.write_text("#!/bin/sh\necho 'sacct: error: Problem talking to the database: Connection refused' >&2\nexit 1\n")
    fake.chmod(0o755)
    p = cli("import", "slurm", home=home, env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert _one_error_line(p) == ("ioweather: error: sacct failed (exit 1): error: Problem talking to the database: "
                                  "Connection refused")


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a zombie no longer runs
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_a_live_import_as_every_import_kind(home, tmp_path, sig):
    """sacct hangs: SIGTERM (a scheduler's time limit) stops the import as Ctrl-C does, in one line,
    with sacct stopped and nothing stored (before, SIGTERM killed ioweather and left sacct running)."""
    pid_file = tmp_path / "sacct.pid"
    fake = tmp_path / "sacct"
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}\nexec sleep 600\n")
    fake.chmod(0o755)
    env = {**os.environ, "IOWEATHER_HOME": str(home), "PATH": f"{tmp_path}:/usr/bin:/bin"}
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "import", "slurm"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() is not None else ""
        time.sleep(0.05)
    sacct = int(pid_file.read_text())
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (130, "ioweather: interrupted\n")
    deadline = time.monotonic() + 30
    while _running(sacct):
        assert time.monotonic() < deadline, "sacct outlived the interrupted import"
        time.sleep(0.05)
    assert not (home / "ioweather.sqlite").exists() or not _stored(home)


def test_telemetry_import_still_answers(cli, home, tmp_path):
    """The telemetry `import KIND ...` behind the same word is untouched by the scheduler kinds."""
    p = cli("import", "--help", check=True)
    assert "mmperfmon" in p.stdout and "import slurm" in p.stdout and "nersc-jobsdb" in p.stdout
    assert "CSV file" in _one_error_line(cli("import", "csv", str(tmp_path / "none.csv"), "--fs", "x", home=home))


# -- store functions on every database -------------------------------------------------------------
def _row(cluster, jobid, start_s, end_s, name="job", **kw):
    return {"cluster": cluster, "jobid": jobid, "user": "u", "account": "a", "name": name, "partition": "p",
            "start_ns": start_s * 10**9, "end_ns": None if end_s is None else end_s * 10**9, "nnodes": 1,
            "ncpus": 2, "nodelist": "n1", "state": "COMPLETED", "exit_code": "0:0", **kw}


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    else:
        url = request.getfixturevalue("pg_url" if request.param == "postgresql" else "mariadb_url")
    s = Store(url)
    yield s
    s.dispose()


def test_store_replace_get_overlap(store):
    rows = [_row("a", "1", 100, 200), _row("a", "2", 150, None, state="RUNNING"), _row("b", "1", 300, 400),
            _row("a", "3", 500, 600)]
    assert sched.replace_jobs(store, rows, "test") == 0
    assert sched.count(store) == 4
    assert sched.replace_jobs(store, [_row("a", "1", 100, 250), _row("a", "9", 1, 2)], "again") == 1
    assert sched.count(store) == 5
    job = sched.get_job(store, "1", "a")
    assert job["end_ns"] == 250 * 10**9 and job["source"] == "again"
    with pytest.raises(UserError, match=r"job 1 exists on several clusters \('a', 'b'\)"):
        sched.get_job(store, "1")
    assert sched.get_job(store, "3")["cluster"] == "a" and sched.get_job(store, "77") is None
    ids = lambda since, until, **kw: [(j["cluster"], j["jobid"]) for j in sched.jobs_overlapping(
        store, since * 10**9, until * 10**9, **kw)]
    assert ids(210, 260) == [("a", "1"), ("a", "2")]  # job 2 has no end: running until now
    assert ids(250, 300) == [("a", "2")]  # end is exclusive, so is until
    assert ids(0, 3000, cluster="b") == [("b", "1")]
    far_future = 4_000_000_000  # year 2096: a running job is not running then yet
    assert ids(far_future, far_future + 10) == []


# -- Darshan links ----------------------------------------------------------------------------------
def test_darshan_jobs_link_by_id_and_by_time_and_exe(cli, home, tmp_path, testdata):
    log = testdata / "darshan" / "mpi-io-test-x86_64-3.0.0.darshan"
    cli("jobs", "ingest", str(log), "--workers", "1", home=home, check=True)
    store = open_store(Settings.resolve(str(home), None))
    (ingested,) = js.load_jobs(store, ["log_hash", "jobid", "exe", "start_ns", "end_ns"]).to_dict("records")
    assert ingested["jobid"] == 2112
    # two logs without a job id, stored through the Darshan store's own writer
    nojob = [{**ingested, "log_hash": h * 64, "path": f"/x/{h}.darshan", "path_hash": js.path_hash(f"/x/{h}"),
              "size_bytes": 1, "mtime_ns": 1, "jobid": jobid, "exe": exe, "start_ns": start, "end_ns": start + 10**10}
             for h, jobid, exe, start in (("a", 0, "/usr/bin/ior -a POSIX -b 1g", 1_700_000_000 * 10**9),
                                          ("b", None, "/opt/other", 1_700_000_000 * 10**9))]
    js.write_batch(store, store.parquet_dir, nojob, [], [])
    store.dispose()

    utc = ZoneInfo("UTC")
    def t(ns):
        return datetime.fromtimestamp(ns / 1e9, utc).strftime("%Y-%m-%dT%H:%M:%S")
    s, e = ingested["start_ns"], ingested["end_ns"]
    path = tmp_path / "jobs.txt"
    path.write_text("\n".join([
        "JobID|Cluster|JobName|Start|End|NNodes|State",
        f"2112|here|mpi-io-test|{t(s - 30 * 10**9)}|{t(e + 60 * 10**9)}|1|COMPLETED",
        f"2112|there|mpi-io-test|{t(s - 86400 * 10**9)}|{t(s - 86000 * 10**9)}|1|COMPLETED",  # reused id, other day
        f"5|here|ior|{t(1_700_000_000 * 10**9 - 3600 * 10**9)}|Unknown|1|RUNNING",
        f"6|here|ior|{t(1_700_000_000 * 10**9 - 60 * 10**9)}|{t(1_700_000_000 * 10**9 + 60 * 10**9)}|1|COMPLETED",
        f"7|here|ior|{t(1_700_000_000 * 10**9 + 3600 * 10**9)}|Unknown|1|RUNNING",  # starts after the log
        ""]))
    cli("import", "slurm", str(path), "--timezone", "UTC", home=home, check=True)

    store = open_store(Settings.resolve(str(home), None))
    links = {x["log_hash"]: x for x in sched.link_darshan(store)}
    assert len(links) == 3
    by_id = links[ingested["log_hash"]]
    assert (by_id["how"], by_id["cluster"], by_id["jobid"], by_id["candidates"]) == ("jobid", "here", "2112", 1)
    by_exe = links["a" * 64]  # jobs 5 and 6 both contain the log; the tighter (6) wins
    assert (by_exe["how"], by_exe["cluster"], by_exe["jobid"], by_exe["candidates"]) == ("time+exe", "here", "6", 2)
    unlinked = links["b" * 64]
    assert unlinked["how"] is None and unlinked["reason"] == ("no job id; no scheduler job named 'other' ran over "
                                                              "the log's times")
    assert sched.scheduler_job_for_darshan(store, ingested["log_hash"])["cluster"] == "here"
    assert sched.scheduler_job_for_darshan(store, "b" * 64) is None
    store.dispose()


def test_link_rule_edge_cases():
    now = 10**12 * 10**9
    log = {"log_hash": "h", "jobid": 42, "exe": "x", "start_ns": 1000 * 10**9, "end_ns": 1100 * 10**9}
    other_time = {"cluster": "c", "jobid": "42", "start_ns": 5000 * 10**9, "end_ns": 6000 * 10**9}
    res = sched.match_darshan(log, [other_time], now)
    assert res["how"] is None and res["reason"] == "job id 42 is known only at other times (a reused id)"
    assert sched.match_darshan(log, [], now)["reason"] == "job id 42 not in the scheduler data"
    # clock skew up to LINK_SLACK_NS still links; a job still running counts as running until now
    skewed = {"cluster": "c", "jobid": "42", "start_ns": 1000 * 10**9 + sched.LINK_SLACK_NS, "end_ns": None}
    assert sched.match_darshan(log, [skewed], now)["how"] == "jobid"
    late = {**skewed, "start_ns": 1100 * 10**9 + sched.LINK_SLACK_NS + 1}
    assert sched.match_darshan(log, [late], now)["how"] is None
