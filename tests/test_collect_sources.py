"""Live sources against real trees: Lustre servers of four versions checked against what LMT itself
read from the same trees (outputs/*.exp), the lustre_exporter mock tree, /proc/diskstats,
mountstats, `lfs df` outputs, statvfs against df(1)."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from ioweather.sources.telemetry.capacity import Capacity, parse_lfs_df
from ioweather.sources.telemetry.diskstats import DiskStats, parse_diskstats
from ioweather.sources.telemetry.host import CPU_BUSY, CPU_TOTAL, Host
from ioweather.sources.telemetry.lustre import MD_OPS, Lustre, parse_job_stats, parse_stats
from ioweather.sources.telemetry.nfs import Nfs, parse_mountstats

VERSIONS = ["1.8.3", "2.10.8", "2.12.9_12", "2.15.4_1"]
LMT_MDT_OPS = ["open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getxattr", "process_config",
               "connect", "reconnect", "disconnect", "statfs", "create", "destroy", "setattr", "getattr",
               "llog_init", "notify", "quotactl"]  # LMT's optab_mdt_v1 (liblmt/mdt.c): order of the mdt string
LMT_MDT_TRIPLES = 23  # the v3 string carries two more (unnamed here) after those 21


def by_key(samples):
    return {(s.target, s.metric): s.value for s in samples}


def lmt_strings(tree: Path) -> dict[str, str]:
    out = {}
    for line in (tree / "outputs" / "t10.exp").read_text().splitlines():
        kind, _, rest = line.partition(": ")
        out[kind] = rest
    return out


def parse_lmt_ost(s: str) -> dict[str, dict[str, int]]:
    """LMT ost v2 string: 4 header fields, then per OST 15 fields."""
    f = s.rstrip(";").split(";")[4:]
    out = {}
    for i in range(0, len(f) - 14, 15):
        name, ffree, ftotal, kfree, ktotal, rbytes, wbytes = f[i:i + 7]
        out[name] = {"files_free": int(ffree), "files_total": int(ftotal), "free_bytes": int(kfree) * 1024,
                     "capacity_bytes": int(ktotal) * 1024, "read_bytes": int(rbytes), "write_bytes": int(wbytes)}
    return out


def parse_lmt_mdt(s: str) -> dict[str, dict[str, int]]:
    """LMT mdt v3 string: 4 header fields, then per MDT name, 4 numbers, recovery, 23 op triples."""
    f = s.rstrip(";").split(";")[4:]
    out = {}
    width = 6 + 3 * LMT_MDT_TRIPLES
    assert len(f) % width == 0
    for i in range(0, len(f) - width + 1, width):
        name, ffree, ftotal, kfree, ktotal = f[i:i + 5]
        ops = f[i + 6:i + width]
        d = {"files_free": int(ffree), "files_total": int(ftotal), "free_bytes": int(kfree) * 1024,
             "capacity_bytes": int(ktotal) * 1024}
        for j, op in enumerate(LMT_MDT_OPS):
            d[f"op_{op}"] = int(ops[3 * j])
        out[name] = d
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_lustre_server_matches_what_lmt_read(shared_data, version):
    tree = shared_data / "lustre" / version
    src = Lustre(tree, host="oss")
    got = by_key(src.collect())
    assert src.warnings == []
    lmt = lmt_strings(tree)
    osts = parse_lmt_ost(lmt["ost"])
    assert osts, "LMT's ost string lists no OST"
    for name, ref in osts.items():
        for metric, value in ref.items():
            assert got[(name, metric)] == value, (version, name, metric)
    mdts = parse_lmt_mdt(lmt["mdt"])
    assert mdts
    for name, ref in mdts.items():
        for metric in ("files_free", "files_total", "free_bytes", "capacity_bytes"):
            assert got[(name, metric)] == ref[metric], (version, name, metric)
        for op in LMT_MDT_OPS:
            if op in MD_OPS:  # LMT writes 0 for an op absent from md_stats; we write nothing
                assert got.get((name, f"md_{op}"), 0) == ref[f"op_{op}"], (version, name, op)
    # every target is in its own file system's dataset
    assert {s.fs for s in src.collect()} == {next(iter(osts)).rsplit("-OST", 1)[0]}


@pytest.mark.parametrize("version", VERSIONS)
def test_host_cpu_and_memory_match_lmt(shared_data, version):
    tree = shared_data / "lustre" / version
    text = (tree / "outputs" / "t04.exp").read_text().split()
    # tproc: memory: 527249208K total, 517464576K free / tproc: cpu: 665597 usage, 816749236 total
    mem_total, mem_free = int(text[2].rstrip("K")) * 1024, int(text[4].rstrip("K")) * 1024
    usage, total = int(text[8]), int(text[10])
    got = by_key(Host(tree, host="oss").collect())
    assert got[("oss", CPU_BUSY)] == usage and got[("oss", CPU_TOTAL)] == total
    assert got[("oss", "mem_total_bytes")] == mem_total
    assert got[("oss", "mem_used_bytes")] == mem_total - mem_free


def test_lustre_mock_tree_server_client_and_jobs(testdata):
    root = testdata / "lustre-procfs"
    src = Lustre(root, host="cli")
    got = by_key(src.collect())
    lustre = root / "proc/fs/lustre"
    stats = (lustre / "obdfilter/lustrefs-OST0000/stats").read_text().split("\n")
    write_line = next(l for l in stats if l.startswith("write_bytes")).split()
    assert got[("lustrefs-OST0000", "write_bytes")] == int(write_line[6])
    assert got[("lustrefs-OST0000", "write_ops")] == int(write_line[1])
    assert got[("lustrefs-OST0000", "read_bytes")] == 0  # no read_bytes line: nothing read yet
    statfs = [int(l.split()[1]) for l in stats if l.startswith("statfs")]
    assert len(statfs) == 2 and got[("lustrefs-OST0000", "ost_statfs")] == sum(statfs)
    kb = int((lustre / "obdfilter/lustrefs-OST0000/kbytestotal").read_text())
    assert got[("lustrefs-OST0000", "capacity_bytes")] == kb * 1024
    md = parse_stats((lustre / "mdt/lustrefs-MDT0000/md_stats").read_text())
    assert got[("lustrefs-MDT0000", "md_open")] == md["open"][0] == 10
    # job_stats: every job of the file, bytes per job
    jobs = parse_job_stats((lustre / "obdfilter/lustrefs-OST0000/job_stats").read_text())
    text = (lustre / "obdfilter/lustrefs-OST0000/job_stats").read_text()
    assert len(jobs) == text.count("- job_id:")
    assert got[("lustrefs-OST0000/24", "job_write_bytes")] == 215147593728
    assert got[("lustrefs-OST0000/24", "job_write_ops")] == 64575
    assert ("lustrefs-MDT0000/43", "job_md_setattr") in got
    # client: llite mount and per-OST osc
    assert got[("cli:lustrefs", "write_bytes")] == 93813797294080
    assert got[("cli:lustrefs", "read_ops")] == 1
    assert got[("cli:lustrefs-OST0004", "osc_rpcs")] == 7348
    assert got[("cli:lustrefs-OST0004", "osc_rpc_wait_s")] == pytest.approx(2436371 / 1e6)
    assert not any("-osc-MDT" in t for t, _ in got)


def test_lustre_unreadable_and_vanishing_files_are_skipped_not_fatal(testdata, tmp_path, monkeypatch):
    import ioweather.sources.telemetry.lustre as lustre_mod

    root = tmp_path / "tree"
    shutil.copytree(testdata / "lustre-procfs" / "proc" / "fs" / "lustre" / "obdfilter", root / "proc/fs/lustre/obdfilter")
    stats = root / "proc/fs/lustre/obdfilter/lustrefs-OST0002/stats"
    real_read = lustre_mod.read_text

    def read_text(path):  # tests run as root, for whom chmod 000 changes nothing (the CLI test uses nobody)
        if Path(path) == stats:
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path)

    monkeypatch.setattr(lustre_mod, "read_text", read_text)
    src = Lustre(root, host="h")
    got = by_key(src.collect())
    assert ("lustrefs-OST0000", "write_bytes") in got          # the others are read
    assert ("lustrefs-OST0002", "write_bytes") not in got
    assert ("lustrefs-OST0002", "capacity_bytes") in got       # and the rest of the same target
    assert any("lustrefs-OST0002/stats" in w for w in src.warnings)
    shutil.rmtree(root / "proc/fs/lustre/obdfilter/lustrefs-OST0004")  # target unmounted
    got = by_key(Lustre(root, host="h").collect())
    assert not any(t == "lustrefs-OST0004" for t, _ in got)


def test_diskstats_parser_on_known_and_real_lines():
    text = ("   8       0 sda 1000 20 8000 500 300 10 6000 700 2 900 1200 0 0 0 0 5 6\n"
            "   8       1 sda1 900 20 7000 400 300 10 6000 700 0 800 1100\n"
            "   7       0 loop0 1 0 2 0 0 0 0 0 0 0 0\n"
            " 259       0 nvme0n1 10 0 16 1 0 0 0 0 0 3 1\n")
    d = parse_diskstats(text)
    assert set(d) == {"sda", "nvme0n1"}  # partitions and loop devices left out
    assert d["sda"] == {"read_ops": 1000, "read_bytes": 8000 * 512, "read_time_s": 0.5, "write_ops": 300,
                        "write_bytes": 6000 * 512, "write_time_s": 0.7, "queue_depth": 2, "busy_s": 0.9}
    real = DiskStats("/", host="me")
    if not real.available():
        pytest.skip("no /proc/diskstats")
    samples = real.collect()
    assert samples and all(s.target.startswith("me:") for s in samples)


MOUNTSTATS = """\
device rootfs mounted on / with fstype rootfs
device proc mounted on /proc with fstype proc
device nfs1:/export/home mounted on /home with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,acregmin=3,hard,proto=tcp,sec=sys
\tage:\t86400
\tcaps:\tcaps=0x3ffbffff,wtmult=512,dtsize=32768,bsize=0,namlen=255
\tsec:\tflavor=1,pseudoflavor=1
\tevents:\t1000 20000 5 10 400 300 60000 2000 0 500 600 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
\tbytes:\t5000000 2000000 0 0 4800000 2100000 1200 500
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)
\txprt:\ttcp 801 1 2 0 11 12000 12000 0 15000 0 2 0 0
\tper-op statistics
\t        NULL: 1 1 0 44 24 0 0 0 0
\t        READ: 120 120 0 17280 4815360 30 950 1010 0
\t       WRITE: 40 40 0 2105120 5440 10 410 480 0
\t      COMMIT: 3 3 0 400 300 0 9 9 0
\t        OPEN: 50 50 0 9000 11000 1 60 70 0
\t       CLOSE: 50 50 0 7000 5000 0 40 45 0
\t     GETATTR: 900 900 0 120000 200000 2 500 600 0
\t      LOOKUP: 300 300 0 50000 60000 0 200 210 2
\t      REMOVE: 7 7 0 900 800 0 6 6 0

