"""Summaries of completed hours and days of probe samples (issue 21), in the `probe_pieces` table.

One row per (target, op, span): counts, the exact integer sum of the successful durations,
their histogram (stats/slowdown_pieces.py buckets, zlib) and the durations themselves sorted
(raw little-endian int64, so that a slice of them is read with SQL `substr` without reading
the rest), plus the interval rollups (`interval_stats` columns) of the intervals that divide
the span. A 30-day baseline then reads 30 day pieces' histograms and a few slices, and the
Status and History pages read rollups instead of 15.6 M rows per target.

A piece is a cache of the samples it summarizes, kept exact this way:
- it is written only if the span's fingerprint (database rows + archived rows and parts of the
  target in the span) is the same in the write transaction as before the span was read;
- `insert_samples` deletes the pieces of every span its rows fall in, in the same transaction
  (store/probe.py), so a late sample (an import, a restarted probe's buffer) invalidates them;
- archiving moves rows without changing them: pieces stay valid.
On PostgreSQL both writers take `LOCK TABLE probe_pieces IN SHARE ROW EXCLUSIVE MODE` (only an
insert of samples older than `LATE_NS` does, live probes never): READ COMMITTED would otherwise let
a piece and a late insert each miss the other. Not on MariaDB (no pieces: the full computation).

Cost: 8 bytes per successful sample per summarized span (day pieces, plus hour pieces for the
partial days at a window's ends) and ~1-3 KiB of histogram and rollups per op and span.
"""

from __future__ import annotations

import time
import zlib

import numpy as np
import sqlalchemy as sa

from ioweather.store.db import Store
from ioweather.store.probe_tables import COMPONENT, OPS, probe_archive, probe_pieces, probe_runs, probe_samples

from ioweather.store.probe_light import DAY_NS, HOUR_NS  # noqa: E402,F401 (one definition, without SQLAlchemy)
#: An insert of samples older than this takes the PostgreSQL lock (pieces are built only for spans
#: that ended longer ago than services/probe/pieces.PIECE_LAG_NS, 5 min; the margin is clock skew).
LATE_NS = 120 * 10**9


def enabled(store: Store) -> bool:
    return store.is_sqlite or store.url.startswith("postgresql")


def run_ids(conn: sa.Connection, target: str) -> list[int]:
    return [r[0] for r in conn.execute(sa.select(probe_runs.c.id).where(probe_runs.c.target == target)
                                       .order_by(probe_runs.c.id))]


def fingerprint(conn: sa.Connection, ids: list[int], lo: int, hi: int) -> tuple[int, int]:
    """(rows in the database + archived rows of days overlapping [lo, hi), archived parts of those days).
    Each count is a range of the samples' primary key (run, op, start), all in one statement."""
    if not ids:
        return 0, 0
    counts = " + ".join(f"(SELECT count(*) FROM probe_samples WHERE run_id = {int(r)} AND op = '{op}' "
                        f"AND start_ns >= {int(lo)} AND start_ns < {int(hi)})" for r in ids for op in OPS)
    archived = (f"SELECT count(*), coalesce(sum(rows), 0) FROM probe_archive WHERE run_id IN "
                f"({', '.join(str(int(r)) for r in ids)}) AND day_ns < {int(hi)} AND day_ns + {DAY_NS} > {int(lo)}")
    rows = conn.exec_driver_sql(f"SELECT {counts}").scalar()
    n, total = conn.exec_driver_sql(archived).one()
    return int(rows) + int(total), int(n)


