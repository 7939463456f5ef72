"""The `ioweather workload --html` report: one self-contained HTML file (figures as inline PNG).

Static matplotlib figures rather than plotly: a year at 1-minute resolution is half a
million points per curve, which a PNG holds in ~100 KB while an interactive plot would
carry the points themselves. Nothing is fetched from the network when the page opens. The page
is views/templates/workload_report.html (names reach it through Jinja's autoescaping).
"""

from __future__ import annotations

import base64
import io

import numpy as np

from ioweather.stats.workload import aggregate_signal, daily_mean_rates, rates, spectrogram, total_of, window_study
from ioweather.units import format_bytes
from ioweather.views.templating import render as render_template

READ_COLOR, WRITE_COLOR = "#d62728", "#1f77b4"  # seed 004: red for reads, blue for writes


def _figure(width=10.0, height=3.2, rows=1, sharex=False):
    # lazy: matplotlib, loaded only when this runs
    import matplotlib

    matplotlib.use("Agg", force=False)
    # lazy: matplotlib, loaded only when this runs
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, figsize=(width, height * rows), sharex=sharex, squeeze=False)
    return fig, axes[:, 0]


def _png(fig) -> str:
    # lazy: matplotlib, loaded only when this runs
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _times(data) -> np.ndarray:
    step_ns = int(round(data.interval_s * 1e9))
    return (data.t0_ns + np.arange(len(data.read_bytes), dtype=np.int64) * step_ns).astype("datetime64[ns]")


def _gib_s(x):
    return np.asarray(x, float) / (1 << 30)


