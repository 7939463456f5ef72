"""A store of regression benchmark runs made by the real fio, shared by the Benchmarks page's browser test and
the bench gauges' /metrics test, and its series read back with sqlite3 (not the store code) as the reference."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from ioweather.config import Settings
from ioweather.services.bench import runs as svc
from ioweather.store import open_store

#: A motif name (a fio job imported with --motif) built to break HTML, attributes, JSON-in-HTML, Plotly
#: text and Prometheus label values (quote, backslash).
NASTY = """<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> 'q' & "m\\"""


def make_bench_home(base: Path) -> Path:
    """Three runs each of fpp-write and fpp-read by the real runner (fs "scratch"), and two fio JSON outputs
    of the real fio imported under the NASTY motif. Returns the home."""
    home, work = base / "home", base / "dir"
    work.mkdir(parents=True)
    store = open_store(Settings.resolve(home))
    for _ in range(3):
        svc.run(store, ["fpp-write", "fpp-read"], work, size=256 * 1024, tasks=1, fs="scratch")
    for i in range(2):  # one file at a time: each is one run of the motif
        out = base / f"fio-{i}.json"
        subprocess.run(["fio", "--name=job", f"--directory={work}", "--rw=write", "--bs=64k", "--size=512k",
                        "--end_fsync=1", "--output-format=json", f"--output={out}"], check=True, timeout=120,
                       capture_output=True)
        svc.import_files(store, [out], fs="scratch", motif=NASTY)
    store.dispose()
    return home


def sql_series(home: Path) -> dict[tuple, list[tuple]]:
    """Per (motif, direction, fs): its runs' (start_ns, run_id, duration_s, bw_bps), oldest first."""
    out: dict[tuple, list[tuple]] = {}
    with sqlite3.connect(home / "ioweather.sqlite") as c:
        for m, d, fs, start, rid, dur, bw in c.execute(
                "select r.motif, x.direction, r.fs, r.start_ns, r.run_id, x.duration_s, x.bw_bps from bench_runs r "
                "join bench_results x on x.run_id = r.run_id order by r.start_ns, r.run_id"):
            out.setdefault((m, d, fs), []).append((start, rid, dur, bw))
    return out
