"""Stores as a new admin sees them: a minute after `make watch` starts, and an hour later (synthetic
probe samples, written as the probe writes them). Used by the first-hour browser tests and by
scripts/screenshots.py, which photographs every page of both for docs/dashboard.md."""

from __future__ import annotations

from pathlib import Path

from ioweather.config import Settings
from ioweather.store import open_store
from web_synthetic import Episode, add_target

TARGET = "laptop:/home"
#: Noon UTC of a fixed day, so the screenshots are the same at every run.
T0_NS = 1_795_003_200 * 10**9
MINUTE, HOUR = 60 * 10**9, 3600 * 10**9


def first_minute(home: Path) -> int:
    """One minute of a 1 Hz probe ending at T0; returns T0."""
    store = open_store(Settings.resolve(home))
    add_target(store, TARGET, T0_NS - MINUTE, T0_NS, period_s=1, seed=1, error_rate=0, timeout_rate=0)
    store.dispose()
    return T0_NS


def first_hour(home: Path) -> int:
    """An hour of a 1 Hz probe ending at T0, md ops 4x slower for 5 minutes 20 minutes ago; returns T0."""
    store = open_store(Settings.resolve(home))
    add_target(store, TARGET, T0_NS - HOUR, T0_NS, period_s=1, seed=2, error_rate=0, timeout_rate=0,
               episodes=[Episode(T0_NS - 25 * MINUTE, T0_NS - 20 * MINUTE, 4.0,
                                 ("md_create", "md_stat", "md_read", "md_delete"))])
    store.dispose()
    return T0_NS
