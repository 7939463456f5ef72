"""Peak memory of reading DXT traces: columnar arrays (ours) against PyDarshan's per-segment dicts.

Each reader runs in a fresh process and reports its peak RSS (ru_maxrss); the
baseline is the same process importing everything and opening nothing. Bound
claimed: at most ~100 bytes per DXT segment above the baseline (32 B of segment
data, kept once, plus 17 B of per-segment record id/rank/kind, and a transient
second copy while concatenating), and at most `dxt_max_segments` segments
(default 8 Mi, i.e. <= 0.8 GiB) whatever the log holds.

    .venv/bin/python benchmarks/bench_darshan_dxt_memory.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from darshan_support import TESTDATA_LOGS, inflate_dxt, pydarshan_example_logs  # noqa: E402

CHILD = r"""
import json, resource, sys, time
import numpy, pandas, darshan
from ioweather.sources.darshan_log import read_log
mode, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
segments = 0
if mode == "ours":
    log = read_log(path)
    segments = sum(len(s) for s in log.dxt.values())
elif mode == "pydarshan":
    with darshan.DarshanReport(path, read_all=True) as r:
        for m in ("DXT_POSIX", "DXT_MPIIO"):
            if m in r.records:
                segments += sum(x["read_count"] + x["write_count"] for x in r.records[m])
print(json.dumps({"rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "segments": segments,
                  "seconds": time.perf_counter() - t}))
"""


def measure(mode: str, path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import tempfile

    factor = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    tmp = Path(tempfile.mkdtemp(prefix="iw-dxt-"))
    big = tmp / f"nonmpi_dxt_x{factor}.darshan"
    inflate_dxt(TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan", big, factor)
    logs = [TESTDATA_LOGS / "nonmpi_dxt_anonymized.darshan", [p for p in pydarshan_example_logs() if p.name == "dxt.darshan"][0],
            big]
    print(f"load: {os.getloadavg()[0]:.1f}")
    for log in logs:
        base = measure("none", str(log))
        ours = measure("ours", str(log))
        pyd = measure("pydarshan", str(log))
        n = ours["segments"]
        per = lambda r: (r["rss_kib"] - base["rss_kib"]) * 1024 / max(n, 1)  # noqa: E731
        print(f"{log.name}: {n} DXT segments")
        print(f"  ours:      +{(ours['rss_kib'] - base['rss_kib']) / 1024:.1f} MiB over baseline "
              f"({per(ours):.0f} B/segment), {ours['seconds']:.2f} s")
        print(f"  PyDarshan: +{(pyd['rss_kib'] - base['rss_kib']) / 1024:.1f} MiB over baseline "
              f"({per(pyd):.0f} B/segment), {pyd['seconds']:.2f} s; ratio {max(pyd['rss_kib'] - base['rss_kib'], 1) / max(ours['rss_kib'] - base['rss_kib'], 1):.1f}x")
    big.unlink()
    tmp.rmdir()


if __name__ == "__main__":
    main()
