"""A 30-day baseline and interval rollups from per-day and per-hour pieces (issue 21).

`ioweather slowdown`, `slowdown --check`, `/metrics` and the dashboard need the order statistics
of a month of durations per op (15.6 M samples per target at 1 Hz) and the per-interval
statistics of that month. Completed spans never change (an insert into one deletes its pieces,
store/probe_pieces.py), so each completed day is summarized once (sorted durations, histogram,
rollups) and a window is cut into:

    [since ... | hour pieces | day pieces ... day pieces | hour pieces | ... until)
     raw head                                                          raw tail (< 1 h + PIECE_LAG)

The raw head and tail (under an hour each, plus the last `PIECE_LAG_NS`) are read as samples;
everything else comes from pieces, built on first use when missing (and when days are
archived). Order statistics are exact (stats/slowdown_pieces.py), so the numbers are the full
computation's bit for bit; the tests compare them on generated SQLite and PostgreSQL stores.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ioweather.errors import StoreError
from ioweather.stats.probe import STATUS_ERROR, STATUS_OK, STATUS_TIMEOUT, STAT_QUANTILES, interval_stats
from ioweather.stats.rollups import concat_rollups, rollup_arrays
from ioweather.stats.slowdown_pieces import locate, pick, summarize
from ioweather.stats.status import baseline_ranks, PROBE_PERIOD_S
from ioweather.store import probe as probe_store
from ioweather.store import probe_pieces as pieces_store
from ioweather.store.probe_pieces import DAY_NS, HOUR_NS
from ioweather.services.probe.light_check import PIECE_LAG_NS, SPANS_NS, plan, tail_since  # noqa: F401 (re-exported)

OPS = probe_store.OPS
#: Interval lengths (s) whose rollups pieces keep (those of services/probe/cache that divide the span).
ROLLUP_INTERVALS_S = (600, 1800, 3600, 14400)


def enabled(store) -> bool:
    return pieces_store.enabled(store)


@dataclass
class Gathered:
    """Pieces (per op code: list of piece dicts) and raw samples of one window."""

    pieces: dict[int, list[dict]] = field(default_factory=dict)
    raw: dict[str, np.ndarray] | None = None
    segments: list = field(default_factory=list)
    built: int = 0


def _summarize_span(s: dict, start_ns: int, span_ns: int, intervals: tuple[int, ...]) -> list[dict]:

    # One interval_stats call per length for every op (rows come out grouped by op).
    rolled = {i: rollup_arrays(interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], i))
              for i in intervals if (span_ns // 10**9) % i == 0}
    rows = []
    for code, op in enumerate(OPS):
        sel = s["op"] == code
        st, du, start = s["status"][sel], s["duration_ns"][sel], s["start_ns"][sel]
        ok = st == STATUS_OK
        v, hist = summarize(du[ok])
        # An hour piece keeps its start times in the durations' order: the hour a rolling window starts in
        # is cut at the window's start from them (services/probe/light.py), not read from the archive.
        starts = start[ok][np.argsort(du[ok], kind="stable")] if span_ns < DAY_NS else None
        roll = {i: {c: a[r["op"] == code] for c, a in r.items()} for i, r in rolled.items()}
        rows.append({"op": op, "rows": int(sel.sum()), "ok": int(ok.sum()), "errors": int((st == STATUS_ERROR).sum()),
                     "timeouts": int((st == STATUS_TIMEOUT).sum()), "sum_ns": int(v.sum()),
                     "first_ok_ns": int(start[ok].min()) if ok.any() else -1, "hist": hist, "sorted": v, "starts": starts,
                     "rollups": roll, "start_ns": start_ns, "span_ns": span_ns})
    return rows


def build(store, target: str, start_ns: int, span_ns: int) -> bool:
    """Summarize one span from its samples and store it (what retention does before it deletes a day's
    samples); whether it was stored (not when a sample arrived meanwhile, or the store cannot be written)."""
    return _build(store, target, start_ns, span_ns)[1]


def build_days(store, targets: list[str], days: set[int]) -> dict[str, set[int]]:
    """Build every target's day pieces of `days` (their starts) where missing, from the samples as the baselines
    would; {target: its days of `days` with a day piece of every op} after. One that cannot be stored (a
    read-only store, a sample arriving meanwhile) stays missing: a late sample into a day moves
    `store.probe_pieces.days_marker` only by deleting the day's pieces, so only a day that has them can be kept."""
    lo, hi = min(days), max(days) + DAY_NS
    have = pieces_store.whole_days(store, targets, lo, hi)
    if store.read_only:
        return have  # nothing would be stored: each call would read the days again for nothing
    missing = [(t, day) for t in targets for day in sorted(days - have[t])]
    for t, day in missing:
        build(store, t, day, DAY_NS)
    return pieces_store.whole_days(store, targets, lo, hi) if missing else have


