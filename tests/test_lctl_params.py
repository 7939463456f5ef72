"""The `lctl get_param` reader (sources/telemetry/lctl_params.py) on the six real captures of
../shared/testdata/lustrefs-exporter and on edited copies of them (cut short, unknown, repeated)."""

from __future__ import annotations

import pytest

from ioweather.sources.telemetry.lctl_params import connected_clients, parse_capture
from ioweather.sources.telemetry.lctl_source import capture_samples


def _read(testdata, name: str) -> str:
    return (testdata / "lustrefs-exporter" / f"{name}.txt").read_text()


def test_every_kind_of_the_oss_mds_capture(testdata):
    cap = parse_capture(_read(testdata, "valid"))
    assert cap.notes == [] and not cap.unknown and cap.stray == 0
    assert cap.host == {"memused": 5969573401, "memused_max": 7511503233, "lnet_memused": 159290577}
    assert cap.healthy is True
    ost = next(s for s in cap.stats if s.kind == "obdfilter" and s.target == "ai400-OST0000")
    wb = next(r for r in ost.rows if r.name == "write_bytes")
    assert (wb.samples, wb.units, wb.min, wb.max, wb.sum) == (25001, "bytes", 98304, 4194304, 104857600000)
    assert ost.start_time == 1688526475
    brw = next(b for b in cap.brw if b.target == "ai400-OST0000")
    assert brw.hists["disk_iosize"][-1] == ("2M", 0, 50000)
    assert brw.hists["io_time"][0] == ("1", 0, 24902)
    assert len(brw.hists["rpc_hist"]) == 16
    # the exports are listed twice in this capture: four clients, not eight
    assert connected_clients(cap) == {"ai400-MDT0000": 4}
    assert ("ai400-OST0000", "lock_count", 1) in cap.values
    assert cap.changelog[0] == ("ai400x2-MDT0000", 0, [("cl1", 0, 327)])


def test_recovery_quota_and_a_client(testdata):
    rec = parse_capture(_read(testdata, "2.14.0_ddn145_recovery"))
    assert rec.recovery == [("OST", "fs-OST0000", {"status": 1}), ("OST", "fs-OST0001", {"status": 1}),
                            ("MDT", "fs-MDT0000", {"status": 0, "recovery_start": 1715712434, "recovery_duration": 0,
                                                   "completed_clients": 1, "replayed_requests": 0,
                                                   "last_transno": 4294967298})]
    quota = parse_capture(_read(testdata, "2.14.0_ddn229_quota"))
    assert len(quota.quota_limits) == 15
    assert quota.quota_limits[0] == ("lustre-QMT0000", "dt-0x0", "group", "0",
                                     {"hard": 0, "soft": 0, "granted": 0, "time": 604800})
    client = parse_capture(_read(testdata, "llite_client"))
    llite = next(s for s in client.stats if s.kind == "llite")
    assert llite.target == "ai400x2-ff47bce9ca35d800" and len(llite.rows) == 14
    ioctl = next(r for r in llite.rows if r.name == "ioctl")
    assert (ioctl.samples, ioctl.units, ioctl.sum) == (114, "reqs", None)


def test_blocks_starting_on_the_param_line_and_per_client_stats(testdata):
    cap = parse_capture(_read(testdata, "valid_mds"))
    empty = [s for s in cap.stats if s.kind == "service" and s.target == "ost_io"]
    assert empty and empty[0].rows == [] and empty[0].snapshot_ns == 1709915907_132154184
    ddn = parse_capture(_read(testdata, "2.14.0_ddn145_stats"))
    exp = [s for s in ddn.stats if s.kind == "export"]
    assert {(s.target, s.nid) for s in exp} >= {("fs-OST0001", "10.73.20.12@tcp"), ("fs-MDT0000", "0@lo")}
    fake = next(r for s in exp for r in s.rows if r.name == "fake_nosum")
    assert (fake.samples, fake.sum) == (1, None)
    assert ddn.quota_usage[0] == ("fs-MDT0000", "group", "0", 331, 2000)


def test_a_truncated_capture_gives_what_it_holds_and_a_note(testdata):
    text = _read(testdata, "valid")
    cut = text[:text.index("obdfilter.ai400-OST0001.stats=") + 120]  # inside the OST0001 stats block
    cap = parse_capture(cut)
    assert any("ends in the middle of a line" in n for n in cap.notes)
    whole = parse_capture(text)
    assert cap.host == whole.host and len(cap.brw) == len(whole.brw)
    assert [s.target for s in cap.stats] == ["ai400-OST0000", "ai400-OST0001"]


def test_unknown_params_are_counted_and_skipped_and_junk_never_raises(testdata):
    text = ("osc.fs-OST0000-osc-ffff.max_dirty_mb=2000\nosc.fs-OST0001-osc-ffff.max_dirty_mb=2000\n"
            + _read(testdata, "2.14.0_ddn145_recovery") + "nodemap.active=1\n")
    cap = parse_capture(text)
    assert cap.unknown == {"osc.*.max_dirty_mb": 2, "nodemap.active": 1}
    assert len(cap.recovery) == 3
    assert any("3 parameters of 2 unknown kinds" in n for n in cap.notes)
    for junk in ("", "\n\n", "garbage\nmore", "memused=notanumber\n", "osd-ldiskfs.x-OST0000.brw_stats=\n1K: x\n",
                 "obdfilter.a-OST0000.stats=\nread_bytes 1 samples [bytes] x y z\n", "=\n", "\x00\xff=1\n"):
        cap = parse_capture(junk)
        capture_samples(cap, "h")


def test_store_readings_use_the_proc_readers_names(testdata):
    cap = parse_capture(_read(testdata, "valid"))
    s = {(x.target, x.metric): x for x in capture_samples(cap, "oss1")}
    assert s[("ai400-OST0000", "write_bytes")].value == 104857600000
    assert s[("ai400-OST0000", "write_ops")].value == 25001
    assert s[("ai400-OST0000", "read_ops")].value == 0
    assert s[("ai400-OST0000", "capacity_bytes")].value == 3978095168 * 1024
    assert s[("ai400-MDT0000", "md_statfs")].value == 44863
    assert s[("ai400-OST0000", "brw_disk_iosize:write:2M")].value == 50000
    assert s[("ai400-MDT0000", "connected_clients")].value == 4
