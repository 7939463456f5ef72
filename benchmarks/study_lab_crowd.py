"""one-rank-io -> fixed-one-rank-io on a crowded disk: does per-stream fair sharing price the fix? (docs/validation.md)

Not a speed benchmark: a measurement study. Each round runs, for each crowd of N fio writer streams
(4 MiB O_DIRECT sequential writes at nice -10 on the same directory, as `lab storm` plants its storm; N = 0 is
a quiet round), the lab's one-rank-io case and then its fixed twin, back to back, under the lab's Darshan,
while `collect --sources diskstats` (1 s) records into an ioweather store and a thread here reads the
directory's device line of /proc/diskstats every 50 ms (the independent reference of the device's rate D).

For each pair: r = rank 0's rate (R01's evidence: rank 0's bytes over its time), D = the device's bytes
written over the bad job's Darshan window ÷ that window, m = (D − r) / r other streams' worth of load, the
job's rate with k = 4 streams D·k/(k+m), and the predicted saving io − bytes / that rate against the measured
one (the bad run's I/O time minus the twin's). Every round is printed, and written to OUT as JSON.

    IOWEATHER_HOME=/tmp/labcrowd/home .venv/bin/python benchmarks/study_lab_crowd.py /tmp/labcrowd [ROUNDS] [CROWDS]

CROWDS: comma-separated stream counts (default 0,1,2,4). The logs stay in DIR/logs/rROUND-cN/. Then, on the store:

    IOWEATHER_HOME=/tmp/labcrowd/home .venv/bin/python benchmarks/study_lab_crowd.py /tmp/labcrowd diff

runs `job diff BAD FIXED` on each round's stored pair (by log hash: both in the store, the disk's readings beside
them) and prints what it says: the device's rate from collect's readings, m, the crowd cause and the share explained.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from ioweather.config import Settings
from ioweather.services.jobs.darshan_child import job_outputs
from ioweather.services.lab import toolchain
from ioweather.services.lab.catalogue import CASES
from ioweather.services.lab.run import run_case
from ioweather.services.lab.storm import _ahead, _ioweather, _stop
from ioweather.sources.darshan_log import read_log
from ioweather.sources.telemetry.diskstats import parse_diskstats

BY_NAME = {c.name: c for c in CASES}


def _device(path: Path) -> str:
    dev = os.stat(path).st_dev
    return Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve(strict=True).name


class Sampler(threading.Thread):
    """(time, bytes written) of one device every `every` s."""

    def __init__(self, device: str, every: float = 0.05):
        super().__init__(daemon=True)
        self.device, self.every, self.rows, self.stop = device, every, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            with open("/proc/diskstats") as f:
                c = parse_diskstats(f.read(), ignore=None)[self.device]
            self.rows.append((time.time(), c["write_bytes"]))
            time.sleep(self.every)

    def written(self, t0: float, t1: float) -> float:
        """Bytes written in [t0, t1], linear between samples."""
        def at(t):
            rows = self.rows
            for (ta, ba), (tb, bb) in zip(rows, rows[1:]):
                if ta <= t <= tb:
                    return ba + (bb - ba) * (t - ta) / (tb - ta) if tb > ta else ba
            raise ValueError(f"no sample around {t}")
        return at(t1) - at(t0)


def _fio(workdir: Path, n: int) -> subprocess.Popen:
    p = subprocess.Popen(["fio", "--name=crowd", f"--directory={workdir}", "--rw=write", "--bs=4m", "--direct=1",
                          "--ioengine=psync", f"--numjobs={n}", "--thread", "--size=1g", "--time_based",
                          "--runtime=600", "--group_reporting"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    _ahead(p)
    return p


def _facts(log: str, sampler: Sampler) -> dict:
    rep, _ = job_outputs(log)
    lg = read_log(log)
    r01 = next((f for f in rep.findings if f.code == "R01"), None)
    t0, t1 = lg.start_time_s, lg.end_time_s
    out = {"log": log, "io_time_s": float(rep.perf.io_time_s), "start": t0, "end": t1,
           "bytes": float(rep.totals.bytes_written), "device_bytes": sampler.written(t0, t1)}
    out["D"] = out["device_bytes"] / (t1 - t0) if t1 > t0 else None
    if r01 is not None:
        out["rank0_bytes"], out["rank0_time_s"] = r01.evidence["rank0_bytes"], r01.evidence["rank0_time_s"]
        out["r"] = out["rank0_bytes"] / out["rank0_time_s"]
    return out


def predict(bad: dict, k: int = 4) -> dict:
    """The fair-share model on the bad run's numbers."""
    r, d = bad["r"], bad["D"]
    m = max(0.0, (d - r) / r)
    rate = d * k / (k + m) if m > 0 else r
    return {"m": m, "rate_k": rate, "predicted_s": max(0.0, bad["io_time_s"] - bad["bytes"] / rate)}


