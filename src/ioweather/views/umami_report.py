"""The UMAMI page of one job (seed 003, its figures): the verdict first, then per metric its history as a
time series (left) and a box with whiskers at the 5th/95th percentiles (right), the job's value a dashed
line in its quartile colour. Plotly draws from the document embedded as JSON (views/templates/umami_report.html,
autoescaped)."""

from __future__ import annotations

from ioweather.stats.umami import QUARTILE_WORDS
from ioweather.units import format_bytes

COLOURS = {"red": "#d62728", "orange": "#ff7f0e", "green": "#2ca02c", "blue": "#1f77b4", "grey": "#7f7f7f"}



def number_text(v) -> str:
    """A number for people: thousands separators or 2-3 decimals, never an exponent; '-' for None.
    A whole number (a count of concurrent jobs, of nodes) is printed whole: "335", not "335.00"."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if float(v).is_integer():
        return f"{int(v):,}"
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
    `doc` (the JSON of services.answers.umami's answer, `Umami.to_json()`): the report below and the dashboard's job
    panel draw the same."""
    metrics = [{k: m.get(k) for k in ("metric", "label", "value", "quartile", "colour", "bigger_is_better", "r",
                                      "p", "n", "strength", "unusual", "box", "history")}
               | {"hex": COLOURS.get(m.get("colour") or "grey"), "value_text": "no data" if m.get("value") is None else number_text(m["value"]),
                  "r_text": "-" if m.get("r") is None else f"{m['r']:.2f}", "p_text": p_text(m.get("p")),
                  "quartile_text": QUARTILE_WORDS.get(m.get("quartile"), "unranked")}
               for m in doc["metrics"]]
    perf = (doc.get("weather") or {}).get("performance_bps")
    # Said beside the number: a Darshan job's performance here is TOKIO's rate, not the Jobs list's MiB/s
    # (which counts STDIO's bytes and time too), and the two differ on the same job.
    meaning = "the run's bandwidth" if doc.get("source") == "bench" else \
        "Darshan's agg_perf_by_slowest: POSIX bytes ÷ the slowest rank's POSIX time"
    return {"job": doc["job"], "motif": doc["motif"], "fs": doc.get("fs"), "history_jobs": doc["history_jobs"],
            "verdict": doc["verdict"], "culprits": doc.get("culprits", []), "source": doc.get("source"),
            "performance_text": f"{format_bytes(perf)}/s ({meaning})" if perf else None, "metrics": metrics}


def render(doc: dict, plotly_js: str | None = None) -> str:
    """The page for the UMAMI document `doc` (`Umami.to_json()`); `plotly_js` inlined when given."""
    # lazy: jinja2 via views.templating: `umami JOB --json` and the text table import this module too
    from ioweather.views.templating import render as render_template

    fig = figure_data(doc)
    data = {"metrics": [{k: m[k] for k in ("metric", "value", "hex", "box", "history")} for m in fig["metrics"]]}
    return render_template("umami_report.html", doc={**doc, "metrics": fig["metrics"]}, data=data, plotly_js=plotly_js,
                           performance=fig["performance_text"])
