"""`import lfsdf`: pytokio's archives of repeated `lfs df` runs against an independent reading of the
same text, `lfs df -i` with wrapped UUIDs, undated output, damage, and the datasets `workload` reads."""

from __future__ import annotations

import gzip
import json
import re

import numpy as np
import pytest

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from ioweather.services.telemetry.imports import import_one
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.sources.telemetry.lfsdf import read_lfsdf
from ioweather.store import telemetry_layout as layout

S = 1_000_000_000
FULLNESS = "pytokio/sample_ost-fullness.txt.gz"


def imp(settings, source, fs="c", at_ns=None):
    return import_one(settings, "lfsdf", str(source), fs, tz=None, since_ns=None, until_ns=None, interval=None,
                      cumulative=False, at_ns=at_ns)


def independent(text: str) -> dict[tuple[int, str, str], float]:
    """(time_ns, target, metric) -> value, read with one regex per line (no wrapped UUIDs in these files)."""
    out, when = {}, None
    for line in text.splitlines():
        if line.startswith("BEGIN "):
            when = int(line.split()[1]) * S
            continue
        m = re.match(r"^(\S+)_UUID\s+(\d+)\s+(\d+)\s+(\d+)\s", line)
        if m:
            total, used, avail = (int(x) for x in m.groups()[1:])
            out[(when, m.group(1), "capacity_bytes")] = total * 1024.0
            out[(when, m.group(1), "free_bytes")] = (total - used) * 1024.0
            out[(when, m.group(1), "avail_bytes")] = avail * 1024.0
    return out


def test_archive_equals_an_independent_parse(testdata, tmp_path):
    settings = Settings(home=tmp_path / "h")
    s = imp(settings, testdata / FULLNESS)
    want = independent(gzip.open(testdata / FULLNESS, "rt").read())
    df = layout.read_frame(settings, "c")
    got = {(int(t), tg, m): v for t, tg, m, v in zip(df.time_ns, df.target, df.metric, df.value)}
    assert got == want
    assert s.bad_lines == 0 and s.targets == len({k[1] for k in want})
    times = np.unique(df.time_ns)
    assert len(times) == 70 and set(df.interval_s) == {np.median(np.diff(times)) / S}
    assert any("4 Lustre file systems" in n for n in s.notes)


def test_fs_named_like_a_lustre_file_system_keeps_only_its_targets(testdata, tmp_path):
    settings = Settings(home=tmp_path / "h")
    s = imp(settings, testdata / FULLNESS, fs="snx11035")
    df = layout.read_frame(settings, "snx11035")
    assert set(df.target) == {f"snx11035-OST{i:04x}" for i in range(24)} | {"snx11035-MDT0000"}
    assert s.notes == ["kept the targets of snx11035; those of snx11025, snx11036, snx11168 left out"]


def test_undated_output_needs_at(testdata, tmp_path):
    home = tmp_path / "h"
    p = run_cli("import", "lfsdf", str(testdata / "pytokio" / "lfs-df.txt.gz"), "--fs", "snx11025", home=home)
    assert p.returncode == 2
    errors = [line for line in p.stderr.splitlines() if line.startswith("ioweather: error:")]
    assert len(errors) == 1 and errors[0].endswith("without a `BEGIN <unix seconds>` line: give --at TIME "
                                                   "(when it was taken)")
    p = run_cli("import", "lfsdf", str(testdata / "pytokio" / "lfs-df.txt.gz"), "--fs", "snx11025",
                "--at", "2017-03-20T08:30:00Z", "--json", home=home, check=True)
    out = json.loads(p.stdout)["sources"][0]
    assert out["start"] == out["end"] == "2017-03-20T08:30:00.000Z"
    df = layout.read_frame(Settings(home=home), "snx11025")
    want = {k[1:]: v for k, v in independent(gzip.open(testdata / "pytokio" / "lfs-df.txt.gz", "rt").read()).items()
            if k[1].startswith("snx11025-")}
    assert {(tg, m): v for tg, m, v in zip(df.target, df.metric, df.value)} == want
    assert df.interval_s.isna().all()   # one snapshot: no spacing to tell


