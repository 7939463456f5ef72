"""`lab score`'s bad -> fixed pairs (issue 39: `job diff` explains >= 90 % of the I/O-time change of each):
the scoring on real Darshan logs of planted causes (tests/data/lab, make_logs.sh), indexed as a lab run would
index them, checked against `job` read on its own; and the catalogue's pairs name real cases and twins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ioweather.services.jobs.darshan import job_answer
from ioweather.services.lab.catalogue import CASES, PAIRS, Pair
from ioweather.services.lab.run import INDEX, read_index
from ioweather.services.lab.score import MIN_EXPLAINED_SHARE, score_pairs
from ioweather.services.lab.storm import diff_twins
from ioweather.views.lab_report import pairs_markdown

LAB = Path(__file__).parent / "data" / "lab"
# fsync-4k: 4 KiB writes each fsynced; fixed-large: the same bytes in 4 MiB writes and one fsync.
# clean-quiet and clean-storm: the same clean job, alone and during a fio storm (nothing in the code to explain)
LOGS = {"fsync-4k": LAB / "fsync-4k.darshan", "fixed-large": LAB / "fixed-large.darshan",
        "clean-quiet": LAB / "clean-quiet.darshan", "clean-storm": LAB / "clean-storm.darshan"}
FIXED = Pair("fsync-4k", "fixed-large", "2 ranks, 8000 x 4 KiB a rank", "4 MiB writes, one fsync")
STORM = Pair("clean-quiet", "clean-storm", "the same IOR job", "nothing: a storm on the disk")
MISSING = Pair("fsync-4k", "not-run", "", "")


def _index(tmp_path: Path) -> Path:
    cases = [{"name": name, "cause": "", "labels": [], "tolerated": [], "control": False, "procs": 2, "mpi": True,
              "command": "", "logs": [str(log)], "elapsed_s": 1.0, "status": "ok", "reason": None}
             for name, log in LOGS.items()]
    (tmp_path / INDEX).write_text(json.dumps({"dir": "/tmp", "logs_dir": str(tmp_path), "toolchain": "cache",
                                              "started": "2026-11-28T00:00:00Z", "cases": cases}))
    return tmp_path


def _io_time(log: Path) -> float:
    return job_answer(str(log))[0].perf.io_time_s


def test_pairs_are_scored_from_job_diff_and_counted_against_the_bar(tmp_path):
    cases = read_index(_index(tmp_path)).cases
    got = score_pairs(cases, pairs=(FIXED, STORM, MISSING))
    assert got.absent == ["fsync-4k -> not-run"] and got.scored == 2
    fixed, storm = got.pairs
    # the reference: each side's I/O time read by `job` alone
    before, after = _io_time(LOGS["fsync-4k"]), _io_time(LOGS["fixed-large"])
    assert (fixed.before_s, fixed.after_s) == (pytest.approx(before), pytest.approx(after))
    assert fixed.change_s == pytest.approx(after - before) and fixed.change_s < -3.0
    assert fixed.explained_share == pytest.approx(fixed.explained_s / fixed.change_s)
    assert fixed.explained_share >= MIN_EXPLAINED_SHARE and fixed.explained
    assert fixed.causes[0].startswith("Y01 -") and fixed.verdict.startswith("the code changed")
    # the same code slower during a storm: nothing the findings explain; the same writes' pace (the system) does
    assert storm.change_s > 0 and storm.verdict.startswith("same code; the system") and storm.explained
    assert [c.split(" ")[0] for c in storm.causes] == ["pace.POSIX.write"]
    assert got.explained == 2
    table = "\n".join(pairs_markdown({**got.__dict__, "pairs": [p.__dict__ for p in got.pairs]}))
    assert "| fsync-4k -> fixed-large |" in table and "explains ≥ 90 % of the change on 2 of 2 pairs" in table


def test_a_pair_whose_log_cannot_be_read_is_an_error_not_a_pass(tmp_path):
    broken = tmp_path / "broken.darshan"
    broken.write_bytes(b"not a darshan log")
    cases = read_index(_index(tmp_path)).cases
    cases[0].logs = [str(broken)]   # fsync-4k's log replaced by a damaged one
    got = score_pairs(cases, pairs=(FIXED,))
    assert got.scored == 0 and got.explained == 0 and got.pairs[0].error and not got.pairs[0].explained


def test_every_pair_names_a_planted_case_and_its_twin_without_the_cause():
    by_name = {c.name: c for c in CASES}
    for p in PAIRS:
        bad, fixed = by_name[p.bad], by_name[p.fixed]
        # the fix removes planted causes and plants none (a new twin is a control)
        assert set(fixed.labels) < set(bad.labels), p
        assert fixed.control or not p.fixed.startswith("fixed-"), p
        # the twin runs the same program on as many ranks
        assert (bad.argv[0], bad.procs, bad.mpi) == (fixed.argv[0], fixed.procs, fixed.mpi), p
    assert len({p.fixed for p in PAIRS}) == len(PAIRS)


def test_the_storm_pairs_job_diff_check_says_the_system_only_for_the_same_code():
    # lab storm's check (services/lab/storm.py), on logs of the same clean job alone and during a fio storm
    verdict, system, notes = diff_twins(None, str(LOGS["clean-quiet"]), str(LOGS["clean-storm"]))
    assert system and verdict.startswith("same code; the system")
    assert notes and "both runs must be stored" in notes[0]
    # a bad -> fixed pair is the code, not the system; a missing log is said, not passed
    verdict, system, _ = diff_twins(None, str(LOGS["fsync-4k"]), str(LOGS["fixed-large"]))
    assert not system and verdict.startswith("the code changed")
    verdict, system, notes = diff_twins(None, str(LAB / "no-such.darshan"), str(LOGS["clean-storm"]))
    assert verdict is None and not system and "no Darshan log" in notes[0]


def test_lab_score_reads_the_pairs_and_leaves_the_twins_out_of_the_label_scores(tmp_path):
    from ioweather.services.lab.score import score_logs

    cases = [{"name": name, "cause": "", "labels": labels, "tolerated": [], "control": not labels, "procs": 2,
              "mpi": True, "command": "", "logs": [str(LOGS[log])], "elapsed_s": 1.0, "status": "ok", "reason": None}
             for name, log, labels in (("fsync-per-write", "fsync-4k", ["sync-per-write", "small-writes"]),
                                       ("fixed-fsync-per-write", "fixed-large", []))]
    (tmp_path / INDEX).write_text(json.dumps({"dir": "/tmp", "logs_dir": str(tmp_path), "toolchain": "cache",
                                              "started": "2026-11-28T00:00:00Z", "cases": cases}))
    s = score_logs(tmp_path, drishti=False)
    assert s.cases == 1 and [c.case for c in s.tools[0].cases] == ["fsync-per-write"]
    (pair,) = s.pairs.pairs
    assert (pair.bad, pair.fixed, pair.explained) == ("fsync-per-write", "fixed-fsync-per-write", True)
    assert s.pairs.scored == s.pairs.explained == 1 and len(s.pairs.absent) == len(PAIRS) - 1
    assert s.to_json()["pairs"]["pairs"][0]["explained_share"] == pytest.approx(pair.explained_share)


# The catalogue's pairs as they ran here (tests/data/lab/pairs/CASE.darshan: copied from a `lab run` of the
# whole catalogue, docs/validation.md "job diff on bad -> fixed pairs"), read in process: job diff's own
# arithmetic (diff_reports) on the reports `job` makes of each log.
PAIR_LOGS = LAB / "pairs"
#: pairs whose share is below the bar on the stored logs, and why (docs/validation.md): strict, so a pair
#: that starts passing is noticed
BELOW: dict[str, str] = {
    # collective-rmw was here at 75 % (tests/data/lab/collective-rmw-nice19.darshan: its ranks waited for a core in
    # every collective call); stored since from `lab run` with the ranks' priority and a pause before each case
    # (series R of 2026-11-29 08:59, round 1 chosen before the run: docs/validation.md)
}
#: The most the causes may claim of the change of a pair whose fix saves time (not COSTLESS), before job diff's cap at the change (`claimed_s`): the
#: share is capped at 100 %, so without this bound a cause that claims twice what the fix saved passes. 1.5x: the
#: stored pairs' claims that are right scatter within ±25 % of the change (each run's load, a minute apart:
#: docs/validation.md), and savings compound (the findings' `combined_s` never counts a second twice).
MAX_CLAIM = 1.5
#: pairs whose causes claim more than MAX_CLAIM x the change on the stored logs, measured (strict: a pair that
#: comes within the bound is noticed). fdatasync-per-write was here (Y01 1.66x) on logs of the case's 2 MiB
#: version: test_y01_on_2_mib_fdatasyncs_claims_the_twins_page_cache_time_too
OVER: dict[str, str] = {}
#: pairs whose planted cause is the ranks' share of one disk, costless on it (catalogue.Case.costless_local: 4 MiB
#: O_DIRECT streams, where a rank already has most of the device's bandwidth and the ranks' do not add up): the
#: fix saves no material time, and the advisor must not claim it on the bad run (P18 claimed 2.28 s and B02
#: 1.81 s before their one-device bound, R01 io x (1 - 1/k): 1.6 s of the 0.55 s the 4 MiB one-rank-io pair saved).
#: None since the three write 64 KiB requests (latency-bound streams, whose bandwidths do add up on this disk:
#: docs/validation.md, "The rank pairs made to cost"); kept for a pair whose cause is measured costless again
COSTLESS = tuple(p.bad for p in PAIRS for c in CASES if c.name == p.bad
                 and set(c.labels) <= set(c.costless_local) & {"one-rank-io", "rank-imbalance"})


def _diff(bad: Path, fixed: Path):
    from ioweather.services.answers.job_diff import DiffSide, diff_reports
    from ioweather.services.jobs.darshan import job_answer

    def side(log):
        rep = job_answer(str(log))[0]
        return DiffSide(ident=log.stem, path=str(log), io_time_s=rep.perf.io_time_s, runtime_s=rep.job.runtime_s or 0.0,
                        nprocs=rep.job.nprocs or 1, exe=rep.job.exe, verdict=rep.verdict), rep

    (sb, rb), (sa, ra) = side(bad), side(fixed)
    return diff_reports(sb, rb, sa, ra)


@pytest.mark.parametrize("pair", [pytest.param(p, id=p.bad, marks=[pytest.mark.xfail(strict=True, reason=BELOW[p.bad])]
                                               if p.bad in BELOW else [pytest.mark.xfail(strict=True, reason=OVER[p.bad])]
                                               if p.bad in OVER else []) for p in PAIRS])
def test_each_catalogue_pair_is_explained_by_job_diff(pair):
    from ioweather.services.answers.job_diff import material_s
    from ioweather.stats.lab_scores import pair_outcome

    bad, fixed = PAIR_LOGS / f"{pair.bad}.darshan", PAIR_LOGS / f"{pair.fixed}.darshan"
    assert bad.is_file() and fixed.is_file(), f"no stored logs of {pair.bad} -> {pair.fixed}"
    d = _diff(bad, fixed)
    claimed = -sum(c.change_s for c in d.causes if c.kind == "finding" and c.change_s < 0)
    explained, no_saving = pair_outcome(d.explained_share, d.io_time_change_s, d.verdict.startswith("no material change"),
                                        claimed, material_s(d.before.io_time_s), MIN_EXPLAINED_SHARE)
    print(f"{pair.bad}: {d.before.io_time_s:.2f} s -> {d.after.io_time_s:.2f} s, change {d.io_time_change_s:+.2f} s, "
          f"explained {d.explained_s:+.2f} s, claimed {claimed:.2f} s (all causes {d.claimed_s:+.2f} s); {d.verdict}; "
          f"bad run: {d.before.verdict}")
    if pair.bad in COSTLESS:
        # the spread ranks took about as long (the device's bandwidth is the limit) ...
        assert d.verdict.startswith("no material change") and no_saving, d.verdict
        # ... and the advisor, reading the bad run alone, did not promise the saving
        assert "nothing worth changing" in d.before.verdict, d.before.verdict
    else:
        # the fix made it faster, and the findings whose cost vanished account for the change
        assert d.io_time_change_s < 0
        assert d.explained_share is not None and d.explained_share >= MIN_EXPLAINED_SHARE and explained
        # ... and claim no more than MAX_CLAIM x what it saved (the share is capped at 100 %: it cannot tell)
        assert abs(d.claimed_s) <= MAX_CLAIM * abs(d.io_time_change_s), (d.claimed_s, d.io_time_change_s)


def test_a_reread_pair_run_85_minutes_apart_is_half_the_load():
    """The reread pair as first stored (tests/data/lab/reread-loaded.darshan at 16:42, load 14-16;
    fixed-reread-idle.darshan at 18:05, load 0.2-2): 47 % explained by the findings. P09 priced the reads again
    right (the reads' own change); the rest is the writes, identical in both runs, at another load: what `lab run`
    now avoids by running each twin right after its bad case (run.pair_order), and what job diff's pace names as
    the system's (the same 4 MiB writes 7x slower a byte in the loaded run)."""
    d = _diff(LAB / "reread-loaded.darshan", LAB / "fixed-reread-idle.darshan")
    b, a = (job_answer(str(LAB / n))[0] for n in ("reread-loaded.darshan", "fixed-reread-idle.darshan"))
    findings = sum(c.change_s for c in d.causes if c.kind == "finding")
    assert findings / d.io_time_change_s < MIN_EXPLAINED_SHARE <= d.explained_share
    nprocs = b.job.nprocs
    # Darshan's times are summed over the 2 ranks, each reading and writing its own file: per rank
    reads = (b.interfaces["POSIX"].read_time_s - a.interfaces["POSIX"].read_time_s) / nprocs
    writes = (b.interfaces["POSIX"].write_time_s - a.interfaces["POSIX"].write_time_s) / nprocs
    (p09,) = [c for c in d.causes if c.code == "P09"]
    assert -p09.change_s == pytest.approx(reads, rel=0.1)
    # the same 64 writes of 4 MiB a rank in both runs, 6x slower in the loaded one: half the change
    assert (b.interfaces["POSIX"].writes, b.totals.bytes_written) == (a.interfaces["POSIX"].writes, a.totals.bytes_written)
    assert writes > 0.4 * -d.io_time_change_s
    # ... which the pace prices, on the same bytes: within 10 % of their change a rank (PyDarshan's times)
    (pace,) = [c for c in d.causes if c.kind == "pace" and c.code == "pace.POSIX.write"]
    t_bad, _, _ = _posix_write_s(LAB / "reread-loaded.darshan")
    t_twin, _, _ = _posix_write_s(LAB / "fixed-reread-idle.darshan")
    assert -pace.change_s == pytest.approx((sum(t_bad) - sum(t_twin)) / nprocs, rel=0.1)


def test_the_collective_rmw_pair_first_stored_ran_beside_the_loaded_reread_and_its_twin_beside_the_idle_one():
    """collective-rmw as first stored (tests/data/lab/collective-rmw-loaded.darshan, 16:41:58; its twin
    fixed-collective-rmw-idle.darshan, 18:05:20): 84 % explained by M09 as it was (all the time above POSIX
    beyond the copy), 54 % by the holes' share of the bytes; "the holes' POSIX writes 4.5-8.7x slower a byte".
    Each ran within a minute of the reread pair's logs of the same hours, whose identical writes ran several
    times slower in the first (test_a_reread_pair_run_85_minutes_apart_is_half_the_load): the bad run was
    loaded and the twin idle. The pair is now stored from one minute (tests/data/lab/pairs)."""
    from datetime import datetime

    def at(stamp):
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    def start(name):
        return at(job_answer(str(LAB / name))[0].job.start)

    d = _diff(LAB / "collective-rmw-loaded.darshan", LAB / "fixed-collective-rmw-idle.darshan")
    assert d.explained_share < MIN_EXPLAINED_SHARE
    bad, twin = start("collective-rmw-loaded.darshan"), start("fixed-collective-rmw-idle.darshan")
    assert (twin - bad).total_seconds() > 3600
    assert abs((start("reread-loaded.darshan") - bad).total_seconds()) < 60
    assert abs((start("fixed-reread-idle.darshan") - twin).total_seconds()) < 60
    b, a = (job_answer(str(LAB / n))[0] for n in ("reread-loaded.darshan", "fixed-reread-idle.darshan"))
    assert b.interfaces["POSIX"].write_time_s > 3 * a.interfaces["POSIX"].write_time_s
    # the stored pair: its twin started within a minute of the bad run's end
    bad, twin = (job_answer(str(PAIR_LOGS / f"{n}.darshan"))[0].job for n in ("collective-rmw", "fixed-collective-rmw"))
    assert 0 <= (at(twin.start) - at(bad.end)).total_seconds() < 60


def test_each_twin_runs_right_after_its_bad_case():
    """`lab run` of the catalogue: a twin beside its bad case, at the same minute's load (run.pair_order)."""
    from ioweather.services.lab.run import pair_order

    order = [c.name for c in pair_order(list(CASES))]
    assert sorted(order) == sorted(c.name for c in CASES)
    for p in PAIRS:
        assert order.index(p.fixed) == order.index(p.bad) + 1, p
    # the cases of no pair keep the catalogue's order
    alone = {c.name for c in CASES} - {n for p in PAIRS for n in (p.bad, p.fixed)}
    assert [n for n in order if n in alone] == [c.name for c in CASES if c.name in alone]
    # a selection runs its own pairs together, and a twin without its bad case alone
    some = [c for c in CASES if c.name in ("fixed-reread", "one-rank-io", "reread", "spread-one-rank-io")]
    assert [c.name for c in pair_order(some)] == ["one-rank-io", "spread-one-rank-io", "reread", "fixed-reread"]


def test_an_immaterial_change_claimed_as_a_material_saving_is_not_explained():
    """job diff caps the explained seconds at the change: before R01's one-device bound, the one-rank-io pair of
    23:20 (2.13 -> 1.59 s, load 4) had R01 claim 1.6 s of a 0.55 s change, counted 100 % explained. An immaterial
    change missed by a material claim is now neither explained nor "no saving"; an immaterial change with an
    immaterial claim (the random-order pair at 23:22: P05 -0.18 s of -0.27 s, 68 %) is "no saving", whatever
    else the bad run has; a claim near the change is an explanation (reread at 23:32: P09 1.02 s of 0.84 s)."""
    from ioweather.stats.lab_scores import pair_outcome

    assert pair_outcome(1.0, -0.55, True, 1.6, 1.0, MIN_EXPLAINED_SHARE) == (False, False)
    assert pair_outcome(0.68, -0.27, True, 0.18, 1.0, MIN_EXPLAINED_SHARE) == (False, True)
    assert pair_outcome(1.0, -0.84, True, 1.02, 1.0, MIN_EXPLAINED_SHARE) == (True, False)
    # a material change: the share decides (savings compound: a claim may exceed the change)
    assert pair_outcome(1.0, -5.98, False, 14.5, 1.0, MIN_EXPLAINED_SHARE) == (True, False)
    assert pair_outcome(0.47, -3.1, False, 1.45, 1.0, MIN_EXPLAINED_SHARE) == (False, False)


def test_small_independent_mpiio_calls_cost_their_device_trips_and_are_claimed_as_measured():
    """mpiio-independent-small: with IOR (buffered; its MPIIO backend has no O_DIRECT) 8 KiB calls cost no more
    than 8 MiB ones on the idle machine (the page cache took both: the fix saved -0.2 to +3.5 s in five runs)
    while M03/P06 claimed 1.4-8.7 s. lab_mpiio -d opens the shared file O_DIRECT, so each small call is a device
    trip: the fix saves what the advisor claims on the bad run (stored pair: 3.05 -> 0.38 s at a load of 15,
    M03 2.82 s)."""
    bad, fixed = PAIR_LOGS / "mpiio-independent-small.darshan", PAIR_LOGS / "fixed-mpiio-independent-small.darshan"
    d = _diff(bad, fixed)
    rep = job_answer(str(bad))[0]
    assert "lab_mpiio" in rep.job.exe and " -d" in rep.job.exe
    claimed = max(f.cost_s for f in rep.findings if f.code in ("M03", "P06"))
    assert d.io_time_change_s < -1.0 and claimed == pytest.approx(-d.io_time_change_s, rel=0.25)



def _posix_write_s(log: Path) -> tuple[list[float], list[float], list[float]]:
    """Each POSIX record's write time (Darshan adds fsync/fdatasync time to it), syncs and bytes, read with
    PyDarshan (not ioweather's reader)"""
    import darshan

    rep = darshan.DarshanReport(str(log), read_all=False)
    rep.mod_read_all_records("POSIX")
    d = rep.records["POSIX"].to_df()
    c, f = d["counters"], d["fcounters"]
    return (list(f["POSIX_F_WRITE_TIME"]), list(c["POSIX_FSYNCS"] + c["POSIX_FDSYNCS"]), list(c["POSIX_BYTES_WRITTEN"]))


def test_y01_on_2_mib_fdatasyncs_claims_the_twins_page_cache_time_too():
    """fdatasync-per-write as first stored (tests/data/lab/fdatasync-2m.darshan: 256 x 2 MiB writes a rank, each
    fdatasynced, 16:40 at load 14-16; its twin without the syncs at 18:05). Darshan adds each sync's time to
    POSIX_F_WRITE_TIME with the writes' (darshan-runtime posix module): the log cannot tell the syncs from the
    write() calls, which fill 512 MiB of page cache a rank as the twin's do. Y01 prices the synced records' time
    but one sync's share; the reference, the twin's measured writes as the no-sync baseline, shows what the
    syncs cost: the claim exceeds it by the twin's own write time (1.32 s; on cold pages, docs/validation.md)."""
    bad, twin = LAB / "fdatasync-2m.darshan", LAB / "fixed-fdatasync-2m.darshan"
    t_bad, n_bad, b_bad = _posix_write_s(bad)
    t_twin, n_twin, b_twin = _posix_write_s(twin)
    assert sum(n_twin) == 0 and sorted(b_bad) == sorted(b_twin) and min(n_bad) == 256
    # one file a rank: the slowest rank's write time is each run's I/O time
    reference = max(t_bad) - max(t_twin)
    (y01,) = [f for f in job_answer(str(bad))[0].findings if f.code == "Y01"]
    assert y01.cost_s >= reference > 1.5
    assert y01.cost_s - reference == pytest.approx(max(t_twin), rel=0.1)
    assert y01.cost_s > MAX_CLAIM * reference


def test_y01_claims_what_the_fdatasync_pair_saved_against_the_twins_measured_writes():
    """The stored fdatasync-per-write pair (the catalogue's 5000 x 64 KiB writes a rank): Y01 against the saving the
    twin measures, read with PyDarshan: within the pairs' bound (each sync a device round trip at 64 KiB)."""
    bad, twin = PAIR_LOGS / "fdatasync-per-write.darshan", PAIR_LOGS / "fixed-fdatasync-per-write.darshan"
    t_bad, n_bad, b_bad = _posix_write_s(bad)
    t_twin, n_twin, _ = _posix_write_s(twin)
    assert sum(n_twin) == 0 and min(n_bad) == 5000 and max(b_bad) == 5000 * 64 * 1024
    reference = max(t_bad) - max(t_twin)
    (y01,) = [f for f in job_answer(str(bad))[0].findings if f.code == "Y01"]
    assert MIN_EXPLAINED_SHARE * reference <= y01.cost_s <= MAX_CLAIM * reference


def _posix_reads(log: Path) -> tuple[list[float], list[float], list[float], list[float]]:
    """Each POSIX record's read time, reads, sequential reads and bytes read, read with PyDarshan"""
    import darshan

    rep = darshan.DarshanReport(str(log), read_all=False)
    rep.mod_read_all_records("POSIX")
    d = rep.records["POSIX"].to_df()
    c, f = d["counters"], d["fcounters"]
    return (list(f["POSIX_F_READ_TIME"]), list(c["POSIX_READS"]), list(c["POSIX_SEQ_READS"]),
            list(c["POSIX_BYTES_READ"]))


def test_random_small_reads_cost_device_trips_only_through_the_page_cache():
    """random-small-reads: with O_DIRECT a 4 KiB read is a device trip in either order, so the order cost nothing
    (tests/data/lab/random-small-reads-odirect.darshan against pairs/small-reads-odirect.darshan, the same minute:
    under the bar). The case now reads a file evicted from the page cache through it (lab_posix -e): in order the
    kernel reads ahead in large requests, in random order each read is a device trip. The stored pair: the same
    reads (count, bytes) in both, the read time is what changed (PyDarshan), and the bad run names and prices
    the random order (P11) and the small reads (P05) that job diff then finds gone."""
    from ioweather.services.answers.job_diff import material_s

    # O_DIRECT: the order of the same 4 KiB reads changed each rank's read time by less than the bar
    t_rand, n_rand, _, b_rand = _posix_reads(LAB / "random-small-reads-odirect.darshan")
    t_seq, n_seq, _, b_seq = _posix_reads(PAIR_LOGS / "small-reads-odirect.darshan")
    assert sorted(n_rand) == sorted(n_seq) and sorted(b_rand) == sorted(b_seq)
    assert max(t_rand) - max(t_seq) < material_s(max(t_rand))

    bad, twin = PAIR_LOGS / "random-small-reads.darshan", PAIR_LOGS / "fixed-random-small-reads.darshan"
    rb, rt = job_answer(str(bad))[0], job_answer(str(twin))[0]
    assert " -X" in rb.job.exe and " -e" in rb.job.exe and " -d" not in rb.job.exe
    assert rt.job.exe.replace(" -X", "").split("/data")[1] == rb.job.exe.replace(" -X", "").split("/data")[1]
    t_bad, n_bad, seq_bad, b_bad = _posix_reads(bad)
    t_twin, n_twin, seq_twin, b_twin = _posix_reads(twin)
    assert sorted(n_bad) == sorted(n_twin) and sorted(b_bad) == sorted(b_twin) and min(n_bad) == 98304
    # in order every read follows the last; a random permutation jumps back about half the time
    assert sum(seq_twin) >= 0.99 * sum(n_twin) and sum(seq_bad) < 0.6 * sum(n_bad)
    # a file a rank: the slowest rank's read time changed by most of the I/O time's change
    d = _diff(bad, twin)
    reads = max(t_bad) - max(t_twin)
    assert d.io_time_change_s < -material_s(d.before.io_time_s) and reads >= 0.9 * -d.io_time_change_s
    f = {x.code: x for x in rb.findings}
    assert f["P11"].level == "HIGH" and f["P11"].cost_s >= 1.0 and f["P05"].cost_s >= 1.0
    assert not [x for x in rt.findings if x.level in ("WARN", "HIGH")] and "nothing worth changing" in rt.verdict
    (p05,) = [c for c in d.causes if c.code == "P05"]
    assert MIN_EXPLAINED_SHARE * reads <= -p05.change_s <= MAX_CLAIM * reads


def test_the_causes_the_fix_removed_are_priced_before_the_ones_both_runs_keep():
    """one-rank-io (rank 0 alone writes 1.5 GiB in 64 KiB O_DIRECT writes) -> its spread twin: both runs keep
    the small writes (P06), and the advisor lists them first by cost, so R01's saving after them is a sliver of its
    own; in the order of the fix (R01 removed first) R01 claims its whole cost, P06 compounds on what is left, and
    the findings' signed changes add up to the change of I/O time (docs/validation.md, "The rank pairs made to
    cost"). A removed finding that counts the same seconds as a kept one (random order and small requests of the
    same O_DIRECT reads: P11 overlaps P05) keeps the advisor's order: one cost seen twice is no sequence of fixes."""
    bad = job_answer(str(PAIR_LOGS / "one-rank-io.darshan"))[0]
    by = {f.code: f for f in bad.findings}
    assert [f.code for f in bad.findings[:2]] == ["P06", "R01"] and by["R01"].combined_s < 0.1 * by["R01"].cost_s
    d = _diff(PAIR_LOGS / "one-rank-io.darshan", PAIR_LOGS / "spread-one-rank-io.darshan")
    causes = {c.code: c for c in d.causes if c.kind == "finding"}
    assert causes["R01"].change_s == pytest.approx(-by["R01"].cost_s)
    # P06 on the bad run after R01: its share of what spreading leaves
    left = bad.perf.io_time_s - by["R01"].cost_s
    assert causes["P06"].before == pytest.approx(left * by["P06"].cost_share)
    assert sum(c.change_s for c in causes.values()) == pytest.approx(d.io_time_change_s, rel=0.1)
    assert d.verdict.startswith("the code changed") and "(R01 −" in d.verdict
    # overlapping: the advisor's combined_s as they are
    odirect = LAB / "random-small-reads-odirect.darshan"
    d = _diff(odirect, PAIR_LOGS / "small-reads-odirect.darshan")
    rb, ra = (job_answer(str(x))[0] for x in (odirect, PAIR_LOGS / "small-reads-odirect.darshan"))
    (p11,) = [f for f in rb.findings if f.code == "P11"]
    assert "P05" in p11.overlaps and not any(f.code == "P11" for f in ra.findings)
    for c in (c for c in d.causes if c.kind == "finding"):
        assert c.before == pytest.approx(next((f.combined_s for f in rb.findings if f.code == c.code), 0.0))


def test_an_imbalance_of_small_requests_is_bounded_by_the_rate_the_ranks_got_beside_each_other():
    """rank-imbalance-shared (64 KiB O_DIRECT writes, rank 0 eight times the others' share of one preallocated
    file): the other ranks wrote beside all the others, so their rate, times the 4 ranks, is as fast as the
    balanced job can go on this one disk (costs.concurrent_excess); P18 claims the slowest rank's time beyond
    that, less than its wait over the mean rank, which assumes the ranks' bandwidths add up without limit. The
    reference: the counters read with PyDarshan, and the balanced twin actually run a minute later."""
    import darshan

    def posix(name):
        rep = darshan.DarshanReport(str(PAIR_LOGS / f"{name}.darshan"), read_all=False)
        rep.mod_read_all_records("POSIX")
        d = rep.records["POSIX"].to_df()
        return d["counters"], d["fcounters"]

    c, f = posix("rank-imbalance-shared")
    (i,) = [k for k in range(len(c)) if c["rank"][k] == -1]
    total, slowest = float(c["POSIX_BYTES_WRITTEN"][i]), float(f["POSIX_F_SLOWEST_RANK_TIME"][i])
    beside = float(c["POSIX_FASTEST_RANK_BYTES"][i]) / float(f["POSIX_F_FASTEST_RANK_TIME"][i])
    balanced = total / (4 * beside)
    bad = job_answer(str(PAIR_LOGS / "rank-imbalance-shared.darshan"))[0]
    (p18,) = [x for x in bad.findings if x.code == "P18"]
    wait = slowest - (float(f["POSIX_F_WRITE_TIME"][i]) + float(f["POSIX_F_META_TIME"][i])) / 4
    assert p18.cost_s == pytest.approx(slowest - balanced, rel=1e-6) and p18.cost_s < wait
    twin = job_answer(str(PAIR_LOGS / "balanced-rank-imbalance-shared.darshan"))[0]
    assert balanced == pytest.approx(twin.perf.io_time_s, rel=0.2)
    # file per process: the ranks but the slowest, each beside the others; here rank 0's 15 s (a load spike
    # while it wrote alone) leaves the wait over the mean under that bound, so B02 claims the wait
    c, f = posix("rank-imbalance-fpp")
    t, b = list(f["POSIX_F_WRITE_TIME"] + f["POSIX_F_META_TIME"]), list(c["POSIX_BYTES_WRITTEN"])
    slow = max(range(4), key=lambda k: t[k])
    beside = max(b[k] / t[k] for k in range(4) if k != slow)
    (b02,) = [x for x in job_answer(str(PAIR_LOGS / "rank-imbalance-fpp.darshan"))[0].findings if x.code == "B02"]
    assert b02.cost_s == pytest.approx(min(t[slow] - sum(t) / 4, t[slow] - sum(b) / (4 * beside)), rel=1e-3)


def _mpiio_writes(log: Path) -> tuple[float, float, float, float]:
    """The MPI-IO records' collective writes, bytes written, slowest rank's time, and the POSIX records' summed write
    time, read with PyDarshan"""
    import darshan

    rep = darshan.DarshanReport(str(log), read_all=False)
    rep.mod_read_all_records("MPI-IO")
    rep.mod_read_all_records("POSIX")
    m, p = rep.records["MPI-IO"].to_df(), rep.records["POSIX"].to_df()
    return (float(m["counters"]["MPIIO_COLL_WRITES"].sum()), float(m["counters"]["MPIIO_BYTES_WRITTEN"].sum()),
            float(m["fcounters"]["MPIIO_F_SLOWEST_RANK_TIME"].max()), float(p["fcounters"]["POSIX_F_WRITE_TIME"].sum()))


def test_small_collective_calls_cost_their_exchange_not_their_bytes():
    """mpiio-collective-small -> its twin (docs/validation.md, "Small collective calls made to cost"): the same
    4 MiB a rank of 32 B pieces interleaved by rank, in 131,072 collective calls a rank against one. The time that
    went is MPI-IO's above the file system (the calls' exchange), not the writes': the POSIX writes of both runs
    sum to under 0.3 s. The bad run names the calls (M11 HIGH) and prices the change; the twin is quiet."""
    from ioweather.services.answers.job_diff import material_s

    bad, twin = PAIR_LOGS / "mpiio-collective-small.darshan", PAIR_LOGS / "fixed-mpiio-collective-small.darshan"
    calls_b, bytes_b, mpiio_b, posix_b = _mpiio_writes(bad)
    calls_t, bytes_t, mpiio_t, posix_t = _mpiio_writes(twin)
    assert bytes_b == bytes_t == 2 * 4 * 2**20 and (calls_b, calls_t) == (2 * 131072, 2)
    d = _diff(bad, twin)
    print(f"MPI-IO {mpiio_b:.2f} s -> {mpiio_t:.3f} s, POSIX writes {posix_b:.3f} s -> {posix_t:.3f} s, "
          f"{1e6 * mpiio_b / (calls_b / 2):.1f} us a call; change {d.io_time_change_s:+.2f} s")
    assert d.io_time_change_s < -material_s(d.before.io_time_s)
    # what the fix saved is MPI-IO's time above the layer below, not the writes themselves
    above = (mpiio_b - posix_b) - (mpiio_t - posix_t)
    assert above >= MIN_EXPLAINED_SHARE * -d.io_time_change_s and posix_b + posix_t < 0.3
    rb, rt = job_answer(str(bad))[0], job_answer(str(twin))[0]
    assert [x.code for x in rb.findings if x.level in ("WARN", "HIGH")] == ["M11"]
    assert not [x for x in rt.findings if x.level in ("WARN", "HIGH")] and "nothing worth changing" in rt.verdict
    (m11,) = [c for c in d.causes if c.code == "M11"]
    assert MIN_EXPLAINED_SHARE * -d.io_time_change_s <= -m11.change_s <= MAX_CLAIM * -d.io_time_change_s


def test_a_fastest_rank_that_moved_little_does_not_bound_the_straggler_claim():
    """The bound takes the fastest rank's rate for the device's with every stream on it; a fastest rank that read a
    64 KiB header in 5 ms has a rate of its latency, not the device's, and bounded P18 to 0 (review). Below
    `costs.BESIDE_MIN_SHARE` of a balanced rank's bytes its rate bounds nothing: the claim is the wait over the mean,
    as before the bound."""
    from ioweather.sources.darshan_log import read_log
    from ioweather.stats import costs
    from ioweather.stats.findings import job_findings
    from ioweather.stats.job import characterize

    def p18(fastest_bytes=None, fastest_s=None):
        log = read_log(str(PAIR_LOGS / "rank-imbalance-shared.darshan"))
        rec = log.records["POSIX"]
        if fastest_bytes is not None:
            (i,) = [k for k in range(len(rec)) if rec.ranks[k] == -1]
            rec.counter_values[i, rec.counter_names.index("POSIX_FASTEST_RANK_BYTES")] = fastest_bytes
            rec.fcounter_values[i, rec.fcounter_names.index("POSIX_F_FASTEST_RANK_TIME")] = fastest_s
            rec._arrays = None
            rec._frames.clear()
        (f,) = [f for f in job_findings(log, characterize(log)) if f["code"] == "P18"]
        return f

    bounded, header = p18(), p18(64 << 10, 0.005)
    assert bounded["level"] == header["level"] == "HIGH"
    assert 0 < bounded["cost_s"] < header["cost_s"]
    assert "beside" not in header["message"] and "beside_files" not in header["evidence"]
    # the unbounded claim is the wait over the mean rank (slowest - (write + meta) / ranks), read here directly
    log = read_log(str(PAIR_LOGS / "rank-imbalance-shared.darshan"))
    rec = log.records["POSIX"]
    (i,) = [k for k in range(len(rec)) if rec.ranks[k] == -1]
    fc = dict(zip(rec.fcounter_names, rec.fcounter_values[i]))
    wait = fc["POSIX_F_SLOWEST_RANK_TIME"] - (fc["POSIX_F_WRITE_TIME"] + fc["POSIX_F_META_TIME"]) / 4
    assert header["cost_s"] == pytest.approx(wait, rel=1e-6)
    # the share's edge: 1/8 of a balanced rank's bytes is enough, less is not
    total = float(dict(zip(rec.counter_names, rec.counter_values[i]))["POSIX_BYTES_WRITTEN"])
    assert costs.beside_ok(total / 4 / 8, total, 4) and not costs.beside_ok(total / 4 / 8 * 0.99, total, 4)


def test_concurrent_excess_bounds_nothing_without_a_rate():
    """No rate (0, NaN): no bound, the slowest rank's whole time (a caller's min() keeps its own claim), never
    "saves nothing"; with a rate, slowest - bytes / (streams x rate), never negative."""
    import numpy as np

    from ioweather.stats import costs

    got = costs.concurrent_excess(np.array([3.0, 3.0, 3.0, 1.0]), np.array([8e9, 8e9, 8e9, 8e9]),
                                  np.array([0.0, np.nan, 1e9, 1e9]), 4)
    assert got.tolist() == pytest.approx([3.0, 3.0, 1.0, 0.0])
