"""`import mmperfmon`: real GPFS `mmperfmon query` archives (pytokio's test data and NERSC samples)
against an independent reading of the same text, every container form, damaged and garbage input,
and `workload` on the result."""

from __future__ import annotations

import gzip
import io
import json
import re
import tarfile
from collections import defaultdict
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd
import pytest

from inprocess import run_cli  # the answers are the point: in this process (tests/inprocess.py)
from ioweather.services.telemetry.imports import import_one
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.sources.telemetry.mmperfmon import parse_text, read_mmperfmon
from ioweather.store import telemetry_layout as layout

S = 1_000_000_000
MICRO = "pytokio/mmperfmon.2019-05-15-micro.tgz"
REAL = ("mmperfmon-nsdds.txt.gz", "mmperfmon-gpfsNumberOperations.txt.gz", "mmperfmon-usage.txt.gz")
COLUMN = {"gpfs_nsdds_bytes_read": "read_bytes", "gpfs_nsdds_bytes_written": "write_bytes",
          "gpfs_fs_bytes_read": "read_bytes", "gpfs_fs_bytes_written": "write_bytes",
          "gpfs_fs_read_ops": "read_ops", "gpfs_fs_write_ops": "write_ops"}


def imp(settings, source, fs="g", tz=None):
    return import_one(settings, "mmperfmon", str(source), fs, tz=tz, since_ns=None, until_ns=None, interval=None,
                      cumulative=False)


def column_sums(text: str) -> dict[str, float]:
    """Independent of the importer: the sum of every cell under each header name, found by the
    header's character positions (the tables are right-aligned), with no use of the legend."""
    sums: dict[str, float] = defaultdict(float)
    spans = None
    for line in text.splitlines():
        if re.match(r"^\s*Row\s+Timestamp", line):
            spans = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", line)][2:]
            continue
        if spans and re.match(r"^\s*\d+ \d{4}-", line):
            prev = spans[0][0] - 1
            for start, end, name in spans:
                cell = line[prev:end].split()
                prev = end
                sums[name] += float(cell[0]) if cell else 0.0
    return dict(sums)


def texts_of(path) -> dict[str, str]:
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as t:
            return {m.name: t.extractfile(m).read().decode() for m in t.getmembers() if m.isfile()}
    return {path.name: gzip.open(path, "rt").read()}


@pytest.mark.parametrize("name", [MICRO, *REAL])
def test_totals_equal_an_independent_parse(name, testdata, shared_data, tmp_path):
    path = (testdata / name) if name.startswith("pytokio/") else (shared_data / "tokio" / name)
    settings = Settings(home=tmp_path / "h")
    summary = imp(settings, path)
    df = layout.read_frame(settings, "g")
    assert summary.rows == len(df) and summary.bad_lines == 0
    assert not df["value"].isna().any()
    want: dict[tuple[str, str], float] = defaultdict(float)
    for member, text in texts_of(path).items():
        # per host: the micro archive has one server per file, the others name one host throughout
        host = re.search(r"(ngfsv\d+)", member).group(1) if "ngfsv" in member else re.search(r"\d:\s+([^.|]+)", text).group(1)
        for col, total in column_sums(text).items():
            if col in COLUMN and "GPFSFilesystem" not in text:
                want[(host, COLUMN[col])] += total
    if "GPFSFilesystem" in "".join(texts_of(path).values()):
        # file-system metrics are per node and GPFS file system: compare the grand totals per metric
        text = "".join(texts_of(path).values())
        for col, total in column_sums(text).items():
            assert df.loc[df.metric == COLUMN[col], "value"].sum() == total
        assert set(df.target) == {"ngfsv492:tlproject2", "ngfsv492:tlprojecta"}
    else:
        got = df[df.metric.isin(["read_bytes", "write_bytes"])].groupby(["target", "metric"])["value"].sum().to_dict()
        assert got == pytest.approx(dict(want), rel=0, abs=0)
    # gauges: cpu_pct = cpu_user + cpu_sys (percent as printed), memory in MiB
    sums: dict[str, float] = defaultdict(float)
    for text in texts_of(path).values():
        for col, total in column_sums(text).items():
            sums[col] += total
    if "cpu_user" in sums:
        assert df.loc[df.metric == "cpu_pct", "value"].sum() == pytest.approx(sums["cpu_user"] + sums["cpu_sys"])
        assert df.loc[df.metric == "mem_total_bytes", "value"].sum() == pytest.approx(sums["mem_total"] * 2 ** 20)
        used = df.loc[df.metric == "mem_used_bytes", "value"].sum()
        assert used == pytest.approx((sums["mem_total"] - sums["mem_free"]) * 2 ** 20)
    else:
        assert not df.metric.isin(["cpu_pct", "mem_used_bytes"]).any()


