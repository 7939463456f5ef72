"""Slowdown per target, op and interval, and the monitoring-plugin check (seed 001; METHODS.md section 1).

The same numbers serve `ioweather slowdown`, `slowdown --check` and the dashboard's status.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ioweather.encoding import answer_dict
from ioweather.errors import UserError
from ioweather.services.probe.light_check import (  # noqa: F401 (CHECK_CODES, unknown: re-exported)
    CHECK_CODES, CheckTarget, Fallback, check_result, run_check as light_run_check, unknown)
from ioweather.stats.check_codes import CHECK_NAMES
from ioweather.units import ns_to_iso, to_ns

if TYPE_CHECKING:  # numpy is not imported by `slowdown --check`'s light path
    import numpy as np


def known_targets(store, target: str | None) -> list[str]:
    """[target] when the store has it, every target when `target` is None; one line naming the known ones otherwise."""
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store import probe as probe_store

    names = probe_store.targets(store)
    if target is None:
        return names
    if target not in names:
        raise UserError(f"no probe samples for target {target!r}; known targets: {', '.join(names) or 'none'}")
    return [target]


def load_window(store, target: str | None, since, until) -> list[tuple[str, dict[str, np.ndarray]]]:
    """[(target, its samples: column name -> values, `store.probe.read_samples`'s)] for one target or all of
    them, in the window [since, until)."""
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store import probe as probe_store

    return [(t, probe_store.read_samples(store, t, since_ns=to_ns(since) if since else None,
                                        until_ns=to_ns(until) if until else None))
            for t in known_targets(store, target)]


def whole_intervals(since, interval_s: float):
    """THE first bound of a window cut into intervals: `since` floored to the interval's boundary (UTC epoch
    multiples), so that `slowdown --since 15m` and `probe stats` count the same samples in "11:00" (they
    said n=163 and n=530: one began at 11:12, the other at 11:00)."""
    step = int(round(interval_s * 1e9))
    if since is None or step <= 0:
        return since
    ns = to_ns(since)
    return datetime.fromtimestamp((ns - ns % step) / 1e9, timezone.utc)


@dataclass(frozen=True)
class IntervalRow:
    """One target's op over one interval starting at `interval_start` (ISO 8601 UTC): its successful
    `count`, `errors` and `timeouts`, and the statistics of the successful durations (seconds; None
    without one)."""

    target: str
    op: str
    interval_start: str
    count: int
    errors: int
    timeouts: int
    mean_s: float | None
    min_s: float | None
    q1_s: float | None
    median_s: float | None
    q3_s: float | None
    p90_s: float | None
    p95_s: float | None
    p99_s: float | None
    max_s: float | None


@dataclass(frozen=True)
class IntervalStats:
    """`probe stats`' answer: one `IntervalRow` per target, op and interval of the window."""

    rows: list[IntervalRow]

    def to_json(self) -> list[dict]:
        """The rows: `probe stats --json` has always been a list."""
        return [answer_dict(r) for r in self.rows]


def interval_rows(store, target: str | None, interval_s: float, since, until) -> IntervalStats:
    """`probe stats`: per target, op and interval the count, errors, quantiles and mean of the window
    (its first interval whole: whole_intervals)."""
    since = whole_intervals(since, interval_s)
    # lazy: numpy via stats.probe: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.probe import interval_stats
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store.probe import OPS

    return IntervalStats([IntervalRow(target=t, op=OPS[r.pop("op_code")],
                                      interval_start=ns_to_iso(r.pop("interval_start_ns")), **r)
                          for t, s in load_window(store, target, since, until)
                          for r in interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s)])


@dataclass(frozen=True)
class SlowdownRow:
    """One target's op over one interval starting at `interval_start` (ISO 8601 UTC): the interval's
    `count`, `errors`, `timeouts`, its `stat` (`value_s`, seconds), the baseline's `expected_s` (seconds),
    `slowdown` (their ratio; None while the op's baseline is learning), `expected` (what `stat` is divided
    by: "median" or "same") and `state`."""

    target: str
    op: str
    interval_start: str
    count: int
    errors: int
    timeouts: int
    stat: str
    value_s: float | None
    expected_s: float | None
    slowdown: float | None
    expected: str
    state: str


