"""`ioweather job imbalanced-io.darshan --json` (496 ranks) wall time, and `--html`, against PyDarshan.

Baselines measured in the same run, each as a fresh process like a user runs it:
- `python -c "DarshanReport(log, read_all=True)"`: PyDarshan's bare open + read;
- `python -m darshan summary log`: PyDarshan's HTML job summary (the anchor for --html).
Target: `job --json` < 2 s.

    .venv/bin/python benchmarks/bench_darshan_job.py [LOG]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from darshan_support import TESTDATA_LOGS  # noqa: E402


def run(args: list[str], cwd: str | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    return time.perf_counter() - t


def best(args, n=3, cwd=None) -> float:
    return min(run(args, cwd) for _ in range(n))


def main() -> None:
    log = sys.argv[1] if len(sys.argv) > 1 else str(TESTDATA_LOGS / "imbalanced-io.darshan")
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env_home = ["--home", tmp]
        bare = best([py, "-c", f"import darshan\nwith darshan.DarshanReport({log!r}, read_all=True) as r: pass"])
        js = best([py, "-m", "ioweather", *env_home, "job", log, "--json"])
        html = best([py, "-m", "ioweather", *env_home, "job", log, "--html", os.path.join(tmp, "r.html")], n=2)
        size = os.path.getsize(os.path.join(tmp, "r.html"))
        summ = best([py, "-m", "darshan", "summary", log, "--output", os.path.join(tmp, "pd.html")], n=1, cwd=tmp)
        psize = os.path.getsize(os.path.join(tmp, "pd.html")) if os.path.exists(os.path.join(tmp, "pd.html")) else 0
    print(f"log: {log} ({os.path.getsize(log)} bytes), load: {os.getloadavg()[0]:.1f}")
    print(f"PyDarshan open+read_all (baseline): {bare:.2f} s")
    print(f"ioweather job --json:               {js:.2f} s (target < 2 s), ratio to baseline {js / bare:.2f}")
    print(f"PyDarshan summary (HTML):           {summ:.2f} s, {psize / 1e6:.2f} MB")
    print(f"ioweather job --html:               {html:.2f} s, {size / 1e6:.2f} MB, {summ / html:.1f}x faster")


if __name__ == "__main__":
    main()