def fingerprint_rows_many(conn: sa.Connection, spans: dict[str, tuple[list[int], int, int]]) -> dict[str, int]:
    """`fingerprint(conn, ids, lo, hi)[0]` of every {key: (ids, lo, hi)} in one statement (a column each): a
    restart's check of 100 targets' kept hours made 200 statements, 0.65 s (issue 40)."""
    out = {k: 0 for k in spans}
    keys = [k for k, (ids, _, _) in spans.items() if 0 < len(ids) <= 50]
    for k, (ids, lo, hi) in spans.items():  # many runs: a column deeper than SQLite's expressions may be
        if len(ids) > 50:
            out[k] = fingerprint(conn, ids, lo, hi)[0]
    for a in range(0, len(keys), 200):  # SQLite's column limit (2,000), with room
        cols = []
        for k in keys[a:a + 200]:
            ids, lo, hi = spans[k]
            counts = " + ".join(f"(SELECT count(*) FROM probe_samples WHERE run_id = {int(r)} AND op = '{op}' "
                                f"AND start_ns >= {int(lo)} AND start_ns < {int(hi)})" for r in ids for op in OPS)
            archived = (f"(SELECT coalesce(sum(rows), 0) FROM probe_archive WHERE run_id IN "
                        f"({', '.join(str(int(r)) for r in ids)}) AND day_ns < {int(hi)} AND day_ns + {DAY_NS} > {int(lo)})")
            cols.append(f"{counts} + {archived}")
        row = conn.exec_driver_sql(f"SELECT {', '.join(cols)}").one()
        out.update({k: int(v) for k, v in zip(keys[a:a + 200], row)})
    return out


def _lock(conn: sa.Connection, store: Store) -> None:
    if store.url.startswith("postgresql"):
        conn.exec_driver_sql("LOCK TABLE probe_pieces IN SHARE ROW EXCLUSIVE MODE")


def invalidate(conn: sa.Connection, store: Store, run_id_list, first_ns: int, last_ns: int) -> int:
    """Delete the pieces of the runs' targets whose span holds a time in [first, last] (inside the
    transaction inserting those samples). Returns pieces deleted."""
    if not enabled(store):
        return 0
    if first_ns < time.time_ns() - LATE_NS:
        _lock(conn, store)
    targets = [r[0] for r in conn.execute(sa.select(probe_runs.c.target).distinct()
                                          .where(probe_runs.c.id.in_(sorted(set(run_id_list)))))]
    p = probe_pieces.c
    n = 0
    for t in targets:
        # A piece spans at most a day: its start is within a day before `first`.
        n += conn.execute(probe_pieces.delete().where(
            p.target == t, p.start_ns > first_ns - DAY_NS, p.start_ns <= last_ns,
            p.start_ns + p.span_ns > first_ns)).rowcount or 0
    return n


def write(store: Store, target: str, start_ns: int, span_ns: int, fp: tuple[int, int], rows: list[dict]) -> bool:
    """Store one span's pieces (one row per op, keys as the table's columns, `hist`/`sorted`/`rollups` as
    arrays) if no sample of the span changed since `fp` was taken. Returns whether they were stored (never
    through a read-only handle: a check computes what it needs in memory and leaves the store as it was)."""
    if store.read_only:
        return False
    store.require(COMPONENT)
    with store.begin() as conn:
        _lock(conn, store)
        ids = run_ids(conn, target)
        if fingerprint(conn, ids, start_ns, start_ns + span_ns) != fp:
            return False
        p = probe_pieces.c
        conn.execute(probe_pieces.delete().where(p.target == target, p.start_ns == start_ns, p.span_ns == span_ns))
        conn.execute(probe_pieces.insert(), [{
            "target": target, "op": r["op"], "start_ns": start_ns, "span_ns": span_ns, "rows": r["rows"],
            "ok": r["ok"], "errors": r["errors"], "timeouts": r["timeouts"], "sum_ns": r["sum_ns"],
            "first_ok_ns": r["first_ok_ns"], "fp_rows": fp[0], "fp_parts": fp[1],
            "hist": zlib.compress(np.asarray(r["hist"], "<u4").tobytes(), 1),
            "sorted_ns": np.asarray(r["sorted"], "<i8").tobytes(),
            "starts_ns": None if r.get("starts") is None else np.asarray(r["starts"], "<i8").tobytes(),
            "rollups": encode_rollups(r["rollups"])} for r in rows])
    return True


_INT_COLS = ("op", "start_ns", "count", "errors", "timeouts")


