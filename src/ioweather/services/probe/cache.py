"""Probe numbers for the dashboard and `/metrics`, computed once and kept up to date incrementally.

A month of 1 Hz samples is 15.6 M rows per target; reading them takes tens of
seconds, far too long for a page or a scrape. Two things need that month:

- the **baseline** (the expected duration of each op: the median of the last
  30 days, METHODS.md section 1). It is exact (the same function as `ioweather
  slowdown`) and recomputed when older than its TTL. The TTL adapts to its cost:
  100 × the time the last computation took × the targets the cache serves, between
  1 s and 1 h, so refreshing them all costs at most 1 % of a core (per target, 100
  targets made it a whole core: every ~20 ms baseline expired within 2 s and was
  computed again in a Status answer); a 30-day window moves by 0.14 % in an hour. A cheap
  baseline (a young store: `watch` just started) is recomputed on the spot; an
  expensive one in the background, serving the previous value meanwhile.
- **interval rollups** (count, errors, timeouts, quantiles per op and 10 min / 30 min /
  1 h / 4 h interval). An interval that ended more than `lag` ago no longer
  changes, so it is computed once and kept; only the unfinished tail is read
  from the raw samples at each request.

Both come from the store's pieces (issue 21, services/probe/pieces.py): per completed day and
hour of each target, sorted durations and the rollups above, built once (when days are
archived or on first use) and kept in the store, so a restart reads them back instead of
the month of samples: the baseline's order statistics are found exactly from the pieces'
histograms and a few slices, and only the last hour is read as samples. A restart warms every
baseline first and the rollups after them, so that the first Status answer waits for the
baselines only (the dashboard keeps both across a restart in files of the store's home: the baselines
and the settled 10-minute, 30-minute and 1-hour rows, store/probe_rollups_file.py); a page asking for rollups meanwhile computes just its own range. On MariaDB, which
keeps no pieces, both are filled in one pass over the samples, one op and one day at a time
(the biggest array is one op's durations over the baseline window: 21 MB for 30 days at 1 Hz).
Reads go through `store.connect()`, which never blocks a probe writing.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ioweather.errors import UserError
from ioweather.services.probe import pieces as probe_pieces

from ioweather.stats.changepoints import change_points
from ioweather.stats.probe import interval_medians, interval_stats
from ioweather.stats.probe import SLOWDOWN_STATS
from ioweather.stats.rollups import concat_rollups, empty_rollups, rollup_arrays, select_rollups
from ioweather.stats.status import baseline_stats, baseline_stats_from, learning_ops, min_history_s, min_samples
from ioweather.store import probe as probe_store
from ioweather.store import probe_baselines_file, probe_changes_file, probe_rollups_file
from ioweather.store import probe_pieces as pieces_store
from ioweather.store.db import Store
from ioweather.store.probe_aggregates import sample_range

OPS = probe_store.OPS
#: Interval lengths kept as rollups (s); each divides the next and a day.
INTERVALS_S = (600, 1800, 3600, 14400)
DEFAULT_BASELINE_S = 30 * 86400.0
#: Samples reach the store in batches (every 5 s) and a timed-out op is recorded when its
#: deadline passes (60 s by default), so an interval is final only this long after its end.
LAG_S = 90.0
CHUNK_NS = 86_400 * 10**9
TTL_MIN_S, TTL_MAX_S, TTL_COST_FACTOR = 1.0, 3600.0, 100.0
#: A baseline that took less than this (s) to compute, or made of fewer samples, is refreshed in the request.
SYNC_REFRESH_S, YOUNG_SAMPLES = 0.05, 100_000
#: With `keep_recent`, each target's samples of at least this last span are kept in memory (`_kept_read`).
KEEP_NS = 3600 * 10**9
#: With `persist`, the baselines are written to the store's home at most this often (and when the cache closes).
SAVE_EVERY_S = 60.0
#: With `persist`, the settled rows of these lengths are kept in a file across a restart (store/probe_rollups_file.py):
#: the default views' (Status's climate and the marks at 10 min, History at 1 h) and the 30-minute rows the warm-up
#: fills with them. Each divides an hour, so each row lies in one hour and is covered by one stored piece's span.
KEPT_LENGTHS_S = (600, 1800, 3600)
#: The probe's change-point series (`ioweather changes`, the Timeline and History marks): each op's median of
#: 10-minute intervals, compared in log space with the daily cycle taken out.
CHANGE_INTERVAL_S = 600
CHANGE_PERIOD_NS = 86_400 * 10**9
#: `level_changes` answers kept per target: one window is what the pages ask for (History's and Timeline's
#: default windows end at the same settled interval); a few more for a page looking at the past.
CHANGES_KEPT = 4


class Stopped(Exception):
    """The cache was asked to stop (server shutting down) during a long read."""


def _down(t: int, step: int) -> int:
    return (t // step) * step


def _up(t: int, step: int) -> int:
    return -((-t) // step) * step


def _finite_sorted(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return np.sort(v[np.isfinite(v)])


@dataclass(frozen=True)
class ProbeRun:
    """One `probe run` of a target as the store records it when the run starts: where (`host`, `directory`,
    the file system's name `fs`, None for a run an older store could not name), when (`started_ns`), its
    period (`interval_s`) and timeout (seconds), its file and request sizes (bytes), whether it writes
    O_DIRECT and fsyncs, its seed, its pid and ioweather `version`."""

    id: int
    target: str
    host: str
    directory: str
    started_ns: int
    interval_s: float
    block_bytes: int
    file_bytes: int
    pool_files: int
    small_bytes: int
    direct: bool
    fsync: bool
    seed: int
    timeout_s: float
    file_exceeds_memory: bool
    pid: int
    version: str
    fs: str | None


@dataclass
class Baseline:
    """Expected duration (s) per op code over [since, until) and how it was obtained."""

    expected_s: np.ndarray
    samples: np.ndarray
    since_ns: int
    until_ns: int
    computed_ns: int
    compute_s: float
    #: Every slowdown statistic of the baseline per op code (`expected_s` is its median).
    stat_s: dict[str, np.ndarray] = field(default_factory=dict)
    #: Start of each op's oldest baseline sample (ns; -1 without one): how much history the baseline holds.
    first_ns: np.ndarray | None = None
    #: A reference period chosen by the site (`--baseline-from/--baseline-until`) rather than the rolling window.
    reference: bool = False
    #: The probe's period (its latest run's): how many samples the window can hold, which the learning rule scales with.
    period_s: float = 1.0

    def min_samples(self) -> int:
        """The successful samples per op this baseline needs before it judges (stats.status.min_samples)."""
        return min_samples((self.until_ns - self.since_ns) / 1e9, self.period_s)

    def expected(self, stat: str = "median", expected: str = "median") -> np.ndarray:
        """The denominator of `stat`'s slowdown: the baseline median, or with expected="same" the same statistic."""
        return self.stat_s.get(stat, self.expected_s) if expected == "same" else self.expected_s

    def history_s(self, now_ns: int) -> np.ndarray:
        if self.first_ns is None:
            return np.full(len(self.samples), np.inf)
        return np.where(self.first_ns >= 0, (now_ns - self.first_ns) / 1e9, 0.0)

    def learning(self, now_ns: int) -> np.ndarray:
        """Per op: True while a rolling baseline is too young to judge by (never for a reference period)."""
        if self.reference:
            return np.zeros(len(self.samples), bool)
        span_s = (self.until_ns - self.since_ns) / 1e9
        return learning_ops(self.samples, self.history_s(now_ns), min_history_s(span_s), self.min_samples())

    def ttl_s(self, targets: int = 1) -> float:
        """How long (s) this baseline is served before it is computed again, when the cache serves `targets`
        targets: their refreshes together cost at most 1 / TTL_COST_FACTOR of a core (within [TTL_MIN_S, TTL_MAX_S])."""
        return min(TTL_MAX_S, max(TTL_MIN_S, TTL_COST_FACTOR * self.compute_s * max(1, targets)))


@dataclass(frozen=True)
class LevelChange:
    """Where `op`'s 10-minute median shifted: `at_ns` the first interval of the new level, the levels (geometric
    means, s) of the segments on either side, `factor` after / before (None when the level before is 0)."""

    op: str
    at_ns: int
    level_before: float
    level_after: float
    factor: float | None


@dataclass(frozen=True)
class SkippedOp:
    """An op whose series is too short (or too flat) to tell, and why."""

    op: str
    reason: str


@dataclass(frozen=True)
class LevelChanges:
    """The change points of one target's ops (`change_series`) searched over [since, until), by op then time."""

    target: str
    since_ns: int
    until_ns: int
    changes: list[LevelChange]
    skipped: list[SkippedOp]


@dataclass
class _Rollups:
    """The kept rows of one interval length and the range [since, until) they cover, changed together
    under `lock`: held while the range is extended, so that a second request for the same length
    waits for those rows instead of computing them again."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    rows: dict[str, np.ndarray] = field(default_factory=empty_rollups)
    covered: tuple[int, int] | None = None
    #: Counts the replacements of `rows` (a `level_changes` answer is kept for one version).
    version: int = 0
    #: The rows after `rows` (the file's rows after its last whole hour, `_seed`), part of the kept rows until
    #: joined to them (`joined`): joining at the start copied each target's month, ~0.2 s before the first answer.
    more: dict[str, np.ndarray] | None = None
    #: `rollup_values`' last answer for the kept rows: ((since, until, column), the `rows` it was taken from,
    #: per op code the column's finite values sorted).
    sorted: tuple[tuple[int, int, str], dict, list[np.ndarray]] | None = None

    def select(self, since_ns: int, until_ns: int, columns=None) -> dict[str, np.ndarray]:
        """The kept rows (`rows`, then `more`) of intervals starting in [since, until): `columns` of them, or all."""
        got = [select_rollups(p, since_ns, until_ns, columns) for p in (self.rows, self.more) if p is not None]
        # `more` starts after `rows` ends: the two selections joined are in time order without a sort
        return got[0] if len(got) == 1 else {c: np.concatenate([g[c] for g in got]) for c in got[0]}

    def joined(self) -> dict[str, np.ndarray]:
        """`rows` with `more` joined to them (the same rows: `version` and the sorted values stay)."""
        if self.more is not None:
            old, self.rows, self.more = self.rows, concat_rollups([self.rows, self.more]), None
            if self.sorted is not None and self.sorted[1] is old:
                self.sorted = (self.sorted[0], self.rows, self.sorted[2])
        return self.rows


@dataclass
class _Kept:
    """A target's samples from `since_ns` on as its runs `runs` had them (`ProbeCache._kept_read`): those that
    started before `final_ns` no longer change."""

    runs: tuple[int, ...]
    since_ns: int
    final_ns: int
    samples: dict[str, np.ndarray]


@dataclass
class _Target:
    #: Held while the baseline is computed. A `_Rollups.lock` may be taken under it, never the reverse; several
    #: are held together only in INTERVALS_S order (`ProbeCache._fill_together`).
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: The newest samples kept between two `sharing_reads` blocks (`_kept_read`), changed under `kept_lock`.
    kept: _Kept | None = None
    kept_lock: threading.Lock = field(default_factory=threading.Lock)
    #: `recent_medians`' intervals that had ended when their samples were read: (interval_s, runs, [lo, hi),
    #: codes, starts, medians), changed under `kept_lock`.
    medians: tuple | None = None
    rolled: dict[int, _Rollups] = field(default_factory=lambda: {i: _Rollups() for i in INTERVALS_S})
    #: `level_changes`' kept answers, oldest first: ((since, until, penalty, min segment), rows version, answer),
    #: changed under `kept_lock`.
    changes: list[tuple[tuple, int, LevelChanges]] = field(default_factory=list)
    #: Held while `level_changes` searches: a page asking for the window the warm-up is searching waits for it.
    changes_lock: threading.Lock = field(default_factory=threading.Lock)
    baseline: Baseline | None = None
    refreshing: bool = False
    warmed: bool = False
    #: The kept rows of the file written by an earlier process were installed (`_seed`; with `persist`).
    seeded: bool = False
    #: The file's newest samples of this target were looked at (`_kept_read_final`; with `persist`).
    recent_tried: bool = False
    #: Why the last background computation failed (a damaged store), until one succeeds.
    error: UserError | None = None


@dataclass
class _Shared:
    """The samples of `target` from `since_ns` on, read at the first use inside a `sharing_reads` block."""

    target: str
    since_ns: int
    samples: dict[str, np.ndarray] | None = None
    #: With `keep_recent`: the samples that started before this were final when `samples` were read.
    final_ns: int | None = None


class ProbeCache:
    """Baselines and interval rollups of every probe target of one store (thread-safe)."""

    def __init__(self, store: Store, *, baseline_s: float = DEFAULT_BASELINE_S, lag_s: float = LAG_S,
                 clock=time.time_ns, reference: tuple[int, int] | None = None, warm_rollups: bool = True,
                 persist: bool = False, keep_recent: bool = False):
        self.store = store
        #: The dashboard's: baselines kept in a file across a restart (store/probe_baselines_file.py), served
        #: after it as any baseline past its TTL while the warm-up refreshes them one after another.
        self._file = probe_baselines_file.path_of(store) if persist else None
        self._restored: dict[str, Baseline] | None = None
        #: The dashboard's: the settled rollups kept in a file across a restart (store/probe_rollups_file.py).
        self._rows_file = probe_rollups_file.path_of(store) if persist else None
        self._rows_restored: dict[str, dict[int, tuple[int, int, dict]]] | None = None
        #: The file's entries and the call that waits for the store's span signatures they are checked against
        #: (`_read_rows_file`), until `_restored_rows` checks them.
        self._file_kept: tuple[dict[str, dict], Callable[[], dict] | None] | None = None
        #: The call that waits for the store's counts of the file's kept hours, asked for as soon as its header was
        #: read (`_read_rows_file`), until `_check_recent` takes them.
        self._file_counts: Callable[[], dict] | None = None
        self._recent_restored: dict[str, dict] = {}
        #: Per target, the file's rows after its last whole hour ({length: (until, rows)}), valid while its kept
        #: hour is (`_recent_valid`), and that check's verdicts.
        self._rows_extra: dict[str, dict[int, tuple[int, dict]]] = {}
        self._recent_ok: dict[str, bool] = {}
        #: The store's sample counts of the kept hours' spans, checked for every target at once (`_check_recent`).
        self._recent_counts: dict[str, tuple[tuple[int, ...], int, int, int]] = {}
        self._rows_guard = threading.Lock()
        #: The dashboard's: the level-change searches kept across a restart by their input's digest
        #: (store/probe_changes_file.py): the file's, read at the first search, and this process's.
        self._changes_file = probe_changes_file.path_of(store) if persist else None
        self._searches_read: dict[str, list] | None = None
        self._searches: dict[str, list] = {}
        self._saved_at = time.monotonic()
        #: False for a one-shot user that needs only baselines (`slowdown --check`): no month of rollups.
        self.warm_rollups = warm_rollups
        #: The dashboard's: each target's newest samples kept between requests, only what arrived since read
        #: (`_kept_read`); a one-shot command reads what it asks for.
        self.keep_recent = keep_recent
        self.baseline_s = float(baseline_s)
        #: A fixed baseline period [since, until) in ns (a quiet week the site knows) instead of the rolling window.
        self.reference = reference
        self.lag_ns = int(lag_s * 1e9)
        self.clock = clock
        self.stop_event = threading.Event()
        self._targets: dict[str, _Target] = {}
        self._guard = threading.Lock()
        self._names: tuple[float, list[str]] = (0.0, [])
        self._runs: tuple[float, dict[str, tuple[int, ...]]] = (-2.0, {})
        self.warm_s: float | None = None
        self.warming = False
        #: This thread's `sharing_reads` block (`_Shared`), if any.
        self._shared = threading.local()
        #: The dashboard's: called before each target by the background work that follows the first answer (`warm`
        #: after its hold, services.answers.changes.keep_marks), which waits there while pages are being answered.
        self.yield_to: Callable[[], object] | None = None

    def pause(self) -> None:
        """Let the pages being answered go first (`yield_to`), between two targets of background work."""
        if self.yield_to is not None:
            self.yield_to()

    # -- targets ------------------------------------------------------------
    def targets(self) -> list[str]:
        """Known targets but the retired (re-read at most once a second: a new probe appears without a restart)."""
        t, names = self._names
        if time.monotonic() - t > 1.0:
            names = probe_store.active_targets(self.store)
            self._names = (time.monotonic(), names)
        return names

    def _run_ids(self) -> dict[str, tuple[int, ...]]:
        """Every target's run ids, in one query re-made at most once a second (a Status answer asked once a
        target). A run started since is read by `read_samples` anyway; this only tells a kept read that a
        run appeared (`_kept_read`)."""
        t, ids = self._runs
        if time.monotonic() - t > 1.0:
            ids = {}
            for r in probe_store.runs(self.store):
                ids[r["target"]] = ids.get(r["target"], ()) + (r["id"],)
            self._runs = (time.monotonic(), ids)
        return ids

    def _t(self, target: str) -> _Target:
        tc = self._targets.get(target)
        if tc is not None:  # setdefault's default made a _Target (4 x 14 empty arrays, 7 locks) at every call
            return tc
        with self._guard:
            return self._targets.setdefault(target, _Target())

    def latest_run(self, target: str) -> ProbeRun | None:
        """The target's newest probe run, None before its first."""
        rs = probe_store.runs(self.store, target)
        return ProbeRun(**rs[-1]) if rs else None

    # -- raw reads ------------------------------------------------------------
    def read(self, target: str, since_ns: int | None, until_ns: int | None, ops=None) -> dict[str, np.ndarray]:
        """`read_samples`; inside `sharing_reads` a range it covers is cut from its one read, and with
        `keep_recent` a range of the last hour from the kept samples (`_kept_read`): the same arrays, a
        selection keeps the op-then-time order."""
        shared = getattr(self._shared, "block", None)
        if shared is not None and shared.target == target and since_ns is not None and since_ns >= shared.since_ns:
            if shared.samples is None and self.keep_recent:
                shared.samples, shared.final_ns = self._kept_read_final(target, shared.since_ns)
            elif shared.samples is None:
                shared.samples = probe_store.read_samples(self.store, target, since_ns=shared.since_ns)
            s = shared.samples
        elif self.keep_recent and since_ns is not None and since_ns >= self._kept_floor(self.clock()):
            s = self._kept_read(target, since_ns)  # a rollups' tail, a timeline's last minutes
        else:
            return probe_store.read_samples(self.store, target, since_ns=since_ns, until_ns=until_ns, ops=ops)
        sel = s["start_ns"] >= since_ns
        if until_ns is not None:
            sel &= s["start_ns"] < until_ns
        if ops is not None:
            sel &= np.isin(s["op"], [OPS.index(op) for op in ops])
        return {c: v[sel] for c, v in s.items()}

    @staticmethod
    def _kept_floor(now_ns: int) -> int:
        """Where the kept samples start: the Status card's hour or the pieces' raw tail, the earlier."""
        return min(now_ns - KEEP_NS, probe_pieces.tail_since(now_ns))

    def _kept_read(self, target: str, since_ns: int) -> dict[str, np.ndarray]:
        return self._kept_read_final(target, since_ns)[0]

    def _kept_read_final(self, target: str, since_ns: int) -> tuple[dict[str, np.ndarray], int]:
        """`read_samples(target, since_ns=...)` from `since_ns` or the kept floor, the earlier (a superset of
        the rows from `since_ns`: callers cut), reading again only what can still change since this target's
        previous such read: a sample that started more than `lag` before a read was stored by then (samples
        arrive in batches, a timeout at its deadline: the rule the kept rollups follow), so those rows are
        kept and only the newer ones read. A new run of the target or an earlier start reads everything.
        Every dashboard page read the last hour of every target at every answer (the Status card's window
        and sparkline, the rollups' unfinished tail of History, Timeline and the change marks): 21,600 rows
        a target at 1 Hz, ~17 ms, 1.7 s for 100 targets (docs/benchmarks.md, issue 40). Kept: ~40 MB for
        100 targets at 1 Hz."""
        since_ns = min(since_ns, self._kept_floor(self.clock()))
        got = (getattr(self._shared, "recent", None) or {}).get(target)
        if got is not None and got[2] <= since_ns:  # read for this answer with the others (`reading_recent`)
            return got[0], got[1]
        tc = self._t(target)
        runs = self._run_ids().get(target, ())
        with tc.kept_lock:
            k = self._take_restored(target, tc, runs)
            # before the read: every sample that started before this was in the store when it was read
            final = min(self.clock(), time.time_ns()) - self.lag_ns
            if k is None or k.runs != runs or since_ns < k.since_ns:
                cols = probe_store.read_samples(self.store, target, since_ns=since_ns)
            else:
                frm = max(since_ns, k.final_ns)
                cols = _merge_kept(k.samples, since_ns, frm, probe_store.read_samples(self.store, target, since_ns=frm))
            tc.kept = _Kept(runs, since_ns, final, cols)
            return cols, final

    def _take_restored(self, target: str, tc: _Target, runs: tuple[int, ...]) -> _Kept | None:
        """The target's kept samples, those an earlier process kept installed first if still valid (`_restored_recent`,
        once; with `persist`). The caller holds `tc.kept_lock`."""
        if tc.kept is None and self._rows_file is not None and not tc.recent_tried:
            tc.recent_tried = True
            k, medians = self._restored_recent(target, runs)
            if k is not None:
                tc.kept = k
                tc.medians = tc.medians or medians
        return tc.kept

    @contextlib.contextmanager
    def reading_recent(self, targets: list[str]):
        """Inside the block, this thread's kept reads (`_kept_read_final`) of `targets` come from one read of what
        arrived since each one's previous read, made here for them all (`store.probe.read_recent_many`: 6
        statements instead of ~8 a target; a Status answer of 100 targets made 800). The same rows and kept
        state as reading each target on its own; a target without kept samples (or a store where that read does
        not apply) is read on its own as before."""
        outer = getattr(self._shared, "recent", None)
        self._shared.recent = self._read_recent(targets) if self.keep_recent else {}
        try:
            yield
        finally:
            self._shared.recent = outer

    def _read_recent(self, targets: list[str]) -> dict[str, tuple[dict[str, np.ndarray], int, int]]:
        floor = self._kept_floor(self.clock())
        self._runs = (-2.0, {})  # the runs as of now (a run started within the second is read too)
        runs = self._run_ids()
        plan = {}
        for t in targets:
            tc = self._t(t)
            with tc.kept_lock:
                k = tc.kept
            if k is not None and k.runs == runs.get(t, ()) and k.since_ns <= floor:
                plan[t] = k
        if len(plan) < 2:
            return {}
        # before the read: every sample that started before this was in the store when it was read
        final = min(self.clock(), time.time_ns()) - self.lag_ns
        frm = {t: max(floor, k.final_ns) for t, k in plan.items()}
        new = probe_store.read_recent_many(self.store, {t: runs[t] for t in plan}, min(frm.values()))
        if new is None:
            return {}
        out = {}
        for t, k in plan.items():
            tc = self._t(t)
            with tc.kept_lock:
                if tc.kept is not k:  # read meanwhile (the warm-up, another page): that read stands
                    continue
                n = new[t]
                sel = n["start_ns"] >= frm[t]
                cols = _merge_kept(k.samples, floor, frm[t], {c: v[sel] for c, v in n.items()})
                tc.kept = _Kept(k.runs, floor, final, cols)
                out[t] = (cols, final, floor)
        return out

    def recent_medians(self, target: str, since_ns: int, interval_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`stats.probe.interval_medians` (op codes, interval starts, medians) of `target`'s samples from
        `since_ns` on: the Status card's sparkline, 60 minutes of 6 ops, grouped and sorted 21,600 rows a card
        at every answer. Inside a `sharing_reads` block of a `keep_recent` cache, the whole intervals that had
        ended before their samples were final (`_kept_read`) are kept and only the others computed: the same
        numbers, each interval's median of the same samples (the first, cut by `since_ns`, always computed)."""
        s = self.read(target, since_ns, None)
        shared = getattr(self._shared, "block", None)
        final = shared.final_ns if shared is not None and shared.target == target else None
        if final is None:
            return interval_medians(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s)
        step = int(round(interval_s * 1e9))
        whole = _up(since_ns, step)  # the intervals from here on hold every sample of theirs from `since_ns` on
        done = _down(final, step)  # the intervals before this ended before `final`: their samples are final
        tc = self._t(target)
        runs = self._run_ids().get(target, ())
        with tc.kept_lock:
            m = tc.medians
        frm = whole
        old = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64))
        if m is not None and m[0] == step and m[1] == runs and m[2] <= whole:
            frm = max(whole, min(m[3], done))
            keep = (m[5] >= whole) & (m[5] < frm)
            old = (m[4][keep], m[5][keep], m[6][keep])
        sel = (s["start_ns"] < whole) | (s["start_ns"] >= frm)
        new = interval_medians(s["op"][sel], s["start_ns"][sel], s["duration_ns"][sel], s["status"][sel], interval_s)
        codes, starts, medians = (np.concatenate([a, np.asarray(b, a.dtype)]) for a, b in zip(old, new))
        order = np.lexsort((starts, codes))  # interval_medians' order: by op, then time
        codes, starts, medians = codes[order], starts[order], medians[order]
        if done > whole:
            ended = (starts >= whole) & (starts < done)
            with tc.kept_lock:
                tc.medians = (step, runs, whole, done, codes[ended], starts[ended], medians[ended])
        return codes, starts, medians

    @contextlib.contextmanager
    def sharing_reads(self, target: str, since_ns: int):
        """Inside the block, this thread's reads of `target`'s samples from `since_ns` on (widened to the
        pieces' raw tail) come from one read: a Status answer needs the last hour for its window and
        sparkline, the rollups' tail and the baseline's raw tail, and read it 3-4 times before."""
        outer = getattr(self._shared, "block", None)
        self._shared.block = _Shared(target, min(since_ns, probe_pieces.tail_since(self.clock())))
        try:
            yield
        finally:
            self._shared.block = outer

    def _scan(self, target: str, roll: tuple[int, int] | None, lengths: tuple[int, ...],
              base: tuple[int, int] | None) -> tuple[dict[int, dict], Baseline | None]:
        """Rollups over `roll` for `lengths` and the baseline over `base`: from the stored pieces of completed
        hours and days (issue 21) where the store keeps them, else from every sample."""
        if not probe_pieces.enabled(self.store):
            return self._scan_samples(target, roll, lengths, base)
        t0 = time.perf_counter()
        now = self.clock()
        read = functools.partial(self.read, target)  # inside `sharing_reads`, the raw tail comes from its read
        rolled = (probe_pieces.rollups_many(self.store, target, lengths, roll[0], roll[1], now, read=read)
                  if roll and roll[0] < roll[1] else {i: empty_rollups() for i in lengths})
        if base is None:
            return rolled, None
        stat_s = {st: np.full(len(OPS), np.nan) for st in SLOWDOWN_STATS}
        ops = probe_pieces.baseline(self.store, target, base[0], base[1], now, read=read) if base[0] < base[1] else []
        for code, o in enumerate(ops):
            for st, v in baseline_stats_from(o.n, o.sum_ns, o.order_ns).items():
                stat_s[st][code] = v
        counts = np.array([o.n for o in ops] or [0] * len(OPS), np.int64)
        first = np.array([o.first_ok_ns for o in ops] or [-1] * len(OPS), np.int64)
        return rolled, Baseline(stat_s["median"].copy(), counts, base[0], base[1], self.clock(), time.perf_counter() - t0,
                                stat_s, first, self.reference is not None, probe_pieces.period_s(self.store, target))

    def _scan_samples(self, target: str, roll: tuple[int, int] | None, lengths: tuple[int, ...],
                      base: tuple[int, int] | None) -> tuple[dict[int, dict], Baseline | None]:
        """One pass, op by op and day by day: rollups over `roll` for `lengths`, baseline medians over `base`."""
        t0 = time.perf_counter()
        spans = [r for r in (roll, base) if r is not None and r[0] < r[1]]
        parts: dict[int, list] = {i: [] for i in lengths}
        expected = np.full(len(OPS), np.nan)
        stat_s = {st: np.full(len(OPS), np.nan) for st in SLOWDOWN_STATS}
        first = np.full(len(OPS), -1, np.int64)
        counts = np.zeros(len(OPS), np.int64)
        have = sample_range(self.store, target) if spans else None
        if have is not None:
            # Only where samples exist: a young store would otherwise cost 30 empty day-queries per op.
            lo = max(min(s[0] for s in spans), have[0])
            hi = min(max(s[1] for s in spans), have[1] + 1)
            for code, op in enumerate(OPS):
                durations = []
                c0 = lo
                while c0 < hi:
                    if self.stop_event.is_set():
                        raise Stopped()
                    c1 = min(hi, _down(c0, CHUNK_NS) + CHUNK_NS)
                    s = self.read(target, c0, c1, ops=[op])
                    if roll is not None:
                        sel = (s["start_ns"] >= roll[0]) & (s["start_ns"] < roll[1])
                        if sel.any():
                            for i in lengths:
                                parts[i].append(rollup_arrays(interval_stats(
                                    s["op"][sel], s["start_ns"][sel], s["duration_ns"][sel], s["status"][sel], i)))
                    if base is not None:
                        sel = (s["start_ns"] >= base[0]) & (s["start_ns"] < base[1]) & (s["status"] == 0)
                        durations.append(s["duration_ns"][sel])
                        if first[code] < 0 and sel.any():
                            first[code] = int(s["start_ns"][sel].min())
                    c0 = c1
                if base is not None:
                    d = np.concatenate(durations) if durations else np.empty(0, np.int64)
                    del durations
                    counts[code] = len(d)
                    # The median bit-identical to `ioweather slowdown`'s baseline_medians, without its sort's memory.
                    for st, v in baseline_stats(d).items():
                        stat_s[st][code] = v
                    expected[code] = stat_s["median"][code]
                    del d
        rolled = {i: concat_rollups(parts[i]) for i in lengths}
        baseline = None
        if base is not None:
            baseline = Baseline(expected, counts, base[0], base[1], self.clock(), time.perf_counter() - t0,
                                stat_s, first, self.reference is not None, probe_pieces.period_s(self.store, target))
        return rolled, baseline

    # -- baseline -------------------------------------------------------------
    def baseline_window(self, now_ns: int) -> tuple[int, int]:
        """[since, until) of the baseline: the reference period, or the `baseline_s` before now."""
        return self.reference if self.reference is not None else (now_ns - int(self.baseline_s * 1e9), now_ns)

    def baseline(self, target: str, wait: bool = True) -> Baseline | None:
        """The target's expected durations; stale values are served while a refresh runs in the background.

        With wait=False, None instead of waiting when there is no value yet (it is then computed
        in the background): `/metrics` must answer within Prometheus' scrape timeout.
        """
        tc = self._t(target)
        if not wait and tc.baseline is None:
            with self._guard:
                # The warm-up thread is computing every target's baseline: never a second computation beside it.
                start = not tc.refreshing and not self.warming
                tc.refreshing = tc.refreshing or start
            if start:
                threading.Thread(target=self._first, args=(target,), name=f"baseline-{target[:20]}",
                                 daemon=True).start()
            if tc.error is not None:
                raise tc.error
            return None
        try:
            return self._baseline(target, tc, wait)
        except UserError as e:
            tc.error = e  # remembered for /metrics (store_up 0), whose scrapes never wait for a computation
            raise

    def _baseline(self, target: str, tc: _Target, wait: bool) -> Baseline | None:
        with tc.lock:
            self._ensure_warm(target, tc)
            b = tc.baseline
            if b is None:
                now = self.clock()
                _, tc.baseline = self._scan(target, None, (), self.baseline_window(now))
                tc.error = None
                return tc.baseline
            # A young baseline (a probe that just started) changes fast and costs little: refresh it in the
            # request, and at once while an op has no baseline sample (no slowdown can be shown without).
            young = int(b.samples.sum()) < YOUNG_SAMPLES
            expired = (self.clock() - b.computed_ns) / 1e9 > b.ttl_s(len(self._targets)) or \
                (young and bool((b.samples == 0).any()))
            if expired and (young or b.compute_s < SYNC_REFRESH_S):
                now = self.clock()
                _, tc.baseline = self._scan(target, None, (), self.baseline_window(now))
                tc.error = None
                return tc.baseline
            if expired and not tc.refreshing:
                tc.refreshing = True
                threading.Thread(target=self._refresh, args=(target,), name=f"baseline-{target[:20]}",
                                 daemon=True).start()
            if tc.error is not None and not wait:
                raise tc.error
            return b

    def _first(self, target: str) -> None:
        tc = self._t(target)
        try:
            self.baseline(target)
        except UserError as e:  # a damaged store: /metrics reports it (store_up 0) until a retry succeeds
            tc.error = e
        except Exception:  # noqa: BLE001 - the next request retries, and reports the error itself
            pass
        finally:
            tc.refreshing = False

    def _refresh(self, target: str) -> None:
        tc = self._t(target)
        try:
            now = self.clock()
            _, b = self._scan(target, None, (), self.baseline_window(now))
            with tc.lock:
                tc.baseline = b
            tc.error = None
            if self._file is not None and not self.warming and time.monotonic() - self._saved_at > SAVE_EVERY_S:
                self.save()
        except Stopped:
            pass
        except UserError as e:
            tc.error = e
        except Exception:  # noqa: BLE001 - a failed refresh keeps the previous baseline; the next request retries
            pass
        finally:
            tc.refreshing = False

    # -- rollups ----------------------------------------------------------------
    def settled_ns(self, step_ns: int) -> int:
        """End of the last interval of length `step_ns` that can no longer change."""
        return _down(self.clock() - self.lag_ns, step_ns)

    def rollups(self, target: str, interval_s: int, since_ns: int, until_ns: int) -> dict[str, np.ndarray]:
        """Rollup rows of intervals starting in [since, until) (since rounded down to the grid), tail included."""
        if interval_s not in INTERVALS_S:
            raise ValueError(f"interval must be one of {INTERVALS_S}")
        a = _down(since_ns, interval_s * 10**9)
        tc = self._t(target)
        if not tc.warmed and not self._pieces:  # the warm-up's one pass fills these too: wait, not read twice
            with tc.lock:
                self._ensure_warm(target, tc)
        self._seed(target, tc)
        cached, hi = self._cover(target, tc.rolled[interval_s], interval_s, a, until_ns)
        tail_from = max(a, hi)
        if until_ns <= tail_from:
            return cached
        s = self.read(target, tail_from, until_ns)
        tail = rollup_arrays(interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s))
        return concat_rollups([cached, tail])

    def rollup_values(self, target: str, interval_s: int, since_ns: int, until_ns: int, column: str) -> list[np.ndarray]:
        """Per op code, the finite values of `column` of `rollups(target, interval_s, since_ns, until_ns)`, sorted.

        The Status card's climate is a month of 10-minute values per op: 100 cards selected and sorted
        26,000 kept rows at every answer, though they change once per settled interval. The kept rows'
        values are sorted once per settled interval (and per change of the kept rows) and only the
        unfinished tail's few values merged in: the same numbers as sorting `rollups`' column."""
        if interval_s not in INTERVALS_S:
            raise ValueError(f"interval must be one of {INTERVALS_S}")
        a = _down(since_ns, interval_s * 10**9)
        tc = self._t(target)
        if not tc.warmed and not self._pieces:
            with tc.lock:
                self._ensure_warm(target, tc)
        self._seed(target, tc)
        r = tc.rolled[interval_s]
        step = interval_s * 10**9
        b = min(_up(until_ns, step), self.settled_ns(step))
        with r.lock:
            if a < b:
                self._extend(target, r, interval_s, a, b)
            hi = r.covered[1] if r.covered else a
            key = (a, min(until_ns, hi), column)
            if r.sorted is None or r.sorted[0] != key or r.sorted[1] is not r.rows:
                # the two columns it needs, not a copy of every column of the month (select_rollups)
                got = r.select(a, key[1], ("op", column))
                ops, values = got["op"], got[column]
                r.sorted = (key, r.rows, [_finite_sorted(values[ops == code]) for code in range(len(OPS))])
            settled = r.sorted[2]
        tail_from = max(a, hi)
        if until_ns <= tail_from:
            return list(settled)
        s = self.read(target, tail_from, until_ns)
        tail = rollup_arrays(interval_stats(s["op"], s["start_ns"], s["duration_ns"], s["status"], interval_s))
        out = []
        for code in range(len(OPS)):
            t = _finite_sorted(tail[column][tail["op"] == code])
            out.append(np.insert(settled[code], np.searchsorted(settled[code], t), t) if len(t) else settled[code])
        return out

    def _cover(self, target: str, r: _Rollups, interval_s: int, a: int, until_ns: int) -> tuple[dict, int]:
        """The kept rows of [a, until) once every settled interval of it is kept, and where the kept rows end."""
        step = interval_s * 10**9
        b = min(_up(until_ns, step), self.settled_ns(step))
        with r.lock:
            if a < b:
                self._extend(target, r, interval_s, a, b)
            return r.select(a, until_ns), r.covered[1] if r.covered else a

    def _extend(self, target: str, r: _Rollups, interval_s: int, a: int, b: int) -> None:
        have = r.covered
        if have is not None and have[0] <= a:
            if have[1] < b:  # what settled since, beside the month (`more`): a restart's first answer copied it
                new = self._scan(target, (have[1], b), (interval_s,), None)[0][interval_s]
                if len(new["op"]):
                    r.more = concat_rollups([new] if r.more is None else [r.more, new])
                    r.version += 1
                    if len(r.more["op"]) > len(r.rows["op"]) // 8:  # a copy of the month now and then, not each time
                        r.joined()
                r.covered = (have[0], b)
            return
        todo = [(a, b)] if have is None else [(a, have[0]), (have[1], b)]
        parts = [r.rows] if r.more is None else [r.rows, r.more]
        for lo, hi in todo:
            if lo < hi:
                rolled, _ = self._scan(target, (lo, hi), (interval_s,), None)
                parts.append(rolled[interval_s])
        if len(parts) > 1 + (r.more is not None):  # nothing new (most requests): not a copy of the kept month
            r.rows, r.more = concat_rollups(parts), None
            r.version += 1
        r.covered = (a, b) if have is None else (min(a, have[0]), max(b, have[1]))

    # -- change points ------------------------------------------------------------
    def change_series(self, target: str, since_ns: int, until_ns: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per op code, the starts (ns) and medians (s) of `target`'s 10-minute intervals starting in
        [since, until): the series `ioweather changes` and the pages' marks search (`level_changes`)."""
        r = self.rollups(target, CHANGE_INTERVAL_S, since_ns, until_ns)
        return [(r["start_ns"][r["op"] == code], r["median_s"][r["op"] == code]) for code in range(len(OPS))]

    def level_changes(self, target: str, since_ns: int, until_ns: int, *, penalty_per_log_n: float,
                      min_segment: int) -> LevelChanges:
        """`stats.changepoints.change_points` of each op's `change_series` over [since, until), as `ioweather
        changes` searches them (log space, the daily cycle taken out).

        The search costs 2-3.5 ms a series, 600 series for 100 targets at every History request
        (docs/benchmarks.md, issue 40). When `until` is at or before the end of the last settled 10-minute
        interval (`settled_ns`) the series is made of kept rows only, which no longer change: the answer is
        kept for that window and version of the kept rows, so it is computed again only when the window moves
        (the pages' windows end at the last settled interval: when a new one settles) or the kept rows are
        replaced. A window reaching into unsettled intervals is computed at each call."""
        key = (since_ns, until_ns, penalty_per_log_n, min_segment)
        tc = self._t(target)
        hit = self._kept_changes(tc, key)
        if hit is not None:
            return hit
        with tc.changes_lock:
            hit = self._kept_changes(tc, key)
            return hit if hit is not None else self._search_changes(target, tc, key)

    @staticmethod
    def _kept_changes(tc: _Target, key: tuple) -> LevelChanges | None:
        with tc.kept_lock:
            hit = next((e for e in tc.changes if e[0] == key), None)
        return hit[2] if hit is not None and hit[1] == tc.rolled[CHANGE_INTERVAL_S].version else None

    def _search_changes(self, target: str, tc: _Target, key: tuple) -> LevelChanges:
        since_ns, until_ns, penalty_per_log_n, min_segment = key
        step = CHANGE_INTERVAL_S * 10**9
        r = tc.rolled[CHANGE_INTERVAL_S]
        series = self.change_series(target, since_ns, until_ns)
        version = r.version  # read after the rollups: covering this window may have replaced the rows
        settled = until_ns <= self.settled_ns(step)
        digest = _series_digest(target, key, series) if settled and self._changes_file is not None else None
        kept = self._kept_search(digest)
        if kept is not None:
            changes = [LevelChange(op, at, before, after, factor) for op, at, before, after, factor in kept[0]]
            skipped = [SkippedOp(op, reason) for op, reason in kept[1]]
        else:
            changes, skipped = [], []
            for code, (times, medians) in enumerate(series):
                try:
                    found = change_points(medians, log=True, penalty_per_log_n=penalty_per_log_n,
                                          min_segment=min_segment, times_ns=times, period_ns=CHANGE_PERIOD_NS)
                except UserError as e:
                    skipped.append(SkippedOp(OPS[code], str(e)))
                    continue
                changes += [LevelChange(OPS[code], int(times[c.index]), c.level_before, c.level_after, c.factor)
                            for c in found]
        if digest is not None:
            with self._rows_guard:
                self._searches.pop(digest, None)
                self._searches[digest] = [[[c.op, c.at_ns, c.level_before, c.level_after, c.factor] for c in changes],
                                          [[k.op, k.reason] for k in skipped]]
                # the newest searches only, as many as the targets' kept windows (a server runs for months)
                while len(self._searches) > CHANGES_KEPT * max(1, len(self._targets)):
                    self._searches.pop(next(iter(self._searches)))
        out = LevelChanges(target, since_ns, until_ns, changes, skipped)
        if settled:
            with tc.kept_lock:
                tc.changes = [e for e in tc.changes if e[0] != key][-(CHANGES_KEPT - 1):] + [(key, version, out)]
        return out

    def _kept_search(self, digest: str | None) -> list | None:
        """The result an earlier process found for the very same search (`_series_digest`), if it kept it."""
        if digest is None:
            return None
        with self._rows_guard:
            if self._searches_read is None:
                self._searches_read = probe_changes_file.load(self._changes_file, self._file_key()["store"])
            return self._searches.get(digest) or self._searches_read.get(digest)

    def save_searches(self) -> bool:
        """Write the settled windows' searches of this process (with `persist`; the file's are replaced)."""
        with self._rows_guard:
            entries = dict(self._searches)
        return self._changes_file is not None and bool(entries) and \
            probe_changes_file.save(self._changes_file, self._file_key()["store"], entries)

    # -- warm-up ----------------------------------------------------------------
    @property
    def _pieces(self) -> bool:
        return probe_pieces.enabled(self.store)

    def _rollup_since(self, now_ns: int) -> int:
        """Where the warm-up's rollups start: the baseline window's start on the grid of every interval length."""
        return _down(now_ns - int(self.baseline_s * 1e9), max(INTERVALS_S) * 10**9)

    def _ensure_warm(self, target: str, tc: _Target) -> None:
        """The first use of a target fills its baseline (the caller holds `tc.lock`).

        Whoever comes first (the warm-up thread, a page, a scrape's background thread) does it; the others
        wait for it. From stored pieces the rollups are a separate read, filled after every target's
        baseline (`warm`) or by the request that asks for them; on a store without pieces (MariaDB) the
        rollups of the baseline window come from the same pass over the samples, as reading the month
        a second time would double the wait.
        """
        if tc.warmed:
            return
        now = self.clock()
        if tc.baseline is None and self._pieces:
            tc.baseline = self._restore().get(target)
        lengths = INTERVALS_S if self.warm_rollups and not self._pieces else ()
        hi = self.settled_ns(max(INTERVALS_S) * 10**9)
        roll = (min(self._rollup_since(now), hi), hi)
        base = self.baseline_window(now) if tc.baseline is None else None
        if lengths or base is not None:
            rolled, b = self._scan(target, roll if lengths else None, lengths, base)
            for i in lengths:
                r = tc.rolled[i]
                with r.lock:
                    r.rows, r.covered = rolled[i], roll
                    r.version += 1
            if b is not None:
                tc.baseline = b
        tc.warmed = True

    def warm(self, hold: Callable[[], object] | None = None) -> None:
        """Fill the baseline of every target (with `persist`, then install the settled rollups an earlier process
        kept; with `keep_recent`, then its kept last hour), then the rollups of the baseline window (after a
        restart with the kept rows, only the intervals that settled since and the 4-hour rows), 10-, 30-minute
        and 1-hour ones first (the Status page's climate): the first Status answer waits for nothing else.
        `hold()` is called between the two (the dashboard waits there for its first answer to go out)."""
        t0 = time.perf_counter()
        self.warming = True
        restored = self._restore()
        stale = []
        try:
            names = self.targets()
            if self.keep_recent:  # the kept hours an earlier process left, checked at once (a baseline reads them)
                self._check_recent(names)
            for target in names:
                tc = self._t(target)
                with tc.lock:
                    self._ensure_warm(target, tc)
                    b = tc.baseline
                    if b is not None and b is restored.get(target) and \
                            (self.clock() - b.computed_ns) / 1e9 > b.ttl_s(len(names)):
                        # refreshed below, one at a time: not one thread per target at the first Status answer.
                        # One still within its TTL is served as the process before would have (refreshed when it
                        # expires): after a quick restart, 100 targets' refreshes were ~2-5 s of CPU beside the
                        # first pages for values the previous process had just computed (issue 40).
                        tc.refreshing = True
                        stale.append(target)
            for target in names:  # the settled rollups an earlier process kept (with `persist`): one file read
                if self.stop_event.is_set():
                    return
                self._seed(target, self._t(target))
            if self.keep_recent:  # each target's last hour, which every page's first answer reads
                runs = self._run_ids()
                for target in names:  # an earlier process's kept hours (checked at once above) installed first,
                    tc = self._t(target)
                    with tc.kept_lock:
                        self._take_restored(target, tc, runs.get(target, ()))
                with self.reading_recent(names):  # so that what came after them is one read for them all
                    for target in names:
                        if self.stop_event.is_set():
                            return
                        self._kept_read(target, self._kept_floor(self.clock()))
        except Stopped:
            return
        finally:
            self.warming = False
        if self.warm_rollups and self._pieces:
            if hold is not None:
                t_hold = time.perf_counter()
                hold()
                t0 += time.perf_counter() - t_hold  # warm_s is the work, not the wait
            # after the pages being answered (`pause`): the hold ends at the first response, which can be a static
            # file's (a client polling the favicon for the server to listen), and the copy went on beside the first
            # Status answer (~0.3 s, issue 40)
            self._own_rows()
            now = self.clock()
            for target in names:
                self.pause()
                if self.stop_event.is_set():
                    return
                self._fill_together(target, self._rollup_since(now))
            for interval_s in INTERVALS_S:  # each length's own settled end, and the 4-hour rows
                for target in names:
                    self.pause()
                    if self.stop_event.is_set():
                        return
                    self._cover(target, self._t(target).rolled[interval_s], interval_s, self._rollup_since(now), now)
        for target in stale:
            self.pause()
            if self.stop_event.is_set():
                return
            self._refresh(target)
        self.warm_s = time.perf_counter() - t0
        self.save()

    def _fill_together(self, target: str, since_ns: int) -> None:
        """The 10-minute, 30-minute and 1-hour rows of [since, the last settled hour) from one read of the
        pieces (`pieces.rollups_many`) for the lengths none of which a request has filled yet: one length at a
        time, a restart decoded every piece three times (100 targets x 3 days: 2.7 s of CPU, issue 40).
        Each length's rows up to its own settled end come after, by `_cover`."""
        tc = self._t(target)
        self._seed(target, tc)
        lengths = tuple(i for i in INTERVALS_S if probe_pieces.HOUR_NS % (i * 10**9) == 0)
        until = self.settled_ns(max(lengths) * 10**9)  # on every length's grid: whole intervals only
        if since_ns >= until:
            return
        with contextlib.ExitStack() as held:
            for i in lengths:  # held while filled, as `_extend` holds one: a request for them waits, not computes
                held.enter_context(tc.rolled[i].lock)
            if any(tc.rolled[i].covered is not None for i in lengths):
                return  # a request filled one before: each length by `_cover`
            rolled, _ = self._scan(target, (since_ns, until), lengths, None)
            for i in lengths:
                r = tc.rolled[i]
                r.rows, r.covered = rolled[i], (since_ns, until)
                r.version += 1

    # -- kept across a restart ------------------------------------------------------
    def _file_key(self) -> dict:
        # the URL's hash, not the URL: a PostgreSQL URL may carry a password
        return {"store": hashlib.sha256(str(self.store.url).encode()).hexdigest()[:16],
                "baseline_s": self.baseline_s, "reference": list(self.reference) if self.reference else None}

    def _restore(self) -> dict[str, Baseline]:
        """The baselines of the file written by an earlier process (read once; {} without `persist`)."""
        if self._restored is None:
            got = {}
            if self._file is not None:
                for target, e in probe_baselines_file.load(self._file, self._file_key(), self.clock(),
                                                           TTL_MAX_S).items():
                    try:
                        got[target] = Baseline(
                            np.array(e["stat_s"]["median"], float), np.array(e["samples"], np.int64),
                            int(e["since_ns"]), int(e["until_ns"]), int(e["computed_ns"]), float(e["compute_s"]),
                            {st: np.array(v, float) for st, v in e["stat_s"].items()},
                            np.array(e["first_ns"], np.int64), self.reference is not None)
                    except (KeyError, TypeError, ValueError):
                        continue
            self._restored = got
        return self._restored

    def _rows_key(self) -> dict:
        return {"store": self._file_key()["store"], "lengths": list(KEPT_LENGTHS_S)}

    def _seed(self, target: str, tc: _Target) -> None:
        """Install the target's rows of the file written by an earlier process (with `persist`), once and before
        any of its kept lengths is filled: a length a request filled first keeps its own rows."""
        if self._rows_file is None or tc.seeded:
            return
        with tc.lock:
            if tc.seeded:
                return
            got = self._restored_rows().get(target)
            if got is not None:
                extra = self._rows_extra.pop(target, None) or {}
                if extra and not self._recent_valid(target, self._run_ids().get(target, ())):
                    extra = {}
                for i, (lo, hi, rows) in got.items():
                    r = tc.rolled[i]
                    with r.lock:
                        if r.covered is None:
                            until, more = extra.get(i, (hi, None))
                            # by time then op as the month is (a few rows): the two blocks read as one
                            r.more = None if more is None else concat_rollups([more])
                            r.rows, r.covered = rows, (lo, until)
                            r.version += 1
            tc.seeded = True
            with self._rows_guard:  # installed: from now on `_own_rows` and `save_rows` take the target's own rows
                self._rows_restored.pop(target, None)

    def _restored_rows(self) -> dict[str, dict[int, tuple[int, int, dict]]]:
        """Per target, the file's rows still valid: over the longest run of consecutive spans whose stored pieces
        are the ones they were computed beside (`_tiles`), each length within its own range, as {length: (lo, hi,
        rows of [lo, hi))}; read once."""
        with self._rows_guard:
            if self._rows_restored is None:
                got: dict[str, dict[int, tuple[int, int, dict]]] = {}
                self._read_rows_file()
                kept, signatures = self._file_kept
                try:
                    sigs = signatures() if signatures is not None else {}
                except BaseException:
                    self._file_kept = None  # read again by the next call, as the query is asked again
                    raise
                self._file_kept = ({}, None)  # the rows are referenced from `got` only
                for target, e in kept.items():
                    have = sigs.get(target, {})
                    best, run = None, None
                    for start, span, *sig in e["tiles"]:
                        lo, hi = max(start, e["lo_ns"]), min(start + span, e["hi_ns"])
                        if have.get((start, span)) == tuple(sig) and lo < hi:
                            run = (run[0], hi) if run is not None and run[1] == lo else (lo, hi)
                            if best is None or run[1] - run[0] > best[1] - best[0]:
                                best = run
                        else:
                            run = None
                    if best == (e["lo_ns"], e["hi_ns"]):  # every span unchanged: the rows as written (all in it)
                        got[target] = {i: (e["starts"][i], best[1], rows) for i, rows in e["lengths"].items()}
                        if e["extra"]:
                            self._rows_extra[target] = e["extra"]
                    elif best is not None:
                        got[target] = {i: (lo, best[1], select_rollups(rows, lo, best[1]))
                                       for i, rows in e["lengths"].items()
                                       if (lo := max(best[0], e["starts"][i])) < best[1]}
                self._rows_restored = got
            return self._rows_restored

    def _read_rows_file(self) -> None:
        """Read the file once (the caller holds `_rows_guard`): its entries for `_restored_rows` and its kept hours
        (`_recent_restored`). What they are checked against is asked for in threads beside the read (SQLite and
        the file's CRC release the GIL): the store's span signatures at once, the kept hours' counts
        (`_check_recent`) once the header names them. One after the other, the read, the signatures and the
        counts were ~0.5-0.7 s of a restart's first Status answer at 100 targets x 30 days (issue 40)."""
        if self._file_kept is not None or self._rows_restored is not None:
            return
        sigs = counts = None
        if self._pieces and self._rows_file.exists():
            sigs = _in_thread("ioweather-signatures", pieces_store.span_signatures, self.store)

        def count(recent: dict[str, tuple]) -> None:  # the kept hours' check (`_check_recent`) beside the arrays
            nonlocal counts
            if self.keep_recent and len(recent) >= 2:
                counts = _in_thread("ioweather-counts", self._count_recent, recent)

        kept = probe_rollups_file.load(self._rows_file, self._rows_key(), on_header=count) if self._pieces else {}
        self._recent_restored = {t: e["recent"] for t, e in kept.items() if e["recent"] is not None}
        self._file_kept = (kept, sigs if kept else None)
        self._file_counts = counts if kept else None

    def _count_recent(self, spans: dict[str, tuple[tuple[int, ...], int, int]]) -> dict[str, tuple]:
        """{target: (runs, since, final, the store's count of its samples in [since, final))} in one statement."""
        with self.store.connect() as conn:
            counts = pieces_store.fingerprint_rows_many(conn, {t: (list(r), lo, hi) for t, (r, lo, hi) in spans.items()})
        return {t: (*spans[t], n) for t, n in counts.items()}

    def _own_rows(self) -> None:
        """Copy the kept rows still mapped from the file (their statistics are views of its pages, probe_rollups_file
        `load`) into this process's memory, so that the mapping goes: another program truncating the file in place
        would make the next read of them a SIGBUS, which kills the server. Off the first answer's path (the
        warm-up, after its hold): ~0.2-0.4 s of copying at 100 targets x 30 days, a target's length at a time
        between the pages being answered (`pause`): in one go, it landed on whichever page came after the first.
        An installed length's rows after the file's last whole hour are joined to its month here
        (`_Rollups.joined`): that join is the copy."""
        with self._rows_guard:
            kept = [rows for lengths in (self._rows_restored or {}).values() for _, _, rows in lengths.values()]
            kept += [rows for extra in self._rows_extra.values() for _, rows in extra.values()]
        with self._guard:
            installed = [tc for tc in self._targets.values() if tc.seeded]
        for tc in installed:
            for r in tc.rolled.values():
                self.pause()
                with r.lock:
                    kept.append(r.joined())
        for rows in kept:
            self.pause()
            for c, v in list(rows.items()):
                if v.base is not None:  # in place: the same dict is a length's kept rows (`_seed`)
                    rows[c] = v.copy()

    def _restored_recent(self, target: str, runs: tuple[int, ...]) -> tuple[_Kept | None, tuple | None]:
        """The target's newest final samples an earlier process kept (`_kept_read`) and the sparkline's medians of
        them (`recent_medians`), when they are still what the store holds: the same runs, recent enough to be read
        from, and as many samples of the target in their span as the store's count (the pieces' fingerprint:
        database and archived rows), which only grows."""
        self._restored_rows()
        e = self._recent_restored.get(target)
        if e is None or e["final_ns"] < self.clock() - KEEP_NS or not self._recent_valid(target, runs):
            self._recent_restored.pop(target, None)
            return None, None
        self._recent_restored.pop(target, None)
        m = e.get("medians")
        medians = None if m is None or m["done_ns"] > e["final_ns"] else (
            m["step_ns"], runs, m["whole_ns"], m["done_ns"], m["codes"], m["starts"], m["medians"])
        return _Kept(runs, e["since_ns"], e["final_ns"], e["samples"]), medians

    def _recent_valid(self, target: str, runs: tuple[int, ...]) -> bool:
        """Whether the target's newest final samples an earlier process kept are still the store's: the same runs
        and as many samples of the target in their span as the store counts (the pieces' fingerprint: database and
        archived rows), which only grows. Checked once (`_check_recent` counted them all at once)."""
        ok = self._recent_ok.get(target)
        if ok is None:
            e = self._recent_restored.get(target)
            ok = e is not None and e["runs"] == runs
            if ok:
                rows = self._recent_counts.pop(target, None)
                if rows is None or rows[:3] != (runs, e["since_ns"], e["final_ns"]):
                    with self.store.connect() as conn:
                        rows = (runs, e["since_ns"], e["final_ns"],
                                pieces_store.fingerprint(conn, list(runs), e["since_ns"], e["final_ns"])[0])
                ok = rows[3] == len(e["samples"]["op"])
            self._recent_ok[target] = ok
        return ok

    def _check_recent(self, targets: list[str]) -> None:
        """The store's counts of the kept hours of `targets` an earlier process kept (`_restored_recent`'s check),
        in one statement: one a target was 0.65 s of a restart's 100 (issue 40). Made while the rows' span
        signatures are read (`_read_rows_file`), before they are checked."""
        with self._rows_guard:
            self._read_rows_file()
            early, self._file_counts = self._file_counts, None
        all_runs = self._run_ids()
        spans = {}
        for t in targets:
            e = self._recent_restored.get(t)
            runs = all_runs.get(t, ())
            if e is not None and e["runs"] == runs:
                spans[t] = (runs, e["since_ns"], e["final_ns"])
        if len(spans) < 2:
            return
        try:
            got = early() if early is not None else {}
        except Exception:  # noqa: BLE001 - counted again below, where a failure is the caller's
            got = {}
        have = {t: got[t] for t in spans if t in got and got[t][:3] == spans[t]}
        rest = {t: span for t, span in spans.items() if t not in have}
        self._recent_counts = {**have, **(self._count_recent(rest) if rest else {})}

    def save_rows(self) -> int | None:
        """Write the settled rows of `KEPT_LENGTHS_S` of every target, over the baseline window's spans that have
        stored pieces, and its kept newest samples that were final (with `persist`, on a store that keeps pieces);
        the bytes written, None when nothing was."""
        if self._rows_file is None or not self._pieces:
            return None
        sigs = pieces_store.span_signatures(self.store)
        since = self._rollup_since(self.clock())
        entries = {}
        restored = self._rows_restored or {}
        for target in sorted(set(self._targets) | set(restored)):
            tc = self._t(target)
            snap = {}
            if not tc.seeded and target in restored:  # stopped before its rows were installed: kept as read
                snap = {i: (rows, (lo, hi)) for i, (lo, hi, rows) in restored[target].items()}
            for i in KEPT_LENGTHS_S if not snap else ():
                r = tc.rolled[i]
                if not r.lock.acquire(timeout=5.0):  # a fill in progress at shutdown: that length not kept
                    continue
                try:
                    if r.covered is not None:
                        snap[i] = (r.joined(), r.covered)
                finally:
                    r.lock.release()
            # each length from its own start: one range for all kept a 7-day History's 1-hour rows as the month's
            # start of every length (a server stopped before its warm-up filled the month kept 7 days of climate)
            starts = {i: _up(max(since, c[0]), probe_pieces.HOUR_NS) for i, (_, c) in snap.items()}
            lo = min(starts.values(), default=_up(since, probe_pieces.HOUR_NS))
            hi = _down(min(c[1] for _, c in snap.values()), probe_pieces.HOUR_NS) if snap else lo
            tiles, end = _tiles(sigs.get(target, {}), lo, hi)
            entry = {"tiles": tiles, "lo_ns": lo, "hi_ns": end, "recent": None,
                     "lengths": {i: select_rollups(rows, starts[i], end) for i, (rows, _) in snap.items()
                                 if end > starts[i]}, "starts": starts}
            with tc.kept_lock:
                k, m = tc.kept, tc.medians
            if k is not None:  # the samples that were final when read: the next start reads only what came after
                sel = k.samples["start_ns"] < k.final_ns
                entry["recent"] = {"runs": k.runs, "since_ns": k.since_ns, "final_ns": k.final_ns,
                                   "samples": {c: v[sel] for c, v in k.samples.items()}, "medians": None}
                if m is not None and m[1] == k.runs and m[3] <= k.final_ns:
                    entry["recent"]["medians"] = dict(zip(("step_ns", "runs", "whole_ns", "done_ns", "codes", "starts",
                                                           "medians"), m))
            elif not tc.recent_tried and target in self._recent_restored:
                entry["recent"] = self._recent_restored[target]
            if entry["recent"] is not None and entry["lengths"]:
                entry["extra"] = _settled_after(entry["recent"], end, entry["lengths"])
            if entry["lengths"] or entry["recent"] is not None:
                entries[target] = entry
        return probe_rollups_file.save(self._rows_file, self._rows_key(), entries) if entries else None

    def save(self) -> bool:
        """Write every computed baseline to the file (with `persist`); False when there is none to write."""
        if self._file is None:
            return False
        self._saved_at = time.monotonic()

        def nums(a) -> list:
            return [float(x) if np.isfinite(x) else None for x in np.asarray(a, float)]

        entries = {}
        for target, tc in list(self._targets.items()):
            b = tc.baseline
            if b is None or b.first_ns is None:
                continue
            entries[target] = {"samples": [int(x) for x in b.samples], "since_ns": b.since_ns,
                               "until_ns": b.until_ns, "computed_ns": b.computed_ns, "compute_s": b.compute_s,
                               "stat_s": {st: nums(v) for st, v in b.stat_s.items()},
                               "first_ns": [int(x) for x in b.first_ns]}
        return bool(entries) and probe_baselines_file.save(self._file, self._file_key(), entries)

    def close(self) -> None:
        self.stop_event.set()
        self.save()
        self.save_rows()
        self.save_searches()


def _in_thread(name: str, fn: Callable, *args) -> Callable[[], object]:
    """`fn(*args)` started in a daemon thread; the call returned waits for its result (or raises its exception)."""
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, fn(*args)))
        except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread by `result`
            box.append((False, e))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()

    def result():
        thread.join()
        ok, value = box[0]
        if not ok:
            raise value
        return value
    return result


