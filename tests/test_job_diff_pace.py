"""job diff's pace (services/answers/job_diff.py `pace_causes`) on fresh lab pairs that missed the bar by the findings
alone (tests/data/lab/pace): the twin moved the same large requests' bytes faster a byte, which the findings priced
at the bad run's rate. The reference is Darshan's own counters and per-request trace, read with PyDarshan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ioweather.services.answers.job_diff import job_diff

PACE = Path(__file__).parent / "data" / "lab" / "pace"
#: the pairs' bar (services/lab/score.py MIN_EXPLAINED_SHARE) and the stored pairs' claim bound (test_lab_pairs.py)
BAR, MAX_CLAIM = 0.9, 1.5


def _posix(log: Path, direction: str) -> tuple[float, float]:
    """(bytes, seconds summed over the records) of the POSIX module's reads or writes, by PyDarshan"""
    import darshan

    rep = darshan.DarshanReport(str(log), read_all=False)
    rep.mod_read_all_records("POSIX")
    d = rep.records["POSIX"].to_df()
    kind = "READ" if direction == "read" else "WRITTEN"
    return (float(d["counters"][f"POSIX_BYTES_{kind}"].sum()),
            float(d["fcounters"][f"POSIX_F_{'READ' if direction == 'read' else 'WRITE'}_TIME"].sum()))


def _dxt_writes(log: Path) -> tuple[np.ndarray, np.ndarray]:
    """(lengths, seconds) of every POSIX write in Darshan's per-request trace, in order"""
    import darshan

    rep = darshan.DarshanReport(str(log), read_all=False)
    rep.mod_read_all_dxt_records("DXT_POSIX")
    segs = sorted((s for r in rep.records["DXT_POSIX"] for s in r["write_segments"]), key=lambda s: s["start_time"])
    return (np.array([s["length"] for s in segs], float), np.array([s["end_time"] - s["start_time"] for s in segs]))


def _missed_by_the_findings(bad: Path, twin: Path):
    """job diff of the pair, checked to save time, to miss the bar by the findings alone and meet it with the pace,
    and to claim no more than the stored pairs' bound"""
    d = job_diff(None, str(bad), str(twin))
    findings = sum(c.change_s for c in d.causes if c.kind == "finding" and c.change_s * d.io_time_change_s > 0)
    assert d.io_time_change_s < -1.0 and findings / d.io_time_change_s < BAR <= d.explained_share
    assert abs(d.claimed_s) <= MAX_CLAIM * abs(d.io_time_change_s)
    return d


def test_collective_rmw_twin_wrote_faster_a_byte_and_the_trace_shows_it_is_not_the_requests():
    bad, twin = PACE / "collective-rmw-dxt.darshan", PACE / "fixed-collective-rmw-dxt.darshan"
    d = _missed_by_the_findings(bad, twin)
    (pace,) = [c for c in d.causes if c.kind == "pace"]
    assert pace.code == "pace.POSIX.write" and pace.change_s < 0 and "the system's pace" in d.verdict
    # the reference: one aggregator writes every byte (one POSIX record), so its write seconds are the wall's; the
    # twin's 512 MiB at the bad run's seconds a byte, less what they took
    (bb, tb), (ba, ta) = _posix(bad, "write"), _posix(twin, "write")
    assert pace.common_bytes == ba and ba < bb
    assert pace.change_s == pytest.approx(ta - ba * tb / bb, rel=0.02)
    # the same 8 MiB writes of the twin ran at another pace within the run: the rate is the node's at that moment
    # (free memory the VM had or had to take back from its host), not a property of the request
    n, t = _dxt_writes(twin)
    assert len(set(n)) == 1 and len(n) == 64
    quarters = [t[i].sum() / n[i].sum() for i in np.array_split(np.arange(64), 4)]
    assert max(quarters) > 2.5 * min(quarters)
    # while the bad run's 16 MiB writes, on the whole, kept within 2x of the twin's slowest quarter a byte
    nb, tbx = _dxt_writes(bad)
    assert tbx.sum() / nb.sum() > 0.5 * max(quarters)


def test_reread_twin_read_faster_a_byte_and_the_pace_is_the_rest_of_the_reads_change():
    bad, twin = PACE / "reread.darshan", PACE / "fixed-reread.darshan"
    d = _missed_by_the_findings(bad, twin)
    (p09,) = [c for c in d.causes if c.code == "P09"]
    read = next(c for c in d.causes if c.code == "pace.POSIX.read")
    # two ranks, each its own file, alike: a rank's share of the summed seconds is the wall's
    (bb, tb), (ba, ta) = _posix(bad, "read"), _posix(twin, "read")
    assert bb == 4 * ba
    # P09: the bytes read again at the bad run's rate; the pace: the twin's bytes at its own rate against that
    assert -p09.change_s == pytest.approx(0.75 * tb / 2, rel=0.05)
    assert read.change_s == pytest.approx((ta - ba * tb / bb) / 2, rel=0.05)
    assert read.before == pytest.approx(bb / tb) and read.after == pytest.approx(ba / ta)
    # together, the reads' change a rank
    assert -(p09.change_s + read.change_s) == pytest.approx((tb - ta) / 2, rel=0.05)
