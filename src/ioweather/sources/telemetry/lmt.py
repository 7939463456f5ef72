"""LMT databases (Lustre Monitoring Tool, schema 1.1): MySQL/MariaDB by URL, or an SQLite copy.

LMT's collector inserts, every 5 s, one TIMESTAMP_INFO row and per OST one OST_DATA row with
cumulative READ_BYTES/WRITE_BYTES (plus KBYTES_FREE/USED, INODES_FREE/USED), per OSS one
OSS_DATA row (PCT_CPU, PCT_MEMORY), per MDT one MDS_DATA row and one MDS_OPS_DATA row per
operation (cumulative SAMPLES). This module reads them in chunks of TS_ID, as raw Wide grids:
the counters stay cumulative (services/telemetry/ingest.py turns them into amounts per interval) and a missing
OST_DATA row is a missing sample, not a zero.

Time zones: TIMESTAMP_INFO.TIMESTAMP is a DATETIME without zone, written with the LMT
server's local clock. On MySQL, UNIX_TIMESTAMP() converts it with the server's own zone,
which is the right one unless the database was moved; an SQLite copy carries no zone at all.
`timezone` (an IANA name) overrides both; times are UTC everywhere after this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import sqlalchemy as sa

from ioweather.errors import UserError, from_os_error
from ioweather.files import fd_path, open_regular
from ioweather.sources.telemetry.base import COUNTER, GAUGE, Wide, local_to_utc_ns
from ioweather.sources.telemetry.importers import Importer

REQUIRED_TABLES = ("TIMESTAMP_INFO", "OST_INFO", "OST_DATA")
MD_OPS = ("open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr", "setattr",
          "getxattr", "setxattr", "statfs", "sync")
ROWS_PER_QUERY = 400_000


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1:***@", url)


def engine_url(source: str) -> tuple[str, str]:
    """(SQLAlchemy URL, 'mysql' | 'sqlite') for a URL or an SQLite file path."""
    s = source.strip()
    for prefix in ("mysql://", "mariadb://", "mysql+pymysql://", "mariadb+pymysql://"):
        if s.startswith(prefix):
            return "mysql+pymysql://" + s[len(prefix):], "mysql"
    if s.startswith("sqlite:///"):
        s = s[len("sqlite:///"):]
    elif "://" in s:
        raise UserError(f"unsupported LMT database URL {redact(s)!r}: use mysql://user:password@host/db "
                        "or the path of an SQLite copy")
    if not os.path.lexists(s):
        raise UserError(f"LMT database {s!r} not found (give a mysql:// URL or an SQLite file)")
    return s, "sqlite"


def _open_sqlite(path: str):
    """The SQLite copy opened as a regular file (a FIFO is refused, not waited on), and the URL that
    makes SQLite read that very file, read-only: an import never writes into the monitoring database."""
    f = open_regular(path, what="read LMT database")
    try:
        if f.read(16) != b"SQLite format 3\x00":
            raise UserError(f"{path} is not an SQLite database")
    except OSError as e:
        f.close()
        raise from_os_error(path, e, "read LMT database") from None
    except BaseException:
        f.close()
        raise
    return f, f"sqlite:///file:{fd_path(f)}?mode=ro&uri=true"


def _db_error(source: str, e: Exception) -> UserError:
    orig = getattr(e, "orig", None) or e
    args = getattr(orig, "args", ())
    text = str(args[1]) if len(args) >= 2 and isinstance(args[0], int) else str(orig).splitlines()[0]
    return UserError(f"cannot read LMT database {redact(source)}: {text}")


def _exact_int64(col: np.ndarray) -> np.ndarray:
    """Which values of an LMT counter column int64 holds exactly.

    A BIGINT UNSIGNED above 2^63 - 1 reaches numpy as uint64 or, mixed with NULLs, as float;
    a plain astype(int64) would wrap it negative or round it, and the ingest would turn that
    into a huge or negative rate. Such a value is no byte count LMT can have written.
    """
    if col.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            return np.isfinite(col) & (np.abs(col) < 2.0 ** 63) & (col == np.floor(col))
    if col.dtype.kind == "u":
        return col <= np.iinfo(np.int64).max
    if col.dtype.kind == "i":
        return np.ones(col.size, dtype=bool)
    return np.zeros(col.size, dtype=bool)  # objects: pandas could not make numbers of them


@dataclass
class LmtInfo:
    kind: str
    filesystem: str | None
    osts: dict[int, str]
    oss: dict[int, str]
    mds: dict[int, tuple[str, str]]  # MDS_ID -> (MDT name, host name)
    ops: dict[int, str]              # OPERATION_ID -> md op kept
    tables: set[str]
    timezone: str
    ts_ids: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    times_ns: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    step_s: float | None = None
    dropped_times: int = 0
    #: counter values no int64 holds (>= 2^63, or not whole): read as missing, never wrapped
    out_of_range: int = 0


class LmtDatabase:
    def __init__(self, source: str, timezone: str | None = None):
        self.source = source
        url, self.kind = engine_url(source)
        self.file = None
        if self.kind == "sqlite":
            self.file, url = _open_sqlite(url)
        self.timezone = timezone
        kw = {"connect_args": {"connect_timeout": 10}} if self.kind == "mysql" else {}
        self.engine = sa.create_engine(url, **kw)
        try:
            with self.engine.connect() as conn:
                self.tables = set(sa.inspect(conn).get_table_names())
        except Exception as e:  # driver errors: wrong password, unknown host or database
            self.close()
            raise _db_error(source, e) from None
        missing = [t for t in REQUIRED_TABLES if t not in self.tables]
        if missing:
            self.close()
            raise UserError(f"{redact(source)} is not an LMT database: missing table(s) {', '.join(missing)}")

    def close(self) -> None:
        self.engine.dispose()
        if self.file is not None:
            self.file.close()

    def _garbage(self, e: Exception) -> UserError:
        return UserError(f"cannot read LMT database {redact(self.source)}: a value is not what LMT writes "
                         f"({type(e).__name__}: {e})")

    def _rows(self, conn, sql: str, params: tuple = ()) -> list[tuple]:
        # the driver's own cursor: plain tuples, several times faster to turn into arrays than
        # SQLAlchemy Row objects (pandas probes every Row for attributes)
        try:
            cur = conn.connection.cursor()
            try:
                cur.execute(sql, params) if params else cur.execute(sql)
                return cur.fetchall()
            finally:
                cur.close()
        except Exception as e:
            raise _db_error(self.source, e) from None

    def _sql(self, sql: str) -> str:
        # the raw drivers disagree on placeholders: sqlite3 uses ?, pymysql %s
        return sql.replace("?", "%s") if self.kind == "mysql" else sql

    def info(self, since_ns: int | None = None, until_ns: int | None = None) -> LmtInfo:
        try:
            return self._info(since_ns, until_ns)
        except (ValueError, TypeError, OverflowError) as e:  # an id or a name that is not one
            raise self._garbage(e) from None

    def _info(self, since_ns: int | None, until_ns: int | None) -> LmtInfo:
        with self.engine.connect() as conn:
            fsname = None
            if "FILESYSTEM_INFO" in self.tables:
                r = self._rows(conn, "SELECT FILESYSTEM_NAME FROM FILESYSTEM_INFO")
                fsname = str(r[0][0]) if r else None
            osts = {int(i): str(n) for i, n in self._rows(conn, "SELECT OST_ID, OST_NAME FROM OST_INFO")}
            oss = ({int(i): str(h) for i, h in self._rows(conn, "SELECT OSS_ID, HOSTNAME FROM OSS_INFO")}
                   if "OSS_INFO" in self.tables else {})
            mds = ({int(i): (str(n), str(h)) for i, n, h in
                    self._rows(conn, "SELECT MDS_ID, MDS_NAME, HOSTNAME FROM MDS_INFO")}
                   if "MDS_INFO" in self.tables else {})
            ops = {}
            if "OPERATION_INFO" in self.tables and "MDS_OPS_DATA" in self.tables:
                # only operations LMT recorded: the others would be series of nothing but NaN
                # (OPERATION_ID is indexed in LMT's schema, so this does not scan the table)
                recorded = {int(r[0]) for r in self._rows(conn, "SELECT DISTINCT OPERATION_ID FROM MDS_OPS_DATA")}
                ops = {int(i): str(n) for i, n in self._rows(conn, "SELECT OPERATION_ID, OPERATION_NAME FROM OPERATION_INFO")
                       if str(n) in MD_OPS and int(i) in recorded}
            if self.timezone is None and self.kind == "mysql":
                rows = self._rows(conn, "SELECT TS_ID, UNIX_TIMESTAMP(TIMESTAMP) FROM TIMESTAMP_INFO ORDER BY TS_ID")
                tzname = "the MySQL server's zone"
                ids = np.array([r[0] for r in rows], dtype=np.int64)
                times = np.array([int(round(float(r[1]) * 1e9)) if r[1] is not None else -1 for r in rows],
                                 dtype=np.int64)
            else:
                rows = self._rows(conn, "SELECT TS_ID, TIMESTAMP FROM TIMESTAMP_INFO ORDER BY TS_ID")
                tzname = self.timezone or "UTC"
                ids = np.array([r[0] for r in rows], dtype=np.int64)
                times = local_to_utc_ns(pd.Series([r[1] for r in rows], dtype=object), tzname)
        info = LmtInfo(self.kind, fsname, osts, oss, mds, ops, self.tables, tzname)
        # keep TS rows whose time moves forward (a clock step or an unresolvable DST hour breaks this)
        valid = times >= 0
        keep = _strictly_increasing(times, valid)
        info.dropped_times = int(valid.sum() - keep.sum())
        ids, times = ids[keep], times[keep]
        sel = np.ones(ids.size, dtype=bool)
        if since_ns is not None:
            sel &= times >= since_ns
        if until_ns is not None:
            sel &= times <= until_ns
        info.ts_ids, info.times_ns = ids[sel], times[sel]
        if info.times_ns.size >= 2:
            info.step_s = float(np.median(np.diff(info.times_ns))) / 1e9
        return info

    def chunks(self, info: LmtInfo, rows_per_query: int = ROWS_PER_QUERY) -> Iterator[tuple[int, list[Wide]]]:
        """Yield (number of timestamps covered, [Wide, ...]) chunk by chunk, in time order."""
        n_ts = info.ts_ids.size
        per = max(1, rows_per_query // max(1, len(info.osts)))
        with self.engine.connect() as conn:
            for a in range(0, n_ts, per):
                lo = max(0, a - 1)  # the previous chunk's last timestamp: the counters' baseline
                b = min(n_ts, a + per)
                ids, times = info.ts_ids[lo:b], info.times_ns[lo:b]
                try:
                    chunk = self._chunk(conn, info, ids, times, overlap=a > 0)
                except (ValueError, TypeError, OverflowError) as e:  # text where LMT writes numbers
                    raise self._garbage(e) from None
                yield b - a, chunk

    def _chunk(self, conn, info: LmtInfo, ids: np.ndarray, times: np.ndarray, overlap: bool) -> list[Wide]:
        lo, hi = int(ids[0]), int(ids[-1])
        out: list[Wide] = []
        step = info.step_s

        def grid(rows: list, key_ids: list[int], ncols: int, bigint: bool = False):
            """rows = [(key, TS_ID, v1, v2, ...)] -> (row positions, column positions, [values per column]).

            `bigint`: every value column is an LMT bigint, so the rows can become one exact int64
            array at once (numpy would truncate floats silently, hence only there)."""
            if not rows:
                return np.empty(0, np.int64), np.empty(0, np.int64), []
            try:
                if not bigint:
                    raise TypeError
                a = np.array(rows, dtype=np.int64)
                keys_col, ts = a[:, 0], a[:, 1]
                cols = [a[:, c] for c in range(2, 2 + ncols)]
            except (TypeError, ValueError, OverflowError):  # floats (PCT_CPU) or NULLs
                arr = pd.DataFrame.from_records(rows)
                keys_col, ts = arr[0].to_numpy(np.int64), arr[1].to_numpy(np.int64)
                # integer columns stay int64 (exact byte counters); NULLs make a column float with NaN
                cols = [pd.to_numeric(arr[c], errors="coerce").to_numpy() for c in range(2, 2 + ncols)]
            pos = np.searchsorted(ids, ts)
            pos_ok = (pos < ids.size) & (ids[np.minimum(pos, ids.size - 1)] == ts)
            keys = np.asarray(sorted(key_ids), dtype=np.int64)
            k = np.searchsorted(keys, keys_col)
            k_ok = (k < keys.size) & (keys[np.minimum(k, keys.size - 1)] == keys_col)
            ok = pos_ok & k_ok
            return pos[ok], k[ok], [c[ok] for c in cols]

        def matrices(pos, k, col, nk, integer=True):
            miss = np.ones((ids.size, nk), dtype=bool)
            if integer:
                m = np.zeros((ids.size, nk), dtype=np.int64)
                good = _exact_int64(col)
                info.out_of_range += int(col.size - good.sum() - (np.isnan(col).sum() if col.dtype.kind == "f" else 0))
                m[pos[good], k[good]] = col[good].astype(np.int64)
                miss[pos[good], k[good]] = False
            else:
                m = np.full((ids.size, nk), np.nan)
                m[pos, k] = col
                miss = np.isnan(m)
            return m, miss

        # OSTs
        ost_ids = sorted(info.osts)
        rows = self._rows(conn, self._sql(
            "SELECT OST_ID, TS_ID, READ_BYTES, WRITE_BYTES, KBYTES_FREE, KBYTES_USED, INODES_FREE, INODES_USED "
            "FROM OST_DATA WHERE TS_ID BETWEEN ? AND ?"), (lo, hi))
        pos, k, cols = grid(rows, ost_ids, 6, bigint=True)
        names = [info.osts[i] for i in ost_ids]
        if cols:
            for metric, col in (("read_bytes", cols[0]), ("write_bytes", cols[1])):
                m, miss = matrices(pos, k, col, len(ost_ids))
                out.append(Wide(metric, COUNTER, times, names, m, step, miss, overlap=overlap))
            free, used, ifree, iused = (matrices(pos, k, c, len(ost_ids), integer=False)[0] for c in cols[2:6])
            out += _capacity(names, times, step, free, used, ifree, iused, overlap)

        # OSS CPU and memory
        if "OSS_DATA" in info.tables and info.oss:
            oss_ids = sorted(info.oss)
            rows = self._rows(conn, self._sql(
                "SELECT OSS_ID, TS_ID, PCT_CPU, PCT_MEMORY FROM OSS_DATA WHERE TS_ID BETWEEN ? AND ?"), (lo, hi))
            pos, k, cols = grid(rows, oss_ids, 2)
            hosts = [info.oss[i] for i in oss_ids]
            if cols:
                for metric, col in (("cpu_pct", cols[0]), ("mem_used_pct", cols[1])):
                    out.append(Wide(metric, GAUGE, times, hosts, matrices(pos, k, col, len(hosts), False)[0], step,
                                    overlap=overlap))

        # MDTs: CPU, capacity, operations
        if info.mds:
            mds_ids = sorted(info.mds)
            mdts = [info.mds[i][0] for i in mds_ids]
            if "MDS_DATA" in info.tables:
                rows = self._rows(conn, self._sql(
                    "SELECT MDS_ID, TS_ID, PCT_CPU, KBYTES_FREE, KBYTES_USED, INODES_FREE, INODES_USED "
                    "FROM MDS_DATA WHERE TS_ID BETWEEN ? AND ?"), (lo, hi))
                pos, k, cols = grid(rows, mds_ids, 5)
                if cols:
                    out.append(Wide("cpu_pct", GAUGE, times, [info.mds[i][1] for i in mds_ids],
                                    matrices(pos, k, cols[0], len(mds_ids), False)[0], step, overlap=overlap))
                    free, used, ifree, iused = (matrices(pos, k, c, len(mds_ids), integer=False)[0] for c in cols[1:5])
                    out += _capacity(mdts, times, step, free, used, ifree, iused, overlap)
            if "MDS_OPS_DATA" in info.tables and info.ops:
                op_ids = sorted(info.ops)
                marks = ",".join(str(i) for i in op_ids)
                rows = self._rows(conn, self._sql(
                    f"SELECT MDS_ID * 1000 + OPERATION_ID, TS_ID, SAMPLES FROM MDS_OPS_DATA "
                    f"WHERE TS_ID BETWEEN ? AND ? AND OPERATION_ID IN ({marks})"), (lo, hi))
                keys = [m * 1000 + o for m in mds_ids for o in op_ids]
                pos, k, cols = grid(rows, keys, 1, bigint=True)
                if cols:
                    m, miss = matrices(pos, k, cols[0], len(keys))
                    m, miss = m.reshape(ids.size, len(mds_ids), len(op_ids)), miss.reshape(ids.size, len(mds_ids), len(op_ids))
                    for j, op in enumerate(op_ids):
                        out.append(Wide(f"md_{info.ops[op]}", COUNTER, times, mdts, m[:, :, j], step, miss[:, :, j],
                                        overlap=overlap))
        return out


def _capacity(names, times, step, free, used, ifree, iused, overlap) -> list[Wide]:
    """LMT stores free and used; the layout wants capacity = free + used (KiB -> bytes)."""
    return [Wide("capacity_bytes", GAUGE, times, names, free + used, step, overlap=overlap, scale=1024.0),
            Wide("free_bytes", GAUGE, times, names, free, step, overlap=overlap, scale=1024.0),
            Wide("files_total", GAUGE, times, names, ifree + iused, step, overlap=overlap),
            Wide("files_free", GAUGE, times, names, ifree, step, overlap=overlap)]


def _strictly_increasing(times: np.ndarray, valid: np.ndarray) -> np.ndarray:
    keep = np.zeros(times.size, dtype=bool)
    last = None
    for i in np.flatnonzero(valid):
        t = int(times[i])
        if last is None or t > last:
            keep[i] = True
            last = t
    return keep


class LmtImporter(Importer):
    kind = "lmt"

    def display(self) -> str:
        return redact(self.source) if "://" in self.source else self.source

    def label(self) -> str:
        return f"lmt {redact(self.source)}" if "://" in self.source else super().label()

    def open(self) -> None:
        self.db = LmtDatabase(self.source, self.tz)
        info = self.info = self.db.info(self.since_ns, self.until_ns)
        if self.tz is None and self.db.kind == "sqlite":
            self.notes.append("LMT stores the server's local time; read as UTC (give --timezone ZONE)")
        if info.dropped_times:
            self.notes.append(f"{info.dropped_times} timestamps not after the previous one were dropped")
        if info.times_ns.size < 2:
            ranged = self.since_ns or self.until_ns
            raise UserError(f"{redact(self.source)}: fewer than 2 LMT timestamps"
                            f"{' in the given time range' if ranged else ''}: nothing to import")

    def total(self) -> int:
        return int(self.info.ts_ids.size)

    def chunks(self, advance: Callable[[int], None]) -> Iterator[Wide]:
        for n, wides in self.db.chunks(self.info):
            yield from wides
            advance(n)
        if self.info.out_of_range:
            self.notes.append(f"{self.info.out_of_range} counter values no 64-bit integer holds (>= 2^63 or "
                              "fractional) were read as missing")

    def close(self) -> None:
        if getattr(self, "db", None) is not None:
            self.db.close()