def fig_daily(result, data) -> str:
    d = daily_mean_rates(data.t0_ns, data.interval_s, data.read_bytes, data.write_bytes)
    fig, (ax,) = _figure()
    ax.plot(d.index, _gib_s(d["read_bps"]), "o-", color=READ_COLOR, label="read", ms=3)
    ax.plot(d.index, _gib_s(d["write_bps"]), "o-", color=WRITE_COLOR, label="write", ms=3)
    ax.set_ylabel("daily mean rate (GiB/s)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.autofmt_xdate()
    return _png(fig)


def fig_burstiness(result) -> str:
    b = result["burstiness"]
    fig, (ax,) = _figure(6, 3.5)
    ax.step(_gib_s(b["cdf_bps"]), b["cdf_frac"], where="post", color="k")
    if result["peak_total_bps"]:
        ax.axvline(_gib_s(0.33 * result["peak_total_bps"]), color="grey", ls="--", label="33 % of peak")
        ax.legend()
    ax.set_xlabel("aggregate throughput (GiB/s)")
    ax.set_ylabel("fraction of time")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    return _png(fig)


def fig_spectrum(result) -> str:
    fig, axes = _figure(10, 2.8, rows=2)
    for ax, key, color in zip(axes, ("read", "write"), (READ_COLOR, WRITE_COLOR)):
        s = result["power_spectrum"][key]
        edges = np.asarray(s["bin_edges_bytes"], float) / (1 << 20)
        if len(edges) > 1 and edges[-1] > 0:
            ax.bar(edges[:-1], np.asarray(s["bytes"], float) / (1 << 30), width=np.diff(edges), align="edge",
                   color=color, alpha=0.8)
        if s["centroid_bytes"] is not None:
            ax.axvline(s["centroid_bytes"] / (1 << 20), color="k", ls="--",
                       label=f"centroid {format_bytes(s['centroid_bytes'])}")
            ax.legend()
        ax.set_ylabel(f"{key}: GiB in bin")
        ax.set_xlabel("bytes per target per sampling interval (MiB)")
    return _png(fig)


def fig_acf(result) -> str:
    a = result["acf"]
    fig, (ax,) = _figure(10, 3.2)
    lags_h = np.asarray(a["lags_s"], float) / 3600
    ax.plot(lags_h, np.asarray(a["read"], float), color=READ_COLOR, label="read")
    ax.plot(lags_h, np.asarray(a["write"], float), color=WRITE_COLOR, label="write")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("lag (hours)")
    ax.set_ylabel("autocorrelation")
    ax.legend()
    ax.grid(alpha=0.3)
    return _png(fig)


def fig_events(result, data) -> str:
    t = _times(data)
    sig = aggregate_signal(data.read_bytes, data.write_bytes, data.interval_s, data.smooth_s)
    total, s = sig.total, sig.smoothed
    fig, (ax,) = _figure(10, 3.6)
    ax.plot(t, _gib_s(total), color="0.7", lw=0.5, label="aggregate rate")
    ax.plot(t, _gib_s(s), color="k", lw=1, label=f"smoothed ({data.smooth_s:g} s)")
    colors = ("#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
    for i, e in enumerate(result["events"]):
        ax.axvspan(np.datetime64(e["start"].rstrip("Z")), np.datetime64(e["end"].rstrip("Z")),
                   color=colors[i % len(colors)], alpha=0.25, lw=0)
    ax.set_ylabel("GiB/s")
    ax.legend(loc="upper right")
    fig.autofmt_xdate()
    return _png(fig)


def _edges(centres: np.ndarray) -> tuple[float, float]:
    """The image's x extent from its column centres. Extent = first and last centre gave one column
    (data shorter than a segment) zero width: matplotlib's "identical low and high xlims" warning and a
    collapsed image. A lone segment starts at 0, so it spans twice its centre."""
    step = (centres[-1] - centres[0]) / (len(centres) - 1) if len(centres) > 1 else 2 * centres[0]
    return float(centres[0] - step / 2), float(centres[-1] + step / 2)


def fig_spectrogram(data) -> str:
    total = total_of(rates(data.read_bytes, data.interval_s), rates(data.write_bytes, data.interval_s))
    f, seg_t, p = spectrogram(total, data.interval_s, segment_s=max(3600.0, 16 * data.interval_s))
    fig, axes = _figure(10, 2.8, rows=2)
    axes[0].plot(_times(data), _gib_s(total), color="0.3", lw=0.5)
    axes[0].set_ylabel("GiB/s")
    if p.size:
        x0, x1 = _edges(seg_t / 3600)
        extent = (x0, x1, f[0] * 3600, f[-1] * 3600)
        axes[1].imshow(np.log10(p + p[p > 0].min() if (p > 0).any() else p + 1), aspect="auto", origin="lower",
                       extent=extent, cmap="jet")
        axes[1].set_xlabel("hours from start")
        axes[1].set_ylabel("cycles per hour")
    return _png(fig)


def _zoom_day(result, data) -> tuple[int, int]:
    """Index range of the day to show peak positions for: all of a short range, else the UTC day
    of the event that moved the most bytes (seed 004 Fig. 11 shows one day)."""
    n = len(data.read_bytes)
    per_day = int(round(86400 / data.interval_s))
    if n <= 2 * per_day:
        return 0, n
    start_ns = data.t0_ns
    if result["events"]:
        biggest = max(result["events"], key=lambda e: e["bytes"] or 0)
        start_ns = int(np.datetime64(biggest["start"].rstrip("Z"), "ns").astype(np.int64))
    day0 = (start_ns // 86_400_000_000_000) * 86_400_000_000_000
    i0 = max(0, int((day0 - data.t0_ns) // int(round(data.interval_s * 1e9))))
    return i0, min(n, i0 + per_day)


def fig_window_study(result, data):
    total = total_of(rates(data.read_bytes, data.interval_s), rates(data.write_bytes, data.interval_s))
    study = window_study(total, data.interval_s, min_amplitude=data.min_amplitude)
    t = _times(data)
    i0, i1 = _zoom_day(result, data)
    fig, axes = _figure(10, 3.0, rows=2)
    for row in study:
        peaks = np.asarray(row["peaks"], np.int64)
        peaks = peaks[(peaks >= i0) & (peaks < i1)]
        axes[0].plot(t[peaks], np.full(len(peaks), row["window_s"] / 60), "o", ms=5, color="k")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("window (min)")
    axes[0].set_title("event peaks per smoothing window (peaks found across many windows are robust)")
    axes[0].set_xlim(t[i0], t[i1 - 1])
    axes[1].plot([r["window_s"] / 60 for r in study], [r["count"] for r in study], "o-", color="k")
    axes[1].set_xscale("log")
    axes[1].set_xlabel("smoothing window (min)")
    axes[1].set_ylabel("events in the range")
    axes[1].grid(alpha=0.3)
    axes[0].tick_params(axis="x", labelrotation=20)
    counts = ", ".join(f"{r['window_s'] / 60:g} min: {r['count']}" for r in study)
    return _png(fig), counts


def rate_text(v) -> str:
    return "-" if v is None else f"{format_bytes(v)}/s"


def pct_text(v) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def render(result: dict, data) -> str:
    r = result
    summary = [
        ("range", f"{r['start']} – {r['end']}"),
        ("intervals", f"{r['samples']} of {r['interval_s']:g} s, {r['missing_samples']} missing"),
        ("targets / observations", f"{r['targets']} / {r['observations']} ({r['missing_observations']} missing)"),
        ("read / written", f"{format_bytes(r['read_bytes'])} / {format_bytes(r['write_bytes'])}"),
        ("read/write ratio", "-" if r["read_write_ratio"] is None else f"{r['read_write_ratio']:.2f}"),
        ("peak read / write / total", f"{rate_text(r['peak_read_bps'])} / {rate_text(r['peak_write_bps'])} / {rate_text(r['peak_total_bps'])}"),
        ("mean total", rate_text(r["mean_total_bps"])),
        ("time below 33 % of peak", pct_text(r["burstiness"]["frac_time_below_33pct_peak"])),
        ("events", str(len(r["events"]))),
    ]
    study_png, study_counts = fig_window_study(r, data)
    figs = {"daily": fig_daily(r, data), "burstiness": fig_burstiness(r), "spectrum": fig_spectrum(r),
            "acf": fig_acf(r), "events": fig_events(r, data), "spectrogram": fig_spectrogram(data), "study": study_png}
    idle = [(p["bin"], p["count"], f"{p['minutes']:g}", pct_text(p["frac_time"])) for p in r["idle_periods"]]
    events = [(e["start"], e["end"], e["peak_time"], rate_text(e["peak_bps"]), format_bytes(e["bytes"]))
              for e in r["events"][:200]]
    return render_template("workload_report.html", r=r, summary=summary, figs=figs, idle=idle, events=events,
                           study_counts=study_counts) + "\n"
