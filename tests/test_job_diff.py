"""`ioweather job diff BEFORE AFTER` (issue 39 item 4) on pairs of real runs with a known difference:
planted-cause logs of the real Darshan runtime (tests/data/lab, make_logs.sh): a bad run and its fix
(4 KiB writes each fsynced -> the same bytes in 4 MiB writes and one fsync), and one clean job run
alone and during a fio storm on the same disk."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.services.jobs.darshan import job_answer
from ioweather.services.answers.job_diff import DiffSide, claimed, diff_reports, explained, job_diff

LAB = Path(__file__).parent / "data" / "lab"
BAD, FIXED = LAB / "fsync-4k.darshan", LAB / "fixed-large.darshan"
QUIET, STORM = LAB / "clean-quiet.darshan", LAB / "clean-storm.darshan"


def test_a_bad_to_fixed_pair_is_explained_by_the_finding_that_vanished():
    d = job_diff(None, str(BAD), str(FIXED))
    # the reference: each run's I/O time and the sync finding's saving, from `job` itself
    before, after = job_answer(str(BAD))[0].raw(), job_answer(str(FIXED))[0].raw()
    change = after["perf"]["io_time_s"] - before["perf"]["io_time_s"]
    assert d.io_time_change_s == pytest.approx(change) and change < -3.0
    y01 = next(c for c in d.causes if c.code == "Y01")
    assert y01.kind == "finding" and "vanished" in y01.message
    assert y01.change_s == pytest.approx(-next(f["combined_s"] for f in before["findings"] if f["code"] == "Y01"))
    assert d.explained_share >= 0.9 and d.verdict.startswith("the code changed")
    # the counters say what the code did differently: 16,000 writes became 16
    writes = next(c for c in d.causes if c.code == "interfaces.POSIX.writes")
    assert (writes.before, writes.after, writes.change_s) == (16000, 16, None)
    assert not d.same_code


def _posix_writes(log: Path) -> tuple[float, float]:
    """(bytes written, write seconds summed over the records) of the POSIX module, read with PyDarshan (not
    ioweather's reader)"""
    import darshan

    rep = darshan.DarshanReport(str(log), read_all=False)
    rep.mod_read_all_records("POSIX")
    d = rep.records["POSIX"].to_df()
    return float(d["counters"]["POSIX_BYTES_WRITTEN"].sum()), float(d["fcounters"]["POSIX_F_WRITE_TIME"].sum())


def test_the_same_code_during_a_storm_is_the_system():
    d = job_diff(None, str(QUIET), str(STORM))
    assert d.io_time_change_s > 0.25 * d.before.io_time_s     # the storm made it measurably slower
    assert d.same_code and [c for c in d.causes if c.kind == "counter"] == []
    assert d.verdict.startswith("same code; the system")
    assert d.system is None and "both runs must be stored" in d.notes[0]
    # no finding accounts for it: the same 4 MiB writes ran slower a byte, the system's pace, and only that
    assert [c.kind for c in d.causes] == ["pace"] and "by the system's pace" in d.verdict
    (pace,) = d.causes
    assert pace.code == "pace.POSIX.write" and pace.change_s > 0 and d.pace_s == d.explained_s == d.io_time_change_s
    # the rates (bytes a second of write time, summed over the ranks) are PyDarshan's
    (bq, tq), (bs, ts) = _posix_writes(QUIET), _posix_writes(STORM)
    assert bq == bs and (pace.before, pace.after) == (pytest.approx(bq / tq), pytest.approx(bs / ts))
    assert pace.common_bytes == bq and pace.after < pace.before / 1.5


def test_the_reverse_pair_explains_an_increase():
    d = job_diff(None, str(FIXED), str(BAD))
    assert d.io_time_change_s > 0 and d.explained_share >= 0.9
    assert next(c for c in d.causes if c.code == "Y01").message.startswith("Y01 appeared")


def test_explained_never_exceeds_the_change_nor_counts_causes_pointing_the_other_way():
    from ioweather.services.answers.job_diff import DiffCause

    def cause(s):
        return DiffCause(kind="finding", code="X", message="", change_s=s, before=None, after=None)

    assert explained(-3.0, [cause(-5.0)]) == -3.0
    assert explained(-3.0, [cause(-1.0), cause(2.0)]) == -1.0
    assert explained(4.0, [cause(1.0), cause(-9.0), cause(2.0)]) == 3.0
    # the claim before the cap: what an over-claim is seen by
    assert claimed(-3.0, [cause(-5.0), cause(1.0)]) == -5.0 and claimed(4.0, [cause(-9.0)]) == 0


def test_a_run_against_itself_is_no_change():
    rep = job_answer(str(QUIET))[0]
    side = DiffSide(ident="a", path="a", io_time_s=rep.perf.io_time_s, runtime_s=1.0, nprocs=2, exe="x",
                    verdict="")
    d = diff_reports(side, rep, side, rep)
    assert d.io_time_change_s == 0 and d.causes == [] and d.verdict.startswith("no material change")


def test_cli_json_table_and_errors(cli, home):
    r = cli("job", "diff", str(BAD), str(FIXED), "--json", home=home, check=True)
    doc = json.loads(r.stdout)
    assert set(doc) >= {"before", "after", "io_time_change_s", "causes", "explained_s", "claimed_s", "verdict",
                        "system"}
    assert {"code", "message", "change_s"} <= set(doc["causes"][0])
    text = cli("job", "diff", str(QUIET), str(STORM), home=home, env={"COLUMNS": "200"}, check=True).stdout
    assert "verdict: same code; the system" in text and "I/O time change +" in text
    # no finding: the pace of the same writes is the system's, named apart from the findings
    assert "by the system's pace" in text and "the findings +0 s, the system's pace +" in text
    # the stored collective-rmw pair: M09 claims −1.6 s of a −1.3 s change, capped at 100 % explained; the text
    # says the causes claim more than the change (beyond stats.lab_scores.OVERCLAIM, 1.2x)
    pairs = LAB / "pairs"
    text = cli("job", "diff", str(pairs / "collective-rmw.darshan"), str(pairs / "fixed-collective-rmw.darshan"),
               home=home, env={"COLUMNS": "200"}, check=True).stdout
    assert "(100 %) (the causes claim −1.6 s, more than the change)" in text
    bad = cli("job", "diff", str(BAD), str(LAB / "missing.darshan"), home=home)
    assert bad.returncode != 0 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "Usage: ioweather job diff" in cli("job", "diff", "--help", home=home, check=True).stdout
    # `ioweather job LOG` is unchanged beside the subcommand
    assert json.loads(cli("job", str(QUIET), "--json", home=home, check=True).stdout)["verdict"]


def test_stored_jobs_by_hash_prefix(cli, home):
    """Both runs ingested: named by log hash; no telemetry for this disk, so no system share, said so."""
    cli("jobs", "ingest", str(QUIET), str(STORM), "--workers", "1", home=home, check=True)
    rows = json.loads(cli("jobs", "list", "--json", home=home, check=True).stdout)
    by_path = {Path(r["path"]).name: r["id"] for r in rows}
    doc = json.loads(cli("job", "diff", by_path[QUIET.name][:12], by_path[STORM.name][:12], "--json",
                         home=home, check=True).stdout)
    assert doc["verdict"].startswith("same code; the system") and doc["system"] is None
    assert doc["notes"] and "no system share" in doc["notes"][0]
    # a file system named for why that has no telemetry here: still no share, and the reason is why's
    doc = json.loads(cli("job", "diff", by_path[QUIET.name][:12], by_path[STORM.name][:12], "--json", "--fs", "vm",
                         home=home, check=True).stdout)
    # (why refuses a name with no telemetry and lists the known ones: the same reason, one resolver)
    assert doc["system"] is None and "unknown file system 'vm'" in doc["notes"][0]


def _stored_pair(cli, home, tmp_path) -> tuple[Path, list[str]]:
    """The quiet and the storm run copied to their own paths and stored: (the quiet one's path, both ids)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    q, s = runs / QUIET.name, runs / STORM.name
    shutil.copy(QUIET, q)
    shutil.copy(STORM, s)
    cli("jobs", "ingest", str(q), str(s), "--workers", "1", home=home, check=True)
    return q, [hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in (q, s)]


def test_a_stored_log_changed_since_its_ingest_keeps_whys_note(cli, home, tmp_path):
    """Both runs stored, then the before run's file rewritten (another run's log at its path): `why` of that job
    reads its stored row and says so; the diff keeps why's note, named by its run (it dropped every note of
    why's, and asked why for the path, whose new bytes are no stored job: no note at all). The diff itself reads
    the log as it is now."""
    q, ids = _stored_pair(cli, home, tmp_path)
    settings = Settings.resolve(home)
    assert not any("changed since" in n for n in job_diff(settings, *ids).notes)
    shutil.copy(FIXED, q)
    d = job_diff(settings, *ids)
    assert d.system is None and d.notes[0].startswith(f"no system share: {q}: ")  # no telemetry of this disk
    assert f"before run, why: {q} changed since it was ingested: its stored row is used" in d.notes
    assert d.before.io_time_s == job_answer(str(FIXED))[0].perf.io_time_s


def test_why_refusing_the_after_run_keeps_the_before_runs_notes(cli, home, tmp_path, monkeypatch):
    """`why` of the after run refusing (a UserError) ends the system share and says why, beside the notes
    already gathered from the before run's `why` (they were replaced); its climate note stays out (a kind of
    note, not a text: a reworded one would stay out too)."""
    from ioweather.errors import UserError
    from ioweather.services.answers import why as why_mod

    q, ids = _stored_pair(cli, home, tmp_path)
    shutil.copy(FIXED, q)  # the before run's why then notes its stored row
    settings = Settings.resolve(home)
    real, asked = why_mod.why, []

    def after_refused(settings, h, fs=None):
        asked.append(h)
        if len(asked) == 2:
            raise UserError("the after run refused")
        w = real(settings, h, fs=fs)
        w.notes = [why_mod.ClimateNote(f"{n} (reworded)") if isinstance(n, why_mod.ClimateNote) else n
                   for n in w.notes]
        assert any(isinstance(n, why_mod.ClimateNote) for n in w.notes)  # no telemetry here: no climate
        w.system_s = 1.0  # as with telemetry of the before run's disk: the after run's why is asked then
        return w

    monkeypatch.setattr(why_mod, "why", after_refused)
    d = job_diff(settings, *ids)
    assert len(asked) == 2 and d.system is None
    assert d.notes[0] == "no system share: the after run refused"
    assert f"before run, why: {q} changed since it was ingested: its stored row is used" in d.notes
    assert not any("no climate" in n for n in d.notes)
