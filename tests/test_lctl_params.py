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


UNHEALTHY = """memused=5969573401
health_check=NOT HEALTHY
health_check=
device lustre-OST0012 reported unhealthy
device lustre-OST0014 reported unhealthy
"""
LNETCTL = """net:
    - net type: lo
      local NI(s):
        - nid: 0@lo
          status: up
          statistics:
              send_count: 300
              recv_count: 298
              drop_count: 2
    - net type: o2ib
      local NI(s):
        - nid: 10.0.0.5@o2ib
          status: up
          statistics:
              send_count: 1000
              recv_count: 900
              drop_count: 0
statistics:
    msgs_alloc: 0
    msgs_max: 12
    errors: 0
    send_count: 1300
    recv_count: 1198
    route_count: 0
    drop_count: 2
    send_length: 123456
    recv_length: 654321
    route_length: 0
    drop_length: 7
"""


def test_unhealthy_targets_lnetctl_and_mdt_job_stats(testdata):
    from prometheus_client.parser import text_string_to_metric_families

    from ioweather.services.telemetry.exporter_lctl import capture_families
    from ioweather.views.exposition import render

    jobs = ("mdt.fs-MDT0000.job_stats=\njob_stats:\n- job_id:          'ls.1000'\n  snapshot_time:   1716295737\n"
            "  open:            { samples:           4, unit: usecs, min:  10, max:  20, sum:  60, sumsq: 1000 }\n"
            "  samedir_rename:  { samples:           1, unit: usecs, min:  10, max:  10, sum:  10, sumsq: 100 }\n"
            "  fancy_new_op:    { samples:           9, unit: usecs, min:   1, max:   1, sum:   9, sumsq: 9 }\n")
    text = _read(testdata, "2.14.0_ddn145_recovery") + UNHEALTHY + jobs + LNETCTL
    cap = parse_capture(text)
    assert cap.healthy is False and cap.unhealthy == ["lustre-OST0012", "lustre-OST0014"]
    assert ("10.0.0.5@o2ib", "send_count", 1000) in cap.lnet_nid and cap.lnet["send_length"] == 123456
    assert not cap.notes, cap.notes
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in text_string_to_metric_families(render(capture_families(cap)).decode()) for s in f.samples}
    assert got[("lustre_health_healthy", (("target", "lustre-OST0014"),))] == 0
    assert got[("lustre_health_healthy", (("target", ""),))] == 0
    assert got[("lustre_send_count_total", (("nid", "10.0.0.5@o2ib"),))] == 1000
    assert got[("lustre_drop_count_total", (("nid", "0@lo"),))] == 2
    assert got[("lustre_receive_bytes_total", ())] == 654321
    job = (("component", "mdt"), ("jobid", "ls.1000"), ("operation", "open"), ("target", "fs-MDT0000"))
    assert got[("lustre_job_stats_total", job)] == 4
    # lustrefs-exporter's list of MDT job operations: an operation it does not know is not exported
    assert not any(dict(k[1]).get("operation") == "fancy_new_op" for k in got)
    assert got[("recovery_status", (("kind", "MDT"), ("target", "fs-MDT0000")))] == 0


# -- fuzzing (issue 19's rule): any text ends in a Capture, never an exception, and its exposition parses

import os  # noqa: E402
from datetime import timedelta  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import TESTDATA  # noqa: E402

_REAL = [line for name in ("valid", "2.14.0_ddn145_stats", "2.14.0_ddn145_recovery", "2.14.0_ddn229_quota")
         for line in ((TESTDATA / "lustrefs-exporter" / f"{name}.txt").read_text().splitlines()
                      if (TESTDATA / "lustrefs-exporter").is_dir() else [])]
_JUNK = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
_line = st.one_of(st.sampled_from(_REAL or ["memused=1"]), _JUNK,
                  st.builds(lambda line, cut: line[:cut], st.sampled_from(_REAL or ["x"]), st.integers(0, 80)),
                  st.builds(lambda line, junk: line.replace("0", junk, 1), st.sampled_from(_REAL or ["x"]), _JUNK),
                  st.builds(lambda name, junk: f"{name}={junk}", st.sampled_from(
                      ["memused", "health_check", "osd-ldiskfs.f-OST0000.kbytesfree", "mdt.f-MDT0000.num_exports",
                       "obdfilter.f-OST0000.stats", "qmt.f-QMT0000.dt-0x0.glb-usr", "mdd.f-MDT0000.changelog_users",
                       "osd-zfs.f-OST0001.brw_stats", "mdt.f-MDT0000.exports.1.2.3.4@tcp.uuid", "lnet.stats"]), _JUNK))