def encode_rollups(rollups: dict[int, dict[str, np.ndarray]]) -> bytes:
    """Per interval length: its length and row count, then the integer columns (int64) and the
    statistics (float64, NaN for none), little-endian. (np.savez costs 2 ms a piece: a month of
    rollups took seconds to decode.)"""
    out = []
    for i, cols in sorted(rollups.items()):
        floats = [c for c in cols if c not in _INT_COLS]
        n = len(cols["op"])
        out.append(np.array([i, n, len(floats)], "<i8").tobytes())
        out.append(",".join(floats).encode().ljust(256, b" "))
        out.append(np.stack([np.asarray(cols[c], "<i8") for c in _INT_COLS]).tobytes() if n else b"")
        out.append(np.stack([np.asarray(cols[c], "<f8") for c in floats]).tobytes() if n and floats else b"")
    return b"".join(out)


def decode_rollups(blob: bytes, only: int | None = None) -> dict[int, dict[str, np.ndarray]]:
    """The rollups of every interval length, or of `only` (read-only views into the blob)."""
    out: dict[int, dict[str, np.ndarray]] = {}
    pos, blob = 0, bytes(blob)
    while pos < len(blob):
        i, n, nf = (int(x) for x in np.frombuffer(blob, "<i8", 3, pos))
        size = 280 + 8 * n * (len(_INT_COLS) + nf)
        if only is not None and i != only:
            pos += size
            continue
        floats = blob[pos + 24:pos + 280].decode().strip().split(",") if nf else []
        ints = np.frombuffer(blob, "<i8", len(_INT_COLS) * n, pos + 280).reshape(len(_INT_COLS), n)
        fl = np.frombuffer(blob, "<f8", nf * n, pos + 280 + ints.nbytes).reshape(nf, n)
        pos += size
        out[i] = {**{c: ints[k] for k, c in enumerate(_INT_COLS)}, **{c: fl[k] for k, c in enumerate(floats)}}
    return out


_META = ("op", "start_ns", "span_ns", "rows", "ok", "errors", "timeouts", "sum_ns", "first_ok_ns", "fp_rows", "fp_parts")


def load(store: Store, target: str, spans: list[tuple[int, int]], with_rollups: bool | int = False,
         with_hist: bool = True) -> list[dict]:
    """The stored pieces of `target` for these (start, span) pairs: the columns of `_META`, with `with_hist`
    `hist` (int64 counts) and with `with_rollups` the decoded `rollups` (an interval length: only that one's)."""
    if not spans:
        return []
    store.require(COMPONENT)
    p = probe_pieces.c
    cols = [p[c] for c in _META] + ([p.hist] if with_hist else []) + ([p.rollups] if with_rollups else [])
    lo, hi = min(s for s, _ in spans), max(s for s, _ in spans)
    wanted = set(spans)
    out = []
    with store.connect() as conn:
        for r in conn.execute(sa.select(*cols).where(p.target == target, p.start_ns >= lo, p.start_ns <= hi)):
            if (r.start_ns, r.span_ns) not in wanted:
                continue
            d = {c: getattr(r, c) for c in _META}
            if with_hist:
                d["hist"] = np.frombuffer(zlib.decompress(r.hist), "<u4").astype(np.int64)
            if with_rollups:
                d["rollups"] = decode_rollups(r.rollups, None if with_rollups is True else int(with_rollups))
            out.append(d)
    return out


