"""A content snapshot as one self-contained HTML page.

The figures of seed 002 section IV: the cumulative distribution of file sizes by
count and by bytes (Fig. 8, with the curve "without the largest project" when
per-project histograms are available) and of access and modification age by
count and by bytes (Fig. 9), then the per-project (first-level directory) table,
owners, histogram summaries and the first errors. Figures are inline SVG drawn
by matplotlib; every name from the file system is HTML-escaped.
"""

from __future__ import annotations

import html
import io
import math

from ioweather.stats import fsstats as fs
from ioweather.units import format_bytes

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
h1{font-size:1.4em;word-break:break-all} h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0} td,th{padding:.2em .7em;border-bottom:1px solid #ddd;text-align:right}
td.name,th.name{text-align:left;word-break:break-all;max-width:30em}
.figs{display:flex;flex-wrap:wrap;gap:1em} .note{color:#555}
"""


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.find("<svg"):]


def _size_label(x, _pos=None) -> str:
    if x < 1:
        return ""
    return format_bytes(x).replace(".0 ", " ")


def _days_label(x, _pos=None) -> str:
    return f"{x:g}"


def _cdf_axes(ax, curves, xlabel, formatter, title):
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
    import matplotlib

    matplotlib.use("Agg")
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
    import matplotlib

    matplotlib.use("Agg")
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


def _table(rows: list[list], header: list[str], name_cols: int = 1) -> str:
    e = html.escape
    head = "".join(f'<th class="name">{e(h)}</th>' if i < name_cols else f"<th>{e(h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td class="name">{e(str(c))}</td>' if i < name_cols else f"<td>{e(str(c))}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _pct(part, whole) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _num(x) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:,.3g}" if abs(x) < 1000 else f"{x:,.0f}"
    return f"{x:,}"


def render_html(doc: dict, *, max_rows: int = 200) -> str:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>fsstats {e(doc['root'])}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>Content snapshot of {e(doc['root'])}</h1>",
             f"<p class='note'>taken {e(doc['snapshot_time'])} on {e(doc.get('host') or '?')}, "
             f"{_num(doc['entries'])} entries in {doc['walk_s']:.1f} s with {doc['threads']} threads"
             f"{', crossing mounts' if doc['cross_mounts'] else ''}"
             f"{', excluding ' + e(', '.join(doc['exclude'])) if doc['exclude'] else ''}.</p>"]
    for n in doc.get("notes", []):
        parts.append(f"<p class='note'>{e(n)}</p>")
    totals = [["files", _num(doc["files"])], ["directories", _num(doc["dirs"])], ["symlinks", _num(doc["symlinks"])],
              ["other", _num(doc["other"])], ["data", format_bytes(doc["bytes"])],
              ["capacity used", format_bytes(doc["capacity_bytes"])],
              ["hard links counted once", _num(doc["hardlinks_deduplicated"])], ["errors", _num(doc["errors"])],
              ["excluded", _num(doc["excluded"])], ["mount points not crossed", _num(doc["skipped_mounts"])]]
    parts.append(_table(totals, ["total", ""]))
    h = doc["histograms"]
    sz = h["file_size"]
    if sz["count"]:
        top = fs.largest_bucket(sz)
        parts.append(f"<p>The most popular size range is {e(_size_label(top['min']) or '0 B')} to "
                     f"{e(_size_label(top['max']))} with {_num(top['count'])} files; "
                     f"{_pct_of(fs.fraction_below(sz, 2**20))} of files are under 1 MiB, holding "
                     f"{_pct_of(fs.fraction_below(sz, 2**20, 'bytes'))} of the data.</p>")
        parts.append("<h2>File sizes (seed 002 Fig. 8)</h2><div class='figs'>" + size_figure(doc) + "</div>")
        parts.append("<h2>File ages (seed 002 Fig. 9)</h2><div class='figs'>" + age_figure(doc) + "</div>")
    tops = doc["top_dirs"]
    parts.append(f"<h2>Per project (first-level directory{'' if len(tops) <= max_rows else f', largest {max_rows}'})</h2>")
    parts.append(_table([[d["name"], _num(d["files"]), _pct(d["files"], doc["files"]), format_bytes(d["bytes"]),
                          _pct(d["bytes"], doc["bytes"]), format_bytes(d["capacity_bytes"]), _num(d["dirs"]),
                          d["newest_mtime"] or "-"] for d in tops[:max_rows]],
                        ["directory", "files", "% files", "data", "% data", "capacity", "dirs", "newest file mtime"]))
    parts.append("<h2>Owners</h2>")
    parts.append(_table([[o["user"] or "", o["uid"], _num(o["files"]), format_bytes(o["bytes"]),
                          _pct(o["bytes"], doc["bytes"]), format_bytes(o["capacity_bytes"])]
                         for o in doc["owners"][:max_rows]], ["user", "uid", "files", "data", "% data", "capacity"],
                        name_cols=1))
    parts.append(_overhead_section(h.get("overhead")))
    parts.append("<h2>Histogram summaries</h2>")
    parts.append(_table([[k, v["unit"], _num(v["count"]), _num(v["min"]), _num(v["max"]), _num(v["mean"])]
                         for k, v in h.items()], ["histogram", "unit", "count", "min", "max", "mean"], name_cols=2))
    if doc["error_list"]:
        parts.append(f"<h2>Errors (first {len(doc['error_list'])} of {doc['errors']})</h2>")
        parts.append(_table([[x["path"], x["op"], x["error"]] for x in doc["error_list"]], ["path", "operation", "error"],
                            name_cols=3))
    parts.append("</body></html>\n")
    return "".join(parts)


def _overhead_section(ov: dict | None) -> str:
    """fsstats' positive and negative overhead side by side, one row per size range: where block
    rounding costs space (small files) and where holes or compression save it (sparse files)."""
    if not ov or not ov["count"]:
        return ""
    e = html.escape
    pos, neg = ov["positive"], ov["negative"]
    rows = [[f"[{_size_label(b['min']) or '0 B'}, {_size_label(b['max'])})", _num(b["count"]), format_bytes(b["bytes"]),
             format_bytes(b["positive_sum"]), format_bytes(b["negative_sum"]), _signed_bytes(b["sum"])]
            for b in ov["buckets"] if b["count"]]
    return ("<h2>Space overhead by size (capacity minus size)</h2>"
            f"<p>Over {_num(ov['count'])} files, directories and symlinks, allocation beyond the data "
            f"(block rounding, metadata blocks) costs {e(format_bytes(pos['sum']))}; holes, compression or data "
            f"kept in the inode save {e(format_bytes(neg['sum']))}.</p>"
            + _table(rows, ["size", "items", "data", "capacity beyond size", "size beyond capacity", "net"]))


def _signed_bytes(n: int) -> str:
    return ("-" if n < 0 else "") + format_bytes(abs(n))


def _pct_of(frac) -> str:
    return "-" if frac is None or (isinstance(frac, float) and math.isnan(frac)) else f"{100 * frac:.1f}%"
