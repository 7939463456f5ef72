"""Rank 0's I/O span (`job --json perf.rank0_io_span`, what job diff prices the crowd over) leaves the standard
streams out: on the lab's ctl-fpp-odirect-4m-stdout run, rank 0 prints to <STDOUT> from the job's start, while its
data file is opened 0.29 s later. The reference is PyDarshan's raw records of the log, not ioweather's reader."""

from __future__ import annotations

from pathlib import Path

import darshan
import numpy as np
import pytest

from ioweather.services.jobs.darshan import job_answer

LOG = Path(__file__).parent / "data" / "lab" / "ctl-fpp-odirect-4m-stdout.darshan"


def _pydarshan_spans(path: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """(rank 0's span over its own or shared data records, the same with the standard streams kept), in Unix
    seconds, from PyDarshan's counters: first F_OPEN_START to last F_READ_END/F_WRITE_END of records that moved
    bytes."""
    rep = darshan.DarshanReport(str(path), read_all=True)
    job = rep.metadata["job"]
    t0 = job["start_time_sec"] + job["start_time_nsec"] * 1e-9
    data, every = [], []
    for mod in ("POSIX", "STDIO"):
        df = rep.records[mod].to_df()
        c, f = df["counters"], df["fcounters"]
        for i in range(len(c)):
            if c["rank"][i] > 0 or c[f"{mod}_BYTES_READ"][i] + c[f"{mod}_BYTES_WRITTEN"][i] <= 0:
                continue
            row = (f[f"{mod}_F_OPEN_START_TIMESTAMP"][i],
                   max(f[f"{mod}_F_READ_END_TIMESTAMP"][i], f[f"{mod}_F_WRITE_END_TIMESTAMP"][i]))
            every.append(row)
            if not rep.name_records[c["id"][i]].startswith("<"):
                data.append(row)

    def span(rows):
        return t0 + min(a for a, _ in rows), t0 + max(b for _, b in rows)
    return span(data), span(every)


def test_rank0s_io_span_leaves_its_stdout_out():
    (a, b), (sa, sb) = _pydarshan_spans(LOG)
    # the log is the case: <STDOUT> starts well before the data file's first open
    assert sa < a - 0.1
    got = job_answer(str(LOG))[0].perf.rank0_io_span
    assert got[0] == pytest.approx(a, abs=1e-6) and got[1] == pytest.approx(b, abs=1e-6)


def _pydarshan_own_data(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, seconds) per rank of the ranks' own POSIX and STDIO records that are not standard streams, from
    PyDarshan's counters."""
    rep = darshan.DarshanReport(str(path), read_all=True)
    n = rep.metadata["job"]["nprocs"]
    by, tm = np.zeros(n), np.zeros(n)
    for mod in ("POSIX", "STDIO"):
        df = rep.records[mod].to_df()
        c, f = df["counters"], df["fcounters"]
        for i in range(len(c)):
            if c["rank"][i] < 0 or rep.name_records[c["id"][i]].startswith("<"):
                continue
            by[c["rank"][i]] += c[f"{mod}_BYTES_READ"][i] + c[f"{mod}_BYTES_WRITTEN"][i]
            tm[c["rank"][i]] += f[f"{mod}_F_READ_TIME"][i] + f[f"{mod}_F_WRITE_TIME"][i] + f[f"{mod}_F_META_TIME"][i]
    return by, tm


def test_the_per_rank_chart_draws_the_reports_per_rank_numbers(monkeypatch):
    """`job --html`'s per-rank chart and `job --json`'s perf.imbalance are one reading of the ranks: rank 0's
    <STDOUT> (1981 bytes, its own record) is in neither. The chart's data is what `job_html` hands the view."""
    import ioweather.services.jobs.report as report
    from ioweather.stats.job import imbalance

    got = {}

    def render(rep, top, pr, *a, **k) -> str:
        got["pr"] = pr
        return ""
    monkeypatch.setattr(report, "render_job_html", render)
    rep, log = report.job_answer(str(LOG))
    report.job_html(rep, log, str(LOG))
    pr = got["pr"]
    by, tm = _pydarshan_own_data(LOG)
    np.testing.assert_allclose(pr["bytes"].to_numpy(), by, rtol=1e-12)
    np.testing.assert_allclose(pr["time"].to_numpy(), tm, rtol=1e-12)
    im = rep.perf.imbalance
    assert im.shared == []  # no shared file: the chart is the ranks' own files alone, as the imbalance reads them
    assert (im.bytes, im.time, im.ranks_with_io) == (imbalance(pr["bytes"]), imbalance(pr["time"]),
                                                     int((pr["bytes"] > 0).sum()))
    assert im.bytes == 0.0  # both ranks wrote 256 MiB; the print made rank 0 look 1981 bytes busier before


def test_the_standard_streams_are_told_once_per_log(monkeypatch):
    """The characterization and the findings ask which of the storage records are standard streams several
    times (rank 0's span, the per-rank sums, R01's shared files): the names are read once per log, as a column
    of `fs_records`."""
    import ioweather.stats.findings as findings
    import ioweather.stats.job as sj
    from ioweather.sources.darshan_log import read_log

    seen = []
    real = sj.stream_mask

    def counting(names):
        seen.append(names)
        return real(names)
    monkeypatch.setattr(sj, "stream_mask", counting)
    monkeypatch.setattr(findings, "stream_mask", counting)
    log = read_log(LOG, dxt=False, heatmaps=False)
    ch = sj.characterize(log)
    findings.job_findings(log, ch)
    fs = sj.fs_records(log)
    # every record's name told once (the shared records' and the findings' own subsets aside)
    assert sum(names is fs["name"] for names in seen) == 1
    assert fs.n == 3 and fs["stream"].tolist() == [n.startswith("<") for n in fs["name"]]
