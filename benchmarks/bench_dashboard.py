"""The dashboard at a center's size (issue 40 item 4): every navigation page and the /api calls it makes,
through HTTP on a real `ioweather serve` process after a restart, p50/p95 per page.

Store (built once under --dir, each part resumed from its marker; ~40 min and 18 GB on this machine):
- probe: --targets targets x --days days at 1 Hz (6 ops a period: 518,400 samples a target-day; 100 x 30 =
  1.55 G samples). What a 30-day `probe run` leaves on disk: days before yesterday archived to Parquet
  (probe/run=N/DATE-0.parquet, listed in probe_archive, as store/probe_archive.archive_completed_days
  writes them) with their day pieces (services/probe/pieces: sorted durations, histogram, rollups, the
  fingerprint of the archived rows), yesterday and today as rows in the database, topped up to now at
  every run. Durations log-normal around each op's median, a diurnal load (x1.3 at 14:00 UTC), rare
  errors and timeouts, and 2-4 slow episodes per target (1-6 h, x3-x20 on one or all ops), one of
  them still going on the 10 targets of class 0. The samples come in --classes classes (target i stores
  class i mod classes'): a class-day is generated and summarized once by the pieces' own summarizer and
  written for each target of the class (its run, archive row, pieces, rows; the archived file a hard
  link): writing 1.5 G rows through SQLite and archiving them would take this machine a day. Database
  days through `insert_samples` for a class's first target, as the probe does, copied by SQL for the rest.
- telemetry: --telemetry-days days of 60 s read/write bytes of 100 OSTs (bench_web_pages.build_telemetry,
  the layout's `write_rows`, which writes each day's rollups as an import does);
- jobs: --jobs Darshan job rows (bench_web_pages.build_jobs: the public logs of ../shared/testdata/darshan
  ingested once, then their rows repeated with distinct job ids, users and start times over a year).

Measured: `ioweather serve` started (the first start builds what is missing: yesterday's day piece,
today's hour pieces) until /api/status answers, stopped, started again (the restart), then for every
page in the navigation (/api's index) its HTML, its /api twin and its /api parts, each --repeat times
in rotation (the first round is the first request after the restart): client wall time, p50 and p95.
The p95 is numpy's (linear interpolation) over all --repeat requests, the first included: with 10, a slow
first request alone moves it by 55 % of its excess over the next slowest (with 20, by only 5 %: use 10 or
fewer to judge the restart); the summary also prints each page's slowest first request.
Baseline in the same run: /static/favicon.svg from the same server (the server's floor).

    python benchmarks/bench_dashboard.py                       # 100 targets x 30 days, a year, 10,000 jobs
    python benchmarks/bench_dashboard.py --targets 5 --days 3 --telemetry-days 7 --jobs 500   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from multiprocessing import Pool
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from ioweather.config import Settings  # noqa: E402
from ioweather.store import open_store  # noqa: E402

DAY = 86400 * 10**9
H = 3600 * 10**9
#: Typical medians (s) per op on a parallel file system's client (a few times a local disk's).
MEDIANS_S = {"data_write": 2e-3, "data_read": 8e-4, "md_create": 4e-4, "md_stat": 6e-5, "md_read": 2e-4,
             "md_delete": 3e-4}


def target_name(i: int) -> str:
    return f"fs{i // 10:02d}-client{i % 10}"


def episodes(i: int, first_ns: int, now_ns: int) -> list[tuple[int, int, float, int]]:
    """(start, end, factor, op code or -1 for all) of target i's slow episodes."""
    rng = np.random.default_rng(1000 + i)
    out = []
    for _ in range(int(rng.integers(2, 5))):
        s = int(first_ns + rng.integers(0, now_ns - first_ns - 6 * H))
        out.append((s, s + int(rng.integers(1, 7)) * H, float(rng.uniform(3, 20)), int(rng.integers(-1, 6))))
    if i % 20 == 0:  # going on now
        out.append((now_ns - 40 * 60 * 10**9, now_ns + 30 * DAY, 8.0, -1))
    return out


