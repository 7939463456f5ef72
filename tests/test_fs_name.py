"""One name per file system (issue 28 item 4): config.fs_name against crafted mount tables of Lustre,
NFS, GPFS and local disks, against this machine's own table, the name `collect` gives its datasets, and
end to end: a probe, a bench run and a collect on one directory name one file system alike."""

from __future__ import annotations

import json
import shutil
import socket

import pytest

from ioweather.config import Settings, fs_name, parse_fs_map
from ioweather.sources.mounts import mount_entry, parse_mounts, read_mounts
from ioweather.sources.telemetry.base import lustre_fsname, short_hostname
from ioweather.store import telemetry_layout as layout
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

# A compute node's table: Lustre over two MGS NIDs, a Lustre subdirectory mount, NFS, GPFS, its own disks.
TABLE = """\
overlay / overlay rw,relatime,lowerdir=/l,upperdir=/u,workdir=/w 0 0
tmpfs /tmp tmpfs rw 0 0
/dev/nvme0n1p1 /local xfs rw 0 0
10.0.0.1@o2ib:10.0.0.2@o2ib:/lquake /lus/theta-fs0 lustre rw,flock 0 0
mgs1@tcp:/lquake/projects /projects lustre rw 0 0
nfs1.site.org:/export/home /home nfs4 rw,vers=4.2 0 0
gpfs1 /gpfs/fs1 gpfs rw 0 0
weird /odd lustre rw 0 0
"""
HOST = "nid00042.cluster.site.org"


def name_of(path: str, fs_map=()) -> str:
    m = mount_entry(path, parse_mounts(TABLE))
    return fs_name(m.point, m.fs_type, m.source, list(fs_map), HOST)


def test_each_kind_of_mount_gets_its_name():
    assert name_of("/lus/theta-fs0/user/run") == "lquake"  # the fsname, not the mount's last part
    assert name_of("/projects/a") == "lquake"  # a subdirectory of one Lustre file system: the same name
    assert name_of("/home/alice") == "home"  # NFS: the mount's last part, not the server's export
    assert name_of("/gpfs/fs1/x") == "fs1"
    assert name_of("/odd/x") == "odd"  # a Lustre source naming no fsname: the mount's last part
    for local in ("/", "/usr/lib", "/tmp/x", "/local/scratch"):
        assert name_of(local) == "nid00042", local  # the node's own disks: its short name


def test_the_fs_map_wins_by_its_longest_prefix():
    fs_map = parse_fs_map("/lus theta\n/lus/theta-fs0 theta0\n/home homes\n", "test")
    assert name_of("/lus/theta-fs0/x", fs_map) == "theta0"
    assert name_of("/projects/x", fs_map) == "lquake"  # no entry for /projects
    assert name_of("/home/alice", fs_map) == "homes"
    assert name_of("/", parse_fs_map("/homes h", "test")) == "nid00042"  # /home is not under /homes


def test_a_lustre_mount_is_named_as_its_servers_telemetry():
    """`collect` on an OSS files lquake-OST0003's rows under lquake (sources/telemetry/base.lustre_fsname);
    a client's mount of that file system gets the same name."""
    assert lustre_fsname("lquake-OST0003") == name_of("/lus/theta-fs0") == lustre_fsname("lquake-MDT0000")


def test_source_and_escapes_as_the_kernel_writes_them():
    mounts = parse_mounts("/dev/vda / ext4 rw 0 0\nserver:/a\\040b /mnt/my\\040fs nfs rw 0 0\n")
    assert mounts[1] == ("/mnt/my fs", "nfs", "server:/a b")
    assert fs_name(*mounts[1], [], HOST) == "my fs"


def test_this_machines_table_agrees_with_mountinfo_and_names_local_disks_as_collect_does(tmp_path):
    """The sources, types and points read from /proc/self/mounts are /proc/self/mountinfo's (read here
    independently: fields after ' - ' are type and source); the directory the tests write in is named
    as `collect` names this host's dataset when it is on the node's own disk."""
    mounts = read_mounts()
    if not mounts:
        pytest.skip("no /proc/self/mounts here")
    info = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            head, _, tail = line.partition(" - ")
            point = parse_mounts(f"x {head.split()[4]} x")[0].point  # the same octal escapes
            fs_type, source = tail.split()[:2]
            info.append((point, fs_type, parse_mounts(f"{source} / x")[0].source))
    assert sorted(mounts) == sorted(info)
    m = mount_entry(tmp_path)
    name = fs_name(m.point, m.fs_type, m.source, [], socket.gethostname())
    if m.point == "/" or m.fs_type in ("ext4", "xfs", "tmpfs", "overlay", "btrfs"):
        assert name == short_hostname()
    else:
        assert name not in ("", "root")


