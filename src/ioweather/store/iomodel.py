"""The io-model output: one row per operation in Parquet (and CSV), run metadata beside it.

This file layout is the contract with `ioweather factors` (docs/iomodel.md):

    FILE.parquet   columns of SCHEMA, one row group per run
                   key-value metadata "ioweather.iomodel" = the runs document (JSON)
    FILE.runs.json the same runs document
    FILE.csv       (--csv) the same rows

Files are written under a temporary name and renamed when complete, so an
interrupted or failed benchmark never leaves a truncated file under the name the
user asked for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ioweather.errors import UserError, from_os_error
from ioweather.files import check_destination

FORMAT = "ioweather.iomodel"
FORMAT_VERSION = 1
METADATA_KEY = FORMAT

SCHEMA = pa.schema([
    ("run_id", pa.int32()),
    ("experiment", pa.string()),
    ("cache", pa.string()),
    ("op", pa.string()),
    ("mem_layout", pa.string()),
    ("file_layout", pa.string()),
    ("size", pa.int64()),
    ("proc", pa.int16()),
    ("repeat", pa.int16()),
    ("op_index", pa.int32()),
    ("file_offset", pa.int64()),
    ("mem_offset", pa.int64()),
    ("start_ns", pa.int64()),
    ("duration_ns", pa.int64()),
])


def runs_json_path(out: Path) -> Path:
    """FILE.parquet -> FILE.runs.json."""
    out = Path(out)
    return out.with_name((out.stem if out.suffix == ".parquet" else out.name) + ".runs.json")


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp-{os.getpid()}")


def _open_tmp(path: Path):
    """A new `_tmp(path)` for writing; a link or file planted under that name is refused, not followed
    (the outputs go where users name them, often a shared directory)."""
    check_destination(path, what="write output")
    return os.fdopen(os.open(_tmp(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644),
                     "wb")


def _const(value, n: int, typ: pa.DataType) -> pa.Array:
    return pa.array(np.full(n, value, dtype=object if typ == pa.string() else None), type=typ)


def run_table(run_id: int, experiment: str, config: dict, repeat: int, procs: list) -> pa.Table:
    """The rows of one run: `procs` are objects with proc, starts, durations, mem_offsets, file_offsets."""
    n = sum(len(p.durations) for p in procs)
    cols = {
        "run_id": _const(run_id, n, pa.int32()),
        "experiment": _const(experiment, n, pa.string()),
        "cache": _const(config["cache"], n, pa.string()),
        "op": _const(config["op"], n, pa.string()),
        "mem_layout": _const(config["mem_layout"], n, pa.string()),
        "file_layout": _const(config["file_layout"], n, pa.string()),
        "size": _const(config["size"], n, pa.int64()),
        "proc": pa.array(np.concatenate([np.full(len(p.durations), p.proc, np.int16) for p in procs])
                         if procs else np.zeros(0, np.int16)),
        "repeat": _const(repeat, n, pa.int16()),
        "op_index": pa.array(np.concatenate([np.arange(len(p.durations), dtype=np.int32) for p in procs])
                             if procs else np.zeros(0, np.int32)),
    }
    for name, attr in (("file_offset", "file_offsets"), ("mem_offset", "mem_offsets"), ("start_ns", "starts"),
                       ("duration_ns", "durations")):
        cols[name] = pa.array(np.concatenate([getattr(p, attr) for p in procs]) if procs else np.zeros(0, np.int64))
    return pa.table(cols, schema=SCHEMA)


class ResultWriter:
    """Streams runs into FILE.parquet (+ FILE.csv); `finish(doc)` adds the metadata and publishes the files."""

    def __init__(self, out: Path, csv: Path | None = None):
        self.out = Path(out)
        self.csv = Path(csv) if csv else None
        self.sidecar = runs_json_path(self.out)
        self.row_groups = 0
        self.rows = 0
        self._pq = self._csv = None
        self._pq_sink = self._csv_sink = None
        current = self.out
        try:
            self._pq_sink = _open_tmp(self.out)
            self._pq = pq.ParquetWriter(self._pq_sink, SCHEMA, compression="zstd")
            if self.csv is not None:
                current = self.csv
                self._csv_sink = _open_tmp(self.csv)
                self._csv = pacsv.CSVWriter(self._csv_sink, SCHEMA)
            # Probe the sidecar's directory now rather than after hours of measuring.
            current = self.sidecar
            _open_tmp(self.sidecar).close()
        except UserError:
            self.abort()
            raise
        except (OSError, pa.ArrowException) as e:
            self.abort()
            raise from_os_error(current, e, "write output") from None

    def write(self, table: pa.Table) -> int:
        """Append one run; returns its row-group index."""
        idx = self.row_groups
        self._pq.write_table(table, row_group_size=max(len(table), 1))
        if self._csv is not None:
            self._csv.write_table(table)
        self.row_groups += 1
        self.rows += len(table)
        return idx

    def finish(self, doc: dict) -> None:
        text = json.dumps(doc, ensure_ascii=False)
        self._pq.add_key_value_metadata({METADATA_KEY: text})
        self._pq.close()
        self._pq = None
        self._pq_sink.close()
        if self._csv is not None:
            self._csv.close()
            self._csv_sink.close()
            self._csv = None
            os.replace(_tmp(self.csv), self.csv)
        fd = os.open(_tmp(self.sidecar), os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        os.replace(_tmp(self.sidecar), self.sidecar)
        os.replace(_tmp(self.out), self.out)

    def abort(self) -> None:
        for w in (self._pq, self._csv):
            try:
                if w is not None:
                    w.close()
            except Exception:
                pass
        for sink in (self._pq_sink, self._csv_sink):
            if sink is not None:
                sink.close()
        for path in (self.out, self.csv, self.sidecar):
            if path is not None:
                try:
                    os.unlink(_tmp(path))
                except OSError:
                    pass  # never created


def read_metadata(path: Path) -> dict:
    """The runs document of an io-model Parquet file."""
    try:
        meta = pq.read_metadata(path).metadata or {}
    except (OSError, pa.ArrowInvalid) as e:
        raise from_os_error(path, e, "read") from None
    raw = meta.get(METADATA_KEY.encode())
    if raw is None:
        raise UserError(f"{path} is not an io-model output (no {METADATA_KEY} metadata)")
    return json.loads(raw)


def read_durations(path: Path, row_groups: list[int]) -> np.ndarray:
    """duration_ns of the given row groups (= runs), without loading the rest of the file."""
    if not row_groups:
        return np.zeros(0, np.int64)
    t = pq.ParquetFile(path).read_row_groups(row_groups, columns=["duration_ns"])
    return t.column("duration_ns").to_numpy()