@dataclass(frozen=True)
class Slowdown:
    """How much slower than usual each probed op was, per target and interval: `ioweather slowdown`'s
    answer, one `SlowdownRow` per target, op and interval."""

    rows: list[SlowdownRow]

    def to_json(self) -> list[dict]:
        """The rows: `slowdown --json` has always been a list."""
        return [answer_dict(r) for r in self.rows]


def slowdown(store, target: str | None, interval_s: float, stat: str, baseline_s: float, since, until,
             expected: str = "median", reference: tuple[int, int] | None = None) -> Slowdown:
    """`compute_slowdown`'s rows of every target (or one) in [since, until), its first interval whole
    (whole_intervals, as `probe stats`)."""
    since = whole_intervals(since, interval_s)
    return Slowdown(compute_slowdown(store, target, interval_s, stat, baseline_s, since, until, expected, reference))


def compute_slowdown(store, target, interval_s: float, stat: str, baseline_s: float, since, until,
                     expected: str = "median", reference: tuple[int, int] | None = None,
                     readers=None) -> list[SlowdownRow]:
    """Slowdown rows for every target (or one) in [since, until), baseline = the `baseline_s` before `until`
    or the `reference` period; `expected` "median" (the paper's) or "same" (the same statistic). `readers`:
    target -> the pieces' raw `read` (services.probe.pieces; the Report's keeps closed hours)."""
    # lazy: numpy, sqlalchemy via services.probe.pieces: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.services.probe import pieces as probe_pieces

    base_ns = reference or (to_ns(until - timedelta(seconds=baseline_s)), to_ns(until))
    if not probe_pieces.enabled(store):
        return compute_slowdown_full(store, target, interval_s, stat, since, until, expected, base_ns,
                                     reference=reference is not None)
    return _from_pieces(store, target, interval_s, stat, since, until, expected, base_ns, reference is not None,
                        readers)


def _from_pieces(store, target, interval_s: float, stat: str, since, until, expected: str,
                 base_ns: tuple[int, int], reference: bool, readers=None) -> list[SlowdownRow]:
    """`compute_slowdown_full`'s rows from per-day pieces (services/probe/pieces.py): the baseline's order
    statistics exactly, the intervals from stored rollups when `interval_s` is one the pieces keep."""
    # lazy: numpy: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    import numpy as np

    # lazy: numpy, sqlalchemy via services.probe.pieces: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.services.probe import pieces as probe_pieces
    # lazy: numpy via stats.probe: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.probe import interval_stats, slowdown_rows
    # lazy: numpy via stats.rollups: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.rollups import rollup_rows
    # lazy: numpy via stats.slowdown_pieces: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.slowdown_pieces import numpy_median_s
    # lazy: numpy via stats.status: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.status import baseline_stats_from
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store import probe as probe_store
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store.probe import OPS

    now = time.time_ns()
    step = int(round(interval_s * 1e9))
    lo, hi = to_ns(since), to_ns(until)
    rows = []
    for t in known_targets(store, target):
        read = readers(t) if readers is not None else None
        ob = probe_pieces.baseline(store, t, *base_ns, now, read=read)
        if expected == "same":
            expected_s = np.array([baseline_stats_from(o.n, o.sum_ns, o.order_ns)[stat] for o in ob])
        else:  # baseline_medians' np.median, bit for bit
            expected_s = np.array([numpy_median_s(o.n, o.order_ns) for o in ob])
        if step % 10**9 == 0 and step // 10**9 in probe_pieces.ROLLUP_INTERVALS_S:
            roll = probe_pieces.rollups(store, t, step // 10**9, lo, hi, now, read=read)
            order = np.lexsort((roll["start_ns"], roll["op"]))
            stats_rows = rollup_rows({c: v[order] for c, v in roll.items()})
        else:
            s = probe_store.read_samples(store, t, since_ns=lo, until_ns=hi)
            stats_rows = interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s)
        learning = learning_per_op([o.n for o in ob], [o.first_ok_ns for o in ob], base_ns, reference,
                                   probe_pieces.period_s(store, t))
        rows.extend(_rows(t, slowdown_rows(stats_rows, expected_s, stat), expected, learning))
    return rows


