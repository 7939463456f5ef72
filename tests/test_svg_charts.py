"""The hand-written SVG charts of `ioweather job --html`: round ticks in human units, escaped text,
well-formed SVG, and no matplotlib on that path (it cost more than the whole analysis)."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np

from ioweather.units import format_bytes, format_seconds
from ioweather.views import svg_charts as charts

SVG = "{http://www.w3.org/2000/svg}"
SCI = r"\d(?:\.\d+)?[eE][+-]?\d"


def texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


def test_nice_ticks_are_round_in_the_unit_shown():
    assert charts.nice_ticks(47, 4) == [0, 20, 40, 60]
    assert charts.nice_ticks(60_000, 4) == [0, 20_000, 40_000, 60_000]
    gib = 1024 ** 3
    assert charts.nice_ticks(98.6 * gib, 4, format_bytes) == [0, 50 * gib, 100 * gib]
    assert [format_seconds(t) for t in charts.nice_ticks(6.1 * 86400, 4, format_seconds)] == [
        "0 s", "2.0 d", "4.0 d", "6.0 d", "8.0 d"]
    assert [format_seconds(t) for t in charts.nice_ticks(0.0005, 4, format_seconds)] == [
        "0 s", "200 µs", "400 µs", "600 µs"]
    assert charts.nice_ticks(0) == [0.0, 1.0] and charts.nice_ticks(float("nan")) == [0.0, 1.0]


def test_every_text_is_escaped_and_the_svg_well_formed():
    evil = "<script>alert(1)</script> & \"q\""
    svgs = [charts.hbars([evil, "B"], [(evil, "#000", [1e-7, 3e5])], format_seconds, evil, evil),
            charts.vbars([evil], [("a", "#000", [1.5e12]), ("b", "#111", [0])], format_bytes, evil, evil),
            charts.steps(np.arange(5), np.array([0, 1e15, 2, 3, 4.0]), format_bytes, evil, "rank", "#000", evil),
            charts.timeline(np.array([0.0, 1e-6, 2e5]), np.array([1.0, 2e-6, 3e5]), np.array([0, 3, 1]),
                            np.array([True, False, True]), format_seconds, evil)]
    for svg in svgs:
        assert "<script" not in svg
        root = ET.fromstring(svg)  # raises on anything not well-formed
        assert root.find(f"{SVG}title").text == evil
        labels = texts(svg)
        assert labels and not [t for t in labels if re.search(SCI, t)], labels
    assert evil in texts(svgs[0]) and evil in texts(svgs[1])


def test_hbars_bar_lengths_are_proportional_to_the_values():
    svg = charts.hbars(["x", "y"], [("v", "#123456", [30.0, 90.0])], format_seconds, "t", "t")
    widths = [float(r.get("width")) for r in ET.fromstring(svg).iter(f"{SVG}rect") if r.get("fill") == "#123456"
              and r.find(f"{SVG}title") is not None]
    assert len(widths) == 2 and abs(widths[1] / widths[0] - 3.0) < 0.01


def test_timeline_merges_overlapping_segments_of_a_row():
    # three overlapping writes on rank 0, one read on rank 1: one write run, one read run
    svg = charts.timeline(np.array([0.0, 1.0, 2.0, 5.0]), np.array([1.5, 2.5, 3.0, 6.0]), np.array([0, 0, 0, 1]),
                          np.array([True, True, True, False]), format_seconds, "t")
    paths = {p.get("stroke"): p.get("d") for p in ET.fromstring(svg).iter(f"{SVG}path")}
    assert paths["#f58518"].count("M") == 1 and paths["#4c78a8"].count("M") == 1


def test_job_html_does_not_import_matplotlib(tmp_path):
    from darshan_support import TESTDATA_LOGS

    log = TESTDATA_LOGS / "imbalanced-io.darshan"
    if not log.exists():
        import pytest

        pytest.skip(f"{log} not present")
    code = ("import sys\nfrom ioweather.cli import cli\n"
            "try:\n    cli(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code, "--home", str(tmp_path), "job", str(log), "--html",
                          str(tmp_path / "r.html")], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count("<svg") >= 5
