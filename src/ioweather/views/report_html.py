"""`events --html` and `report --html`: self-contained pages (no script, no network). Job ids, users and
cluster names are other people's text: they reach HTML only through Jinja's autoescaping."""

from __future__ import annotations

from jinja2 import Environment

from ioweather.units import format_bytes, format_seconds

_STYLE = """<style>body{font-family:system-ui,sans-serif;margin:1.5em;max-width:80em}table{border-collapse:collapse;
margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f4f4f4}
td.t{text-align:left}.note{color:#555}.missing{background:#fff3cd;padding:.5em}:target{background:#ffe}</style>"""

_EVENTS = """{% macro events_table(doc, base) %}
<table class="events" id="events">
<thead><tr><th>start (UTC)</th><th>end</th><th>peak</th><th>moved</th><th>jobs running</th>
<th>jobs (share of the bytes, method, confidence)</th><th>core-h exposed</th></tr></thead>
<tbody>{% for e in doc.events %}<tr id="event-{{ e.start }}"><td>{{ e.start }}</td><td>{{ e.end }}</td>
<td>{{ e.peak_bps | rate }}</td><td>{{ e.bytes | bytes }}</td><td>{{ e.running_jobs }}</td><td class="t">
{% for j in e.jobs %}{% if j.job_url %}<a href="{{ base }}{{ j.job_url }}">{{ j.job }}</a>{% else %}{{ j.job }}{% endif %}
{% if j.cluster %}@{{ j.cluster }}{% endif %}{% if j.user %} ({{ j.user }}){% endif %}:
{{ j.share | pct }}, {{ j.method }}, {{ j.confidence }}{% if not loop.last %}<br>{% endif %}{% else %}no job{% endfor %}
{% if e.more_jobs %}<br>{{ e.more_jobs }} more{% endif %}</td><td>{{ e.core_hours_exposed | ch }}</td></tr>
{% else %}<tr><td colspan="7">no events above {{ doc.min_amplitude_bps | rate }}</td></tr>{% endfor %}</tbody></table>
{% for n in doc.notes %}<p class="note">note: {{ n }}</p>{% endfor %}
{% endmacro %}
{% macro cost_tables(cost, base) %}
<p>Core-hours exposed to I/O weather: <b>{{ cost.core_hours_exposed | ch }}</b> (an upper bound: a job exposed is not
necessarily a job slowed; docs/events.md).</p>
<table id="cost-daily"><thead><tr><th>day</th><th>events</th><th>core-h exposed</th></tr></thead><tbody>
{% for d in cost.daily %}<tr><td>{{ d.day }}</td><td>{{ d.events }}</td><td>{{ d.core_hours_exposed | ch }}</td></tr>{% endfor %}
</tbody></table>
<table id="culprits"><thead><tr><th>culprit job</th><th>cluster</th><th>user</th><th>events</th><th>bytes</th><th>core-h caused</th></tr></thead><tbody>
{% for c in cost.top_culprits %}<tr><td class="t">{% if c.job_url %}<a href="{{ base }}{{ c.job_url }}">{{ c.job }}</a>{% else %}{{ c.job }}{% endif %}</td>
<td class="t">{{ c.cluster or "-" }}</td><td class="t">{{ c.user or "-" }}</td><td>{{ c.events }}</td><td>{{ c.bytes | bytes }}</td>
<td>{{ c.core_hours_caused | ch }}</td></tr>{% else %}<tr><td colspan="6">no culprit jobs</td></tr>{% endfor %}</tbody></table>
{% endmacro %}"""

_EVENTS_PAGE = _EVENTS + """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>I/O events of {{ doc.fs }}</title>
""" + _STYLE + """</head><body><h1>I/O events of {{ doc.fs }}</h1><p>{{ doc.start }} – {{ doc.end }}</p>
{{ events_table(doc, base) }}<h2>What contention cost</h2>{{ cost_tables(doc.cost, base) }}</body></html>"""