def compute_slowdown_full(store, target, interval_s: float, stat: str, since, until, expected: str,
                          base_ns: tuple[int, int], *, reference: bool = False) -> list[SlowdownRow]:
    """The slowdown rows from every sample of the baseline and the window (the reference computation;
    the only one on MariaDB, which keeps no pieces); `reference`: `base_ns` is a site's reference period."""
    # lazy: numpy: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    import numpy as np

    # lazy: numpy via services.probe.pieces: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.services.probe import pieces as probe_pieces

    # lazy: numpy via stats.probe: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.probe import STATUS_OK, baseline_medians, slowdown
    # lazy: numpy via stats.status: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.status import baseline_stats
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store.probe import OPS

    first, last = min(base_ns[0], to_ns(since)), max(base_ns[1], to_ns(until))
    rows = []
    for t, s in _load_ns(store, target, first, last):
        base = _select(s, base_ns[0], base_ns[1])
        if expected == "same":
            expected_s = np.full(len(OPS), np.nan)
            for code in range(len(OPS)):
                d = base["duration_ns"][(base["op"] == code) & (base["status"] == STATUS_OK)].copy()
                expected_s[code] = baseline_stats(d)[stat]
        else:
            expected_s = baseline_medians(base["op"], base["duration_ns"], base["status"], len(OPS))
        ok = base["status"] == STATUS_OK
        n = [int(((base["op"] == code) & ok).sum()) for code in range(len(OPS))]
        first = [int(base["start_ns"][(base["op"] == code) & ok].min()) if n[code] else -1 for code in range(len(OPS))]
        learning = learning_per_op(n, first, base_ns, reference, probe_pieces.period_s(store, t))
        win = _select(s, to_ns(since), to_ns(until))
        rows.extend(_rows(t, slowdown(win["op"], win["start_ns"], win["duration_ns"], win["status"], interval_s,
                                      expected_s, stat), expected, learning))
    return rows


def learning_per_op(n, first_ok_ns, base_ns: tuple[int, int], reference: bool, period_s: float = 1.0) -> list[bool]:
    """Per op code: whether its rolling baseline is still learning (the Status page's rule, with "now" the end of
    the baseline); a reference period is taken as it is."""
    # lazy: numpy: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    import numpy as np

    # lazy: numpy via stats.status: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.status import learning_ops, min_history_s, min_samples

    if reference:
        return [False] * len(n)
    first = np.asarray(first_ok_ns, np.int64)
    history_s = np.where(first >= 0, (base_ns[1] - first) / 1e9, 0.0)
    span_s = (base_ns[1] - base_ns[0]) / 1e9
    return learning_ops(np.asarray(n), history_s, min_history_s(span_s), min_samples(span_s, period_s)).tolist()


def _rows(target: str, stat_rows: list[dict], expected: str, learning: list[bool]) -> list[SlowdownRow]:
    """The user's rows: while an op's baseline learns, its slowdown is withheld and its state is "learning"
    (an interval compared with a baseline made mostly of itself is about 1x by construction)."""
    # lazy: numpy via stats.probe: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.stats.probe import state
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store.probe import OPS

    out = []
    for r in stat_rows:
        code = r.pop("op_code")
        if learning[code]:
            r["slowdown"] = None
        out.append(SlowdownRow(target=target, op=OPS[code], interval_start=ns_to_iso(r.pop("interval_start_ns")), **r,
                               expected=expected, state="learning" if learning[code] else state(r["slowdown"])))
    return out


def _load_ns(store, target, since_ns: int, until_ns: int) -> list[tuple[str, dict]]:
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store import probe as probe_store

    return [(t, probe_store.read_samples(store, t, since_ns=since_ns, until_ns=until_ns))
            for t in known_targets(store, target)]


def _select(samples: dict, from_ns: int, until_ns: int) -> dict:
    """The samples in [from, until); no copy when that is all of them (the usual case: a month is 15 M rows)."""
    keep = (samples["start_ns"] >= from_ns) & (samples["start_ns"] < until_ns)
    return samples if keep.all() else {k: v[keep] for k, v in samples.items()}


