"""The `gpfs` live source: `mmpmon -p` fs_io_s output as IBM documents it, parsed, and a stand-in
`mmpmon` whose counters grow and are reset, through the collector to amounts per interval."""

from __future__ import annotations

import os
import stat
import textwrap

import numpy as np
import pytest

from ioweather.sources.telemetry.base import COUNTER, SourceError
from ioweather.services.telemetry.collector import Collector
from ioweather.sources.telemetry.gpfs import Gpfs, parse_fs_io_s

S = 1_000_000_000
T0 = 1_700_000_000 * S

# IBM's example response to fs_io_s with -p ("Display I/O statistics per mounted file system"),
# one record per mounted file system, then a file system that answers with an error code
DOC = ("_fs_io_s_ _n_ 199.18.1.8 _nn_ node1 _rc_ 0 _t_ 1066660148 _tu_ 407431 _cl_ myCluster.xxx.com "
       "_fs_ gpfs2 _d_ 2 _br_ 6291456 _bw_ 314572800 _oc_ 10 _cc_ 16 _rdc_ 101 _wc_ 300 _dir_ 7 _iu_ 2\n"
       "_fs_io_s_ _n_ 199.18.1.8 _nn_ node1 _rc_ 0 _t_ 1066660148 _tu_ 407455 _cl_ myCluster.xxx.com "
       "_fs_ gpfs1 _d_ 1 _br_ 0 _bw_ 0 _oc_ 0 _cc_ 0 _rdc_ 0 _wc_ 0 _dir_ 0 _iu_ 0\n")


def test_documented_records_parse():
    recs, bad = parse_fs_io_s(DOC + "mmpmon: something unexpected\n")
    assert bad == ["mmpmon: something unexpected"]
    assert [r["_fs_"] for r in recs] == ["gpfs2", "gpfs1"]
    assert recs[0]["_br_"] == "6291456" and recs[0]["_bw_"] == "314572800" and recs[0]["_iu_"] == "2"
    assert recs[0]["_cl_"] == "myCluster.xxx.com"


def fake_mmpmon(tmp_path, readings: list[str]) -> str:
    """An executable that answers fs_io_s with the next of `readings` at each call."""
    for i, text in enumerate(readings):
        (tmp_path / f"r{i}").write_text(text)
    script = tmp_path / "mmpmon"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        read request
        [ "$request" = fs_io_s ] && [ "$1" = -p ] || exit 9
        n=$(cat {tmp_path}/n 2>/dev/null || echo 0)
        echo $((n + 1)) > {tmp_path}/n
        cat {tmp_path}/r$n
        """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def record(fs: str, br: int, bw: int, rc: int = 0) -> str:
    return (f"_fs_io_s_ _n_ 10.0.0.1 _nn_ nsd1 _rc_ {rc} _t_ 1 _tu_ 0 _cl_ c1 _fs_ {fs} _d_ 4 _br_ {br} "
            f"_bw_ {bw} _oc_ {br // 100} _cc_ {br // 100} _rdc_ {br // 10} _wc_ {bw // 10} _dir_ 3 _iu_ 1\n")


def test_counters_become_amounts_and_a_reset_is_missing(tmp_path):
    br = [1000, 5000, 6000, 200, 900]   # mmpmon reset between the 3rd and 4th reading
    bw = [10, 30, 70, 0, 40]
    readings = [record("scratch", r, w) + record("home", 7 * r, 0) for r, w in zip(br, bw)]
    src = Gpfs("/", host="nsd1", mmpmon=fake_mmpmon(tmp_path, readings))
    assert all(s.kind == COUNTER for s in src.collect()) and not src.warnings
    (tmp_path / "n").write_text("0")
    c = Collector([src], 5.0, "nsd1")
    for i in range(len(readings)):
        c.tick(T0 + i * 5 * S)
    df = c.pending_frame("nsd1")
    r = df[(df.target == "nsd1:scratch") & (df.metric == "read_bytes")].sort_values("time_ns")
    want = np.diff(np.array(br, dtype=float))
    want[want < 0] = np.nan
    np.testing.assert_array_equal(r.value.to_numpy(), want)
    assert list(r.time_ns) == [T0 + i * 5 * S for i in range(4)] and (r.interval_s == 5.0).all()
    w = df[(df.target == "nsd1:scratch") & (df.metric == "write_bytes")].sort_values("time_ns")
    np.testing.assert_array_equal(w.value.to_numpy(), [20, 40, np.nan, 40])
    ops = df[(df.target == "nsd1:home") & (df.metric == "read_ops")].sort_values("time_ns")
    assert ops.value.iloc[0] == (7 * 5000) // 10 - (7 * 1000) // 10
    assert set(df.metric) == {"read_bytes", "write_bytes", "read_ops", "write_ops", "md_open", "md_close", "md_readdir"}
    assert (df.value.dropna() >= 0).all()


def test_error_records_and_no_output(tmp_path):
    src = Gpfs("/", host="n", mmpmon=fake_mmpmon(tmp_path, [record("a", 5, 5) + record("b", 0, 0, rc=1), "\n"]))
    samples = src.collect()
    assert {s.target for s in samples} == {"n:a"}
    assert src.warnings == ["`mmpmon -p` fs_io_s: return code 1 for b"]
    with pytest.raises(SourceError, match="gave no statistics"):
        src.collect()


def test_available_only_with_the_real_binary(tmp_path):
    assert Gpfs("/", mmpmon=str(tmp_path / "absent")).available() is False
    fake = fake_mmpmon(tmp_path, [DOC])
    assert Gpfs("/", mmpmon=fake).available() is True
    assert Gpfs(tmp_path, mmpmon=fake).available() is False       # a --proc-root tree is another machine
    assert Gpfs("/").available() is os.access("/usr/lpp/mmfs/bin/mmpmon", os.X_OK)
