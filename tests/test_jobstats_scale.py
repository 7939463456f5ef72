"""Lustre job_stats at a center's scale (issue 40): `export --capture` of 10,000 jobs on 100 OSTs and an
MDT keeps the top jobs and one jobid="_other" series per target and operation, and `collect` keeps the
top jobs' rows per target and tick and one `<target>/_other` row. Both are checked against sums of the
capture computed here by a separate reading of its text (a regular expression per line), exactly, as
integers; and the number of series or stored targets is checked against its bound."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from ioweather.services.telemetry.collector import Collector
from ioweather.services.telemetry.exporter_lctl import _JOB_MDT_OPS, _JOB_OST_OPS, capture_families, read_capture
from ioweather.sources.telemetry.base import Source
from ioweather.sources.telemetry.lctl_params import parse_capture
from ioweather.sources.telemetry.lctl_source import capture_samples
from ioweather.sources.telemetry.lustre import MD_OPS
from ioweather.views.exposition import render
from jobstats_capture import capture

# 150 jobs on 2 OSTs: ~135 jobs a target, beyond collect's 100 (fast); the center's size (slow, ~40 s at load 16)
SIZES = [pytest.param(150, 2, id="150-jobs"), pytest.param(10_000, 100, id="10000-jobs", marks=pytest.mark.slow)]
_PARAM = re.compile(r"^(obdfilter|mdt)\.([^.]+)\.job_stats=$")
_ROW = re.compile(r"^\s+(\w+):\s+\{ samples:\s+(\d+), unit:\s+\w+(?:, min:\s+\d+, max:\s+\d+, sum:\s+(\d+))? \}$")
_SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')


def _rows(text: str):
    """(component, target, job, operation, samples, sum or None) of every job_stats row of `text`."""
    component = target = job = None
    for line in text.splitlines():
        m = _PARAM.match(line)
        if m:
            component, target = ("ost" if m.group(1) == "obdfilter" else "mdt"), m.group(2)
        elif line.startswith("- job_id:"):
            job = line.split(":", 1)[1].strip()
        elif (m := _ROW.match(line)):
            yield component, target, job, m.group(1), int(m.group(2)), None if m.group(3) is None else int(m.group(3))


def _exposition(text: str) -> dict[tuple[str, str, str, str], int]:
    """{(family, target, operation, jobid): value} of the job families, values as exact integers."""
    out = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1).startswith("lustre_job_"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            v = float(m.group(3))
            assert v == int(v) and v < 2**53  # a float64 holds it exactly
            out[(m.group(1), labels["target"], labels["operation"], labels["jobid"])] = int(v)
    return out


@pytest.mark.parametrize("jobs,osts", SIZES)
def test_export_keeps_the_totals_of_every_target_and_operation_exactly(jobs, osts, tmp_path):
    seed = random.randrange(1_000_000)
    print(f"seed {seed}")
    text = capture(jobs, osts, seed=seed)
    path = tmp_path / "jobs.txt"
    path.write_text(text)
    top = 50
    cap, notes = read_capture(str(path))
    assert notes == []
    got = _exposition(render(capture_families(cap, top)).decode())

    want: Counter = Counter()
    moved: Counter = Counter()
    for component, target, job, op, samples, total in _rows(text):
        if component == "ost" and op in ("read_bytes", "write_bytes"):
            kind = op[:-6]
            want[(f"lustre_job_{kind}_samples_total", target, op)] += samples
            want[(f"lustre_job_{kind}_bytes_total", target, op)] += total
            moved[job] += total
        elif op in (_JOB_OST_OPS if component == "ost" else _JOB_MDT_OPS):
            want[("lustre_job_stats_total", target, op)] += samples
    have: Counter = Counter()
    for (family, target, op, _jobid), v in got.items():
        if family in {k[0] for k in want}:
            have[(family, target, op)] += v
    assert have == want

    # the top jobs by bytes are the ones named; everything else is one _other series per target and operation
    named = {k[3] for k in got}
    ranked = [j for j, _ in sorted(moved.items(), key=lambda kv: (-kv[1], kv[0]))]
    assert named == set(ranked[:top]) | {"_other"}
    series = Counter(k[0] for k in got)
    targets = osts + 1
    assert series["lustre_job_stats_total"] <= (top + 1) * targets * len(_JOB_MDT_OPS)
    assert sum(series.values()) <= (top + 1) * targets * (8 + len(_JOB_MDT_OPS))
    assert len(ranked) == jobs


class _Replay(Source):
    """A source giving the samples of one capture after the other (what lctl printed at each tick)."""

    name = "replay"

    def __init__(self, texts: list[str]):
        super().__init__("/", host="oss")
        self.texts = texts

    def collect(self):
        return capture_samples(parse_capture(self.texts.pop(0)), "oss")


def _later(text: str, rng: random.Random) -> str:
    """`text` a tick later: every row's samples and sum grown by a random amount (no reset)."""
    def grow(m):
        return f"{m.group(1)}{int(m.group(2)) + rng.randrange(0, 50 if m.group(1).startswith('samples') else 1 << 30)}"
    return re.sub(r"((?:samples|sum):\s+)(\d+)", grow, text)


@pytest.mark.parametrize("jobs,osts", SIZES)
def test_collect_stores_the_top_jobs_and_the_rest_summed_exactly(jobs, osts):
    seed = random.randrange(1_000_000)
    print(f"seed {seed}")
    rng = random.Random(seed)
    first = capture(jobs, osts, seed=seed)
    second = _later(first, rng)
    c = Collector([_Replay([first, second])], 5.0, "oss", timeout_s=600)
    c.tick(0)
    c.tick(5_000_000_000)
    rows = c.pending_frame("ai400")
    rows = rows[rows["metric"].str.startswith("job_")]
    assert not rows["value"].isna().any()

    before = {(t, j, op): (n, s) for _c, t, j, op, n, s in _rows(first)}
    want: Counter = Counter()
    for component, target, job, op, n, s in _rows(second):
        n0, s0 = before[(target, job, op)]
        if component == "ost" and op in ("read_bytes", "write_bytes"):
            want[(target, f"job_{op[:-6]}_ops")] += n - n0
            want[(target, f"job_{op}")] += s - s0
        elif component == "mdt" and op in MD_OPS:
            want[(target, f"job_md_{op}")] += n - n0
    have: Counter = Counter()
    for target, metric, value in zip(rows["target"], rows["metric"], rows["value"]):
        assert value == int(value)
        have[(target.partition("/")[0], metric)] += int(value)
    assert have == want

    per_target = Counter(t.partition("/")[0] for t in set(rows["target"]))
    assert max(per_target.values()) <= c.job_top + 1
    if jobs > c.job_top:
        assert any(t.endswith("/_other") for t in rows["target"])