device nfs2:/scratch mounted on /mnt/with space with fstype nfs statvers=1.1
\tbytes:\t10 20 0 0 10 20 1 1
\tper-op statistics
\t        READ: 1 1 0 100 110 0 3 3 0
"""


def test_mountstats_parser():
    m = parse_mountstats(MOUNTSTATS)
    assert set(m) == {"/home", "/mnt/with space"}
    h = m["/home"]
    assert h["read_bytes"] == 4800000 and h["write_bytes"] == 2100000  # serverread/serverwrite
    assert h["read_ops"] == 120 and h["write_ops"] == 40
    assert h["read_rtt_s"] == pytest.approx(0.95) and h["write_rtt_s"] == pytest.approx(0.41)
    assert h["md_getattr"] == 900 and h["md_unlink"] == 7 and h["md_sync"] == 3 and h["md_open"] == 50
    assert "md_null" not in h


def test_nfs_source_reads_a_proc_root(tmp_path):
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountstats").write_text(MOUNTSTATS)
    src = Nfs(tmp_path, host="login1")
    assert src.available()
    got = by_key(src.collect())
    assert got[("login1:/home", "read_bytes")] == 4800000


def test_lfs_df_parser_totals_agree_with_the_summary_line(testdata):
    text = gzip.decompress((testdata / "pytokio/lfs-df.txt.gz").read_bytes()).decode()
    snaps = parse_lfs_df(text)
    assert len(snaps) == 1
    targets = snaps[0][1]
    for summary in [l for l in text.splitlines() if l.startswith("filesystem summary")]:
        f = summary.split()
        mount = f[-1]
        blocks = int(f[2])
        fs_targets = [t for t in targets if t.split("-")[0] == _fs_of_mount(text, mount) and "-OST" in t]
        assert sum(targets[t]["capacity_bytes"] for t in fs_targets) == blocks * 1024, mount
    one = targets["snx11035-OST0000"]
    assert one["capacity_bytes"] == 90767651352 * 1024 and one["avail_bytes"] == 24423870832 * 1024
    assert one["free_bytes"] == (90767651352 - 65387344040) * 1024


def _fs_of_mount(text: str, mount: str) -> str:
    for line in text.splitlines():
        f = line.split()
        if len(f) == 6 and f[5].startswith(mount + "[OST"):
            return f[0].split("-")[0]
    raise AssertionError(mount)


def test_lfs_df_inodes_wrapped_uuids_and_timed_snapshots(testdata):
    text = ("BEGIN 1489998203\n"
            "UUID                      Inodes       IUsed       IFree IUse% Mounted on\n"
            "verylongfsname-MDT0000_UUID\n"
            "                       1000000      200000      800000  20% /mnt/x[MDT:0]\n"
            "verylongfsname-OST0000_UUID 500 100 400 20% /mnt/x[OST:0]\n"
            "OST0001             : inactive device\n"
            "BEGIN 1489998263\n"
            "UUID                   1K-blocks        Used   Available Use% Mounted on\n"
            "verylongfsname-OST0000_UUID 1000 600 300 67% /mnt/x[OST:0]\n")
    snaps = parse_lfs_df(text)
    assert [t for t, _ in snaps] == [1489998203, 1489998263]
    assert snaps[0][1]["verylongfsname-MDT0000"] == {"files_total": 1000000, "files_free": 800000}
    assert snaps[1][1]["verylongfsname-OST0000"]["free_bytes"] == 400 * 1024
    archive = gzip.decompress((testdata / "pytokio/sample_ost-fullness.txt.gz").read_bytes()).decode()
    assert len(parse_lfs_df(archive)) == archive.count("BEGIN ")


def test_statvfs_capacity_agrees_with_df(tmp_path):
    df = shutil.which("df")
    if not df:
        pytest.skip("no df")
    src = Capacity(mounts=[str(tmp_path)], host="h")
    got = by_key(src.collect())
    out = subprocess.run([df, "-B1", "--output=size,avail,itotal,iavail", str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout.split("\n")[1].split()
    size, avail, itotal, iavail = (int(x) for x in out)
    t = f"h:{tmp_path}"
    assert got[(t, "capacity_bytes")] == size
    assert got[(t, "files_total")] == itotal
    # free space moves while other tests write: within 1 %
    assert got[(t, "avail_bytes")] == pytest.approx(avail, rel=0.01)
    assert got[(t, "files_free")] == pytest.approx(iavail, rel=0.01)