def test_wrapped_tables_continue_the_legend(testdata):
    """A wide query prints several tables; the second one's first column is the legend's 7th
    entry (net_s) here, not its 1st (cpu_user) as pytokio files it."""
    text = texts_of(testdata / MICRO)["mmperfmon.2019-05-15-micro/servers/ngfsv493.nersc.gov.2019-05-15-12:00:00.out"]
    v = parse_text(text)
    assert not v.bad_lines
    net_s = [x for x, m in zip(v.value, v.metric_of()) if m == "net_s"]
    cpu = [x for x, m in zip(v.value, v.metric_of()) if m == "cpu_user"]
    assert len(net_s) == len(cpu) == 60
    assert net_s[0] == 390.0 * 1024 and cpu[0] == 0.08   # row 1 of each table, as printed
    r = read_mmperfmon(str(testdata / MICRO))
    first = r.frame[(r.frame.target == "ngfsv493") & (r.frame.time_ns == r.frame.time_ns.min())].set_index("metric")["value"]
    assert first["cpu_pct"] == pytest.approx(0.08 + 0.06)
    assert first["mem_total_bytes"] == 65769.6 * 2 ** 20
    assert first["mem_used_bytes"] == pytest.approx((65769.6 - 40548.9) * 2 ** 20)
    assert first["mem_used_pct"] == pytest.approx(100 * (65769.6 - 40548.9) / 65769.6)


def test_rows_label_the_end_of_their_bucket_in_local_time(shared_data, tmp_path):
    settings = Settings(home=tmp_path / "h")
    s = imp(settings, shared_data / "tokio" / "mmperfmon-nsdds.txt.gz", tz="America/Los_Angeles")
    first_row = datetime(2019, 3, 4, 16, 1, tzinfo=ZoneInfo("America/Los_Angeles"))   # '2019-03-04-16:01:00'
    df = layout.read_frame(settings, "g")
    assert df.time_ns.min() == int(first_row.timestamp()) * S - 60 * S
    assert s.start == "2019-03-05T00:00:00.000Z"
    assert set(df.interval_s) == {60.0}
    # without --timezone, a note says the times were read as UTC
    s2 = imp(Settings(home=tmp_path / "h2"), shared_data / "tokio" / "mmperfmon-nsdds.txt.gz")
    assert s2.start == "2019-03-04T16:00:00.000Z" and any("--timezone" in n for n in s2.notes)


def test_tar_of_gz_members_and_directory_give_the_same_rows(testdata, tmp_path):
    texts = texts_of(testdata / MICRO)
    tar_gz = tmp_path / "members-gz.tar"
    folder = tmp_path / "dir"
    with tarfile.open(tar_gz, "w") as t:
        for name, text in texts.items():
            data = gzip.compress(text.encode())
            info = tarfile.TarInfo(name + ".gz")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    frames = [read_mmperfmon(str(p)).frame for p in (testdata / MICRO, tar_gz, folder)]
    pd.testing.assert_frame_equal(frames[0], frames[1])
    pd.testing.assert_frame_equal(frames[0], frames[2])


