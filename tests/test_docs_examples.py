"""Issue 20, item 19: the docs' examples give what the commands give. docs/workload.md's worked
example (run as written: import with the LMT server's zone, then workload), its event times to the
second for 5 s data, `workload --html` without a matplotlib warning, and docs/darshan.md's threshold
list equal to the defaults in the code."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import tomllib
from pathlib import Path

from ioweather.stats.findings import Thresholds
from inprocess import in_process_cli  # noqa: F401  (the `cli` fixture, in this process)

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _block_after(text: str, marker: str, fence: str) -> str:
    start = text.index(fence, text.index(marker)) + len(fence)
    return text[start:text.index("```", start)]


def test_darshan_threshold_list_is_every_default():
    toml = _block_after((DOCS / "darshan.md").read_text(), "### Thresholds", "```toml\n")
    documented = tomllib.loads(toml)["thresholds"]
    defaults = {f.name: f.default for f in dataclasses.fields(Thresholds)}
    assert list(documented) == list(defaults)  # every threshold, in the code's order
    assert documented == defaults


def _worked_example(testdata) -> tuple[list[list[str]], list[str]]:
    """(the commands, the lines shown) of docs/workload.md's worked example."""
    block = _block_after((DOCS / "workload.md").read_text(), "## Worked example", "```\n")
    block = block.replace("\\\n", " ").replace("../shared/testdata", str(testdata))
    commands = [shlex.split(line[2:]) for line in block.splitlines() if line.startswith("$ ")]
    shown = [line for line in block.splitlines() if line and not line.startswith("$ ") and line.strip() != "..."]
    return commands, shown


def _cells(line: str) -> str:
    """A table row without rich's box drawing, single-spaced."""
    return " ".join(re.sub(r"[│┃]", " ", line).split())


def test_workload_worked_example_as_written(cli, home, testdata, tmp_path):
    commands, shown = _worked_example(testdata)
    assert [c[:2] for c in commands] == [["ioweather", "import"], ["ioweather", "workload"]]
    assert "--timezone" in commands[0]
    cli(*commands[0][1:], home=home, check=True)
    p = cli(*commands[1][1:], home=home, check=True)
    out = {_cells(line) for line in p.stdout.splitlines()}
    missing = [line for line in shown if _cells(line) not in out]
    assert missing == [], p.stdout
    assert any(_cells(line).startswith("range 2018-01-28T08:00:00.000Z") for line in shown)
    # events to the second (5 s intervals): 08:00:05, not 08:00
    assert sum(bool(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", _cells(line))) for line in shown) == 4

    # --html: the figures of five minutes (shorter than one spectrogram segment) without a warning
    html = tmp_path / "w.html"
    p = cli(*commands[1][1:], "--html", str(html), home=home, check=True)
    assert "Warning" not in p.stderr and p.stderr.strip() == f"wrote {html}", p.stderr
    assert html.stat().st_size > 10_000


def test_event_times_match_the_json_to_the_second(cli, home, testdata):
    commands, _ = _worked_example(testdata)
    cli(*commands[0][1:], home=home, check=True)
    doc = json.loads(cli(*commands[1][1:], "--json", home=home, check=True).stdout)
    table = cli(*commands[1][1:], home=home, check=True).stdout
    rows = [_cells(line) for line in table.splitlines() if re.match(r"\d{4}-", _cells(line))]
    assert len(rows) == len(doc["events"]) == 4
    for row, e in zip(rows, doc["events"]):
        want = [e[k].replace("T", " ")[:19] for k in ("start", "end", "peak_time")]
        assert row.split()[:6] == " ".join(want).split()
