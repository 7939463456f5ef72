"""Issue 40: the events' probe baselines (services/answers/event_probes.PiecesBaselines, what the Report's
event slowdowns use) from the store's pieces equal services.jobs.weather.ProbeBaselines' computation over
every raw sample, day by day: the medians bit for bit and the learning verdicts (NaN) the same, on a store
with archived days (pieces built) and rows still in the database, two targets, one with two runs."""

from __future__ import annotations

import time

import numpy as np

from ioweather.config import Settings
from ioweather.services.answers.event_probes import PiecesBaselines
from ioweather.services.jobs.weather import ProbeBaselines
from ioweather.store import open_store
from ioweather.store.probe_archive import archive_completed_days
from web_synthetic import Episode, add_target

DAY = 86_400 * 10**9
H = 3_600 * 10**9


def test_pieces_baselines_equal_the_raw_samples_computation(tmp_path):
    store = open_store(Settings.resolve(tmp_path / "h"))
    try:
        now = time.time_ns()
        start = (now // DAY - 4) * DAY + 5 * H
        ep = [Episode(start + DAY, start + DAY + 3 * H, 7.0, ("data_read", "md_stat"))]
        add_target(store, "scratch", start, now, period_s=30.0, seed=1, episodes=ep, error_rate=0.01,
                   timeout_rate=0.002)
        mid = start + 2 * DAY
        add_target(store, "home", start + 7 * H, mid + 123 * 10**9, period_s=30.0, seed=2, error_rate=0.005)
        add_target(store, "home", mid, now, period_s=60.0, seed=3, episodes=ep)
        assert archive_completed_days(store, keep_days=1) > 0  # days to Parquet, their pieces built
        raw, fast = ProbeBaselines(store), PiecesBaselines(store)
        finite = nan = 0
        for target in ("scratch", "home"):
            for day in range(start // DAY, now // DAY + 1):
                a, b = raw.expected(target, day), fast.expected(target, day)
                assert np.array_equal(a, b, equal_nan=True), (target, day, a, b)
                finite += int(np.isfinite(a).sum())
                nan += int(np.isnan(a).sum())
        assert finite and nan  # judged days and learning ones both compared
    finally:
        store.dispose()
