"""`slowdown --check` in plain Python over `sqlite3` (issue 40): the Status card's state of each target, without
loading numpy or SQLAlchemy.

cron runs the check every minute; its answer took ~55 ms and its imports ~0.4 s. The numbers here are the
dashboard's, bit for bit (tests/test_light_check.py compares both paths on the same stores): the rolling
baseline's median is the exact order statistic found from the stored pieces (services/probe/pieces.py) by
their histograms and one slice of each (stats/slowdown_pieces.py's two-level selection, done here on Python
ints), the window's statistic numpy's linear quantile written out. The hour a rolling window starts in is cut
at the window's start from its hour piece's start times (store/probe_tables.py v6), where the full path reads
the archived day's Parquet file.

What this path does not do, it does not guess: a server database, a piece not built yet, a raw range only in
the archive, `--stat mean` or `--expected same` raise `Fallback`, and the caller takes the usual path
(services/probe/slowdown.py: numpy and SQLAlchemy, which builds what is missing in memory).
"""

from __future__ import annotations

import bisect
import itertools
import math
import sqlite3
import sys
import time
from array import array
from dataclasses import dataclass

from ioweather.stats.check_codes import CHECK_NAMES, CHECK_PRECEDENCE
from ioweather.stats.probe_spec import STAT_QUANTILES
from ioweather.stats.status_rules import PROBE_PERIOD_S, learning_reason, min_history_s, min_samples, \
    quantile_ranks, target_state, median_between
from ioweather.store import probe_light as db
from ioweather.store.probe_light import DAY_NS, HOUR_NS, OPS

#: A span is summarized once it ended this long ago: samples arrive in batches (5 s) and a timeout
#: is recorded at its deadline (60 s); a later one still deletes the piece, this only avoids churn.
PIECE_LAG_NS = 300 * 10**9
SPANS_NS = (DAY_NS, HOUR_NS)
#: A target is stale when its newest sample is older than this many probe periods (and at least a minute):
#: the probe stores samples every 5 s, so a healthy one is never more than a few seconds behind.
STALE_PERIODS, STALE_MIN_S = 10, 60.0
#: A target silent for longer than this (a trial probe, a file system taken out of service) no longer decides
#: `slowdown --check`'s answer: it was UNKNOWN "stale" for a day, now it is only named beside the verdict until
#: someone retires it (`ioweather probe retire`) or its probe runs again (docs/probe.md).
ABANDON_AFTER_S = 86_400.0
CHECK_CODES = {"normal": 0, "degraded": 1, "severely degraded": 2, "stale": 3, "unknown": 3, "learning": 3}


class Fallback(Exception):
    """This check needs the full path (its reason is the message)."""