def test_truncated_gz_keeps_what_came_before_and_never_a_partial_sum(shared_data, tmp_path):
    full_path = shared_data / "tokio" / "mmperfmon-nsdds.txt.gz"
    raw = full_path.read_bytes()
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(raw[: len(raw) * 2 // 3])
    settings = Settings(home=tmp_path / "h")
    s = imp(settings, cut)
    assert any("is truncated" in n for n in s.notes)
    full = read_mmperfmon(str(full_path)).frame.set_index(["time_ns", "target", "metric"])["value"]
    got = layout.read_frame(settings, "g").set_index(["time_ns", "target", "metric"])["value"]
    # the lost tables held some of the server's NSDs: its sums are unknown, never too small
    assert got.isna().all() and set(got.index) <= set(full.index)
    # a truncated archive of several files keeps its complete members
    tgz = (shared_data.parent / "testdata" / MICRO).read_bytes()
    (tmp_path / "cut.tgz").write_bytes(tgz[: len(tgz) // 2])
    part = read_mmperfmon(str(tmp_path / "cut.tgz"))
    assert any("truncated" in n for n in part.notes)
    whole = read_mmperfmon(str(shared_data.parent / "testdata" / MICRO)).frame.set_index(["time_ns", "target", "metric"])
    kept = part.frame.dropna().set_index(["time_ns", "target", "metric"])
    assert len(kept) > 0
    assert (whole.loc[kept.index, "value"] == kept["value"]).all()


def test_garbage_lines_are_counted_and_the_rest_imported(shared_data, tmp_path):
    text = gzip.open(shared_data / "tokio" / "mmperfmon-nsdds.txt.gz", "rt").read().splitlines()
    rows = [i for i, line in enumerate(text) if re.match(r"^\s*\d+ 2019-", line)]
    damaged = text.copy()
    damaged[rows[4]] = damaged[rows[4]].replace(" 0 ", " zero ", 1)                   # a word in a row
    damaged[rows[70]] = " ".join(damaged[rows[70]].split()[:-2])                      # a short row
    damaged.insert(rows[100], "%%% garbage from a full disk %%%")                     # not mmperfmon at all
    src = tmp_path / "damaged.txt"
    src.write_text("\n".join(damaged) + "\n")
    settings = Settings(home=tmp_path / "h")
    s = imp(settings, src)
    assert s.bad_lines == 3
    assert any(n.startswith("3 unreadable lines skipped (first: damaged.txt line") for n in s.notes)
    got = layout.read_frame(settings, "g").set_index("time_ns")["value"]
    clean = read_mmperfmon(str(shared_data / "tokio" / "mmperfmon-nsdds.txt.gz")).frame.set_index("time_ns")["value"]
    lost = got.index[got.isna()]
    assert len(lost) == 2          # the two damaged rows' minutes: some NSDs of the server have no value
    assert (got.drop(lost) == clean.drop(lost)).all() and len(got) == len(clean)


def test_a_header_that_disagrees_with_the_legend_rejects_its_table():
    text = ("Legend:\n 1:\th1.x|GPFSNSDDisk|d0|gpfs_nsdds_bytes_read\n 2:\th1.x|GPFSNSDDisk|d1|gpfs_nsdds_bytes_read\n\n"
            "Row           Timestamp gpfs_nsdds_bytes_read\n  1 2019-01-01-00:01:00    5\n  2 2019-01-01-00:02:00    7\n\n"
            "Row           Timestamp cpu_user\n  1 2019-01-01-00:01:00    9\n  2 2019-01-01-00:02:00   11\n")
    v = parse_text(text)
    assert [why for _, _, why in v.bad_lines] == ["table header does not match the legend"] + \
        ["row without a usable table header"] * 2
    assert v.value == [5.0, 7.0] and [v.columns[c][2] for c in v.col] == ["d0", "d0"]


def test_nothing_usable_is_an_error_and_the_batch_goes_on(shared_data, tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("this is not\nmmperfmon output\n")
    good = shared_data / "tokio" / "mmperfmon-nsdds.txt.gz"
    home = tmp_path / "h"
    p = run_cli("import", "mmperfmon", str(junk), str(tmp_path / "missing.gz"), str(good), "--fs", "g", "--json",
                home=home)
    assert p.returncode == 2
    errors = [line for line in p.stderr.splitlines() if line.startswith("ioweather: error:")]
    assert len(errors) == 2 and "no mmperfmon values found in 1 file(s) (2 unreadable lines" in errors[0]
    assert "no such file or directory" in errors[1]
    out = json.loads(p.stdout)
    assert out["failed"] == 2 and out["rows"] == 60
    # importing the same file again replaces it: still 60 rows
    run_cli("import", "mmperfmon", str(good), "--fs", "g", home=home, check=True)
    assert len(layout.read_frame(Settings(home=home), "g")) == 60
    with pytest.raises(UserError, match="no mmperfmon values"):
        read_mmperfmon(str(junk))


@pytest.mark.parametrize("name,resample", [(MICRO, "60s"), ("mmperfmon-nsdds.txt.gz", "60s"),
                                           ("mmperfmon-gpfsNumberOperations.txt.gz", "10m")])
def test_workload_runs_on_imported_gpfs_data(name, resample, testdata, shared_data, tmp_path):
    path = (testdata / name) if name.startswith("pytokio/") else (shared_data / "tokio" / name)
    home = tmp_path / "h"
    run_cli("import", "mmperfmon", str(path), "--fs", "gpfs", "--timezone", "America/Los_Angeles", home=home, check=True)
    p = run_cli("workload", "--fs", "gpfs", "--resample", resample, "--json", home=home, check=True)
    w = json.loads(p.stdout)
    df = layout.read_frame(Settings(home=home), "gpfs")
    assert w["read_bytes"] == df.loc[df.metric == "read_bytes", "value"].sum()
    assert (w["write_bytes"] or 0) == df.loc[df.metric == "write_bytes", "value"].sum()
    assert w["missing_samples"] == 0 and w["peak_total_bps"] > 0


def test_gauges_only_workload_says_so(shared_data, tmp_path):
    home = tmp_path / "h"
    run_cli("import", "mmperfmon", str(shared_data / "tokio" / "mmperfmon-usage.txt.gz"), "--fs", "u", home=home,
            check=True)
    p = run_cli("workload", "--fs", "u", "--json", home=home)
    assert p.returncode != 0 and p.stdout == ""
    assert p.stderr.strip().splitlines()[-1] == "ioweather: error: telemetry for 'u' has no read_bytes or write_bytes rows"


def test_help_names_the_kinds():
    p = run_cli("import", "--help", check=True)
    assert "mmperfmon" in p.stdout and "lfsdf" in p.stdout
    assert "--at" in run_cli("import", "lfsdf", "--help", check=True).stdout  # each kind's own options


def test_host_names_are_shortened_but_addresses_kept():
    text = ("Legend:\n 1:\tngfsv468.nersc.gov|CPU|cpu_user\n 2:\t10.1.2.3|CPU|cpu_user\n"
            "Row           Timestamp cpu_user cpu_user\n  1 2019-01-01-00:01:00    1    2\n")
    assert [c[0] for c in parse_text(text).columns] == ["ngfsv468", "10.1.2.3"]