def samples(i: int, lo: int, hi: int, eps) -> dict[str, np.ndarray]:
    """Target i's samples in [lo, hi), sorted by op then time: op/status codes, start, duration, bytes, errno."""
    from ioweather.store.probe import OPS

    rng = np.random.default_rng([i, lo // 10**9])
    base = np.arange(-(-lo // 10**9) * 10**9, hi, 10**9, dtype=np.int64)
    n = len(base)
    cols = {k: [] for k in ("op", "start_ns", "duration_ns", "bytes", "status", "errno")}
    hour = (base % DAY) / H
    diurnal = np.exp(0.25 * np.cos(2 * np.pi * (hour - 14) / 24))  # busiest mid-afternoon
    for k, op in enumerate(OPS):
        start = base + k * 50_000  # ops one after another within the period
        dur = MEDIANS_S[op] * np.exp(rng.normal(0.0, 0.45, n)) * diurnal
        for a, b, f, o in eps:
            if o in (-1, k) and a < hi and b > lo:
                dur[(start >= a) & (start < b)] *= f
        status = np.zeros(n, np.int8)
        u = rng.random(n)
        status[u < 1e-4] = 1
        status[u < 2e-6] = 2
        d = np.maximum(1, (dur * 1e9).astype(np.int64))
        d[status == 2] = 60 * 10**9
        nbytes = (1 << 20) if op.startswith("data") else (3901 if op in ("md_create", "md_read") else 0)
        cols["op"].append(np.full(n, k, np.int8))
        cols["start_ns"].append(start)
        cols["duration_ns"].append(d)
        cols["bytes"].append(np.where(status == 0, nbytes, 0).astype(np.int64))
        cols["status"].append(status)
        cols["errno"].append(np.where(status == 1, 5, 0).astype(np.int32))
    return {k: np.concatenate(v) for k, v in cols.items()}


def _run_info(target: str, seed: int):
    from ioweather.store import probe as probe_store

    return probe_store.RunInfo(target=target, directory=f"/lustre/{target}/.ioweather-probe", interval_s=1.0,
                               block_bytes=1 << 20, file_bytes=1 << 30, pool_files=200, small_bytes=3901,
                               direct=False, fsync=False, seed=seed, timeout_s=60.0, file_exceeds_memory=True,
                               host=target)


def insert(store, run_id: int, s: dict) -> None:
    from ioweather.store import probe as probe_store

    ops = np.array(probe_store.OPS, dtype=object)[s["op"]]
    st = np.array(probe_store.STATUSES, dtype=object)[s["status"]]
    step = 200_000
    for a in range(0, len(ops), step):
        sl = slice(a, a + step)
        probe_store.insert_samples(store, list(zip([run_id] * len(ops[sl]), ops[sl].tolist(), s["start_ns"][sl].tolist(),
                                                   s["duration_ns"][sl].tolist(), s["bytes"][sl].tolist(),
                                                   st[sl].tolist(), s["errno"][sl].tolist())))


def write_archive(path: Path, s: dict) -> int:
    """The day's file as store/probe_archive._write makes it (same schema, dictionary-encoded op and status,
    zstd), from the codes directly: its conversion of 3 M Python strings was 2/3 of the build's time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ioweather.store import probe as probe_store

    def dict_col(codes, names):
        return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names, pa.string()))

    table = pa.table({"op": dict_col(s["op"], list(probe_store.OPS)),
                      "start_ns": pa.array(s["start_ns"], pa.int64()),
                      "duration_ns": pa.array(s["duration_ns"], pa.int64()),
                      "bytes": pa.array(s["bytes"], pa.int64()),
                      "status": dict_col(s["status"], list(probe_store.STATUSES)),
                      "errno": pa.array(s["errno"], pa.int32())})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    return table.num_rows


def copy_samples(store, src: int, dst: int, lo: int, hi: int) -> None:
    """The template run's database rows of [lo, hi) as run `dst`'s (one INSERT ... SELECT: a target of the
    same class stores the same samples)."""
    import sqlalchemy as sa

    for a in range(lo, hi, 4 * H):  # short write transactions: the other builders wait for each
        _copy(store, src, dst, a, min(hi, a + 4 * H))


def _copy(store, src: int, dst: int, lo: int, hi: int) -> None:
    import sqlalchemy as sa

    with store.begin() as conn:
        conn.execute(sa.text("INSERT INTO probe_samples (run_id, op, start_ns, duration_ns, bytes, status, errno) "
                             "SELECT :d, op, start_ns, duration_ns, bytes, status, errno FROM probe_samples "
                             "WHERE run_id = :s AND start_ns >= :lo AND start_ns < :hi"),
                     {"d": dst, "s": src, "lo": lo, "hi": hi})


def build_probe_class(job: tuple) -> str:
    """The targets of one class (i % classes == c): archived days with their day pieces, yesterday and today
    in the database. The class's samples are generated and summarized once; each target gets its own run,
    its own archived file (a hard link to the class's), archive row, pieces and database rows."""
    import sqlalchemy as sa

    from ioweather.services.probe import pieces
    from ioweather.store import probe as probe_store
    from ioweather.store import probe_pieces
    from ioweather.store.probe_tables import probe_archive as archive_table

    home, c, classes, targets, days, now = job
    marker = Path(home) / "bench-probe" / f"class-{c}.json"
    if marker.exists():
        return f"class {c} (kept)"
    store = open_store(Settings.resolve(home))
    members = [i for i in range(targets) if i % classes == c]
    progress = Path(home) / "bench-probe" / f"class-{c}.progress.json"
    state = json.loads(progress.read_text()) if progress.exists() else None
    if state is None or state["now"] != now:  # a build of this class from the start
        with store.begin() as conn:
            for i in members:
                ids = [r[0] for r in conn.execute(sa.text("SELECT id FROM probe_runs WHERE target = :t"),
                                                  {"t": target_name(i)})]
                for r in ids:
                    conn.execute(sa.text("DELETE FROM probe_samples WHERE run_id = :r"), {"r": r})
                    conn.execute(sa.text("DELETE FROM probe_archive WHERE run_id = :r"), {"r": r})
                conn.execute(sa.text("DELETE FROM probe_pieces WHERE target = :t"), {"t": target_name(i)})
                conn.execute(sa.text("DELETE FROM probe_runs WHERE target = :t"), {"t": target_name(i)})
        state = {"now": now, "runs": {str(i): probe_store.start_run(store, _run_info(target_name(i), i))
                                      for i in members}, "days": []}
        progress.write_text(json.dumps(state))
    first = (now // DAY - days + 1) * DAY
    eps = episodes(c, first, now)
    runs = {int(i): r for i, r in state["runs"].items()}
    archived_until = (now // DAY - 1) * DAY  # archive_completed_days' cutoff with keep_days=1
    for lo in range(first, archived_until, DAY):
        if lo in state["days"]:
            continue
        s = samples(c, lo, lo + DAY, eps)
        rows = pieces._summarize_span(s, lo, DAY, pieces.ROLLUP_INTERVALS_S)
        date = time.strftime("%Y-%m-%d", time.gmtime(lo / 1e9))
        made = None
        for i, run_id in runs.items():
            rel = Path("probe") / f"run={run_id}" / f"{date}-0.parquet"
            path = store.parquet_dir / rel
            path.unlink(missing_ok=True)  # a day interrupted before its row
            if made is None:
                n = write_archive(path, s)
                made = path
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.link(made, path)
            with store.begin() as conn:
                conn.execute(sa.text("DELETE FROM probe_archive WHERE run_id = :r AND day_ns = :d"), {"r": run_id, "d": lo})
                conn.execute(archive_table.insert().values(run_id=run_id, day_ns=lo, part=0, path=str(rel), rows=n,
                                                           first_ns=int(s["start_ns"].min()),
                                                           last_ns=int(s["start_ns"].max())))
                fp = probe_pieces.fingerprint(conn, [run_id], lo, lo + DAY)
            assert probe_pieces.write(store, target_name(i), lo, DAY, fp, rows)
        state["days"].append(lo)
        progress.write_text(json.dumps(state))
    template = runs[members[0]]
    with store.begin() as conn:
        for r in runs.values():
            conn.execute(sa.text("DELETE FROM probe_samples WHERE run_id = :r"), {"r": r})
    for lo in range(archived_until, now, DAY):
        insert(store, template, samples(c, lo, min(lo + DAY, now), eps))
    for i in members[1:]:
        copy_samples(store, template, runs[i], archived_until, now)
    store.dispose()
    marker.write_text(json.dumps({"end_ns": now, "runs": {str(i): r for i, r in runs.items()}}))
    return f"class {c}"


def build_probe(home: Path, targets: int, days: int, classes: int, workers: int) -> None:
    from ioweather.store import probe as probe_store

    (home / "bench-probe").mkdir(parents=True, exist_ok=True)
    started = home / "bench-probe" / "now.json"  # an interrupted build resumes for the same days
    now = json.loads(started.read_text()) if started.exists() else time.time_ns()
    started.write_text(json.dumps(now))
    store = open_store(Settings.resolve(home))
    store.require(probe_store.COMPONENT)  # the schema made once, not by two workers at a time
    if not list((home / "bench-probe").glob("class-*.progress.json")):
        import sqlalchemy as sa

        with store.begin() as conn:  # what an interrupted first build left, at once (the workers would queue)
            for table in ("probe_samples", "probe_archive", "probe_pieces", "probe_runs"):
                conn.execute(sa.text(f"DELETE FROM {table}"))
    store.dispose()
    t = time.perf_counter()
    jobs = [(str(home), c, classes, targets, days, now) for c in range(min(classes, targets))]
    with Pool(workers) as pool:
        for k, name in enumerate(pool.imap_unordered(build_probe_class, jobs)):
            print(f"  probe: {k + 1}/{len(jobs)} classes ({name}), {time.perf_counter() - t:.0f} s",
                  file=sys.stderr, flush=True)


def top_up(home: Path) -> None:
    """Samples from where each class's data ends to now, as probes that kept running would have stored
    (archiving days that became old meanwhile, as the probe's hourly archiver does)."""
    from ioweather.store.probe_archive import archive_completed_days

    now = time.time_ns()
    store = open_store(Settings.resolve(home))
    for m in sorted((home / "bench-probe").glob("class-[0-9]*.json")):
        if m.name.endswith(".progress.json"):
            continue
        info = json.loads(m.read_text())
        c = int(m.stem.split("-")[1])
        if now - info["end_ns"] < 10 * 10**9:
            continue
        eps = episodes(c, (info["end_ns"] // DAY - 40) * DAY, now)
        runs = [info["runs"][k] for k in sorted(info["runs"], key=int)]
        for lo in range(info["end_ns"], now, DAY):
            insert(store, runs[0], samples(c, lo, min(lo + DAY, now), eps))
        for r in runs[1:]:
            copy_samples(store, runs[0], r, info["end_ns"], now)
        m.write_text(json.dumps(dict(info, end_ns=now)))
    archive_completed_days(store)
    store.dispose()


def build(args) -> Path:
    from bench_web_pages import build_jobs, build_telemetry

    home = args.dir / f"home-{args.targets}t-{args.days}d-{args.telemetry_days}td-{args.jobs}j"
    home.mkdir(parents=True, exist_ok=True)
    parts = (("jobs", lambda: build_jobs(home, args.jobs)),
             ("telemetry", lambda: build_telemetry(home, args.telemetry_days, 100)),
             ("probe", lambda: build_probe(home, args.targets, args.days, args.classes, args.workers)))
    for name, fn in parts:
        if args.parts and name not in args.parts.split(","):
            continue
        marker = home / f"bench-{name}.done"
        if marker.exists():
            continue
        t = time.perf_counter()
        fn()
        print(f"  built {name} in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
        marker.write_text(f"{time.perf_counter() - t:.0f} s\n")
    return home


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 600) -> tuple[float, int, int]:
    """(client wall s, status, body bytes)."""
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = r.read()
            code = r.status
    except urllib.error.HTTPError as e:
        body, code = e.read(), e.code
    return time.perf_counter() - t, code, len(body)


def serve(home: Path, log: Path, rt: bool = False) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "IOWEATHER_HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    env.pop("IOWEATHER_DB", None)
    proc = subprocess.Popen([*(["chrt", "-f", "10"] if rt else []),
                             sys.executable, "-m", "ioweather", "serve", "--port", str(port), "-q"], env=env,
                            stdout=subprocess.DEVNULL, stderr=open(log, "a"))
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            urllib.request.urlopen(base + "/static/favicon.svg", timeout=5).read()
            return proc, base
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the server stopped ({proc.returncode}); see {log}")
            time.sleep(0.1)


def cpu_s(pid: int) -> float:
    """The process's CPU time (user + system, every thread: the warm-up's too), s, at the kernel's 10 ms ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def urls_of(base: str) -> list[tuple[str, list[str]]]:
    """(page, [its HTML, its /api twin, its parts]) for every page of the navigation."""
    index = json.loads(urllib.request.urlopen(base + "/api", timeout=600).read())
    nav = set(re.findall(r'href="/([a-z_-]+)"', urllib.request.urlopen(base + "/status", timeout=600).read().decode()))
    out = []
    for p in index["pages"]:
        if not p["available"] or p["slug"] not in nav:
            continue
        slug = p["slug"]
        out.append((slug, [f"/{slug}", f"/api/{slug}", *p.get("parts", {}).values()]))
    return out


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--telemetry-days", type=int, default=365)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--dir", type=Path, default=Path.home() / ".cache" / "ioweather-bench-dashboard")
    ap.add_argument("--classes", type=int, default=10, help="distinct probe sample sets (targets i and j with "
                    "i = j mod classes store the same samples)")
    ap.add_argument("--workers", type=int, default=2, help="processes building the probe's days")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--forget-baselines", action="store_true", help="delete the baselines the first server kept "
                    "before the restart (services/probe/cache.py persist): the restart as before issue 40")
    ap.add_argument("--rt", action="store_true", help="the restarted server and the client under SCHED_FIFO (chrt -f "
                    "10): the machine's other users' load kept out of the times, as on a dashboard's own server (the "
                    "first start, which builds what is missing, at the machine's priority)")
    ap.add_argument("--parts", help="build only these parts (jobs,telemetry,probe; with --build-only: several "
                    "processes can build different parts at once)")
    ap.add_argument("--only", help="measure only these pages (comma-separated slugs)")
    args = ap.parse_args()
    print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}", flush=True)
    home = build(args)
    if args.build_only:
        return
    top_up(home)
    db = home / "ioweather.sqlite"
    du = subprocess.run(["du", "-sh", str(home)], capture_output=True, text=True).stdout.split()[0]
    print(f"store {home}: {du} ({db.stat().st_size / 2**30:.1f} GiB SQLite); probe {args.targets} targets x "
          f"{args.days} days at 1 Hz x 6 ops ({args.targets * args.days * 86400 * 6 / 1e9:.2f} G samples); "
          f"telemetry {args.telemetry_days} days x 100 OSTs at 60 s; {args.jobs} jobs", flush=True)

    log = home / "bench-serve.log"
    t = time.perf_counter()
    proc, base = serve(home, log)  # the first start's one-time work at the machine's priority, not SCHED_FIFO
    listening = time.perf_counter() - t
    first = get(base + "/api/status")[0]
    print(f"first start: listening after {listening:.1f} s, first /api/status {first:.1f} s later", flush=True)
    urls = urls_of(base)
    only = set(args.only.split(",")) if args.only else None
    urls = [(slug, us) for slug, us in urls if only is None or slug in only]
    for _, us in urls:  # what the first start builds (day pieces, caches) is built before the restart
        for u in us:
            w = get(base + u)[0]
            print(f"  first start: {u} {w:.2f} s", flush=True)
    stop(proc)
    if args.forget_baselines:  # the restart as before issue 40: every baseline computed again
        (home / "cache" / "probe-baselines.json").unlink(missing_ok=True)

    if args.rt:  # the measured restart: server and client
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    t = time.perf_counter()
    proc, base = serve(home, log, args.rt)
    print(f"restart: listening after {time.perf_counter() - t:.1f} s; load {os.getloadavg()[0]:.1f}", flush=True)
    try:
        todo = [(slug, u) for slug, us in urls for u in us]
        times: dict[str, list[float]] = {u: [] for _, u in todo}
        # the server's CPU per request: what the machine's load does not change (its wall time it multiplies)
        cpus: dict[str, list[float]] = {u: [] for _, u in todo}
        sizes: dict[str, int] = {}
        codes: dict[str, int] = {}
        floor = []
        for _ in range(args.repeat):
            for _, u in todo:
                c0 = cpu_s(proc.pid)
                w, code, n = get(base + u)
                cpus[u].append(cpu_s(proc.pid) - c0)
                times[u].append(w)
                sizes[u], codes[u] = n, code
            floor.append(get(base + "/static/favicon.svg")[0])
        f50 = statistics.median(floor)
        print(f"\nbaseline: /static/favicon.svg from the same server, p50 {f50 * 1e3:.1f} ms, "
              f"p95 {pct(floor, 95) * 1e3:.1f} ms\n")
        print(f"{'page':10s} {'request':58s} {'first':>7s} {'p50':>7s} {'p95':>7s} {'KiB':>7s} {'p50/floor':>9s} {'cpu1st':>7s} {'cpu p50':>7s}")
        worst: dict[str, float] = {}
        firsts: dict[str, float] = {}
        for slug, u in todo:
            xs = times[u]
            worst[slug] = max(worst.get(slug, 0.0), pct(xs, 95))
            firsts[slug] = max(firsts.get(slug, 0.0), xs[0])
            bad = "" if codes[u] == 200 else f"  HTTP {codes[u]}"
            print(f"{slug:10s} {u:58s} {xs[0] * 1e3:7.0f} {statistics.median(xs) * 1e3:7.0f} {pct(xs, 95) * 1e3:7.0f} "
                  f"{sizes[u] / 1024:7.0f} {statistics.median(xs) / f50:8.0f}x {cpus[u][0] * 1e3:7.0f} "
                  f"{statistics.median(cpus[u]) * 1e3:7.0f}{bad}", flush=True)
        print(f"\n(ms; {args.repeat} requests each after the restart, in rotation, the first round the first "
              f"requests; cpu: the server process's CPU during the request, its warm-up thread included; "
              f"load at the end {os.getloadavg()[0]:.1f})")
        print(f"\nper page, the slowest of its requests' p95 over the {args.repeat} after the restart, the first "
              f"included (goal < 500 ms), and the slowest first request:")
        for slug, w in worst.items():
            print(f"  {slug:10s} p95 {w * 1e3:7.0f} ms  {'ok' if w < 0.5 else 'OVER'}   first {firsts[slug] * 1e3:7.0f} ms")
    finally:
        stop(proc)


if __name__ == "__main__":
    main()
