"""`ioweather jobs summary --html OUT`: the archive's cross-job views as one self-contained page."""

from __future__ import annotations

import io
import re

import numpy as np

from ioweather.units import format_bytes
from ioweather.views.job_report import CSS, _figure, esc


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "figure.dpi": 96})
    return plt


def svg(fig) -> str:
    plt = _plt()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    # the RDF metadata block only carries namespace URLs and a date
    return re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)


def _stacked(rows: list[dict], field: str, keys: list[str], title: str, ylabel: str, scale: float = 1.0) -> str:
    if not rows:
        return ""
    plt = _plt()
    labels = [r["size_class"] for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 2.8))
    bottom = np.zeros(len(rows))
    for k in keys:
        vals = np.array([r[field][k] for r in rows], dtype=float) / scale
        ax.bar(labels, vals, bottom=bottom, label=k)
        bottom += vals
    ax.set_xlabel("processes per job")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    return _figure(title, svg(fig))


def boxplot(box: dict) -> str:
    rows = box["projects"][:25]
    if not rows:
        return ""
    plt = _plt()
    stats = [{"label": r["project"], "whislo": r["min"], "q1": r["q1"], "med": r["median"], "q3": r["q3"],
              "whishi": r["max"], "fliers": []} for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.3 * len(rows)))
    ax.bxp(stats, vert=False, showfliers=False)
    ax.set_xlabel("MiB/s per compute node")
    ax.invert_yaxis()
    return _figure("MiB/s/CN per project (min, Q1, median, Q3, max)", svg(fig))


def files_plot(rows: list[dict]) -> str:
    if not rows:
        return ""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 2.8))
    labels = [r["size_class"] for r in rows]
    ax.plot(labels, [max(r["files_median"], 0.1) for r in rows], "o-", label="median")
    ax.plot(labels, [max(r["files_p90"], 0.1) for r in rows], "s--", label="90th percentile")
    ax.plot(labels, [max(r["files_max"], 0.1) for r in rows], "^:", label="max")
    ax.set_yscale("log")
    ax.set_xlabel("processes per job")
    ax.set_ylabel("files per job")
    ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    return _figure("files per job against job size", svg(fig))


def _top_table(top: dict, key: str) -> str:
    rows = "".join(f"<tr><td><code>{esc(r[key])}</code></td><td>{r['jobs']}</td><td>{esc(format_bytes(r['bytes_read']))}</td>"
                   f"<td>{esc(format_bytes(r['bytes_written']))}</td></tr>" for r in top["by_bytes_read"])
    return f"<table><tr><th>{esc(key)}</th><th>jobs</th><th>read</th><th>written</th></tr>{rows}</table>"


def _project_row(r: dict) -> str:
    rate = "-" if r["mibps_per_node_mean"] is None else f"{r['mibps_per_node_mean']:.2f}"
    meta = "-" if r["meta_time_share_mean"] is None else f"{100 * r['meta_time_share_mean']:.0f}%"
    key = "-" if r["key_access_bytes"] is None else format_bytes(r["key_access_bytes"])
    cells = [f"<code>{esc(r['project'])}</code>", r["jobs"], f"{r['nprocs_mean']:.0f}", esc(format_bytes(r["bytes_read"])),
             esc(format_bytes(r["bytes_written"])), rate, meta, f"{r['files_per_job_mean']:.1f}", esc(key),
             esc(r["interfaces"])]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def render_summary_html(rep: dict) -> str:
    plots = "".join(p for p in (
        _stacked(rep["interfaces_by_size"], "jobs_using", ["POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF"],
                 "interfaces used by job size", "jobs using it"),
        _stacked(rep["interfaces_by_size"], "bytes", ["POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF"],
                 "bytes by interface and job size", "GiB", 2**30),
        _stacked(rep["strategy_by_size"], "dominant", ["unique", "shared", "partially_shared"],
                 "I/O strategy by job size (jobs, by dominant strategy)", "jobs"),
        _stacked(rep["strategy_by_size"], "bytes", ["unique", "shared", "partially_shared"],
                 "I/O strategy by job size (bytes)", "GiB", 2**30),
        files_plot(rep["files_vs_procs"]), boxplot(rep["mibps_per_node_by_project"])) if p)
    proj = "".join(_project_row(r) for r in rep["projects"])
    f = rep["filters"]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ioweather: Darshan archive</title><style>{CSS}</style></head><body>
<h1>Darshan archive: {rep['jobs']} jobs</h1>
<p>{esc(format_bytes(rep['bytes_read']))} read, {esc(format_bytes(rep['bytes_written']))} written;
{rep['failed_logs']} logs could not be read. MiB/s/CN over jobs with ≥ {f['min_procs']} processes and
≥ {esc(format_bytes(f['min_bytes']))} moved.</p>
<div class="plots">{plots}</div>
<h2>Top projects</h2>{_top_table(rep['top_projects'], 'project')}
<h2>Top users</h2>{_top_table(rep['top_users'], 'user')}
<h2>Top executables</h2>{_top_table(rep['top_executables'], 'exe_name')}
<h2>Projects</h2><table><tr><th>project</th><th>jobs</th><th>procs</th><th>read</th><th>written</th><th>MiB/s/CN</th>
<th>metadata</th><th>files/job</th><th>key access size</th><th>APIs</th></tr>{proj}</table>
</body></html>
"""
