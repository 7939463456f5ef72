"""Counters recorded around each run: /proc/self/io, /proc/vmstat, /proc/meminfo, Lustre client stats."""

from __future__ import annotations

import os

from ioweather.sources import iomodel_procstats as ps

# Lustre 2.x client files, format as printed by `lctl get_param llite.*.stats` (lustre-discuss, 2018)
LLITE_STATS = """snapshot_time             1523008010.817348638 secs.nsecs
read_bytes                25673 samples [bytes] 1 3366225 145121869
write_bytes               13641 samples [bytes] 1 3366225 468230469 1234567
open                      5 samples [regs]
seek                      10 samples [regs]
"""
READ_AHEAD = """snapshot_time:         1523008010.817348 (secs.usecs)
hits                      640000 samples [pages]
misses                    3 samples [pages]
"""


def test_proc_self_io_counts_this_process_reads(tmp_path):
    before = ps.proc_self_io()
    assert set(before) >= {"rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes"}
    fd = os.open("/dev/zero", os.O_RDONLY)
    for _ in range(100):
        os.read(fd, 1000)
    os.close(fd)
    d = ps.delta(before, ps.proc_self_io(), keep_zero=True)
    assert 100 <= d["syscr"] <= 105 and d["rchar"] >= 100_000


def test_meminfo_in_bytes_and_vmstat_counters():
    with open("/proc/meminfo") as f:
        total_kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    mi = ps.meminfo()
    assert mi["MemTotal"] == total_kb * 1024
    assert "HugePages_Total" not in mi or mi["HugePages_Total"] < 1 << 30  # a count, not kB
    vm = ps.vmstat()
    assert "pgfault" in vm and vm["pgfault"] > 0


def test_lustre_stats_parse_samples_and_sums(tmp_path):
    out = ps.parse_lustre_stats(LLITE_STATS, "llite")
    assert out == {"llite:read_bytes": 25673, "llite:read_bytes.sum": 145121869, "llite:write_bytes": 13641,
                   "llite:write_bytes.sum": 468230469, "llite:open": 5, "llite:seek": 10}
    assert ps.parse_lustre_stats(READ_AHEAD, "ra") == {"ra:hits": 640000, "ra:misses": 3}


def test_lustre_files_found_under_a_client_tree(tmp_path):
    d = tmp_path / "proc/fs/lustre/llite/scratch-ffff8801"
    d.mkdir(parents=True)
    (d / "stats").write_text(LLITE_STATS)
    (d / "read_ahead_stats").write_text(READ_AHEAD)
    osc = tmp_path / "proc/fs/lustre/osc/scratch-OST0001-osc-ffff8801"
    osc.mkdir(parents=True)
    (osc / "stats").write_text("snapshot_time 1.0 secs.usecs\nost_read 2543 samples [usec] 10 900 123456\n")
    before = ps.lustre(tmp_path)
    assert before["proc/fs/lustre/llite/scratch-ffff8801/read_ahead_stats:hits"] == 640000
    assert before["proc/fs/lustre/osc/scratch-OST0001-osc-ffff8801/stats:ost_read.sum"] == 123456
    (d / "read_ahead_stats").write_text(READ_AHEAD.replace("640000", "640063"))
    assert ps.node_delta({"lustre": before}, {"lustre": ps.lustre(tmp_path)}) == {
        "lustre_delta": {"proc/fs/lustre/llite/scratch-ffff8801/read_ahead_stats:hits": 63}}
    assert ps.lustre(tmp_path / "nothing") == {}
