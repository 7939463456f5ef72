"""`fsstats DIR --dask` on a real `distributed.LocalCluster` of worker processes: each first-level
directory walked by a task, merged into exactly the snapshot one local walk gives (totals,
every histogram, owners, first-level directories, errors), an unreadable first-level directory
recorded as one walk records it, hard links across first-level directories counted once (DIR is
then walked as one walk, with a note), and a worker killed mid-run costs a retry. (A task that
kills every worker it runs on ends in services.runtime.distributed.map_unordered's on_crash, which
raises here as in tests/test_distributed_workload.py.)"""

from __future__ import annotations

import json
import os
import time

import pytest

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed (pip install -e '.[test]')")

from dask.distributed import Client, LocalCluster  # noqa: E402
from dask_kill import kill_a_busy_worker  # noqa: E402

import fsstats_trees as kt  # noqa: E402

#: differ between any two walks of one tree
VOLATILE = {"snapshot_time", "walk_s", "entries_per_s", "threads"}
AGES = ("atime_age", "mtime_age", "ctime_age")


def comparable(doc: dict) -> dict:
    """The snapshot without what differs between two walks of an unchanged tree: the walk's time,
    and the ages' sums (measured from each walk's own now; their buckets, counts and bytes stay)."""
    out = {k: v for k, v in doc.items() if k not in VOLATILE}
    hists = json.loads(json.dumps(out["histograms"]))
    for name, h in hists.items():
        if any(a.split("_")[0] in name for a in AGES):
            for b in h.get("buckets", []):
                for k in [k for k in b if "sum" in k or "mean" in k or "days" in k]:
                    b.pop(k)
            for k in [k for k in h if k not in ("buckets",)]:
                h.pop(k)
    out["histograms"] = hists
    out["error_list"] = sorted(out["error_list"], key=lambda e: e["path"])
    return out


def snapshot(cli, home, path, *extra):
    r = cli("fsstats", os.fsdecode(path), "--json", "-q", *extra, home=home, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The known tree of the fsstats tests, its one cross-project hard link removed (kept within
    proj_a: counted once inside one part), plus an unreadable first-level directory."""
    base = tmp_path_factory.mktemp("fs")
    root = os.fsencode(base / "tree")
    os.makedirs(root)
    kt.build_known_tree(root, os.fsencode(base / "outside"))
    os.unlink(os.path.join(root, b"proj_b/hl_c"))
    for i in range(30):  # many small parts: more tasks than workers
        d = os.path.join(root, b"many", b"x%02d" % i) if i % 2 else os.path.join(root, b"part%02d" % i)
        os.makedirs(d, exist_ok=True)
        for j in range(i):
            with open(os.path.join(d, b"f%d" % j), "wb") as f:
                f.write(b"z" * (j * 37 + i))
    return root


def test_dask_snapshot_equals_one_walk(cli, home, tree, cluster):
    local, _ = snapshot(cli, home, tree)
    remote, err = snapshot(cli, home, tree, "--dask", cluster.scheduler_address)
    assert "walked here as one walk" not in err
    assert comparable(remote) == comparable(local)
    assert remote["files"] == local["files"] > 60 and remote["hardlinks_deduplicated"] == 1
    # an independent count: every regular file's inode once, from the test's own lstat
    inodes = {}
    for d, _, names in os.walk(tree):
        for n in names:
            st = os.lstat(os.path.join(d, n))
            if os.path.isfile(os.path.join(d, n)) and not os.path.islink(os.path.join(d, n)):
                inodes[st.st_dev, st.st_ino] = st.st_size
    assert remote["files"] == len(inodes) and remote["bytes"] == sum(inodes.values())


@pytest.mark.parametrize("exclude", [["sub"], ["/proj_b"], ["proj_a/sub"], ["*/deeper", "/part0*"], ["many/x1*"]])
def test_excludes_mean_what_they_mean_in_one_walk(cli, home, tree, cluster, exclude):
    args = [a for p in exclude for a in ("--exclude", p)]
    local, _ = snapshot(cli, home, tree, *args)
    remote, _ = snapshot(cli, home, tree, *args, "--dask", cluster.scheduler_address)
    assert comparable(remote) == comparable(local)
    assert remote["excluded"] > 0


def _both_as_nobody(root: bytes):
    """(one walk's snapshot, the merged parts' snapshot) of `root`, each part walked as a task would."""
    import time

    from ioweather.services.content import fsstats
    from ioweather.sources import tree_walk_parts as parts
    from ioweather.sources.tree_walk import walk
    from ioweather.stats.fsstats import snapshot_document

    def child():
        one = snapshot_document(walk(root, threads=2), host="h", version="v")
        plan = parts.plan(root, cross_mounts=False, exclude=[])
        snap_ns = time.time_ns()
        got = {n: fsstats.walk_part(n, root=plan.root, snap_ns=snap_ns, threads=2, cross_mounts=False, patterns=[])
               for n, _ in plan.parts}
        merged, notes = fsstats.merge_walks(plan, got, snap_ns, threads=2, cross_mounts=False, exclude=[],
                                            t0=time.perf_counter())
        return 0, json.dumps([one, snapshot_document(merged, host="h", version="v"), notes]).encode()

    code, payload = kt.run_as_nobody(child)
    assert code == 0, payload
    return json.loads(payload)


def test_unreadable_first_level_directory_is_recorded_as_one_walk_does():
    """Root reads every directory: the walks run as nobody, in a forked child (the merge that the
    Dask path runs, with each part walked by the task's own function)."""
    import shutil
    from pathlib import Path

    base = Path(os.fsdecode(kt.world_readable_tmp("ioweather-dask-fsstats-")))
    try:
        for d in ("open/a", "closed/b", "other"):
            (base / d).mkdir(parents=True)
            (base / d / "f").write_bytes(b"1234")
        for d in (base / "open", base / "open" / "a", base / "other", base / "closed"):
            os.chmod(d, 0o755)
        os.chmod(base / "closed", 0o000)
        one, merged, notes = _both_as_nobody(os.fsencode(base))
    finally:
        os.chmod(base / "closed", 0o755)
        shutil.rmtree(base)
    assert notes == []
    assert comparable(merged) == comparable(one)
    assert merged["errors"] == 1 and merged["error_list"][0]["op"] == "open"
    assert merged["error_list"][0]["path"].endswith("/closed") and merged["files"] == 2


def test_hard_links_across_parts_are_counted_once(cli, home, tmp_path, cluster):
    root = kt.build_shared_links_tree(os.fsencode(tmp_path / "shared"))
    local, _ = snapshot(cli, home, root)
    remote, err = snapshot(cli, home, root, "--dask", cluster.scheduler_address)
    assert "walked here as one walk, so that each inode counts once" in err
    assert comparable(remote) == comparable(local)
    assert remote["hardlinks_deduplicated"] == local["hardlinks_deduplicated"] > 0


def test_killed_worker_costs_a_retry_not_a_directory(cli, home, tmp_path):
    root = tmp_path / "big"
    for i in range(24):
        for j in range(40):
            d = root / f"p{i:02d}" / f"d{j:02d}"
            d.mkdir(parents=True)
            for k in range(25):
                (d / f"f{k}").write_bytes(b"x" * (k + i))
    local, _ = snapshot(cli, home, root)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as watcher:
        t, killed = kill_a_busy_worker(watcher, poll_s=0.01)
        remote, _ = snapshot(cli, home, root, "--dask", c.scheduler_address)
        t.join()
    assert killed and killed["tasks"] >= 1
    assert comparable(remote) == comparable(local)
    assert remote["files"] == 24 * 40 * 25
