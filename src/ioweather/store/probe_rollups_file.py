"""The dashboard's settled probe rollups kept across a restart (issue 40 item 4): a derived cache in the store's home.

After a restart the dashboard rebuilt a month of 10-minute, 30-minute and 1-hour rollups of every target from
the stored pieces (~3 s of CPU for 100 targets x 3 days, 10x that at 30 days), beside the first Status and
History answers. Rows of settled intervals never change (services/probe/cache.py), so the process writes them
here when it stops and the next reads them back instead; with them each target's last hour of samples that
were final (the Status card's window and sparkline, ~1 s of SQLite reading for 100 targets) and the sparkline's
medians of its ended minutes, used only while the store holds as many samples of the target in that span
(services/probe/cache.py `_restored_recent`). The file is never the source of truth:

- derived: written only from rows the cache computed from the store, rebuilt (ignored, then overwritten) when
  missing, truncated, damaged (a CRC-32 of the payload), of another format or store (`key`), or stale;
- keyed by the source's identity: each target's rows are valid only over the completed spans whose stored
  pieces (store/probe_pieces.py: summary and fingerprint of the span's samples) are still the same ones
  (`span_signatures`): `insert_samples` deletes the pieces of every span a late sample falls in and a purge
  all of the target's, so a changed span is no longer the one recorded and the rows from it on are dropped;
- bounded: the rows of the cache's baseline window only (30 days by default), 79 bytes a row at 1 Hz
  (`_encode`: ops and interval indices as small integers, counts in the smallest integer type that holds them,
  the nine statistics as float64: the answers must stay bit for bit), 216 rows per op and target-day (102 KB),
  and the last hour of samples, 18 bytes each;
- written atomically (a temporary file in the same directory, then rename), never through a symbolic link
  (both the file and its directory are opened with O_NOFOLLOW; a link planted at either is not followed:
  the read ignores it, the write replaces the link itself by the rename);
- read by mapping it (cache_files.map_in): the rows' nine statistics stay views of the page cache's pages
  instead of a 340 MB copy at 100 targets x 30 days; a rename over it or its removal leave the mapping whole;
- removed with the probe's summaries by `store prune` (services/runtime/retention.py, kind `rollups`).

The settled intervals after the last whole hour with stored pieces (up to 50 minutes of 10-minute rows, which a
restart computed again from the samples for every target: ~0.3 s of the first Status answer at 100 targets) are
kept too (`extra`), computed at the write from the kept newest samples and valid only while those are (the
same count check).

Layout: MAGIC, the header's length (u8), the header (JSON: format, key, per target its tiles and blocks),
then the blocks' arrays, then the payload's CRC-32 (u4). Numbers only: nothing in it is executed.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ioweather.store import cache_files
from ioweather.store.db import Store

NAME = "probe-rollups.bin"
MAGIC = b"IOWROLL\x01"
#: 2: the settled intervals after the last whole hour, derived from the kept samples (`extra`). 3: each length's rows
#: from their own start (a block's `lo_ns`): one range for all cut every length to the shortest one's.
VERSION = 3
_INT_COLS = ("count", "errors", "timeouts")
_FLOAT_COLS = ("mean_s", "min_s", "q1_s", "median_s", "q3_s", "p90_s", "p95_s", "p99_s", "max_s")
_UINTS = (np.uint8, np.uint16, np.uint32)


def path_of(store: Store) -> Path | None:
    """Where the file lives: the store's home (beside its Parquet directory), None for a store without one."""
    if store.parquet_dir is None:
        return None
    return Path(store.parquet_dir).parent / "cache" / NAME


def _small(a: np.ndarray) -> np.ndarray:
    """`a` (non-negative integers) in the smallest unsigned type holding its largest value, int64 otherwise."""
    top = int(a.max()) if len(a) else 0
    if len(a) and int(a.min()) < 0:
        return np.asarray(a, "<i8")
    for t in _UINTS:
        if top <= np.iinfo(t).max:
            return np.asarray(a, np.dtype(t).newbyteorder("<"))
    return np.asarray(a, "<i8")


