"""`ioweather job LOG --html OUT`: one self-contained page with the job's plots.

Plots are SVG inlined in the page (no network, no JavaScript), written by
`views.svg_charts` rather than matplotlib, whose import alone cost more than reading
and analysing the log. Every string that comes from a log (file names, the command
line) is HTML-escaped, in the tables and in the SVG.
"""

from __future__ import annotations

import numpy as np

from ioweather.units import format_bytes, format_seconds
from ioweather.views import svg_charts as charts
from ioweather.views.job_console import cost_text, lustre_text
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


def io_time_plot(rep: dict) -> str:
    """One group of bars per layer, side by side: a layer's time includes the layers under it
    (MPI-IO time contains the POSIX time it causes), so they are never stacked or added."""
    mods = [m for m, it in rep["interfaces"].items() if any(it.get(k) for k, _l, _c in _TIMES)]
    if not mods:
        return ""
    labels = [m if m in ("POSIX", "STDIO") else f"{m}\n(includes its POSIX time)" for m in mods]
    series = [(label, color, [rep["interfaces"][m].get(key) or 0.0 for m in mods]) for key, label, color in _TIMES]
    title = "I/O time by interface, layers side by side (never added up)"
    return _figure(title, charts.hbars(labels, series, format_seconds, "cumulative time over all ranks", title))


def access_size_plot(rep: dict) -> str:
    acc = rep["access"]
    if not acc["read_histogram"]:
        return ""
    bins = list(acc["read_histogram"])
    series = [("read", "#4c78a8", [acc["read_histogram"][b] for b in bins]),
              ("write", "#f58518", [acc["write_histogram"][b] for b in bins])]
    title = "POSIX access sizes (bytes)"
    return _figure(title, charts.vbars([b.replace("_", "–") for b in bins], series, charts.plain,
                                       "POSIX operations", title))


