"""The cost of report_kept's marker part that a prune of raw rows moves (`store.probe.rows_begin`) beside the
pieces' `days_marker`, on synthetic stores of 2 and 100 targets (docs/benchmarks.md, branch revfix)."""

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from web_synthetic import add_target
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store, probe_pieces as pieces_store
DAY = 86_400 * 10**9
T0 = 1_709_251_200 * 10**9
for ntargets, period in ((2, 10.0), (100, 600.0)):
    settings = Settings.resolve(tempfile.mkdtemp() + "/home")
    store = open_store(settings)
    for k in range(ntargets):
        add_target(store, f"t{k}", T0 - 10 * DAY, T0, period_s=period, seed=k)
    rows = sum(len(probe_store.read_samples(store, f"t{k}", since_ns=T0 - DAY, until_ns=T0)["start_ns"]) for k in range(ntargets))
    day = T0 - 5 * DAY
    def t(f, n=30):
        xs = []
        for _ in range(n):
            a = time.perf_counter(); f(); xs.append(time.perf_counter() - a)
        return statistics.median(xs) * 1e3
    base = t(lambda: pieces_store.days_marker(store, day, day + DAY))
    extra = t(lambda: probe_store.rows_begin(store, day, day + DAY))
    print(f"{ntargets} targets (runs), period {period}s, {rows} rows/day: days_marker {base:.2f} ms, rows_begin {extra:.2f} ms, ratio {extra/base:.2f}")
    store.dispose()
