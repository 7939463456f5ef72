"""The admin's view of a file system, per target: the documents behind /servers, /metadata, /capacity
and /talkers (and their /api twins).

The store (`store.telemetry_targets`) reduces the Parquet rows to per-target bins; `stats.targets`
and `stats.workload` compute; this module picks the bin (the page's pixel resolution), shapes
matrices and formats times. Rates are a bin's amount / the bin's length, as `ioweather workload`
does: a bin with some samples missing shows a lower rate, a bin with none is a gap (null), never 0.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ioweather.encoding import Answer, answer_dict
from ioweather.errors import StoreError, UserError
from ioweather.services.telemetry.capacity import forecast, is_data_target
from ioweather.services.telemetry.fsfacts import (  # noqa: F401 (Failover, LCTL_STATES, LctlTarget: re-exported)
    CAPACITY_METRICS, Failover, JobLink, KINDS, LCTL_STATES, LctlState, LctlTarget, lctl_state, user_of)
from ioweather.stats import targets as T
from ioweather.stats import workload as W
from ioweather.store import open_store, telemetry_targets as Q
from ioweather.store.telemetry_layout import (connect_duckdb, data_files, fs_dir, list_fs, LIST_ATTEMPTS, skipped_unreadable,
                                              unreadable, unreadable_note)
from ioweather.store.telemetry_targets import known_jobs
from ioweather.units import ns_to_iso

#: The heatmap's budget: at most this many (target, column) cells per metric, and at most MAX_COLUMNS
#: columns (about one per two pixels of a wide screen). 500 targets -> 320 columns: < 2 MB of JSON.
MAX_CELLS = 160_000
MAX_COLUMNS = 600
#: Heatmap values travel as integers 0..LEVELS of the window's highest rate (0.1 % steps of colour);
#: a clicked target's own series carries the exact rates.
LEVELS = 1000
MAX_POINTS = 2000                # a single series (a target, an operation): at most this many bins
NOW_S = 300.0                    # talkers "now": the last 5 minutes of the data
TOP_JOBS = 50
DEFAULT_TARGET_MIN_AMPLITUDE = float(64 << 20)   # events of one target: rises of 64 MiB/s
DEFAULT_MD_MIN_AMPLITUDE = 1000.0                # metadata events: rises of 1,000 operations/s


KIND_WORDS = {"io": "read or write byte counters", "md": "metadata operation counters (md_*)",
              "capacity": "capacity readings (lfs df, LMT, lctl)", "jobs": "Lustre job_stats"}


def coverage(settings, fs: str) -> dict[str, tuple[int, int, int]]:
    """{kind: (first interval start, end of the last interval, rows)} of the kinds `fs` holds."""
    return Q.spans(settings, fs, KINDS)


@dataclass(frozen=True)
class Span(Answer):
    """The window a telemetry page or command shows for one file system: the one asked (or the default:
    the last `default` of the data of the page's kind), cut to the time that data covers, so that every
    mean, rate and peak is over covered time. `note` says what the page cannot show and where it can be
    seen (file systems that hold the kind); `covered_s` is the length of the window shown."""

    fs: str
    kind: str
    since_ns: int
    until_ns: int
    covered_s: float
    data_since: str | None
    data_until: str | None
    fs_with_data: list[str]
    note: str | None

    def to_json(self) -> dict:
        return {"kind": self.kind, "since": ns_to_iso(self.since_ns), "until": ns_to_iso(self.until_ns),
                "covered_s": self.covered_s, "data_since": self.data_since, "data_until": self.data_until,
                "fs_with_data": self.fs_with_data, "note": self.note}


def single_capture(cov: dict) -> bool:
    """Gauges read at one instant and no counter amounts: one `lctl get_param` or `lfs df` capture."""
    return bool(cov) and "io" not in cov and "md" not in cov and all(e - f <= 1_000_000_000 for f, e, _ in cov.values())


def pick_span(fs: str, kind: str, covs: dict[str, dict], asked: tuple[int, int] | None, default_s: float,
              overall: tuple[int, int] | None = None) -> Span:
    """The window to show of `fs` for a page of `kind`: `asked` (since_ns, until_ns) cut to the data of the
    kind, else its last `default_s` seconds. Without data of the kind, `overall` (the data's whole span)
    or `asked`, and a note naming the file systems that have it."""
    with_data = [f for f, c in covs.items() if kind in c]
    span = covs.get(fs, {}).get(kind)
    note = None
    if span is None:
        note = f"{fs} holds no {KIND_WORDS[kind]}"
        if single_capture(covs.get(fs, {})):
            note += " (a single capture: its gauges are on the Capacity page; rates need two captures)"
        note += f"; {'file systems that do: ' + ', '.join(with_data) if with_data else 'no file system does'}."
        since, until = asked or overall or (0, 1_000_000_000)
    else:
        first, end = span[0], span[1]
        if asked is None:
            since, until = max(first, end - int(default_s * 1e9)), end
        else:
            since, until = max(asked[0], first), min(asked[1], end)
            if since >= until:
                note = (f"no {KIND_WORDS[kind]} of {fs} between {ns_to_iso(asked[0])} and {ns_to_iso(asked[1])}; "
                        f"they cover {ns_to_iso(first)} to {ns_to_iso(end)}.")
                since, until = asked
    return Span(fs=fs, kind=kind, since_ns=int(since), until_ns=int(until), covered_s=(until - since) / 1e9 if note is None else 0.0,
                data_since=ns_to_iso(span[0]) if span else None, data_until=ns_to_iso(span[1]) if span else None,
                fs_with_data=with_data, note=note)


def covered(settings, fs: str, kind: str, since_ns: int, until_ns: int) -> tuple[int, int]:
    """[since, until) cut to the rows of `kind` inside it (unchanged when it holds none): what every answer
    below is computed over, so that its means, rates and peaks are over covered time, whoever asks."""
    inside = Q.spans(settings, fs, {kind: KINDS[kind]}, since_ns, until_ns).get(kind)
    return (since_ns, until_ns) if inside is None else (max(since_ns, inside[0]), min(until_ns, inside[1]))


def window_of(settings, fs: str, kind: str, covs: dict[str, dict], asked: tuple[int, int] | None, default_s: float,
              overall: tuple[int, int] | None = None) -> Span:
    """pick_span, then cut to the rows of the kind inside that window (a week ending on a half hour of data
    shows that half hour: its means are over it, not over six and a half empty days)."""
    span = pick_span(fs, kind, covs, asked, default_s, overall)
    if span.note is not None:
        return span
    since, until = covered(settings, fs, kind, span.since_ns, span.until_ns)
    return dataclasses.replace(span, since_ns=since, until_ns=until, covered_s=(until - since) / 1e9)


def data_window(settings, fs: str, since_ns: int | None, until_ns: int | None, default_s: float,
                cov: dict[str, tuple[int, int, int]] | None = None) -> tuple[int, int]:
    """[since, until) of an answer of several parts (`report`: events, fullness, probes, benchmarks), the
    same from the CLI and the page: the asked ends, else the end of the file system's data of every kind
    (an `lfs df` after the last byte counters included) and `default_s` before it; cut to the time that
    data covers when the window holds some of it. The CLI took its end from the data and the page from
    the byte counters alone, so the two showed different weeks and fullness. `cov`: `coverage(settings, fs)` when
    the caller has it (the dashboard keeps it: a year of 100 targets' spans is ~0.5-1 s to compute)."""
    spans = list((coverage(settings, fs) if cov is None else cov).values())
    first = min((v[0] for v in spans), default=None)
    end = max((v[1] for v in spans), default=None)
    if until_ns is None:
        until_ns = end if end is not None else time.time_ns()
    if since_ns is None:
        since_ns = until_ns - int(default_s * 1e9)
    if first is not None and max(since_ns, first) < min(until_ns, end):
        since_ns, until_ns = max(since_ns, first), min(until_ns, end)
    return int(since_ns), int(until_ns)


def sampling_s(settings, fs: str, since_ns: int | None, until_ns: int | None, con=None) -> float | None:
    """The shortest interval of the data in the window, from the Parquet footers (no rows read)."""
    own = con is None
    con = connect_duckdb() if own else con
    try:
        f = Q.footer_summary(con, data_files(fs_dir(settings, fs), since_ns, until_ns))
    finally:
        if own:
            con.close()
    return f["min_interval_s"]


def pick_step_ns(window_ns: int, sample_s: float | None, columns: int) -> int:
    """The bin for `columns` bins over the window: at least the sampling interval; once it is a minute
    or longer, a whole number of target-rollup buckets, so the rollups answer: of the coarsest level
    (1 h, 15 min) that makes the bin at most 1.5x what was wanted (a month reads ~12x fewer rows than
    at 5 minutes), else of 5 minutes; below a minute, a whole number of sampling intervals."""
    sample_ns = int(round((sample_s or 1.0) * 1e9)) or 1_000_000_000
    want = max(sample_ns, -(-window_ns // max(columns, 1)))
    if want >= Q.BUCKET_NS // 5:  # a minute or more: a little coarser, but read from ~60x fewer rows
        for level in reversed(Q.LEVELS):
            step = -(-want // level) * level
            if step * 2 <= want * 3 or level == Q.BUCKET_NS:
                return step
    return -(-want // sample_ns) * sample_ns


def _grid(since_ns: int, until_ns: int, step_ns: int) -> tuple[int, int]:
    b0 = since_ns // step_ns
    return b0, max(1, -(-until_ns // step_ns) - b0)


def _matrix(df: pd.DataFrame, metric: str, rows: list[str], b0: int, nbins: int, col: str = "amount") -> np.ndarray:
    out = np.full((len(rows), nbins), np.nan)
    d = df[df["metric"] == metric]
    if d.empty:
        return out
    r = pd.Categorical(d["target"].to_numpy(object), categories=rows).codes  # vectorized lookup: -1 = not a row
    c = d["bin"].to_numpy(np.int64) - b0
    ok = (c >= 0) & (c < nbins) & (r >= 0)
    out[r[ok], c[ok]] = d[col].to_numpy(float)[ok]
    return out


def _quantize(rate: np.ndarray, top: float) -> list:
    """Rates as integers 0..LEVELS of `top`, None where missing (the heatmap's compact form)."""
    if not top or not np.isfinite(top):
        top = 1.0
    q = np.minimum(np.rint(rate / top * LEVELS), LEVELS)  # a column's mean never exceeds its samples' top
    missing = np.isnan(q)
    cells = np.where(missing, 0, q).astype(np.int64).astype(object)  # Python ints (JSON 0..LEVELS, no ".0")
    cells[missing] = None
    return cells.tolist()


def _times(b0: int, nbins: int, step_ns: int) -> list[str]:
    t = (b0 + np.arange(nbins, dtype=np.int64)) * step_ns
    a = t.astype("datetime64[ns]").astype("datetime64[s]")
    return [s + "Z" for s in np.datetime_as_string(a, unit="s").tolist()]


def _num(v) -> float | None:
    return None if v is None or not np.isfinite(v) else float(v)


def _nums(a) -> list:
    return [None if v != v or v in (math.inf, -math.inf) else float(v) for v in np.asarray(a, np.float64).tolist()]


# ------------------------------------------------------------------------------------------- servers

SORTS = ("bytes", "peak", "share", "name")

#: How an answer's parts already computed are kept: `memo(key, compute)` returns `compute()` or a copy
#: kept under `key` (the dashboard keeps them while the dataset's files are unchanged).
Memo = Callable[[tuple, Callable[[], Any]], Any]


def _fresh(key: tuple, compute: Callable[[], Any]) -> Any:
    return compute()


@dataclass(frozen=True)
class FsWindow(Answer):
    """What every answer about one file system's window starts with: every file system with telemetry
    (`fs_all`, the pages' menu), the one asked about, and the window (ISO 8601 UTC); `notes`, what the
    answer could not read (a damaged file left out), for the page to say."""

    fs_all: list[str]
    fs: str
    since: str
    until: str
    notes: list[str] = field(default_factory=list, kw_only=True)


def _skipping_damaged(answer: Callable) -> Callable:
    """`answer(settings, fs, ...)` that leaves out the dataset's files whose Parquet footer cannot be
    read (layout.unreadable remembers them, layout.data_files then lists them no more) and says so in
    its `notes`, as `workload` does: one damaged file answered 500 on Servers, Metadata and Capacity,
    whose queries list the files themselves (issue 41 item 5)."""

    @functools.wraps(answer)
    def run(settings, fs: str, *args, **kwargs):
        base = fs_dir(settings, fs)
        for attempt in range(LIST_ATTEMPTS):
            try:
                doc = answer(settings, fs, *args, **kwargs)
                break
            except (UserError, StoreError):
                raise
            except Exception:
                if attempt == LIST_ATTEMPTS - 1 or not unreadable(data_files(base)):
                    raise
        bad = skipped_unreadable(base)
        return dataclasses.replace(doc, notes=[*doc.notes, unreadable_note(bad)]) if bad else doc

    return run


@dataclass(frozen=True)
class Servers(FsWindow):
    """Which server targets (OSTs, MDTs, NSD servers) moved the bytes of a window, and which are
    imbalanced or idle: the Servers page's answer (`/api/servers`). Times ISO 8601 UTC, amounts in
    bytes, rates in bytes/s; `heatmap` holds each target's read and write rate per `step_s` bin
    quantized to `levels` of `top_bps` (the highest of both; `top_read_bps`, `top_write_bps` each one's,
    where its colour scale ends). `series` is `target`'s own rates and events when one is asked
    for; `brw` the brw_stats distributions ({} without them)."""

    step_s: float
    sample_s: float | None
    sort: str
    targets: list[dict]
    time: list[str]
    heatmap: dict
    fs_read_bytes: float
    fs_write_bytes: float
    #: The imbalance rule's constants (stats.targets).
    rule: dict
    flagged: list[str]
    target: str | None
    series: TargetSeries | None
    brw: BrwDistributions


@_skipping_damaged
def servers(settings, fs: str, since_ns: int, until_ns: int, sort: str = "bytes", target: str | None = None,
            min_amplitude: float = DEFAULT_TARGET_MIN_AMPLITUDE, memo: Memo = _fresh) -> Servers:
    """The targets of `fs` over [since, until) sorted by `sort`, and `target`'s series (UserError when it
    moved nothing in the window)."""
    since_ns, until_ns = covered(settings, fs, "io", since_ns, until_ns)
    doc = memo(("servers", fs, since_ns, until_ns, sort), lambda: _heatmap(settings, fs, since_ns, until_ns, sort))
    brw = memo(("servers-brw", fs, since_ns, until_ns), lambda: brw_distributions(settings, fs, since_ns, until_ns))
    series = None
    if target is not None:
        if target not in {t["target"] for t in doc["targets"]}:
            raise UserError(f"unknown target {target!r} in {fs} between {doc['since']} and {doc['until']}")
        series = memo(("servers-target", fs, target, since_ns, until_ns, min_amplitude),
                      lambda: target_series(settings, fs, target, since_ns, until_ns, min_amplitude))
    return Servers(fs_all=list_fs(settings), **doc, target=target, series=series, brw=brw)


def _heatmap(settings, fs: str, since_ns: int, until_ns: int, sort: str) -> dict:
    """Per-target read and write rates over [since, until) as a heatmap (target x time, quantized),
    per-target totals, peaks, shares and imbalance flags.

    The bin fits MAX_CELLS for the number of targets before anything is read (`Q.count_targets`,
    from the hourly rollups), so the store returns at most ~MAX_CELLS cells per metric, aggregated
    in DuckDB from the per-target rollups written with the data (store/telemetry_targets.py)."""
    metrics = ("read_bytes", "write_bytes")
    con = connect_duckdb()
    try:
        sample_s = sampling_s(settings, fs, since_ns, until_ns, con)
        n = Q.count_targets(settings, fs, since_ns, until_ns, metrics, con)
        step_ns = pick_step_ns(until_ns - since_ns, sample_s, min(MAX_COLUMNS, MAX_CELLS // max(n, 1)))
        c = Q.target_cells(settings, fs, since_ns, until_ns, step_ns, metrics, con)
    finally:
        con.close()
    targets = c["targets"]
    b0, nbins = _grid(since_ns, until_ns, step_ns)
    if targets and len(targets) * nbins > MAX_CELLS:
        # targets the count missed (rows of a day not rolled up yet): merge k neighbouring bins (exact)
        k = -(-pick_step_ns(until_ns - since_ns, sample_s, max(1, MAX_CELLS // len(targets))) // step_ns)
        step_ns *= k
        c["bin"] = c["bin"] // k
        b0, nbins = _grid(since_ns, until_ns, step_ns)
    step_s = step_ns / 1e9
    col = c["bin"] - b0
    ok = (col >= 0) & (col < nbins)
    cell = c["target"] * nbins + col
    cells = len(targets) * nbins
    mats, peaks = [], []
    for code in range(len(metrics)):
        sel = ok & (c["metric"] == code)
        amount = np.bincount(cell[sel], weights=c["amount"][sel], minlength=cells)
        seen = np.bincount(cell[sel], minlength=cells) > 0
        mats.append(np.where(seen, amount, np.nan).reshape(len(targets), nbins))
        top = np.full(len(targets), -np.inf)
        np.fmax.at(top, c["target"][sel], c["top_bps"][sel])
        peaks.append(np.where(np.isfinite(top), top, np.nan))
    read, write = mats
    total = np.where(np.isnan(read) & np.isnan(write), np.nan, np.nan_to_num(read) + np.nan_to_num(write))
    imb = _imbalance(total, step_s)
    present = np.isfinite(total)
    any_seen = present.any(axis=1)
    first = np.where(any_seen, present.argmax(axis=1), 0)
    last = np.where(any_seen, nbins - 1 - present[:, ::-1].argmax(axis=1), 0)
    sums = {"read_bytes": np.nansum(read, axis=1), "write_bytes": np.nansum(write, axis=1), "bytes": np.nansum(total, axis=1)}
    rows = []
    for i, t in enumerate(targets):
        pr, pw = _num(peaks[0][i]), _num(peaks[1][i])
        rows.append({"target": t, "read_bytes": float(sums["read_bytes"][i]), "write_bytes": float(sums["write_bytes"][i]),
                     "bytes": float(sums["bytes"][i]), "peak_read_bps": pr, "peak_write_bps": pw,
                     "peak_bps": max((p for p in (pr, pw) if p is not None), default=None),
                     "share": _num(imb["share"][i]), "hot_fraction": _num(imb["hot_fraction"][i]),
                     "cold_fraction": _num(imb["cold_fraction"][i]), "flag": imb["flag"][i],
                     # a bin's edges cut to the window: data ending at 00:05 was "seen until 00:20" with 20-minute bins
                     "first_seen": ns_to_iso(max(since_ns, (b0 + int(first[i])) * step_ns)) if any_seen[i] else None,
                     "last_seen": ns_to_iso(min(until_ns, (b0 + int(last[i]) + 1) * step_ns)) if any_seen[i] else None,
                     "bins_with_data": int(present[i].sum())})
    order = sort_targets(rows, sort)
    rows = [rows[i] for i in order]
    read, write = read[order] / step_s, write[order] / step_s
    # each scale ends at the highest sample of its direction (the table's peak), not at the highest column:
    # at 60 s samples the columns are 5-minute means (arch: 911.5 KiB/s against a peak of 976.6 KiB/s)
    tops = [float(np.nanmax(np.concatenate([p[np.isfinite(p)], [0.0]]))) for p in peaks]
    top = max(tops)
    return {"fs": fs, "since": ns_to_iso(since_ns), "until": ns_to_iso(until_ns), "step_s": step_s,
            "sample_s": sample_s, "sort": sort, "targets": rows, "time": _times(b0, nbins, step_ns),
            # each direction's own top too: the read map's colour scale ran to the write peak (365.6 MiB/s) while
            # the table's highest read peak was 27.2 MiB/s
            "heatmap": {"levels": LEVELS, "top_bps": top, "read": _quantize(read, top), "write": _quantize(write, top),
                        "top_read_bps": tops[0], "top_write_bps": tops[1]},
            "fs_read_bytes": float(np.nansum(read) * step_s), "fs_write_bytes": float(np.nansum(write) * step_s),
            "rule": {"ratio": T.RATIO, "long_fraction": T.LONG_FRACTION, "busy_fraction": T.BUSY_FRACTION,
                     "share_bin_s": T.SHARE_BIN_S, "long_s": T.LONG_S},
            "flagged": [r["target"] for r in rows if r["flag"]]}


def _imbalance(total: np.ndarray, step_s: float) -> dict:
    """stats.targets.imbalance over bins of at least SHARE_BIN_S (neighbouring columns merged)."""
    k = max(1, math.ceil(T.SHARE_BIN_S / step_s))
    t, b = total.shape
    pad = np.full((t, -(-b // k) * k), np.nan)
    pad[:, :b] = total
    blocks = pad.reshape(t, pad.shape[1] // k, k)  # not -1: numpy cannot infer it for 0 targets (an empty window)
    merged = np.where(np.isfinite(blocks).any(axis=2), np.nansum(blocks, axis=2), np.nan)
    return T.imbalance(merged, min_bins=math.ceil(T.LONG_S / (k * step_s)))


def sort_targets(rows: list[dict], sort: str) -> list[int]:
    """Indices of `rows` in display order: largest first for bytes/peak/share, then by name."""
    if sort == "name":
        return sorted(range(len(rows)), key=lambda i: rows[i]["target"])
    key = {"bytes": "bytes", "peak": "peak_bps", "share": "share"}[sort]
    return sorted(range(len(rows)), key=lambda i: (-(rows[i][key] or 0.0), rows[i]["target"]))


@dataclass(frozen=True)
class SeriesEvent:
    """A burst of one target's rate (stats.workload): its span and peak (ISO 8601 UTC), the peak rate
    (bytes/s) and the bytes moved during it."""

    start: str
    end: str
    peak_time: str
    peak: float
    amount: float


@dataclass(frozen=True)
class TargetSeries(Answer):
    """One target's read and write rates (bytes/s, per `step_s` bin starting at `time`; None: no sample),
    its bytes over the window, peak and burstiness, and its events above `min_amplitude_bps`."""

    target: str
    step_s: float
    time: list[str]
    read_bps: list[float | None]
    write_bps: list[float | None]
    read_bytes: float
    write_bytes: float
    peak_total_bps: float | None
    burstiness: float | None
    min_amplitude_bps: float
    events: list[SeriesEvent]

    def to_json(self) -> dict:
        return {**answer_dict(self), "events": [answer_dict(e) for e in self.events]}


def target_series(settings, fs: str, target: str, since_ns: int, until_ns: int,
                  min_amplitude: float = DEFAULT_TARGET_MIN_AMPLITUDE, smooth_s: float = W.DEFAULT_SMOOTH_S) -> TargetSeries:
    """One target's read and write rates over the window, with its events (stats.workload)."""
    sample_s = sampling_s(settings, fs, since_ns, until_ns)
    step_ns = pick_step_ns(until_ns - since_ns, sample_s, MAX_POINTS)
    df = Q.target_bins(settings, fs, since_ns, until_ns, step_ns, metrics=("read_bytes", "write_bytes"), target=target)
    b0, nbins = _grid(since_ns, until_ns, step_ns)
    read = _matrix(df, "read_bytes", [target], b0, nbins)[0]
    write = _matrix(df, "write_bytes", [target], b0, nbins)[0]
    step_s = step_ns / 1e9
    s = W.summarize(b0 * step_ns, step_s, read, write, min_amplitude=min_amplitude, smooth_s=max(smooth_s, step_s),
                    acf_max_lag_s=step_s)
    return TargetSeries(target=target, step_s=step_s, time=_times(b0, nbins, step_ns),
                        read_bps=_nums(read / step_s), write_bps=_nums(write / step_s),
                        read_bytes=float(np.nansum(read)), write_bytes=float(np.nansum(write)),
                        peak_total_bps=s["peak_total_bps"], burstiness=s["burstiness"], min_amplitude_bps=min_amplitude,
                        events=[SeriesEvent(ns_to_iso(e["start_ns"]), ns_to_iso(e["end_ns"]),
                                            ns_to_iso(e["peak_time_ns"]), e["peak_bps"], e["bytes"]) for e in s["events"]])


# ------------------------------------------------------------------------------------------ metadata

@dataclass(frozen=True)
class Metadata(FsWindow):
    """How many metadata operations the MDSs served, by operation, and their bursts: the Metadata
    page's answer (`/api/metadata`). Times ISO 8601 UTC, rates in operations/s per `step_s` bin
    (null: no sample), `events` the rises of the total by at least `min_amplitude_ops_per_s` after
    smoothing over `smooth_s`; `targets` the operations per MDT."""

    step_s: float
    sample_s: float | None
    ops: list[dict]
    time: list[str]
    series: dict[str, list]
    total_ops_per_s: list
    total_ops: float
    peak_ops_per_s: float | None
    mean_ops_per_s: float | None
    burstiness: dict
    events: list[dict]
    min_amplitude_ops_per_s: float
    smooth_s: float
    targets: list[dict]


@_skipping_damaged
def metadata(settings, fs: str, since_ns: int, until_ns: int, min_amplitude: float = DEFAULT_MD_MIN_AMPLITUDE,
             smooth_s: float = W.DEFAULT_SMOOTH_S) -> Metadata:
    """Metadata operation rates by operation (md_<op>, summed over MDTs), with events and burstiness
    of the total: the workload statistics applied to operations instead of bytes."""
    since_ns, until_ns = covered(settings, fs, "md", since_ns, until_ns)
    sample_s = sampling_s(settings, fs, since_ns, until_ns)
    step_ns = pick_step_ns(until_ns - since_ns, sample_s, MAX_POINTS)
    df = Q.target_bins(settings, fs, since_ns, until_ns, step_ns, prefix="md_")
    b0, nbins = _grid(since_ns, until_ns, step_ns)
    step_s = step_ns / 1e9
    ops = sorted(df["metric"].unique().tolist()) if not df.empty else []
    per_op = df.groupby(["metric", "bin"], as_index=False)["amount"].sum() if not df.empty else df
    series, table = {}, []
    total = np.full(nbins, np.nan)
    # a column wider than the samples is their mean: the peaks are the samples' own (60 s samples in
    # 5-minute columns said 2.117/s for a peak of 2.15/s)
    binned = not df.empty and sample_s is not None and step_s > sample_s
    peaks = Q.sample_peaks(settings, fs, since_ns, until_ns, "md_") if binned else {}
    for m in ops:
        a = np.full(nbins, np.nan)
        d = per_op[per_op["metric"] == m]
        c = d["bin"].to_numpy(np.int64) - b0
        ok = (c >= 0) & (c < nbins)
        a[c[ok]] = d["amount"].to_numpy(float)[ok]
        rate = a / step_s
        total = np.where(np.isnan(total) & np.isnan(a), np.nan, np.nan_to_num(total) + np.nan_to_num(a))
        peak, mean = W.peak_and_mean(rate)
        b = W.burstiness(rate)
        table.append({"op": m[3:], "ops": float(np.nansum(a)), "peak_ops_per_s": peaks.get(m, peak), "mean_ops_per_s": mean,
                      "frac_time_below_33pct_peak": b["frac_time_below_33pct_peak"]})
        series[m[3:]] = _nums(rate)
    table.sort(key=lambda r: -r["ops"])
    rate = total / step_s
    peak, mean = W.peak_and_mean(rate)
    peak = peaks.get(None, peak)
    events = W.detect_events(rate, step_s, max(smooth_s, step_s), min_amplitude, total)
    ev = [{"start": ns_to_iso((b0 + e.start) * step_ns), "end": ns_to_iso((b0 + e.end) * step_ns),
           "peak_time": ns_to_iso((b0 + e.peak) * step_ns), "peak": e.peak_bps, "amount": e.bytes} for e in events]
    mdts = df.groupby("target")["amount"].sum().sort_values(ascending=False) if not df.empty else pd.Series(dtype=float)
    return Metadata(fs_all=list_fs(settings), fs=fs, since=ns_to_iso(since_ns), until=ns_to_iso(until_ns),
                    step_s=step_s, sample_s=sample_s, ops=table, time=_times(b0, nbins, step_ns), series=series,
                    total_ops_per_s=_nums(rate), total_ops=float(np.nansum(total)), peak_ops_per_s=peak,
                    mean_ops_per_s=mean, burstiness=W.burstiness(rate), events=ev,
                    min_amplitude_ops_per_s=min_amplitude, smooth_s=max(smooth_s, step_s),
                    targets=[{"target": t, "ops": float(v)} for t, v in mdts.items()])


# ------------------------------------------------------------------------------------------ capacity

@dataclass(frozen=True)
class Capacity(FsWindow):
    """How full the file system and each target are, and when the disk is full: the Capacity page's
    answer (`/api/capacity`). `fullness` per target and `fs_fullness` over time (fractions, per
    `step_s` bin, times ISO 8601 UTC); `targets` each one's latest bytes (used, available), inodes
    and days until full at the growth (bytes/s) of the `growth_window_s` seconds before
    `growth_until` (services.telemetry.capacity.forecast, the same for every window ending at the same data);
    `fullest` the fullest data targets; `lctl` the `lctl dl -t` states and failover, `lustre` the
    recovery state and clients; `no_capacity_data` targets seen without capacity readings."""

    step_s: float
    time: list[str]
    targets: list[dict]
    fullest: list[str]
    fullness: dict[str, list]
    fs_fullness: dict
    growth_window_s: float
    growth_until: str | None
    lctl: LctlState
    lustre: LustreState
    no_capacity_data: list[str]


@_skipping_damaged
def capacity(settings, fs: str, since_ns: int, until_ns: int, top: int = 10) -> Capacity:
    """Fullness per data target and for the file system over the window, the fullest targets at the
    end, days until full (services.telemetry.capacity.forecast: the same for every window ending at the same
    data), inode use, `lctl dl -t` state."""
    since_ns, until_ns = covered(settings, fs, "capacity", since_ns, until_ns)
    step_ns = max(60_000_000_000, -(-((until_ns - since_ns) // 500) // 60_000_000_000) * 60_000_000_000)
    g = Q.gauge_bins(settings, fs, since_ns, until_ns, step_ns, metrics=CAPACITY_METRICS)
    b0, nbins = _grid(since_ns, until_ns, step_ns)
    targets = sorted(g["target"].unique().tolist()) if not g.empty else []
    m = {k: _matrix(g, k, targets, b0, nbins, col="value") for k in CAPACITY_METRICS}
    has_avail = np.isfinite(m["avail_bytes"]).any(axis=1)
    full = np.where(has_avail[:, None], T.fullness(m["capacity_bytes"], m["free_bytes"], m["avail_bytes"]),
                    T.fullness(m["capacity_bytes"], m["free_bytes"]))
    data_rows = [i for i, t in enumerate(targets) if is_data_target(t) and np.isfinite(m["capacity_bytes"][i]).any()]
    fc = forecast(settings, fs, until_ns)
    fs_doc = _fs_fullness(m, data_rows, fc)
    latest = _latest(m, full, targets)
    fs_doc["now"] = _latest_fullness(latest)
    fullest = sorted((r for r in latest if is_data_target(r["target"]) and r["fullness"] is not None),
                     key=lambda r: -r["fullness"])[:top]
    for r in latest:
        f = fc.targets.get(r["target"])
        r["growth_bps"] = f.growth_bps if f else None
        r["days_until_full"] = f.days_until_full if f else None
    lctl = lctl_state(settings, fs, until_ns)
    known = set(targets)
    others = set(lctl.targets) | set(_io_targets(settings, fs, since_ns, until_ns))
    return Capacity(fs_all=list_fs(settings), fs=fs, since=ns_to_iso(since_ns), until=ns_to_iso(until_ns),
                    step_s=step_ns / 1e9, time=_reading_times(g, b0, nbins, step_ns), targets=latest,
                    fullest=[r["target"] for r in fullest], fullness={t: _nums(full[i]) for i, t in enumerate(targets)},
                    fs_fullness=fs_doc, growth_window_s=fc.window_s,
                    growth_until=ns_to_iso(fc.end_ns) if fc.end_ns is not None else None, lctl=lctl,
                    lustre=lustre_state(settings, fs, until_ns),
                    no_capacity_data=sorted(t for t in others - known if is_data_target(t) or t in lctl.targets))


def _reading_times(g: pd.DataFrame, b0: int, nbins: int, step_ns: int) -> list[str]:
    """Each bin's time: when its last reading was taken (an `lfs df` at 00:05 is drawn at 00:05, not at
    the start of a 21-minute bin that began the day before); the bin's start where it holds none."""
    t = (b0 + np.arange(nbins, dtype=np.int64)) * step_ns
    if not g.empty:
        last = g.groupby("bin")["time_ns"].max()
        c = last.index.to_numpy(np.int64) - b0
        ok = (c >= 0) & (c < nbins)
        t[c[ok]] = last.to_numpy(np.int64)[ok]
    return [ns_to_iso(int(v)) for v in t]


def _fs_fullness(m: dict, rows: list[int], fc) -> dict:
    """The file system's fullness in each bin from each data target's latest reading at or before it
    (in the window), and the forecast's used and room bytes, growth and days until full. The last point
    is then the fullness of every target's latest reading, the number `report` and `now` give: summed
    over only the targets reporting in the last bin it was another (one OST read a minute later moved it)."""
    if not rows:
        return {"fullness": [], "targets_reporting": [], "days_until_full": None, "growth_bps": None}
    cap, free, avail = (_carried(m[k][rows]) for k in ("capacity_bytes", "free_bytes", "avail_bytes"))
    ok = np.isfinite(cap) & np.isfinite(free)
    n = ok.sum(axis=0)
    used = np.where(ok, cap - free, 0.0).sum(axis=0)
    room = np.where(ok & np.isfinite(avail), avail, np.where(ok, free, 0.0)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(n > 0, used / (used + room), np.nan)
    return {"fullness": _nums(frac), "targets_reporting": n.tolist(), "used_bytes": fc.used_bytes,
            "room_bytes": fc.room_bytes, "growth_bps": fc.growth_bps, "growth_points": fc.points,
            "days_until_full": fc.days_until_full}


def _carried(a: np.ndarray) -> np.ndarray:
    """Each row's last finite value carried forward along the bins (NaN before its first)."""
    idx = np.where(np.isfinite(a), np.arange(a.shape[1]), -1)
    np.maximum.accumulate(idx, axis=1, out=idx)
    out = np.take_along_axis(a, np.maximum(idx, 0), axis=1)
    out[idx < 0] = np.nan
    return out


def _latest_fullness(latest: list[dict]) -> dict | None:
    """The file system now, from each data target's latest reading (`Capacity.targets`): used and room
    bytes (available, else free) and fullness = used / (used + room). The Capacity page's "now" and last
    point, `report`'s fullness and /api say this one number."""
    rows = [r for r in latest if is_data_target(r["target"]) and r["used_bytes"] is not None]
    if not rows:
        return None
    used = float(sum(r["used_bytes"] for r in rows))
    room = float(sum(r["avail_bytes"] if r["avail_bytes"] is not None else r["capacity_bytes"] - r["used_bytes"]
                     for r in rows))
    return {"fullness": used / (used + room) if used + room > 0 else None, "used_bytes": used, "room_bytes": room,
            "targets": len(rows)}


def _latest(m: dict, full: np.ndarray, targets: list[str]) -> list[dict]:
    out = []
    for i, t in enumerate(targets):
        def last(k):
            v = m[k][i][np.isfinite(m[k][i])]
            return float(v[-1]) if v.size else None
        f = full[i][np.isfinite(full[i])]
        cap, free, total, ffree = last("capacity_bytes"), last("free_bytes"), last("files_total"), last("files_free")
        out.append({"target": t, "capacity_bytes": cap, "used_bytes": None if cap is None or free is None else cap - free,
                    "avail_bytes": last("avail_bytes"), "fullness": float(f[-1]) if f.size else None,
                    "files_total": total, "files_used": None if total is None or ffree is None else total - ffree,
                    "inode_use": None if not total or ffree is None else (total - ffree) / total})
    return out


def _io_targets(settings, fs: str, since_ns: int, until_ns: int) -> list[str]:
    """Targets that moved bytes in the last day of the window (to name those without capacity data)."""
    df = Q.target_bins(settings, fs, max(since_ns, until_ns - 86_400_000_000_000), until_ns, Q.BUCKET_NS * 288,
                       metrics=("read_bytes", "write_bytes"))
    return df["target"].unique().tolist() if not df.empty else []


# ------------------------------------------------ `lctl get_param` readings: brw_stats, recovery, clients

BRW_SHOWN = {"disk_iosize": "Disk I/O size", "io_time": "Disk I/O time (ms, bucket's upper bound)"}
RECOVERY_LABELS = {0: "complete", 1: "inactive", 2: "waiting", 3: "waiting for clients", 4: "recovering",
                   5: "unknown"}
LUSTRE_STATE_METRICS = ("recovery_status", "recovery_completed_clients", "recovery_connected_clients",
                        "recovery_evicted_clients", "connected_clients", "num_exports")


def _bucket_value(name: str) -> float:
    """brw_stats' bucket names in order: 4K < 1M; an unreadable one last."""
    unit = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(name[-1:], 1)
    digits = name[:-1] if unit > 1 else name
    return int(digits) * unit if digits.isdigit() else math.inf


@dataclass(frozen=True)
class BrwTarget:
    """One target's counts per bucket, reads and writes."""

    target: str
    read: list[float]
    write: list[float]


@dataclass(frozen=True)
class BrwHistogram:
    """One brw_stats histogram: its title, bucket names in order, each target's counts, and the counts over
    all targets."""

    title: str
    buckets: list[str]
    targets: list[BrwTarget]
    read: list[float]
    write: list[float]

    def to_json(self) -> dict:
        return {**answer_dict(self), "targets": [answer_dict(t) for t in self.targets]}


@dataclass(frozen=True)
class BrwDistributions(Answer):
    """brw_stats' histograms by name (`disk_iosize`, `io_time`); none without brw_stats."""

    hists: dict[str, BrwHistogram]

    def to_json(self) -> dict:
        return {name: h.to_json() for name, h in self.hists.items()}


def brw_distributions(settings, fs: str, since_ns: int, until_ns: int) -> BrwDistributions:
    """Per target, the I/O sizes and the disk I/O times its brw_stats counted over [since, until)
    (stored per interval by `collect` through lctl, or `import lctl-params`): which sizes reached the
    disks, and how long they took (counts per bucket; the histogram's own `read` and `write` over all
    targets). No histogram without brw_stats."""
    df = Q.target_bins(settings, fs, since_ns, until_ns, max(1, until_ns - since_ns), prefix="brw_")
    if df.empty:
        return BrwDistributions({})
    sums = df.groupby(["metric", "target"], sort=False)["amount"].sum()
    out: dict[str, BrwHistogram] = {}
    for hist, title in BRW_SHOWN.items():
        cells: dict[tuple[str, str, str], float] = {}
        for (metric, target), amount in sums.items():
            h, _, rest = metric[4:].partition(":")
            op, _, bucket = rest.partition(":")
            if h == hist and op in ("read", "write") and bucket:
                cells[(target, op, bucket)] = float(amount)
        if not cells:
            continue
        buckets = sorted({b for _, _, b in cells}, key=_bucket_value)
        targets = sorted({t for t, _, _ in cells})
        rows = [BrwTarget(t, *([cells.get((t, op, b), 0.0) for b in buckets] for op in ("read", "write")))
                for t in targets]
        out[hist] = BrwHistogram(title, buckets, rows, *([sum(getattr(r, op)[i] for r in rows) for i in range(len(buckets))]
                                                         for op in ("read", "write")))
    return BrwDistributions(out)


@dataclass(frozen=True)
class LustreTarget:
    """A target's recovery (failover) state, code and words, the clients recovery completed, had
    connected and evicted, its connected clients and exports, as last read (`seen`); None: not read."""

    recovery: int | None
    recovery_label: str | None
    connected_clients: int | None
    exports: int | None
    recovery_completed_clients: int | None
    recovery_connected_clients: int | None
    recovery_evicted_clients: int | None
    seen: str | None


@dataclass(frozen=True)
class LustreState(Answer):
    """Each target's `LustreTarget`, by name."""

    targets: dict[str, LustreTarget]

    def to_json(self) -> dict:
        return {t: answer_dict(v) for t, v in self.targets.items()}


def lustre_state(settings, fs: str, until_ns: int | None) -> LustreState:
    """Each target's recovery (failover) state and connected clients as last read through
    `lctl get_param` before `until`."""
    df = Q.last_before(settings, fs, until_ns, metrics=LUSTRE_STATE_METRICS)
    out: dict[str, dict] = {}
    for r in df.sort_values("time_ns").itertuples(index=False):
        d = out.setdefault(r.target, {"recovery": None, "recovery_label": None, "connected_clients": None,
                                      "exports": None, "recovery_completed_clients": None,
                                      "recovery_connected_clients": None, "recovery_evicted_clients": None,
                                      "seen": None})
        v = None if r.value != r.value else int(r.value)
        if r.metric == "recovery_status":
            d["recovery"] = v
            d["recovery_label"] = RECOVERY_LABELS.get(v, "unknown") if v is not None else None
        elif r.metric == "num_exports":
            d["exports"] = v
        else:
            d[r.metric] = v
        d["seen"] = ns_to_iso(int(r.time_ns))
    return LustreState({t: LustreTarget(**d) for t, d in sorted(out.items())})


# ------------------------------------------------------------------------------------------- talkers

@dataclass(frozen=True)
class Talkers(FsWindow):
    """Which jobs (and users) moved the most bytes and made the most operations: the Talkers page's
    answer (`/api/talkers`), from Lustre job_stats. Over the window and "now" (its last `now_s`
    seconds); bytes and operation counts; `jobs` the jobs job_stats listed, `jobs_moving_bytes` those
    that moved any; a job the Darshan store knows has its `job_url`."""

    now_s: float
    jobs: int
    jobs_moving_bytes: int
    by_bytes: list[dict]
    by_ops: list[dict]
    now_by_bytes: list[dict]
    now_by_ops: list[dict]
    users: list[dict]


@_skipping_damaged
def talkers(settings, fs: str, since_ns: int, until_ns: int, known_jobs=None, top: int = TOP_JOBS) -> Talkers:
    """Jobs (and users, when the job id names one) moving the most bytes and operations, over the
    window and "now" (the last NOW_S seconds of the window), from Lustre job_stats."""
    since_ns, until_ns = covered(settings, fs, "jobs", since_ns, until_ns)
    window = _jobs(Q.job_totals(settings, fs, since_ns, until_ns))
    now = _jobs(Q.job_totals(settings, fs, until_ns - int(NOW_S * 1e9), until_ns))
    ids = sorted(set(window) | set(now))
    links = known_jobs(ids) if known_jobs else {}
    def rows(jobs: dict, key: str) -> list[dict]:
        # A job that moved 0 B (or made no operation) in the window is listed by job_stats, but is
        # no talker: with little traffic the top list was otherwise all idle jobs.
        out = [{"job": j, **v, "job_url": links[j].job_url if j in links else None, "user": user_of(j, links.get(j))}
               for j, v in jobs.items() if v[key] > 0]
        out.sort(key=lambda r: (-r[key], r["job"]))
        return out[:top]
    return Talkers(fs_all=list_fs(settings), fs=fs, since=ns_to_iso(since_ns), until=ns_to_iso(until_ns), now_s=NOW_S,
                   jobs=len(window), jobs_moving_bytes=sum(1 for v in window.values() if v["bytes"] > 0),
                   by_bytes=rows(window, "bytes"), by_ops=rows(window, "ops"),
                   now_by_bytes=rows(now, "bytes"), now_by_ops=rows(now, "ops"), users=_users(window, links))


def _jobs(df: pd.DataFrame) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for job, g in df.groupby("job"):
        a = dict(zip(g["metric"], g["amount"]))
        r, w = float(a.get("job_read_bytes", 0.0)), float(a.get("job_write_bytes", 0.0))
        ops = float(sum(v for k, v in a.items() if not k.endswith("_bytes")))
        out[str(job)] = {"read_bytes": r, "write_bytes": w, "bytes": r + w, "ops": ops,
                         "md_ops": float(sum(v for k, v in a.items() if k.startswith("job_md_"))),
                         "targets": int(g["targets"].max())}
    return out


def _users(jobs: dict, links: dict[str, JobLink]) -> list[dict]:
    by: dict[str, dict] = {}
    for j, v in jobs.items():
        u = user_of(j, links.get(j))
        if u is None or not (v["bytes"] or v["ops"]):  # idle jobs make no talker of their user
            continue
        d = by.setdefault(u, {"user": u, "jobs": 0, "bytes": 0.0, "ops": 0.0})
        d["jobs"] += 1
        d["bytes"] += v["bytes"]
        d["ops"] += v["ops"]
    return sorted(by.values(), key=lambda r: (-r["bytes"], r["user"]))[:TOP_JOBS]


def job_links(settings) -> Callable[[list[str]], dict[str, JobLink]]:
    """A function job ids -> {job: JobLink} for the ids the stores know: the Darshan store's jobs (by
    numeric job id: a link to the job's page) and the scheduler's (its user). Neither store is created
    when absent (a page view writes nothing)."""
    def lookup(ids: list[str]) -> dict[str, JobLink]:
        numeric = sorted({int(j) for j in ids if j.isdigit() and len(j) < 19})
        if not numeric or not settings.store_exists():
            return {}
        store = open_store(settings)
        try:
            return {j: JobLink(user=d.get("user"), job_url=d.get("job_url")) for j, d in known_jobs(store, numeric).items()}
        finally:
            store.dispose()
    return lookup