FUZZ = settings(max_examples=int(os.environ.get("IOWEATHER_FUZZ_EXAMPLES", "40")), deadline=timedelta(seconds=10),
                derandomize=not os.environ.get("IOWEATHER_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(lines=st.lists(_line, max_size=60), newline=st.booleans())
def test_fuzz_any_capture_parses_exports_and_stores(lines, newline):
    from prometheus_client.parser import text_string_to_metric_families

    from ioweather.services.telemetry.exporter_lctl import capture_families
    from ioweather.views.exposition import render

    cap = parse_capture("\n".join(lines) + ("\n" if newline else ""))
    samples = capture_samples(cap, "h")
    assert all(s.value == s.value for s in samples)  # no NaN reading
    text = render(capture_families(cap)).decode()
    list(text_string_to_metric_families(text))


@FUZZ
@given(lines=st.lists(_line, max_size=40), at=st.one_of(st.none(), st.integers(0, 2**62)))
def test_fuzz_import_ends_in_rows_or_one_user_error(lines, at):
    import tempfile

    from ioweather.errors import UserError
    from ioweather.services.telemetry.ingest import to_long
    from ioweather.sources.telemetry.lctl_source import read_captures

    with tempfile.TemporaryDirectory() as d:
        for i in range(2):  # two captures: counters become amounts
            with open(os.path.join(d, f"c{i}.txt"), "w") as f:
                f.write("\n".join(lines[i::2]) + "\n")
        try:
            captures = read_captures(d, at, "f")
        except UserError as e:
            assert "\n" not in str(e)
            return
        for chunk in captures.chunks:
            frame = to_long(chunk)
            assert list(frame.columns) == ["time_ns", "target", "metric", "value", "interval_s"]
            assert not (frame["value"] < 0).any()


VARIANTS = """version=2.16.0_ddn56b
health_check=NOT HEALTHY
mdt.fs-MDT0000.exports.10.73.20.2@tcp.uuid=80fe6b5a-68b9-4dfb-9967-948902c1a2a3
mdt.fs-MDT0000.exports.10.73.20.12@tcp.uuid=fs-MDT0001-mdtlov_UUID
osd-ldiskfs.fs-OST0000.brw_stats=
snapshot_time:         1702058707.803090953 (secs.nsecs)

                           read      |     write
disk I/O size          ios   % cum % |  ios         % cum %
4K:                      0   0   0   |    1   0   0
1M:                3469178 100 100   | 2278824   0   0
2M:                      0   0 100   | 1473309100  99 100

                           read      |     write
block maps msec        maps  % cum % |  maps        % cum %
1:                 5587235 100 100   | 184196106  99  99
obdfilter.fs-OST0000.job_stats=job_stats:
osd-zfs.fs-OST0001.kbytesfree=4106144
"""


def test_format_variants_of_other_versions():
    """Lines as other Lustre versions print them: a `version=` head, `(secs.nsecs)`, buckets aligned
    with spaces, block maps, an idle job_stats on its parameter's line, an inline client UUID, osd-zfs."""
    cap = parse_capture(VARIANTS)
    assert cap.notes == [] and not cap.unknown
    assert cap.healthy is False and cap.unhealthy == []
    assert connected_clients(cap) == {"fs-MDT0000": 1}
    brw = cap.brw[0]
    assert brw.snapshot_ns == 1702058707_803090953 and brw.start_time is None
    assert brw.hists["disk_iosize"] == [("4K", 0, 1), ("1M", 3469178, 2278824), ("2M", 0, 1473309100)]
    assert brw.hists["block_maps_msec"] == [("1", 5587235, 184196106)]
    assert cap.jobs == [] and ("fs-OST0001", "kbytesfree", 4106144) in cap.values


def test_lctl_reads_what_the_proc_reader_reads(testdata):
    """The mock server+client tree as `lctl get_param PARAMS` would print it (a parameter's name is its
    path below /proc/fs/lustre or /sys/fs/lustre with dots): every reading of the /proc reader is
    there under the same (target, metric), with the same value and kind."""
    import fnmatch

    from ioweather.sources.telemetry.lctl_params import PARAMS
    from ioweather.sources.telemetry.lustre import Lustre

    root = testdata / "lustre-procfs"
    parts, seen = [], set()
    for base in ("proc/fs/lustre", "sys/fs/lustre"):
        for dirpath, _, files in sorted(os.walk(root / base)):
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                name = os.path.relpath(path, root / base).replace("/", ".")
                if name in seen or not any(fnmatch.fnmatchcase(name, g) for g in PARAMS):
                    continue
                seen.add(name)
                text = open(path, errors="replace").read().rstrip("\n")
                parts.append(f"{name}={text}\n" if "\n" not in text else f"{name}=\n{text}\n")
    cap = parse_capture("".join(parts))
    lctl = {(s.target, s.metric): (s.value, s.kind) for s in capture_samples(cap, "h")}
    proc = {(s.target, s.metric): (s.value, s.kind) for s in Lustre(root, host="h").collect()}
    assert len(proc) > 400
    assert not [k for k in proc if k not in lctl]
    differ = {k for k in proc if proc[k] != lctl[k]}
    # the tree has two copies of OST0000's capacity that disagree: the /proc reader takes obdfilter's,
    # lctl (as lustrefs-exporter) the osd's
    assert {m for _, m in differ} <= {"avail_bytes", "free_bytes", "files_free", "files_total"}
    for target, metric in differ:
        osd = next((root / "proc/fs/lustre").glob(f"osd-*/{target}"))
        f = {"avail_bytes": "kbytesavail", "free_bytes": "kbytesfree"}.get(metric, metric.replace("_", ""))
        scale = 1024 if metric.endswith("bytes") else 1
        assert lctl[(target, metric)][0] == int((osd / f).read_text().split()[0]) * scale
