"""Later `lctl get_param` captures made from a real one, for the collect and import tests: every
stats line has 10 more samples and 10,000 more in its sum, every brw_stats bucket 3 more reads and
7 more writes, snapshot times are 60 s later, and the MDT's md_stats `statfs` goes back to 5 (a reset)."""

from __future__ import annotations

import re

STATS_ADD, SUM_ADD, BRW_READ_ADD, BRW_WRITE_ADD, RESET_TO = 10, 10_000, 3, 7, 5
_STATS = re.compile(r"^(\S+)(\s+)(\d+)( samples \[\w+\])(?:(\s+\d+\s+\d+\s+)(\d+)(.*))?$")
_BUCKET = re.compile(r"^(\w+:\s+)(\d+)(\s+\d+\s+\d+\s+\|\s+)(\d+)(.*)$")
_TIME = re.compile(r"^(snapshot_time:?\s+)(\d+)(\..*)$")


def later(text: str, seconds: int = 60) -> str:
    out = []
    param = ""
    for line in text.split("\n"):
        if re.match(r"^[A-Za-z][\w.@:-]*=", line):
            param = line.split("=")[0]
        m = _TIME.match(line)
        if m:
            line = f"{m.group(1)}{int(m.group(2)) + seconds}{m.group(3)}"
        m = _STATS.match(line)
        if m:
            name, gap, n, unit, mid, total, rest = m.groups()
            n = RESET_TO if param.endswith("md_stats") and name == "statfs" else int(n) + STATS_ADD
            line = f"{name}{gap}{n}{unit}" + (f"{mid}{int(total) + SUM_ADD}{rest}" if total is not None else "")
        m = _BUCKET.match(line)
        if m:
            line = f"{m.group(1)}{int(m.group(2)) + BRW_READ_ADD}{m.group(3)}{int(m.group(4)) + BRW_WRITE_ADD}{m.group(5)}"
        out.append(line)
    return "\n".join(out)


def two_captures(directory, testdata, extra: str = ""):
    """`directory` (created) holding a.txt, the real valid.txt, and b.txt, its later() copy (+ `extra`)."""
    real = (testdata / "lustrefs-exporter" / "valid.txt").read_text()
    directory.mkdir(exist_ok=True)
    (directory / "a.txt").write_text(real)
    (directory / "b.txt").write_text(later(real) + extra)
    return directory
