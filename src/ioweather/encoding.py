"""The one JSON encoding of ioweather's documents (stdout `--json`, stored snapshots, the web's JSON twins).

Below every layer (store, views and web all write it): NaN/inf become null, numpy values
plain numbers, dates ISO 8601.
"""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import date, datetime
from typing import Any


def _json_default(o: Any):
    if isinstance(o, (datetime, date)):
        return o.isoformat()
    if type(o).__module__ == "numpy":  # numpy scalars and arrays
        # lazy: numpy: this module is on every light path (`--help`, `slowdown --check`), numpy costs it ~0.1 s
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


class Encoded(dict):
    """A JSON object whose text is already known (`text`, `to_json` of the same items): kept by a page whose
    part changes far less often than it is asked for (the Jobs page's summary and plot, 0.75 MB, the same
    until a job is stored). A document holding one as a top-level value is encoded around it, the same text
    as encoding it again; anywhere else it is a plain dict."""

    __slots__ = ("text",)

    def __init__(self, value: dict, text: str | None = None):
        """`text`: `to_json(value)` when the caller made it another way (the same text, or the answer changes)."""
        super().__init__(value)
        self.text = to_json(value) if text is None else text


def to_json(obj: Any) -> str:
    if type(obj) is dict and obj and all(type(k) is str for k in obj) and \
            any(type(v) is Encoded or _encoded_list(v) for v in obj.values()):
        # json.dumps' own layout of an object (", " and ": ") and of a list (", "), its members encoded one by one
        return "{" + ", ".join(f"{_encode(k)}: {_member(v)}" for k, v in obj.items()) + "}"
    return _encode(obj)


def _encoded_list(v) -> bool:
    return type(v) is list and bool(v) and all(type(x) is Encoded for x in v)


def _member(v) -> str:
    if type(v) is Encoded:
        return v.text
    if _encoded_list(v):
        return "[" + ", ".join(x.text for x in v) + "]"
    return _encode(v)


def _encode(obj: Any) -> str:
    try:
        # Most documents hold no NaN or inf (their services already write None): encoded as they are, in C.
        # `_clean`'s walk of every value in Python was 0.1 s of a Status page of 100 targets and more of
        # History's 2 MB (issue 40); a document that holds one is walked and encoded again, the same text.
        return json.dumps(obj, default=_json_default, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_clean(obj), default=_json_default, ensure_ascii=False)


def iso_ms(ns) -> list[str]:
    """ISO 8601 UTC strings (ms) for int64 ns, vectorized: 20k strings in a few ms."""
    # lazy: numpy: this module is on every light path (`--help`, `slowdown --check`), numpy costs it ~0.1 s
    import numpy as np

    a = np.asarray(ns, np.int64).astype("datetime64[ns]").astype("datetime64[ms]")
    return [s + "Z" for s in np.datetime_as_string(a, unit="ms").tolist()]


def finite_or_none(values) -> list:
    """A series as JSON numbers: NaN and inf become None."""
    # lazy: numpy: this module is on every light path (`--help`, `slowdown --check`), numpy costs it ~0.1 s
    import numpy as np

    return [None if v is None or not np.isfinite(v) else float(v) for v in np.asarray(values, np.float64).tolist()]


def answer_dict(answer) -> dict:
    """A dataclass answer as the JSON-ready dict of its fields (its `to_json()`): a field that is itself
    an answer becomes that answer's `to_json()`, every other value is shared, not copied. Nested answers
    are fields, never items of a list. (`dataclasses.asdict` deep-copies every list: 0.65 s per request
    for the Jobs page's plot of 20 000 jobs.)"""
    return {f.name: _answer_part(getattr(answer, f.name)) for f in dataclasses.fields(answer)}


def _answer_part(v):
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return v.to_json() if hasattr(v, "to_json") else answer_dict(v)
    return v


class Answer:
    """Base of a typed answer whose fields are its JSON document: `to_json()` is `answer_dict(self)`."""

    def to_json(self) -> dict:
        return answer_dict(self)