def _encode(rows: dict[str, np.ndarray], lo_ns: int, step_ns: int) -> tuple[list[dict], list[bytes]]:
    """One length's rows as arrays: `op`, the interval's index from `lo_ns`, the counts, the statistics."""
    cols = {"op": _small(rows["op"]), "index": _small((rows["start_ns"] - lo_ns) // step_ns)}
    cols.update({c: _small(rows[c]) for c in _INT_COLS})
    cols.update({c: np.asarray(rows[c], "<f8") for c in _FLOAT_COLS})
    return [{"column": c, "dtype": a.dtype.str} for c, a in cols.items()], [a.tobytes() for a in cols.values()]


_RECENT = {"op": "|u1", "start_ns": "<i8", "duration_ns": "<i8", "status": "|u1"}
_MEDIANS = {"codes": "|u1", "starts": "<i8", "medians": "<f8"}


def save(path: Path, key: dict, entries: dict[str, dict]) -> int | None:
    """Write `entries` ({target: {"tiles": [[start, span, signature...]], "lo_ns", "hi_ns", "lengths":
    {interval_s: rows}, "starts": {interval_s: where its rows start, lo_ns or later}, and optionally "recent": {"runs", "since_ns", "final_ns", "samples"} and "extra":
    {interval_s: (until_ns, rows)}}}) atomically; the bytes written, None when it cannot be written (read-only
    home, a link in the way of the directory). `recent`: the target's newest samples that were final
    (services/probe/cache.py `_Kept`); `extra`: the rows of the intervals [hi_ns, until_ns) computed from those
    samples, valid only while they are (the settled part of an hour that has no stored piece yet)."""
    header = {"version": VERSION, "key": key, "targets": {}}
    payload: list[bytes] = []
    offset = 0

    def block(rows: dict[str, np.ndarray], lo_ns: int, interval_s: int) -> dict:
        nonlocal offset
        meta, arrays = _encode(rows, lo_ns, int(interval_s) * 10**9)
        for m, b in zip(meta, arrays):
            m["offset"], m["bytes"] = offset, len(b)
            offset += len(b)
        payload.extend(arrays)
        return {"interval_s": int(interval_s), "lo_ns": int(lo_ns), "rows": len(rows["op"]), "columns": meta}

    def raw(arrays: dict, dtypes: dict[str, str]) -> list[dict]:
        nonlocal offset
        cols = []
        for c, dt in dtypes.items():
            b = np.asarray(arrays[c], np.dtype(dt)).tobytes()
            cols.append({"column": c, "dtype": dt, "offset": offset, "bytes": len(b)})
            offset += len(b)
            payload.append(b)
        return cols

    for target, e in entries.items():
        blocks = [block(rows, e.get("starts", {}).get(i, e["lo_ns"]), i) for i, rows in sorted(e["lengths"].items())]
        extra = [{**block(rows, e["lo_ns"], i), "until_ns": int(until_ns)}
                 for i, (until_ns, rows) in sorted((e.get("extra") or {}).items())]
        h = {"tiles": e["tiles"], "lo_ns": e["lo_ns"], "hi_ns": e["hi_ns"], "blocks": blocks, "extra": extra}
        if e.get("recent") is not None:
            rc = e["recent"]
            h["recent"] = {"runs": [int(r) for r in rc["runs"]], "since_ns": int(rc["since_ns"]),
                           "final_ns": int(rc["final_ns"]), "rows": len(rc["samples"]["op"]),
                           "columns": raw(rc["samples"], _RECENT)}
            m = rc.get("medians")
            if m is not None:  # the sparkline's medians of the intervals that had ended (`recent_medians`)
                h["medians"] = {"step_ns": int(m["step_ns"]), "whole_ns": int(m["whole_ns"]),
                                "done_ns": int(m["done_ns"]), "rows": len(m["codes"]), "columns": raw(m, _MEDIANS)}
        header["targets"][target] = h
    head = json.dumps(header, separators=(",", ":")).encode()
    crc = 0
    for b in payload:
        crc = zlib.crc32(b, crc)
    try:
        dfd = cache_files.open_dir(path.parent, create=True)
    except OSError:
        return None
    try:
        # the rename replaces whatever is at the name, a planted link included, and never follows it
        return cache_files.write_in(dfd, path.name, [MAGIC, len(head).to_bytes(8, "little"), head, *payload,
                                                     crc.to_bytes(4, "little")])
    except OSError:
        return None
    finally:
        os.close(dfd)


def load(path: Path, key: dict, on_header: Callable[[dict[str, tuple]], object] | None = None) -> dict[str, dict]:
    """{target: {"tiles", "lo_ns", "hi_ns", "lengths": {interval_s: rows}, "starts": {interval_s: lo}, ...}} of a whole, undamaged file written
    under the same `key` and format; {} otherwise (no file, a link, truncated, another store or format).
    `on_header`: called with {target: (runs, since_ns, final_ns)} of the kept newest samples once the header is
    read, before the payload's arrays and check (what the caller checks them against can be asked meanwhile)."""
    try:
        dfd = cache_files.open_dir(path.parent, create=False)
    except OSError:
        return {}
    try:
        # mapped, not read: the rows' statistics are views of it (a restart's first Status answer waited for the copy)
        data = cache_files.map_in(dfd, path.name)
    except (OSError, ValueError):
        return {}
    finally:
        os.close(dfd)
    try:
        return _decode(data, key, on_header)
    except (ValueError, KeyError, TypeError, IndexError, OverflowError):
        return {}


def _decode(data: bytes | mmap.mmap, key: dict, on_header: Callable | None) -> dict[str, dict]:
    if data[:len(MAGIC)] != MAGIC:
        return {}
    n = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8 + n
    header = json.loads(data[len(MAGIC) + 8:start])
    if header.get("version") != VERSION or header.get("key") != key:
        return {}
    targets = header["targets"]
    size = sum(c["bytes"] for e in targets.values()
               for b in e["blocks"] + e["extra"] + [e[k] for k in ("recent", "medians") if k in e]
               for c in b["columns"])
    if len(data) != start + size + 4:
        return {}  # truncated
    if on_header is not None:
        on_header({t: (tuple(int(r) for r in e["recent"]["runs"]), int(e["recent"]["since_ns"]),
                       int(e["recent"]["final_ns"])) for t, e in targets.items() if "recent" in e})
    # The payload's check (0.17 s of 340 MB at 100 targets x 30 days) in a thread beside the arrays' decoding:
    # zlib releases the GIL. Nothing decoded is returned before it says the payload is whole.
    crc: list[int] = []
    check = threading.Thread(target=lambda: crc.append(zlib.crc32(memoryview(data)[start:start + size])),
                             name="rollups-crc", daemon=True)
    check.start()
    try:
        out = _arrays(data, start, targets)
    finally:
        check.join()  # a header whose arrays do not decode leaves no check running over the mapping
    return out if crc == [int.from_bytes(data[-4:], "little")] else {}  # damaged (or the check itself failed)


def _arrays(data: bytes | mmap.mmap, start: int, targets: dict) -> dict[str, dict]:
    """The header's `targets` as `load` answers them, their arrays views of `data`'s payload at `start`."""
    def rows_of(b: dict) -> dict[str, np.ndarray]:
        step, lo_ns = int(b["interval_s"]) * 10**9, int(b["lo_ns"])
        cols = {c["column"]: np.frombuffer(data, np.dtype(c["dtype"]), b["rows"], start + c["offset"])
                for c in b["columns"]}
        start_ns = cols["index"].astype(np.int64)
        start_ns *= step  # in place: two fewer month-long temporaries (fresh pages, each faulted in)
        start_ns += lo_ns
        rows = {"op": cols["op"].astype(np.int64), "start_ns": start_ns}
        rows.update({c: cols[c].astype(np.int64) for c in _INT_COLS})
        rows.update({c: cols[c] for c in _FLOAT_COLS})
        return rows

    out = {}
    for target, e in targets.items():
        lo = int(e["lo_ns"])
        out[target] = {"tiles": [tuple(t) for t in e["tiles"]], "lo_ns": lo, "hi_ns": int(e["hi_ns"]),
                       "lengths": {int(b["interval_s"]): rows_of(b) for b in e["blocks"]},
                       "starts": {int(b["interval_s"]): max(lo, int(b["lo_ns"])) for b in e["blocks"]},
                       "extra": {int(b["interval_s"]): (int(b["until_ns"]), rows_of(b)) for b in e["extra"]},
                       "recent": None}
        if "recent" in e:
            rc = e["recent"]
            cols = {c["column"]: np.frombuffer(data, np.dtype(c["dtype"]), rc["rows"], start + c["offset"])
                    for c in rc["columns"]}
            out[target]["recent"] = {
                "runs": tuple(int(r) for r in rc["runs"]), "since_ns": int(rc["since_ns"]),
                "final_ns": int(rc["final_ns"]),
                # read_samples' dtypes: the kept samples are concatenated with what is read after them
                "samples": {"op": cols["op"].astype(np.int8), "start_ns": cols["start_ns"].astype(np.int64),
                            "duration_ns": cols["duration_ns"].astype(np.int64),
                            "status": cols["status"].astype(np.int8)}, "medians": None}
            if "medians" in e:
                m = e["medians"]
                cols = {c["column"]: np.frombuffer(data, np.dtype(c["dtype"]), m["rows"], start + c["offset"])
                        for c in m["columns"]}
                out[target]["recent"]["medians"] = {
                    "step_ns": int(m["step_ns"]), "whole_ns": int(m["whole_ns"]), "done_ns": int(m["done_ns"]),
                    "codes": cols["codes"].astype(np.int64), "starts": cols["starts"].astype(np.int64),
                    "medians": cols["medians"].astype(np.float64)}
    return out


def remove(path: Path | None) -> int:
    """Delete the file (`store prune` of the summaries it is derived from): 1 when there was one, else 0."""
    if path is None:
        return 0
    try:
        dfd = cache_files.open_dir(path.parent, create=False)
    except OSError:
        return 0
    try:
        os.unlink(path.name, dir_fd=dfd)
        return 1
    except OSError:
        return 0
    finally:
        os.close(dfd)