def test_probe_bench_and_collect_name_one_directory_alike(tmp_path, home, cli):
    """The acceptance test of the issue: `probe targets --json`, `bench summary --json` and the datasets
    `collect` wrote name the file system of one directory of this machine the same way."""
    if shutil.which("fio") is None:
        pytest.skip("fio not installed (scripts/install-system-deps.sh)")
    d = tmp_path / "on-this-fs"
    d.mkdir()
    m = mount_entry(d)
    want = fs_name(m.point, m.fs_type, m.source, [], socket.gethostname())
    cli("probe", "init", str(d / "probe"), "--file-size", "2MiB", "--pool", "4", home=home, check=True)
    cli("probe", "run", str(d / "probe"), "--duration", "1.5", "--interval", "0.5", "--block", "64k", home=home,
        check=True)
    cli("bench", "run", "fpp-write", "--dir", str(d), "--size", "256KiB", "--tasks", "1", home=home, check=True)
    collected = json.loads(cli("collect", "--sources", "host", "--interval", "0.5s", "--duration", "1.2s", "--json",
                               home=home, check=True).stdout)
    [target] = json.loads(cli("probe", "targets", "--json", home=home, check=True).stdout)
    [series] = json.loads(cli("bench", "summary", "--json", home=home, check=True).stdout)
    assert target["target"] == f"{socket.gethostname()}:{m.point}"  # the label stays HOST:MOUNT
    assert target["fs"] == series["fs"] == want
    if m.point == "/" or m.fs_type in ("ext4", "xfs", "tmpfs", "overlay", "btrfs"):  # the node's own disk
        assert list(collected["datasets"]) == layout.list_fs(Settings(home=home)) == [want]


def test_why_matches_probes_by_the_file_systems_name(home):
    """A probe of the job's file system from another mount point (a login node's /lus/scratch for the
    job's /lus/theta-fs0) is found by the name its run recorded; a label that merely equals the dataset
    no longer is (it said nothing of the file system); a directory under the job's mount still is."""
    from ioweather.services.answers.why import _Probes
    from ioweather.store import open_store
    from ioweather.store import probe as probe_store

    store = open_store(Settings.resolve(home))
    for target, directory, fs in [("login1:/lus/scratch", "/lus/scratch/u/probe", "theta"),
                                  ("theta", "/home/u/probe", "login1"), ("node7:/lus/theta-fs0", "/lus/theta-fs0/p", None)]:
        probe_store.start_run(store, probe_store.RunInfo(
            target=target, directory=directory, interval_s=1, block_bytes=1, file_bytes=1, pool_files=1,
            small_bytes=1, direct=False, fsync=False, seed=0, timeout_s=60, file_exceeds_memory=False, host="h", fs=fs))
    probes = _Probes(store)
    assert probes.on(None, "theta") == ["login1:/lus/scratch"]
    assert sorted(probes.on("/lus/theta-fs0", "theta")) == ["login1:/lus/scratch", "node7:/lus/theta-fs0"]
    assert probes.on("/gpfs", "alpine") == []
    store.dispose()


def test_a_jobs_node_local_disk_is_its_nodes_dataset(tmp_path):
    """issue 39: a job on `/` (ext4) is on the disk `collect --sources diskstats` files as the host's dataset;
    the log's node wins over the node asking, a shared mount is never mapped so, and no telemetry maps nothing."""
    from ioweather.config import MountBytes
    from ioweather.services.runtime.fs_names import job_fs

    for host in ("nid7", socket.gethostname().split(".")[0]):
        (tmp_path / "parquet" / "telemetry" / f"fs={host}").mkdir(parents=True)
    parquet = tmp_path / "parquet"
    root = [MountBytes("/", "ext4", 10)]
    here = socket.gethostname().split(".")[0]
    assert job_fs(parquet, root).dataset == here
    found = job_fs(parquet, root, hosts=["nid7.site.org"])
    assert found.dataset == "nid7" and "node nid7's own disk" in found.how
    assert job_fs(parquet, root, hosts=["nid8"]).dataset is None  # its node has no telemetry
    assert job_fs(parquet, [MountBytes("/scratch", "lustre", 10)]).dataset is None
    # the bytes still decide: most of them on a shared file system with telemetry wins over the local disk
    (parquet / "telemetry" / "fs=scratch").mkdir()
    both = [*root, MountBytes("/scratch", "lustre", 100)]
    assert job_fs(parquet, both).dataset == "scratch"


def test_mounts_with_no_telemetry_are_named_most_bytes_first():
    """`why` listed a job's mounts by the bytes it moved on them, the job page's weather error by name (the
    per-file table's order): one resolver, one order."""
    from ioweather.config import MountBytes, dataset_for_mounts

    mounts = [MountBytes("/a", "nfs", 5), MountBytes("/b", "nfs", 500), MountBytes("/c", "lustre", 50),
              MountBytes("/d", "nfs", 500)]
    found = dataset_for_mounts(mounts, [], [])
    assert found["dataset"] is None and [u["mount"] for u in found["unmapped"]] == ["/b", "/d", "/c", "/a"]
