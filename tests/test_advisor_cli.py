"""`ioweather job` on E3SM-IO's log (512 processes, PnetCDF over MPI-IO), the real CLI run in this process: the
text and HTML reports show the top layer and the combined savings with their overlaps; `--json` carries the
keys `ioweather why` reads."""

from __future__ import annotations

import json
import re

import pytest

from darshan_support import TESTDATA_LOGS
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

E3SM = TESTDATA_LOGS / "e3sm_io_heatmap_only.darshan"
SCI = r"\d(?:\.\d+)?[eE][+-]?\d"

pytestmark = pytest.mark.skipif(not E3SM.exists(), reason="shared Darshan logs absent")


def test_text_report_shows_the_layer_and_the_combined_column(cli, home):
    r = cli("job", str(E3SM), home=home, env={"COLUMNS": "240"}, check=True)
    out = r.stdout
    assert re.search(r"I/O time \(slowest rank\)\s+11\.7 min = 96\.1% of the run, at MPI-IO", out)
    assert "combined" in out and "in M09" in out      # P05's small reads are M09's read-modify-write
    assert "together ~" in out.splitlines()[0]
    assert not re.search(SCI, out)


def test_html_report_has_the_combined_column(cli, home, tmp_path):
    page = tmp_path / "r.html"
    cli("job", str(E3SM), "--html", str(page), home=home, check=True)
    html = page.read_text()
    assert "<th title=" in html and ">combined</th>" in html and "<td>in M09</td>" in html
    assert "at MPI-IO" in html


def test_json_io_time_and_saving_for_why(cli, home):
    rep = json.loads(cli("job", str(E3SM), "--json", home=home, check=True).stdout)
    perf = rep["perf"]
    assert perf["io_time_layer"] == "MPI-IO"
    # the MPI-IO layer's slowest path, plus the few ms of the slowest rank's own STDIO/POSIX files
    assert perf["layers"]["MPI-IO"]["io_time_s"] <= perf["io_time_s"] < perf["layers"]["MPI-IO"]["io_time_s"] + 0.1
    assert perf["io_time_s"] > 2 * perf["fs_io_time_s"]
    assert 0 < rep["verdict_saving_s"] <= perf["io_time_s"]
    assert rep["verdict_saving_s"] == pytest.approx(sum(f["combined_s"] for f in rep["findings"]
                                                        if f["code"] in rep["verdict_actions"]))
    codes = [f["code"] for f in rep["findings"]]
    # the read-modify-write (with the holes' share of MPI-IO's time above POSIX) first, M08's rest later
    assert codes[0] == "M09" and "M08" in codes[:4]
