"""The coverage factor's window at a job's start (stats.coverage.job_overlap_s), on the readings
`collect --sources diskstats --interval 1s` took of a quiet twin of the lab storm pair (a 2 GiB IOR job,
O_DIRECT, alone on the disk but for the recorder's own writes) that `why` flagged.

The reference is the disk's own counter: every byte the job wrote was counted between the reading before
its start and the first one after its end, so a window holding fewer is wrong, not clock skew. Spreading
the interval the job started in evenly over that interval counted only its part after the start (59 % of
its 1.23 GB): CF 1.249, flagged, and `why` said the system share was "unknown".
"""

from __future__ import annotations

import numpy as np
import pytest

from ioweather.services.telemetry.collector import Collector
from ioweather.sources.telemetry.diskstats import SECTOR, DiskStats
from ioweather.stats import coverage as cov
from ioweather.store.job_telemetry import Series

S = 10**9
JOB_BYTES = 2 << 30  # IOR: 2 ranks of 1 GiB (Darshan's POSIX bytes written)

# Recorded on 2026-11-29 (collect's rows, 512-byte sectors a 1 s interval from the first tick's time; the
# twin's Darshan start and end): the flagged twin, whose next tick was read 0.24 s late (CF 1.249 before),
# and one whose ticks were read on time and that started 0.39 s into an interval (CF 1.165 before: not
# flagged, still 17 % short)
RECORDED = {
    "late tick": (1795932148, [19752, 2407504, 1656784, 188752, 15232, 21736, 56, 53848, 16],
                  1795932149.4095078, 1795932151.6498163),
    "on time": (1795932158, [25752, 16, 1775888, 2457320, 15528, 13104, 56, 25296, 5160, 56],
                1795932160.3890264, 1795932162.4449272),
}


def _rows(tmp_path, first_s: int, sectors: list[int]):
    """write_bytes rows of a Collector reading /proc/diskstats (a file here) whose vda counter moves by the
    recorded sectors, ticked on the recorded 1 s grid."""
    (tmp_path / "proc").mkdir()
    c = Collector([DiskStats(tmp_path, host="vm")], 1.0, "vm", fs_forced=True)
    written = 1_000_000
    for k, d in enumerate([0, *sectors]):
        written += d
        (tmp_path / "proc" / "diskstats").write_text(f" 254 0 vda 10 0 80 1 100 0 {written} 5 0 7 8\n")
        c.tick((first_s + k) * S)
    f = c.pending_frame("vm")
    return f[f.metric == "write_bytes"].sort_values("time_ns")


@pytest.mark.parametrize("case", sorted(RECORDED))
def test_the_interval_a_job_started_in_counts_whole(tmp_path, case):
    first_s, sectors, start_s, end_s = RECORDED[case]
    rows = _rows(tmp_path, first_s, sectors)
    t, v, iv = rows.time_ns.to_numpy(np.int64), rows.value.to_numpy(float), rows.interval_s.to_numpy(float)
    assert list(v) == [d * SECTOR for d in sectors] and (iv == 1.0).all()  # no gap: every byte is in a row
    since, until = int(start_s * S), int((end_s + cov.TAIL_S) * S)
    # the reference: what the counter moved from the reading before the job's start to the first after its end
    end = int(end_s * S)
    reference = v[(t + S > since) & (t < end)].sum()
    assert reference >= JOB_BYTES
    fs = cov.window_amount(t, iv, v, since, until)
    assert fs >= reference
    cf = cov.coverage_factors({"bytes_written": JOB_BYTES}, {"bytes_written": fs})
    assert 0.95 < cf["coverage_factor_write_bw"] <= 1.0
    assert cf["coverage_factor_write_bw_flagged"] is False
    # the store's path (weather._measure): the same rows summed per interval
    one = np.ones(len(t))
    series = Series({"time_ns": t, "interval_s": iv, "s_ok": v, "n_ok": one, "n_valid": one, "s_fin": v, "n_fin": one})
    cut = series.cut(since - 600 * S, until)
    assert series.amount(cut, since, until) == pytest.approx(fs, rel=1e-12)
    # a rate over the window's length counts only the part of that interval inside the window
    first = v[(t <= since) & (t + S > since)][0]
    assert series.amount(cut, since, until, job_window=False) == pytest.approx(
        fs - first * (since % S) / S, rel=1e-12)


def test_the_end_of_a_window_is_prorated():
    # the 5 s tail already holds what the servers counted late; an interval reaching past it counts its part
    assert cov.window_amount([15 * S], [10.0], [100.0], 5 * S, 20 * S) == 50.0
    # an interval that ended at the job's start holds none of it
    assert cov.window_amount([0], [5.0], [100.0], 5 * S, 20 * S) is None
    # the one the job started in counts whole: its bytes may all be the job's, moved after its start
    assert cov.window_amount([0], [10.0], [100.0], 5 * S, 20 * S) == 100.0
