"""`ioweather export --capture FILE --once`: one stateless scrape of an `lctl get_param` capture the size
of lustrefs-exporter's ddn133 fixture (about 93 KB, 1,600 samples), which is not in the shared data:
it is made from the real OSS+MDS capture (../shared/testdata/lustrefs-exporter/valid.txt) with every
parameter of its busy OST (ai400-OST0000: stats, brw_stats with full histograms, capacity, locks)
repeated for --osts OSTs, until it is that large.

    python benchmarks/bench_lctl_export.py [--scrapes 50] [--osts 19] [--keep FILE]   # the target: one scrape < 100 ms

Times, in this process: parse + render (what a scrape costs a server that runs lctl itself), median
and max of --scrapes; and the same families rendered by prometheus_client's generate_latest (the
library way) as the baseline in the same run; then the whole command as a process (Python start and
imports included), median of 5.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
REAL = ROOT.parent / "shared" / "testdata" / "lustrefs-exporter" / "valid.txt"


def grown(text: str, osts: int) -> str:
    """The capture with every ai400-OST0000 parameter repeated for OSTs 2 to `osts` - 1."""
    out: list[str] = []
    for b in re.split(r"(?m)^(?=[A-Za-z][\w.@:*-]*=)", text):
        out.append(b)
        if "ai400-OST0000" in b.split("=")[0]:
            out += [b.replace("ai400-OST0000", f"ai400-OST{i:04x}") for i in range(2, osts)]
    return "".join(out)


def registry_of(fams):
    """A prometheus_client registry holding `fams` (views.exposition families): the library way of
    rendering them, the baseline of the render."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    from prometheus_client.registry import CollectorRegistry

    class Fixed:
        def collect(self):
            for f in fams:
                cls = CounterMetricFamily if f.kind == "counter" else GaugeMetricFamily
                m = cls(f.name, f.help, labels=list(f.labels))
                for values, v in f.samples:
                    m.add_metric(list(values), v)
                yield m

    reg = CollectorRegistry()
    reg.register(Fixed())
    return reg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--osts", type=int, default=19)
    ap.add_argument("--keep", help="write the grown capture here")
    a = ap.parse_args()
    if not REAL.is_file():
        print(f"needs {REAL}", file=sys.stderr)
        return 2
    from prometheus_client import generate_latest

    from ioweather.services.telemetry.exporter_lctl import capture_families
    from ioweather.sources.telemetry.lctl_params import parse_capture
    from ioweather.views.exposition import render

    text = grown(REAL.read_text(), a.osts)
    times, out = [], b""
    for _ in range(a.scrapes):
        t0 = time.perf_counter()
        out = render(capture_families(parse_capture(text)))
        times.append(time.perf_counter() - t0)
    samples = sum(1 for line in out.decode().splitlines() if line and not line.startswith("#"))
    print(f"capture: {len(text) / 1000:.1f} KB, {text.count(chr(10))} lines; exposition {samples} samples, "
          f"{len(out) / 1000:.1f} KB")
    print(f"scrape (parse + render): median {statistics.median(times) * 1e3:.1f} ms, "
          f"max {max(times) * 1e3:.1f} ms over {a.scrapes}")

    reg = registry_of(capture_families(parse_capture(text)))
    base = []
    for _ in range(a.scrapes):
        t0 = time.perf_counter()
        parse_capture(text)
        generate_latest(reg)
        base.append(time.perf_counter() - t0)
    print(f"baseline, parse + prometheus_client generate_latest of the same families: median "
          f"{statistics.median(base) * 1e3:.1f} ms ({statistics.median(base) / statistics.median(times):.2f}x)")

    with tempfile.TemporaryDirectory() as d:
        path = Path(a.keep or Path(d) / "ddn133-size.txt")
        path.write_text(text)
        walls = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "ioweather", "export", "--capture", str(path), "--once"],
                           check=True, capture_output=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin",
                                                                  "IOWEATHER_HOME": d})
            walls.append(time.perf_counter() - t0)
        print(f"the command as a process: median {statistics.median(walls) * 1e3:.0f} ms "
              f"(min {min(walls) * 1e3:.0f}, max {max(walls) * 1e3:.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
