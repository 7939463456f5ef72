"""`job`'s rank imbalance (perf.imbalance: bytes, time, ranks with I/O) reads the ranks' own data files: a rank's
own standard stream (<STDOUT> as rank 0's record, or each printing rank's) is not the job's I/O. Before, mpi-io-test
(one shared file) had "1 rank with I/O", its rank 0's prints, and runtime_heatmap_inactive_ranks (nothing but
prints) a 69 % time imbalance over 20 ranks.

Reference: PyDarshan's own reading of the records (`DarshanReport.records[...].to_df()`), streams told by name as
PyDarshan's data_access_by_filesystem tells them (<STD..>, or an anonymized name of digits)."""

from __future__ import annotations

from pathlib import Path

import darshan
import numpy as np
import pytest

from darshan_support import DATA_LOGS, TESTDATA_LOGS
from ioweather.services.jobs.darshan import job_answer

LAB = Path(__file__).parent / "data" / "lab"
#: logs whose ranks have standard streams of their own: only prints (inactive_ranks), a shared data file and rank
#: 0's prints (mpi-io-test), files of their own and rank 0's prints (treddy's 32 ranks, the lab's 2-rank control)
LOGS = [DATA_LOGS / "runtime_heatmap_inactive_ranks" / "treddy_runtime_heatmap_inactive_ranks.darshan",
        DATA_LOGS / "release_logs" / "mpi-io-test-x86_64-3.5.0.darshan",
        TESTDATA_LOGS / "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan",
        LAB / "ctl-fpp-odirect-4m-stdout.darshan"]


def _reference(log: Path, streams: bool) -> tuple[float | None, float | None, int]:
    """(bytes imbalance, time imbalance, ranks with bytes) of the ranks' own POSIX and STDIO records, the
    standard streams counted or not: (max − min) / max over the ranks with any, None under two such ranks."""
    with darshan.DarshanReport(str(log), read_all=True) as ref:
        nprocs, names = ref.metadata["job"]["nprocs"], ref.name_records
        by, tm = np.zeros(nprocs), np.zeros(nprocs)
        for mod in ("POSIX", "STDIO"):
            if mod not in ref.records:
                continue
            df = ref.records[mod].to_df()
            c, f = df["counters"], df["fcounters"]
            name = [names.get(i, "") for i in c["id"]]
            stream = np.array([n.startswith("<") or n.isdigit() for n in name], bool)
            keep = (c["rank"] >= 0).to_numpy() & (streams | ~stream)
            r = c["rank"].to_numpy()[keep]
            by += np.bincount(r, weights=(c[f"{mod}_BYTES_READ"] + c[f"{mod}_BYTES_WRITTEN"]).to_numpy(float)[keep],
                              minlength=nprocs)
            tm += np.bincount(r, weights=(f[f"{mod}_F_READ_TIME"] + f[f"{mod}_F_WRITE_TIME"]
                                          + f[f"{mod}_F_META_TIME"]).to_numpy(float)[keep], minlength=nprocs)

    def spread(v):
        v = v[v > 0]
        return None if v.size < 2 else float((v.max() - v.min()) / v.max())
    return spread(by), spread(tm), int((by > 0).sum())


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:40])
def test_the_rank_imbalance_leaves_a_ranks_own_standard_streams_out(log):
    if not log.is_file():
        pytest.skip(f"{log} not present")
    imb = job_answer(str(log))[0].perf.imbalance
    want, with_streams = _reference(log, streams=False), _reference(log, streams=True)
    # the log's own streams change the answer: counting them is what the report must not do
    assert want != with_streams
    assert imb.ranks_with_io == want[2]
    for got, exp in ((imb.bytes, want[0]), (imb.time, want[1])):
        assert (got is None) == (exp is None) and (exp is None or got == pytest.approx(exp, rel=1e-12, abs=1e-15))
