"""`ioweather import slurm` against a real one-node Slurm cluster (tests/slurm_cluster.py): real jobs
submitted with sbatch, one cancelled, one still running; the stored rows are compared field by
field with sacct's own output, parsed here independently."""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import UTC, datetime

import pytest
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

FIELDS = ["JobID", "Cluster", "User", "Account", "JobName", "Partition", "Start", "End", "NNodes", "NCPUS",
          "NodeList", "State", "ExitCode"]
#: The import reads sacct's local times in this zone; the reference below asks sacct for UTC.
ZONE = "America/New_York"


@pytest.fixture(scope="module")
def jobs(slurm_cluster):
    """Two finished jobs, one cancelled while running, one still running; the time before submitting."""
    c = slurm_cluster
    before = datetime.now(UTC).replace(microsecond=0)
    time.sleep(1)  # sacct's times are whole seconds
    done = [c.sbatch("--wrap", "sleep 2"), c.sbatch("--job-name=ior", "--wrap", "sleep 1")]
    running = c.sbatch("--job-name=long", "--wrap", "sleep 600")
    cancelled = c.sbatch("--wrap", "sleep 600")
    c.wait_for_sacct([cancelled], states={"RUNNING"})
    c.run("scancel", cancelled)
    c.wait_for_sacct(done, states={"COMPLETED"})
    c.wait_for_sacct([cancelled], states={"CANCELLED"})
    c.wait_for_sacct([running], states={"RUNNING"})
    return {"since": before, "done": done, "running": running, "cancelled": cancelled}


def _reference(cluster, since: datetime) -> dict[str, dict]:
    """sacct's own view, in UTC, parsed without ioweather's code."""
    out = cluster.run("sacct", "--parsable2", "--noheader", "-X", "--allusers",
                      f"--starttime={since.strftime('%Y-%m-%dT%H:%M:%S')}", f"--format={','.join(FIELDS)}").stdout
    rows = {}
    for line in out.splitlines():
        rec = dict(zip(FIELDS, line.split("|")))
        ns = (lambda s: None if s == "Unknown" else
              int(datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp()) * 10**9)
        rows[rec["JobID"]] = {
            "cluster": rec["Cluster"], "jobid": rec["JobID"], "user": rec["User"], "account": rec["Account"] or None,
            "name": rec["JobName"], "partition": rec["Partition"], "start_ns": ns(rec["Start"]),
            "end_ns": ns(rec["End"]), "nnodes": int(rec["NNodes"]), "ncpus": int(rec["NCPUS"]),
            "nodelist": rec["NodeList"], "state": rec["State"].split()[0], "exit_code": rec["ExitCode"]}
    return rows


def _stored(home) -> dict[str, dict]:
    con = sqlite3.connect(home / "ioweather.sqlite")
    con.row_factory = sqlite3.Row
    try:
        return {r["jobid"]: dict(r) for r in con.execute("SELECT * FROM sched_jobs")}
    finally:
        con.close()


def _import(cli, cluster, home, since, *extra, check=True, env=None):
    return cli("import", "slurm", "--since", since.strftime("%Y-%m-%dT%H:%M:%SZ"), "--timezone", ZONE, "--json",
               *extra, home=home, env={**cluster.env, "TZ": "UTC", **(env or {})}, check=check)


def test_import_matches_sacct_field_by_field(cli, home, slurm_cluster, jobs):
    out = json.loads(_import(cli, slurm_cluster, home, jobs["since"]).stdout)
    ref = _reference(slurm_cluster, jobs["since"])
    mine = {jobs["running"], jobs["cancelled"], *jobs["done"]}
    assert mine <= ref.keys()
    stored = _stored(home)
    assert stored.keys() == ref.keys()
    assert out["jobs"] == len(ref) and out["cluster"] == slurm_cluster.name and out["timezone"] == ZONE
    assert out["running"] == sum(r["end_ns"] is None for r in ref.values()) >= 1
    for jobid, want in ref.items():
        got = {k: stored[jobid][k] for k in want}
        assert got == want, jobid
        assert stored[jobid]["source"] == "sacct"
    assert stored[jobs["running"]]["end_ns"] is None and stored[jobs["running"]]["state"] == "RUNNING"
    assert stored[jobs["cancelled"]]["state"] == "CANCELLED" and stored[jobs["cancelled"]]["end_ns"] is not None
    assert stored[jobs["done"][1]]["name"] == "ior" and stored[jobs["done"][0]]["exit_code"] == "0:0"
    assert all(r["nodelist"] == slurm_cluster.node and r["nnodes"] == 1 for r in stored.values())


def test_reimport_replaces(cli, home, slurm_cluster, jobs):
    first = json.loads(_import(cli, slurm_cluster, home, jobs["since"]).stdout)
    again = json.loads(_import(cli, slurm_cluster, home, jobs["since"]).stdout)
    assert again["replaced"] == again["jobs"] == first["jobs"]
    assert len(_stored(home)) == first["jobs"]


def test_until_before_the_jobs_imports_none(cli, home, slurm_cluster, jobs):
    """The window is passed on to sacct in the import's zone: ending before the jobs, it lists none of them."""
    since = jobs["since"].replace(year=jobs["since"].year - 1)
    assert {jobs["running"], *jobs["done"]} <= _reference(slurm_cluster, since).keys()
    until = jobs["since"].strftime("%Y-%m-%dT%H:%M:%SZ")
    before = {j for j, r in _reference(slurm_cluster, since).items()
              if r["start_ns"] is not None and r["start_ns"] < int(jobs["since"].timestamp() * 1e9)}
    out = json.loads(_import(cli, slurm_cluster, home, since, "--until", until).stdout)
    # The cluster is shared by the session: jobs other tests ran before this module's may be listed.
    assert out["jobs"] == len(before)
    stored = _stored(home).keys() if (home / "ioweather.sqlite").exists() else set()
    assert not stored & {jobs["running"], jobs["cancelled"], *jobs["done"]}
    if not before:
        assert out["notes"] == ["no jobs to import"]


def test_sacct_failing_against_a_configuration_without_its_cluster_name(cli, home, slurm_cluster, jobs, tmp_path):
    """The real sacct refuses the cluster's own configuration less its ClusterName at once, exit 1; a
    SLURM_CONF naming no file would do the same after Slurm's 60 s of retries (it waits for a slow mount)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("".join(line for line in slurm_cluster.conf.read_text().splitlines(keepends=True)
                            if not line.startswith("ClusterName=")))
    p = _import(cli, slurm_cluster, home, jobs["since"], check=False, env={"SLURM_CONF": str(conf)})
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert lines == ["ioweather: error: sacct failed (exit 1): error: ClusterName needs to be specified"], p.stderr
    assert not (home / "ioweather.sqlite").exists() or not _stored(home)
