"""The dashboard's probe baselines kept across a restart (issue 40 item 4): one small JSON file beside the store.

A baseline is a month's order statistics per op; from the stored pieces it costs ~0.2-0.5 s a target, so a
dashboard watching 100 targets spent its first minute after a restart recomputing values it had a moment
before. The file holds, per target, what services/probe/cache.Baseline holds (numbers only, JSON: nothing
in it is executed), with when each was computed; the cache serves them as it serves any baseline past its
TTL, the refresh running in the background. Entries are ignored when the file was written for another
store, another baseline window, or another run of the target (a purge or a new probe), or are older than
`max_age_s`.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ioweather.store import cache_files
from ioweather.store.db import Store

NAME = "probe-baselines.json"
VERSION = 1


def path_of(store: Store) -> Path | None:
    """Where the file lives: the store's home (beside its Parquet directory), None for a store without one."""
    if store.parquet_dir is None:
        return None
    return Path(store.parquet_dir).parent / "cache" / NAME


def save(path: Path, key: dict, entries: dict[str, dict]) -> bool:
    """Write atomically (a reader never sees half a file; a link planted at the name is replaced, never written
    through: store/cache_files.py); False when it cannot be written (read-only home)."""
    body = json.dumps({"version": VERSION, "key": key, "saved_ns": time.time_ns(), "targets": entries},
                      allow_nan=False, separators=(",", ":"))
    return cache_files.save(path, body.encode())


def load(path: Path, key: dict, now_ns: int, max_age_s: float) -> dict[str, dict]:
    """{target: entry} written under the same `key`, each computed at most `max_age_s` before now; {} when
    there is no such file or it cannot be read."""
    try:
        dfd = cache_files.open_dir(path.parent, create=False)
    except OSError:
        return {}
    try:
        doc = json.loads(cache_files.read_in(dfd, path.name))
    except (OSError, ValueError):  # no file, a link (never followed), not JSON
        return {}
    finally:
        os.close(dfd)
    if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("key") != key:
        return {}
    out = {}
    for target, e in (doc.get("targets") or {}).items():
        if isinstance(e, dict) and 0 <= now_ns - int(e.get("computed_ns", 0)) <= max_age_s * 1e9:
            out[target] = e
    return out