def plan(since_ns: int, until_ns: int, now_ns: int, spans=SPANS_NS) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Cut [since, until) into (pieces [(start, span)], raw segments [(lo, hi)]): the largest aligned spans
    that ended `PIECE_LAG_NS` before now, then the next smaller span in what is left, the rest raw."""
    done = now_ns - PIECE_LAG_NS
    pieces: list[tuple[int, int]] = []
    todo = [(since_ns, until_ns)]
    for span in spans:
        left = []
        for lo, hi in todo:
            a = -((-lo) // span) * span
            b = (min(hi, done) // span) * span
            if a >= b:
                left.append((lo, hi))
                continue
            pieces.extend((t, span) for t in range(a, b, span))
            left.extend(x for x in ((lo, a), (b, hi)) if x[0] < x[1])
        todo = left
    return sorted(pieces), sorted(todo)


def tail_since(now_ns: int) -> int:
    """Where the raw tail of a window ending at `now_ns` starts at the earliest (`plan`'s last hour piece ends there)."""
    return (now_ns - PIECE_LAG_NS) // HOUR_NS * HOUR_NS


def stale_after_s(interval_s: float | None) -> float:
    return max(STALE_MIN_S, STALE_PERIODS * (interval_s or 1.0))


def abandoned(age_s: float | None, last_run_started_ns: int | None, now_ns: int) -> bool:
    """Silent for longer than `ABANDON_AFTER_S` (since its newest sample, or without any since its last run
    started): still shown, no longer deciding an overall state or a check."""
    if age_s is None:
        age_s = None if last_run_started_ns is None else (now_ns - last_run_started_ns) / 1e9
    return age_s is not None and age_s > ABANDON_AFTER_S


# ---------------------------------------------------------------- the plugin's verdict


@dataclass(frozen=True)
class CheckTarget:
    """One checked target of `slowdown --check`: its `state` and `reason` (the Status card's), its `worst`
    slowdown (None without one) and whether it is `abandoned` (silent for over a day: it decides nothing)."""

    target: str
    state: str
    reason: str
    worst: float | None
    abandoned: bool


def _perf_label(target: str) -> str:
    return "'" + target.replace("'", "''") + "'"


def unknown(reason: str) -> tuple[int, str]:
    """The plugin guidelines' "cannot check" (UNKNOWN, exit 3) as one line."""
    return 3, f"IOWEATHER UNKNOWN - {reason}"


def check_result(states: list[CheckTarget], warn: float, crit: float) -> tuple[int, str]:
    """(exit code, one line with perfdata) from per-target states.

    Every checked target has perfdata, `U` (undetermined, in the plugin guidelines) while it has no slowdown.
    Targets silent for longer than `ABANDON_AFTER_S` (`abandoned`) decide nothing: they are named after the
    verdict so that a forgotten trial probe never hides the others' state."""
    checked = [s for s in states if not s.abandoned]
    ignored = [s.target for s in states if s.abandoned]
    note = f" (not checked, silent for over a day: {', '.join(ignored)}; see 'ioweather probe targets')" if ignored else ""
    if ignored and not checked:
        return 3, (f"IOWEATHER UNKNOWN - every target is silent for over a day: {', '.join(ignored)}; "
                   "see 'ioweather probe targets'")
    if not checked:
        return 3, "IOWEATHER UNKNOWN - no probe data in the store"
    codes = [CHECK_CODES[s.state] for s in checked]
    code = next(c for c in CHECK_PRECEDENCE if c in codes)
    bad = [s for s in checked if CHECK_CODES[s.state] == code] if code else checked
    text = "; ".join(f"{s.target} {s.reason}" if s.state == "learning" else
                     f"{s.target} {s.state} ({s.reason})" for s in bad)
    perf = " ".join(f"{_perf_label(s.target)}=" + ("U" if s.worst is None else f"{s.worst:.3f}")
                    + f";{warn:g};{crit:g}" for s in checked)
    return code, f"IOWEATHER {CHECK_NAMES[code]} - {text}{note} | {perf}"


# ---------------------------------------------------------------- stats/slowdown_pieces.py's buckets, on ints

SUB_BITS = 6
SUB = 1 << SUB_BITS
_LINEAR = 2 * SUB
_MAX_BITS = 53
N_BUCKETS = _LINEAR + (_MAX_BITS - SUB_BITS - 2) * SUB + SUB


def bucket_of(d: int) -> int:
    """stats.slowdown_pieces.bucket_of of one duration (ns) (a test checks they agree)."""
    d = min(max(int(d), 0), (1 << _MAX_BITS) - 1)
    if d < _LINEAR:
        return d
    bits = d.bit_length()
    return _LINEAR + (bits - (SUB_BITS + 2)) * SUB + ((d >> max(bits - (SUB_BITS + 1), 0)) & (SUB - 1))


def _summed(hists: list, n: int) -> list[int]:
    """The element-wise sum of histograms (arrays of N_BUCKETS uint32 counts) holding `n` values in all: each
    read as one Python int of 32-bit fields, so that the sum is a few big-int additions (a per-count loop over
    3,072 buckets of 30 pieces cost more than the rest of the check). No field can carry into the next while
    `n` < 2**32, the most any bucket can hold; above, the fields are widened to 64 bits first."""
    width = 4 if n < 2**32 else 8
    total, wide = 0, bytearray(8 * N_BUCKETS)
    low = 0 if sys.byteorder == "little" else 4
    for h in hists:
        raw = (h if isinstance(h, array) else array("I", h)).tobytes()
        if width == 8:
            for k in range(4):
                wide[low + k::8] = raw[k::4]
            raw = wide
        total += int.from_bytes(raw, sys.byteorder)
    out = array("I" if width == 4 else "Q")
    out.frombytes(total.to_bytes(width * N_BUCKETS, sys.byteorder))
    return out.tolist()


@dataclass
class _OpBase:
    n: int
    first_ok_ns: int
    median_s: float


def _baseline(conn, target: str, run_ids: list[int], since: int, until: int, now: int) -> list[_OpBase]:
    """Per op code: the successful samples of [since, until), the oldest one's start and their median (s), as
    services/probe/pieces.baseline and stats.status.baseline_stats_from find them."""
    want, segments = plan(since, until, now)
    have = db.pieces(conn, target, want)
    missing_days = [k for k in want if k[1] == DAY_NS and len(have.get(k, ())) != len(OPS)]
    if missing_days:  # a day that just completed: its hours (gather's rule)
        hours = [(d + h * HOUR_NS, HOUR_NS) for d, _ in missing_days for h in range(24)]
        have.update(db.pieces(conn, target, hours))
        for day in missing_days:
            keys = [(day[0] + h * HOUR_NS, HOUR_NS) for h in range(24)]
            if all(len(have.get(k, ())) == len(OPS) for k in keys):
                i = want.index(day)
                want[i:i + 1] = keys
    missing = [k for k in want if len(have.get(k, ())) != len(OPS)]
    if missing:
        # Spans the store holds no sample of (before the target's first: the probe daemon summarizes from
        # there) are empty; an hour not summarized yet (the daemon does it hourly) is read as raw samples,
        # as gather would build it from them; anything else is the full path's.
        first = db.first_sample_ns(conn, run_ids)
        for key in missing:
            want.remove(key)
            if first is not None and key[0] + key[1] <= first:
                continue
            if key[1] > HOUR_NS or db.archived(conn, run_ids, key[0], key[0] + key[1]):
                raise Fallback("a piece of the baseline is not built yet")
            segments.append((key[0], key[0] + key[1]))
    # The raw ends: the database's samples, or the hour piece's start times where the range is archived.
    raw: list[list[tuple[int, int]]] = [[] for _ in OPS]  # per op: (duration, start) of successful samples
    for lo, hi in segments:
        if not db.archived(conn, run_ids, lo, hi):
            for code, start, dur, st in db.samples(conn, run_ids, lo, hi):
                if st == 0:
                    raw[code].append((dur, start))
            continue
        hour = lo // HOUR_NS * HOUR_NS
        if hi > hour + HOUR_NS:
            raise Fallback("an archived raw range over two hours")
        got = db.pieces(conn, target, [(hour, HOUR_NS)]).get((hour, HOUR_NS), {})
        if len(got) != len(OPS) or not all(p["starts"] for p in got.values()):
            raise Fallback("an archived raw range without its hour's start times")
        for code, op in enumerate(OPS):
            durations, starts = db.sorted_with_starts(conn, got[op]["rowid"])
            raw[code].extend((d, s) for d, s in zip(durations, starts) if lo <= s < hi)
    out = []
    for code, op in enumerate(OPS):
        ps = [have[k][op] for k in want]
        raw_v = sorted(d for d, _ in raw[code])
        n = sum(p["ok"] for p in ps) + len(raw_v)
        firsts = [p["first_ok_ns"] for p in ps if p["first_ok_ns"] >= 0] + [s for _, s in raw[code]]
        if n == 0:
            out.append(_OpBase(0, -1, math.nan))
            continue
        raw_b = [bucket_of(d) for d in raw_v]
        raw_h = [0] * N_BUCKETS
        for b in raw_b:
            raw_h[b] += 1
        cum = list(itertools.accumulate(_summed([p["hist"] for p in ps] + [raw_h], n)))
        lo_rank, hi_rank = quantile_ranks(n, 0.5)
        order: dict[int, int] = {}
        values: dict[int, list[int]] = {}  # bucket -> its values from every piece, sorted
        for r in sorted({lo_rank, hi_rank}):
            b = bisect.bisect_right(cum, r)
            if b not in values:
                v = []
                for p in ps:
                    h = p["hist"]
                    if h[b]:
                        v.extend(db.sorted_slice(conn, p["rowid"], sum(h[:b]), h[b]))
                i = bisect.bisect_left(raw_b, b)
                v.extend(raw_v[i:bisect.bisect_right(raw_b, b)])
                values[b] = sorted(v)
            order[r] = values[b][r - (cum[b - 1] if b else 0)]
        out.append(_OpBase(n, min(firsts) if firsts else -1, median_between(n, order[lo_rank], order[hi_rank])))
    return out


def _window(conn, run_ids: list[int], since: int, until: int, stat: str) -> dict[int, dict]:
    """Per op code with a sample in [since, until): count, errors, timeouts and `stat` (s) of the successful
    durations (stats.probe.interval_stats over one interval: quantiles of 2 samples or more, the max of 1)."""
    if db.archived(conn, run_ids, since, until):
        raise Fallback("the window is archived")
    rows: dict[int, dict] = {}
    for code, _, dur, st in db.samples(conn, run_ids, since, until):
        r = rows.setdefault(code, {"count": 0, "errors": 0, "timeouts": 0, "ok": []})
        if st == 0:
            r["ok"].append(dur)
        else:
            r["errors" if st == 1 else "timeouts"] += 1
    for r in rows.values():
        v = [d / 1e9 for d in sorted(r.pop("ok"))]
        r["count"] = n = len(v)
        if stat == "max":
            r["value_s"] = v[-1] if n else None
        elif n >= 2:
            q = STAT_QUANTILES[stat]
            h = (n - 1) * q
            lo, hi = quantile_ranks(n, q)
            r["value_s"] = v[lo] + (h - lo) * (v[hi] - v[lo])
        else:
            r["value_s"] = None
    return rows


def _target(conn, target: str, now: int, window_s: float, stat: str, baseline_s: float, warn: float, crit: float,
            reference: tuple[int, int] | None) -> tuple[str, str, float | None, bool]:
    """(state, reason, worst slowdown, abandoned) of one target: services.probe.status.target_status's."""
    runs = db.runs(conn, target)
    run = runs[-1] if runs else None
    ids = [r["id"] for r in runs]
    last = db.last_sample_ns(conn, ids)
    age_s = None if last is None else max(0.0, (now - last) / 1e9)
    since, until = reference or (now - int(baseline_s * 1e9), now)
    if since >= until:
        raise Fallback("an empty baseline window")
    base = _baseline(conn, target, ids, since, until, now)
    win_start = now - int(window_s * 1e9)
    rows = _window(conn, ids, win_start, win_start + int(window_s * 1e9), stat)
    span_s = (until - since) / 1e9
    history = [(now - b.first_ok_ns) / 1e9 if b.first_ok_ns >= 0 else 0.0 for b in base]
    # the probe's own period, as the full path's (services.probe.pieces.period_s: the latest run's --period)
    period_s = run["interval_s"] if run and run["interval_s"] and run["interval_s"] > 0 else PROBE_PERIOD_S
    need = min_samples(span_s, period_s)
    learning = [False] * len(OPS) if reference else [
        b.n < need or not h >= min_history_s(span_s) for b, h in zip(base, history)]
    ops = []
    for code, op in enumerate(OPS):
        r, exp = rows.get(code), base[code].median_s
        sd = None
        if r and not learning[code] and r["value_s"] is not None and math.isfinite(exp) and exp > 0:
            sd = r["value_s"] / exp
        ops.append({"op": op, "slowdown": sd, "timeouts": r["timeouts"] if r else 0, "learning": learning[code]})
    learn = learning_reason(max(history), span_s, min_history_s(span_s), need) if any(learning) else None
    st, reason = target_state(ops, age_s, stale_after_s(run["interval_s"] if run else None), warn, crit, learn)
    if learn and st not in ("learning", "stale", "unknown"):
        reason += "; " + ", ".join(o["op"] for o in ops if o["learning"]) + ": " + learn
    values = [o["slowdown"] for o in ops if o["slowdown"] is not None]
    return st, reason, max(values) if values else None, abandoned(age_s, run["started_ns"] if run else None, now)


def run_check(settings, target, window_s: float, stat: str, baseline_s: float, warn: float, crit: float,
              expected: str = "median", reference: tuple[int, int] | None = None,
              now_ns: int | None = None) -> tuple[int, str, list[CheckTarget]]:
    """services.probe.slowdown.run_check's answer where this path can give it exactly; `Fallback` otherwise
    (and for every answer but a judged one: an unknown target, bad thresholds, no target are the full
    path's words)."""
    if settings.db_url is not None or expected != "median" or stat not in STAT_QUANTILES or not 0 < warn < crit:
        raise Fallback("not on this path")
    now = time.time_ns() if now_ns is None else now_ns
    try:
        conn = db.connect(settings.sqlite_path)
    except db.Unsupported as e:
        raise Fallback(str(e)) from None
    try:
        names = db.active_targets(conn)
        if not names or (target is not None and target not in names):
            raise Fallback("no target to judge here")
        states = []
        for t in [target] if target is not None else names:
            st, reason, worst, gone = _target(conn, t, now, window_s, stat, baseline_s, warn, crit, reference)
            # A target asked for by name is always judged.
            states.append(CheckTarget(t, st, reason, worst, target is None and gone))
    except sqlite3.Error as e:
        raise Fallback(str(e)) from None
    finally:
        conn.close()
    return (*check_result(states, warn, crit), states)


__all__ = ["ABANDON_AFTER_S", "CheckTarget", "Fallback", "abandoned", "check_result", "plan", "run_check",
           "stale_after_s", "tail_since", "unknown"]
