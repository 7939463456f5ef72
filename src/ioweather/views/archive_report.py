"""`ioweather jobs summary --html OUT`: the archive's cross-job views as one self-contained page
(views/templates/archive_report.html; project, user and executable names are autoescaped)."""

from __future__ import annotations

import io
import re

import numpy as np

from markupsafe import Markup

from ioweather.views.job_report import CSS, _figure
from ioweather.views.templating import render


def _plt():
    # lazy: matplotlib, loaded only when this runs
    import matplotlib

    matplotlib.use("Agg")
    # lazy: matplotlib, loaded only when this runs
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "figure.dpi": 96})
    return plt


def svg(fig) -> str:
    """matplotlib's SVG (it escapes the labels it draws, project names among them)."""
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


def render_summary_html(rep: dict) -> str:
    plots = [p for p in (
        _stacked(rep["interfaces_by_size"], "jobs_using", ["POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF"],
                 "interfaces used by job size", "jobs using it"),
        _stacked(rep["interfaces_by_size"], "bytes", ["POSIX", "STDIO", "MPI-IO", "HDF5", "PnetCDF"],
                 "bytes by interface and job size", "GiB", 2**30),
        _stacked(rep["strategy_by_size"], "dominant", ["unique", "shared", "partially_shared"],
                 "I/O strategy by job size (jobs, by dominant strategy)", "jobs"),
        _stacked(rep["strategy_by_size"], "bytes", ["unique", "shared", "partially_shared"],
                 "I/O strategy by job size (bytes)", "GiB", 2**30),
        files_plot(rep["files_vs_procs"]), boxplot(rep["mibps_per_node_by_project"])) if p]
    return render("archive_report.html", rep=rep, css=Markup(CSS), plots=[Markup(p) for p in plots]) + "\n"
