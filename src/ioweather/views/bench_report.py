"""`bench summary --html`: seed 004's Table 2 per file system — columns motif x direction, rows
optimum, average and ratio (= contention) — plus the last run's fraction of peak and the regression
flag. Names reach HTML only through Jinja's autoescaping (views/templates/bench_report.html)."""

from __future__ import annotations

from ioweather.units import format_seconds
from ioweather.views.templating import render as render_template



def _ratio(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def render(rows: list[dict]) -> str:
    """The HTML page of `bench summary` rows (motif, direction, fs, runs, optimum_s, mean_s, contention, ...)."""
    by_fs: dict[str, list[dict]] = {}
    for r in rows:
        by_fs.setdefault(r["fs"], []).append({
            "motif": r["motif"], "direction": r["direction"], "runs": r["runs"],
            "optimum": format_seconds(r["optimum_s"]), "mean": format_seconds(r["mean_s"]),
            "ratio": _ratio(r["contention"]), "last": _ratio(r.get("last_fraction_of_peak")),
            "regression": bool(r.get("regression"))})
    return render_template("bench_report.html", tables=sorted(by_fs.items()))
