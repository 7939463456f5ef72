"""The lab's scores as the Markdown of docs/validation.md (`ioweather lab score LOGS --markdown`)."""

from __future__ import annotations

from ioweather.units import format_seconds


def _n(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def scores_markdown(doc: dict) -> str:
    """`doc`: a Scores answer's to_json(). The per-label table (both tools side by side), the micro
    averages and the controls, then each case: what it planted and what each tool named."""
    tools = [t for t in doc["tools"] if t["available"]]
    head = "| label | " + " | ".join(" | ".join(f"{t['tool']} {k}" for k in ("P", "R", "F1", "tp/fp/fn")) for t in tools) + " |"
    lines = [head, "|---|" + "---|---|---|---|" * len(tools)]
    for i, row in enumerate(tools[0]["labels"] if tools else []):
        cells = []
        for t in tools:
            r = t["labels"][i]
            cells.append(f"{_n(r['precision'])} | {_n(r['recall'])} | {_n(r['f1'])} | {r['tp']}/{r['fp']}/{r['fn']}")
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| tool | micro-F1 | micro precision | micro recall | micro-F1, planted labels only | controls quiet |")
    lines.append("|---|---|---|---|---|---|")
    for t in doc["tools"]:
        if not t["available"]:
            lines.append(f"| {t['tool']} | not scored: {t['reason']} | | | | |")
            continue
        lines.append(f"| {t['tool']} {t['version']} | {_n(t['micro_f1'])} | {_n(t['micro_precision'])} | "
                     f"{_n(t['micro_recall'])} | {_n(t['micro_f1_labels'])} | {t['controls_quiet']} of {t['controls']} |")
    if tools and tools[0].get("costless_planted"):
        lines.append("")
        lines.append(f"On this node-local file system ({doc.get('fs_type')}), {tools[0]['costless_planted']} planted "
                     "labels cost less than the advisor's bar and are scored as patterns, neither found nor missed "
                     "(marked *costless here* below); named anyway by "
                     + ", ".join(f"{t['tool']} {t.get('costless_named', 0)}" for t in tools) + ".")
    lines.append("")
    lines.append("| case | planted | " + " | ".join(f"{t['tool']} named (unplanted alarms)" for t in tools) + " |")
    lines.append("|---|---|" + "---|" * len(tools))
    for i, case in enumerate(tools[0]["cases"] if tools else []):
        cells = []
        for t in tools:
            c = t["cases"][i]
            named = ", ".join(c["named"]) or "–"
            cells.append(named + (f" ({', '.join(c['unplanted'])})" if c["unplanted"] else "")
                         + (f" **error**: {c['error']}" if c["error"] else ""))
        planted = ", ".join(p + (" (*costless here*)" if p in case.get("costless", ()) else "") for p in case["planted"])
        lines.append(f"| {case['case']} | {planted or '(control)'} | " + " | ".join(cells) + " |")
    if doc.get("pairs"):
        lines += ["", *pairs_markdown(doc["pairs"])]
    return "\n".join(lines) + "\n"


def _s(v: float | None) -> str:
    return "–" if v is None else format_seconds(v)


def _fixed(verdict: str | None) -> str:
    if not verdict:
        return "–"
    return "nothing worth changing" if "nothing worth changing" in verdict else verdict.replace("|", "/")


def pairs_markdown(doc: dict) -> list[str]:
    """`doc`: a PairsScore as JSON. One row per bad -> fixed pair: job diff's change, explained share and verdict;
    with a lab store, whether job diff had the disk's counters for the pair (its crowd cause could count)."""
    store = bool(doc.get("store"))
    lines = ["| bad -> fixed | the same | the fix | I/O time before -> after | change | explained | job diff's verdict "
             "| `job` on the fixed run |" + (" telemetry | explained from the logs alone | system share bad / fixed "
                                             "(why) |" if store else ""),
             "|---|---|---|---|---|---|---|---|" + ("---|---|---|" if store else "")]
    for p in doc["pairs"]:
        share = "–" if p["explained_share"] is None else f"{100 * p['explained_share']:.0f} %"
        verdict = (p["verdict"] or "").replace("|", "/") if not p["error"] else f"**error**: {p['error']}"
        lines.append(f"| {p['bad']} -> {p['fixed']} | {p['same']} | {p['fix']} | {_s(p['before_s'])} -> "
                     f"{_s(p['after_s'])} | {'+' if (p['change_s'] or 0) > 0 else ''}{_s(p['change_s'])} | {share} | {verdict} | {_fixed(p.get('fixed_verdict'))} |"
                     + (f" {'yes' if p.get('telemetry') else 'no'} | {_pct(p.get('logs_share'))} | {_systems(p)} |"
                        if store else ""))
    lines += ["", f"job diff explains ≥ {100 * doc['min_share']:.0f} % of the change on {doc['explained']} of "
                  f"{doc['scored']} pairs" + (f"; on {doc['no_saving']} more the fix saved no material time and `job` "
                                               "claimed no material saving for the fix" if doc.get("no_saving") else "")
              + (f"; not in the logs: {', '.join(doc['absent'])}" if doc["absent"] else "")
              + (f"; {doc['with_telemetry']} of them diffed as stored jobs with the disk's counters (lab store)"
                 if store else "") + "."]
    if doc.get("baseline_from"):
        lines.append(f"System share: why's system seconds of each run ÷ its I/O time, the probes' baseline the quiet "
                     f"window {doc['baseline_from']} – {doc['baseline_until']} before the first case.")
    return lines


def _pct(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.0f} %"


def _systems(p: dict) -> str:
    """Each run's system seconds and share of its I/O time, with why's model ("cf", "probe")."""
    models = p.get("system_models") or ["?", "?"]
    if p.get("before_system_s") is None and p.get("after_system_s") is None and "below_resolution" not in models:
        return "–" if not p.get("system_note") else f"– ({p['system_note'].replace('|', '/')})"
    short = {"coverage_factor": "cf", "probe_slowdown": "probe"}
    parts = []
    for s, io, model in zip((p.get("before_system_s"), p.get("after_system_s")), (p["before_s"], p["after_s"]), models):
        if s is None:
            # why's readings could not tell the share from 0: said, not priced
            parts.append("not told from 0 by the readings" if model == "below_resolution" else "–")
        else:
            parts.append(f"{_s(s)} ({100 * s / io if io else 0:.0f} %, {short.get(model, model)})")
    return " / ".join(parts) + (f" ({p['system_note'].replace('|', '/')})" if p.get("system_note") else "")
