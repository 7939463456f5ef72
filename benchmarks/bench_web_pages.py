"""The Jobs, Workload, Contents and Factors pages over a center-sized store, against the CLI commands that
compute the same numbers (the baseline, measured in the same run).

Store (built once in --dir, reused while its marker matches the sizes):
- jobs: --jobs Darshan job rows (the real logs of ../shared/testdata/darshan read once, then their rows
  repeated with new ids, users and start times; only the real ones keep their per-file tables);
- telemetry: --days days of 60 s samples of --targets targets (read and write bytes), `write_rows`;
- probe: 7 days of 1 Hz samples of one target (tests/web_synthetic.py), the Factors page's maximum window;
- contents: two labelled snapshots of a generated tree of --files files.

Per page: the server time (Server-Timing) of the first request (cold: nothing in memory) and the
median of --repeat warm ones, against the wall time of the CLI command that prints the same
numbers (`jobs summary --json`, `workload --json`, `fsstats diff --json`, `factors density
--from-store --json`; Python's start-up of ~0.4 s included, so it is also given on its own).

    .venv/bin/python benchmarks/bench_web_pages.py                  # 100 000 jobs, 30 days x 50 targets
    .venv/bin/python benchmarks/bench_web_pages.py --jobs 10000 --days 7 --targets 10   # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from bench_web import fetch, serve_in_process  # noqa: E402  (this directory)
from ioweather.config import Settings  # noqa: E402
from ioweather.store import open_store  # noqa: E402

DARSHAN = ROOT.parent / "shared" / "testdata" / "darshan"
DAY = 86400 * 10**9
H = 3600 * 10**9
PROBE_TARGET = "scratch"
FS = "bench"


def build_jobs(home: Path, n: int) -> None:
    from ioweather.services.jobs.ingest import extract
    from ioweather.store import jobs as jobs_store

    settings = Settings.resolve(home)
    store = open_store(settings)
    real = [extract(str(p), frozenset(), 32) for p in sorted(DARSHAN.glob("*.darshan"))]
    real = [r for r in real if r[0] == "ok"]
    jobs_store.write_batch(store, settings.parquet_dir, [r[1] for r in real], [r[2] for r in real], [])
    rng = np.random.default_rng(1)
    t0 = time.time_ns() - 365 * DAY
    batch = []
    for i in range(len(real), n):
        row = dict(real[i % len(real)][1])
        row.update(log_hash=hashlib.sha256(f"bench-{i}".encode()).hexdigest(), path=f"/archive/job-{i}.darshan",
                   path_hash=hashlib.sha256(f"/archive/job-{i}.darshan".encode()).hexdigest(), jobid=10**6 + i,
                   uid=int(rng.integers(1000, 1200)), start_ns=int(t0 + rng.integers(0, 365 * DAY)))
        row["end_ns"] = row["start_ns"] + int(row["runtime_s"] * 1e9)
        batch.append(row)
        if len(batch) == 10000:
            jobs_store.write_batch(store, settings.parquet_dir, batch, [], [])
            batch = []
    if batch:
        jobs_store.write_batch(store, settings.parquet_dir, batch, [], [])
    store.dispose()


def build_telemetry(home: Path, days: int, targets: int) -> None:
    from ioweather.store.telemetry_layout import write_rows

    rng = np.random.default_rng(2)
    end = (time.time_ns() // DAY) * DAY
    per_day = 1440
    names = np.array([f"bench-OST{k:04d}" for k in range(targets)], dtype=object)
    for d in range(days):
        t = end - (days - d) * DAY + np.arange(per_day, dtype=np.int64) * 60 * 10**9
        hour = (t // H) % 24
        busy = np.where((hour >= 8) & (hour < 18), 4.0, 1.0)  # a daily rhythm
        parts = []
        for metric, scale in (("read_bytes", 2e8), ("write_bytes", 1e8)):
            v = rng.gamma(0.5, scale, size=(per_day, targets)) * busy[:, None]
            burst = rng.random(per_day) < 0.01  # now and then, a few minutes of a big job
            v[burst] += 3e10
            parts.append(pd.DataFrame({"time_ns": np.repeat(t, targets), "target": np.tile(names, per_day),
                                       "metric": metric, "value": v.ravel(), "interval_s": 60.0}))
        write_rows(Settings.resolve(home), FS, pd.concat(parts, ignore_index=True), writer="bench")


def build_probe(home: Path) -> None:
    from web_synthetic import Episode, add_target

    t0 = time.time_ns()
    store = open_store(Settings.resolve(home))
    add_target(store, PROBE_TARGET, t0 - 7 * DAY, t0, period_s=1.0, seed=3,
               episodes=[Episode(t0 - 2 * DAY, t0 - 2 * DAY + 6 * H, 12.0)])
    store.dispose()


def build_contents(home: Path, files: int, work: Path) -> None:
    root = work / "tree"
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(4)
    sizes = (2 ** rng.uniform(0, 30, files)).astype(np.int64)
    for i, s in enumerate(sizes):
        p = root / f"proj{i % 100:03d}" / f"d{(i // 100) % 20}" / f"f{i}"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            f.truncate(int(s))
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    subprocess.run([sys.executable, "-m", "ioweather", "fsstats", str(root), "--label", "before", "-q"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    for i in range(files // 10):
        with open(root / f"proj{i % 7:03d}" / f"new{i}", "wb") as f:
            f.truncate(int(sizes[i]))
    subprocess.run([sys.executable, "-m", "ioweather", "fsstats", str(root), "--label", "after", "-q"], env=env,
                   check=True, stdout=subprocess.DEVNULL)


def build(args) -> Path:
    home = args.dir / f"home-{args.jobs}j-{args.days}d-{args.targets}t-{args.files}f"
    marker = home / "bench-pages.json"
    if marker.exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    for name, fn in (("jobs", lambda: build_jobs(home, args.jobs)),
                     ("telemetry", lambda: build_telemetry(home, args.days, args.targets)),
                     ("probe", lambda: build_probe(home)),
                     ("contents", lambda: build_contents(home, args.files, args.dir))):
        t = time.perf_counter()
        fn()
        print(f"  built {name} in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    marker.write_text(json.dumps(vars(args), default=str))
    return home


def cli_ms(home: Path, *args: str) -> float:
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ioweather", *args], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--targets", type=int, default=50)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ioweather-bench-web-pages"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    if not DARSHAN.is_dir():
        sys.exit(f"needs the real Darshan logs in {DARSHAN}")
    print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}", flush=True)
    home = build(args)
    print(f"store: {args.jobs} jobs; {args.days} days x {args.targets} targets of 60 s telemetry "
          f"({args.days * 1440 * args.targets * 2 / 1e6:.1f} M rows); 7 days of 1 Hz probe samples; "
          f"2 snapshots of {args.files} files", flush=True)

    base, server, th = serve_in_process(home)
    try:
        wl = json.loads(urllib.request.urlopen(base + f"/api/workload?fs={FS}").read())
        fac = json.loads(urllib.request.urlopen(base + f"/api/factors?target={PROBE_TARGET}&since=7d").read())
        pages = [
            ("jobs HTML (default: by bytes, 100 rows)", "/jobs", ("jobs", "summary", "--json")),
            ("jobs JSON sorted by MiB/s per node", "/api/jobs?sort=mibps_per_node&limit=1000", None),
            ("job page (a real log, 1030 files)", "/job?id=" + json.loads(urllib.request.urlopen(
                base + "/api/jobs?sort=jobid&limit=1").read())["list"]["rows"][0]["id"][:16], None),
            ("workload HTML (7 days of data, 60 s)", f"/workload?fs={FS}",
             ("workload", "--fs", FS, "--since", wl["since"], "--until", wl["until"], "--json")),
            (f"workload JSON ({args.days} days, 5 min)", f"/api/workload?fs={FS}&since={args.days}d&resample=5m",
             None),
            ("contents HTML with growth", "/contents?label=after&compare=before",
             ("fsstats", "diff", "before", "after", "--json")),
            ("factors HTML (1 day, default)", f"/factors?target={PROBE_TARGET}", None),
            ("factors JSON (7 days at 1 Hz, max)",
             f"/api/factors?target={PROBE_TARGET}&since={fac['since']}&until={fac['until']}",
             ("factors", "density", "--from-store", "--op", "data_read", "--target", PROBE_TARGET,
              "--since", fac["since"], "--until", fac["until"], "--json")),
        ]
        startup = statistics.median(cli_ms(home, "--help") for _ in range(3))
        print(f"\nPython start-up of the CLI (ioweather --help): {startup:.0f} ms")
        print(f"\n{'page':42s} {'cold ms':>8s} {'warm ms':>8s} {'KiB':>6s} {'CLI ms':>8s} {'CLI/warm':>9s}")
        for name, path, cli in pages:
            cold = fetch(base + path)
            warm = [fetch(base + path) for _ in range(args.repeat)]
            w = statistics.median(r[0] for r in warm)
            c = cli_ms(home, *cli) if cli else None
            ratio = f"{c / w:8.1f}x" if c else ""
            print(f"{name:42s} {cold[0]:8.0f} {w:8.0f} {warm[0][2] / 1024:6.0f} "
                  f"{'' if c is None else f'{c:8.0f}':>8s} {ratio:>9s}   {'ok' if w < 1000 else 'OVER 1000'}",
                  flush=True)
    finally:
        server.should_exit = True
        th.join(timeout=10)


if __name__ == "__main__":
    main()
