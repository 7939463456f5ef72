"""PNG figures of performance factors, after the paper's Figs. 2, 5 and 6 (seed 000).

density_figure   timeline (log durations, coloured by class) above the density of
                 ln(duration) with maxima, splits and the outlier cutoff (Fig. 2)
classify_figure  timeline coloured by class, sorted by access size (Fig. 6), beside
                 the model lines over the observations (Fig. 5)

Scatter plots keep at most MAX_POINTS points (an even stride, so the timeline's
shape survives); the title says when that happened.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ioweather.files import atomic_output
from ioweather.stats.factor_models import NO_MODEL_LABEL, class_name
from ioweather.stats.factors import OUTLIER_LABEL

MAX_POINTS = 200_000
PALETTE = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
OUTLIER_COLOUR = "#d62728"
NO_MODEL_COLOUR = "#7f7f7f"


def _pyplot():
    # lazy: matplotlib, loaded only when this runs
    import matplotlib

    matplotlib.use("Agg")
    # lazy: matplotlib, loaded only when this runs
    import matplotlib.pyplot as plt

    return plt


def _stride(n: int) -> np.ndarray:
    return np.arange(n) if n <= MAX_POINTS else np.linspace(0, n - 1, MAX_POINTS).astype(np.int64)


def _save(fig, path: Path) -> None:
    plt = _pyplot()
    try:
        with atomic_output(path) as f:  # savefig given a name would write through a link planted there
            fig.savefig(f, dpi=110, format=_format(path))
    finally:
        plt.close(fig)


def _format(path: Path) -> str:
    """savefig's format from the name, as it would choose when given the name (PNG when unknown)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    return suffix if suffix in {"png", "svg", "pdf", "jpg", "jpeg", "ps", "eps"} else "png"


def _colours(names: list[str], outlier: str | None) -> dict[str, str]:
    out = {}
    i = 0
    for n in names:
        if n == outlier:
            out[n] = OUTLIER_COLOUR
        else:
            out[n] = PALETTE[i % len(PALETTE)]
            i += 1
    return out


def density_figure(path: Path, durations_s: np.ndarray, analysis, *, title: str = "",
                   order: np.ndarray | None = None) -> None:
    """Fig. 2: timeline coloured by class above the density with splits and cutoff."""
    plt = _pyplot()
    names = [c.label for c in analysis.classes]
    colours = _colours(names, OUTLIER_LABEL)
    d = durations_s if order is None else durations_s[order]
    lab = analysis.labels if order is None else analysis.labels[order]
    idx = _stride(len(d))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7), gridspec_kw={"height_ratios": [1, 1]})
    for k, name in enumerate(names):
        sel = idx[lab[idx] == k]
        if len(sel):
            top.scatter(sel, d[sel], s=2, c=colours[name], label=f"{name} ({analysis.classes[k].fraction:.1%})",
                        rasterized=True, linewidths=0)
    top.set_yscale("log")
    top.set_xlabel("operation (in order)")
    top.set_ylabel("duration (s)")
    top.legend(loc="upper right", markerscale=4, fontsize=8)
    note = f" (every {len(d) // len(idx)}th of {len(d)} shown)" if len(idx) < len(d) else ""
    top.set_title((title + note) if title else note.strip())
    bottom.plot(analysis.grid_x, analysis.grid_y, color="black", lw=1)
    bottom.set_xlabel("ln(duration / s)")
    bottom.set_ylabel("density")
    for m in analysis.maxima_s:
        bottom.axvline(np.log(m), color="#1f77b4", lw=0.8, ls=":")
    for sp in analysis.splits_s:
        bottom.axvline(np.log(sp), color="black", lw=1, ls="--")
    if analysis.cutoff_s is not None:
        c = np.log(analysis.cutoff_s)
        bottom.axvline(c, color=OUTLIER_COLOUR, lw=1)
        bottom.plot([c], [0], marker="^", color=OUTLIER_COLOUR, ms=10, clip_on=False)
    bottom.set_title(f"bandwidth {analysis.bandwidth:.3g}, adjust {analysis.adjust:g}; dashed: splits, "
                     f"red: outlier cutoff", fontsize=9)
    fig.tight_layout()
    _save(fig, path)


def classify_figure(path: Path, sizes: np.ndarray, durations_s: np.ndarray, labels: np.ndarray,
                    class_order: list[str], models, match_cols: list[str], else_label: str, *,
                    title: str = "") -> None:
    """Fig. 6 (timeline by class, sorted by size) beside Fig. 5 (model lines over the observations)."""
    plt = _pyplot()
    colours = _colours([c for c in class_order if c != NO_MODEL_LABEL], else_label)
    colours[NO_MODEL_LABEL] = NO_MODEL_COLOUR
    order = np.argsort(sizes, kind="stable")
    idx = _stride(len(order))
    sel = order[idx]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5))
    for name in class_order:
        m = labels[sel] == name
        if m.any():
            share = float((labels == name).mean())
            left.scatter(np.flatnonzero(m), durations_s[sel][m], s=2, c=colours.get(name, NO_MODEL_COLOUR),
                         label=f"{name} ({share:.1%})", rasterized=True, linewidths=0)
            right.scatter(sizes[sel][m], durations_s[sel][m], s=2, c=colours.get(name, NO_MODEL_COLOUR),
                          rasterized=True, linewidths=0, alpha=0.5)
    left.set_yscale("log")
    left.set_xlabel("operation (sorted by access size)")
    left.set_ylabel("duration (s)")
    left.legend(loc="upper left", markerscale=4, fontsize=8)
    left.set_title(title, fontsize=10)
    grid = np.unique(np.concatenate([np.geomspace(max(sizes.min(), 1), max(sizes.max(), 2), 200), [4096]]))
    styles = ["-", "--", "-.", ":"]
    for i, m in enumerate(models):
        name = class_name(m, match_cols)
        right.plot(grid, m.predict(grid), color=colours.get(name, "black"), lw=1.5, ls=styles[(i // len(PALETTE)) % 4],
                   label=m.label)
    right.set_xscale("log", base=2)
    right.set_yscale("log")
    right.set_xlabel("access size (bytes)")
    right.set_ylabel("duration (s)")
    right.legend(loc="upper left", fontsize=8)
    right.set_title("model lines: slowest duration each factor explains", fontsize=10)
    fig.tight_layout()
    _save(fig, path)
