"""Rank 0's I/O span (`job --json perf.rank0_io_span`, what job diff prices the crowd over) leaves the standard
streams out: on the lab's ctl-fpp-odirect-4m-stdout run, rank 0 prints to <STDOUT> from the job's start, while its
data file is opened 0.29 s later. The reference is PyDarshan's raw records of the log, not ioweather's reader."""

from __future__ import annotations

from pathlib import Path

import darshan
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