_REPORT_PAGE = _EVENTS + """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Week of {{ r.fs }}</title>
""" + _STYLE + """</head><body><h1>The week of {{ r.fs }}</h1><p>{{ r.start }} – {{ r.end }}</p>
<ul id="contents"><li><a href="#slowdown">slowdown climate</a></li><li><a href="#changes">change points</a></li>
<li><a href="#events-section">events, culprits and cost</a></li><li><a href="#bench">benchmarks</a></li>
<li><a href="#fullness">fullness</a></li></ul>
<section id="slowdown"><h2>Slowdown climate <a class="detail" href="{{ base }}{{ r.links.slowdown }}">detail</a></h2>
{% if r.slowdown %}<table><thead><tr><th>op</th><th>median slowdown</th><th>95th percentile</th><th>worst hour</th><th>hours</th></tr></thead>
<tbody>{% for o in r.slowdown.ops %}<tr><td class="t">{{ o.op }}</td><td>{{ o.median | x }}</td><td>{{ o.p95 | x }}</td>
<td>{{ o.worst | x }}</td><td>{{ o.intervals }}</td></tr>{% endfor %}</tbody></table>
<h3>Worst episodes</h3><table><thead><tr><th>hour (UTC)</th><th>target</th><th>op</th><th>slowdown</th></tr></thead><tbody>
{% for w in r.slowdown.worst %}<tr><td>{{ w.start }}</td><td class="t">{{ w.target }}</td><td class="t">{{ w.op }}</td><td>{{ w.slowdown | x }}</td></tr>{% endfor %}
</tbody></table>{% else %}<p class="missing">no probe data this week</p>{% endif %}</section>
<section id="changes"><h2>Change points <a class="detail" href="{{ base }}{{ r.links.changes }}">detail</a></h2>
{% if r.changes.available %}<table><thead><tr><th>series</th><th>at (UTC)</th><th>before</th><th>after</th><th>factor</th></tr></thead><tbody>
{% for c in r.changes.points %}<tr><td class="t">{{ c.series }}</td><td>{{ c.time }}</td><td>{{ c.before | num }}</td><td>{{ c.after | num }}</td><td>{{ c.factor | x }}</td></tr>
{% else %}<tr><td colspan="5">no change points this week</td></tr>{% endfor %}</tbody></table>
{% else %}<p class="missing" id="changes-missing">{{ r.changes.reason }}</p>{% endif %}</section>
<section id="events-section"><h2>Events, their culprits and cost <a class="detail" href="{{ base }}{{ r.links.events }}">detail</a></h2>
{{ events_table(r.events, base) }}{{ cost_tables(r.events.cost, base) }}</section>
<section id="bench"><h2>Benchmark standing <a class="detail" href="{{ base }}{{ r.links.bench }}">detail</a></h2>
{% if r.bench %}<table><thead><tr><th>motif</th><th>direction</th><th>runs</th><th>optimum</th><th>average</th><th>last / peak</th><th>regression</th></tr></thead><tbody>
{% for b in r.bench %}<tr><td class="t">{{ b.motif }}</td><td class="t">{{ b.direction }}</td><td>{{ b.runs }}</td><td>{{ b.optimum_s | secs }}</td>
<td>{{ b.mean_s | secs }}</td><td>{{ b.last_fraction_of_peak | pct }}</td><td>{{ "yes" if b.regression else "no" }}</td></tr>{% endfor %}</tbody></table>
{% else %}<p class="missing">no benchmark runs for {{ r.fs }}</p>{% endif %}</section>
<section id="fullness"><h2>Fullness <a class="detail" href="{{ base }}{{ r.links.fullness }}">detail</a></h2>
{% if r.fullness %}<p>{{ r.fullness.fullness | pct }} full{% if r.fullness.days_until_full is not none %}, full in
{{ r.fullness.days_until_full | round(1) }} days at the recent growth{% endif %}.</p>
<table><thead><tr><th>fullest targets</th><th>fullness</th><th>days until full</th></tr></thead><tbody>
{% for t in r.fullness.fullest %}<tr><td class="t">{{ t.target }}</td><td>{{ t.fullness | pct }}</td>
<td>{{ "-" if t.days_until_full is none else t.days_until_full | round(1) }}</td></tr>{% endfor %}</tbody></table>
{% else %}<p class="missing">no capacity data for {{ r.fs }}</p>{% endif %}</section>
</body></html>"""


def _env() -> Environment:
    env = Environment(autoescape=True)
    env.filters.update(
        bytes=lambda v: "-" if v is None else format_bytes(v),
        rate=lambda v: "-" if v is None else f"{format_bytes(v)}/s",
        pct=lambda v: "-" if v is None else f"{100 * v:.1f} %",
        ch=lambda v: "-" if v is None else f"{v:,.1f}",
        x=lambda v: "-" if v is None else f"{v:.2f}",
        num=lambda v: "-" if v is None else (f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4f}"),
        secs=lambda v: "-" if v is None else format_seconds(v))
    return env


def render_events(doc: dict, base: str = "") -> str:
    """The events page of `services.events.compute`'s document; `base` prefixes the dashboard links."""
    return _env().from_string(_EVENTS_PAGE).render(doc=doc, base=base)


def render_report(report: dict, base: str = "") -> str:
    """The weekly report page of `services.report.compute`'s document."""
    return _env().from_string(_REPORT_PAGE).render(r=report, base=base)
