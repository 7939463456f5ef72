"""The Report page on a live store: a real `ioweather serve` (PYTHONPATH = --src), a writer thread storing every
probe target's samples each second (as 30 probes would: 6 ops a target, into each target's newest run) and,
with --telemetry, a minute of 100 OSTs' byte counters each minute (as a collector: the file system's data then
reaches now, and so does the report's window); the client asks /api/status then /api/report in turn for
--minutes. Prints each /api/report time and p50/p95/max. The writer changes the store: use a copy, or measure
the static store first (docs/benchmarks.md, issue 40 item 4, ninth pass).

    python benchmarks/bench_report_live.py --src SRC --home HOME [--minutes 3] [--telemetry]
"""
import argparse, json, os, signal, socket, subprocess, sys, threading, time, urllib.request
import numpy as np

ap = argparse.ArgumentParser()
ap.add_argument("--src", required=True); ap.add_argument("--home", required=True)
ap.add_argument("--minutes", type=float, default=5); ap.add_argument("--telemetry", action="store_true")
args = ap.parse_args()
sys.path.insert(0, args.src)
from ioweather.config import Settings
from ioweather.store import open_store
from ioweather.store import probe as probe_store

stop = threading.Event()
settings = Settings.resolve(args.home)

def writer():
    import pandas as pd
    import sqlalchemy as sa
    from ioweather.store.telemetry_layout import write_rows
    store = open_store(settings)
    with store.connect() as conn:
        runs = [r[0] for r in conn.execute(sa.text("SELECT max(id) FROM probe_runs GROUP BY target"))]
    rng = np.random.default_rng(7)
    last_tel = 0
    names = np.array([f"bench-OST{k:04d}" for k in range(100)], dtype=object)
    while not stop.is_set():
        now = time.time_ns() // 10**9 * 10**9
        rows = [(r, op, now + k * 50_000, int(2e5 * rng.lognormal(0, 0.4)), 0, "ok", 0)
                for r in runs for k, op in enumerate(probe_store.OPS)]
        probe_store.insert_samples(store, rows)
        if args.telemetry and now - last_tel >= 60 * 10**9:
            t = now // (60 * 10**9) * 60 * 10**9
            parts = [pd.DataFrame({"time_ns": t, "target": names, "metric": m, "value": rng.gamma(0.5, 2e8, 100),
                                   "interval_s": 60.0}) for m in ("read_bytes", "write_bytes")]
            write_rows(settings, "bench", pd.concat(parts, ignore_index=True), writer="live")
            last_tel = now
        stop.wait(max(0.0, 1.0 - (time.time_ns() - now) / 1e9))
    store.dispose()

s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
env = {**os.environ, "IOWEATHER_HOME": args.home, "PYTHONPATH": args.src}
env.pop("IOWEATHER_DB", None)
proc = subprocess.Popen([sys.executable, "-m", "ioweather", "serve", "--port", str(port), "-q"], env=env,
                        stdout=subprocess.DEVNULL, stderr=open(os.path.join(args.home, "live-serve.log"), "a"))
base = f"http://127.0.0.1:{port}"
while True:
    try:
        urllib.request.urlopen(base + "/static/favicon.svg", timeout=5).read(); break
    except OSError:
        time.sleep(0.2)
print(f"load {os.getloadavg()[0]:.1f}; server up; writer starts", flush=True)
w = threading.Thread(target=writer, daemon=True); w.start()
times, t_end = [], time.time() + args.minutes * 60
try:
    while time.time() < t_end:
        urllib.request.urlopen(base + "/api/status", timeout=900).read()
        t = time.perf_counter()
        body = urllib.request.urlopen(base + "/api/report", timeout=900).read()
        dt = time.perf_counter() - t
        times.append(dt)
        rep = json.loads(body)["report"]
        print(f"  /api/report {dt * 1e3:8.0f} ms  window {rep['start']} – {rep['end']}  load {os.getloadavg()[0]:.1f}", flush=True)
        time.sleep(2)
finally:
    stop.set(); w.join(10)
    proc.send_signal(signal.SIGINT)
    try: proc.wait(60)
    except subprocess.TimeoutExpired: proc.kill(); proc.wait()
a = np.array(times)
print(f"{len(a)} requests: p50 {np.percentile(a, 50) * 1e3:.0f} ms, p95 {np.percentile(a, 95) * 1e3:.0f} ms, "
      f"max {a.max() * 1e3:.0f} ms; load {os.getloadavg()[0]:.1f}")