def _series_digest(target: str, key: tuple, series: list[tuple[np.ndarray, np.ndarray]]) -> str:
    """What a level-change search is a function of: the target, its window and parameters, and its series' bytes."""
    h = hashlib.blake2b(repr((target, key)).encode(), digest_size=20)
    for times, medians in series:
        for a in (np.ascontiguousarray(times, np.int64), np.ascontiguousarray(medians, np.float64)):
            h.update(len(a).to_bytes(8, "little"))
            h.update(a.tobytes())
    return h.hexdigest()


def _merge_kept(old: dict[str, np.ndarray], since_ns: int, frm: int, new: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The kept samples of [since, frm) and the newly read ones from `frm` on, by op then time."""
    keep = (old["start_ns"] >= since_ns) & (old["start_ns"] < frm)
    cols = {c: np.concatenate([old[c][keep], new[c]]) for c in old}
    if len(new["op"]) and keep.any():
        # each part by op then time, the kept rows older than the new: a stable sort by op merges them
        order = np.argsort(cols["op"], kind="stable")
        cols = {c: v[order] for c, v in cols.items()}
    return cols


def _settled_after(recent: dict, hi_ns: int, lengths) -> dict[int, tuple[int, dict[str, np.ndarray]]]:
    """Per length, the rows of the intervals from `hi_ns` (a whole hour) that ended before the kept samples'
    `final_ns`, computed from those samples ({length: (until, rows)}; none when they start after `hi_ns`): what a
    restart computed again for every target, up to 50 minutes of samples each (issue 40)."""
    s, final = recent["samples"], recent["final_ns"]
    out = {}
    if recent["since_ns"] > hi_ns:
        return out
    for i in lengths:
        until = _down(final, i * 10**9)
        if until > hi_ns:
            sel = (s["start_ns"] >= hi_ns) & (s["start_ns"] < until)
            out[i] = (until, rollup_arrays(interval_stats(s["op"][sel], s["start_ns"][sel], s["duration_ns"][sel],
                                                          s["status"][sel], i)))
    return out


def _tiles(sigs: dict[tuple[int, int], tuple[int, ...]], lo: int, hi: int) -> tuple[list[list[int]], int]:
    """The stored spans that cover [lo, hi) one after another from `lo` (a day's piece, else the hour's, each
    with all its ops), as [start, span, *signature], and where they stop covering (at most `hi`)."""
    tiles, t = [], lo
    while t < hi:
        for start, span in ((_down(t, probe_pieces.DAY_NS), probe_pieces.DAY_NS),
                            (_down(t, probe_pieces.HOUR_NS), probe_pieces.HOUR_NS)):
            sig = sigs.get((start, span))
            if sig is not None and sig[0] == len(OPS):
                tiles.append([start, span, *sig])
                t = min(start + span, hi)
                break
        else:
            break
    return tiles, t
