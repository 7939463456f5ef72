"""issue 30: no scientific notation in a table or a report. `fsstats` printed the age of a file last
touched in 1979 as `1.713e+04` days; the shared data's tree and a tree with such ages and sizes from
0 B to 1 TiB (sparse) are walked by the real command, table and HTML report."""

from __future__ import annotations

import os
import re

import pytest

from conftest import run_cli
from inprocess import run_cli as in_process_run  # the answers are the point: in this process
from ioweather.units import format_number
from shared_stores import copy_home, lmt_day

SCIENTIFIC = re.compile(r"\d[eE][+-]\d")


@pytest.fixture
def old_tree(tmp_path):
    root = tmp_path / "tree"
    root.mkdir()
    for i, (size, year) in enumerate([(0, 1971), (1, 1979), (4096, 1999), (1 << 40, 2025)]):
        p = root / f"f{i}"
        with open(p, "wb") as f:
            f.truncate(size)  # sparse: 1 TiB costs no disk
        t = (year - 1970) * 365.25 * 86400
        os.utime(p, (t, t))
    return root


@pytest.mark.parametrize("which", ["old", "shared"])
def test_fsstats_table_and_report_have_no_exponent(which, old_tree, shared_data, tmp_path):
    tree = old_tree if which == "old" else shared_data
    html = tmp_path / "r.html"
    p = run_cli("fsstats", str(tree), "--html", str(html), home=tmp_path / "home", check=True)
    assert "days" in p.stdout
    assert not SCIENTIFIC.findall(p.stdout), p.stdout
    # an SVG's path coordinates are not text a person reads: only what is shown between tags
    text = re.sub(r"<[^>]*>", " ", html.read_text())
    assert not SCIENTIFIC.findall(text), SCIENTIFIC.findall(text)[:5]
    if which == "old":
        assert re.search(r"│ +20,\d{3} │", p.stdout), p.stdout  # the 1971 file's age, in days


@pytest.mark.parametrize("v,text", [(17130.0, "17,130"), (365.25, "365.2"), (12.3456, "12.35"), (0.5, "0.5"),
                                    (1.2345e-6, "0.000001234"), (1e10, "10,000,000,000"), (0, "0"),
                                    (float("nan"), "-"), (None, "-")])
def test_format_number(v, text):
    assert format_number(v) == text


@pytest.fixture(scope="module")
def shared_home(testdata, tmp_path_factory):
    """The shared Darshan logs ingested, the LMT day imported, tokio-abc's Edison runs imported."""
    home = copy_home(lmt_day(tmp_path_factory), tmp_path_factory.mktemp("numbers") / "home")
    run_cli("jobs", "ingest", str(testdata / "darshan"), "-q", home=home, check=True)
    run_cli("bench", "import", str(testdata / "tokio-abc/edison-summaries_2017-02-14-2018-02-15.csv.gz"),
            home=home, check=True)
    return home


LMT_DAY = ("--fs", "snx11025", "--since", "2018-01-28T08:00:00Z", "--until", "2018-01-29T08:00:00Z")
EVENTS = ("--resample", "5s", "--smooth", "30s", "--min-amplitude", "100MiB/s")  # tests/test_one_truth.py's
TABLES = [("jobs", "summary"), ("jobs", "list"), ("bench", "summary"), ("workload", *LMT_DAY),
          ("events", *LMT_DAY, *EVENTS), ("report", "--fs", "snx11025", *EVENTS)]


@pytest.mark.slow
def test_table_commands_on_the_shared_data_have_no_exponent(shared_home, testdata):
    logs = sorted((testdata / "darshan").glob("*.darshan"))
    runs = [list(t) for t in TABLES] + [["job", str(p)] for p in logs] + [["why", str(logs[-1])]]
    for args in runs:  # 21 commands: in this process (21 new ones took > 300 s at load 15)
        p = in_process_run(*args, home=shared_home)
        if args[0] == "job" and p.returncode == 1:  # a log PyDarshan refuses (empty_log): its one line
            continue
        assert p.returncode == 0, (args, p.stderr)
        assert p.stdout.strip(), args
        assert not SCIENTIFIC.findall(p.stdout), (args, SCIENTIFIC.findall(p.stdout)[:5])
