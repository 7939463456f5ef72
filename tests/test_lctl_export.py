"""`ioweather export --capture FILE --once` against whamcloud/lustrefs-exporter's own export of each
of the six shared captures (its snapshot tests), sample by sample, both texts read by
prometheus_client's parser. Every sample of the .prom must be there with its value."""

from __future__ import annotations

import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import run_cli as run_process
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

CAPTURES = ["valid", "valid_mds", "2.14.0_ddn145_stats", "2.14.0_ddn145_recovery", "2.14.0_ddn229_quota",
            "llite_client"]


def _samples(text: str) -> dict:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"series {key} twice"
            out[key] = s.value
    return out


@pytest.mark.parametrize("name", CAPTURES)
def test_capture_equals_lustrefs_exporter(cli, home, testdata, name):
    d = testdata / "lustrefs-exporter"
    p = cli("export", "--capture", str(d / f"{name}.txt"), "--once", home=home)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    mine = _samples(p.stdout)
    ref = _samples((d / f"{name}.prom").read_text())
    assert ref, "an empty reference would prove nothing"
    missing = sorted(k for k in ref if k not in mine)
    assert not missing, f"{len(missing)} of {len(ref)} samples missing, first {missing[:3]}"
    wrong = [(k, ref[k], mine[k]) for k in ref if mine[k] != ref[k]]
    assert not wrong, f"{len(wrong)} values differ, first {wrong[:3]}"


def test_capture_list_and_bad_input(cli, home, testdata, tmp_path):
    f = testdata / "lustrefs-exporter" / "valid.txt"
    p = cli("export", "--capture", str(f), "--list", "--json", home=home)
    assert p.returncode == 0, p.stderr
    import json

    fams = {x["name"]: x for x in json.loads(p.stdout)["families"]}
    assert fams["lustre_disk_io_total"]["series"] == 14
    assert fams["lustre_disk_io_total"]["labels"] == ["component", "operation", "size", "target"]
    import gzip

    gz = tmp_path / "valid.txt.gz"
    gz.write_bytes(gzip.compress(f.read_bytes()))
    plain = cli("export", "--capture", str(f), "--once", home=home)
    assert cli("export", "--capture", str(gz), "--once", home=home).stdout == plain.stdout
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(gz.read_bytes()[:600])
    p = cli("export", "--capture", str(cut), "--once", home=home)  # what it holds, and a note
    assert p.returncode == 0 and "lustre_mem_used 5.969573401e+09" in p.stdout and "cut short" in p.stderr
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for args, word in ((["--capture", str(tmp_path / "none"), "--once"], "no such file"),
                       (["--capture", str(bad), "--once"], "not a readable gzip file"),
                       (["--capture", str(fifo), "--once"], "FIFO"),
                       (["--capture", str(f)], "--once"),
                       (["--capture", "/etc/hostname", "--once"], "no `lctl get_param` parameter")):
        # a FIFO nobody writes would hang a reader that opened it: that case in a process a timeout can end
        p = (run_process if str(fifo) in args else cli)("export", *args, home=home)
        assert p.returncode == 2 and word in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_top_jobs_caps_the_job_series(cli, home, tmp_path):
    lines = ["obdfilter.fs-OST0000.job_stats=", "job_stats:"]
    for j in range(5):
        lines += [f"- job_id:          job{j}", "  snapshot_time:   1716295737",
                  f"  write_bytes:     {{ samples: {j + 1}, unit: bytes, min: 4096, max: 1048576, sum: {(j + 1) * 1000}, sumsq: 0 }}",
                  "  punch:           { samples: 2, unit: usecs, min: 1, max: 3, sum: 4, sumsq: 10 }"]
    f = tmp_path / "jobs.txt"
    f.write_text("\n".join(lines) + "\n")
    p = cli("export", "--capture", str(f), "--once", "--top-jobs", "2", home=home)
    assert p.returncode == 0, p.stderr
    s = _samples(p.stdout)
    jobs = {dict(k[1])["jobid"] for k in s}
    assert jobs == {"job4", "job3", "_other"}  # the two moving the most bytes, the other three summed
    other = (("component", "ost"), ("jobid", "_other"))
    assert s[("lustre_job_write_bytes_total", (*other, ("operation", "write_bytes"), ("target", "fs-OST0000")))] == 6000
    assert s[("lustre_job_write_samples_total", (*other, ("operation", "write_bytes"), ("target", "fs-OST0000")))] == 6
    assert s[("lustre_job_stats_total", (*other, ("operation", "punch"), ("target", "fs-OST0000")))] == 6
    key = ("lustre_job_write_bytes_total", (("component", "ost"), ("jobid", "job4"), ("operation", "write_bytes"),
                                           ("target", "fs-OST0000")))
    assert s[key] == 5000
    assert s[("lustre_job_stats_total", (("component", "ost"), ("jobid", "job4"), ("operation", "punch"),
                                         ("target", "fs-OST0000")))] == 2
