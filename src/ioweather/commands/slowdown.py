"""`ioweather slowdown`: how much slower than usual each probed op is, per interval."""

from __future__ import annotations

import sys
from datetime import timedelta

import click

from ioweather.commands.common import DURATION, SINCE, TIME, json_option
from ioweather.errors import UserError
from ioweather.units import format_seconds, ns_to_iso


def compute_slowdown(store, target, interval_s: float, stat: str, baseline_s: float, since, until) -> list[dict]:
    """Slowdown rows for every target (or one) in [since, until), baseline = the `baseline_s` before `until`."""
    from ioweather.commands.probe import load_window
    from ioweather.stats.probe import baseline_medians, slowdown
    from ioweather.store.probe import OPS

    base_start = until - timedelta(seconds=baseline_s)
    first = min(base_start, since)
    rows = []
    for t, s in load_window(store, target, first, until):
        base = _select(s, int(base_start.timestamp() * 1e9))
        expected = baseline_medians(base["op"], base["duration_ns"], base["status"], len(OPS))
        win = _select(s, int(since.timestamp() * 1e9))
        for r in slowdown(win["op"], win["start_ns"], win["duration_ns"], win["status"], interval_s, expected, stat):
            rows.append({"target": t, "op": OPS[r.pop("op_code")], "interval_start": ns_to_iso(r.pop("interval_start_ns")), **r})
    return rows


def _select(samples: dict, from_ns: int) -> dict:
    """The samples from `from_ns` on; no copy when that is all of them (the usual case: a month is 15 M rows)."""
    keep = samples["start_ns"] >= from_ns
    return samples if keep.all() else {k: v[keep] for k, v in samples.items()}


CHECK_CODES = {"normal": 0, "degraded": 1, "severely degraded": 2, "stale": 3, "unknown": 3}
CHECK_NAMES = {0: "OK", 1: "WARNING", 2: "CRITICAL", 3: "UNKNOWN"}
#: Which code wins when targets differ: CRITICAL, then WARNING, then UNKNOWN, then OK (the Nagios habit).
CHECK_PRECEDENCE = (2, 1, 3, 0)


def check_result(states: list[dict], warn: float, crit: float) -> tuple[int, str]:
    """(exit code, one line with perfdata) from per-target states (`target`, `state`, `reason`, `worst`)."""
    if not states:
        return 3, "IOWEATHER UNKNOWN - no probe data in the store"
    codes = [CHECK_CODES[s["state"]] for s in states]
    code = next(c for c in CHECK_PRECEDENCE if c in codes)
    bad = [s for s in states if CHECK_CODES[s["state"]] == code] if code else states
    text = "; ".join(f"{s['target']} {s['state']} ({s['reason']})" for s in bad)
    perf = " ".join(f"'{s['target'].replace(chr(39), chr(39) * 2)}'={s['worst']:.3f};{warn:g};{crit:g}"
                    for s in states if s["worst"] is not None)
    return code, f"IOWEATHER {CHECK_NAMES[code]} - {text}" + (f" | {perf}" if perf else "")


def run_check(settings, target, window_s: float, stat: str, baseline_s: float, warn: float, crit: float,
              as_json: bool) -> int:
    """`slowdown --check`: the dashboard's state logic (views.probe_status), as a monitoring plugin."""
    from ioweather.store import open_store
    from ioweather.store import probe as probe_store
    from ioweather.views.output import print_json
    from ioweather.services.probe_cache import ProbeCache
    from ioweather.services.probe_status import target_status

    if not 0 < warn < crit:
        raise UserError(f"need 0 < --warn < --crit, got --warn {warn:g} --crit {crit:g}")
    store = open_store(settings)
    names = probe_store.targets(store)
    if target is not None and target not in names:
        raise UserError(f"no probe samples for target {target!r}; known targets: {', '.join(names) or 'none'}")
    cache = ProbeCache(store, baseline_s=baseline_s)
    states = []
    for t in [target] if target else names:
        st = target_status(cache, t, warn=warn, crit=crit, window_s=window_s, stat=stat, spark=False,
                           with_climate=False)
        values = [o["slowdown"] for o in st["ops"] if o["slowdown"] is not None]
        states.append({"target": t, "state": st["state"], "reason": st["reason"],
                       "worst": max(values) if values else None})
    code, line = check_result(states, warn, crit)
    if as_json:
        print_json({"status": CHECK_NAMES[code], "exit_code": code, "message": line, "targets": states})
    else:
        click.echo(line)
    return code


def register(cli: click.Group) -> None:
    from ioweather.stats.probe_spec import SLOWDOWN_STATS

    @cli.command()
    @click.option("--target", default=None, help="One target (default: all).")
    @click.option("--interval", type=DURATION, default="10m", show_default=True, help="Interval length.")
    @click.option("--stat", type=click.Choice(SLOWDOWN_STATS), default="median", show_default=True,
                  help="Statistic of each interval compared to the baseline median.")
    @click.option("--baseline", type=DURATION, default="30d", show_default=True,
                  help="Window before --until whose median is the expected duration.")
    @click.option("--since", type=SINCE, default="24h", show_default=True, help="First interval: a duration ago or a time.")
    @click.option("--until", type=TIME, default="now", show_default=True, help="End time.")
    @click.option("--check", is_flag=True,
                  help="Monitoring-plugin mode: one line and exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN "
                       "(Nagios/Icinga), from the last --interval of every target.")
    @click.option("--warn", type=float, default=2.0, show_default=True, help="--check: WARNING from this slowdown.")
    @click.option("--crit", type=float, default=10.0, show_default=True, help="--check: CRITICAL from this slowdown.")
    @json_option
    @click.pass_obj
    def slowdown(settings, target, interval, stat, baseline, since, until, check, warn, crit, as_json):
        """Slowdown = stat(interval) / median(baseline) per target, op and interval (seed 001).

        Below 1 is faster than usual; from 2 the target is degraded, from 10 severely degraded.
        With --check: the state of the last --interval (10m) as a Nagios/Icinga plugin, e.g. in cron:
        `ioweather slowdown --check --warn 2 --crit 10 || mail ...`.
        """
        from ioweather.stats.probe import state
        from ioweather.store import open_store
        from ioweather.views.output import print_json, print_table, short_time

        if interval <= 0 or baseline <= 0:
            raise UserError("--interval and --baseline must be positive")
        if check:
            sys.exit(run_check(settings, target, interval, stat, baseline, warn, crit, as_json))
        if since >= until:
            raise UserError("--since must be before --until")
        rows = compute_slowdown(open_store(settings), target, interval, stat, baseline, since, until)
        if as_json:
            print_json(rows)
            return
        for r in rows:
            r["state"] = state(r["slowdown"])

        def style(r):
            return {"severely degraded": "bold red", "degraded": "yellow"}.get(r["state"])

        print_table(rows, [("target", "target"), ("op", "op"), ("interval_start", "interval (UTC)", short_time), ("count", "n"),
                           ("value_s", stat, format_seconds), ("expected_s", "expected", format_seconds),
                           ("slowdown", "slowdown", lambda v: f"{v:.2f}×"), ("state", "state")],
                    row_style=style, empty="no probe samples in this window")
        worst = sorted((r for r in rows if r["slowdown"] is not None), key=lambda r: -r["slowdown"])[:3]
        if worst:
            click.echo("worst: " + "; ".join(f"{r['op']} {r['interval_start']} {r['slowdown']:.2f}×" for r in worst), err=True)