INODES = """BEGIN 1700000000
UUID                   1K-blocks        Used   Available Use% Mounted on
lquake-MDT0000_UUID    1048576000    10485760  1038090240   1% /p/lquake[MDT:0]
lquake-OST0000_UUID   17179869184  8589934592  8589934592  50% /p/lquake[OST:0]
lquake-OST0001_UUID   17179869184  4294967296 12884901888  25% /p/lquake[OST:1]
OST0002             : inactive device

filesystem_summary:   34359738368 12884901888 21474836480  38% /p/lquake

UUID                      Inodes       IUsed       IFree IUse% Mounted on
lquake-MDT0000_UUID    1073741824    52428800  1021313024   5% /p/lquake[MDT:0]
lquake-OST0000_UUID      16777216     1048576    15728640   7% /p/lquake[OST:0]
lquake-OST0001-with-a-very-long-name_UUID
                         16777216     2097152    14680064  13% /p/lquake[OST:1]
#### garbage ####

filesystem_summary:   1073741824    52428800  1021313024   5% /p/lquake
"""


def test_inodes_wrapped_uuids_inactive_targets_and_garbage(tmp_path):
    src = tmp_path / "lfs.txt"
    src.write_text(INODES)
    r = read_lfsdf(str(src))
    v = r.frame.set_index(["target", "metric"])["value"]
    assert v[("lquake-OST0000", "capacity_bytes")] == 17179869184 * 1024
    assert v[("lquake-OST0000", "free_bytes")] == (17179869184 - 8589934592) * 1024
    assert v[("lquake-OST0001", "avail_bytes")] == 12884901888 * 1024
    assert v[("lquake-MDT0000", "files_total")] == 1073741824
    assert v[("lquake-MDT0000", "files_free")] == 1021313024
    assert v[("lquake-OST0001-with-a-very-long-name", "files_free")] == 14680064
    assert set(r.frame.time_ns) == {1700000000 * S}
    assert r.bad_lines == 1
    assert "lfs.txt: 1 inactive targets without numbers" in r.notes
    assert any(n.startswith("1 unreadable lines skipped (first: lfs.txt line 15: '#### garbage ####')") for n in r.notes)


def test_truncated_archive_keeps_the_complete_lines(testdata, tmp_path):
    raw = (testdata / FULLNESS).read_bytes()
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(raw[: len(raw) // 2])
    r = read_lfsdf(str(cut))
    assert any("is truncated" in n for n in r.notes)
    full = read_lfsdf(str(testdata / FULLNESS)).frame.set_index(["time_ns", "target", "metric"])["value"]
    part = r.frame.set_index(["time_ns", "target", "metric"])["value"]
    assert 0 < len(part) < len(full)
    assert (full.loc[part.index] == part).all()


def test_nothing_to_read_is_one_line(tmp_path):
    src = tmp_path / "empty.txt"
    src.write_text("nothing here\n")
    with pytest.raises(UserError, match=r"no `lfs df` lines found \(1 unreadable lines"):
        read_lfsdf(str(src))


def test_workload_with_capacity_rows(testdata, shared_data, tmp_path):
    """Capacity alone has no bytes to analyse (a one-line error); next to GPFS I/O it changes nothing."""
    home = tmp_path / "h"
    run_cli("import", "lfsdf", str(testdata / FULLNESS), "--fs", "mix", home=home, check=True)
    p = run_cli("workload", "--fs", "mix", "--resample", "15m", "--json", home=home)
    assert p.returncode != 0 and p.stdout == ""
    assert p.stderr.strip() == "ioweather: error: telemetry for 'mix' has no read_bytes or write_bytes rows"
    gpfs = str(shared_data / "tokio" / "mmperfmon-nsdds.txt.gz")
    run_cli("import", "mmperfmon", gpfs, "--fs", "mix", home=home, check=True)
    run_cli("import", "mmperfmon", gpfs, "--fs", "alone", home=home, check=True)
    with_cap = json.loads(run_cli("workload", "--fs", "mix", "--since", "2019-03-04", "--json", home=home,
                                  check=True).stdout)
    alone = json.loads(run_cli("workload", "--fs", "alone", "--json", home=home, check=True).stdout)
    for key in ("read_bytes", "samples", "peak_read_bps", "idle_periods", "events"):
        assert with_cap[key] == alone[key]
