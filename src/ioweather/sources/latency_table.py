"""Tables of timed operations (CSV or Parquet) and the probe store, as durations in seconds.

Inputs of `ioweather factors`: the io-model benchmark's Parquet (one row per operation,
`duration_ns`, `size`, setup columns), any CSV with a duration column (R's
`toy_obs.csv` calls it `value`), or probe samples from the store. Nothing here
computes a statistic; it only finds, converts and filters columns.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ioweather.errors import UserError, from_os_error
from ioweather.files import check_input

DURATION_COLUMNS = ("duration_s", "duration_ns", "duration", "value")
UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
PROBE_OP_TO_IOMODEL = {"data_read": "R", "data_write": "W"}


def _is_parquet(path: Path) -> bool:
    if path.suffix.lower() in (".parquet", ".pq"):
        return True
    if path.suffix.lower() in (".csv", ".tsv", ".txt", ".gz"):
        return False
    with open(path, "rb") as f:
        return f.read(4) == b"PAR1"


@contextmanager
def reading(path: Path, what: str = "CSV or Parquet file"):
    """Errors met while reading `path` as one-line UserErrors naming the file."""
    try:
        check_input(path, what=f"read {what}")
        yield
    except (pa.ArrowException, OSError) as e:
        if getattr(e, "errno", None) and not isinstance(e, pa.ArrowException):
            raise from_os_error(path, e, "read") from None
        # Arrow's own errors (some are OSErrors without an errno): the file is there but not a table
        raise UserError(f"{path}: not a readable {what} ({str(e).splitlines()[0]})") from None


def read_table(path: str | Path, columns: list[str] | None = None) -> pd.DataFrame:
    """The rows of a CSV or Parquet file (only `columns` when given and present in it)."""
    p = Path(path)
    with reading(p):
        if p.stat().st_size == 0:
            raise UserError(f"{p} is empty")
        if _is_parquet(p):
            schema = pq.read_schema(p)
            want = [c for c in columns if c in schema.names] if columns else None
            table = pq.read_table(p, columns=want)
        else:
            opts = pacsv.ReadOptions(block_size=1 << 24)
            parse = pacsv.ParseOptions(delimiter="\t" if p.suffix.lower() == ".tsv" else ",")
            table = pacsv.read_csv(p, read_options=opts, parse_options=parse)
            if columns:
                table = table.select([c for c in columns if c in table.column_names])
    # split_blocks + self_destruct: one column per block, Arrow memory freed as it converts
    # (a 10 M-row read otherwise holds two copies and consolidates a third).
    return table.to_pandas(split_blocks=True, self_destruct=True)


def column_names(path: str | Path) -> list[str]:
    """Column names without reading the rows (Parquet) or with one small block (CSV)."""
    p = Path(path)
    with reading(p):
        if p.stat().st_size == 0:
            raise UserError(f"{p} is empty")
        if _is_parquet(p):
            return list(pq.read_schema(p).names)
        with pacsv.open_csv(p, read_options=pacsv.ReadOptions(block_size=1 << 16)) as r:
            return list(r.schema.names)


def duration_column(names: list[str], column: str | None, where: str) -> str:
    """`column`, or the first of duration_s, duration_ns, duration, value present."""
    if column:
        if column not in names:
            raise UserError(f"column {column!r} not found in {where}; columns: {', '.join(names) or 'none'}")
        return column
    for c in DURATION_COLUMNS:
        if c in names:
            return c
    raise UserError(f"no duration column in {where} (looked for {', '.join(DURATION_COLUMNS)}); "
                    f"name one with --column; columns: {', '.join(names) or 'none'}")


def unit_of(column: str, unit: str | None) -> float:
    """Seconds per unit of `column`: --unit, else its suffix (_ns, _us, _ms), else seconds."""
    if unit:
        return UNIT_SCALE[unit]
    for suffix, scale in (("_ns", 1e-9), ("_us", 1e-6), ("_ms", 1e-3)):
        if column.endswith(suffix):
            return scale
    return 1.0


def parse_where(items: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for it in items:
        if "=" not in it:
            raise UserError(f"--where wants COLUMN=VALUE, got {it!r}")
        k, v = it.split("=", 1)
        out.append((k.strip(), v.strip()))
    return out


def load_durations(paths: list[str], *, column: str | None, unit: str | None, need: list[str],
                   where: list[tuple[str, str]]) -> pd.DataFrame:
    """Rows of all `paths` with `duration_s` (float seconds) plus the `need` columns.

    `where` keeps rows as `apply_where` does.
    """
    need = list(dict.fromkeys(need))
    frames = []
    for path in paths:
        names = column_names(path)
        dcol = duration_column(names, column, str(path))
        wanted = list(dict.fromkeys([dcol, *need, *(k for k, _ in where)]))
        missing = [c for c in wanted if c not in names]
        if missing:
            raise UserError(f"column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} not found in "
                            f"{path}; columns: {', '.join(names)}")
        df = apply_where(read_table(path, wanted), where)
        raw = df[dcol]
        if not pd.api.types.is_numeric_dtype(raw):
            num = pd.to_numeric(raw, errors="coerce")
            if num.isna().sum() > raw.isna().sum():
                raise UserError(f"column {dcol!r} of {path} holds values that are not numbers")
            raw = num
        seconds = raw.to_numpy(dtype=np.float64, na_value=np.nan)
        scale = unit_of(dcol, unit)
        if scale != 1.0:
            seconds = seconds * scale
        out = df[[c for c in need if c != "duration_s"]]
        out = out.assign(duration_s=seconds)
        frames.append(out)
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(df) == 0:
        raise UserError(f"no rows in {', '.join(map(str, paths))}" + (" after --where" if where else ""))
    return df


def apply_where(df: pd.DataFrame, where: list[tuple[str, str]]) -> pd.DataFrame:
    """The rows whose column equals the value for every (column, value), compared as text
    (so `size=4096` and `cache=cached` both work)."""
    for k, v in where:
        df = df[df[k].astype(str) == v]
    return df
