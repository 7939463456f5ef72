"""The thresholds file of `ioweather job/jobs --thresholds FILE`: TOML or JSON overrides of the
finding thresholds, read as a mapping (stats/findings.py's `Thresholds.from_mapping` checks and applies
them, called by services/jobs/darshan.py: a source hands over raw values)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from ioweather.errors import UserError
from ioweather.files import read_regular_bytes
from typing import Any

#: A thresholds file holds a few dozen keys (a few KB): a larger one is refused before it is read
#: (a 2 GB file cost 4.3 GB, issue 41).
THRESHOLDS_MAX_BYTES = 1 << 20


def load(path: str | Path) -> Any:
    """The parsed TOML or JSON file (by its suffix; flat keys, or under a [thresholds] table), unchecked."""
    p = Path(path)
    text = read_regular_bytes(p, what="read thresholds file", max_bytes=THRESHOLDS_MAX_BYTES)
    kind = "JSON" if p.suffix.lower() == ".json" else "TOML"
    try:
        data = json.loads(text) if kind == "JSON" else tomllib.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError(f"thresholds file {path} is not valid {kind}: {str(e).splitlines()[0]}") from None
    except RecursionError:  # json and tomllib recurse per level of nesting
        raise UserError(f"thresholds file {path} is not valid {kind}: nested too deeply") from None
    return data
