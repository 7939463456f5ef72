"""`bench summary --html`: seed 004's Table 2 per file system — columns motif x direction, rows
optimum, average and ratio (= contention) — plus the last run's fraction of peak and the regression
flag. Names reach HTML only through Jinja's autoescaping."""

from __future__ import annotations

from jinja2 import Environment

from ioweather.units import format_seconds

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ioweather benchmarks</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th.row{text-align:left}
.regression{background:#fdd}</style></head><body>
<h1>Regression benchmarks</h1>
<p>Optimum: the shortest run; average: the mean duration; ratio: average / optimum, the contention level
(seed 004, Table 2). Last / peak: the newest run's bandwidth over the best of its motif and direction.</p>
{% for fs, cols in tables %}
<h2>{{ fs }}</h2>
<table class="table2">
<tr><th></th>{% for c in cols %}<th>{{ c.motif }}<br>{{ c.direction }}</th>{% endfor %}</tr>
<tr><th class="row">optimum</th>{% for c in cols %}<td>{{ c.optimum }}</td>{% endfor %}</tr>
<tr><th class="row">average</th>{% for c in cols %}<td>{{ c.mean }}</td>{% endfor %}</tr>
<tr><th class="row">ratio</th>{% for c in cols %}<td>{{ c.ratio }}</td>{% endfor %}</tr>
<tr><th class="row">runs</th>{% for c in cols %}<td>{{ c.runs }}</td>{% endfor %}</tr>
<tr><th class="row">last / peak</th>{% for c in cols %}<td{% if c.regression %} class="regression"{% endif %}>{{ c.last }}{% if c.regression %} (regression){% endif %}</td>{% endfor %}</tr>
</table>
{% endfor %}
</body></html>
"""


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
    env = Environment(autoescape=True)
    return env.from_string(_TEMPLATE).render(tables=sorted(by_fs.items()))