def _build(store, target: str, start_ns: int, span_ns: int) -> tuple[list[dict], bool]:
    """(the span's pieces, one per op: the store's columns, `store.probe_pieces.write`'s rows, whether they
    were stored): unstored, the summary is used for this computation only, exact all the same."""
    with store.connect() as conn:
        fp = pieces_store.fingerprint(conn, pieces_store.run_ids(conn, target), start_ns, start_ns + span_ns)
    s = probe_store.read_samples(store, target, since_ns=start_ns, until_ns=start_ns + span_ns)
    rows = _summarize_span(s, start_ns, span_ns, ROLLUP_INTERVALS_S)
    try:
        stored = pieces_store.write(store, target, start_ns, span_ns, fp, rows)
    except StoreError:
        stored = False  # a read-only or full store
    return rows, stored


def _reader(store, target: str, read):
    """`read(lo, hi)`: the target's samples in [lo, hi), from the store unless the caller shares its reads
    (the dashboard's cache: one Status answer would otherwise read the last hour 3-4 times)."""
    return read or (lambda lo, hi: probe_store.read_samples(store, target, since_ns=lo, until_ns=hi))


def gather(store, target: str, since_ns: int, until_ns: int, now_ns: int, *, spans=SPANS_NS,
           with_rollups: bool = False, with_hist: bool = False, raw: bool = True, read=None) -> Gathered:
    """Pieces of [since, until) (built where missing) and, with `raw`, the samples of the rest (`read`: `_reader`).
    Only a baseline needs the histograms (`with_hist`): rollups leave them in the store."""
    want, segments = plan(since_ns, until_ns, now_ns, spans)
    got = pieces_store.load(store, target, want, with_rollups, with_hist)
    have: dict[tuple[int, int], list[dict]] = {}
    for p in got:
        have.setdefault((p["start_ns"], p["span_ns"]), []).append(p)
    missing_days = [k for k in want if k[1] == DAY_NS and len(have.get(k, ())) != len(OPS)]
    if missing_days and HOUR_NS in spans:
        # A day that just completed (yesterday, after midnight) has its hours summarized already (the
        # window's tail used them): take those rather than read the day's samples in this request.
        hours = [(d + h * HOUR_NS, HOUR_NS) for d, _ in missing_days for h in range(24)]
        for p in pieces_store.load(store, target, hours, with_rollups, with_hist):
            have.setdefault((p["start_ns"], p["span_ns"]), []).append(p)
        for day in missing_days:
            keys = [(day[0] + h * HOUR_NS, HOUR_NS) for h in range(24)]
            if all(len(have.get(k, ())) == len(OPS) for k in keys):
                i = want.index(day)
                want[i:i + 1] = keys
    g = Gathered(pieces={code: [] for code in range(len(OPS))})
    built_hours = False
    for key in want:
        rows = have.get(key)
        if rows is None or len(rows) != len(OPS):
            rows = _build(store, target, *key)[0]
            g.built += 1
            built_hours = built_hours or key[1] < DAY_NS
        for p in rows:
            g.pieces[OPS.index(p["op"])].append(p)
    if built_hours:
        # Hour pieces serve the partial days at a window's two ends; elsewhere day pieces cover them.
        # Kept: around this window's ends and the default 30-day window's (the dashboard's and --check's).
        ends = (since_ns, until_ns, now_ns - 30 * DAY_NS, now_ns)
        keep = [((t // DAY_NS - 1) * DAY_NS, (t // DAY_NS + 2) * DAY_NS) for t in ends]
        try:
            pieces_store.prune_hours(store, target, keep)
        except StoreError:
            pass
    if raw:
        read = _reader(store, target, read)
        parts = [read(lo, hi) for lo, hi in segments]
        g.raw = {k: np.concatenate([p[k] for p in parts]) for k in ("op", "start_ns", "duration_ns", "status")} \
            if parts else {k: np.zeros(0, np.int64) for k in ("op", "start_ns", "duration_ns", "status")}
    g.segments = segments
    return g


@dataclass
class OpBaseline:
    n: int
    sum_ns: int
    first_ok_ns: int
    order_ns: dict[int, int]


class _Changed(Exception):
    """A piece changed between reading its histogram and its slices."""


def baseline(store, target: str, since_ns: int, until_ns: int, now_ns: int, ranks=baseline_ranks, *,
             read=None) -> list[OpBaseline]:
    """Per op code: the count, exact sum, oldest start and the order statistics at `ranks(n)` of the
    successful durations in [since, until), from pieces and the raw ends."""
    for attempt in range(3):
        try:
            return _baseline(store, target, since_ns, until_ns, now_ns, ranks, read)
        except _Changed:
            if attempt == 2:
                raise StoreError(f"probe pieces of {target!r} keep changing under this read; try again") from None
    raise AssertionError("unreachable")


def day_baselines(store, target: str, days: list[int], span_days: int, now_ns: int,
                  ranks=baseline_ranks) -> dict[int, list[OpBaseline]]:
    """{d: `baseline(store, target, (d - span_days) days, d days, now_ns)`} of the UTC day numbers `days`, the
    pieces' histograms of all their windows loaded once: the Report's week of events asks a target for 8
    sliding 30-day baselines, which loaded the same month's histograms 8 times (issue 40). Where a window
    would read raw samples (a day ended less than the pieces' lag ago), each day is computed alone."""
    if not days:
        return {}
    lo, hi = (min(days) - span_days) * DAY_NS, max(days) * DAY_NS
    for attempt in range(3):
        try:
            g = gather(store, target, lo, hi, now_ns, with_hist=True, raw=False)
            if g.segments:
                return {d: baseline(store, target, (d - span_days) * DAY_NS, d * DAY_NS, now_ns, ranks) for d in days}
            none = {k: np.zeros(0, np.int64) for k in ("op", "start_ns", "duration_ns", "status")}
            subs = [Gathered(pieces={code: [p for p in ps if (d - span_days) * DAY_NS <= p["start_ns"] < d * DAY_NS]
                                     for code, ps in g.pieces.items()}, raw=none) for d in days]
            return dict(zip(days, _order_stats_many(store, target, subs, ranks)))
        except _Changed:
            if attempt == 2:
                raise StoreError(f"probe pieces of {target!r} keep changing under this read; try again") from None
    raise AssertionError("unreachable")


def _baseline(store, target, since_ns, until_ns, now_ns, ranks, read) -> list[OpBaseline]:
    return _order_stats(store, target, gather(store, target, since_ns, until_ns, now_ns, with_hist=True, read=read),
                        ranks)


def _order_stats(store, target: str, g: Gathered, ranks) -> list[OpBaseline]:
    """Per op code, `baseline`'s numbers of the pieces and raw samples `g` holds."""
    return _order_stats_many(store, target, [g], ranks)[0]


def _order_stats_many(store, target: str, gs: list[Gathered], ranks) -> list[list[OpBaseline]]:
    """`_order_stats` of each of `gs`, the slices of every one's pieces read in one statement per op (a week's
    sliding baselines of a target: 8 x 6 statements were 8 of the 15 s of the Report's baselines, issue 40)."""
    outs: list[list[OpBaseline]] = [[] for _ in gs]
    for code, op in enumerate(OPS):
        plans = [_plan_op(g, code, ranks) for g in gs]
        fetched, fps = pieces_store.slices(store, target, op, [r for pl in plans for r in pl["requests"]])
        at = 0
        for pl, out in zip(plans, outs):
            got = fetched[at:at + len(pl["requests"])]
            at += len(pl["requests"])
            out.append(_finish_op(pl, got, fps))
    return outs


def _plan_op(g: Gathered, code: int, ranks) -> dict:
    """One op's counts of `g` and the slices of its pieces its order statistics need (by rank bucket)."""
    ps = g.pieces[code]
    sel = (g.raw["op"] == code) & (g.raw["status"] == STATUS_OK)
    raw_v, raw_h = summarize(g.raw["duration_ns"][sel])
    n = sum(p["ok"] for p in ps) + len(raw_v)
    firsts = [p["first_ok_ns"] for p in ps if p["first_ok_ns"] >= 0]
    if len(raw_v):
        firsts.append(int(g.raw["start_ns"][sel].min()))
    plan = {"ps": ps, "raw_v": raw_v, "n": n, "total": sum(int(p["sum_ns"]) for p in ps) + int(raw_v.sum()),
            "first": min(firsts) if firsts else -1, "want": ranks(n) if n else [], "requests": [],
            "stored_keys": [], "by_bucket": {}, "located": []}
    if plan["want"]:
        hists = np.vstack([p["hist"] for p in ps] + [raw_h])
        plan["located"] = located = locate(hists, plan["want"])
        # Ranks whose bucket is the same (the median's two neighbours, usually) share one slice read.
        by_bucket: dict[tuple, list[int]] = plan["by_bucket"]
        for r, (_, offs, lens) in zip(plan["want"], located):
            by_bucket.setdefault((tuple(offs.tolist()), tuple(lens.tolist())), []).append(r)
        for offs, lens in by_bucket:
            req = []
            for i, p in enumerate(ps):
                if lens[i]:
                    if "sorted" in p:  # built in this call: in memory
                        continue
                    req.append((p["start_ns"], p["span_ns"], offs[i], lens[i]))
            plan["requests"].append(req)
            plan["stored_keys"].append((offs, lens))
    return plan


def _finish_op(plan: dict, fetched: list[list[np.ndarray]], fps: dict) -> OpBaseline:
    """The op's `OpBaseline` from its plan and the slices read for it (`_Changed` when a piece changed)."""
    ps, raw_v, want, located = plan["ps"], plan["raw_v"], plan["want"], plan["located"]
    order: dict[int, int] = {}
    if want:
        by_key = {(p["start_ns"], p["span_ns"]): p for p in ps}
        for req in plan["requests"]:
            for start, span, _, _ in req:
                p = by_key[(start, span)]
                if fps.get((start, span)) != (p["fp_rows"], p["fp_parts"]):
                    raise _Changed()
        for (offs, lens), got in zip(plan["stored_keys"], fetched):
            parts = list(got)
            for i, p in enumerate(ps):
                if lens[i] and "sorted" in p:
                    parts.append(p["sorted"][offs[i]:offs[i] + lens[i]])
            if lens[-1]:
                parts.append(raw_v[offs[-1]:offs[-1] + lens[-1]])
            for r in plan["by_bucket"][(offs, lens)]:
                order[r] = pick(parts, located[want.index(r)][0])
    return OpBaseline(plan["n"], plan["total"], plan["first"], order)


def rollups_many(store, target: str, intervals: tuple[int, ...], since_ns: int, until_ns: int,
                 now_ns: int, *, read=None) -> dict[int, dict[str, np.ndarray]]:
    """`rollups` of several interval lengths; those that divide an hour share one read of the pieces
    and of the raw ends (the dashboard's warm-up wants 10 min, 30 min and 1 h together)."""

    shared = [i for i in intervals if HOUR_NS % (i * 10**9) == 0]
    if len(shared) == 1:
        shared = []  # alone, `rollups` decodes only its own length from each piece
    out = {i: rollups(store, target, i, since_ns, until_ns, now_ns, read=read) for i in intervals if i not in shared}
    if shared:
        g = gather(store, target, since_ns, until_ns, now_ns, with_rollups=True, read=read)
        r = g.raw
        for i in shared:
            parts = [p["rollups"][i] for code in range(len(OPS)) for p in g.pieces[code]]
            if len(r["op"]):
                parts.append(rollup_arrays(interval_stats(r["op"], r["start_ns"], r["duration_ns"], r["status"], i)))
            out[i] = concat_rollups(parts)
    return out


def rollups(store, target: str, interval_s: int, since_ns: int, until_ns: int, now_ns: int, *,
            read=None) -> dict[str, np.ndarray]:
    """`interval_stats` rows (probe_cache's rollup columns) of the intervals in [since, until), exactly
    as computed over the samples of [since, until): stored for whole spans, computed for the rest."""

    step = interval_s * 10**9
    spans = tuple(s for s in SPANS_NS if s % step == 0)
    # Intervals of whole hours that divide a day (4 h): outside day pieces, merge their hours' sorted arrays.
    by_hours = step % HOUR_NS == 0 and DAY_NS % step == 0 and HOUR_NS not in spans
    g = gather(store, target, since_ns, until_ns, now_ns, spans=spans, with_rollups=interval_s, raw=not by_hours,
               read=read)
    parts = [p["rollups"][interval_s] for code in range(len(OPS)) for p in g.pieces[code]]
    segments = g.segments
    if by_hours:
        segments = []
        for lo, hi in g.segments:
            a = -((-lo) // step) * step
            b = (min(hi, now_ns - PIECE_LAG_NS) // step) * step
            if a >= b:
                segments.append((lo, hi))
                continue
            parts.append(_from_hours(store, target, a, b, step, now_ns))
            segments.extend(x for x in ((lo, a), (b, hi)) if x[0] < x[1])
        read = _reader(store, target, read)
        raw = [read(lo, hi) for lo, hi in segments]
        r = {k: np.concatenate([x[k] for x in raw]) for k in ("op", "start_ns", "duration_ns", "status")} if raw else None
    else:
        r = g.raw
    if r is not None and len(r["op"]):
        parts.append(rollup_arrays(interval_stats(r["op"], r["start_ns"], r["duration_ns"], r["status"], interval_s)))
    return concat_rollups(parts)


def _from_hours(store, target: str, a: int, b: int, step: int, now_ns: int) -> dict[str, np.ndarray]:
    """Rollups of the intervals [a, b) of length `step` from the hour pieces: each interval's successful
    durations are its hours' sorted arrays merged, the same values `interval_stats` groups and sorts."""

    g = gather(store, target, a, b, now_ns, spans=(HOUR_NS,), raw=False)
    keys = [(p["start_ns"], HOUR_NS) for p in g.pieces[0] if "sorted" not in p]
    stored = pieces_store.sorted_arrays(store, target, keys)
    # Another request's gather may have pruned some of these hours (`prune_hours`, outside its own window's
    # ends) between the load and this read: they are summarized again from their samples, as gather does.
    gone = sorted({start for start, _ in keys for op in OPS if (op, start, HOUR_NS) not in stored})
    if gone:
        rebuilt = {start: {p["op"]: p for p in _build(store, target, start, HOUR_NS)[0]} for start in gone}
        for code, op in enumerate(OPS):
            g.pieces[code] = [rebuilt[p["start_ns"]][op] if p["start_ns"] in rebuilt else p for p in g.pieces[code]]
    parts = []
    for code, op in enumerate(OPS):
        blocks: dict[int, list[dict]] = {}
        for p in g.pieces[code]:
            blocks.setdefault(p["start_ns"] // step * step, []).append(p)
        for start, ps in sorted(blocks.items()):
            v = np.concatenate([p["sorted"] if "sorted" in p else stored[(op, p["start_ns"], HOUR_NS)] for p in ps])
            errors, timeouts = sum(p["errors"] for p in ps), sum(p["timeouts"] for p in ps)
            if len(v):
                row = rollup_arrays(interval_stats(np.full(len(v), code, np.int8), np.full(len(v), start, np.int64), v,
                                                   np.zeros(len(v), np.int8), step / 1e9))
                row["errors"][:], row["timeouts"][:] = errors, timeouts
            elif errors or timeouts:
                row = rollup_arrays([{"op_code": code, "interval_start_ns": start, "count": 0, "errors": errors,
                                      "timeouts": timeouts, "mean_s": None,
                                      **{f"{q}_s": None for q in STAT_QUANTILES}}])
            else:
                continue
            parts.append(row)
    return concat_rollups(parts)


def period_s(store, target: str) -> float:
    """The probe period of `target` (its latest run's `--period`), which the learning rule's sample count
    scales with (stats.status.min_samples); the default one second when no run says."""
    rs = probe_store.runs(store, target)
    p = rs[-1].get("interval_s") if rs else None
    return float(p) if p and p > 0 else PROBE_PERIOD_S
