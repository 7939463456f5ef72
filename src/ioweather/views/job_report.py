"""`ioweather job LOG --html OUT`: one self-contained page with the job's plots.

Plots are SVG inlined in the page (no network, no JavaScript), written by
`views.svg_charts` rather than matplotlib, whose import alone cost more than reading
and analysing the log. Every string that comes from a log (file names, the command
line) is HTML-escaped: in the SVG by svg_charts, on the page (views/templates/job_report.html)
by Jinja's autoescaping.
"""

from __future__ import annotations

import numpy as np

from ioweather.units import format_bytes, format_seconds
from ioweather.views import svg_charts as charts
from ioweather.views.job_text import combined_text, cost_text, layer_text, lustre_text
from ioweather.views.svg_charts import esc

#: At most this many DXT segments are drawn (a uniform sample beyond that) to keep pages fast.
MAX_TIMELINE_SEGMENTS = 20000

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left}.HIGH{color:#b00;font-weight:bold}.WARN{color:#a60}
.INFO{color:#06c}.OK{color:#080}.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0}
code{background:#f4f4f4;padding:0 .2em;word-break:break-all}
.verdict{font-size:1.1em;padding:.6em .9em;border-left:4px solid #b00;background:#fff6f6}
.note{color:#a60}
"""


def _figure(title: str, body: str) -> str:
    return f"<figure><figcaption><b>{esc(title)}</b></figcaption>{body}</figure>"


_TIMES = (("read_time_s", "read", "#4c78a8"), ("write_time_s", "write", "#f58518"),
          ("meta_time_s", "metadata", "#54a24b"))


def io_time_plot(rep) -> str:
    """One group of bars per layer, side by side: a layer's time includes the layers under it
    (MPI-IO time contains the POSIX time it causes), so they are never stacked or added."""
    mods = [m for m, it in rep.interfaces.items() if any(getattr(it, k) for k, _l, _c in _TIMES)]
    if not mods:
        return ""
    labels = [m if m in ("POSIX", "STDIO") else f"{m}\n(includes its POSIX time)" for m in mods]
    series = [(label, color, [getattr(rep.interfaces[m], key) or 0.0 for m in mods]) for key, label, color in _TIMES]
    title = "I/O time by interface, layers side by side (never added up)"
    return _figure(title, charts.hbars(labels, series, format_seconds, "cumulative time over all ranks", title))


def access_size_plot(rep) -> str:
    acc = rep.access
    if not acc.read_histogram:
        return ""
    bins = list(acc.read_histogram)
    series = [("read", "#4c78a8", [acc.read_histogram[b] for b in bins]),
              ("write", "#f58518", [acc.write_histogram[b] for b in bins])]
    title = "POSIX access sizes (bytes)"
    return _figure(title, charts.vbars([b.replace("_", "–") for b in bins], series, charts.plain,
                                       "POSIX operations", title))


def sharing_plot(rep) -> str:
    sh = rep.sharing
    kinds = ("unique", "shared", "partially_shared")
    if not any(getattr(sh, k) for k in kinds):
        return ""
    labels = ["unique N:N", "shared N:1", "partial N:M"]
    files = charts.vbars(labels, [("files", "#72b7b2", [getattr(sh, k) for k in kinds])], charts.plain, "files", "files",
                         width=300, height=220)
    moved = charts.vbars(labels, [("bytes moved", "#b279a2", [getattr(sh, f"{k}_bytes") for k in kinds])], format_bytes,
                         "bytes moved", "bytes moved", width=300, height=220)
    return _figure("file sharing (POSIX + STDIO)", files + moved)


def per_rank_plot(per_rank, how: str = "own files; shared files are not split per rank") -> str:
    if per_rank is None or len(per_rank) < 2 or not (per_rank["bytes"] > 0).any():
        return ""
    r = per_rank["rank"].to_numpy()
    title = f"bytes and I/O time per rank ({how})"
    return _figure(title, charts.steps(r, per_rank["bytes"].to_numpy(), format_bytes, "bytes", "", "#4c78a8",
                                       "bytes per rank")
                   + "<br>" + charts.steps(r, per_rank["time"].to_numpy(), format_seconds, "I/O time", "rank",
                                           "#e45756", "I/O time per rank"))


def dxt_timeline_plot(dxt: dict) -> str:
    """One horizontal segment per traced operation, rank on the y axis; read blue, write orange."""
    segs = [s for s in dxt.values() if len(s)]
    if not segs:
        return ""
    seg = max(segs, key=len)  # POSIX when both are present (it has the file-system view)
    n = len(seg)
    idx = np.arange(n)
    if n > MAX_TIMELINE_SEGMENTS:
        idx = np.linspace(0, n - 1, MAX_TIMELINE_SEGMENTS).astype(np.int64)
    note = f" (sample of {len(idx)} of {n} operations)" if n > len(idx) else ""
    title = f"{seg.module} timeline: reads blue, writes orange{note}"
    return _figure(title, charts.timeline(seg.start_time[idx], seg.end_time[idx], seg.rank[idx], seg.is_write[idx],
                                          format_seconds, title))


def render_job_html(rep, top_files: list[dict], per_rank=None, dxt: dict | None = None, source: str = "",
                    per_rank_how: str = "own files; shared files are not split per rank",
                    damaged: dict | None = None) -> str:
    """`job LOG --html` of its `JobReport` (services/jobs/answer.py) and the files that moved the most
    (name, module, sharing, bytes)."""
    # lazy: jinja2, markupsafe: services.jobs.report imports this module for `why` and `job --json`, which
    # render no page
    from markupsafe import Markup

    # lazy: jinja2 via views.templating: as above
    from ioweather.views.templating import render

    plots = [Markup(p) for p in (io_time_plot(rep), access_size_plot(rep), sharing_plot(rep),
                                 per_rank_plot(per_rank, per_rank_how), dxt_timeline_plot(dxt or {})) if p]
    findings = [{"level": f.level, "code": f.code, "message": f.message, "cost": cost_text(f),
                 "combined": combined_text(f), "fix": f.fix} for f in rep.findings]
    mounts = [{"mount": m.mount, "fs_type": m.fs_type, "files": m.files, "bytes_read": m.bytes_read,
               "bytes_written": m.bytes_written, "lustre": lustre_text(m.lustre)} for m in rep.mounts]
    layer = layer_text(rep.perf) if rep.perf.io_time_layer else ""
    return render("job_report.html", rep=rep, j=rep.job, perf=rep.perf, tot=rep.totals, source=source, layer=layer,
                  css=Markup(CSS), findings=findings, mounts=mounts, plots=plots, top_files=top_files,
                  damaged=list((damaged or {}).items())) + "\n"
