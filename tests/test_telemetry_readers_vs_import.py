"""Readers never fail or miscount while an import replaces files (issue 11, soak finding 3).

Real processes: loops of `workload --json` run while a loop re-imports the same CSV. A re-import
switches its marker and unlinks the previous run's files (store/telemetry_imports.py); a reader that
listed those files a moment before must list again instead of failing with DuckDB's "No files
found" or counting a half-switched listing. The reference is the CSV's own totals.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

DAYS = 8         # one file per UTC day and import: many files for a reader to trip over
STEP_S = 3600
TARGETS = ("ost0", "ost1", "ost2")


def write_csv(path: Path) -> dict[str, int]:
    """Integer amounts, so the totals are exact in float64; returns {metric: total}."""
    lines, totals = ["time,target,metric,value,interval_s"], {"read_bytes": 0, "write_bytes": 0}
    t0 = 1_700_006_400  # a UTC midnight
    for i in range(DAYS * 86_400 // STEP_S):
        for j, target in enumerate(TARGETS):
            for metric, v in (("read_bytes", 1000 * (i % 97) + j), ("write_bytes", 7 * i + 3 * j)):
                lines.append(f"{t0 + STEP_S * i},{target},{metric},{v},{STEP_S}")
                totals[metric] += v
    path.write_text("\n".join(lines) + "\n")
    return totals


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "IOWEATHER_DB"}
    env["IOWEATHER_HOME"] = str(home)
    return env


# A reader process driven by the test: each "go" line on stdin starts one read (the same service
# `workload` calls), answered by one JSON line with the read's duration. The CLI spends most of its life
# starting up, which leaves few reads in flight when a switch comes; this one is frozen inside its read.
TIGHT_READER = """
import json, sys, time
from pathlib import Path
from ioweather.config import Settings
from ioweather.errors import UserError
from ioweather.services.telemetry.workload import compute
s = Settings(home=Path(sys.argv[1]))
print("ready", flush=True)
for _ in range(int(sys.argv[2])):
    if sys.stdin.readline() != "go\\n":
        break
    t = time.perf_counter()
    try:
        doc, _ = compute(s, "t", None, None, 3600.0, 0.05, 600.0, 2**30, 86400.0)
        print(json.dumps({"read_bytes": doc.read_bytes, "write_bytes": doc.write_bytes,
                          "s": time.perf_counter() - t}), flush=True)
    except Exception as e:  # counted by the test; UserError included (a listing seen half switched)
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
"""


def _loop(argv: list[str], env: dict, stop: threading.Event, out: list, min_rounds: int = 0) -> None:
    while not stop.is_set() or len(out) < min_rounds:
        p = subprocess.run([sys.executable, "-m", "ioweather", *argv], capture_output=True, text=True,
                           env=env, timeout=300)
        out.append(p)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_workload_readers_while_a_loop_reimports(tmp_path):
    home = tmp_path / "home"
    csv = tmp_path / "t.csv"
    totals = write_csv(csv)
    env = _env(home)
    imp = ["import", "csv", str(csv), "--fs", "t", "--json"]
    first = subprocess.run([sys.executable, "-m", "ioweather", *imp], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    n_reads = int(os.environ.get("IOWEATHER_READERS_READS", "8"))
    tight = subprocess.Popen([sys.executable, "-c", TIGHT_READER, str(home), str(n_reads)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert tight.stdout.readline() == "ready\n", tight.stderr.read()
    stop = threading.Event()
    imports: list = []
    reads: list = []
    cli_reader = threading.Thread(target=_loop, args=(["workload", "--fs", "t", "--json", "--resample", "1h"],
                                                      env, stop, reads))
    cli_reader.start()
    rng = random.Random(os.environ.get("IOWEATHER_READERS_SEED", "11"))
    lines = []
    read_s = 0.05
    for _ in range(n_reads):
        # One read started, then the reader frozen (SIGSTOP) a random moment into it, most likely in
        # the middle: it resumes after the re-import's switch with a listing that names files the
        # import just removed. Paced by the test, so every read races one import whatever the speeds.
        tight.stdin.write("go\n")
        tight.stdin.flush()
        time.sleep(rng.uniform(0.0, read_s))
        os.kill(tight.pid, signal.SIGSTOP)
        try:
            imports.append(subprocess.run([sys.executable, "-m", "ioweather", *imp], capture_output=True, text=True,
                                          env=env, timeout=300))
        finally:
            os.kill(tight.pid, signal.SIGCONT)
        lines.append(tight.stdout.readline())
        read_s = json.loads(lines[-1]).get("s", read_s) if lines[-1].startswith("{") else read_s
    stop.set()
    cli_reader.join()
    tight_out, tight_err = tight.communicate()
    tight_out = "".join(lines + [tight_out]).strip()
    assert all(p.returncode == 0 for p in imports), [p.stderr for p in imports if p.returncode]
    replaced = sum(json.loads(p.stdout)["sources"][0]["replaced_files"] for p in imports)
    failures, wrong = [], []
    for p in reads:
        if p.returncode != 0 or "Traceback" in p.stderr:
            failures.append(p.stderr.strip()[-300:])
            continue
        doc = json.loads(p.stdout)
        if (doc["read_bytes"], doc["write_bytes"]) != (totals["read_bytes"], totals["write_bytes"]):
            wrong.append((doc["read_bytes"], doc["write_bytes"]))
    assert tight.returncode == 0, tight_err
    for line in tight_out.splitlines():
        doc = json.loads(line)
        if "error" in doc:
            failures.append(doc["error"][-300:])
        elif (doc["read_bytes"], doc["write_bytes"]) != (totals["read_bytes"], totals["write_bytes"]):
            wrong.append((doc["read_bytes"], doc["write_bytes"]))
    n = len(reads) + len(tight_out.splitlines())
    print(f"{len(imports)} imports ({replaced} files replaced), {n} reads")
    assert not failures and not wrong, (f"{len(failures)} failed and {len(wrong)} miscounted of {n} reads "
                                        f"(totals {totals}): {failures[:3]} {wrong[:3]}")
    assert len(imports) == n_reads and replaced >= n_reads * DAYS, (len(imports), replaced)  # the race was run