def slices(store: Store, target: str, op: str,
           requests: list[list[tuple[int, int, int, int]]]) -> tuple[list[list[np.ndarray]], dict]:
    """For each request (a list of (start, span, offset, length) of this op's pieces), the sorted
    durations at [offset, offset + length) of each piece: one query, `substr` of the stored arrays
    (on SQLite, blob reads of the rows it selects).
    Also {(start, span): (fp_rows, fp_parts)} of the rows read, so the caller can check they are the
    pieces whose histograms it used (a piece may be rebuilt in between)."""
    p = probe_pieces.c
    keys = sorted({(s, sp) for req in requests for s, sp, _, n in req if n > 0})
    out: list[list[np.ndarray]] = [[] for _ in requests]
    if not keys:
        return out, {}
    # Inlined integers (computed here, never input): a month of pieces would exceed bind limits.
    keyset = " OR ".join(f"(start_ns = {int(s)} AND span_ns = {int(sp)})" for s, sp in keys)
    if store.is_sqlite:
        return _slices_sqlite(store, target, op, requests, keyset)
    exprs = []
    for req in requests:
        whens = [(f"start_ns = {int(s)} AND span_ns = {int(sp)}", off * 8 + 1, n * 8) for s, sp, off, n in req if n > 0]
        if not whens:
            exprs.append("NULL")
            continue
        first = " ".join(f"WHEN {c} THEN {int(o)}" for c, o, _ in whens)
        length = " ".join(f"WHEN {c} THEN {int(n)}" for c, _, n in whens)
        exprs.append(f"substr(sorted_ns, CASE {first} ELSE 1 END, CASE {length} ELSE 0 END)")
    sql = (f"SELECT start_ns, span_ns, fp_rows, fp_parts, {', '.join(exprs)} FROM probe_pieces "
           f"WHERE target = %s AND op = %s AND ({keyset})")
    fps = {}
    with store.connect() as conn:
        for r in conn.exec_driver_sql(sql, (target, op)):
            fps[(r[0], r[1])] = (r[2], r[3])
            for j in range(len(requests)):
                if r[4 + j]:
                    out[j].append(np.frombuffer(bytes(r[4 + j]), "<i8"))
    return out, fps


def _slices_sqlite(store: Store, target: str, op: str, requests: list[list[tuple[int, int, int, int]]],
                   keyset: str) -> tuple[list[list[np.ndarray]], dict]:
    """`slices` through SQLite's incremental blob reads: `substr` copies the whole stored array (700 KiB for
    a day at 1 Hz) once per request, where a blob handle reads only the asked bytes."""
    want: dict[tuple[int, int], list[tuple[int, int, int]]] = {}
    for j, req in enumerate(requests):
        for s, sp, off, n in req:
            if n > 0:
                want.setdefault((s, sp), []).append((j, off, n))
    out: list[list[np.ndarray]] = [[] for _ in requests]
    fps = {}
    with store.connect() as conn:
        # One read transaction: the blobs are those of the rows (and fingerprints) selected here.
        rows = conn.exec_driver_sql(f"SELECT rowid, start_ns, span_ns, fp_rows, fp_parts FROM probe_pieces "
                                    f"WHERE target = ? AND op = ? AND ({keyset})", (target, op)).fetchall()
        raw = conn.connection.driver_connection
        for rowid, s, sp, fp_rows, fp_parts in rows:
            fps[(s, sp)] = (fp_rows, fp_parts)
            with raw.blobopen("probe_pieces", "sorted_ns", rowid, readonly=True) as blob:
                for j, off, n in want[(s, sp)]:
                    blob.seek(off * 8)
                    out[j].append(np.frombuffer(blob.read(n * 8), "<i8"))
    return out, fps


def sorted_arrays(store: Store, target: str, keys: list[tuple[int, int]]) -> dict[tuple[str, int, int], np.ndarray]:
    """{(op, start, span): the whole sorted array} of these pieces (a few hours' worth: 4-hour intervals)."""
    if not keys:
        return {}
    p = probe_pieces.c
    out = {}
    with store.connect() as conn:
        q = sa.select(p.op, p.start_ns, p.span_ns, p.sorted_ns).where(
            p.target == target, sa.tuple_(p.start_ns, p.span_ns).in_(sorted(set(keys))))
        for r in conn.execute(q):
            out[(r.op, r.start_ns, r.span_ns)] = np.frombuffer(bytes(r.sorted_ns), "<i8")
    return out


