"""`events --html` and `report --html`: self-contained pages (no script, no network), rendered from
views/templates/ (events_report.html, week_report.html; their sections, _week.html, are the
dashboard's Report page's too). Job ids, users and cluster names are other people's text: they
reach HTML only through Jinja's autoescaping."""

from __future__ import annotations

from ioweather.views.templating import render


def render_events(doc: dict, base: str = "") -> str:
    """The events page of `services.answers.events.compute`'s document; `base` prefixes the dashboard links."""
    return render("events_report.html", doc=doc, base=base)


def render_report(report: dict, base: str = "") -> str:
    """The weekly report page of `services.answers.report.compute`'s document."""
    return render("week_report.html", r=report, base=base)
