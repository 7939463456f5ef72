"""A content snapshot as one self-contained HTML page.

The figures of seed 002 section IV: the cumulative distribution of file sizes by
count and by bytes (Fig. 8, with the curve "without the largest project" when
per-project histograms are available) and of access and modification age by
count and by bytes (Fig. 9), then the per-project (first-level directory) table,
owners, histogram summaries and the first errors. Figures are inline SVG drawn
by matplotlib; the page is views/templates/fsstats_report.html, where every name from the file
system reaches HTML through Jinja's autoescaping.
"""

from __future__ import annotations

import io
import math

from markupsafe import Markup

from ioweather.stats import fsstats as fs
from ioweather.units import format_bytes, format_number
from ioweather.views.templating import render


def _svg(fig) -> Markup:
    """matplotlib's SVG, trusted: it escapes the text it draws (a directory name in a legend)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return Markup(text[text.find("<svg"):])


def _size_label(x, _pos=None) -> str:
    if x < 1:
        return ""
    return format_bytes(x).replace(".0 ", " ")


def _days_label(x, _pos=None) -> str:
    return format_number(x)


def _cdf_axes(ax, curves, xlabel, formatter, title):
    # lazy: matplotlib, loaded only when this runs
    from matplotlib.ticker import FuncFormatter, LogLocator

    for x, y, label, style in curves:
        if len(x):
            ax.plot(x, 100 * y, style, label=label, marker="o", markersize=3)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=2 ** (10 if "size" in xlabel else 2)))
    ax.xaxis.set_major_formatter(FuncFormatter(formatter))
    ax.set_ylim(0, 100)
    ax.set_ylabel("cumulative %")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(True, alpha=.3)
    ax.legend(loc="lower right", fontsize=8)


def size_figure(doc: dict) -> str:
    # lazy: matplotlib, loaded only when this runs
    import matplotlib

    matplotlib.use("Agg")
    # lazy: matplotlib, loaded only when this runs
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.fonttype"] = "none"
    h = doc["histograms"]["file_size"]
    curves = [(*fs.cdf(h, "count"), "files", "-"), (*fs.cdf(h, "bytes"), "bytes", "--")]
    largest = max((d for d in doc["top_dirs"] if d.get("file_size_log2") and d["name"] != "."),
                  key=lambda d: d["files"], default=None)
    if largest and len(doc["top_dirs"]) > 1 and largest["files"] < doc["files"]:
        # seed 002 Fig. 8: the same curve without the project that dominates the file count
        total_c = _log2_totals(h, "count")
        total_b = _log2_totals(h, "bytes")
        lc, lb = largest["file_size_log2"]["count"], largest["file_size_log2"]["bytes"]
        rest_c = [c - (lc[k] if k < len(lc) else 0) for k, c in enumerate(total_c)]
        rest_b = [b - (lb[k] if k < len(lb) else 0) for k, b in enumerate(total_b)]
        x, y = fs.cdf_from_log2(rest_c, rest_b, "count")
        keep = [i for i in range(len(x)) if i >= _first_nonzero(rest_c)]
        curves.append((x[keep], y[keep], f"files without {largest['name'][:40]}", ":"))
    fig, ax = plt.subplots(figsize=(6.4, 4))
    _cdf_axes(ax, curves, "file size", _size_label, "Cumulative distribution of file sizes")
    out = _svg(fig)
    plt.close(fig)
    return out


def _log2_totals(h: dict, key: str) -> list[int]:
    out = [0] * (max((b["max"] for b in h["buckets"]), default=1).bit_length())
    for b in h["buckets"]:
        out[b["max"].bit_length() - 1] = b[key]
    return out


def _first_nonzero(values) -> int:
    return next((i for i, v in enumerate(values) if v), 0)


def age_figure(doc: dict) -> str:
    # lazy: matplotlib, loaded only when this runs
    import matplotlib

    matplotlib.use("Agg")
    # lazy: matplotlib, loaded only when this runs
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.fonttype"] = "none"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, key, title in ((axes[0], "atime_age_days", "(a) access time"), (axes[1], "mtime_age_days", "(b) modification time")):
        h = doc["histograms"][key]
        _cdf_axes(ax, [(*fs.cdf(h, "count"), "files", "-"), (*fs.cdf(h, "bytes"), "bytes", "--")],
                  "age (days, upper bucket bound)", _days_label, title)
    out = _svg(fig)
    plt.close(fig)
    return out


def _pct(part, whole) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _num(x) -> str:
    if x is None:
        return "-"
    return format_number(x, 3) if isinstance(x, float) else f"{x:,}"


def render_html(doc: dict, *, max_rows: int = 200) -> str:
    totals = [["files", _num(doc["files"])], ["directories", _num(doc["dirs"])], ["symlinks", _num(doc["symlinks"])],
              ["other", _num(doc["other"])], ["data", format_bytes(doc["bytes"])],
              ["capacity used", format_bytes(doc["capacity_bytes"])],
              ["hard links counted once", _num(doc["hardlinks_deduplicated"])], ["errors", _num(doc["errors"])],
              ["excluded", _num(doc["excluded"])], ["mount points not crossed", _num(doc["skipped_mounts"])]]
    h = doc["histograms"]
    sz = h["file_size"]
    sizes = None
    if sz["count"]:
        top = fs.largest_bucket(sz)
        sizes = {"low": _size_label(top["min"]) or "0 B", "high": _size_label(top["max"]), "files": _num(top["count"]),
                 "small_files": _pct_of(fs.fraction_below(sz, 2**20)),
                 "small_bytes": _pct_of(fs.fraction_below(sz, 2**20, "bytes")),
                 "size_svg": size_figure(doc), "age_svg": age_figure(doc)}
    tops = doc["top_dirs"]
    projects = [[d["name"], _num(d["files"]), _pct(d["files"], doc["files"]), format_bytes(d["bytes"]),
                 _pct(d["bytes"], doc["bytes"]), format_bytes(d["capacity_bytes"]), _num(d["dirs"]),
                 d["newest_mtime"] or "-"] for d in tops[:max_rows]]
    owners = [[o["user"] or "", o["uid"], _num(o["files"]), format_bytes(o["bytes"]), _pct(o["bytes"], doc["bytes"]),
               format_bytes(o["capacity_bytes"])] for o in doc["owners"][:max_rows]]
    histograms = [[k, v["unit"], _num(v["count"]), _num(v["min"]), _num(v["max"]), _num(v["mean"])] for k, v in h.items()]
    errors = [[x["path"], x["op"], x["error"]] for x in doc["error_list"]]
    return render("fsstats_report.html", doc=doc, entries=_num(doc["entries"]), totals=totals, sizes=sizes,
                  projects=projects, more_projects=len(tops) > max_rows, max_rows=max_rows, owners=owners,
                  overhead=_overhead(h.get("overhead")), histograms=histograms, errors=errors) + "\n"


def _overhead(ov: dict | None) -> dict | None:
    """fsstats' positive and negative overhead side by side, one row per size range: where block
    rounding costs space (small files) and where holes or compression save it (sparse files)."""
    if not ov or not ov["count"]:
        return None
    rows = [[f"[{_size_label(b['min']) or '0 B'}, {_size_label(b['max'])})", _num(b["count"]), format_bytes(b["bytes"]),
             format_bytes(b["positive_sum"]), format_bytes(b["negative_sum"]), _signed_bytes(b["sum"])]
            for b in ov["buckets"] if b["count"]]
    return {"count": _num(ov["count"]), "positive": format_bytes(ov["positive"]["sum"]),
            "negative": format_bytes(ov["negative"]["sum"]), "rows": rows}


def _signed_bytes(n: int) -> str:
    return ("-" if n < 0 else "") + format_bytes(abs(n))


def _pct_of(frac) -> str:
    return "-" if frac is None or (isinstance(frac, float) and math.isnan(frac)) else f"{100 * frac:.1f}%"
