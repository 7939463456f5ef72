"""Import speed of `import mmperfmon` and `import lfsdf` against merely reading the same text.

Generates, in a temporary directory, archives shaped like NERSC's (the real samples are in
../shared/data/tokio): a day of hourly `mmperfmon query` files per NSD server (read and write
bytes of every NSD at 1-minute buckets, tables wrapped every 8 columns, plus CPU/memory) in one
.tgz, and a month of 15-minute `lfs df` snapshots with BEGIN lines in one .gz. Each is imported
with `import_one` (parse, map, write Parquet) and compared with the baseline of only
decompressing it and splitting every line into fields, measured in the same run.

    .venv/bin/python benchmarks/bench_import_gpfs.py [--servers 8] [--nsds 40] [--hours 24]
                                                     [--osts 248] [--days 30]
"""

from __future__ import annotations

import argparse
import gzip
import io
import resource
import tarfile
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def mmperfmon_text(host: str, sensor_metric: list[tuple[str, str, str]], start: datetime, rng) -> str:
    """One query's output: legend, then tables of at most 8 columns, right-aligned like mmperfmon."""
    lines = ["", "Legend:"]
    for i, (sensor, inst, metric) in enumerate(sensor_metric, 1):
        mid = f"|{inst}" if inst else ""
        lines.append(f"{i:2d}:\t{host}.example.org|{sensor}{mid}|{metric}")
    for lo in range(0, len(sensor_metric), 8):
        cols = sensor_metric[lo: lo + 8]
        lines.append(" ")
        lines.append("Row           Timestamp " + " ".join(f"{m:>21}" for _, _, m in cols) + " ")
        for r in range(60):
            t = (start + timedelta(minutes=r + 1)).strftime("%Y-%m-%d-%H:%M:%S")
            cells = []
            for _, _, m in cols:
                if m.startswith("cpu"):
                    cells.append(f"{rng.uniform(0, 5):21.2f}")
                elif m.startswith("mem"):
                    cells.append(f"{rng.uniform(30000, 60000):18.1f} MB")
                else:
                    cells.append(f"{int(rng.exponential(5e7)):21d}")
            lines.append(f"{r + 1:3d} {t} " + " ".join(cells) + " ")
    return "\n".join(lines) + "\n"


def make_mmperfmon(path: Path, servers: int, nsds: int, hours: int) -> int:
    rng = np.random.default_rng(1)
    values = 0
    day = datetime(2019, 5, 15)
    with tarfile.open(path, "w:gz") as tar:
        for s in range(servers):
            host = f"ngfsv{400 + s}"
            for h in range(hours):
                start = day + timedelta(hours=h)
                for kind, cols in (("read", [("GPFSNSDDisk", f"ddn{s}dt{d:02d}", "gpfs_nsdds_bytes_read") for d in range(nsds)]),
                                   ("write", [("GPFSNSDDisk", f"ddn{s}dt{d:02d}", "gpfs_nsdds_bytes_written") for d in range(nsds)]),
                                   ("servers", [("CPU", "", "cpu_user"), ("CPU", "", "cpu_sys"),
                                                ("Memory", "", "mem_total"), ("Memory", "", "mem_free")])):
                    data = mmperfmon_text(host, cols, start, rng).encode()
                    info = tarfile.TarInfo(f"mmperfmon/{kind}/{host}.{start:%Y-%m-%d-%H}:00:00.out")
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                    values += 60 * len(cols)
    return values


def make_lfsdf(path: Path, osts: int, days: int) -> int:
    rng = np.random.default_rng(2)
    t0 = 1_557_900_000
    used = rng.uniform(0.3, 0.8, osts + 1) * 90767651352
    lines = 0
    with gzip.open(path, "wt") as f:
        for k in range(days * 96):
            f.write(f"BEGIN {t0 + 900 * k}\nUUID                   1K-blocks        Used   Available Use% Mounted on\n")
            used += rng.uniform(-1e6, 2e6, osts + 1)
            for i in range(osts + 1):
                name = "bench-MDT0000" if i == 0 else f"bench-OST{i - 1:04x}"
                u = int(used[i])
                f.write(f"{name}_UUID {90767651352:14d} {u:14d} {90767651352 - u - 1000:14d}  {100 * u // 90767651352:2d}% "
                        f"/scratch[{'MDT' if i == 0 else 'OST'}:{max(i - 1, 0)}]\n")
                lines += 1
            f.write("\nfilesystem_summary:  1 1 1 1% /scratch\n\n")
    return lines


def bare_read(path: Path) -> int:
    """Baseline: decompress every member and split every line into fields; nothing else."""
    fields = 0
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as tar:
            texts = (tar.extractfile(m).read().decode() for m in tar if m.isfile())
            for text in texts:
                for line in text.splitlines():
                    fields += len(line.split())
    else:
        for line in gzip.open(path, "rt"):
            fields += len(line.split())
    return fields


def timed(fn):
    c0, w0 = cpu(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - w0, cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--nsds", type=int, default=40)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--osts", type=int, default=248)
    ap.add_argument("--days", type=int, default=30)
    a = ap.parse_args()
    from ioweather.services.telemetry.imports import import_one
    from ioweather.config import Settings

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        settings = Settings(home=tmp / "home")
        for kind, path, make, args in (("mmperfmon", tmp / "day.tgz", make_mmperfmon, (a.servers, a.nsds, a.hours)),
                                       ("lfsdf", tmp / "month.txt.gz", make_lfsdf, (a.osts, a.days))):
            units = make(path, *args)
            _, bw, bc = timed(lambda: bare_read(path))
            s, iw, ic = timed(lambda: import_one(settings, kind, str(path), kind, tz=None, since_ns=None, until_ns=None,
                                                 interval=None, cumulative=False))
            unit = "values" if kind == "mmperfmon" else "lines"
            print(f"{kind}: {units:,} {unit} in {path.stat().st_size / 2**20:.1f} MiB -> {s['rows']:,} rows")
            print(f"  import      {iw:7.2f} s wall {ic:7.2f} s CPU  = {units / iw:,.0f} {unit}/s")
            print(f"  bare read   {bw:7.2f} s wall {bc:7.2f} s CPU")
            print(f"  ratio import / bare read: wall {iw / bw:.2f}, CPU {ic / bc:.2f}")


if __name__ == "__main__":
    main()