def main(base: Path, rounds: int = 3, crowds: tuple[int, ...] = (0, 1, 2, 4)) -> None:
    tools = toolchain.find()
    home = Path(os.environ.get("IOWEATHER_HOME") or base / "home")
    home.mkdir(parents=True, exist_ok=True)
    scratch, logs = base / "scratch", base / "logs"
    (scratch / "fio").mkdir(parents=True, exist_ok=True)
    device = _device(scratch)
    sampler = Sampler(device)
    sampler.start()
    collect = _ioweather(home, "collect", "--sources", "diskstats", "--interval", "1s", "--flush", "2s", "-q")
    _ahead(collect)
    out = []
    try:
        time.sleep(8)  # collect's first readings
        for rnd in range(1, rounds + 1):
            for n in crowds:
                fio = _fio(scratch / "fio", n) if n else None
                time.sleep(2.0 if n else 0.5)
                row = {"round": rnd, "crowd": n, "load": os.getloadavg()[0]}
                try:
                    for case in ("one-rank-io", "fixed-one-rank-io"):
                        run = run_case(BY_NAME[case], tools, scratch, logs / f"r{rnd}-c{n}")
                        if run.status != "ok":
                            raise SystemExit(f"{case}: {run.reason}")
                        row[case] = run.logs[0]
                    time.sleep(0.5)
                finally:
                    if fio is not None:
                        _stop(fio, "fio", ok=(0, 128, 130, -signal.SIGINT))
                        for f in (scratch / "fio").iterdir():
                            f.unlink()
                out.append(row)
                time.sleep(2.0)
        time.sleep(3.0)
    finally:
        _stop(collect, "collect")
        sampler.stop.set()
        sampler.join()
    ing = _ioweather(home, "jobs", "ingest", *[r[c] for r in out for c in ("one-rank-io", "fixed-one-rank-io")])
    ing.communicate(timeout=600)
    print("round crowd load | bad io  r MiB/s  D MiB/s  m | fixed io  D | saving measured predicted | share")
    for row in out:
        bad, fix = _facts(row["one-rank-io"], sampler), _facts(row["fixed-one-rank-io"], sampler)
        p = predict(bad)
        meas = bad["io_time_s"] - fix["io_time_s"]
        row.update(bad=bad, fixed=fix, **p, measured_s=meas)
        print(f"{row['round']} {row['crowd']} {row['load']:.1f} | {bad['io_time_s']:.2f} {bad['r'] / 2**20:.0f} "
              f"{bad['D'] / 2**20:.0f} {p['m']:.2f} | {fix['io_time_s']:.2f} {fix['D'] / 2**20:.0f} | "
              f"{meas:+.2f} {p['predicted_s']:.2f} | {p['predicted_s'] / meas if meas > 0 else float('nan'):.0%}")
    (base / "rounds.json").write_text(json.dumps(out, indent=1))
    (base / "diskstats.json").write_text(json.dumps({"device": device, "rows": sampler.rows}))
    print(f"store: {Settings.resolve(home).home}; rounds: {base / 'rounds.json'}")


def diff(base: Path, fs: str = "vm") -> None:
    """job diff of every round's stored pair (module docstring)."""
    import hashlib

    from ioweather.services.answers.job_diff import job_diff

    settings = Settings.resolve(Path(os.environ.get("IOWEATHER_HOME") or base / "home"))
    rows = json.loads((base / "rounds.json").read_text())
    print("round crowd | change s | D MiB/s (collect) m | crowd s | explained | verdict")
    for row in rows:
        ids = [hashlib.sha256(Path(row[c]).read_bytes()).hexdigest()[:16] for c in ("one-rank-io", "fixed-one-rank-io")]
        d = job_diff(settings, *ids, fs=fs)
        c = next((x for x in d.causes if x.kind == "crowd"), None)
        row["diff"] = d.to_json()
        print(f"{row['round']} {row['crowd']} | {d.io_time_change_s:+.2f} | "
              + (f"{c.device_bps / 2**20:.0f} {c.others:.2f} | {c.change_s:+.2f}" if c else "- - | -")
              + f" | {100 * (d.explained_share or 0):.0f} % | {d.verdict}")
    (base / "diffs.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[1:2] == ["diff"]:
        sys.exit(diff(Path(a[0])))
    shutil.rmtree(Path(a[0]) / "scratch", ignore_errors=True)
    main(Path(a[0]), int(a[1]) if len(a) > 1 else 3,
         tuple(int(x) for x in a[2].split(",")) if len(a) > 2 else (0, 1, 2, 4))
