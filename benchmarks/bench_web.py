"""Dashboard and /metrics over 30 days of 1 Hz probe samples for 3 targets (46.7 M rows).

Measures, on a real `ioweather serve` process:
- the first start (server start until the Status page answers); with --fresh-pieces the stored pieces
  (issue 21, docs/probe-pieces.md) are deleted first, so this start builds them from every sample, as
  every start did before issue 21 (the baseline of row 3);
- a restart (issue 21 row 3): a second server process, every page's first request (target < 0.5 s,
  /metrics < 100 ms), against the first start above;
- every page's HTML and JSON twin, and /metrics, warm: server time from the Server-Timing header
  (median of --repeat requests) and the wall time seen by the client;
- the server's RSS (now and peak, from /proc).
Baseline measured in the same run: the Probe timeline rendered without downsampling (every sample
shipped to the browser), against the downsampled page: server time, bytes, and Chromium's time to
draw it (headless Debian chromium through Playwright).

    .venv/bin/python benchmarks/bench_web.py                 # 30 days, 3 targets (builds ~1.8 GB once)
    .venv/bin/python benchmarks/bench_web.py --days 2        # a quick look
    .venv/bin/python benchmarks/bench_web.py --days 30 --fresh-pieces --no-baseline   # issue 21 row 3

The store is kept in --dir (default /tmp/ioweather-bench-web) and reused by later runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from ioweather.config import Settings  # noqa: E402
from ioweather.store import open_store  # noqa: E402
from web_synthetic import Episode, add_target  # noqa: E402

TARGETS = ("lustre-scratch", "gpfs-work", "nfs-home")
DAY = 86400 * 10**9
H = 3600 * 10**9


def build(home: Path, days: int) -> int:
    """Insert `days` of 1 Hz samples per target ending now (once; reused while the marker matches)."""
    marker = home / f"bench-{days}d.json"
    if marker.exists():
        # Top up to now, so that "the last hour" holds a full hour of samples as on a live system.
        end, now = json.loads(marker.read_text())["end_ns"], time.time_ns()
        store = open_store(Settings.resolve(home))
        for i, target in enumerate(TARGETS):
            ep = [Episode(end, now + H, 15.0)] if target == "nfs-home" else []
            add_target(store, target, end, now, period_s=1.0, seed=100 + i, episodes=ep)
        store.dispose()
        marker.write_text(json.dumps({"end_ns": now}))
        return now
    if home.exists():
        for f in home.glob("ioweather.sqlite*"):
            f.unlink()
    store = open_store(Settings.resolve(home))
    t0 = time.time_ns()
    for i, target in enumerate(TARGETS):
        t = time.perf_counter()
        episodes = [Episode(t0 - 5 * DAY, t0 - 5 * DAY + 4 * H, 6.0), Episode(t0 - 2 * H, t0 - H, 3.0)]
        if target == "nfs-home":
            episodes.append(Episode(t0 - 20 * 60 * 10**9, t0 + H, 15.0))
        add_target(store, target, t0 - days * DAY, t0, period_s=1.0, seed=i, episodes=episodes,
                   on_chunk=lambda done, total: print(f"\r  {target}: {done / total:6.1%}", end="", file=sys.stderr))
        print(f"\r  {target}: {days} days inserted in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    store.dispose()
    marker.write_text(json.dumps({"end_ns": t0}))
    return t0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, timeout: float = 600) -> tuple[float, float, int]:
    """(server ms from Server-Timing, wall ms, body bytes)."""
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = r.read()
        st = r.headers.get("server-timing", "app;dur=nan")
    return float(st.split("dur=")[1]), (time.perf_counter() - t) * 1000, len(body)


def rss_kib(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def serve_in_process(home: Path):
    """The dashboard under uvicorn in a thread of this process, on a free loopback port:
    (base URL, server, thread); stop with `server.should_exit = True; thread.join()`."""
    import uvicorn

    from ioweather.web.app import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(create_app(Settings.resolve(home), warm=False), log_level="warning"))
    th = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    th.start()
    while not server.started:
        time.sleep(0.05)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server, th


def render_in_chromium(url: str, timeout_s: float) -> float | None:
    """Seconds until the page's plots are drawn in headless Chromium, None when over timeout_s."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from conftest import CHROMIUM_ARGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url.split("/timeline")[0] + "/static/plotly.min.js")  # plotly.js cached: time the page only
        t = time.perf_counter()
        try:
            page.goto(url, timeout=timeout_s * 1000)
            page.wait_for_function("document.body.dataset.plotsReady === '1'", timeout=timeout_s * 1000)
            return time.perf_counter() - t
        except PlaywrightTimeout:
            return None
        finally:
            b.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=30)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/ioweather-bench-web"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--fresh-pieces", action="store_true", help="Delete the stored pieces first (the first start "
                    "builds them, as every start did before issue 21).")
    ap.add_argument("--no-baseline", action="store_true", help="Skip the downsampling baseline (issue 9).")
    args = ap.parse_args()
    home = args.dir / f"home-{args.days}d"
    print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}", flush=True)
    t0 = build(home, args.days)
    db = home / "ioweather.sqlite"
    print(f"store: {args.days} days x {len(TARGETS)} targets x 6 ops at 1 Hz = "
          f"{args.days * 86400 * 6 * len(TARGETS) / 1e6:.1f} M samples, {db.stat().st_size / 2**30:.2f} GiB SQLite; "
          f"data ends {(time.time_ns() - t0) / 3.6e12:.1f} h ago", flush=True)

    if args.fresh_pieces:
        import sqlalchemy as sa

        store = open_store(Settings.resolve(home))
        with store.begin() as conn:  # the first start builds them: what every start cost before issue 21
            conn.execute(sa.text("DELETE FROM probe_pieces"))
        store.dispose()
    target = "nfs-home"
    pages = [
        ("status HTML", "/status"), ("status JSON", "/api/status"),
        ("timeline HTML (1 h, default)", f"/timeline?target={target}"),
        ("timeline JSON (1 h)", f"/api/timeline?target={target}"),
        ("timeline JSON (6 h)", f"/api/timeline?target={target}&since=6h"),
        ("timeline JSON (24 h, max)", f"/api/timeline?target={target}&since=24h"),
        # the marks the timeline and history pages fetch once drawn (the change-point search, ruptures)
        ("timeline changes (1 h)", f"/api/timeline/changes?target={target}"),
        ("history HTML (7 d, 1 h, default)", "/history"),
        ("history JSON (7 d, 1 h)", "/api/history"),
        ("history changes (7 d)", "/api/history/changes"),
        ("history JSON (30 d, 10 min)", "/api/history?since=30d&interval=10m"),
        ("history JSON (30 d, 4 h, p99)", "/api/history?since=30d&interval=4h&stat=p99"),
        ("/metrics", "/metrics"),
    ]

    # ---- a real `ioweather serve` process
    port = free_port()
    env = {**os.environ, "IOWEATHER_HOME": str(home)}
    env.pop("IOWEATHER_DB", None)
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    proc.stdout.readline()
    print(f"server RSS at its first line (app imported; lifespan start-up and warm-up not yet): "
          f"{rss_kib(proc.pid)[0] / 1024:.0f} MiB", flush=True)
    peak = [0]

    def watch_rss():
        while proc.poll() is None:
            try:
                peak[0] = max(peak[0], rss_kib(proc.pid)[0])
            except (OSError, KeyError):
                return
            time.sleep(0.2)

    threading.Thread(target=watch_rss, daemon=True).start()
    try:
        scrape_cold = fetch(base + "/metrics")
        fetch(base + "/api/status")
        cold = time.perf_counter() - started
        print(f"first start: {cold:.1f} s from process start to the first Status answer "
              f"({'building the pieces of' if args.fresh_pieces else 'reading the stored pieces of'} {args.days} days); "
              f"a scrape meanwhile took {scrape_cold[0]:.0f} ms", flush=True)
        print(f"\n{'page':36s} {'server ms':>10s} {'wall ms':>9s} {'KiB':>8s}   (median of {args.repeat}, warm)")
        results = {}
        for name, path in pages:
            fetch(base + path)  # first request of this kind: extends rollups to its window
            runs = [fetch(base + path) for _ in range(args.repeat)]
            server = statistics.median(r[0] for r in runs)
            wall = statistics.median(r[1] for r in runs)
            results[name] = server
            limit = 100 if name == "/metrics" else 500
            print(f"{name:36s} {server:10.1f} {wall:9.1f} {runs[0][2] / 1024:8.0f}   "
                  f"{'ok' if server < limit else 'OVER ' + str(limit)}", flush=True)
        rss, hwm = rss_kib(proc.pid)
        print(f"\nserver RSS now {rss / 1024:.0f} MiB, peak {max(hwm, peak[0]) / 1024:.0f} MiB (limit 300)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    # ---- a restart (issue 21 row 3): the pieces are in the store, nothing to wait for
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        up = time.perf_counter() - started
        print(f"restart: server RSS at its first line {rss_kib(proc.pid)[0] / 1024:.0f} MiB", flush=True)
        print(f"\nrestart: server up in {up:.1f} s (Python start-up and imports); then every page's FIRST request:")
        print(f"{'page':36s} {'server ms':>10s} {'wall ms':>9s}   (cold: first of its kind after the restart)")
        worst, first_answer = 0.0, None
        for name, path in pages:
            srv, wall, _ = fetch(base + path)
            first_answer = first_answer or time.perf_counter() - started
            if " changes " in name:  # the page is drawn without them: a wait for the marks, not for the page
                print(f"{name:36s} {srv:10.1f} {wall:9.1f}   (fetched once its page is drawn)", flush=True)
                continue
            worst = max(worst, srv)
            limit = 100 if name == "/metrics" else 500
            print(f"{name:36s} {srv:10.1f} {wall:9.1f}   {'ok' if srv < limit else 'OVER ' + str(limit)}", flush=True)
        print(f"restart: slowest first page {worst:.0f} ms; the first Status answer {first_answer:.2f} s after the "
              f"process started; the first start above took {cold * 1000:.0f} ms to its first Status answer "
              f"-> {cold * 1000 / max(worst, 1e-3):.0f}x", flush=True)
        time.sleep(5)  # the warm-up's fill after the first answer
        rss, hwm = rss_kib(proc.pid)
        print(f"restart: server RSS after every page {rss / 1024:.0f} MiB, peak {hwm / 1024:.0f} MiB (limit 300)",
              flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if args.no_baseline:
        return

    # ---- baseline: the same timeline without downsampling (in-process server, cap lifted)
    import ioweather.web.pages.timeline as timeline_page

    base2, server, th = serve_in_process(home)
    print("\ntimeline of one target, downsampled (<= 20 000 points) vs every sample shipped (the baseline):")
    print(f"{'window':8s} {'variant':14s} {'points':>8s} {'server ms':>10s} {'MiB':>7s} {'browser s':>10s}")
    try:
        fetch(base2 + f"/api/status?target={target}")
        for window in ("6h",):  # over 6 h the page draws 10-minute rollups (services/probe/timeline.py)
            rows = {}
            for variant in ("downsampled", "full"):
                timeline_page.MAX_POINTS = 20_000 if variant == "downsampled" else 10**8
                path = f"/timeline?target={target}&since={window}"
                if variant == "full":
                    path += "&points=100000000"
                fetch(base2 + path)
                srv, wall, size = min((fetch(base2 + path) for _ in range(3)), key=lambda r: r[0])
                with urllib.request.urlopen(base2 + path.replace("/timeline", "/api/timeline")) as r:
                    shown = json.loads(r.read())["samples_shown"]
                draw = None if args.no_browser else render_in_chromium(base2 + path, timeout_s=180)
                rows[variant] = (srv, size, draw)
                print(f"{window:8s} {variant:14s} {shown:8d} {srv:10.0f} {size / 2**20:7.1f} "
                      f"{'-' if args.no_browser else ('>180' if draw is None else f'{draw:.1f}'):>10s}", flush=True)
            (s1, b1, d1), (s2, b2, d2) = rows["downsampled"], rows["full"]
            browser = "" if args.no_browser or d1 is None else (
                f", browser {'>' if d2 is None else ''}{(d2 or 180) / d1:.1f}x")
            print(f"{window:8s} ratio full / downsampled: server {s2 / s1:.1f}x, bytes {b2 / b1:.1f}x{browser}")
    finally:
        timeline_page.MAX_POINTS = 20_000
        server.should_exit = True
        th.join(timeout=10)


if __name__ == "__main__":
    main()
