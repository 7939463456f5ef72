"""`ioweather import lctl-params`: captures into the store, as a user runs it (the real CLI, in this process:
tests/inprocess.py; test_smoke_commands runs it as a process)."""

from __future__ import annotations

import json

import numpy as np

from ioweather.config import Settings
from ioweather.store import telemetry_layout as layout
from lctl_captures import BRW_WRITE_ADD, SUM_ADD, two_captures
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

S = 1_000_000_000


def test_a_directory_of_captures_stores_gauges_and_differences(cli, home, testdata, tmp_path):
    d = two_captures(tmp_path / "caps", testdata)
    p = cli("import", "lctl-params", str(d), "--fs", "ai400", "--json", home=home)
    assert p.returncode == 0, p.stderr
    df = layout.read_frame(Settings(home=home), "ai400")
    # the capture's time: its latest snapshot_time (ost.OSS.ost.stats here), exactly
    t1, t2 = 1689060419_303967116, 1689060479_303967116
    assert sorted(np.unique(df.time_ns)) == [t1, t2]
    one = lambda target, metric: df[(df.target == target) & (df.metric == metric)]  # noqa: E731
    wb = one("ai400-OST0000", "write_bytes")
    assert list(wb.value) == [SUM_ADD] and list(wb.time_ns) == [t1] and list(wb.interval_s) == [60.0]
    assert list(one("ai400-OST0000", "brw_disk_iosize:write:2M").value) == [BRW_WRITE_ADD]
    assert one("ai400-MDT0000", "md_statfs").value.isna().all()  # went back: missing
    cap = one("ai400-OST0000", "capacity_bytes")
    assert list(cap.value) == [3978095168 * 1024] * 2 and list(cap.time_ns) == [t1, t2]
    assert list(one("ai400-MDT0000", "connected_clients").value) == [4, 4]


def test_one_capture_without_a_time_needs_at(cli, home, testdata):
    f = testdata / "lustrefs-exporter" / "2.14.0_ddn145_recovery.txt"
    p = cli("import", "lctl-params", str(f), "--fs", "fs", home=home)
    assert p.returncode != 0 and "--at" in p.stderr and "Traceback" not in p.stderr
    p = cli("import", "lctl-params", str(f), "--fs", "fs", "--at", "2024-05-14T18:47:14Z", "--json", home=home)
    assert p.returncode == 0, p.stderr
    df = layout.read_frame(Settings(home=home), "fs")
    rs = df[df.metric == "recovery_status"].set_index("target").value.to_dict()
    assert rs == {"fs-MDT0000": 0, "fs-OST0000": 1, "fs-OST0001": 1}
    assert (df.time_ns == 1715712434 * S).all()
    assert any("one capture" in n for s in json.loads(p.stdout)["sources"] for n in s["notes"])


def test_the_store_exporter_names_them_as_lustrefs_exporter(cli, home, testdata, tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    d = two_captures(tmp_path / "caps", testdata)
    cli("import", "lctl-params", str(d), "--fs", "ai400", home=home, check=True)
    p = cli("export", "--fs", "ai400", "--once", home=home, check=True)
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in text_string_to_metric_families(p.stdout) for s in f.samples}
    ost = (("component", "ost"), ("fs", "ai400"))
    # the stored amounts summed: what the OST did between the captures
    assert got[("lustre_disk_io_total", (*ost, ("operation", "write"), ("size", "2097152"),
                                         ("target", "ai400-OST0000")))] == BRW_WRITE_ADD
    assert got[("lustre_write_bytes_total", (*ost, ("target", "ai400-OST0000")))] == SUM_ADD
    assert got[("lustre_connected_clients", (("component", "mdt"), ("fs", "ai400"), ("target", "ai400-MDT0000")))] == 4
    assert got[("lustre_exports_total", (*ost, ("target", "ai400-OST0000")))] == 5
