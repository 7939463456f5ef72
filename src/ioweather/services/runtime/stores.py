"""The store as commands and pages get it (issue 28's one door: they import services, never store/).

Opening, checking and archiving are the store's own work; these functions are the services' hand
on it, so that a command names what it asks for and the import graph shows every store use here.
"""

from __future__ import annotations

import hashlib

from ioweather import __version__, store as _store
from ioweather.errors import UserError
from ioweather.store import kept_answers as _kept
from ioweather.store import probe_archive as _archive
from ioweather.store.db import Store, redact

__all__ = ["Store", "archive_probe_samples", "check_store", "keep_answer", "kept_answer", "open_store",
           "store_location"]


def open_store(settings):
    """The store of `settings` (created on first use, upgraded in place)."""
    return _store.open_store(settings)


def check_store(settings, *, repair: bool = False):
    """`store check`'s report: what is wrong with the store, and with --repair what was fixed."""
    # lazy: pandas, pyarrow via store.check, loaded only when this runs
    from ioweather.store import check as _check  # pyarrow: not at the dashboard's start (it imports this module)

    return _check.check(settings, repair=repair)


def archive_probe_samples(store, *, keep_days: int) -> int:
    """Move completed days of probe samples to Parquet; the count moved. A server database keeps all rows."""
    if not _archive.enabled(store):
        raise UserError("archiving applies to the embedded SQLite store only; a server database keeps all rows")
    return _archive.archive_completed_days(store, keep_days=keep_days)


def store_location(settings) -> str:
    """Where the store is, for people: the server URL without its password, or the SQLite file."""
    return redact(settings.db_url) if settings.db_url else str(settings.sqlite_path)


def _store_id(settings) -> str:
    # the URL's hash, not the URL: a PostgreSQL URL may carry a password
    return hashlib.sha256(str(settings.url()).encode()).hexdigest()[:16]


def kept_answer(settings, key: str, version: str) -> str | None:
    """A page's answer (JSON text) an earlier process kept for `key` at `version` and this ioweather version
    (store/kept_answers.py), None without a valid one."""
    return _kept.load(settings.home, _store_id(settings), key, _versioned(version))


def keep_answer(settings, key: str, version: str, text: str) -> bool:
    """Keep a page's answer (JSON text) for `key` at `version` across a restart (store/kept_answers.py), for
    this ioweather version only: another one may compute it otherwise."""
    return _kept.save(settings.home, _store_id(settings), key, _versioned(version), text)


def _versioned(version: str) -> str:
    return repr((__version__, version))