def sharing_plot(rep: dict) -> str:
    sh = rep["sharing"]
    kinds = ("unique", "shared", "partially_shared")
    if not any(sh[k] for k in kinds):
        return ""
    labels = ["unique N:N", "shared N:1", "partial N:M"]
    files = charts.vbars(labels, [("files", "#72b7b2", [sh[k] for k in kinds])], charts.plain, "files", "files",
                         width=300, height=220)
    moved = charts.vbars(labels, [("bytes moved", "#b279a2", [sh[f"{k}_bytes"] for k in kinds])], format_bytes,
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


def render_job_html(rep: dict, per_rank=None, dxt: dict | None = None, source: str = "",
                    per_rank_how: str = "own files; shared files are not split per rank",
                    damaged: dict | None = None) -> str:
    j, perf, tot = rep["job"], rep["perf"], rep["totals"]
    rows = [("executable", f"<code>{esc(j['exe'] or '(anonymized)')}</code>"), ("log", f"<code>{esc(source)}</code>"),
            ("job id / uid", f"{esc(j['jobid'])} / {esc(j['uid'])}"),
            ("processes / nodes", f"{esc(j['nprocs'])} / {esc(j['nnodes'] if j['nnodes'] is not None else 'unknown')}"),
            ("run", f"{esc(j['start'])} → {esc(j['end'])} ({esc(format_seconds(j['runtime_s']))})"),
            ("log format", esc(j["log_version"]) + (f" — <b>partial modules: {esc(', '.join(j['partial_modules']))}</b>"
                                                   if j["partial_modules"] else "")),
            ("moved (POSIX+STDIO)", f"{esc(format_bytes(tot['bytes_read']))} read, "
                                    f"{esc(format_bytes(tot['bytes_written']))} written, {tot['files']} files"),
            ("I/O time (slowest rank)", f"{esc(format_seconds(perf['io_time_s']))}"
             + (f" = {100 * perf['io_fraction_of_runtime']:.1f}% of the run" if perf["io_fraction_of_runtime"] is not None else "")),
            ("bandwidth", "-" if perf["mibps"] is None else f"{perf['mibps']:,.1f} MiB/s"),
            ("Darshan agg_perf_by_slowest (POSIX)", "-" if perf["agg_perf_by_slowest_mibps"] is None
             else f"{perf['agg_perf_by_slowest_mibps']:,.1f} MiB/s"),
            ("MiB/s per node", f"{perf['mibps_per_node']:,.2f}" if perf["mibps_per_node"] is not None
             else f"- ({esc(perf['mibps_per_node_reason'])})")]
    head = "".join(f"<tr><th>{esc(k)}</th><td style='text-align:left'>{v}</td></tr>" for k, v in rows)
    findings = "".join(f"<tr><td class='{esc(f['level'])}'>{esc(f['level'])}</td><td>{esc(f['code'])}</td>"
                       f"<td>{esc(cost_text(f))}</td><td style='text-align:left'>{esc(f['message'])}"
                       + (f"<br><code>{esc(f['fix'])}</code>" if f.get("fix") else "") + "</td></tr>"
                       for f in rep["findings"])
    notes = "".join(f"<li class='note'>{esc(w)}</li>" for w in rep.get("warnings", []))
    dxt_note = "".join(f"<p class='note'>{esc(m)} timeline left out: {esc(why)}</p>" for m, why in (damaged or {}).items())
    ifaces = "".join(
        f"<tr><td>{esc(m)}{' (partial)' if it.get('partial') else ''}</td><td>{esc(format_bytes(it['bytes_read'] or 0))}</td>"
        f"<td>{esc(format_bytes(it['bytes_written'] or 0))}</td><td>{esc(it['reads'])}</td><td>{esc(it['writes'])}</td>"
        f"<td>{esc(it['opens'])}</td><td>{esc(format_seconds(it['read_time_s']))}</td>"
        f"<td>{esc(format_seconds(it['write_time_s']))}</td><td>{esc(format_seconds(it['meta_time_s']))}</td>"
        f"<td>{esc(it['files'])}</td></tr>" for m, it in rep["interfaces"].items())
    mounts = "".join(
        f"<tr><td><code>{esc(m['mount'] or '(other)')}</code></td><td>{esc(m['fs_type'])}</td><td>{m['files']}</td>"
        f"<td>{esc(format_bytes(m['bytes_read']))}</td><td>{esc(format_bytes(m['bytes_written']))}</td>"
        f"<td>{esc(_lustre(m))}</td></tr>" for m in rep["mounts"])
    plots = "".join(p for p in (io_time_plot(rep), access_size_plot(rep), sharing_plot(rep),
                                per_rank_plot(per_rank, per_rank_how),
                                dxt_timeline_plot(dxt or {})) if p)
    top_files = "".join(f"<tr><td><code>{esc(f['name'])}</code></td><td>{esc(f['module'])}</td><td>{esc(f['sharing'])}</td>"
                        f"<td>{esc(format_bytes(f['bytes']))}</td></tr>" for f in rep.get("top_files", []))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ioweather job {esc(j['jobid'])}</title>
<style>{CSS}</style></head><body>
<h1>Why was this job's I/O slow? — job {esc(j['jobid'])}</h1>
<p class="verdict" id="verdict"><b>Verdict:</b> {esc(rep.get('verdict', ''))}</p>
<table>{head}</table>
{f"<h2>Warnings</h2><ul>{notes}</ul>" if notes else ""}
<h2>Findings, most expensive first</h2><table><tr><th>level</th><th>code</th><th>costs (share of I/O time)</th>
<th style="text-align:left">finding</th></tr>{findings}</table>
<h2>Plots</h2>{dxt_note}<div class="plots">{plots or '<p>no I/O to plot</p>'}</div>
<h2>Interfaces</h2><table><tr><th>module</th><th>read</th><th>written</th><th>reads</th><th>writes</th><th>opens</th>
<th>read time</th><th>write time</th><th>meta time</th><th>files</th></tr>{ifaces}</table>
<h2>File systems</h2><table><tr><th>mount</th><th>type</th><th>files</th><th>read</th><th>written</th><th>Lustre</th></tr>{mounts}</table>
<h2>Files that moved the most data</h2><table><tr><th>file</th><th>module</th><th>sharing</th><th>bytes</th></tr>{top_files}</table>
<p style="color:#777">ioweather — Darshan log read with PyDarshan; methods in METHODS.md §3.</p>
</body></html>
"""


def _lustre(m: dict) -> str:
    return lustre_text(m.get("lustre"))