@dataclass(frozen=True)
class Check:
    """Is any probe target degraded now, as a monitoring plugin says it: `slowdown --check`'s answer.
    `status` OK, WARNING, CRITICAL or UNKNOWN and its `exit_code` (0-3, Nagios/Icinga), `message` the
    plugin's one line with perfdata, `targets` one `CheckTarget` per checked target."""

    status: str
    exit_code: int
    message: str
    targets: list[CheckTarget]

    def to_json(self) -> dict:
        d = answer_dict(self)
        d["targets"] = [answer_dict(t) for t in self.targets]
        return d


def check(settings, target, window_s: float, stat: str, baseline_s: float, warn: float, crit: float,
          expected: str = "median", reference: tuple[int, int] | None = None) -> Check:
    """The state of the last `window_s` of `target` or every active target (`run_check`)."""
    code, line, states = run_check(settings, target, window_s, stat, baseline_s, warn, crit, expected, reference)
    return Check(CHECK_NAMES[code], code, line, states)


def cannot_check(reason: str) -> Check:
    """UNKNOWN (exit 3) with `reason`: what the plugin answers when its options prevent checking."""
    code, line = unknown(reason)
    return Check(CHECK_NAMES[code], code, line, [])


def run_check(settings, target, window_s: float, stat: str, baseline_s: float, warn: float, crit: float,
              expected: str = "median", reference: tuple[int, int] | None = None) -> tuple[int, str, list[CheckTarget]]:
    """`slowdown --check`: (exit code, line, per-target states) from a read-only handle on the store.

    Whatever prevents checking (no store, an unknown target, a damaged or busy store, bad thresholds) is
    UNKNOWN with its reason, never exit 2: Nagios and Icinga read 2 as CRITICAL."""
    if not settings.store_exists():
        return (*unknown(f"no store at {settings.sqlite_path}"), [])
    try:  # cron's every minute: the same answer without numpy and SQLAlchemy where the pieces give it exactly
        return light_run_check(settings, target, window_s, stat, baseline_s, warn, crit, expected, reference)
    except Fallback:
        pass
    # lazy: numpy, sqlalchemy via store: after the no-store answer, which cron asks every minute on hosts without one
    from ioweather.store import open_store, probe as probe_store

    store = None
    try:
        store = open_store(settings, read_only=True)
        names = probe_store.active_targets(store)
        if target is not None and target not in names:
            retired = target in probe_store.targets(store)
            why = "is retired" if retired else "has no probe samples"
            return (*unknown(f"target {target!r} {why}; known targets: {', '.join(names) or 'none'}"), [])
        if not names:
            retired = probe_store.retired_targets(store)
            if retired:
                return (*unknown(f"no probe target to check (retired: {', '.join(retired)})"), [])
        states = check_states(store, target, window_s, stat, baseline_s, warn, crit, expected, reference)
    except UserError as e:
        return (*unknown(str(e)), [])
    finally:
        if store is not None:
            store.dispose()
    return (*check_result(states, warn, crit), states)


def check_states(store, target, window_s: float, stat: str, baseline_s: float, warn: float,
                 crit: float, expected: str = "median", reference: tuple[int, int] | None = None,
                 now_ns: int | None = None) -> list[CheckTarget]:
    """Per-target state of the last `window_s`: the dashboard's logic, for `target` or every active target
    (judged at `now_ns`, default the clock's now)."""
    # lazy: numpy, sqlalchemy via services.probe.cache: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.services.probe.cache import ProbeCache
    # lazy: numpy, sqlalchemy via services.probe.status: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.services.probe.status import target_status
    # lazy: numpy, sqlalchemy via store: commands.slowdown and commands.probe import this at their top: kept off their `--help`
    from ioweather.store import probe as probe_store

    if not 0 < warn < crit:
        raise UserError(f"need 0 < --warn < --crit, got --warn {warn:g} --crit {crit:g}")
    names = [target] if target is not None else probe_store.active_targets(store)
    cache = ProbeCache(store, baseline_s=baseline_s, reference=reference, warm_rollups=False,
                       **({} if now_ns is None else {"clock": lambda: now_ns}))
    states = []
    for t in names:
        st = target_status(cache, t, warn=warn, crit=crit, window_s=window_s, stat=stat, expected=expected,
                           spark=False, with_climate=False, now_ns=now_ns)
        # A target asked for by name is always judged.
        states.append(CheckTarget(t, st.state, st.reason, st.worst(), target is None and st.abandoned))
    return states
