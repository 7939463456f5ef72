"""The human rendering of `ioweather jobs list` and `jobs show` (stored jobs, as the Jobs pages show them)."""

from __future__ import annotations

from ioweather.stats.rules_revision import RULES_REVISION
from ioweather.units import format_bytes, format_seconds
from ioweather.views.output import plain, print_table, stdout


def _b(x) -> str:
    return "-" if x is None else format_bytes(x)


def _rate(bps) -> str:
    return "-" if bps is None else f"{format_bytes(bps)}/s"


def _older_rules(revision: str | None) -> str:
    """Why a stored answer is not this code's (`rules_current` false): the rules it was derived under."""
    when = f"of {revision}" if revision else "older than the rows' dates"
    return f"derived under the advisor's rules {when}, not this ioweather's ({RULES_REVISION})"


def print_job_list(rows) -> None:
    """`jobs list`: its `JobRow`s (services/jobs/darshan.py); a level of older rules is marked '*'."""
    shown = [{"id": r.id[:16], "jobid": r.jobid, "start": (r.start or "-")[:19].replace("T", " "), "who": r.user,
              "exe": r.exe, "nprocs": r.nprocs,
              "runtime": "-" if r.runtime_s is None else format_seconds(r.runtime_s),
              "read": _b(r.bytes_read), "written": _b(r.bytes_written),
              "rate": _rate(None if r.mibps is None else r.mibps * (1 << 20)),
              "level": (r.level or "-") + ("" if r.rules_current else "*")} for r in rows]
    print_table(shown, [("id", "id"), ("jobid", "job id"), ("start", "start (UTC)"), ("who", "user"),
                        ("exe", "exe"), ("nprocs", "procs"), ("runtime", "runtime"), ("read", "read"),
                        ("written", "written"), ("rate", "I/O rate"), ("level", "level")],
                empty="no stored job matches; 'ioweather jobs ingest PATH' stores logs")
    stale = sum(not r.rules_current for r in rows)
    if stale:
        stdout.print(plain(f"* {stale} of these jobs' levels, findings and verdicts were derived under older advisor "
                           f"rules (this ioweather's: {RULES_REVISION}); 'ioweather jobs ingest PATH' refreshes them"))


def print_stored_job(rep: dict) -> None:
    j, tot, perf = rep["job"], rep["totals"], rep["perf"]
    stdout.print(plain(rep["verdict"] or "no verdict stored: re-ingest the log ('ioweather jobs ingest PATH') "
                       "to store it"))
    if not rep["rules_current"]:
        stdout.print(plain(f"note: this verdict and its findings were {_older_rules(rep['rules_revision'])}: "
                           f"'ioweather jobs ingest {rep['path']}' refreshes them ('ioweather job LOG' reads the log now)"))
    stdout.print(plain(f"job {j['jobid']}  uid {j['uid']}  {j['exe']}"))
    stdout.print(plain(f"{j['nprocs']} processes, {j['nnodes'] if j['nnodes'] is not None else '?'} nodes, "
                       f"{j['start']} .. {j['end']} ({'-' if j['runtime_s'] is None else format_seconds(j['runtime_s'])})"))
    stdout.print(plain(f"read {_b(tot['read_bytes'])}, written {_b(tot['write_bytes'])}, {tot['files']} files; "
                       f"I/O rate {_rate(perf['bps'])}, I/O time "
                       f"{'-' if perf['io_time_s'] is None else format_seconds(perf['io_time_s'])}"))
    stdout.print(plain(f"log {rep['path']} (id {rep['id'][:16]}, ingested {rep['ingested_at']})"))
    findings = [{"code": f["code"], "level": f["level"], "cost": "-" if f["cost_s"] is None else
                 format_seconds(f["cost_s"]), "message": f["message"] or f.get("what") or ""}
                for f in rep["findings"]]
    print_table(findings, [("code", "code"), ("level", "level"), ("cost", "cost"), ("message", "finding")],
                title="findings (HIGH/WARN), most expensive first", empty="no HIGH or WARN finding")
    print_table([{**f, "name": f["name"] or "-", "moved": _b(f["moved_bytes"])} for f in rep["top_files"][:10]],
                [("name", "file"), ("module", "module"), ("sharing", "sharing"), ("moved", "bytes")],
                title="files that moved the most", empty="no per-file rows stored for this job")
