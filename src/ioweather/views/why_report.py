"""`why JOB`: the budget table's rows, the events' rows and the one-page HTML report (docs/why.md)."""

from __future__ import annotations

from ioweather.units import format_bytes, format_seconds
from ioweather.views.why_cells import system_time


def _share(part: float, whole: float) -> str:
    return "-" if not whole else f"{100 * part / whole:.1f} %"


def budget_rows(w: dict) -> list[dict]:
    """The job's parts, then (several logs) each log's."""
    io = w["io_time_s"]
    unknown = w["system_s"] is None
    rows = [{"label": name, "time": system_time(w) if key == "system_s" else format_seconds(w[key]),
             "share": "-" if unknown and key == "system_s" else _share(w[key], io), "evidence": ev}
            for name, key, ev in (("I/O time", "io_time_s", f"{len(w['logs'])} Darshan log(s)"),
                                  ("your code", "code_s", w["evidence"]["code"]),
                                  (f"the system ({w['system_model']})", "system_s", w["evidence"]["system"]),
                                  ("unexplained", "unexplained_s", w["evidence"]["unexplained"]))]
    return rows


def log_rows(w: dict) -> list[dict]:
    return [{"log": b["id"], "start": b["start"].replace("T", " ")[:19], "fs": b["fs"] or "unknown",
             "io": format_seconds(b["io_time_s"]), "code": format_seconds(b["code_s"]),
             "system": system_time(b), "unexplained": format_seconds(b["unexplained_s"]),
             "model": b["system_model"]} for b in w["logs"]]


def event_rows(w: dict) -> list[dict]:
    return [{"start": e["start"].replace("T", " ")[:19], "end": e["end"].replace("T", " ")[:19], "fs": e["fs"],
             "moved": format_bytes(e["bytes"]),
             "culprits": ", ".join(f"job {c['job']} ({100 * c['share']:.0f} %, {c['method']})" for c in e["culprits"][:5])
             or "no job named"} for e in w["events"]]


def render_html(w: dict) -> str:
    # lazy: jinja2, rich via views.templating: commands.why imports this at its top: kept off `ioweather why --help` and its usage errors
    from ioweather.views.templating import render

    return render("why_report.html", w=w)
