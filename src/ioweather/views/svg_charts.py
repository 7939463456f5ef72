"""Small SVG charts written by hand: grouped bars, a filled step line, a segment timeline.

Why not matplotlib: for `ioweather job LOG --html` importing and running it took longer
than reading and analysing the whole log (issue 16's benchmark). These charts need
axes, ticks, bars and a legend, nothing more. Every text (labels, tick labels, legend)
goes through `esc`; tick labels are formatted by the caller's formatter (`format_bytes`,
`format_seconds`, ...), so no number is ever written in scientific notation.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

import numpy as np

from ioweather.units import format_bytes, format_seconds

FONT = "font-family:system-ui,sans-serif;font-size:11px"
Fmt = Callable[[float], str]


def esc(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def plain(v: float) -> str:
    """A tick value in positional notation (1,500 or 0.25): counts of operations, ranks."""
    if v == int(v):
        return f"{int(v):,}"
    return f"{v:,.3f}".rstrip("0").rstrip(".")


#: Units that tick labels are round in: 1, 2 or 5 x 10^k of the unit the largest value is shown in.
BYTE_UNITS = tuple(1024.0 ** k for k in range(6))
SECOND_UNITS = (1e-9, 1e-6, 1e-3, 1.0, 60.0, 3600.0, 86400.0)


def _unit(hi: float, fmt: Fmt) -> float:
    units = BYTE_UNITS if fmt is format_bytes else SECOND_UNITS if fmt is format_seconds else (1.0,)
    # the units' own thresholds: format_bytes switches at 1024, format_seconds at 1 (ns..s), 60, 3600, 86400
    return max([u for u in units if hi >= u] or [units[0]])


def nice_ticks(hi: float, n: int = 5, fmt: Fmt | None = None) -> list[float]:
    """0 and multiples of 1, 2 or 5 x 10^k (of the unit `fmt` shows `hi` in) up to at least `hi`, about `n`."""
    if not math.isfinite(hi) or hi <= 0:
        return [0.0, 1.0]
    unit = _unit(hi, fmt) if fmt is not None else 1.0
    return [t * unit for t in _round_ticks(hi / unit, n)]


def _round_ticks(hi: float, n: int) -> list[float]:
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    k = math.ceil(hi / step - 1e-9)
    return [i * step for i in range(k + 1)]


def _f(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, s: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{_f(x)}" y="{_f(y)}" text-anchor="{anchor}"{extra}>{esc(s)}</text>'


def _svg(w: int, h: int, body: str, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'role="img" style="{FONT}"><title>{esc(title)}</title>{body}</svg>')


def _legend(series: Sequence[tuple[str, str]], x: float, y: float) -> str:
    out = []
    for label, color in series:
        out.append(f'<rect x="{_f(x)}" y="{_f(y - 9)}" width="10" height="10" fill="{esc(color)}"/>'
                   + _text(x + 14, y, label, "start"))
        x += 24 + 7 * len(label)
    return "".join(out)


Series = Sequence[tuple[str, str, Sequence[float]]]  # (label, colour, one value per category)


def hbars(categories: Sequence[str], series: Series, fmt: Fmt, xlabel: str, title: str, width: int = 560) -> str:
    """Horizontal bars, one group per category, the series side by side within a group (never stacked)."""
    left, right, top, row = 150, 20, 26, 14 * len(series) + 14
    plot_h = row * len(categories)
    h = top + plot_h + 40
    pw = width - left - right
    hi = max((float(v) for _l, _c, vals in series for v in vals), default=0.0)
    ticks = nice_ticks(hi, 4, fmt)
    sx = pw / ticks[-1]
    body = [_legend([(lab, c) for lab, c, _v in series], left, 14)]
    for t in ticks:
        x = left + t * sx
        body.append(f'<line x1="{_f(x)}" y1="{top}" x2="{_f(x)}" y2="{top + plot_h}" stroke="#ddd"/>'
                    + _text(x, top + plot_h + 14, fmt(t)))
    for i, cat in enumerate(categories):
        y0 = top + i * row + 7
        lines = str(cat).split("\n")
        for k, line in enumerate(lines):
            body.append(_text(left - 6, y0 + row / 2 - 3 + 12 * (k - (len(lines) - 1) / 2), line, "end"))
        for k, (label, color, vals) in enumerate(series):
            v = max(float(vals[i] or 0.0), 0.0)
            body.append(f'<rect x="{left}" y="{_f(y0 + 14 * k)}" width="{_f(v * sx)}" height="12" '
                        f'fill="{esc(color)}"><title>{esc(f"{cat} {label}: {fmt(v)}")}</title></rect>')
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#333"/>')
    body.append(_text(left + pw / 2, h - 8, xlabel))
    return _svg(width, h, "".join(body), title)


def vbars(categories: Sequence[str], series: Series, fmt: Fmt, ylabel: str, title: str,
          width: int = 520, height: int = 260) -> str:
    """Vertical bars, one group per category, the series side by side; category labels slanted when long."""
    left, right, top = 84, 12, 24
    slanted = max((len(str(c)) for c in categories), default=0) > 6
    bottom = 70 if slanted else 36
    pw, ph = width - left - right, height - top - bottom
    hi = max((float(v) for _l, _c, vals in series for v in vals), default=0.0)
    ticks = nice_ticks(hi, 4, fmt)
    sy = ph / ticks[-1]
    gw = pw / max(len(categories), 1)
    bw = gw * 0.8 / max(len(series), 1)
    body = [_legend([(lab, c) for lab, c, _v in series], left, 14)] if len(series) > 1 else []
    for t in ticks:
        y = top + ph - t * sy
        body.append(f'<line x1="{left}" y1="{_f(y)}" x2="{left + pw}" y2="{_f(y)}" stroke="#ddd"/>'
                    + _text(left - 4, y + 4, fmt(t), "end"))
    for i, cat in enumerate(categories):
        x0 = left + i * gw + gw * 0.1
        for k, (label, color, vals) in enumerate(series):
            v = max(float(vals[i] or 0.0), 0.0)
            body.append(f'<rect x="{_f(x0 + k * bw)}" y="{_f(top + ph - v * sy)}" width="{_f(bw)}" '
                        f'height="{_f(v * sy)}" fill="{esc(color)}"><title>{esc(f"{cat} {label}: {fmt(v)}")}'
                        f'</title></rect>')
        cx, cy = left + (i + 0.5) * gw, top + ph + 14
        body.append(_text(cx, cy, cat, "end", f' transform="rotate(-40 {_f(cx)} {_f(cy)})"') if slanted
                    else _text(cx, cy, cat))
    body.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>')
    body.append(_text(14, top + ph / 2, ylabel, "middle", f' transform="rotate(-90 14 {_f(top + ph / 2)})"'))
    return _svg(width, height, "".join(body), title)


def steps(x: np.ndarray, y: np.ndarray, fmt: Fmt, ylabel: str, xlabel: str, color: str, title: str,
          width: int = 620, height: int = 170) -> str:
    """A filled step curve centred on each x (one path, so thousands of ranks stay small)."""
    left, right, top, bottom = 84, 12, 8, 34
    pw, ph = width - left - right, height - top - bottom
    x = np.asarray(x, dtype=np.float64)
    y = np.clip(np.nan_to_num(np.asarray(y, dtype=np.float64)), 0, None)
    lo, hi = (float(x[0]) - 0.5, float(x[-1]) + 0.5) if len(x) else (0.0, 1.0)
    ticks = nice_ticks(float(y.max()) if len(y) else 0.0, 3, fmt)
    sy, sx = ph / ticks[-1], pw / (hi - lo)
    px = left + (np.concatenate([x - 0.5, [x[-1] + 0.5]]) - lo) * sx if len(x) else np.array([left])
    py = top + ph - y * sy
    d = [f"M{_f(px[0])},{top + ph}"]
    for i in range(len(y)):
        d.append(f"V{_f(py[i])}H{_f(px[i + 1])}")
    d.append(f"V{top + ph}Z")
    body = []
    for t in ticks:
        yy = top + ph - t * sy
        body.append(f'<line x1="{left}" y1="{_f(yy)}" x2="{left + pw}" y2="{_f(yy)}" stroke="#ddd"/>'
                    + _text(left - 4, yy + 4, fmt(t), "end"))
    body.append(f'<path d="{"".join(d)}" fill="{esc(color)}"/>')
    for t in nice_ticks(hi - lo, 6):
        if t + lo + 0.5 <= hi:
            xx = left + (t + 0.5) * sx
            body.append(_text(xx, top + ph + 14, plain(t + lo + 0.5)))
    body.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>')
    body.append(_text(left + pw / 2, height - 4, xlabel))
    body.append(_text(14, top + ph / 2, ylabel, "middle", f' transform="rotate(-90 14 {_f(top + ph / 2)})"'))
    return _svg(width, height, "".join(body), title)


def timeline(start: np.ndarray, end: np.ndarray, row: np.ndarray, is_write: np.ndarray, fmt: Fmt, title: str,
             width: int = 700, height: int = 260) -> str:
    """One horizontal segment per operation at its row (rank); reads blue, writes orange.

    Segments are snapped to half pixels and merged where they overlap on a row, one path per
    colour: a trace of 20 000 operations stays a few hundred kilobytes.
    """
    left, right, top, bottom = 60, 12, 22, 34
    pw, ph = width - left - right, height - top - bottom
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    row = np.asarray(row, np.float64)
    t_hi = float(end.max()) if len(end) else 1.0
    r_hi = float(row.max()) if len(row) else 0.0
    xt = nice_ticks(t_hi, 6, fmt)
    yt = [t for t in nice_ticks(max(r_hi, 1.0), 4) if t <= r_hi]  # whole ranks only
    # each rank a row centred on its number: ranks 0..r_hi span -0.5..r_hi+0.5
    sx, sy = pw / xt[-1], ph / (r_hi + 1)
    body = [_legend([("read", "#4c78a8"), ("write", "#f58518")], left, 14)]
    for t in xt:
        xx = left + t * sx
        body.append(f'<line x1="{_f(xx)}" y1="{top}" x2="{_f(xx)}" y2="{top + ph}" stroke="#eee"/>'
                    + _text(xx, top + ph + 14, fmt(t)))
    for t in yt:
        yy = top + ph - (t + 0.5) * sy
        body.append(_text(left - 4, yy + 4, plain(t), "end"))
    for write, color in ((False, "#4c78a8"), (True, "#f58518")):
        m = np.asarray(is_write, bool) == write
        if not m.any():
            continue
        x0 = np.round((left + np.clip(start[m], 0, None) * sx) * 2) / 2
        x1 = np.maximum(np.round((left + np.clip(end[m], 0, None) * sx) * 2) / 2, x0 + 1)  # short ops stay visible
        yy = np.round((top + ph - (row[m] + 0.5) * sy) * 2) / 2
        order = np.lexsort((x0, yy))
        d, cur = [], None
        for i in order:
            if cur is not None and cur[0] == yy[i] and x0[i] <= cur[2]:
                cur[2] = max(cur[2], x1[i])
                continue
            if cur is not None:
                d.append(f"M{_f(cur[1])},{_f(cur[0])}H{_f(cur[2])}")
            cur = [yy[i], x0[i], x1[i]]
        if cur is not None:
            d.append(f"M{_f(cur[1])},{_f(cur[0])}H{_f(cur[2])}")
        lw = max(1.0, min(6.0, sy * 0.8))
        body.append(f'<path d="{"".join(d)}" stroke="{color}" stroke-width="{_f(lw)}" fill="none"/>')
    body.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>')
    body.append(_text(left + pw / 2, height - 4, "time since job start"))
    body.append(_text(12, top + ph / 2, "rank", "middle", f' transform="rotate(-90 12 {_f(top + ph / 2)})"'))
    return _svg(width, height, "".join(body), title)
