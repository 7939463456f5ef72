"""A synthetic file system with known truth, for the workload tests.

Two UTC days of 5-second samples from 4 targets: a noise floor of 0..1 MB per target
per interval, scheduled bursts (the events), one-minute spikes that are busy but too
small to be events, idle gaps whose lengths hit every boundary of seed 002's Table III,
one whole minute with no rows (a missing interval) and one counter reset (NaN) on one
target. Every burst moves a whole number of bytes per target per interval, so sums are
exact in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

GIB = 1 << 30
T0 = pd.Timestamp("2024-03-01T00:00:00Z").value  # ns
STEP_S = 5
TARGETS = 4
DAYS = 2
MINUTES = DAYS * 1440
FLOOR_MAX = 1_000_000  # bytes per target per interval: at most 0.8 MB/s per metric, 1.6 MB/s in all
FLOOR_BPS = 2 * TARGETS * FLOOR_MAX // STEP_S
SPIKE_BPS = GIB // 2   # busy (> 5 % of peak) but far below the 1 GiB/s event amplitude once smoothed


@dataclass(frozen=True)
class Burst:
    start_min: int
    end_min: int
    read_bps: int
    write_bps: int

    @property
    def total_bps(self) -> int:
        return self.read_bps + self.write_bps

    @property
    def bytes(self) -> int:
        return self.total_bps * (self.end_min - self.start_min) * 60


# The schedule, in order: ("idle", minutes) | ("spike", minutes) | ("burst", minutes, read GiB/s, write GiB/s)
SCHEDULE = [
    ("idle", 10), ("spike", 1), ("idle", 1), ("spike", 1), ("idle", 2), ("spike", 1), ("idle", 5), ("spike", 1),
    ("idle", 6), ("spike", 1), ("idle", 10), ("spike", 1), ("idle", 11), ("spike", 1), ("idle", 20), ("spike", 1),
    ("idle", 21), ("spike", 2), ("idle", 30), ("burst", 30, 0, 4), ("idle", 31), ("spike", 1), ("idle", 40),
    ("spike", 1), ("idle", 41), ("spike", 1), ("idle", 50), ("spike", 1), ("idle", 51), ("spike", 1), ("idle", 60),
    ("spike", 1), ("idle", 61), ("burst", 10, 2, 0), ("idle", 300), ("burst", 30, 4, 1), ("idle", 200),
    ("burst", 60, 0, 3), ("idle", 15), ("spike", 1), ("idle", 3), ("spike", 1), ("idle", 600), ("burst", 20, 0, 2),
]
MISSING_MINUTE = 606      # inside the 300-minute gap after the 10-minute read burst (506..806): splits it 100 + 199
RESET = (900, 7, 2)       # minute, 5-s slot in it, target: inside the 200-minute gap (836..1036)

# seed 002 Table III layout, counted by hand from SCHEDULE (the tail after the last burst is 1144 minutes)
EXPECTED_IDLE = [("1", 1, 1), ("2-5", 3, 10), ("6-10", 3, 26), ("11-20", 3, 46), ("21-30", 2, 51), ("31-40", 2, 71),
                 ("41-50", 2, 91), ("51-60", 2, 111), (">60", 6, 2304)]
OBSERVED_MINUTES = MINUTES - 1
BUSY_BELOW_33PCT = 18     # the spike minutes: every burst is above 33 % of the 5 GiB/s peak
BELOW_33PCT_MINUTES = 2711 + BUSY_BELOW_33PCT


def bursts() -> list[Burst]:
    out, t = [], 0
    for item in SCHEDULE:
        if item[0] == "burst":
            out.append(Burst(t, t + item[1], item[2] * GIB, item[3] * GIB))
        t += item[1]
    return out


def minute_rates() -> tuple[np.ndarray, np.ndarray]:
    """Scheduled aggregate read and write rate of every minute (bytes/s), without the floor."""
    read = np.zeros(MINUTES, np.int64)
    write = np.zeros(MINUTES, np.int64)
    t = 0
    for item in SCHEDULE:
        if item[0] == "spike":
            write[t:t + item[1]] = SPIKE_BPS
        elif item[0] == "burst":
            read[t:t + item[1]] = item[2] * GIB
            write[t:t + item[1]] = item[3] * GIB
        t += item[1]
    assert t <= MINUTES
    return read, write


def frame(seed: int = 7) -> pd.DataFrame:
    """The telemetry rows (long format of ioweather.store.telemetry_layout)."""
    rng = np.random.default_rng(seed)
    per_min = 60 // STEP_S
    n = MINUTES * per_min
    read_m, write_m = minute_rates()
    parts = []
    for metric, rate in (("read_bytes", read_m), ("write_bytes", write_m)):
        # per target per interval: the aggregate rate shared by the targets, plus the floor
        burst = np.repeat(rate * STEP_S // TARGETS, per_min)
        v = rng.integers(0, FLOOR_MAX + 1, size=(n, TARGETS)).astype(np.float64) + burst[:, None]
        m, s, tgt = RESET
        v[m * per_min + s, tgt] = np.nan
        parts.append((metric, v))
    t = T0 + np.arange(n, dtype=np.int64) * STEP_S * 1_000_000_000
    rows = []
    for metric, v in parts:
        rows.append(pd.DataFrame({
            "time_ns": np.repeat(t, TARGETS),
            "target": np.tile([f"syn-OST{i:04d}" for i in range(TARGETS)], n),
            "metric": metric,
            "value": v.ravel(),
            "interval_s": float(STEP_S),
        }))
    df = pd.concat(rows, ignore_index=True)
    lo = T0 + MISSING_MINUTE * 60_000_000_000
    return df[(df["time_ns"] < lo) | (df["time_ns"] >= lo + 60_000_000_000)].reset_index(drop=True)
