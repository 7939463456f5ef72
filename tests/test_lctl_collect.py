"""`collect` through `lctl get_param`: a fake `lctl` on PATH prints a real capture, then a later one
(tests/lctl_captures.py: known increments, one counter reset). Stored amounts must be the
increments, brw_stats buckets too, and the counter that went back a missing interval."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest

from lctl_captures import BRW_READ_ADD, BRW_WRITE_ADD, STATS_ADD, SUM_ADD, later

S = 1_000_000_000
EXPECTED = {  # (target, metric) -> amount between the two captures
    ("ai400-OST0000", "write_ops"): STATS_ADD,
    ("ai400-OST0000", "write_bytes"): SUM_ADD,
    ("ai400-OST0000", "read_ops"): 0,  # an OST that never read has no read_bytes line: 0, not unknown
    ("ai400-OST0000", "ost_statfs"): STATS_ADD,
    ("ai400-MDT0000", "md_getattr"): STATS_ADD,
    ("ai400-OST0000", "brw_disk_iosize:write:2M"): BRW_WRITE_ADD,
    ("ai400-OST0000", "brw_disk_iosize:read:2M"): BRW_READ_ADD,
    ("ai400-OST0000", "brw_io_time:write:16"): BRW_WRITE_ADD,
}
RESET = ("ai400-MDT0000", "md_statfs")


@pytest.fixture
def fake_lctl(tmp_path, testdata):
    """A directory holding an executable `lctl`: its first call prints valid.txt, the later ones the
    later capture; each call's arguments are appended to calls.txt."""
    real = (testdata / "lustrefs-exporter" / "valid.txt").read_text()
    d = tmp_path / "bin"
    d.mkdir()
    (d / "cap1.txt").write_text(real)
    (d / "cap2.txt").write_text(later(real))
    script = d / "lctl"
    script.write_text(f"""#!/bin/sh
echo "$@" >> "{d}/calls.txt"
n=$(wc -l < "{d}/calls.txt")
if [ "$n" -eq 1 ]; then cat "{d}/cap1.txt"; else cat "{d}/cap2.txt"; fi
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return d


def _amounts(rows) -> dict:
    out: dict = {}
    for (fs, target, metric), value in rows:
        out.setdefault((target, metric), []).append(value)
    return out


def test_collector_ticks_store_the_differences(fake_lctl, monkeypatch):
    from ioweather.services.telemetry.collector import Collector
    from ioweather.sources.telemetry.lctl_source import LctlLustre

    monkeypatch.setenv("PATH", f"{fake_lctl}:{os.environ['PATH']}")
    src = LctlLustre("/")
    assert src.lctl == str(fake_lctl / "lctl") and src.available()
    col = Collector([src], 60.0, "host")
    t0 = 1_700_000_000 * S
    col.tick(t0)
    col.tick(t0 + 60 * S)
    rows = [(k, v) for parts in col.pending.values() for keys, start, vals, length in parts
            for k, v, st in zip(keys, vals, start) if st == t0]
    got = _amounts(rows)
    for key, want in EXPECTED.items():
        assert got[key] == [want], key
    assert len(got[RESET]) == 1 and np.isnan(got[RESET][0])  # went back: missing, never negative
    assert all(not (v < 0) for vs in got.values() for v in vs)
    # gauges at the tick: capacity in bytes, the clients the exports list
    gauges = _amounts([(k, v) for parts in col.pending.values() for keys, start, vals, length in parts
                       for k, v, st in zip(keys, vals, start) if st == t0 + 60 * S])
    assert gauges[("ai400-OST0000", "capacity_bytes")] == [3978095168 * 1024]
    assert gauges[("ai400-MDT0000", "connected_clients")] == [4]
    calls = (fake_lctl / "calls.txt").read_text().splitlines()
    assert len(calls) == 2 and calls[0].startswith("get_param ") and "osd-*.*.brw_stats" in calls[0]


def test_collect_process_with_a_fake_lctl(cli, home, fake_lctl):
    from ioweather.config import Settings
    from ioweather.store import telemetry_layout as layout

    env = {"PATH": f"{fake_lctl}:{os.environ['PATH']}"}
    p = cli("collect", "--sources", "lustre", "--interval", "1s", "--duration", "3.5s", "--timeout", "3s",
            "--json", "-q", home=home, env=env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    src = out["sources"][0]
    assert src["name"] == "lustre" and src["failed"] == 0 and src["ok"] == out["ticks"] >= 2
    calls = (fake_lctl / "calls.txt").read_text().splitlines()
    assert len(calls) == out["ticks"]  # one lctl call per tick, with the whole parameter list
    df = layout.read_frame(Settings(home=home), "ai400")
    for (target, metric), want in EXPECTED.items():
        v = df[(df.target == target) & (df.metric == metric)].value
        assert len(v) >= out["ticks"] - 1
        assert set(v.dropna()) <= {0.0, float(want)}  # the change once, the unchanged later ticks 0
        if out["missed_ticks"] == 0:  # a missed tick makes its span missing (stats/counters.expand_gaps)
            assert v.sum() == want, (target, metric)
    r = df[(df.target == RESET[0]) & (df.metric == RESET[1])].value
    assert (r.dropna() == 0).all() and (r.isna().sum() >= 1 or out["missed_ticks"] > 0)


def _script(d, body: str) -> None:
    script = d / "lctl"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


def test_a_hung_or_failing_lctl_is_a_source_error_not_a_hang(tmp_path, monkeypatch):
    import time

    from ioweather.sources.telemetry.base import SourceError
    from ioweather.sources.telemetry.lctl_source import LctlLustre

    d = tmp_path / "bin"
    d.mkdir()
    monkeypatch.setenv("PATH", f"{d}:{os.environ['PATH']}")
    _script(d, f"echo $$ > {d}/pid; sleep 60 & echo $! > {d}/child; wait\n")
    src = LctlLustre("/", timeout_s=0.5)
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="no answer within 0.5 s"):
        src.collect()
    assert time.monotonic() - t0 < 30
    child = int((d / "child").read_text())
    for _ in range(100):  # the whole process group was killed: its `sleep` too (a zombie until reaped by init)
        try:
            state = open(f"/proc/{child}/stat").read().split(")")[1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":
            break
        time.sleep(0.05)
    else:
        raise AssertionError("lctl's child still runs")
    _script(d, "echo 'error: get_param: param_path: No such file or directory' >&2; exit 2\n")
    with pytest.raises(SourceError, match="exit 2.*No such file"):
        src.collect()
    # a missing parameter among others: exit 2, the rest printed and read
    _script(d, "echo memused=7; echo 'error: get_param: no mdt' >&2; exit 2\n")
    assert [(s.metric, s.value) for s in src.collect()] == [("lustre_memused_bytes", 7)]