def span_signatures(store: Store) -> dict[str, dict[tuple[int, int], tuple[int, ...]]]:
    """{target: {(start, span): (pieces, rows, sum_ns, fp_rows, fp_parts)}} of every stored span, in one query
    that reads no array: what a cache derived from a span's samples is keyed by (store/probe_rollups_file.py).
    Any insert into a span deletes its pieces, so a span summarized again has another signature or none."""
    store.require(COMPONENT)
    p = probe_pieces.c
    q = sa.select(p.target, p.start_ns, p.span_ns, sa.func.count(), sa.func.sum(p.rows), sa.func.sum(p.sum_ns),
                  sa.func.max(p.fp_rows), sa.func.max(p.fp_parts)).group_by(p.target, p.start_ns, p.span_ns)
    out: dict[str, dict[tuple[int, int], tuple[int, ...]]] = {}
    with store.connect() as conn:
        for target, start, span, *sig in conn.execute(q):
            out.setdefault(target, {})[(int(start), int(span))] = tuple(int(x) for x in sig)
    return out


def prune_hours(store: Store, target: str, keep: list[tuple[int, int]]) -> int:
    """Delete the target's hour pieces outside the [lo, hi) ranges in `keep` (the partial days that a
    window's ends need; older hours are covered by their day piece)."""
    if store.read_only:
        return 0
    p = probe_pieces.c
    cond = p.span_ns < DAY_NS
    for lo, hi in keep:
        cond = cond & ~((p.start_ns >= lo) & (p.start_ns < hi))
    with store.begin() as conn:
        return conn.execute(probe_pieces.delete().where(p.target == target, cond)).rowcount or 0


def window_marker(store: Store, lo: int, hi: int) -> tuple[int, ...]:
    """Changes when the probe samples of [lo, hi) do, as far as the store records it, in three aggregate
    statements that read no array: the pieces of spans overlapping it (any insert into a span deletes its
    pieces, and a span summarized again records its rows' count), the archived days overlapping it (days,
    parts, rows) and the runs (a new target). What a kept answer computed from those samples is keyed by (the
    Report page's); a sample stored into a span that has no piece yet is seen once that span's piece is built."""
    return _marker(store, lo, hi, None)


def days_marker(store: Store, lo: int, hi: int) -> tuple[int, ...]:
    """`window_marker` of whole UTC days [lo, hi) counting their day pieces only: hour pieces are built and
    pruned around whichever windows the pages ask for (services/probe/pieces.gather), which changed
    `window_marker` without any sample changing. A late sample deletes its day's piece (`insert_samples`);
    one stored into a day without a day piece is seen once that day's piece is built, as there."""
    return _marker(store, lo, hi, DAY_NS)


def whole_days(store: Store, targets: list[str], lo: int, hi: int) -> dict[str, set[int]]:
    """{target: the starts of its days in [lo, hi) that have a day piece of every op}, in one aggregate
    statement that reads no array: the days whose late samples `days_marker` sees (the insert deletes them)."""
    store.require(COMPONENT)
    p = probe_pieces.c
    q = (sa.select(p.target, p.start_ns).where(p.span_ns == DAY_NS, p.start_ns >= lo, p.start_ns < hi,
                                               p.target.in_(sorted(set(targets))))
         .group_by(p.target, p.start_ns).having(sa.func.count() == len(OPS)))
    out: dict[str, set[int]] = {t: set() for t in targets}
    with store.connect() as conn:
        for target, start in conn.execute(q):
            out[target].add(int(start))
    return out


def _marker(store: Store, lo: int, hi: int, span_ns: int | None) -> tuple[int, ...]:
    store.require(COMPONENT)
    p, a = probe_pieces.c, probe_archive.c
    where = [p.start_ns < hi, p.start_ns + p.span_ns > lo, *([p.span_ns == span_ns] if span_ns else [])]
    with store.connect() as conn:
        pieces = conn.execute(sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(p.rows), 0),
                                        sa.func.coalesce(sa.func.sum(p.sum_ns % 1_000_003), 0),
                                        sa.func.coalesce(sa.func.sum(p.fp_rows), 0),
                                        sa.func.coalesce(sa.func.sum(p.fp_parts), 0))
                              .where(*where)).one()
        archived = conn.execute(sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(a.rows), 0))
                                .where(a.day_ns < hi, a.day_ns + DAY_NS > lo)).one()
        runs = conn.execute(sa.select(sa.func.count(), sa.func.max(probe_runs.c.id))).one()
    return tuple(int(x or 0) for x in (*pieces, *archived, *runs))
