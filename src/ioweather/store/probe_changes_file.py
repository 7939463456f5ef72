"""The dashboard's level-change searches kept across a restart (issue 40 item 4): one small JSON file beside the store.

The History and Timeline pages mark where each op's 10-minute medians changed level over the month before the
last settled interval: 600 searches for 100 targets, ~1 s of CPU and ruptures' import (~0.7 s), which a
restarted dashboard made again before its first marks answer, on series it had searched a moment before. The
file holds each search's result under a digest of its input (the target, the window, the search's parameters
and the series' bytes: services/probe/cache.py `_series_digest`), so a restart reuses a result only for the very
same series; numbers and op names only (JSON: nothing in it is executed). Written for another store or by
another version of ioweather (the search may change): ignored.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ioweather import __version__
from ioweather.store import cache_files
from ioweather.store.db import Store

NAME = "probe-changes.json"
VERSION = 1
#: A file larger than this is not read (entries of 100 targets' four windows are ~0.2 MB).
MAX_BYTES = 64 * 2**20


def path_of(store: Store) -> Path | None:
    """Where the file lives: the store's home (beside its Parquet directory), None for a store without one."""
    if store.parquet_dir is None:
        return None
    return Path(store.parquet_dir).parent / "cache" / NAME


def save(path: Path, store_key: str, entries: dict[str, list]) -> bool:
    """Write atomically (store/cache_files.py: a link planted at the name is replaced, never written through);
    False when it cannot be written (a read-only home, a value JSON cannot hold)."""
    try:
        body = json.dumps({"version": VERSION, "ioweather": __version__, "store": store_key,
                           "saved_ns": time.time_ns(), "entries": entries}, allow_nan=False, separators=(",", ":"))
    except ValueError:
        return False
    return cache_files.save(path, body.encode())


def load(path: Path, store_key: str) -> dict[str, list]:
    """{digest: entry} written for this store by this version; {} when there is no such file or it cannot be read."""
    try:
        dfd = cache_files.open_dir(path.parent, create=False)
    except OSError:
        return {}
    try:
        doc = json.loads(cache_files.read_in(dfd, path.name, MAX_BYTES))
    except (OSError, ValueError):  # no file, a link (never followed), too large, not JSON
        return {}
    finally:
        os.close(dfd)
    if not isinstance(doc, dict) or doc.get("version") != VERSION or doc.get("ioweather") != __version__ \
            or doc.get("store") != store_key or not isinstance(doc.get("entries"), dict):
        return {}
    return doc["entries"]
