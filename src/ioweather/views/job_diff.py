"""The text form of `ioweather job diff`: the verdict, the two runs side by side, the causes."""

from __future__ import annotations

from ioweather.stats.lab_scores import overclaims
from ioweather.units import format_seconds
from ioweather.views.output import print_table, stdout


def _s(v) -> str:
    return "-" if v is None else format_seconds(v)


def _signed(v) -> str:
    return "-" if v is None else ("+" if v >= 0 else "−") + format_seconds(abs(v))


def print_job_diff(d) -> None:
    """`d`: a services.answers.job_diff.JobDiff."""
    stdout.print(f"verdict: {d.verdict}", highlight=False)
    runs = [{"run": name, "log": s.path, "io": _s(s.io_time_s), "runtime": _s(s.runtime_s), "procs": s.nprocs,
             "system": _s(s.system_s), "verdict": s.verdict} for name, s in (("before", d.before), ("after", d.after))]
    print_table(runs, [("run", "run"), ("log", "log"), ("io", "I/O time"), ("runtime", "run time"),
                       ("procs", "processes"), ("system", "system (why)"), ("verdict", "its verdict")], title="runs")
    share = "-" if d.explained_share is None else f"{100 * d.explained_share:.0f} %"
    over = (f" (the causes claim {_signed(d.claimed_s)}, more than the change)"
            if overclaims(d.claimed_s, d.io_time_change_s) else "")
    by = (f"explained {_signed(d.explained_s)} ({share}: the findings {_signed(d.explained_s - d.pace_s)}, the "
          f"system's pace {_signed(d.pace_s)})" if d.pace_s else
          f"explained by the findings {_signed(d.explained_s)} ({share})")
    stdout.print(f"I/O time change {_signed(d.io_time_change_s)}; {by}{over}", highlight=False)
    print_table([{"kind": c.kind, "code": c.code, "change": _signed(c.change_s), "what": c.message} for c in d.causes],
                [("kind", "kind"), ("code", "code"), ("change", "change"), ("what", "what changed")],
                title="causes", empty="no finding or counter changed")
    for n in d.notes:
        stdout.print(f"note: {n}", highlight=False)
