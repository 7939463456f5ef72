"""The one JSON encoding of ioweather's documents (stdout `--json`, stored snapshots, the web's JSON twins).

Below every layer (store, views and web all write it): NaN/inf become null, numpy values
plain numbers, dates ISO 8601.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from typing import Any


def _json_default(o: Any):
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if type(o).__module__ == "numpy":  # numpy scalars and arrays, without importing numpy for --help
        import numpy as np

        if isinstance(o, np.ndarray):
            return _clean(o.tolist())
        if isinstance(o, np.bool_):
            return bool(o)
        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            return _finite(float(o))
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def _finite(x: float):
    return x if math.isfinite(x) else None


def _clean(o: Any) -> Any:
    """NaN/inf become null: JSON has no NaN, and consumers choke on it."""
    if isinstance(o, float):
        return _finite(o)
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def to_json(obj: Any) -> str:
    return json.dumps(_clean(obj), default=_json_default, ensure_ascii=False)


def iso_ms(ns) -> list[str]:
    """ISO 8601 UTC strings (ms) for int64 ns since the epoch, vectorized: 20k strings in a few ms."""
    import numpy as np  # not at the top: the CLI's --help loads this module, and numpy costs 0.1 s

    a = np.asarray(ns, np.int64).astype("datetime64[ns]").astype("datetime64[ms]")
    return [s + "Z" for s in np.datetime_as_string(a, unit="ms").tolist()]


def finite_or_none(values) -> list:
    """Floats as JSON numbers, NaN and ±inf (no sample, no baseline) as null."""
    import numpy as np  # not at the top: the CLI's --help loads this module, and numpy costs 0.1 s

    return [None if v is None or not np.isfinite(v) else float(v) for v in np.asarray(values, np.float64).tolist()]


def fields_dict(answer) -> dict:
    """A dataclass answer whose fields are JSON-ready values as its JSON document, without the deep copy
    of `dataclasses.asdict` (which took 0.2 s for a Servers heatmap of 24 targets, more than encoding it).
    The lists are the answer's own: a caller renders them, never changes them."""
    from dataclasses import fields

    return {f.name: getattr(answer, f.name) for f in fields(answer)}
