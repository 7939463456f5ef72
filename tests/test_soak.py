"""Nothing is lost when many processes share one store and writers are killed (issue 11, item 2).

For IOWEATHER_SOAK_SECONDS (default 45) on SQLite and on PostgreSQL, all at once: `watch` (probe +
dashboard), `collect` on a synthetic /proc tree, and loops of `jobs ingest`,
`fsstats walk --label`, `import csv`; readers `probe stats`, `slowdown`, `jobs summary`, `workload`,
page requests, and a plain-driver snapshot of the tables. A seeded random writer gets kill -9 every
few seconds and is restarted. Then, with every process stopped: PRAGMA integrity_check is ok, every
probe sample any other process saw is there, every table ever seen
exists, every committed label/import/log is there exactly once. See docs/store.md, "Concurrent use".

    IOWEATHER_SOAK_SECONDS=600 .venv/bin/python -m pytest tests/test_soak.py -x -q -s   # the long one
    IOWEATHER_SOAK_SEED=1234 ...                                                         # replay a run
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ioweather.config import Settings
from ioweather.sources.telemetry.synthetic import make_tree
from ioweather.store import telemetry_layout as layout
from ports import free_port
from soak import Soak, Spec, fresh_snapshot, integrity_check

SOAK_SECONDS = float(os.environ.get("IOWEATHER_SOAK_SECONDS", "45"))
#: A writer killed every 2-5 s: as many kills in the default 45 s as every 3-9 s gave in 75 s (10-12).
KILL_EVERY_S = (2.0, 5.0)
CSV_ROWS = 240


def write_csv(path: Path) -> None:
    """Two targets x two metrics x 60 five-second readings: CSV_ROWS rows, each a distinct key."""
    lines = ["time,target,metric,value"]
    for i in range(60):
        for target in ("ost1", "ost2"):
            for metric in ("read_bytes", "write_bytes"):
                lines.append(f"{1_700_000_000 + 5 * i},{target},{metric},{i * 1000}")
    path.write_text("\n".join(lines) + "\n")


def setup_inputs(tmp: Path, darshan: Path) -> dict:
    inputs = {"probe_watch": tmp / "probe-watch", "proc": tmp / "proc-tree",
              "logs": tmp / "logs", "walk": tmp / "walk", "csv": tmp / "soak.csv"}
    make_tree(inputs["proc"], 2, fs="synth")
    inputs["logs"].mkdir()
    for i, log in enumerate(sorted(darshan.rglob("*.darshan"))):
        (inputs["logs"] / f"{i:03d}-{log.name}").write_bytes(log.read_bytes())
    for i in range(30):
        d = inputs["walk"] / f"d{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}").write_bytes(b"x" * (i * 100))
    write_csv(inputs["csv"])
    return inputs


def specs(db: list[str], inputs: dict, port: int) -> list[Spec]:
    iw = ["-m", "ioweather", *db]
    labels = iter(range(1_000_000))  # each round stores a new label, so a lost one can be named
    fs_walk = [*iw, "fsstats", "walk", str(inputs["walk"]), "-q", "--json", "--label"]

    return [
        Spec("watch", [*iw, "watch", str(inputs["probe_watch"]), "--port", str(port), "--file-size", "8MiB",
                       "--pool", "10", "--interval", "0.2s", "--target", "soak-watch"], daemon=True, ready="dashboard at"),
        Spec("collect", [*iw, "collect", "--proc-root", str(inputs["proc"]), "--sources", "lustre",
                         "--interval", "0.5s", "--flush", "2s", "--fs", "soakcol"], daemon=True, ready="sampling"),
        Spec("jobs-ingest", [*iw, "jobs", "ingest", str(inputs["logs"]), "--workers", "1", "--json"]),
        Spec("fsstats", lambda: [*fs_walk, f"soak-{next(labels)}"]),
        Spec("import-csv", [*iw, "import", "csv", str(inputs["csv"]), "--fs", "soakcsv", "--json"]),
        Spec("probe-stats", [*iw, "probe", "stats", "--json", "--since", "2h", "--interval", "1h"], writer=False),
        Spec("slowdown", [*iw, "slowdown", "--json", "--since", "1h", "--interval", "1m"], writer=False),
        Spec("jobs-summary", [*iw, "jobs", "summary", "--json"], writer=False),
        Spec("workload", [*iw, "workload", "--fs", "soakcsv", "--json"], writer=False),
        Spec("snapshot", [str(Path(__file__).with_name("soak.py")), "snapshot", None], writer=False,
             pause_s=(0.2, 0.5)),
    ]


def probe_counts_seen(soak: Soak) -> dict[str, int]:
    """The most probe samples per target that any reader process counted at any time."""
    seen: dict[str, int] = {}
    for r in soak.finished("snapshot"):
        for target, n in json.loads(r.stdout)["probe"].items():
            seen[target] = max(seen.get(target, 0), n)
    for r in soak.finished("probe-stats"):
        per: dict[str, int] = {}
        for row in json.loads(r.stdout):
            per[row["target"]] = per.get(row["target"], 0) + row["count"] + row["errors"] + row["timeouts"]
        for target, n in per.items():
            seen[target] = max(seen.get(target, 0), n)
    return seen


def samples_kept_arriving(soak: Soak, gap_s: float = 12.0) -> str | None:
    """While watch is up, its new samples reach other processes, not only until something breaks:
    of two snapshots gap_s apart (more than two flushes) within one life of watch, the later sees more."""
    snaps = [(r.started, r.ended, json.loads(r.stdout)["probe"].get("soak-watch", 0)) for r in soak.finished("snapshot")]
    pairs = [(n1, n2) for ready, ended in soak.up("watch") for a1, b1, n1 in snaps for a2, b2, n2 in snaps
             if ready <= a1 and b1 + gap_s <= a2 and b2 <= ended]
    if not pairs:
        return f"watch was never up for {gap_s:g} s between two snapshots: nothing to judge (lives: {soak.up('watch')})"
    if stuck := [p for p in pairs if p[1] <= p[0]]:
        return f"watch's samples stopped reaching other processes while it ran: {stuck[0][0]} seen, {gap_s:g} s later {stuck[0][1]}"
    return None


def reader_failures(soak: Soak) -> list[str]:
    """A reader that once answered and later fails (not killed, not a timeout) lost something it had."""
    out = []
    for name in ("probe-stats", "slowdown", "jobs-summary", "workload", "snapshot"):
        answered = False
        for r in sorted((r for r in soak.rounds if r.spec == name), key=lambda r: r.started):
            if r.rc == 0:
                answered = True
            elif answered and not r.killed:
                out.append(f"{name} failed after answering before (rc {r.rc}): {r.stderr.strip()[-500:]}")
    return out


def run_soak(tmp_path: Path, shared_data: Path, url: str | None):
    darshan = shared_data / "darshan"
    if not darshan.is_dir():
        pytest.skip(f"Darshan logs not found at {darshan}")
    seed = int(os.environ.get("IOWEATHER_SOAK_SEED", random.randrange(1 << 30)))
    print(f"\nsoak: seed {seed} ({SOAK_SECONDS:g} s; replay with IOWEATHER_SOAK_SEED={seed})")
    home = tmp_path / "home"
    settings = Settings(home=home, db_url=url)
    db_url = settings.url()
    db = ["--home", str(home)] + (["--db", url] if url else [])
    inputs = setup_inputs(tmp_path, darshan)
    env = {k: v for k, v in os.environ.items() if k != "IOWEATHER_DB"}
    port = free_port()
    all_specs = specs(db, inputs, port)
    for s in all_specs:
        if s.name == "snapshot":
            s.argv[-1] = db_url
    (tmp_path / "logs-out").mkdir()
    soak = Soak(all_specs, tmp_path / "logs-out", env, SOAK_SECONDS, seed, kill_every_s=KILL_EVERY_S)
    soak.run(page_base=f"http://127.0.0.1:{port}/")
    soak.settle()
    return soak, settings, db_url, inputs, seed


def check(soak: Soak, settings: Settings, db_url: str, inputs: dict, seed: int) -> None:
    problems = list(soak.problems) + reader_failures(soak)
    if db_url.startswith("sqlite"):
        verdict = integrity_check(settings.sqlite_path)
        if verdict != "ok":
            problems.append(f"integrity_check: {verdict}")
    final = fresh_snapshot(db_url)
    seen_tables = {t for r in soak.finished("snapshot") for t in json.loads(r.stdout)["tables"]}
    if lost := seen_tables - set(final["tables"]):
        problems.append(f"tables seen during the run are gone: {sorted(lost)}")
    if problem := samples_kept_arriving(soak):
        problems.append(problem)
    for target, n in probe_counts_seen(soak).items():
        if final["probe"].get(target, 0) < n:
            problems.append(f"probe {target}: {n} samples seen by a reader, {final['probe'].get(target, 0)} at the end")
    # every label whose command exited 0 is stored, once
    listed = subprocess.run([sys.executable, "-m", "ioweather", "--home", str(settings.home),
                             *(["--db", settings.db_url] if settings.db_url else []), "fsstats", "list", "--json"],
                            capture_output=True, text=True, timeout=120)
    stored_labels = [s["label"] for s in json.loads(listed.stdout)] if listed.returncode == 0 else []
    if listed.returncode != 0:
        problems.append(f"fsstats list failed: {listed.stderr}")
    committed = {r.argv[-1] for r in soak.finished("fsstats")}
    if missing := committed - set(stored_labels):
        problems.append(f"fsstats labels committed (exit 0) but not stored: {sorted(missing)}")
    if len(stored_labels) != len(set(stored_labels)):
        problems.append("an fsstats label is stored twice")
    # every log once: the reference is the logs' distinct contents
    hashes = {hashlib.sha256(p.read_bytes()).hexdigest() for p in inputs["logs"].iterdir()}
    if soak.finished("jobs-ingest"):
        n = final["counts"].get("darshan_jobs", 0) + final["counts"].get("darshan_failed_logs", 0)
        if n != len(hashes):
            problems.append(f"darshan: {n} jobs + failed logs stored for {len(hashes)} distinct logs")
    # every Parquet row once: the CSV's rows exactly, collect's rows with no key twice
    if soak.finished("import-csv"):
        df = layout.read_frame(settings, "soakcsv")
        if len(df) != CSV_ROWS or df.duplicated(["target", "metric", "time_ns"]).any():
            problems.append(f"import csv: {len(df)} rows stored for {CSV_ROWS} in the CSV")
    if "soakcol" in layout.list_fs(settings):
        col = layout.read_frame(settings, "soakcol")
        if (dup := int(col.duplicated(["target", "metric", "time_ns"]).sum())):
            problems.append(f"collect: {dup} of {len(col)} telemetry rows stored twice")
    # the run did what it claims: each writer ran, was killed, and readers answered
    ran = {r.spec for r in soak.rounds if r.rc == 0}
    summary = (f"seed {seed}: {len(soak.kills)} kills ({', '.join(sorted({k for _, k in soak.kills}))}), "
               f"{len(soak.rounds)} rounds, ok: {sorted(ran)}, pages: {sum(1 for _, s in soak.http if s == 200)} x 200, "
               f"final probe counts {final['probe']}, tables {len(final['tables'])}")
    print(f"soak: {summary}")
    for name in ("jobs-ingest", "fsstats", "import-csv", "probe-stats", "snapshot"):
        if name not in ran:
            problems.append(f"{name} never finished successfully")
    if not any(s == 200 for _, s in soak.http):
        problems.append("no page request answered 200")
    assert not problems, f"soak ({summary}):\n" + "\n".join(problems)


# the soak, its final round and the accounting; pytest's default --timeout would cut the long run
SOAK_TIMEOUT = pytest.mark.timeout(SOAK_SECONDS + 420)


@pytest.mark.slow
@SOAK_TIMEOUT
def test_soak_sqlite(tmp_path, shared_data):
    check(*run_soak(tmp_path, shared_data, None))


@pytest.mark.slow
@SOAK_TIMEOUT
def test_soak_postgresql(tmp_path, shared_data, pg_url):
    check(*run_soak(tmp_path, shared_data, pg_url))
