"""The UMAMI page of one job (seed 003, its figures): the verdict first, then per metric its history as a
time series (left) and a box with whiskers at the 5th/95th percentiles (right), the job's value a dashed
line in its quartile colour. Plotly draws from the document embedded as JSON (Jinja, autoescaped)."""

from __future__ import annotations

from jinja2 import Environment

from ioweather.stats.umami import QUARTILE_WORDS
from ioweather.units import format_bytes

COLOURS = {"red": "#d62728", "orange": "#ff7f0e", "green": "#2ca02c", "blue": "#1f77b4", "grey": "#7f7f7f"}

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>UMAMI: job {{ doc.job }}</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1200px}
.verdict{font-size:1.25em;font-weight:600;margin:.4em 0 .8em}.row{display:flex;gap:8px;align-items:stretch}
.series{flex:3;height:170px}.box{flex:1;height:170px}h2{font-size:1em;margin:.8em 0 0}
.meta{color:#555}</style>
{% if plotly_js %}<script>{{ plotly_js|safe }}</script>{% endif %}
</head><body>
<p class="verdict" id="verdict">{{ doc.verdict }}</p>
<p class="meta">job {{ doc.job }} · motif {{ doc.motif }} · {{ doc.history_jobs }} earlier jobs of this motif
{% if performance %} · performance {{ performance }}{% endif %}</p>
{% for m in doc.metrics %}
<h2>{{ m.label }}: {{ m.value_text }}{% if m.quartile %} (quartile {{ m.quartile }}, {{ m.colour }}){% endif %}
{% if m.r is not none %} · r = {{ '%.2f'|format(m.r) }}, {{ m.strength }}{% endif %}</h2>
<div class="row"><div class="series" id="s{{ loop.index0 }}"></div><div class="box" id="b{{ loop.index0 }}"></div></div>
{% endfor %}
<script id="umami-data" type="application/json">{{ data|tojson }}</script>
<script>
const D = JSON.parse(document.getElementById('umami-data').textContent);
const L = {margin: {l: 50, r: 10, t: 5, b: 30}, showlegend: false};
D.metrics.forEach((m, i) => {
  if (typeof Plotly === 'undefined') return;
  const line = m.value === null ? [] : [{type: 'line', xref: 'paper', x0: 0, x1: 1, y0: m.value, y1: m.value,
                                         line: {dash: 'dash', width: 2, color: m.hex}}];
  Plotly.newPlot('s' + i, [{x: m.history.time, y: m.history.value, mode: 'lines+markers', marker: {size: 4}}],
                 {...L, shapes: line}, {displayModeBar: false, responsive: true});
  const b = m.box;
  const box = b.n ? [{type: 'box', name: '', q1: [b.q1], median: [b.median], q3: [b.q3], lowerfence: [b.p5],
                      upperfence: [b.p95], mean: [b.mean]}] : [];
  Plotly.newPlot('b' + i, box, {...L, shapes: line}, {displayModeBar: false, responsive: true});
});
</script></body></html>
"""


def number_text(v) -> str:
    """A number for people: thousands separators or 2-3 decimals, never an exponent; '-' for None."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 1 or a == 0:
        return f"{v:.2f}"
    return f"{v:.3f}" if a >= 0.001 else "< 0.001" if v > 0 else "> -0.001"


def p_text(p) -> str:
    """A p-value without an exponent (p of 10^-300 happen on a year of jobs)."""
    if p is None:
        return "-"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def figure_data(doc: dict) -> dict:
    """What a climate-vs-weather figure draws and its table shows, per metric, from the UMAMI document
    `doc` (services.umami.umami): the report below and the dashboard's job panel draw the same."""
    metrics = [{k: m.get(k) for k in ("metric", "label", "value", "quartile", "colour", "bigger_is_better", "r",
                                      "p", "n", "strength", "unusual", "box", "history")}
               | {"hex": COLOURS.get(m.get("colour") or "grey"), "value_text": "no data" if m.get("value") is None else number_text(m["value"]),
                  "r_text": "-" if m.get("r") is None else f"{m['r']:.2f}", "p_text": p_text(m.get("p")),
                  "quartile_text": QUARTILE_WORDS.get(m.get("quartile"), "unranked")}
               for m in doc["metrics"]]
    perf = (doc.get("weather") or {}).get("performance_bps")
    return {"job": doc["job"], "motif": doc["motif"], "fs": doc.get("fs"), "history_jobs": doc["history_jobs"],
            "verdict": doc["verdict"], "culprits": doc.get("culprits", []), "source": doc.get("source"),
            "performance_text": f"{format_bytes(perf)}/s" if perf else None, "metrics": metrics}


def render(doc: dict, plotly_js: str | None = None) -> str:
    """The page for the UMAMI document `doc` (services.umami.umami); `plotly_js` inlined when given."""
    fig = figure_data(doc)
    data = {"metrics": [{k: m[k] for k in ("metric", "value", "hex", "box", "history")} for m in fig["metrics"]]}
    env = Environment(autoescape=True)
    return env.from_string(_TEMPLATE).render(doc={**doc, "metrics": fig["metrics"]}, data=data, plotly_js=plotly_js,
                                             performance=fig["performance_text"])
