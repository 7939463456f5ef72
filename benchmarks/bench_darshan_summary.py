"""`ioweather jobs summary --json` over 100,000 jobs, against loading the same rows.

The jobs are synthesized by replicating the rows of really ingested logs with
varied ids (log hash, job id, uid, process count), inserted straight into a
SQLite store. Baseline measured in the same run: reading the jobs table into
pandas (`store.jobs.load_jobs`), which any summary has to do. Target: < 10 s.

    .venv/bin/python benchmarks/bench_darshan_summary.py [N_JOBS]
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from darshan_support import TESTDATA_LOGS  # noqa: E402


def synthesize(home: Path, n: int) -> None:
    from ioweather.services.jobs.ingest import ingest
    from ioweather.config import Settings
    from ioweather.store import open_store
    from ioweather.store import jobs as js

    settings = Settings.resolve(home)
    ingest(settings, [str(TESTDATA_LOGS)], workers=1)
    store = open_store(settings)
    seed = js.load_jobs(store)
    rng = np.random.default_rng(0)
    rows = []
    base = seed.to_dict("records")
    for i in range(n - len(seed)):
        r = dict(base[i % len(base)])
        r["log_hash"] = hashlib.sha256(f"synthetic-{i}".encode()).hexdigest()
        r["path"] = f"/archive/{i // 1000}/job{i}.darshan"
        r["path_hash"] = js.path_hash(r["path"])
        r["jobid"] = 10_000_000 + i
        r["uid"] = int(rng.integers(1000, 1300))
        r["nprocs"] = int(2 ** rng.integers(0, 16))
        r["ingested_ns"] = time.time_ns()
        rows.append({k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in r.items()})
    with store.begin() as conn:
        conn.execute(js.jobs.insert(), rows)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        t = time.perf_counter()
        synthesize(home, n)
        print(f"synthesized {n} jobs in {time.perf_counter() - t:.1f} s; load: {os.getloadavg()[0]:.1f}")
        from ioweather.config import Settings
        from ioweather.store import open_store
        from ioweather.store import jobs as js

        t = time.perf_counter()
        df = js.load_jobs(open_store(Settings.resolve(home)))
        load = time.perf_counter() - t
        assert len(df) == n
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "ioweather", "--home", tmp, "jobs", "summary", "--json",
                              "--cores-per-node", "32"], check=True, capture_output=True, text=True)
        summ = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ioweather", "--home", tmp, "jobs", "summary", "--html",
                        os.path.join(tmp, "s.html")], check=True, capture_output=True)
        html = time.perf_counter() - t
    import json

    rep = json.loads(out.stdout)
    assert rep["jobs"] == n
    print(f"load_jobs (baseline, in process): {load:.2f} s")
    print(f"jobs summary --json:  {summ:.2f} s (target < 10 s), ratio to baseline {summ / load:.1f}")
    print(f"jobs summary --html:  {html:.2f} s")


if __name__ == "__main__":
    main()
